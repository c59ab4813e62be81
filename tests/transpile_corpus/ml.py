"""Neural-network layers as NumPy reference implementations write them (the NumPy ports of
PyTorch/JAX layers found in course notebooks and llama.c/llama2.c-style inference code)."""

import numpy as np


def softmax(x):
    """Numerically stable softmax over the last axis."""
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def layer_norm(x, gamma, beta, eps):
    """LayerNorm over the last axis, with a learned scale and shift of that axis' size."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def rms_norm(x, weight, eps):
    """RMSNorm (LLaMA); eps is a NumPy scalar of the model's dtype."""
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * weight


def attention(q, k, v):
    """Single-head scaled dot-product attention: (n, d) queries, (m, d) keys, (m, dv) values."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ v


def mlp_block(x, w1, b1, w2, b2):
    """A residual feed-forward block: x + relu(x @ w1 + b1) @ w2 + b2."""
    h = np.maximum(x @ w1 + b1, 0)
    return x + h @ w2 + b2


def glu(x):
    """Gated linear unit: the first half of the features gated by the sigmoid of the second."""
    half = x.shape[-1] // 2
    a = x[..., :half]
    b = x[..., half:]
    return a * (1.0 / (1.0 + np.exp(-b)))


def adam_update(param, grad, m, v, lr, beta1, beta2, eps, t):
    """One Adam step, in place on param and the moment estimates m and v."""
    m[:] = beta1 * m + (1 - beta1) * grad
    v[:] = beta2 * v + (1 - beta2) * grad**2
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    param -= lr * m_hat / (np.sqrt(v_hat) + eps)


def _softmax_args(dtype, rng):
    return (rng.standard_normal(tuple(rng.integers(4, 40, size=2))).astype(dtype),)


def _layer_norm_args(dtype, rng):
    n, d = rng.integers(4, 40, size=2)
    x = rng.standard_normal((n, d)).astype(dtype)
    gamma = rng.uniform(0.5, 1.5, d).astype(dtype)
    beta = (0.1 * rng.standard_normal(d)).astype(dtype)
    return x, gamma, beta, 1e-5


def _rms_norm_args(dtype, rng):
    b, n, d = rng.integers(4, 16, size=3)
    x = rng.standard_normal((b, n, d)).astype(dtype)
    return x, rng.uniform(0.5, 1.5, d).astype(dtype), dtype(1e-6)


def _attention_args(dtype, rng):
    n, m, d, dv = rng.integers(4, 32, size=4)
    q = rng.standard_normal((n, d)).astype(dtype)
    k = rng.standard_normal((m, d)).astype(dtype)
    v = rng.standard_normal((m, dv)).astype(dtype)
    return q, k, v


def _mlp_args(dtype, rng):
    n, d, h = rng.integers(4, 32, size=3)
    x = rng.standard_normal((n, d)).astype(dtype)
    w1 = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(dtype)
    w2 = (rng.standard_normal((h, d)) / np.sqrt(h)).astype(dtype)
    b1 = (0.1 * rng.standard_normal(h)).astype(dtype)
    b2 = (0.1 * rng.standard_normal(d)).astype(dtype)
    return x, w1, b1, w2, b2


def _glu_args(dtype, rng):
    n, half = rng.integers(4, 20, size=2)
    return (rng.standard_normal((n, 2 * half)).astype(dtype),)


def _adam_args(dtype, rng):
    shape = tuple(rng.integers(4, 24, size=2))
    param = rng.standard_normal(shape).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    m = (0.1 * rng.standard_normal(shape)).astype(dtype)
    v = (0.1 * rng.random(shape)).astype(dtype)
    return param, grad, m, v, dtype(1e-3), 0.9, 0.999, 1e-8, 7


CALLS = [
    (softmax, _softmax_args),
    (layer_norm, _layer_norm_args),
    (rms_norm, _rms_norm_args),
    (attention, _attention_args),
    (mlp_block, _mlp_args),
    (glu, _glu_args),
    (adam_update, _adam_args),
]
