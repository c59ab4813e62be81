"""@ppto.compile next to the original NumPy function: compile time, and run time per call.

A compiled function runs as generated code (its host program around its blocks' NumPy code);
the "large" corpus inputs are still small arrays, so the ratios show per-call overhead; loops
over scalars (Thomas sweeps) pay a block call on every iteration. Min and median of N
interleaved runs; ratio = NumPy time / PyPTO time. Last: the per-call overhead on tiny arrays.

    .venv/bin/python benchmarks/compile_overhead.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import pypto as ppto

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from examples.numpy_style import loops, reductions, stencils

CASES = [
    ("softmax (3-D, large)", reductions.softmax, reductions),
    ("layer_norm (large)", reductions.layer_norm, reductions),
    ("jacobi_2d (large)", stencils.jacobi_2d, stencils),
    ("thomas sweeps (large)", loops.thomas, loops),
]


def make_inputs(module, fn):
    make = dict(module.CASES)[fn]
    return make("large", np.float64, np.random.default_rng(0))


def best(fn, args, repeat):
    times = []
    for _ in range(repeat):
        fresh = copy.deepcopy(args)
        start = time.perf_counter()
        fn(*fresh)
        times.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(
        f"{'function':26} {'compile':>9} {'NumPy min':>10} {'PyPTO min':>10} {'ratio':>6} "
        f"{'NumPy med':>10} {'PyPTO med':>10}"
    )
    for name, fn, module in CASES:
        inputs = make_inputs(module, fn)
        compiled = ppto.compile(fn)
        start = time.perf_counter()
        compiled(*copy.deepcopy(inputs))  # the first call compiles
        first = time.perf_counter() - start
        t_np, t_pp = [], []
        for _ in range(args.repeat):  # interleaved
            t_np += best(fn, inputs, 1)
            t_pp += best(compiled, inputs, 1)
        compile_s = first - min(t_pp)
        print(
            f"{name:26} {compile_s * 1e3:7.1f}ms {min(t_np) * 1e3:8.2f}ms "
            f"{min(t_pp) * 1e3:8.2f}ms {min(t_np) / min(t_pp):6.2f} "
            f"{statistics.median(t_np) * 1e3:8.2f}ms {statistics.median(t_pp) * 1e3:8.2f}ms"
        )
    tiny_np, tiny_pp = per_call_overhead()
    print(
        f"\nper call, a 3-op function on 100 float32: NumPy {tiny_np:.1f} us, compiled "
        f"{tiny_pp:.1f} us (overhead {tiny_pp - tiny_np:.1f} us)"
    )


def three_ops(x, y):
    return np.sin(x) * np.cos(y) + 1.0


def per_call_overhead(calls=2000, repeat=7):
    """Microseconds per call of three_ops on tiny arrays: NumPy, then the compiled version."""
    x = np.random.default_rng(0).random(100).astype(np.float32)
    y = x.copy()
    compiled = ppto.compile(three_ops)
    compiled(x, y)
    out = []
    for fn in (three_ops, compiled):
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(calls):
                fn(x, y)
            runs.append((time.perf_counter() - start) / calls)
        out.append(min(runs) * 1e6)
    return out


if __name__ == "__main__":
    main()
