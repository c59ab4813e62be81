"""Matrix-product chains: MLP layers, attention, x @ W.T, np.dot, np.outer, np.add.outer,
power iteration."""

import numpy as np


def _dense(x, W, b):
    """One affine layer."""
    return x @ W + b


def mlp(x, W1, b1, W2, b2):
    """Two-layer perceptron: affine, ReLU, affine."""
    h = np.maximum(_dense(x, W=W1, b=b1), 0.0)
    return _dense(h, W2, b2)


def attention(Q, K, V):
    """Scaled dot-product attention over a batch: (batch, seq, d) inputs."""
    d = Q.shape[-1]
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ V


def linear_transposed(x, W, b):
    """A linear layer with the weight stored (out_features, in_features), as in PyTorch."""
    return x @ W.T + b


def dot_products(M, a, b):
    """Matrix-vector product, inner product and outer product with np.dot and np.outer."""
    Ma = np.dot(M, a)
    ab = np.dot(a, b)
    return Ma, ab, np.outer(a, b)


def gaussian_kernel(a, b, sigma=0.5):
    """Gaussian (RBF) kernel matrix between two sets of 1-D points."""
    diff = np.add.outer(a, -b)
    return np.exp(-(diff**2) / (2 * sigma**2))


def power_iteration(A, x, iters):
    """Dominant eigenvector of A by power iteration, and its Rayleigh quotient."""
    for _ in range(iters):
        x = A @ x
        x = x / np.sqrt(np.dot(x, x))
    return x, x @ A @ x


def _pick(size, small, large):
    return small if size == "small" else large


def _mlp_inputs(size, dtype, rng):
    batch, n_in, n_hidden, n_out = _pick(size, (5, 6, 8, 4), (64, 128, 256, 32))
    return (
        rng.standard_normal((batch, n_in)).astype(dtype),
        (rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)).astype(dtype),
        rng.uniform(-0.1, 0.1, n_hidden).astype(dtype),
        (rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)).astype(dtype),
        rng.uniform(-0.1, 0.1, n_out).astype(dtype),
    )


def _attention_inputs(size, dtype, rng):
    # V positive: every output is a convex combination of positive values (no cancellation).
    batch, seq, d = _pick(size, (2, 5, 4), (4, 64, 32))
    return (
        rng.standard_normal((batch, seq, d)).astype(dtype),
        rng.standard_normal((batch, seq, d)).astype(dtype),
        rng.uniform(0.5, 1.5, (batch, seq, d)).astype(dtype),
    )


def _linear_inputs(size, dtype, rng):
    batch, n_in, n_out = _pick(size, (5, 7, 6), (100, 200, 150))
    return (
        rng.standard_normal((batch, n_in)).astype(dtype),
        (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(dtype),
        rng.uniform(-0.1, 0.1, n_out).astype(dtype),
    )


def _dot_inputs(size, dtype, rng):
    n = _pick(size, 6, 200)
    return (
        rng.standard_normal((n, n)).astype(dtype),
        rng.standard_normal(n).astype(dtype),
        rng.standard_normal(n).astype(dtype),
    )


def _kernel_inputs(size, dtype, rng):
    n, m = _pick(size, (6, 5), (200, 150))
    return (
        rng.uniform(-1.0, 1.0, n).astype(dtype),
        rng.uniform(-1.0, 1.0, m).astype(dtype),
    )


def _power_inputs(size, dtype, rng):
    # A symmetric positive matrix with a dominant diagonal and a positive start vector.
    n = _pick(size, 6, 120)
    B = rng.uniform(0.0, 1.0, (n, n))
    A = (B + B.T) / 2 + np.diag(rng.uniform(1.0, 2.0, n))
    return A.astype(dtype), rng.uniform(0.5, 1.0, n).astype(dtype), _pick(size, 4, 10)


CASES = [
    (mlp, _mlp_inputs),
    (attention, _attention_inputs),
    (linear_transposed, _linear_inputs),
    (dot_products, _dot_inputs),
    (gaussian_kernel, _kernel_inputs),
    (power_iteration, _power_inputs),
]
