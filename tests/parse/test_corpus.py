"""Every function of the NumPy-style corpus (examples/numpy_style) compiled with ppto.compile
returns what the original returns and writes what it writes.

For each (function, make_inputs) pair of each module's CASES, both sizes and both float dtypes:
the inputs are made with a fixed seed and deep-copied twice; the original runs on one copy, the
compiled function (compiled once per function, so later calls go through its cache) on the
other. Then the results have the same structure (tuple, single value or None), each value the
same kind (Python scalar, NumPy scalar or ndarray), dtype and shape, and close values; every
array argument holds the same values afterwards (in-place writes); and where the original
returns one of its argument arrays, the compiled function returns the same argument object.
"""

import copy
import importlib
import itertools
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "numpy_style"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODULE_NAMES = sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")
MODULES = {name: importlib.import_module(f"examples.numpy_style.{name}") for name in MODULE_NAMES}
CASES = [(name, fn, make) for name, module in MODULES.items() for fn, make in module.CASES]
SIZES = ["small", "large"]
DTYPES = [np.float32, np.float64]
# Relative tolerance by the dtype of the inputs (a float32 case whose result is float64, such
# as attention's division by the float64 np.sqrt(d), still computes in float32 on the way).
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-10}
# Looser bounds. These functions return sums of terms of both signs (products of random
# matrices and vectors; the FDTD fields, differences of differences): an entry that lands near
# zero still carries the rounding error of its largest terms, so a relative tolerance alone
# would fail on a different (equally correct) summation order. They also accept an absolute
# error of rtol times the largest magnitude of the expected result. Every other function is
# built (by its input ranges) to stay clear of cancellation and is held to rtol alone.
SCALED_ATOL = {"mlp", "linear_transposed", "dot_products", "fdtd_2d"}

_compiled: dict = {}


def compiled(fn):
    """ppto.compile(fn), once per function: the other sizes and dtypes reuse it."""
    if fn not in _compiled:
        _compiled[fn] = ppto.compile(fn)
    return _compiled[fn]


def kind(value) -> str:
    """Python scalar, NumPy scalar or ndarray (NumPy scalars first: np.float64 is a float)."""
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"ndarray ({type(value).__name__})"
    if isinstance(value, np.generic):
        return "NumPy scalar"
    if type(value) in (bool, int, float, complex):
        return f"Python {type(value).__name__}"
    return f"other ({type(value).__name__})"


def argument_index(value, args):
    """The position of the argument array that ``value`` is, or None."""
    for i, arg in enumerate(args):
        if isinstance(arg, np.ndarray) and value is arg:
            return i
    return None


def assert_close(got, want, rtol, scaled_atol, what):
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, f"{what}: dtype {got_a.dtype} != NumPy's {want_a.dtype}"
    assert got_a.shape == want_a.shape, f"{what}: shape {got_a.shape} != NumPy's {want_a.shape}"
    if want_a.dtype.kind in "fc":
        atol = 0.0
        if scaled_atol and want_a.size:
            atol = rtol * float(np.max(np.abs(want_a)))
        np.testing.assert_allclose(
            got_a, want_a, rtol=rtol, atol=atol, equal_nan=True, err_msg=what
        )
    else:
        np.testing.assert_array_equal(got_a, want_a, err_msg=what)


def check_value(got, want, got_args, want_args, rtol, scaled_atol, what):
    assert kind(got) == kind(want), f"{what}: {kind(got)} where NumPy gives {kind(want)}"
    if want is None:
        return
    if type(want) in (bool, int, float, complex):
        assert type(got) is type(want), f"{what}: {type(got)} != {type(want)}"
    index = argument_index(want, want_args)
    got_index = argument_index(got, got_args)
    if index is not None:
        assert got is got_args[index], f"{what}: the original returns argument {index} itself"
    else:
        assert got_index is None, f"{what}: returns argument {got_index}, the original a new value"
    assert_close(got, want, rtol, scaled_atol, what)


PARAMS = [
    pytest.param(
        module_name,
        fn,
        make,
        size,
        dtype,
        id=f"{module_name}.{fn.__name__}-{size}-{np.dtype(dtype).name}",
    )
    for (module_name, fn, make), size, dtype in itertools.product(CASES, SIZES, DTYPES)
]


@pytest.mark.parametrize(("module_name", "fn", "make", "size", "dtype"), PARAMS)
def test_compiled_matches_numpy(module_name, fn, make, size, dtype):
    seed = zlib.crc32(f"{module_name}.{fn.__name__}-{size}-{np.dtype(dtype).name}".encode())
    args = make(size, dtype, np.random.default_rng(seed))
    assert isinstance(args, tuple)
    want_args = copy.deepcopy(args)
    got_args = copy.deepcopy(args)
    rtol = RTOL[np.dtype(dtype)]
    scaled_atol = fn.__name__ in SCALED_ATOL

    want = fn(*want_args)
    got = compiled(fn)(*got_args)

    if isinstance(want, tuple):
        assert isinstance(got, tuple), f"{kind(got)} where NumPy gives a tuple"
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            check_value(g, w, got_args, want_args, rtol, scaled_atol, f"result[{i}]")
    else:
        assert not isinstance(got, tuple), "a tuple where NumPy gives a single value"
        check_value(got, want, got_args, want_args, rtol, scaled_atol, "result")

    # In-place writes: every array argument holds what the original left in it.
    for i, (g, w) in enumerate(zip(got_args, want_args)):
        if isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray)
            assert_close(g, w, rtol, scaled_atol, f"argument {i} after the call")


def test_the_corpus_has_at_least_40_uniquely_named_functions():
    names = [fn.__name__ for _, fn, _ in CASES]
    assert len(names) >= 40
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    assert len({fn for _, fn, _ in CASES}) == len(CASES)


def test_every_case_is_a_function_of_its_own_module():
    assert set(MODULE_NAMES) >= {"elementwise", "reductions", "linalg", "stencils", "loops"}
    for name, fn, make in CASES:
        module = MODULES[name]
        assert Path(module.__file__).resolve().parent == CORPUS.resolve()
        assert fn.__module__ == module.__name__, fn.__name__
        assert not fn.__name__.startswith("_"), fn.__name__
        assert callable(make)


def test_the_readme_lists_every_function():
    readme = (CORPUS / "README.md").read_text()
    missing = [fn.__name__ for _, fn, _ in CASES if f"`{fn.__name__}`" not in readme]
    assert missing == []
