"""Real-GPU tests: the CUDA target with CuPy on a device. Marked ``gpu``; each skips, with the
reason, where CuPy or a device is missing (the emulator tests in tests/cuda_emu prove the same
kernels on the CPU)."""

from __future__ import annotations

import copy
import importlib
import itertools
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytestmark = pytest.mark.gpu


def _cupy():
    try:
        import cupy
    except ImportError as e:
        pytest.skip(f"CuPy is not installed ({e})")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception as e:  # no driver
        pytest.skip(f"no CUDA device ({type(e).__name__}: {e})")
    return cupy


CORPUS = ROOT / "examples" / "numpy_style"
CASES = [
    (f"{name}.{fn.__name__}", fn, make)
    for name in sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")
    for fn, make in importlib.import_module(f"examples.numpy_style.{name}").CASES
]


@pytest.mark.parametrize(
    ("case_id", "fn", "make", "dtype"),
    [
        pytest.param(*case, dtype, id=f"{case[0]}-{np.dtype(dtype).name}")
        for case, dtype in itertools.product(CASES, (np.float32, np.float64))
    ],
)
def test_corpus_on_the_gpu(case_id, fn, make, dtype):
    """Every corpus function through ``@ppto.compile`` given CuPy arrays: its results are
    CuPy arrays and match the original function run by NumPy."""
    cp = _cupy()
    args = make("small", dtype, np.random.default_rng(zlib.crc32(case_id.encode())))
    with np.errstate(all="ignore"):
        want = fn(*copy.deepcopy(args))
    device = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    got = ppto.compile(fn)(*device)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    rtol = (1e-4 if "attention" in case_id else 1e-5) * (1 if dtype == np.float32 else 1e-5)
    for g, w in zip(got, want):
        if w is None:
            continue
        if isinstance(w, np.ndarray) and w.ndim:
            assert type(g).__module__.startswith("cupy"), type(g)  # it ran on the GPU
        g = cp.asnumpy(g) if hasattr(g, "__cuda_array_interface__") else g
        scale = float(np.max(np.abs(np.asarray(w, np.float64)), initial=1.0))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def test_softmax_and_attention_chains_on_the_gpu():
    cp = _cupy()
    rng = np.random.default_rng(0)
    x = ppto.tensor("x")
    data = rng.standard_normal((64, 1000)).astype(np.float32)
    got = cp.asnumpy(ppto.softmax(x, axis=-1).run(x=cp.asarray(data)))
    np.testing.assert_allclose(got, ppto.softmax(x, axis=-1).run(x=data), rtol=1e-5, atol=1e-7)
    q, k, v = (rng.standard_normal((2, 300, 64)).astype(np.float32) for _ in range(3))
    chain = ppto.attention(ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v"), scale=0.125)
    want = chain.run(q=q, k=k, v=v)
    got = cp.asnumpy(chain.run(q=cp.asarray(q), k=cp.asarray(k), v=cp.asarray(v)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
