"""Image operations written with slices, as scikit-image's and OpenCV tutorials' NumPy versions
are: a box blur, a blur into a frame with a 1-pixel border of padding, nearest
upsampling into a twice-as-large image, 2x2 pooling, a valid 2-D convolution and unsharp
masking."""

import numpy as np


def box_blur3(img):
    """3x3 mean filter, valid part only: (n - 2, m - 2)."""
    return (
        img[:-2, :-2]
        + img[:-2, 1:-1]
        + img[:-2, 2:]
        + img[1:-1, :-2]
        + img[1:-1, 1:-1]
        + img[1:-1, 2:]
        + img[2:, :-2]
        + img[2:, 1:-1]
        + img[2:, 2:]
    ) / 9.0


def blur_into(padded, out):
    """A 5-point blur of the (n + 2, m + 2) padded image into the (n, m) out, in place."""
    n, m = out.shape
    out[:, :] = 0.5 * padded[1 : n + 1, 1 : m + 1] + 0.125 * (
        padded[0:n, 1 : m + 1]
        + padded[2 : n + 2, 1 : m + 1]
        + padded[1 : n + 1, 0:m]
        + padded[1 : n + 1, 2 : m + 2]
    )


def upsample_nearest2x(img, out):
    """Nearest-neighbour upsampling of the (n, m) img into the (2n, 2m) out, in place."""
    out[0::2, 0::2] = img
    out[1::2, 0::2] = img
    out[0::2, 1::2] = img
    out[1::2, 1::2] = img


def pool2x2(x, mode):
    """2x2 pooling with stride 2 of an (2n, 2m) image; mode is "max" or "mean"."""
    a = x[0::2, 0::2]
    b = x[0::2, 1::2]
    c = x[1::2, 0::2]
    d = x[1::2, 1::2]
    if mode == "max":
        return np.maximum(np.maximum(a, b), np.maximum(c, d))
    return (a + b + c + d) / 4


def conv2d_valid(img, kernel):
    """Valid 2-D correlation of img with a small kernel, one shifted slice per tap."""
    kh, kw = kernel.shape
    oh = img.shape[0] - kh + 1
    ow = img.shape[1] - kw + 1
    out = np.zeros((oh, ow), dtype=img.dtype)
    for i in range(kh):
        for j in range(kw):
            out += kernel[i, j] * img[i : i + oh, j : j + ow]
    return out


def unsharp_mask(img, amount, clip):
    """Sharpen by adding amount times the difference from a 3x3 blur; optionally clipped to
    [0, 1]."""
    blurred = img.copy()
    blurred[1:-1, 1:-1] = box_blur3(img)
    sharp = img + amount * (img - blurred)
    if clip:
        sharp = np.clip(sharp, 0.0, 1.0)
    return sharp


def _image(dtype, rng, low=6, high=40):
    return rng.random(tuple(rng.integers(low, high, size=2))).astype(dtype)


def _blur3_args(dtype, rng):
    return (_image(dtype, rng),)


def _blur_into_args(dtype, rng):
    n, m = rng.integers(4, 38, size=2)
    return rng.random((n + 2, m + 2)).astype(dtype), np.zeros((n, m), dtype)


def _upsample_args(dtype, rng):
    n, m = rng.integers(4, 20, size=2)
    return rng.random((n, m)).astype(dtype), np.zeros((2 * n, 2 * m), dtype)


def _pool_max_args(dtype, rng):
    n, m = rng.integers(4, 20, size=2)
    return rng.random((2 * n, 2 * m)).astype(dtype), "max"


def _conv_args(dtype, rng):
    kernel = rng.standard_normal((3, 5)).astype(dtype)
    return _image(dtype, rng, 8), kernel


def _unsharp_args(dtype, rng):
    return _image(dtype, rng), 1.5, False


CALLS = [
    (box_blur3, _blur3_args),
    (blur_into, _blur_into_args),
    (upsample_nearest2x, _upsample_args),
    (pool2x2, _pool_max_args),
    (conv2d_valid, _conv_args),
    (unsharp_mask, _unsharp_args),
]
