"""Host Python of the CUDA target per call and per launch, measured with a do-nothing CuPy
stand-in: arrays are NumPy arrays that PyPTO takes for GPU arrays, every kernel launch and
library product returns at once (nothing is computed, so the results are garbage and are not
checked). What is left is what the host pays in Python: binding, guards, the Function IR's
interpreter or the transpiled module's host program, allocations (``np.empty`` here), argument
lists, launches. Needs no GPU.

Workloads: the transformer block of gpu_bench.py at small sizes, softmax, and the loop kernels
whose recurrences run inside one kernel (deriche, adi) next to one whose loop launches per step
(jacobi_1d). For each: the ``@ppto.compile`` path and the transpiled module's path, host us
per call, launches per call, host us per launch.

    .venv/bin/python benchmarks/cuda_host_overhead.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pypto as ppto  # noqa: E402
from benchmarks.cpu_bench import w3 as softmax  # noqa: E402
from benchmarks.gpu_bench import transformer  # noqa: E402
from benchmarks.loop_kernels import KERNELS  # noqa: E402
from pypto.testing.cuda_emu.fakecupy import FakeCupy  # noqa: E402
from pypto.transpile import signature_of  # noqa: E402


class NullCupy(FakeCupy):
    """FakeCupy whose kernels and products do nothing (they only count)."""

    def __getattr__(self, name):
        if name in ("matmul", "dot"):

            def product(a, b, *args, **kwargs):
                self.launches.append(name)
                shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (
                    a.shape[-2] if a.ndim > 1 else (),
                    b.shape[-1] if b.ndim > 1 else (),
                )
                shape = tuple(d for d in shape if d != ())
                out = kwargs.get("out")
                return out if out is not None else np.empty(shape, np.result_type(a, b))

            return product
        return super().__getattr__(name)

    def RawModule(self, code: str, options=(), name_expressions=()):
        return _NullModule(self)


class _NullModule:
    def __init__(self, cp):
        self.cp = cp

    def get_function(self, name):
        cp = self.cp

        def launch(grid, block, args, shared_mem=0):
            cp.launches.append(name)

        return launch


def _cases():
    rng = np.random.default_rng(0)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    mask = np.triu(np.full((64, 64), -1e4, np.float32), 1)
    yield (
        "transformer",
        transformer,
        (r(2, 64, 32), r(2, 64, 32), r(2, 64, 32), r(2, 64, 32), mask, r(32), r(32)),
    )
    yield "softmax", softmax, (r(64, 128),)
    for name in ("deriche", "adi", "jacobi_1d"):
        fn, make = KERNELS[name]
        yield name, fn, make("small", np.random.default_rng(1))


def _transpiled(name, fn, args, out: Path):
    """The function's transpiled module (NumPy and CUDA paths), imported."""
    src = out / f"{name}_src.py"
    body = textwrap.dedent(inspect.getsource(fn))
    src.write_text("import math\n\nimport numpy as np\n\n\n" + body)
    sig = signature_of(fn.__name__, args)
    command = [str(Path(sys.executable).parent / "pypto"), "transpile", str(src)]
    command += ["-o", str(out / "gen"), "-s", sig, "-q"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    sys.path.insert(0, str(out / "gen"))
    spec = importlib.util.spec_from_file_location(f"gen_{name}", out / "gen" / src.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, fn.__name__)


def _per_call(run, cp, args, repeat):
    device = [cp.device(a) if isinstance(a, np.ndarray) else a for a in args]
    run(*device)  # compile, warm
    cp.launches.clear()
    run(*device)
    launches = len(cp.launches)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            run(*device)
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best * 1e6, launches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    opts = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn, args in _cases():
            cp = NullCupy()
            compiled = ppto.compile(fn)
            with np.errstate(all="ignore"):
                us, launches = _per_call(compiled, cp, args, opts.repeat)
                module_fn = _transpiled(name, fn, args, Path(tmp))
                us_t, launches_t = _per_call(module_fn, cp, args, opts.repeat)
            rows.append((name, us, launches, us_t, launches_t))
    head = ["workload", "@compile us/call", "launches", "us/launch"]
    head += ["transpiled us/call", "launches", "us/launch"]
    print("| " + " | ".join(head) + " |")
    print("|---|---|---|---|---|---|---|")
    for name, us, n, us_t, n_t in rows:
        per = us / max(n, 1)
        per_t = us_t / max(n_t, 1)
        print(f"| {name} | {us:.1f} | {n} | {per:.1f} | {us_t:.1f} | {n_t} | {per_t:.1f} |")


if __name__ == "__main__":
    main()
