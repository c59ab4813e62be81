"""GPU workloads through PyPTO's CUDA target, CuPy eager, ``cupy.fuse`` where it applies and
``torch.compile`` with --torch: times (min and median of --repeat after warm-up, synchronized),
ratios to CuPy eager, bandwidth against a measured device copy, and each result's largest
difference from CuPy eager's relative to its largest magnitude. Needs a GPU and CuPy; installs
nothing. Prints a table last.

    python benchmarks/gpu_bench.py [--repeat 10] [--only map,softmax] [--torch]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as ppto  # noqa: E402
from benchmarks.cpu_bench import w1 as map_chain  # noqa: E402  (the same workloads)
from benchmarks.cpu_bench import w3 as softmax  # noqa: E402
from benchmarks.cpu_bench import w4 as attention  # noqa: E402
from benchmarks.cpu_bench import w5 as diffusion  # noqa: E402
from benchmarks.cpu_bench import w7 as products  # noqa: E402
from benchmarks.cpu_bench import w8 as cumsum_map  # noqa: E402
from benchmarks.gather_bench import embedding  # noqa: E402  (the native gather, fused)


def transformer(x, q, k, v, mask, gamma, beta):
    s = (q @ np.swapaxes(k, -1, -2)) * (1 / math.sqrt(q.shape[-1])) + mask
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    r = x + (e / e.sum(axis=-1, keepdims=True)) @ v
    mu = r.mean(axis=-1, keepdims=True)
    var = ((r - mu) ** 2).mean(axis=-1, keepdims=True)
    return (r - mu) / np.sqrt(var + 1e-5) * gamma + beta


def inputs(cp, name):
    rng = cp.random.default_rng(0)

    def r(*shape, dtype=cp.float32):
        return rng.standard_normal(shape, dtype=dtype)

    n = 1 << 26
    return {
        "map": (r(n), r(n)),
        "softmax": (r(8192, 4096),),
        "attention": (r(16, 1024, 64), r(16, 1024, 64), r(16, 1024, 64)),
        "attention-4k": (r(8, 4096, 64), r(8, 4096, 64), r(8, 4096, 64)),
        "diffusion": (r(8192, 8192, dtype=cp.float64), r(8192, 8192, dtype=cp.float64)),
        "transformer": (
            r(16, 512, 64),
            r(16, 512, 64),
            r(16, 512, 64),
            r(16, 512, 64),
            cp.triu(cp.full((512, 512), -1e4, cp.float32), 1),
            r(64),
            r(64),
        ),
        "products": (r(4096, 4096), r(4096, 4096), r(4096, 4096), r(4096, 4096)),
        "cumsum": (r(8192, 4096),),
        "embedding": (r(1 << 20, 64), rng.integers(0, 1 << 20, 1 << 20), np.float32(0.5)),
    }[name]


WORKLOADS = {
    "map": map_chain,
    "softmax": softmax,
    "attention": attention,
    "attention-4k": attention,
    "diffusion": diffusion,
    "transformer": transformer,
    "products": products,
    "cumsum": cumsum_map,
    "embedding": embedding,
}


def with_env(fn, key, value):
    """``fn`` run with the environment variable ``key`` set to ``value``."""

    def run(*args):
        old = os.environ.get(key)
        os.environ[key] = value
        try:
            return fn(*args)
        finally:
            if old is None:
                del os.environ[key]
            else:
                os.environ[key] = old

    return run


def timed(cp, fn, args, repeat):
    fn(*args)  # warm-up: compiles
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def copy_bandwidth(cp):
    a = cp.empty(1 << 28, cp.uint8)
    b = cp.empty_like(a)
    best, _ = timed(cp, lambda: cp.copyto(b, a), (), 10)
    return 2 * a.nbytes / best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", default="")
    parser.add_argument("--torch", action="store_true", help="also torch.compile (slow to build)")
    args = parser.parse_args()
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        print(f"no GPU here ({type(e).__name__}: {e}); nothing to measure")
        return 0
    torch = None
    if args.torch:
        try:
            import torch
        except ImportError:
            print("note: torch is not installed; its column is skipped")
    bw = copy_bandwidth(cp)
    print(f"device copy bandwidth: {bw / 1e9:.0f} GB/s")
    rows = []
    for name, fn in WORKLOADS.items():
        if args.only and name not in args.only.split(","):
            continue
        data = inputs(cp, name)
        impls = {"CuPy": fn, "PyPTO": ppto.compile(fn)}
        if name.startswith(("attention", "transformer")):  # the other attention path
            impls["PyPTO tiled"] = with_env(impls["PyPTO"], "PYPTO_CUDA_ATTENTION", "tiled")
        if name == "map":

            def sin_cos(x, y):  # a named function: cupy.fuse names its kernel after it
                return cp.sin(x) + cp.cos(y)

            impls["cupy.fuse"] = cp.fuse(sin_cos)
        if torch is not None and torch.cuda.is_available():
            tfn = torch.compile(fn)
            tdata = [torch.as_tensor(a, device="cuda") for a in data]

            def run_torch(*_, tfn=tfn, tdata=tdata):
                return tfn(*tdata)

            impls["torch.compile"] = run_torch
        reference = fn(*data)
        moved = sum(a.nbytes for a in data) + reference.nbytes
        scale = float(cp.max(cp.abs(reference)))
        base = None
        for impl, f in impls.items():
            try:
                best, med = timed(cp, f, data, args.repeat)
                got = cp.asarray(f(*data))
                error = float(cp.max(cp.abs(got.astype(reference.dtype) - reference))) / scale
            except Exception as e:  # a peer that cannot run it
                print(f"{name} {impl}: {type(e).__name__}: {str(e)[:300]}")
                continue
            base = best if impl == "CuPy" else base
            ratio = base / best if base else 1.0
            rows.append((name, impl, best, med, ratio, moved / best / bw, error))
    head = ("workload", "impl", "min ms", "median ms", "vs CuPy", "of copy", "rel err")
    print("\n{:12} {:14} {:>9} {:>10} {:>8} {:>8} {:>9}".format(*head))
    for name, impl, best, med, ratio, frac, err in rows:
        print(
            f"{name:12} {impl:14} {best * 1e3:9.3f} {med * 1e3:10.3f} {ratio:8.2f} {frac:8.0%}"
            f" {err:9.1e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
