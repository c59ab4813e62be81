"""The passes: how long planning takes, and what the Plan promises (kernels, bytes moved).

For the design document's cases at the issue's workload sizes: the time of the whole pass
pipeline (simplify, patterns, fuse, schedule, memory, chunk) on the traced graph, the number of
kernels against the number of NumPy calls the ops would take one at a time, and the bytes the
Plan moves against that op-by-op total. Planning is a one-time cost per compiled specialization;
the byte counts are the Plan's model (each kernel reads its inputs once and writes its outputs
once), not a measurement; issue 5 measures the emitted code.

    .venv/bin/python benchmarks/plan_overhead.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import pypto as ppto
from pypto.passes import pipeline
from pypto.passes.memory import peak_bytes
from pypto.symbolic import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "passes"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "lazy_api"))


def cases():
    import seed_3_2_composition as s32
    import seed_4_1_parallel_products as s41
    import seed_5_1_diffusion as s51
    import seed_5_2_attention as s52
    from test_structure import cumsum_map, layer_norm, sin_cos, softmax, transformer_block

    f32 = np.float32

    def a(*shape, dtype=f32):
        return np.zeros(shape, dtype)

    b, n, d = 16, 1024, 64
    return [
        ("W1 sin(x)+cos(y) 2^25 f32", sin_cos, (a(1 << 25), a(1 << 25)), {}),
        ("W2 design 3.2, 4096^2 f32", s32.op_chain, (), {"x": a(4096, 4096), "y": a(4096, 4096)}),
        ("W3 softmax (8192,4096) f32", softmax, (a(8192, 4096),), {}),
        ("W4 attention (16,1024,64)", s52.attention_op, (), {"Q": a(b, n, d), "K": a(b, n, d),
                                                             "V": a(b, n, d)}),
        ("W5 diffusion 4096^2 f64", s51.diffusion_op, (),
         {"u": a(4096, 4096, dtype=np.float64), "kappa": a(4096, 4096, dtype=np.float64)}),
        ("W7 A@B+C@D 2048^2 f32", s41.final_op, (), {k: a(2048, 2048) for k in "ABCD"}),
        ("W8 cumsum map (8192,4096)", cumsum_map, (a(8192, 4096),), {}),
        ("layer norm (8192,4096) f32", layer_norm, (a(8192, 4096), a(4096), a(4096)), {}),
        ("transformer block", transformer_block,
         (a(b, n, d), a(b, n, d), a(b, n, d), a(b, n, d), a(n, n), a(d), a(d)), {}),
    ]  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(
        f"{'case':28} {'plan ms':>8} {'kernels':>7} {'calls':>5} {'moved':>9} {'unfused':>9} "
        f"{'ratio':>6} {'peak':>9}"
    )
    for name, target, pos, kw in cases():
        e = ppto.explain(target, *pos, **kw)
        times = []
        for _ in range(args.repeat):
            graphs = [(p.source, p.facts) for _, p in e.plans]
            for g, _ in graphs:
                pipeline._CACHE.pop(g, None)
            start = time.perf_counter()
            for g, facts in graphs:
                pipeline.plan_graph(g, facts)
            times.append(time.perf_counter() - start)
        plans = [p for _, p in e.plans]
        kernels = [k for p in plans for k in p.kernels]
        moved = sum(evaluate(k.bytes_read + k.bytes_written, e.env) for k in kernels)
        unfused = sum(evaluate(k.unfused_bytes, e.env) for k in kernels)
        calls = sum(len(k.ops) for k in kernels)
        peak = max(peak_bytes(p, e.env) for p in plans)
        print(
            f"{name:28} {min(times) * 1e3:8.2f} {len(kernels):7} {calls:5} {mib(moved):>9} "
            f"{mib(unfused):>9} {unfused / moved:6.2f} {mib(peak):>9}"
        )


def mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} B"


if __name__ == "__main__":
    main()
