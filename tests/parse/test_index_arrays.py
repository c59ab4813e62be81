"""Index arrays (parse/index_arrays.py): gathers ``x[rows, cols]``, scatters ``x[idx] = v``,
``x[idx] op= v`` and ``np.add.at`` against NumPy: values, dtypes, every write into an argument,
repeated and negative indices, NumPy's IndexError / ValueError; the explain lines; the
transpiled module without PyPTO; the CUDA target (emulator)."""

from __future__ import annotations

from pathlib import Path

import index_array_programs as programs
import numpy as np
import pytest
from helpers import assert_same_result, cuda_emulator, float_tol, run_transpiled

import pypto as ppto

HERE = Path(__file__).resolve().parent
TOL = float_tol(1e-5, 1e-12)


def _inputs(name, dtype, rng, n):
    def a(*shape):
        return rng.standard_normal(shape).astype(dtype)

    def ints(hi, size):
        return rng.integers(0, hi, size)

    return {
        "scatter_rows": lambda: (a(n, 3), np.array([1, n - 1, 1, -2]), a(4, 3)),
        "histogram_at": lambda: (ints(4, 3 * n), a(3 * n), 4),
        "segment_max": lambda: (ints(5, 2 * n), a(2 * n), 5),
        "pick_pairs": lambda: (a(n, n + 1), ints(n, 7), ints(n + 1, 7)),
        "scale_columns": lambda: (a(n, 4), np.array([0, 3, 3]), 1.5),
        "count_visits": lambda: (np.zeros(n, dtype), ints(n, 3 * n)),
        "embedding_grad": lambda: (ints(6, n), a(n, 3), 6),
        "permute_inverse": lambda: (rng.permutation(n), a(n, 2)),
        "grid_lookup": lambda: (a(n, n), ints(n, 5), ints(n, 5)),
        "onehot": lambda: (ints(4, n), 4),
        "fill_selected": lambda: (a(n), a(n)),
        "csr_rows": lambda: _csr(rng, dtype, n),
        "zero_prefix": lambda: (a(n), rng.uniform(size=n) > 0.5),
        "segment_means": lambda: (a(3 * n), np.array([0, 2, n, 3 * n - 1])),
        "window_rows": lambda: (a(n, 4), np.array([n - 3, 1])),
        "select_features": lambda: (a(n, 4), np.array([True, False, True, True])),
        "masked_columns": lambda: (a(n, 4), 2),
    }[name]()


def _csr(rng, dtype, n):
    dense = (rng.standard_normal((n, n + 1)) * (rng.uniform(size=(n, n + 1)) > 0.5)).astype(dtype)
    dense[1] = 0
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    return dense[rows, cols], cols, indptr, rng.standard_normal(n + 1).astype(dtype)


NAMES = [
    "scatter_rows",
    "histogram_at",
    "segment_max",
    "pick_pairs",
    "scale_columns",
    "count_visits",
    "embedding_grad",
    "permute_inverse",
    "grid_lookup",
    "onehot",
    "fill_selected",
    "csr_rows",
    "zero_prefix",
    "segment_means",
    "window_rows",
    "select_features",
    "masked_columns",
]


def _copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_programs_match_numpy_writes_included(name, dtype):
    fn = getattr(programs, name)
    compiled = ppto.compile(fn)
    rng = np.random.default_rng(len(name))
    for n in (5, 9):  # two sizes: the compiled program is reused for the second
        args = _inputs(name, dtype, rng, n)
        mine, theirs = _copies(args), _copies(args)
        assert_same_result(compiled(*mine), fn(*theirs), TOL)
        for m, t in zip(mine, theirs):  # every write into an argument
            if isinstance(m, np.ndarray):
                np.testing.assert_array_equal(m, t)


@pytest.mark.parametrize("name", NAMES)
def test_explain_names_the_index_breaks(name):
    fn = getattr(programs, name)
    text = str(ppto.explain(fn, *_inputs(name, "float64", np.random.default_rng(0), 6)))
    breaks = [line for line in text.splitlines() if line.startswith("graph break at")]
    assert breaks
    source = (HERE / "index_array_programs.py").read_text().splitlines()
    for line in breaks:
        lineno = int(line.split()[3].split(":")[1])
        called = line.split("`")[1]
        if "run-time bounds" in called:  # (a name holding the slice re-reads it where used)
            continue
        if called.startswith("np.") and not called.startswith("np.take ("):
            assert called.split()[0] in source[lineno - 1], (line, source[lineno - 1])
        else:
            assert "[" in source[lineno - 1], (line, source[lineno - 1])


def test_repeated_indices_follow_numpy():
    """``x[idx] = v``: the last write wins; ``x[idx] += v``: each repeat reads the old value
    (one increment); ``np.add.at``: the repeats accumulate."""
    idx = np.array([2, 2, 2, 0])
    x = np.zeros(4)
    v = np.array([1.0, 2.0, 3.0, 4.0])
    a, b = x.copy(), x.copy()
    assert_same_result(
        ppto.compile(programs.scatter_rows)(a, idx, v), programs.scatter_rows(b, idx, v)
    )
    np.testing.assert_array_equal(a, [1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(a, b)
    got = ppto.compile(programs.histogram_at)(np.array([1, 1, 1]), np.ones(3), 2)
    np.testing.assert_array_equal(got, [0.0, 1.0])


def test_out_of_bounds_and_mismatched_values_are_numpys_errors():
    compiled = ppto.compile(programs.scatter_rows)
    x = np.zeros((4, 3))
    with pytest.raises(IndexError) as got:
        compiled(x.copy(), np.array([0, 4]), np.ones((2, 3)))
    assert isinstance(got.value, ppto.PyptoError)
    with pytest.raises(ValueError) as got:
        compiled(x.copy(), np.array([0, 1]), np.ones((3, 3)))
    assert isinstance(got.value, ppto.PyptoError)
    with pytest.raises(IndexError):
        ppto.compile(programs.pick_pairs)(np.ones((3, 3)), np.array([0, 3]), np.array([0, 1]))


def test_a_selection_of_the_wrong_length_is_numpys_value_error():
    def f(x, v):
        x[x > 0] = v
        return x

    x = np.array([1.0, -1.0, 2.0])
    with pytest.raises(ValueError):
        f(x.copy(), np.ones(3))
    with pytest.raises(ValueError) as got:
        ppto.compile(f)(x.copy(), np.ones(3))
    assert isinstance(got.value, ppto.PyptoError)
    y = x.copy()
    np.testing.assert_array_equal(ppto.compile(f)(y, np.array([5.0, 6.0])), [5.0, -1.0, 6.0])


def test_values_are_cast_as_numpys_setitem_casts():
    """``x[idx] = v`` casts unsafely (floats into ints truncate); ``x[idx] += v`` refuses a
    float into an int array (NumPy's same_kind rule, a TypeError)."""
    x = np.zeros(4, dtype=np.int32)
    idx = np.array([0, 3])
    v = np.array([1.7, -2.9])
    a, b = x.copy(), x.copy()
    assert_same_result(ppto.compile(programs.cast_into)(a, idx, v), programs.cast_into(b, idx, v))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError):
        programs.scatter_rows(x.copy(), idx, v)
    with pytest.raises(TypeError) as got:
        ppto.compile(programs.scatter_rows)(x.copy(), idx, v)
    assert isinstance(got.value, ppto.PyptoError)


def test_the_transpiled_module_runs_without_pypto(tmp_path):
    rng = np.random.default_rng(3)
    labels, w = rng.integers(0, 4, 12), rng.standard_normal(12)
    A = rng.standard_normal((4, 5))
    r, c = np.array([0, 1, 3]), np.array([4, 4, 0])
    sigs = ["histogram_at(i64[n],f64[n],int)", "pick_pairs(f64[n,m],i64[k],i64[k])"]
    calls = "(m.histogram_at(*args[:3]), m.pick_pairs(*args[3:]), args[3])"
    got, text = run_transpiled(
        tmp_path, HERE / "index_array_programs.py", sigs, calls, (labels, w, 4, A.copy(), r, c)
    )
    assert "_ufunc_at" in text and "_gather" in text and "_scatter" in text
    B = A.copy()
    want = (programs.histogram_at(labels, w, 4), programs.pick_pairs(B, r, c), B)
    assert_same_result(got, want, TOL)


# -- the CUDA target on the CPU emulator ---------------------------------------------------------
_emu = cuda_emulator("index_arrays_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name",
    [
        "pick_pairs",
        "histogram_at",
        "scale_columns",
        "onehot",
        "csr_rows",
        "zero_prefix",
        "masked_columns",
    ],
)
def test_on_the_cuda_target(name, dtype):
    from cupy_backend import make_cupy, to_host

    fn = getattr(programs, name)
    args = _inputs(name, dtype, np.random.default_rng(11), 6)
    cp = make_cupy(order="random", seed=5)
    dev = tuple(cp.device(a) if isinstance(a, np.ndarray) else a for a in args)
    got = ppto.compile(fn)(*dev)
    want = fn(*_copies(args))
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        g = to_host(g) if not isinstance(g, (float, np.floating)) else g
        np.testing.assert_allclose(np.asarray(g), w, rtol=TOL(np.dtype(dtype)))
    ref = _copies(args)
    fn(*ref)
    for d, r in zip(dev, ref):  # every write into an argument, on the device
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(to_host(d), r, rtol=TOL(np.dtype(dtype)))


@pytest.mark.usefixtures("tools")
def test_the_cuda_target_keeps_numpys_index_rules_where_cupy_differs():
    """CuPy wraps an integer-array index outside its axis around (NumPy raises IndexError) and
    leaves which of an assignment's repeated targets lands undefined (NumPy: the last); the
    emulator's stand-in does both, so the runtime must check and order them itself."""
    from cupy_backend import make_cupy, to_host

    cp = make_cupy(order="random", seed=3)
    x = np.zeros((4, 3))
    idx = np.array([2, 0, 2, -2])
    v = np.arange(12.0).reshape(4, 3)
    dev = cp.device(x)
    got = ppto.compile(programs.scatter_rows)(dev, cp.device(idx), cp.device(v))
    ref = x.copy()
    np.testing.assert_array_equal(to_host(got), programs.scatter_rows(ref, idx, v))
    np.testing.assert_array_equal(to_host(dev), ref)
    out_of_bounds = [
        (programs.scatter_rows, (x, np.array([0, 4]), np.ones((2, 3)))),
        (programs.scatter_rows, (x, np.array([0, -5]), np.ones((2, 3)))),
        (programs.pick_pairs, (np.ones((3, 3)), np.array([0, 3]), np.array([0, 1]))),
        (programs.grid_lookup, (np.ones((3, 3)), np.array([0, 1]), np.array([2, -4]))),
        (programs.count_visits, (np.zeros(3), np.array([0, 3]))),
        (programs.permute_inverse, (np.array([0, 5, 1]), np.ones((3, 2)))),
    ]
    for fn, args in out_of_bounds:
        with pytest.raises(IndexError):
            fn(*(a.copy() for a in args))
        with pytest.raises(IndexError) as err:
            ppto.compile(fn)(*(cp.device(a) for a in args))
        assert "out of bounds" in str(err.value), fn.__name__
