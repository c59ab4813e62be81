"""Values whose size the values decide (``x[mask]``, ``np.nonzero``, ``np.flatnonzero``,
``np.argwhere``, ``np.unique``, ``np.extract``, ``np.compress``): a graph break whose result
binds a new size symbol when it has run (function.Bind), the code after it a new block.
Against NumPy on the decorator path, in pypto transpile's module, on the CUDA target
(emulator) and on the Dask target (tests/dask/test_dask_target.py)."""

from pathlib import Path

import data_sized_programs as programs
import numpy as np
import pytest
from helpers import assert_same_result, cuda_emulator, float_tol, run_transpiled

import pypto as ppto
from pypto.dtypes import SUPPORTED
from pypto.function import Bind

HERE = Path(__file__).resolve().parent
TOL = float_tol(1e-5, 1e-12)


def inputs(name, rng, dtype, n):
    """Arguments for program ``name`` with sizes around ``n``."""

    def a(*shape):
        return rng.standard_normal(shape).astype(dtype)

    labels = rng.integers(0, 4, 3 * n)
    return {
        "positive_stats": lambda: (a(3 * n),),
        "sigma_clip": lambda: (a(4 * n),),
        "active_rows": lambda: (a(2 * n, 3),),
        "sparse_pairs": lambda: (a(n, n + 2),),
        "peak_positions": lambda: (a(5 * n),),
        "label_means": lambda: (labels, a(3 * n)),
        "winners": lambda: (a(3 * n), 0.5),
        "compressed_columns": lambda: (a(n, 2 * n),),
        "inside_expression": lambda: (a(3 * n), a(3 * n)),
        "per_row_selection": lambda: (a(n, 5), n - 1),
        "empty_selection": lambda: (a(2 * n),),
    }[name]()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", programs.PROGRAMS)
def test_programs_match_numpy(name, dtype):
    fn = getattr(programs, name)
    compiled = ppto.compile(fn)
    rng = np.random.default_rng(len(name))
    for n in (3, 7, 12):
        args = inputs(name, rng, dtype, n)
        assert_same_result(compiled(*args), fn(*args), TOL)


def test_explain_names_each_selection_with_its_line():
    x = np.random.default_rng(1).standard_normal(30)
    text = str(ppto.explain(programs.sigma_clip, x))
    assert "`x[mask]`, whose size" in text and "the size is bound when it has run" in text
    assert "data_sized_programs.py:16" in text  # the line of the masked read


def _binds(steps):
    from pypto.function import Branch, Loop, While

    for s in steps:
        if isinstance(s, Bind):
            yield s
        elif isinstance(s, (Loop, While)):
            yield from _binds(s.body)
        elif isinstance(s, Branch):
            yield from _binds(s.then)
            yield from _binds(s.orelse)


def test_the_function_ir_binds_one_size_per_call():
    from pypto.parse.frontend import trace_function
    from pypto.parse.source import function_source
    from pypto.symbolic import Sym
    from pypto.types import ArgSpec, TensorType

    src = function_source(programs.sparse_pairs)
    t = TensorType(np.dtype(np.float64), (Sym("A.0"), Sym("A.1")))
    fn_ir = trace_function(src, {"A": ArgSpec("array", t)}, {"A.0": 4, "A.1": 5})
    binds = list(_binds(fn_ir.body))
    # np.nonzero's two items share one size; np.flatnonzero has its own
    assert [b.what for b in binds] == ["`np.nonzero`", "`np.flatnonzero`"]


@pytest.mark.parametrize("dtype", [dt.name for dt in SUPPORTED])
def test_every_dtype(dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(17) * 5).astype(dtype)
    for fn in (programs.empty_selection, programs.sparse_pairs):
        args = (x,) if fn is programs.empty_selection else (x.reshape(1, 17),)
        with np.errstate(all="ignore"):
            try:
                want = fn(*args)
            except TypeError as e:  # (bool - bool, ...): NumPy's error, where it runs
                with pytest.raises(TypeError) as got:
                    ppto.compile(fn)(*args)
                assert str(e) in str(got.value)
                continue
            assert_same_result(ppto.compile(fn)(*args), want)


def test_a_mask_of_the_wrong_length_is_numpys_index_error():
    x = np.arange(5.0)
    with pytest.raises(IndexError) as want:
        programs.mask_mismatch(x, np.ones(4, bool))
    with pytest.raises(IndexError) as got:
        ppto.compile(programs.mask_mismatch)(x, np.ones(4, bool))
    assert isinstance(got.value, ppto.PyptoError)
    assert str(want.value) in str(got.value)


def two_selections(x, y):
    return x[x > 0] + y[y > 0]


def test_selections_that_do_not_broadcast_are_numpys_value_error():
    compiled = ppto.compile(two_selections)
    x, y = np.array([1.0, -1.0, 2.0]), np.array([3.0, 4.0, -5.0])
    assert_same_result(compiled(x, y), two_selections(x, y))
    y = np.array([3.0, 4.0, 5.0])
    with pytest.raises(ValueError):
        two_selections(x, y)
    with pytest.raises(ValueError):  # (NumPy's own: the original ran, nothing written yet)
        compiled(x, y)


def test_the_transpiled_module_runs_without_pypto(tmp_path):
    sigs = ["positive_stats(f64[n])", "sparse_pairs(f32[n,m])", "label_means(i64[n],f64[n])"]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(20)
    A = rng.standard_normal((5, 6)).astype(np.float32)
    labels, values = rng.integers(0, 3, 12), rng.standard_normal(12)
    calls = "(m.positive_stats(args[0]), m.sparse_pairs(args[1]), m.label_means(*args[2:]))"
    got, text = run_transpiled(
        tmp_path, HERE / "data_sized_programs.py", sigs, calls, (x, A, labels, values)
    )
    assert ".shape[0]" in text
    want = (
        programs.positive_stats(x),
        programs.sparse_pairs(A),
        programs.label_means(labels, values),
    )
    assert_same_result(got, want, TOL)


# -- the CUDA target on the CPU emulator ---------------------------------------------------------
_emu = cuda_emulator("data_sized_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name", ["positive_stats", "active_rows", "sparse_pairs", "inside_expression", "label_means"]
)
def test_on_the_cuda_target(name, dtype):
    """CuPy's own boolean indexing and nonzero (the stand-in's are NumPy's) on device arrays,
    the code around them as CUDA kernels."""
    from cupy_backend import make_cupy, to_host

    fn = getattr(programs, name)
    args = inputs(name, np.random.default_rng(4), dtype, 6)
    cp = make_cupy(order="random", seed=4)
    dev = [cp.device(a) if isinstance(a, np.ndarray) else a for a in args]
    got = ppto.compile(fn)(*dev)
    assert cp.launches  # the code around the selection ran as CUDA kernels
    want = fn(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        g = to_host(g) if hasattr(g, "shape") else g
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=TOL(np.dtype(dtype)))
        assert np.shape(g) == np.shape(w)


# -- a size that breaks an assumption before anything is written: the original runs ------------
@pytest.mark.parametrize(
    "name, x",
    [
        ("first_two", [1.0, -1.0, -2.0]),  # one element where two are assumed
        ("first_two", [-1.0, -2.0]),  # none
        ("first_two", [1.0, 2.0, 3.0]),  # (the compiled path)
        ("one_broadcast", [2.0, 0.5, -1.0]),  # a selection of one, broadcast
        ("one_broadcast", [2.0, 3.0, -1.0]),  # two against three: NumPy's ValueError
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_broken_size_assumption_runs_the_original(name, x, dtype):
    fn = getattr(programs, name)
    x = np.array(x, dtype)
    try:
        want = fn(x.copy())
    except ValueError as e:
        with pytest.raises(type(e)):
            ppto.compile(fn)(x.copy())
        return
    assert_same_result(ppto.compile(fn)(x.copy()), want)


def test_the_transpiled_module_runs_the_original_where_a_size_breaks_an_assumption(tmp_path):
    x = np.array([3.0, -1.0, -2.0])
    calls = "(m.first_two(args[0]), m.one_broadcast(args[1]))"
    y = np.array([2.0, 0.5, -1.0])
    got, text = run_transpiled(
        tmp_path,
        HERE / "data_sized_programs.py",
        ["first_two(f64[n])", "one_broadcast(f64[n])"],
        calls,
        (x, y),
    )
    assert "_original(" in text
    assert_same_result(got, (programs.first_two(x), programs.one_broadcast(y)), TOL)


def test_no_restart_after_a_write_into_an_argument():
    x = np.array([1.0, -1.0, -2.0])  # after x[0] = 5: one element where two are assumed
    with pytest.raises(ppto.PyptoError, match="breaks an assumption"):
        ppto.compile(programs.written_first)(x)
    assert x[0] == 5.0  # the write made before the error, as NumPy makes it
