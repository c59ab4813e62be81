"""PolyBench-style loop kernels (benchmarks/loop_kernels.py): NumPy eager, PyPTO, numba njit.

Each kernel is the NumPy function itself with explicit Python loops. For each kernel and size it
runs NumPy eager, ``ppto.compile(fn)`` and, when numba is installed, ``numba.njit(fn)``; the
compiled ones are called once untimed (compiling), every call gets fresh copies of the inputs
(copied outside the timing), and the repeats are interleaved (NumPy, PyPTO, numba, NumPy, ...);
the table shows the minimum. PyPTO's result is checked against NumPy's (rtol 1e-9, atol 1e-9
times the result's scale); a kernel PyPTO refuses shows the error's first line. speedup = NumPy
ms / PyPTO ms (above 1: faster than NumPy); the summary gives its geometric mean and minimum per
size over the kernels PyPTO ran and got right.

    .venv/bin/python benchmarks/loop_bench.py [--quick] [--only gemm,lu] [--sizes small,large]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as ppto  # noqa: E402
from benchmarks.loop_kernels import KERNELS  # noqa: E402

REPEATS = {"small": 5, "large": 3}
BUDGET_S = 10.0  # an implementation stops repeating once its timed runs add up to this


def fresh(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {text[0] if text else ''}"
    return line[:110].replace("|", "\\|")


def mismatch(got, want) -> str | None:
    """None when got matches want (rtol 1e-9, atol 1e-9 times want's scale), else why not."""
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    if len(gots) != len(wants):
        return f"{len(gots)} results, want {len(wants)}"
    for i, (g, w) in enumerate(zip(gots, wants)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"result {i}: shape {g.shape}, want {w.shape}"
        scale = float(np.max(np.abs(w))) if w.size else 1.0
        atol = 1e-9 * (scale if scale > 0 else 1.0)
        if not np.allclose(g, w, rtol=1e-9, atol=atol):
            err = float(np.max(np.abs(g - w))) if np.all(np.isfinite(g)) else math.inf
            return f"result {i}: max abs error {err:.3g} (scale {scale:.3g})"
    return None


def timed(fn, args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def run_kernel(name: str, size: str, repeat: int, use_numba: bool) -> dict:
    fn, make = KERNELS[name]
    args = make(size, np.random.default_rng(0))
    want = fn(*fresh(args))
    row = {"kernel": name, "size": size, "notes": []}
    impls = {"NumPy": fn}
    try:
        compiled = ppto.compile(fn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(*fresh(args))  # compiles
        impls["PyPTO"] = compiled
        why = mismatch(got, want)
        if why:
            row["mismatch"] = why
            msg = f"!!! MISMATCH: PyPTO {name} {size}: {why}"
            print(msg, file=sys.stderr, flush=True)
            row["notes"].append(msg)
    except Exception as e:
        row["refused"] = first_line(e)
    if use_numba:
        import numba

        try:
            jitted = numba.njit(fn)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = jitted(*fresh(args))  # compiles
            impls["numba"] = jitted
            why = mismatch(got, want)
            if why:
                row["numba_wrong"] = why
                row["notes"].append(f"numba {name} {size}: wrong result: {why}")
        except Exception as e:
            row["numba_error"] = first_line(e)
    times = {k: [] for k in impls}
    for _ in range(repeat):
        for k, impl in impls.items():
            if sum(times[k]) >= BUDGET_S:
                continue
            times[k].append(timed(impl, fresh(args)))
    row["ms"] = {k: min(ts) * 1e3 for k, ts in times.items()}
    return row


def cells(row: dict, use_numba: bool) -> list[str]:
    ms = row["ms"]
    out = [row["kernel"], row["size"], f"{ms['NumPy']:.2f}"]
    if "refused" in row:
        out += [f"refused: {row['refused']}", "-"]
    else:
        speedup = ms["NumPy"] / ms["PyPTO"]
        flag = " MISMATCH" if "mismatch" in row else ""
        out += [f"{ms['PyPTO']:.2f}", f"{speedup:.2f}x{flag}"]
    if not use_numba:
        out.append("not installed")
    elif "numba" in ms:
        out.append(f"{ms['numba']:.2f}" + (" (wrong)" if "numba_wrong" in row else ""))
    else:
        out.append("n/a")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small size only, 2 repeats")
    parser.add_argument("--only", default="", help="comma-separated kernel names")
    parser.add_argument("--sizes", default="small,large", help="comma-separated: small,large")
    args = parser.parse_args()
    names = [k for k in KERNELS if not args.only or k in args.only.split(",")]
    unknown = set(args.only.split(",")) - set(KERNELS) - {""}
    if unknown:
        parser.error(f"unknown kernels: {', '.join(sorted(unknown))}; have {', '.join(KERNELS)}")
    sizes = ["small"] if args.quick else [s for s in args.sizes.split(",") if s]
    for s in sizes:
        if s not in REPEATS:
            parser.error(f"unknown size {s!r}; have small, large")
    use_numba = importlib.util.find_spec("numba") is not None
    if not use_numba:
        print("note: numba is not installed; its column is skipped")
    print(
        "| kernel | size | NumPy ms | PyPTO ms | PyPTO/NumPy speedup | numba ms |\n"
        "|---|---|---:|---:|---:|---:|",
        flush=True,
    )
    rows = []
    for size in sizes:
        repeat = 2 if args.quick else REPEATS[size]
        for name in names:
            row = run_kernel(name, size, repeat, use_numba)
            rows.append(row)
            print("| " + " | ".join(cells(row, use_numba)) + " |", flush=True)
    print()
    for size in sizes:
        ok = [r for r in rows if r["size"] == size and "refused" not in r and "mismatch" not in r]
        speedups = {r["kernel"]: r["ms"]["NumPy"] / r["ms"]["PyPTO"] for r in ok}
        total = sum(r["size"] == size for r in rows)
        if not speedups:
            print(f"{size}: PyPTO ran and matched none of {total} kernels")
            continue
        geo = math.exp(sum(math.log(s) for s in speedups.values()) / len(speedups))
        worst = min(speedups, key=speedups.get)
        print(
            f"{size}: geometric mean speedup {geo:.2f}x, minimum {speedups[worst]:.2f}x"
            f" ({worst}), over {len(speedups)} of {total} kernels"
        )
    refused = [r for r in rows if "refused" in r]
    wrong = [r for r in rows if "mismatch" in r]
    for r in refused:
        print(f"refused: {r['kernel']} {r['size']}: {r['refused']}")
    for r in wrong:
        print(f"!!! MISMATCH: {r['kernel']} {r['size']}: {r['mismatch']}")
    for r in rows:
        if "numba_error" in r:
            print(f"numba n/a: {r['kernel']} {r['size']}: {r['numba_error']}")
        if "numba_wrong" in r:
            print(f"numba wrong: {r['kernel']} {r['size']}: {r['numba_wrong']}")


if __name__ == "__main__":
    main()
