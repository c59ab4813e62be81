"""The Dask target against plain Dask and NumPy, side by side in one run.

For each workload, one NumPy function is run three ways: NumPy on NumPy arrays; the same
function on dask arrays (plain Dask: NumPy's functions dispatch to dask.array); and
``ppto.compile(fn)`` on the same dask arrays (the Dask target). The dask inputs are persisted
on the cluster first; a run is graph building + ``persist`` + waiting for the result. Shown:
the tasks of the optimized graph (``dask.optimize``), the minimum time of ``--repeat`` runs,
and the ratios. A last row measures weak scaling: the Dask target on 1 worker, then on 2
workers with twice the data (ideal: the same time).

    .venv/bin/python benchmarks/dask_bench.py [--repeat 3] [--small]

``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``; the machines are shared
and noisy: the ratios, measured in one run, are the result, not the absolute times.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as ppto  # noqa: E402
from benchmarks.gpu_bench import transformer  # noqa: E402  (the same block)


def sin_cos(x, y):
    return np.sin(x) + np.cos(y)


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def diffusion(u, kappa, steps):
    """The design document's diffusion operator (5.1), as an explicit time loop."""
    for _ in range(steps):
        u = u + 0.1 * (
            np.gradient(u, axis=0) * np.gradient(kappa, axis=0)
            + np.gradient(u, axis=1) * np.gradient(kappa, axis=1)
        )
    return u


def jacobi_1d(A, B, steps):
    """A time-stepped stencil written with slice assignments (plain Dask: ``__setitem__``)."""
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A


def workloads(small: bool):
    """(name, function, inputs: list of (shape, dtype, chunks) or a constant, check rtol)."""
    s = 4 if small else 1
    n = 4000 // s
    return [
        ("sin(x)+cos(y)", sin_cos, [((n, n), "f8", (n // 4, n))] * 2, 1e-12),
        ("softmax", softmax, [((n, n // 2), "f8", (n // 4, n // 2))], 1e-12),
        (
            "diffusion 20 steps",
            diffusion,
            [((n // 2, n // 2), "f8", (n // 8, n // 2))] * 2 + [20],
            1e-9,
        ),
        (
            "jacobi_1d 20 steps",
            jacobi_1d,
            [((4_000_000 // s,), "f8", (1_000_000 // s,))] * 2 + [20],
            1e-9,
        ),
        (
            "transformer block",
            transformer,
            [((16, 512 // s, 64), "f4", (4, 512 // s, 64))] * 4
            + [((512 // s, 512 // s), "f4", None), ((64,), "f4", None), ((64,), "f4", None)],
            2e-3,
        ),
    ]


def _inputs(spec, rng, da):
    """(NumPy values, dask values persisted on the cluster) for a workload's inputs."""
    arrays, lazy = [], []
    for item in spec:
        if not isinstance(item, tuple):
            arrays.append(item)
            lazy.append(item)
            continue
        shape, dtype, chunks = item
        a = rng.standard_normal(shape).astype(dtype)
        arrays.append(a)
        lazy.append(a if chunks is None else da.from_array(a, chunks=chunks).persist())
    return arrays, lazy


_FRESH = itertools.count()


def _fresh(values, da, wait):
    """Copies of the inputs, persisted under new names (outside the timing): every key a run
    computes is new, so the cluster cannot hand back a result it kept from an earlier run
    (plain Dask's names are deterministic, PyPTO's are not)."""
    out = [
        da.map_blocks(np.copy, v, name=f"bench-input-{next(_FRESH)}", meta=v._meta).persist()
        if isinstance(v, da.Array)
        else v
        for v in values
    ]
    wait([v for v in out if isinstance(v, da.Array)])
    return out


def _tasks(result, dask) -> int:
    """Tasks of the optimized graph: what runs (data in the graph, a kernel's code or a
    persisted chunk, and aliases of keys are not counted)."""
    from dask._task_spec import Task

    (opt,) = dask.optimize(result)
    return sum(isinstance(v, Task) for v in dict(opt.__dask_graph__()).values())


def _time_dask(fn, lazy, repeat, da, dask, wait):
    """(best time, tasks, result) after one untimed run (PyPTO compiles there, once per
    process; the workers compile the kernels' code once each)."""
    best = math.inf
    tasks = None
    result = None
    wait(fn(*_fresh(lazy, da, wait)).persist())
    for _ in range(repeat):
        result = None  # (the cluster forgets the last run's result)
        args = _fresh(lazy, da, wait)
        t0 = time.perf_counter()
        result = fn(*args)
        if tasks is None:
            tasks = _tasks(result, dask)
        result = result.persist()
        wait(result)
        best = min(best, time.perf_counter() - t0)
    return best, tasks, result


def _time_numpy(fn, arrays, repeat):
    best = math.inf
    out = None
    for _ in range(repeat):
        args = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def _weak_scaling(repeat, small, da, dask, distributed):
    """The Dask target's softmax: 1 worker on n rows, 2 workers on 2n rows."""
    n = 4000 // (4 if small else 1)
    times = []
    for workers in (1, 2):
        with (
            distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster),
        ):
            rng = np.random.default_rng(1)
            a = rng.standard_normal((n * workers, n // 2))
            x = da.from_array(a, chunks=(n // 4, n // 2)).persist()
            t, _, _ = _time_dask(ppto.compile(softmax), [x], repeat, da, dask, distributed.wait)
            times.append(t)
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="sizes / 4 (a quick check)")
    args = ap.parse_args(argv)
    import dask
    import dask.array as da
    import distributed

    rows = []
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        rng = np.random.default_rng(0)
        for name, fn, spec, rtol in workloads(args.small):
            arrays, lazy = _inputs(spec, rng, da)
            t_np, want = _time_numpy(fn, arrays, args.repeat)
            t_plain, k_plain, _ = _time_dask(fn, lazy, args.repeat, da, dask, distributed.wait)
            compiled = ppto.compile(fn)
            t_ppto, k_ppto, got = _time_dask(
                compiled, lazy, args.repeat, da, dask, distributed.wait
            )
            np.testing.assert_allclose(got.compute(), want, rtol=rtol, atol=rtol)
            rows.append((name, t_np, k_plain, t_plain, k_ppto, t_ppto))
    weak = _weak_scaling(args.repeat, args.small, da, dask, distributed)

    print(f"Dask target, LocalCluster 2 workers x 1 thread, min of {args.repeat} runs")
    print(
        "| workload | NumPy s | plain Dask tasks | plain Dask s | PyPTO tasks | PyPTO s "
        "| PyPTO vs plain Dask | PyPTO vs NumPy |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, t_np, k_plain, t_plain, k_ppto, t_ppto in rows:
        print(
            f"| {name} | {t_np:.3f} | {k_plain} | {t_plain:.3f} | {k_ppto} | {t_ppto:.3f} "
            f"| {t_plain / t_ppto:.2f}x | {t_np / t_ppto:.2f}x |"
        )
    print(
        f"| weak scaling (softmax, PyPTO) | 1 worker: {weak[0]:.3f} s | 2 workers, 2x rows: "
        f"{weak[1]:.3f} s | efficiency {weak[0] / weak[1]:.2f} | | | | |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
