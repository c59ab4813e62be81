"""@ppto.compile next to the original NumPy function: compile time, and run time per call;
then what a fresh process pays before its first result.

A compiled function runs as generated code (its host program around its blocks' NumPy code);
the "large" corpus inputs are still small arrays, so the ratios show per-call overhead; loops
over scalars (Thomas sweeps) pay a block call on every iteration. Min and median of N
interleaved runs; ratio = NumPy time / PyPTO time. Then: the per-call overhead on tiny arrays.

Last, in fresh processes (min and median of N): ``import numpy`` and ``import pypto`` (timed
inside the process, so without the interpreter's start, which is shown apart), ``pypto --help``
(the whole process), and the first call of Thomas sweeps (examples/numpy_style/loops.py) with no
persistent cache (``PYPTO_CACHE=0``), with a cold one (``PYPTO_CACHE_DIR`` a new empty
directory) and with the same directory warm; a cache hit costs the warm first call less a
steady-state call. This process compiles with ``PYPTO_CACHE=0`` unless the environment says
otherwise, so the compile column is compilation, not a hit.

    .venv/bin/python benchmarks/compile_overhead.py [--repeat 7] [--quick]
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("PYPTO_CACHE", "0")  # the compile column: compilation, not a cache hit
import pypto as ppto

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from examples.numpy_style import loops, reductions, stencils

ROOT = Path(__file__).resolve().parent.parent

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
    parser.add_argument("--repeat", type=int, default=None, help="runs per case (default 7)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repeats: 3 runs a case, 3 processes an import row, 2 a first-call row",
    )
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    lazy_s = import_compiler()
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
    tiny_np, tiny_pp = per_call_overhead(repeat=args.repeat)
    print(
        f"\nper call, a 3-op function on 100 float32: NumPy {tiny_np:.1f} us, compiled "
        f"{tiny_pp:.1f} us (overhead {tiny_pp - tiny_np:.1f} us)"
    )
    print(
        f"importing the compiler (libcst, passes, emitters), which `import pypto` leaves to the "
        f"first compile: {lazy_s * 1e3:.0f} ms (done before the table: its compile column is "
        f"compilation only)"
    )
    fresh_processes(imports=3 if args.quick else 10, calls=2 if args.quick else 5)


def import_compiler() -> float:
    """Seconds to import what the first compiled call imports."""
    import importlib

    start = time.perf_counter()
    for name in ("pypto.parse.frontend", "pypto.passes.pipeline", "pypto.backends"):
        importlib.import_module(name)
    return time.perf_counter() - start


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


# -- fresh processes -------------------------------------------------------------------------------
FIRST_CALL_FN = loops.thomas

# Run in a fresh interpreter: the first call of FIRST_CALL_FN (import, parse, trace, plan, emit,
# or a persistent-cache hit), then steady-state calls; prints seconds as JSON.
FIRST_CALL = """
import copy, json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import pypto as ppto
from examples.numpy_style import loops
inputs = dict(loops.CASES)[loops.{name}]("large", np.float64, np.random.default_rng(0))
fn = ppto.compile(loops.{name})
fresh = copy.deepcopy(inputs)
start = time.perf_counter()
fn(*fresh)
first = time.perf_counter() - start
steady = []
for _ in range(5):
    fresh = copy.deepcopy(inputs)
    start = time.perf_counter()
    fn(*fresh)
    steady.append(time.perf_counter() - start)
print(json.dumps({{"first": first, "steady": min(steady)}}))
"""

# The design document's chain, its first run in a fresh interpreter (the same JSON).
CHAIN = """
import json, time
import numpy as np
import pypto as ppto
x, y = ppto.tensor("x"), ppto.tensor("y")
chain = ppto.sin(ppto.reduce_sum(x, axis=1))[:, None] * ppto.exp(ppto.transpose(y, (1, 0)))
rng = np.random.default_rng(0)
dx, dy = rng.random((300, 200)), rng.random((400, 300))
start = time.perf_counter()
chain.run(x=dx, y=dy)
first = time.perf_counter() - start
steady = []
for _ in range(5):
    start = time.perf_counter()
    chain.run(x=dx, y=dy)
    steady.append(time.perf_counter() - start)
print(json.dumps({"first": first, "steady": min(steady)}))
"""

IMPORT = "import time; t = time.perf_counter(); import {0}; print(time.perf_counter() - t)"


def _env(**changes) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYPTO_CACHE")}
    env.update(changes)
    return env


SMALL = """import numpy as np


def f{k}(x, y):
    return np.tanh(x) * y + {k}.0


# pypto: export f{k}(f32[n], f32[n])
"""


def _python(code: str, env: dict | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env or _env(),
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"a fresh process failed:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=_env(), cwd=ROOT)
    return time.perf_counter() - start


def statements(fn) -> int:
    """Statements in ``fn``'s body, nested ones and the docstring included."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    return sum(isinstance(n, ast.stmt) for n in ast.walk(tree)) - 1  # less the def itself


def fresh_processes(imports: int, calls: int) -> None:
    script = Path(sys.executable).parent / "pypto"
    help_argv = (
        [str(script), "--help"]
        if script.exists()
        else [sys.executable, "-m", "pypto_cli.main", "--help"]
    )
    rows = []  # (what, seconds per run)
    rows.append(
        ("python -c pass (start)", [_wall([sys.executable, "-c", "pass"]) for _ in range(imports)])
    )
    rows.append(("import numpy", [float(_python(IMPORT.format("numpy"))) for _ in range(imports)]))
    rows.append(("import pypto", [float(_python(IMPORT.format("pypto"))) for _ in range(imports)]))
    rows.append(("pypto --help (process)", [_wall(help_argv) for _ in range(imports)]))

    with tempfile.TemporaryDirectory(prefix="pypto-bench-jobs-") as tmp:
        src = Path(tmp) / "small"
        src.mkdir()
        for k in range(4):  # four small files, one function each
            (src / f"f{k}.py").write_text(SMALL.format(k=k))
        for jobs in (1, 2):
            argv = [str(script), "transpile", str(src), "-o", str(Path(tmp) / f"out{jobs}")]
            argv += ["-j", str(jobs), "-q"]
            rows.append(
                (
                    f"pypto transpile, 4 small files, -j {jobs}",
                    [_wall(argv) for _ in range(imports)],
                )
            )

    name = FIRST_CALL_FN.__name__
    code = FIRST_CALL.format(root=str(ROOT), name=name)
    off, cold, warm, steady, cached_files = [], [], [], [], 0
    for _ in range(calls):
        off.append(json.loads(_python(code, _env(PYPTO_CACHE="0")))["first"])
        directory = tempfile.mkdtemp(prefix="pypto-bench-cache-")
        try:
            cold.append(json.loads(_python(code, _env(PYPTO_CACHE_DIR=directory)))["first"])
            cached_files = sum(p.is_file() for p in Path(directory).rglob("*"))
            hit = json.loads(_python(code, _env(PYPTO_CACHE_DIR=directory)))
            warm.append(hit["first"])
            steady.append(hit["steady"])
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    chain_cold, chain_warm = [], []
    for _ in range(calls):
        directory = tempfile.mkdtemp(prefix="pypto-bench-cache-")
        try:
            chain_cold.append(json.loads(_python(CHAIN, _env(PYPTO_CACHE_DIR=directory)))["first"])
            chain_warm.append(json.loads(_python(CHAIN, _env(PYPTO_CACHE_DIR=directory)))["first"])
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    rows.append(("the design document's chain: first run, cold cache", chain_cold))
    rows.append(("the design document's chain: first run, warm cache", chain_warm))
    label = f"{name} ({statements(FIRST_CALL_FN)} statements)"
    rows.append((f"{label}: first call, PYPTO_CACHE=0", off))
    rows.append((f"{label}: first call, cold cache", cold))
    rows.append((f"{label}: first call, warm cache", warm))
    rows.append((f"{label}: steady-state call", steady))

    print(
        f"\nfresh processes ({imports} per import row, {calls} per first-call row); "
        f"the cold cache's directory held {cached_files} file(s) after its run"
        + (" (no persistent cache: cold and warm alike)" if cached_files == 0 else "")
    )
    width = max(len(what) for what, _ in rows)
    print(f"{'what':{width}} {'min':>9} {'median':>9}")
    for what, times in rows:
        print(f"{what:{width}} {min(times):8.3f}s {statistics.median(times):8.3f}s")
    ratios = (min(cold) / min(warm), statistics.median(cold) / statistics.median(warm))
    print(f"{'cold / warm first call':{width}} {ratios[0]:8.2f}x {ratios[1]:8.2f}x")
    print(
        f"{'a cache hit (warm first - steady)':{width}} {min(warm) - min(steady):8.3f}s "
        f"{statistics.median(warm) - statistics.median(steady):8.3f}s"
    )


if __name__ == "__main__":
    main()
