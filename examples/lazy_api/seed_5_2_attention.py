"""Design document 5.2: scaled dot-product attention, with a concrete head_dim.

``ppto.sqrt(head_dim)`` on a Python number is a Python float (as ``math.sqrt`` is), so it stays a
weak scalar and float32 inputs give float32 attention; ``np.sqrt(64)`` would be a float64 NumPy
scalar and, under NumPy 2's promotion rules, turn the whole result into float64.
"""

from __future__ import annotations

import math

import numpy as np

import pypto as ppto

head_dim = 64


def attention(Q, K, V):
    scores = ppto.matmul(Q, ppto.transpose(K, (0, 2, 1)))
    weights = ppto.softmax(scores / ppto.sqrt(head_dim))
    return ppto.matmul(weights, V)


Q, K, V = ppto.tensor("Q"), ppto.tensor("K"), ppto.tensor("V")
attention_op = attention(Q, K, V)


def numpy_version(Q, K, V):
    scores = Q @ np.transpose(K, (0, 2, 1)) / math.sqrt(head_dim)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def inputs(seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal((2, 128, head_dim)).astype(dtype) for n in "QKV"}


def results(seed: int = 0, dtype=np.float32):
    data = inputs(seed, dtype)
    rtol = 1e-4 if dtype == np.float32 else 1e-11
    return [("attention", attention_op.run(**data), numpy_version(**data), rtol)]


def main():
    from _report import report

    report("5.2 attention", ppto.trace(attention_op, **inputs()), results())


if __name__ == "__main__":
    main()
