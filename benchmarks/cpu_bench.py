"""CPU workloads W1-W8 side by side: NumPy eager, PyPTO, and numexpr / numba / jax when installed.

Each workload runs in one process, implementations interleaved (run A, run B, run A, ...), after
one warm-up call each; the table shows the minimum and the median of --repeat runs (default 7)
and the ratio NumPy-min / implementation-min (above 1: faster than NumPy), plus the bandwidth
achieved against a measured triad (a[:] = b + s * c, the machine's practical memory bandwidth).
Results are checked against NumPy's before timing. Peers that are not installed are skipped with
a note. ``--memory`` runs each implementation of W1 and W5 in a fresh subprocess on large arrays
and reports peak RSS above inputs + outputs.

    .venv/bin/python benchmarks/cpu_bench.py [--repeat 7] [--only W1,W3] [--memory]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as ppto  # noqa: E402


# -- the workloads, written once as NumPy code ---------------------------------------------------
def w1(x, y):
    return np.sin(x) + np.cos(y)


def w2(x, y):
    return np.sin(np.sum(x, axis=1))[:, None] * np.exp(y.T)


def w3(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def w4(q, k, v):
    s = (q @ np.swapaxes(k, -1, -2)) / math.sqrt(q.shape[-1])
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ v


def w5(u, kappa):
    return np.gradient(u, axis=0) * np.gradient(kappa, axis=0) + np.gradient(
        u, axis=1
    ) * np.gradient(kappa, axis=1)


def w6(theta_1, phi_1, theta_2, phi_2):
    temp = (
        np.sin((theta_2 - theta_1) / 2) ** 2
        + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2
    )
    return 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))


def w7(a, b, c, d):
    return a @ b + c @ d


def w8(x):
    return np.cumsum(x, axis=0) * 0.5 + 1


def inputs(name: str, scale: float = 1.0):
    rng = np.random.default_rng(0)
    f32, f64 = np.float32, np.float64

    def r(shape, dtype):
        return rng.standard_normal(shape, dtype=dtype)  # no float64 detour (the RSS peak)

    n25 = int((1 << 25) * scale)
    n24 = int((1 << 24) * scale)
    side = int(4096 * math.sqrt(scale))  # W5: scale 4 gives 8192^2 float64, 0.5 GiB arrays
    return {
        "W1": lambda: (r(n25, f32), r(n25, f32)),
        "W2": lambda: (r((4096, 4096), f32), r((4096, 4096), f32)),
        "W3": lambda: (r((8192, 4096), f32),),
        "W4": lambda: tuple(r((16, 1024, 64), f32) for _ in range(3)),
        "W5": lambda: (r((side, side), f64), r((side, side), f64)),
        "W6": lambda: tuple(r(n24, f64) for _ in range(4)),
        "W7": lambda: tuple(r((2048, 2048), f32) for _ in range(4)),
        "W8": lambda: (r((8192, 4096), f32),),
    }[name]()


WORKLOADS = {
    "W1": ("sin(x) + cos(y), 2^25 f32", w1, 2.3),
    "W2": ("sin(sum(x,1))[:,None]*exp(y.T), 4096^2 f32", w2, 1.2),
    "W3": ("stable softmax (8192,4096) f32", w3, 2.4),
    "W4": ("attention (16,1024,64) f32", w4, 2.0),
    "W5": ("5.1 diffusion with gradient 4096^2 f64", w5, 4.5),
    "W6": ("arc distance 4 x 2^24 f64", w6, 2.6),
    "W7": ("A@B + C@D 2048^2 f32", w7, 1.0),
    "W8": ("cumsum(x,0)*0.5+1 (8192,4096) f32", w8, 8.6),
}


# -- peers ----------------------------------------------------------------------------------------
NUMEXPR = {  # the elementwise workloads, as numexpr expressions
    "W1": ("sin(x) + cos(y)", ("x", "y")),
    "W6": (
        "2 * arctan2(sqrt(sin((t2 - t1) / 2) ** 2 + cos(t1) * cos(t2) * sin((p2 - p1) / 2) ** 2),"
        " sqrt(1 - (sin((t2 - t1) / 2) ** 2 + cos(t1) * cos(t2) * sin((p2 - p1) / 2) ** 2)))",
        ("t1", "p1", "t2", "p2"),
    ),
}


def peers(name: str, fn):
    """Other implementations of the workload that can be built here: {label: callable}. numba
    compiles the same NumPy function (njit, parallel); it may refuse some (noted)."""
    found = {}
    if importlib.util.find_spec("numexpr") and name in NUMEXPR:
        import numexpr as ne

        expr, names = NUMEXPR[name]
        found["numexpr"] = lambda *a: ne.evaluate(expr, local_dict=dict(zip(names, a)))
    if importlib.util.find_spec("numba"):
        import numba

        found["numba"] = numba.njit(parallel=True, fastmath=False)(fn)
    if importlib.util.find_spec("jax"):
        import jax

        jitted = jax.jit(fn)
        found["jax"] = lambda *a: np.asarray(jitted(*a))
    return found


# -- timing ---------------------------------------------------------------------------------------
def timed(fn, args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def triad_bandwidth(n=1 << 25, repeat=5) -> float:
    """Bytes per second of a[:] = b + s * c (numpy, one thread), the reference bandwidth."""
    b, c = np.ones(n), np.ones(n)
    a = np.empty(n)
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)
        best = min(best, time.perf_counter() - start)
    return 3 * a.nbytes / best  # the ideal traffic: read b and c, write a


def ideal_bytes(args, out) -> int:
    outs = out if isinstance(out, tuple) else (out,)
    return sum(a.nbytes for a in args) + sum(np.asarray(o).nbytes for o in outs)


def run_workload(key: str, repeat: int, triad: float):
    label, fn, target = WORKLOADS[key]
    args = inputs(key)
    impls = {"NumPy": fn, "PyPTO": ppto.compile(fn)}
    impls.update(peers(key, fn))
    want = fn(*args)
    notes = []
    for name, impl in list(impls.items()):
        try:
            got = impl(*args)  # warm-up (compiles) and check
            tol = 1e-4 if np.asarray(want).dtype == np.float32 else 1e-9
            scale = float(np.max(np.abs(want)))
            if not np.allclose(got, want, rtol=tol, atol=tol * scale):
                notes.append(f"{name}: WRONG RESULT, dropped")
                del impls[name]
        except Exception as e:  # a peer that cannot run it
            notes.append(f"{name}: {type(e).__name__}: {e}"[:120])
            del impls[name]
    times = {name: [] for name in impls}
    for _ in range(repeat):
        for name, impl in impls.items():
            times[name].append(timed(impl, args))
    base = min(times["NumPy"])
    traffic = ideal_bytes(args, want)
    rows = []
    for name, ts in times.items():
        best = min(ts)
        rows.append((name, best, statistics.median(ts), base / best, traffic / best / triad))
    return label, target, rows, notes


def measure_memory(key: str, impl: str, scale: float) -> dict:
    """In a fresh process: peak RSS above inputs + outputs for one implementation."""
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import benchmarks.cpu_bench as b\n"
        f"args = b.inputs({key!r}, {scale})\n"
        f"fn = b.WORKLOADS[{key!r}][1]\n"
        "import pypto as ppto\n"
        f"f = ppto.compile(fn) if {impl!r} == 'PyPTO' else fn\n"
        "small = tuple(a[:64].copy() if a.ndim == 1 else a[:64, :64].copy() for a in args)\n"
        "f(*small)  # compile on small arrays, so that the peak is the run's\n"
        "def rss(key):\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith(key):\n"
        "            return int(line.split()[1]) * 1024\n"
        "open('/proc/self/clear_refs', 'w').write('5')  # reset the high-water mark\n"
        "base = rss('VmRSS')\n"
        "out = f(*args)\n"
        "peak = rss('VmHWM')\n"
        "io = sum(a.nbytes for a in args) + out.nbytes\n"
        "print(base, peak, io)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr[-300:]}
    base, peak, io = (int(x) for x in out.stdout.split())
    return {"above_io": max(0, peak - base - (io - sum_inputs(key, scale))), "io": io}


def sum_inputs(key, scale):
    return sum(a.nbytes for a in inputs(key, scale))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated workload keys")
    parser.add_argument("--memory", action="store_true", help="peak RSS mode (W1, W5)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if args.memory:
        # W1 with 1 GiB arrays (2^28 float32), W5 with 0.5 GiB arrays (8192^2 float64)
        for key, scale in (("W1", 8.0), ("W5", 4.0)):
            for impl in ("NumPy", "PyPTO"):
                r = measure_memory(key, impl, scale)
                shown = r.get("error") or f"+{r['above_io'] / 2**20:.0f} MiB above inputs+outputs"
                print(f"{key} {impl:6} {shown}")
        return
    keys = [k for k in WORKLOADS if not args.only or k in args.only.split(",")]
    triad = triad_bandwidth()
    print(f"triad bandwidth (numpy, 1 thread): {triad / 1e9:.1f} GB/s; CPUs: {os.cpu_count()}")
    for peer in ("numexpr", "numba", "jax"):
        if importlib.util.find_spec(peer) is None:
            print(f"note: {peer} is not installed; its column is skipped")
    summary, record = [], {}
    for key in keys:
        label, target, rows, notes = run_workload(key, args.repeat, triad)
        print(f"\n{key} {label} (target >= {target}x)")
        print(f"  {'impl':8} {'min ms':>9} {'median ms':>10} {'ratio':>6} {'of triad':>9}")
        for name, best, med, ratio, bw in rows:
            print(f"  {name:8} {best * 1e3:9.2f} {med * 1e3:10.2f} {ratio:6.2f} {bw:8.0%}")
        for n in notes:
            print(f"  note: {n}")
        pp = next(r for r in rows if r[0] == "PyPTO")
        summary.append((key, label, target, pp[3], pp[4]))
        record[key] = {"rows": rows, "target": target}
    print("\nsummary (ratio = NumPy min / PyPTO min)")
    for key, label, target, ratio, bw in summary:
        mark = "ok" if ratio >= target else "below target"
        print(f"  {key} {label:44} {ratio:6.2f}x (target {target}x, {bw:.0%} of triad) {mark}")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
