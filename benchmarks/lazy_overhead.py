"""The lazy API next to NumPy eager: what running a chain costs over calling NumPy directly.

Today a chain runs op by op with NumPy (the reference executor), so on large arrays it should take
NumPy's time, and on tiny arrays the difference is PyPTO's per-call overhead (binding checks,
cache lookup with guards, the executor's result checks). Tracing happens once per
specialization and is reported separately. Min and median of N interleaved runs; ratio =
NumPy time / PyPTO time (above 1: PyPTO faster).

    .venv/bin/python benchmarks/lazy_overhead.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import pypto as ppto


def timed(fn, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def compare(name, numpy_fn, chain, data, repeat, inner):
    runner = lambda: chain.run(**data)  # noqa: E731
    np.testing.assert_allclose(runner(), numpy_fn(**data), rtol=1e-5)  # warm-up and check
    t_np, t_pp = [], []
    for _ in range(repeat):
        t_np.append(timed(lambda: numpy_fn(**data), inner))
        t_pp.append(timed(runner, inner))
    return name, min(t_np), statistics.median(t_np), min(t_pp), statistics.median(t_pp)


def trace_cost(chain, data, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        chain._node.cache = None  # forget the traced graph
        ppto.trace(chain, **data)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x, y = ppto.tensor("x"), ppto.tensor("y")
    Q, K, V = ppto.tensor("Q"), ppto.tensor("K"), ppto.tensor("V")

    map3 = ppto.sin(x) + ppto.cos(y) * 2.0
    chain32 = ppto.sin(ppto.reduce_sum(x, axis=1)) * ppto.exp(ppto.transpose(y, (1, 0)))
    attention = ppto.matmul(ppto.softmax(ppto.matmul(Q, ppto.transpose(K, (0, 2, 1))) / 8.0), V)

    def small(n):
        return {"x": rng.random(n, np.float32), "y": rng.random(n, np.float32)}

    big = small(1 << 22)
    rows = [
        compare(
            "3 maps, 100 float32 (overhead)",
            lambda x, y: np.sin(x) + np.cos(y) * 2.0,
            map3,
            small(100),
            args.repeat,
            2000,
        ),
        compare(
            "3 maps, 2^22 float32",
            lambda x, y: np.sin(x) + np.cos(y) * 2.0,
            map3,
            big,
            args.repeat,
            3,
        ),
        compare(
            "design 3.2 chain, 1024x1024 float32",
            lambda x, y: np.sin(np.sum(x, axis=1)) * np.exp(np.transpose(y, (1, 0))),
            chain32,
            {
                "x": rng.random((1024, 1024), np.float32),
                "y": rng.random((1024, 1024), np.float32) * 0.1,
            },
            args.repeat,
            5,
        ),
    ]
    qkv = {n: rng.standard_normal((4, 256, 64)).astype(np.float32) for n in "QKV"}

    def attention_np(Q, K, V):
        s = Q @ np.transpose(K, (0, 2, 1)) / 8.0
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)) @ V

    rows.append(
        compare("attention (4, 256, 64) float32", attention_np, attention, qkv, args.repeat, 5)
    )

    print(
        f"{'workload':40} {'NumPy min':>11} {'PyPTO min':>11} {'ratio':>7} "
        f"{'NumPy med':>11} {'PyPTO med':>11}"
    )
    for name, np_min, np_med, pp_min, pp_med in rows:
        print(
            f"{name:40} {np_min * 1e6:9.1f}us {pp_min * 1e6:9.1f}us {np_min / pp_min:7.2f} "
            f"{np_med * 1e6:9.1f}us {pp_med * 1e6:9.1f}us"
        )
    overhead = rows[0][3] - rows[0][1]
    print(f"\nper-call overhead over NumPy, 3-op chain on tiny arrays: {overhead * 1e6:.1f} us")
    print(
        f"one-time trace + verify, attention chain: "
        f"{trace_cost(attention, qkv, args.repeat) * 1e3:.2f} ms"
    )
    square = {"x": np.ones((32, 32), np.float32), "y": np.ones((32, 32), np.float32)}
    cost = trace_cost(chain32, square, args.repeat)
    print(f"one-time trace + verify, design 3.2 chain: {cost * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
