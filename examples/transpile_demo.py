"""The main job, end to end: transpile an example file with ``pypto transpile``, then run the
generated module in a fresh interpreter where PyPTO cannot be imported, against the original.

    .venv/bin/python examples/transpile_demo.py     (python3 dev.py demo runs it)
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "numpy_style" / "elementwise.py"
SIGNATURES = ["arc_distance(f64[n], f64[n], f64[n], f64[n])", "gelu(f32[n, m])"]

CHECK = """
import importlib.util, sys
sys.modules["pypto"] = None  # the generated module must not need PyPTO
import numpy as np

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

generated = load("generated", {generated!r})
original = load("original", {source!r})
rng = np.random.default_rng(0)
points = [rng.uniform(-1.5, 1.5, 1_000_000) for _ in range(4)]
x = rng.standard_normal((512, 1024)).astype(np.float32)
for name, args in (("arc_distance", points), ("gelu", (x,))):
    got, want = getattr(generated, name)(*args), getattr(original, name)(*args)
    diff = float(np.max(np.abs(got - want)))
    print(f"  {{name}}: {{got.dtype}}{{list(got.shape)}}  max |generated - NumPy| = {{diff:.3g}}")
"""


def main() -> int:
    pypto = Path(sys.executable).parent / "pypto"
    with tempfile.TemporaryDirectory() as out:
        command = [str(pypto), "transpile", str(SOURCE), "-o", out, "--target", "numpy"]
        for sig in SIGNATURES:
            command += ["--signature", sig]
        print("$ pypto transpile examples/numpy_style/elementwise.py -o OUT --target numpy \\")
        print("    " + " ".join(f'--signature "{s}"' for s in SIGNATURES), flush=True)
        done = subprocess.run(command, cwd=ROOT, stderr=subprocess.STDOUT)
        if done.returncode:
            return done.returncode
        generated = Path(out) / SOURCE.name
        head = generated.read_text().splitlines()[:3]
        print("\n".join(f"  {line}" for line in head))
        print("running the generated module (pypto not importable there):", flush=True)
        code = CHECK.format(generated=str(generated), source=str(SOURCE))
        return subprocess.run([sys.executable, "-c", code], cwd=out).returncode


if __name__ == "__main__":
    sys.exit(main())
