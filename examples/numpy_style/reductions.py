"""Reductions: softmax, log-softmax, layer norm, variance and standard deviation, row
normalization, cosine similarity, log-sum-exp."""

import numpy as np


def softmax(x):
    """Softmax over the last axis, shifted by the maximum for stability."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def layer_norm(x, gamma, beta, eps=1e-5):
    """Layer normalization over the last axis, with a learned scale and shift."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def variance_stats(x):
    """Column variances, sample standard deviations of the rows, and the overall variance."""
    col_var = np.var(x, axis=0)
    row_std = np.std(x, axis=1, ddof=1)
    total_var = x.var()
    return col_var, row_std, total_var


def coefficient_of_variation(samples, ddof=1):
    """Sample standard deviation over the mean, per column."""
    return np.std(samples, axis=0, ddof=ddof) / np.mean(samples, axis=0)


def row_normalize(A):
    """Scale every row to sum to one."""
    return A / A.sum(axis=1).reshape(-1, 1)


def cosine_similarity(a, b):
    """Cosine of the angle between corresponding rows of a and b."""
    dot = np.sum(a * b, axis=1)
    norm_a = np.sqrt(np.sum(a**2, axis=1))
    norm_b = np.sqrt((b * b).sum(axis=1))
    return dot / (norm_a * norm_b)


def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return m[:, 0] + np.log(np.exp(x - m).sum(axis=1))


def batch_norm_train(x, gamma, beta, momentum, running_mean, running_var):
    """Batch normalization (training step): normalizes over the batch axis and updates the
    running statistics in place."""
    mu = x.mean(axis=0)
    sigma2 = x.var(axis=0)
    running_mean *= 1.0 - momentum
    running_mean += momentum * mu
    running_var[:] = (1.0 - momentum) * running_var + momentum * sigma2
    return gamma * (x - mu) / np.sqrt(sigma2 + 1e-5) + beta


def _pick(size, small, large):
    return small if size == "small" else large


def _matrix(size, dtype, rng):
    shape = _pick(size, (6, 7), (150, 200))
    return (rng.uniform(-3.0, 3.0, shape).astype(dtype),)


def _positive_matrix(size, dtype, rng):
    shape = _pick(size, (6, 7), (150, 200))
    return (rng.uniform(0.5, 2.0, shape).astype(dtype),)


def _softmax_3d(size, dtype, rng):
    shape = _pick(size, (3, 5, 6), (8, 40, 60))
    return (rng.uniform(-3.0, 3.0, shape).astype(dtype),)


def _layer_norm_inputs(size, dtype, rng):
    # beta well above |gamma * normalized| (<= sqrt(3) for uniform x): outputs stay away from 0.
    rows, cols = _pick(size, (5, 8), (100, 256))
    return (
        rng.uniform(-1.0, 1.0, (rows, cols)).astype(dtype),
        rng.uniform(0.5, 1.0, cols).astype(dtype),
        rng.uniform(3.0, 4.0, cols).astype(dtype),
    )


def _logsumexp_inputs(size, dtype, rng):
    # Positive x: the max (>= 1) and the log of the sum (>= 0) do not cancel.
    shape = _pick(size, (5, 6), (200, 150))
    return (rng.uniform(1.0, 3.0, shape).astype(dtype),)


def _cosine_inputs(size, dtype, rng):
    # Nonnegative feature vectors (as term counts): the dot products do not cancel.
    shape = _pick(size, (6, 5), (200, 64))
    return (
        rng.uniform(0.0, 1.0, shape).astype(dtype),
        rng.uniform(0.0, 1.0, shape).astype(dtype),
    )


def _batch_norm_inputs(size, dtype, rng):
    # Positive batch means and running means: the running-mean update does not cancel.
    rows, cols = _pick(size, (8, 5), (256, 100))
    return (
        rng.uniform(0.0, 2.0, (rows, cols)).astype(dtype),
        rng.uniform(0.5, 1.0, cols).astype(dtype),
        rng.uniform(3.0, 4.0, cols).astype(dtype),
        0.1,
        rng.uniform(0.5, 1.5, cols).astype(dtype),
        rng.uniform(0.5, 1.5, cols).astype(dtype),
    )


CASES = [
    (softmax, _softmax_3d),
    (log_softmax, _matrix),
    (layer_norm, _layer_norm_inputs),
    (variance_stats, _matrix),
    (coefficient_of_variation, _positive_matrix),
    (row_normalize, _positive_matrix),
    (cosine_similarity, _cosine_inputs),
    (logsumexp_rows, _logsumexp_inputs),
    (batch_norm_train, _batch_norm_inputs),
]
