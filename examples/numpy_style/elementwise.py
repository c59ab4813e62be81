"""Elementwise math: activation functions, a great-circle distance, a Horner polynomial."""

import math

import numpy as np


def arc_distance(theta_1, phi_1, theta_2, phi_2):
    """Great-circle distance (in radians) between points given by latitude theta and
    longitude phi, haversine form."""
    temp = (
        np.sin((theta_2 - theta_1) / 2) ** 2
        + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2
    )
    distance_matrix = 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))
    return distance_matrix


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x):
    """GELU, tanh approximation (as in BERT and GPT-2)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softplus(x):
    """log(1 + exp(x)) without overflow for large x."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def horner(coeffs, x):
    """The polynomial coeffs[0] * x**(n-1) + ... + coeffs[n-1], evaluated by Horner's rule."""
    result = np.zeros_like(x)
    for i in range(coeffs.shape[0]):
        result = result * x + coeffs[i]
    return result


def clip_and_rescale(x, lo, hi):
    """Clip to [lo, hi] and map that interval onto [0, 1]."""
    clipped = np.clip(x, lo, hi)
    return (clipped - lo) / (hi - lo)


def relu(x):
    return np.where(x > 0, x, 0.0)


def leaky_relu(x, alpha=0.01):
    """Leaky ReLU with the default slope."""
    return np.where(x >= 0, x, alpha * x)


def swish_and_derivative(x, beta=1.0):
    """Swish x * sigmoid(beta x) and its derivative, as a pair."""
    s = 1.0 / (1.0 + np.exp(-beta * x))
    f = x * s
    df = s + beta * f * (1.0 - s)
    return f, df


def _small_or_large(size, small, large):
    return small if size == "small" else large


def _arc_inputs(size, dtype, rng):
    n = _small_or_large(size, 7, 300)
    return tuple(rng.uniform(0.0, 1.0, n).astype(dtype) for _ in range(4))


def _activation_inputs(size, dtype, rng):
    shape = _small_or_large(size, (5, 6), (120, 200))
    return (rng.uniform(-2.5, 2.5, shape).astype(dtype),)


def _swish_inputs(size, dtype, rng):
    # x > -1: the derivative stays away from its zero near x = -1.28 (no cancellation).
    shape = _small_or_large(size, (5, 6), (120, 200))
    return (rng.uniform(-1.0, 2.5, shape).astype(dtype),)


def _horner_inputs(size, dtype, rng):
    # Positive coefficients and x in [0, 1]: no cancellation between the terms.
    degree = _small_or_large(size, 5, 12)
    shape = _small_or_large(size, (6,), (250,))
    return (
        rng.uniform(0.5, 1.5, degree).astype(dtype),
        rng.uniform(0.0, 1.0, shape).astype(dtype),
    )


def _clip_inputs(size, dtype, rng):
    shape = _small_or_large(size, (8,), (100, 150))
    return (rng.uniform(-2.0, 2.0, shape).astype(dtype), -0.5, 1.25)


CASES = [
    (arc_distance, _arc_inputs),
    (sigmoid, _activation_inputs),
    (gelu, _activation_inputs),
    (softplus, _activation_inputs),
    (horner, _horner_inputs),
    (clip_and_rescale, _clip_inputs),
    (relu, _activation_inputs),
    (leaky_relu, _activation_inputs),
    (swish_and_derivative, _swish_inputs),
]
