"""Statistics: z-scores along an axis, PolyBench's covariance and correlation (as NPBench writes
them: M is the number of variables, float_n the number of samples as a float), Welford's
running mean and variance, and a Gaussian kernel density estimate."""

import math

import numpy as np


def zscore(x, axis):
    """Standard scores along axis (scipy.stats.zscore with ddof=0)."""
    mean = x.mean(axis=axis, keepdims=True)
    std = x.std(axis=axis, keepdims=True)
    return (x - mean) / std


def covariance(M, float_n, data):
    """The M x M sample covariance of data's columns, one column against the rest per
    iteration; centres data in place."""
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov


def correlation(M, float_n, data):
    """The M x M correlation matrix; near-constant columns get a standard deviation of 1."""
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(float_n) * stddev
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1 : M, i] = corr[i, i + 1 : M] = data[:, i] @ data[:, i + 1 : M]
    return corr


def welford(x):
    """Running mean and (population) variance of the rows of x, one row at a time."""
    mean = np.zeros(x.shape[1], dtype=x.dtype)
    m2 = np.zeros(x.shape[1], dtype=x.dtype)
    for i in range(x.shape[0]):
        delta = x[i] - mean
        mean += delta / (i + 1)
        m2 += delta * (x[i] - mean)
    return mean, m2 / x.shape[0]


def kde_gaussian(points, grid, bandwidth):
    """Gaussian kernel density estimate of the 1-D sample points at the grid positions."""
    u = (grid[:, None] - points[None, :]) / bandwidth
    k = np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
    return k.sum(axis=1) / (points.shape[0] * bandwidth)


def _zscore_args(dtype, rng):
    return rng.standard_normal(tuple(rng.integers(4, 40, size=2))).astype(dtype), 0


def _covariance_args(dtype, rng):
    n, m = int(rng.integers(8, 40)), int(rng.integers(4, 24))
    return m, float(n), rng.random((n, m)).astype(dtype)


def _correlation_args(dtype, rng):
    n, m = int(rng.integers(8, 40)), int(rng.integers(4, 24))
    return m, float(n), rng.random((n, m)).astype(dtype)


def _welford_args(dtype, rng):
    return (rng.standard_normal(tuple(rng.integers(4, 40, size=2))).astype(dtype),)


def _kde_args(dtype, rng):
    points = rng.standard_normal(int(rng.integers(4, 40))).astype(dtype)
    grid = np.linspace(-3.0, 3.0, int(rng.integers(4, 40))).astype(dtype)
    return points, grid, dtype(0.4)


CALLS = [
    (zscore, _zscore_args),
    (covariance, _covariance_args),
    (correlation, _correlation_args),
    (welford, _welford_args),
    (kde_gaussian, _kde_args),
]
