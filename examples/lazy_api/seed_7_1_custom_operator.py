"""Design document 7.1: a custom operator, used like a built-in one.

``custom_conv2d`` is a real 2-D convolution (cross-correlation, as deep-learning frameworks
define it) with its own boundary handling: "same" output size, zero padding. Its vectorization
strategy is one shifted, scaled copy of the image per kernel tap. PyPTO learns the result's shape
and dtype by calling it on small arrays, then treats it as an op of the chain.
"""

from __future__ import annotations

import numpy as np

import pypto as ppto


@ppto.register_operator
def custom_conv2d(input, kernel):
    # specific boundary handling: zero padding, output the size of the input
    kh, kw = kernel.shape
    top, left = (kh - 1) // 2, (kw - 1) // 2
    padded = np.pad(input, ((top, kh - 1 - top), (left, kw - 1 - left)))
    out = np.zeros(input.shape, dtype=np.result_type(input, kernel))
    # parallel strategy: every output pixel at once, one kernel tap at a time
    for i in range(kh):
        for j in range(kw):
            out += kernel[i, j] * padded[i : i + input.shape[0], j : j + input.shape[1]]
    return out


image = ppto.tensor("image")
kernel = ppto.tensor("kernel")

op_chain = ppto.custom_conv2d(image, kernel)  # used like a built-in operator
activated = ppto.maximum(op_chain, 0.0)  # and composed with built-in ones


def reference_conv2d(img, k):
    """An independent direct loop, the textbook definition."""
    kh, kw = k.shape
    top, left = (kh - 1) // 2, (kw - 1) // 2
    out = np.zeros(img.shape, dtype=np.result_type(img, k))
    for r in range(img.shape[0]):
        for c in range(img.shape[1]):
            for i in range(kh):
                for j in range(kw):
                    rr, cc = r + i - top, c + j - left
                    if 0 <= rr < img.shape[0] and 0 <= cc < img.shape[1]:
                        out[r, c] += k[i, j] * img[rr, cc]
    return out


def inputs(seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return {
        "image": rng.standard_normal((24, 20)).astype(dtype),
        "kernel": rng.standard_normal((3, 5)).astype(dtype),
    }


def results(seed: int = 0, dtype=np.float32):
    data = inputs(seed, dtype)
    want = reference_conv2d(data["image"], data["kernel"])
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    got, got_activated = ppto.run([op_chain, activated], **data)
    return [
        ("custom_conv2d", got, want, rtol),
        ("maximum(custom_conv2d, 0)", got_activated, np.maximum(want, 0.0), rtol),
    ]


def main():
    from _report import report

    report("7.1 custom operator", ppto.trace(activated, **inputs()), results())


if __name__ == "__main__":
    main()
