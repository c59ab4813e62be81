#!/usr/bin/env python3
"""The two Quick start commands; each makes its own virtualenv (.venv) and installs what it needs.

    python3 dev.py demo          run the design document's chain (prints the graph and the result),
                                 then transpile an example file and run the generated module
    python3 dev.py test [ARGS]   run the whole test suite (ARGS go to pytest)

Needs only Python 3.11+ with pip. The install is redone when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
DEMO = ROOT / "examples" / "lazy_api" / "seed_3_2_composition.py"
TRANSPILE_DEMO = ROOT / "examples" / "transpile_demo.py"


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036  (dev.py runs on any python3)
        sys.exit(f"PyPTO needs Python 3.11 or newer; this is {sys.version.split()[0]}")
    if not PY.exists():
        print(f"creating virtualenv {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    stamp = VENV / ".pypto-install"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:
        print("installing pypto-compiler[test] into .venv (editable)", flush=True)
        subprocess.run(
            [
                PY,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-e",
                f"{ROOT}[test]",
            ],
            check=True,
            cwd=ROOT,
        )
        stamp.write_text(want)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__.strip())
        return 2
    ensure_env()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if argv[0] == "demo":  # the design document's chain, then a transpiled example file
        for script in (DEMO, TRANSPILE_DEMO):
            code = subprocess.run([PY, script], cwd=ROOT, env=env).returncode
            if code:
                return code
        return 0
    return subprocess.run([PY, "-m", "pytest", *argv[1:]], cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
