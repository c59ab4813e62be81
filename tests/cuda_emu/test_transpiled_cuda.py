"""The CUDA path of transpiled modules: a generated module given GPU arrays runs its CUDA
specializations (here on the emulation harness, through the CuPy stand-in) and matches the
original functions; the compiled path really runs (the original, kept by the generator as
``_<name>_python``, is replaced by one that fails)."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from pypto.emit.cuda_emu.fakecupy import FakeCupy
from pypto.transpile import signature_of, transpile_file

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "examples" / "numpy_style"
MODULES = sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")


def _args(module: str, fn, make, dtype, salt=0):
    label = f"{module}.{fn.__name__}"
    return make("small", dtype, np.random.default_rng(zlib.crc32(label.encode()) + salt))


def _fell_back(*args, **kwargs):
    raise AssertionError("the original function ran, not the compiled one")


@pytest.mark.parametrize("module", MODULES)
def test_transpiled_modules_run_their_cuda_path_on_gpu_arrays(gxx, nvrtc_ok, module, tmp_path):
    original = importlib.import_module(f"examples.numpy_style.{module}")
    signatures = [
        signature_of(fn.__name__, _args(module, fn, make, dtype))
        for fn, make in original.CASES
        for dtype in (np.float32, np.float64)
    ]
    result = transpile_file(CORPUS / f"{module}.py", signatures=signatures)
    assert not result.carried, result.carried
    path = tmp_path / f"{module}.py"
    path.write_text(result.text)
    spec = importlib.util.spec_from_file_location(f"transpiled_{module}", path)
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    for fn, make in original.CASES:
        setattr(generated, f"_{fn.__name__}_python", _fell_back)
        for dtype, order in ((np.float32, "reverse"), (np.float64, "random")):
            args = _args(module, fn, make, dtype, salt=1)  # new values of the same kinds
            cp = FakeCupy(order=order, isolate=False)
            device = [cp.device(a) if isinstance(a, np.ndarray) else a for a in args]
            with np.errstate(all="ignore"):
                want = fn(*copy.deepcopy(args))
                got = getattr(generated, fn.__name__)(*device)
            assert cp.launches, fn.__name__
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, tuple) else (got,)
            rtol = 1e-4 if dtype == np.float32 else 1e-9
            for g, w in zip(got, want):
                if w is None:
                    assert g is None
                    continue
                scale = float(np.max(np.abs(np.asarray(w, np.float64)), initial=1.0))
                np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=rtol * scale)
