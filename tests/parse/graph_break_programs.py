"""Programs in the style of real NumPy code that call functions PyPTO has no op for: each
call is a graph break (ops/host_calls.py), the code around it is compiled. (``bilinear``,
``one_hot_argmax`` and ``norm_ratio`` were written when np.einsum, np.argmax and
np.linalg.norm had no op; they now compile without a break, which the tests check.)"""

import graph_break_helpers as helpers
import numpy as np


def gp_posterior_mean(X, y, Xs, ell):
    """Gaussian-process regression: a kernel matrix, its Cholesky factor, two solves."""
    d = np.sum(X**2, axis=1)[:, None] + np.sum(X**2, axis=1)[None, :] - 2 * X @ X.T
    K = np.exp(-0.5 * d / ell**2) + 0.1 * np.eye(X.shape[0], dtype=X.dtype)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    ds = np.sum(Xs**2, axis=1)[:, None] + np.sum(X**2, axis=1)[None, :] - 2 * Xs @ X.T
    return np.exp(-0.5 * ds / ell**2) @ alpha


def mahalanobis(X):
    """Distances of the rows from their mean under the inverse sample covariance."""
    C = np.cov(X, rowvar=False)
    Ci = np.linalg.inv(C)
    d = X - X.mean(axis=0)
    return np.sqrt(np.sum((d @ Ci) * d, axis=1))


def equalize(img):
    """Histogram equalization: counts, their normalized running sum, an interpolation."""
    counts, edges = np.histogram(img, bins=16)
    cdf = np.cumsum(counts) / img.size
    return np.interp(img, edges[1:], cdf) * 255.0


def centered_by_median(x):
    return (x - np.median(x, axis=1, keepdims=True)) / (np.ptp(x, axis=1)[:, None] + 1.0)


def ranks(x):
    """Ranks along axis 0 by a double argsort, scaled into (0, 1)."""
    r = np.argsort(np.argsort(x, axis=0), axis=0)
    return (r + 0.5) / x.shape[0]


def top3_softmax(x):
    s = np.sort(x, axis=-1)[:, -3:]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def power_spectrum(x, window):
    f = np.fft.rfft(x * window, axis=-1)
    return np.log1p(np.abs(f) ** 2)


def logdet(A):
    """log det of A A^T + I, through slogdet's two results."""
    sign, value = np.linalg.slogdet(A @ A.T + np.eye(A.shape[0], dtype=A.dtype))
    return sign * value


def clip_to_percentiles(x):
    q = np.percentile(x, [5, 95])
    return np.clip(x, q[0], q[1]) - x.mean()


def bilinear(x, W, y):
    return np.tanh(np.einsum("bi,ij,bj->b", x, W, y))


def one_hot_argmax(x):
    idx = np.argmax(x, axis=1)
    return (np.arange(x.shape[1]) == idx[:, None]).astype(x.dtype) * x.max(axis=1, keepdims=True)


def least_squares(A, b):
    coef = np.linalg.lstsq(A, b, rcond=None)[0]
    return A @ coef - b


def smoothed_energy(x):
    """A function of another module (a Python helper PyPTO does not read)."""
    return np.sum(helpers.smooth_rows(x * x, width=5), axis=-1)


def norm_ratio(x):
    return np.linalg.norm(x, axis=1) / np.linalg.norm(x)


def nanmean_f32(x):
    """A dtype class as a keyword of a graph break (its generated code names np.float32)."""
    return np.nanmean(x, axis=0, dtype=np.float32) * 2
