"""Cumulative sums and products: np.cumsum with an axis, x.cumsum(), running means,
np.cumprod, a cumulative trapezoid integral, an empirical CDF."""

import numpy as np


def cumsum_axes(x):
    """Cumulative sums down the columns, along the rows, and of the flattened array."""
    return np.cumsum(x, axis=0), np.cumsum(x, axis=1), x.cumsum()


def expanding_mean(x):
    """Mean of the first k samples, for every k."""
    n = x.shape[0]
    return np.cumsum(x) / np.arange(1, n + 1, dtype=x.dtype)


def moving_average(counts, window=4):
    """Mean over a sliding window of `window` samples, by differences of a cumulative sum."""
    n = counts.shape[0]
    c = np.zeros(n + 1, dtype=counts.dtype)
    c[1:] = np.cumsum(counts)
    return (c[window:] - c[: n + 1 - window]) / window


def compound_growth(rates):
    """Growth factors compounded along each row, from per-period rates."""
    return np.cumprod(1.0 + rates, axis=1)


def cumulative_trapezoid(y, dx):
    """Running integral of y sampled with spacing dx (trapezoidal rule), starting at 0."""
    out = np.zeros_like(y)
    out[1:] = np.cumsum(0.5 * dx * (y[1:] + y[:-1]))
    return out


def empirical_cdf(hist):
    """Normalized cumulative histogram of every row."""
    c = hist.cumsum(axis=-1)
    return c / c[:, -1:]


def _pick(size, small, large):
    return small if size == "small" else large


def _positive_matrix(size, dtype, rng):
    # Positive values: the running sums do not cancel.
    return (rng.uniform(0.5, 1.5, _pick(size, (5, 7), (150, 200))).astype(dtype),)


def _positive_matrix_flat(size, dtype, rng):
    # At most 6000 elements: the float32 rounding of the flattened running sum stays well
    # inside the tolerance whatever the order of the additions.
    return (rng.uniform(0.5, 1.5, _pick(size, (5, 7), (60, 100))).astype(dtype),)


def _positive_vector(size, dtype, rng):
    return (rng.uniform(0.5, 1.5, _pick(size, 8, 300)).astype(dtype),)


def _counts(size, dtype, rng):
    # Small integer counts: every partial sum is exact, so the differences of the cumulative
    # sum do not depend on the order of the additions.
    return (rng.integers(0, 10, _pick(size, 9, 300)).astype(dtype),)


def _rates(size, dtype, rng):
    return (rng.uniform(-0.01, 0.02, _pick(size, (5, 6), (200, 40))).astype(dtype),)


def _trapezoid_inputs(size, dtype, rng):
    n = _pick(size, 7, 300)
    return rng.uniform(0.5, 1.5, n).astype(dtype), 1.0 / n


CASES = [
    (cumsum_axes, _positive_matrix_flat),
    (expanding_mean, _positive_vector),
    (moving_average, _counts),
    (compound_growth, _rates),
    (cumulative_trapezoid, _trapezoid_inputs),
    (empirical_cdf, _positive_matrix),
]
