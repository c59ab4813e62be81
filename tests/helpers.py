"""Shared test machinery: strategies for arrays and the NumPy oracle comparison.

NumPy is the oracle: every test builds a PyPTO chain, runs it, and compares with the NumPy code
it stands for, run on the same inputs: same dtype, same shape, same values (bit for bit where
PyPTO calls the same NumPy function, within a stated tolerance where the arithmetic is
re-expressed). If NumPy raises, PyPTO must raise a PyptoError too.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

REQUIRED_DTYPES = [np.dtype(t) for t in ("bool", "int32", "int64", "float32", "float64")]
EXTRA_DTYPES = [np.dtype(t) for t in ("int8", "uint8", "uint32", "float16")]
ALL_DTYPES = REQUIRED_DTYPES + EXTRA_DTYPES
FLOAT_DTYPES = [np.dtype(t) for t in ("float16", "float32", "float64")]


def dtypes(which=ALL_DTYPES):
    return st.sampled_from(which)


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def elements(dtype, finite=False, small=False):
    """Values of a dtype: floats include NaN, +-Inf, zeros and subnormals unless finite."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        bound = 100.0 if small else None
        return st.floats(
            width=dtype.itemsize * 8,
            allow_nan=not finite and not small,
            allow_infinity=not finite and not small,
            min_value=-bound if small else None,
            max_value=bound,
        )
    if dtype.kind in "iu" and small:
        info = np.iinfo(dtype)
        return st.integers(max(info.min, -100), min(info.max, 100))
    return hnp.from_dtype(dtype)


@st.composite
def arrays(draw, dtype, shape, finite=False, small=False, layout=True):
    """An array of ``dtype`` and ``shape``, sometimes non-contiguous (strided, transposed or
    Fortran-ordered views), as users pass them."""
    a = draw(hnp.arrays(dtype, shape, elements=elements(dtype, finite, small)))
    if not layout or a.ndim == 0:
        return a
    kind = draw(st.sampled_from(["c", "c", "strided", "fortran", "reversed"]))
    if kind == "strided":
        axis = draw(st.integers(0, a.ndim - 1))
        big = np.repeat(a, 2, axis=axis)
        return big[(slice(None),) * axis + (slice(None, None, 2),)]
    if kind == "fortran":
        return np.asfortranarray(a)
    if kind == "reversed":
        return np.flip(np.flip(a).copy())
    return a


def quiet(fn, *args, **kwargs):
    with np.errstate(all="ignore"):
        return fn(*args, **kwargs)


def assert_same(got, want, rtol=None, atol=0.0):
    """Same dtype, same shape, same values (exactly when rtol is None; NaNs match NaNs)."""
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, f"dtype {got_a.dtype} != NumPy's {want_a.dtype}"
    assert got_a.shape == want_a.shape, f"shape {got_a.shape} != NumPy's {want_a.shape}"
    if rtol is None or want_a.dtype.kind not in "fc":
        np.testing.assert_array_equal(got_a, want_a)
    else:
        np.testing.assert_allclose(got_a, want_a, rtol=rtol, atol=atol, equal_nan=True)


def assert_same_result(got, want, tol=None, exact_types=True):
    """A compiled function's result against the original's: a tuple item by item, each of the
    exact Python / NumPy type (``exact_types``), then ``assert_same`` with ``tol(dtype)`` as
    its rtol and atol (``tol`` None: the same values exactly)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_result(g, w, tol, exact_types)
        return
    if exact_types:
        assert type(got) is type(want), (type(got), type(want))
    t = None if tol is None else tol(np.asarray(want).dtype)
    assert_same(got, want, rtol=t, atol=t or 0.0)


def float_tol(f32: float, f64: float):
    """``tol`` for assert_same_result: ``f32`` for single precision, ``f64`` otherwise."""
    return lambda dt: f32 if dt in (np.float32, np.complex64) else f64


def check(build, oracle, rtol=None, atol=0.0, **inputs):
    """Run ``build(**placeholders).run(**inputs)`` and ``oracle(**inputs)``; compare.

    ``build`` gets one ``ppto.tensor`` per input name and returns a lazy tensor (or a tuple).
    """
    try:
        want = quiet(oracle, **inputs)
    except Exception as e:  # NumPy refuses: PyPTO must refuse too, with its own error
        with pytest.raises(ppto.PyptoError):
            quiet(_run, build, inputs)
        return e
    got = quiet(_run, build, inputs)
    _compare(got, want, rtol, atol)
    return got


def check_reuse(chain, oracle, bindings, rtol=None):
    """Run one lazy ``chain`` on each dict of ``bindings`` (several shapes: the traced graph is
    reused while its guards hold); each run must match ``oracle`` run on the same inputs, or
    raise a PyptoError where NumPy raises."""
    for inputs in bindings:
        try:
            want = quiet(oracle, **inputs)
        except Exception:
            with pytest.raises(ppto.PyptoError):
                quiet(chain.run, **inputs)
            continue
        _compare(quiet(chain.run, **inputs), want, rtol)


def _compare(got, want, rtol, atol=0.0):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
    else:
        assert_same(got, want, rtol, atol)


def _run(build, inputs):
    placeholders = {name: ppto.tensor(name) for name in inputs}
    out = build(**placeholders)
    if isinstance(out, tuple):
        return tuple(ppto.run(list(out), **inputs))
    return out.run(**inputs)


def tolerance(dtype) -> float:
    """A relative tolerance for re-expressed float arithmetic in this dtype."""
    return {"e": 2e-3, "f": 2e-5, "d": 1e-12}.get(np.dtype(dtype).char, 1e-12)


@st.composite
def mask_shapes(draw, scores):
    """A shape that broadcasts to the score shape: the full shape, ``(Lq, Lk)``, ``(Lk,)``, or
    trailing axes with some sizes 1."""
    kind = draw(st.sampled_from(["full", "rows", "last", "some"]))
    if kind == "full":
        return scores
    if kind == "rows":
        return scores[-2:]
    if kind == "last":
        return scores[-1:]
    n = draw(st.integers(0, len(scores)))
    tail = scores[len(scores) - n :]
    return tuple(draw(st.sampled_from([1, s])) for s in tail)


SEED_EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "lazy_api"
_seeds: dict = {}


def load_seed(section: str):
    """Import the design document's example of a section (``"3_2"``) once (the 7.1 example
    registers an operator when imported)."""
    if section not in _seeds:
        (path,) = SEED_EXAMPLES.glob(f"seed_{section}_*.py")
        _seeds[section] = import_file(f"example_{section}", path, SEED_EXAMPLES)
    return _seeds[section]


def import_file(name: str, path, search=None):
    """The module at ``path``, imported under ``name`` (``search``: a folder on sys.path while
    it runs)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if search is not None:
        sys.path.insert(0, str(search))
    try:
        spec.loader.exec_module(module)
    finally:
        if search is not None:
            sys.path.remove(str(search))
    return module


CUDA_EMU_TESTS = Path(__file__).resolve().parent / "cuda_emu"


def cuda_emulator(name: str):
    """tests/cuda_emu's conftest as a module of its own (its fixtures ``gxx``, ``nvrtc_ok``,
    ``tools`` and ``ON_DEVICE``, for test files elsewhere), with tests/cuda_emu on sys.path
    (``cupy_backend``)."""
    if str(CUDA_EMU_TESTS) not in sys.path:
        sys.path.insert(0, str(CUDA_EMU_TESTS))
    return import_file(name, CUDA_EMU_TESTS / "conftest.py")


def checked_cupy(emu, order="random", seed=4):
    """The CuPy stand-in (tests/cuda_emu/cupy_backend.py), every kernel module it is given
    compiled by NVRTC too (unless on a device, where CuPy compiles them)."""
    from cupy_backend import make_cupy

    from pypto.testing import nvrtc

    cp = make_cupy(order=order, seed=seed)
    raw = cp.RawModule

    def checked(code, options=(), name_expressions=()):
        nvrtc.compile_cuda(code)
        return raw(code, options=options, name_expressions=name_expressions)

    if not emu.ON_DEVICE:
        cp.RawModule = checked
    return cp


REAL_CODE = Path(__file__).resolve().parent.parent / "examples" / "real_code" / "programs.py"


def real_code():
    """examples/real_code/programs.py (programs in the style of real NumPy code)."""
    return import_file("real_code_programs", REAL_CODE)


def spd(n: int, dtype, rng):
    """A symmetric, diagonally dominant (positive definite) ``n`` x ``n`` matrix."""
    a = rng.uniform(size=(n, n))
    return (a + a.T + 2 * n * np.eye(n)).astype(dtype)


def csr_of(dense):
    """``dense`` in CSR form: (data, indices, indptr)."""
    nz = dense != 0
    indptr = np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int64)
    return dense[nz], np.nonzero(dense)[1].astype(np.int64), indptr


def run_transpiled(tmp_path, src: Path, signatures: list[str], calls: str, inputs: tuple):
    """Transpile ``src`` to the NumPy target, check that ruff passes the module, and evaluate
    ``calls`` (an expression over the module ``m`` and the tuple ``args``) in a fresh
    interpreter where PyPTO is never imported. Returns (its value, the module's text)."""
    import pickle
    import subprocess

    out = tmp_path / "out"
    bin_dir = Path(sys.executable).parent
    subprocess.run(
        [bin_dir / "pypto", "transpile", "--target", "numpy", "-o", str(out), str(src)]
        + [a for s in signatures for a in ("--signature", s)],
        check=True,
        capture_output=True,
    )
    lint = subprocess.run(
        [bin_dir / "ruff", "check", "--isolated", str(out)], capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout
    code = (
        "import sys, pickle\n"
        f"sys.path.insert(0, {str(out)!r}); sys.path.append({str(src.parent)!r})\n"
        f"import {src.stem} as m\n"
        "args = pickle.load(sys.stdin.buffer)\n"
        f"r = {calls}\n"
        "assert 'pypto' not in sys.modules\n"
        "sys.stdout.buffer.write(pickle.dumps(r))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], input=pickle.dumps(inputs), capture_output=True
    )
    assert run.returncode == 0, run.stderr.decode()
    return pickle.loads(run.stdout), (out / src.name).read_text()
