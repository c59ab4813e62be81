"""Programs that gather through one index array (the native ``take``: ops/gathers.py)."""

import numpy as np


def fused(x, idx, w):
    return np.sqrt(np.abs(x[idx])) * w + 1.0


def columns(A, idx):
    return (A[:, idx] * 2).sum(axis=0), np.take(A, idx, axis=1).max(), A[idx[0]]


def into_argument(x, idx, y):
    y[1:] = x[idx] * 2
    return y.sum()


def self_gather(x, idx):
    """Written where it is read: NumPy gathers first, then assigns."""
    x[: idx.shape[0]] = x[idx]
    return x


def loop(x, idx, y):
    for i in range(idx.shape[0]):
        y[i] = x[idx[i]] * 2 + x[idx[i] - 1]
    return y


def rows(A, cols):
    return (A[:, cols] * 2).sum(axis=1)


def picked(logp, labels):
    """A cross-entropy's picks: take_along_axis (the label's column of each row) and take."""
    return -np.take_along_axis(logp, labels[:, None], axis=1).mean() + np.take(logp, labels).sum()


def clipped(x, idx):
    """np.take with mode="clip": NumPy's own call (a graph break)."""
    return np.take(x, idx, mode="clip") * 2
