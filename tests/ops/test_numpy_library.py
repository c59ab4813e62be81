"""argmax / argmin, allclose, np.ndarray, indices / mgrid / ogrid / meshgrid, cov / corrcoef,
np.linalg.norm and the ufunc methods reduce / accumulate / outer against NumPy: every dtype,
random shapes (NumPy's errors are PyPTO's errors), NaN and infinities, NumPy's function or
PyPTO's, in the lazy API and in compiled functions, and on the CUDA target (the emulator).
The variants PyPTO has no kernel for (matrix 2-norms, weighted covariances, complex values,
other ufuncs' reduce) run as NumPy's call: a graph break that explain names."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import (
    arrays,
    assert_same_result,
    check,
    checked_cupy,
    cuda_emulator,
    dtypes,
    float_tol,
    quiet,
    shapes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as ppto

COVERED = {
    "argmax",
    "argmin",
    "allclose",
    "ndarray",
    "indices",
    "nd_grid",
    "meshgrid",
    "cov",
    "corrcoef",
    "norm",
}
TOL = float_tol(1e-4, 1e-10)


def _axis(data, nd):
    kind = data.draw(st.sampled_from(["none", "int", "int"]), label="axis kind")
    if kind == "none":
        return None
    return data.draw(st.integers(-nd - 1, nd) if nd else st.sampled_from([0, -1, 1]), label="axis")


# -- argmax / argmin ------------------------------------------------------------------------------
@settings(max_examples=120, deadline=None)
@given(st.data())
def test_argmax_argmin(data):
    """The first extreme's index; a NaN is the extreme (the first NaN); ties give the first."""
    dtype = data.draw(dtypes())
    shape = data.draw(shapes(min_dims=0, max_dims=3, max_side=5))
    a = data.draw(arrays(dtype, shape))
    if a.size and data.draw(st.booleans()):  # ties: few distinct values
        a = (a.astype(np.float64) % 3).astype(dtype) if dtype.kind != "b" else a
    name = data.draw(st.sampled_from(["argmax", "argmin"]))
    axis = _axis(data, a.ndim)
    keepdims = data.draw(st.booleans())
    form = data.draw(st.sampled_from([ppto, np]))
    check(
        lambda a: getattr(form, name)(a, axis=axis, keepdims=keepdims),
        lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdims),
        a=a,
    )


def _arg_program(x):
    best = np.argmax(x, axis=1)
    worst = x.argmin(axis=0)
    return best, worst, x.argmax(), np.argmin(x, keepdims=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_argmax_in_a_compiled_function(dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((7, 5)) * 3).astype(dtype)
    if x.dtype.kind == "f":
        x[2, 3] = x[2, 1] = np.nan
    assert_same_result(ppto.compile(_arg_program)(x), _arg_program(x))


def test_argmax_of_complex_values_is_numpys_call():
    x = np.array([[1 + 2j, 1 + 3j], [2 - 1j, 0j]])
    got = ppto.compile(_arg_program)(x)
    assert_same_result(got, _arg_program(x))
    assert "graph break" in str(ppto.explain(_arg_program, x))


def test_argmax_of_an_empty_axis_is_numpys_value_error():
    with pytest.raises(ValueError):
        np.argmax(np.ones((0, 3)), axis=0)
    with pytest.raises(ValueError) as got:
        ppto.compile(_arg_program)(np.ones((0, 3)))
    assert isinstance(got.value, ppto.PyptoError)


# -- allclose -------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_allclose(data):
    shape = data.draw(shapes(max_dims=3, max_side=4))
    a = data.draw(arrays(data.draw(dtypes()), shape))
    b = data.draw(st.sampled_from(["same", "near", "other"]))
    if b == "same":
        b = a.copy()
    elif b == "near" and a.dtype.kind == "f":
        b = a * (1 + data.draw(st.sampled_from([1e-9, 1e-6, 1e-3])))
    else:
        b = data.draw(arrays(data.draw(dtypes()), shape))
    kw = {"rtol": data.draw(st.sampled_from([1e-5, 0.0])), "equal_nan": data.draw(st.booleans())}
    form = data.draw(st.sampled_from([ppto, np]))
    got = check(
        lambda a, b: form.allclose(a, b, **kw), lambda a, b: np.allclose(a, b, **kw), a=a, b=b
    )
    if not isinstance(got, Exception):
        assert type(got) is bool


def _converged(x, y):
    steps = 0
    while not np.allclose(x, y, atol=1e-6) and steps < 100:
        x = 0.5 * (x + y)
        steps += 1
    return x, steps


def test_allclose_decides_a_loop():
    x, y = np.zeros(6), np.arange(6.0)
    assert_same_result(ppto.compile(_converged)(x, y), _converged(x, y))


# -- np.ndarray -----------------------------------------------------------------------------------
def _scratch(x):
    out = np.ndarray((x.shape[0], 2), dtype=np.float32)
    out[:, 0] = x
    out[:, 1] = 2 * x
    return out


def test_ndarray_is_a_new_array():
    x = np.arange(5.0)
    assert_same_result(ppto.compile(_scratch)(x), _scratch(x))
    got = ppto.ndarray((2, 3), dtype=np.int32)  # numbers only: NumPy's own (unspecified) array
    assert got.shape == (2, 3) and got.dtype == np.int32
    with pytest.raises(ppto.UnsupportedError, match="buffer"):
        ppto.ndarray((2,), buffer=np.zeros(2))


# -- indices / mgrid / ogrid / meshgrid -----------------------------------------------------------
GRIDS = [
    lambda: np.mgrid[0:4, 0:3],
    lambda: np.mgrid[-1:1:5j, 0:3],
    lambda: np.mgrid[0:1:0.25],
    lambda: np.mgrid[0:2:3j],
    lambda: np.mgrid[1:10:3, 5:-2:-2],
    lambda: np.mgrid[0:3, 0:2, 0:2],
    lambda: np.mgrid[0.5:2, 0:3],
    lambda: np.mgrid[0:4:1j, 0:0],
    lambda: np.ogrid[0:3, 0:4:2],
    lambda: np.ogrid[-1:1:4j, 1:3],
    lambda: np.ogrid[0:5],
    lambda: np.indices((2, 3)),
    lambda: np.indices((3,), dtype=np.float32),
    lambda: np.indices((2, 0, 2)),
    lambda: np.indices((2, 3), sparse=True),
    lambda: np.indices(()),
]


@pytest.mark.parametrize("case", range(len(GRIDS)))
def test_grids_of_constants(case):
    """Traced (in a function with one tensor argument), each grid is NumPy's bit for bit."""
    want = GRIDS[case]()

    def build(x):
        got = GRIDS[case]()
        return tuple(g + x for g in got) if isinstance(got, tuple) else got + x

    zero = np.zeros((), np.int8)
    want = tuple(w + zero for w in want) if isinstance(want, tuple) else want + zero
    got = build(ppto.tensor("x")).run(x=zero) if not isinstance(want, tuple) else None
    if got is None:
        got = tuple(ppto.run(list(build(ppto.tensor("x"))), x=zero))
    assert_same_result(got, want)


def _grid_program(x, y):
    n, m = x.shape[0], y.shape[0]
    X, Y = np.meshgrid(x, y)
    xi, yj = np.meshgrid(x, y, indexing="ij", sparse=True)
    g = np.mgrid[0:n, 0:m]
    r, c = np.ogrid[0:n, 1:m:2]
    k = np.indices((m, n))
    return X * Y, xi - yj, g[0] * m + g[1], r * c, k.sum(axis=0), np.mgrid[0:n]


@pytest.mark.parametrize("sizes", [(4, 3), (1, 5), (0, 2), (6, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_grids_with_sizes_of_the_arguments(sizes, dtype):
    x = np.linspace(-1, 1, sizes[0]).astype(dtype)
    y = np.arange(sizes[1]).astype(dtype)
    assert_same_result(ppto.compile(_grid_program)(x, y), _grid_program(x, y))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_meshgrid(data):
    n = data.draw(st.integers(1, 3), label="arrays")
    xs = {
        f"x{i}": data.draw(
            arrays(data.draw(dtypes()), data.draw(shapes(min_dims=0, max_dims=2, max_side=3)))
        )
        for i in range(n)
    }
    kw = {
        "indexing": data.draw(st.sampled_from(["xy", "ij", "bad"])),
        "sparse": data.draw(st.booleans()),
    }
    form = data.draw(st.sampled_from([ppto, np]))
    check(
        lambda **k: form.meshgrid(*k.values(), **kw),
        lambda **k: np.meshgrid(*k.values(), **kw),
        **xs,
    )


def test_meshgrid_refuses_sparse_views():
    with pytest.raises(ppto.UnsupportedError, match="views"):
        ppto.meshgrid(ppto.tensor("x"), ppto.tensor("y"), sparse=True, copy=False)


# -- cov / corrcoef -------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(st.data())
def test_cov_corrcoef(data):
    dtype = data.draw(dtypes())
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=5))
    m = data.draw(arrays(dtype, shape, small=True))
    inputs = {"m": m}
    if data.draw(st.booleans()):
        inputs["y"] = data.draw(arrays(data.draw(dtypes()), shape, small=True))
    name = data.draw(st.sampled_from(["cov", "corrcoef"]))
    kw = {"rowvar": data.draw(st.booleans())}
    if name == "cov":
        kw["bias"] = data.draw(st.booleans())
        kw["ddof"] = data.draw(st.sampled_from([None, 0, 1, 2]))
    form = data.draw(st.sampled_from([ppto, np]))

    def oracle(**k):
        with warnings.catch_warnings():  # (n <= ddof: NumPy warns, then divides by zero)
            warnings.filterwarnings("ignore", "Degrees of freedom", RuntimeWarning)
            return getattr(np, name)(*k.values(), **kw)

    check(
        lambda **k: getattr(form, name)(*k.values(), **kw),
        oracle,
        rtol=2e-3 if np.result_type(*inputs.values(), np.float64) == np.float16 else 1e-6,
        atol=1e-6,
        **inputs,
    )


def _stats(samples):
    c = np.cov(samples, rowvar=False)
    r = np.corrcoef(samples.T)
    return c, r, np.cov(samples[:, 0], samples[:, 1], bias=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_cov_in_a_compiled_function(dtype):
    rng = np.random.default_rng(2)
    s = (rng.standard_normal((50, 3)) * 4).astype(dtype)
    assert_same_result(ppto.compile(_stats)(s), _stats(s), TOL)


def _weighted(x, w, a):
    return np.cov(x, fweights=w, aweights=a), np.average(x, axis=1, weights=a)


def test_weighted_cov_is_numpys_call():
    """Weights: NumPy's np.cov, a graph break taking the arrays as keywords."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6))
    w, a = np.arange(1, 7), rng.uniform(size=6)
    assert_same_result(ppto.compile(_weighted)(x, w, a), _weighted(x, w, a))
    text = str(ppto.explain(_weighted, x, w, a))
    assert "`np.cov`, a variant PyPTO has no kernel for" in text


# -- np.linalg.norm -------------------------------------------------------------------------------
VECTOR_ORDS = [None, 1, 2, 3, 0.5, -1, 0, math.inf, -math.inf]
MATRIX_ORDS = [None, "fro", 1, -1, math.inf, -math.inf]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_norm(data):
    dtype = data.draw(dtypes())
    shape = data.draw(shapes(min_dims=0, max_dims=3, max_side=4))
    x = data.draw(arrays(dtype, shape, small=data.draw(st.booleans())))
    nd = x.ndim
    kind = data.draw(st.sampled_from(["all", "vector", "matrix"]))
    if kind == "all":
        axis, ord_ = None, data.draw(st.sampled_from([None, "fro", 2, 1, math.inf]))
    elif kind == "vector":
        axis = data.draw(st.integers(-nd - 1, nd) if nd else st.just(0), label="axis")
        ord_ = data.draw(st.sampled_from(VECTOR_ORDS + ["fro"]))
    else:
        axis = tuple(data.draw(st.lists(st.integers(-nd, max(nd - 1, 0)), min_size=2, max_size=2)))
        ord_ = data.draw(st.sampled_from(MATRIX_ORDS + [3]))
    keepdims = data.draw(st.booleans())
    form = data.draw(st.sampled_from(["ppto", "np"]))
    fn = ppto.norm if form == "ppto" else np.linalg.norm
    tol = 2e-2 if x.dtype == np.float16 else 1e-5 if x.dtype == np.float32 else 1e-12
    if ord_ == 2 and axis is None and nd == 2:  # singular values: a graph break when compiled,
        with pytest.raises(ppto.UnsupportedError):  # refused in the lazy API (no breaks there)
            fn(ppto.tensor("x"), ord_, axis, keepdims).run(x=x)
        return
    check(
        lambda x: fn(x, ord_, axis, keepdims),
        lambda x: np.linalg.norm(x, ord_, axis, keepdims),
        rtol=tol,
        atol=tol,
        x=x,
    )


def _norms(a, v):
    return (
        np.linalg.norm(a),
        np.linalg.norm(v),
        np.linalg.norm(a, axis=1),
        np.linalg.norm(a, 1),
        np.linalg.norm(a, np.inf, axis=(1, 0), keepdims=True),
        np.linalg.norm(v, 3),
        np.linalg.norm(a, 2),  # (singular values: NumPy's call)
        np.linalg.norm(a, "nuc"),
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_norms_in_a_compiled_function(dtype):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((6, 4)) * 3).astype(dtype)
    assert_same_result(ppto.compile(_norms)(a, a[0]), _norms(a, a[0]), TOL)
    text = str(ppto.explain(_norms, a, a[0]))
    assert text.count("`np.linalg.norm`") == 2  # the two singular-value norms break


def test_norm_errors_are_numpys():
    for bad in [("fro", 0), ("nuc", 0)]:
        with pytest.raises(ValueError):
            np.linalg.norm(np.ones(3), bad[0], bad[1])
        with pytest.raises(ValueError):
            ppto.norm(ppto.tensor("x"), bad[0], bad[1]).run(x=np.ones(3))
    with pytest.raises(TypeError):
        ppto.norm(ppto.tensor("x"), axis=1.5)
    with pytest.raises(ValueError, match="Improper number"):
        ppto.norm(ppto.tensor("x"), 1).run(x=np.ones((2, 2, 2)))


# -- ufunc methods --------------------------------------------------------------------------------
def _ufunc_methods(a, b):
    return (
        np.add.reduce(a),
        np.multiply.reduce(a, axis=1, keepdims=True),
        np.maximum.reduce(a, axis=None),
        np.minimum.reduce(a, axis=-1),
        np.logical_and.reduce(a > 0, axis=0),
        np.logical_or.reduce(a > 1),
        np.add.reduce(a, dtype=np.float64),
        np.add.accumulate(a),
        np.multiply.accumulate(b),
        np.subtract.outer(b, a[0]),
        np.subtract.reduce(a),  # (no op: NumPy's call)
        np.maximum.accumulate(b),
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "bool"])
def test_ufunc_methods_in_a_compiled_function(dtype):
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((4, 5)) * 3).astype(dtype)
    b = (rng.standard_normal(6) * 2).astype(dtype)
    try:
        want = quiet(_ufunc_methods, a, b)
    except TypeError:  # np.subtract of bools
        with pytest.raises(TypeError):
            quiet(ppto.compile(_ufunc_methods), a, b)
        return
    assert_same_result(quiet(ppto.compile(_ufunc_methods), a, b), want, TOL)
    text = str(ppto.explain(_ufunc_methods, a, b))
    assert "`np.subtract.reduce`" in text and "`np.maximum.accumulate`" in text
    assert "`np.add.reduce`" not in text


@pytest.mark.parametrize(
    "call",
    [
        lambda x: np.add.reduce(x),
        lambda x: np.multiply.reduce(x, axis=None),
        lambda x: np.add.accumulate(x, axis=1),
    ],
)
def test_ufunc_methods_on_lazy_tensors(call):
    x = np.random.default_rng(0).standard_normal((3, 4))
    check(call, call, x=x)
    with pytest.raises(ppto.UnsupportedError):
        np.subtract.reduce(ppto.tensor("x"))
    with pytest.raises(ppto.UnsupportedError, match="rank"):
        np.maximum.outer(ppto.tensor("x"), ppto.tensor("y"))


# -- the CUDA target on the CPU emulator -----------------------------------------------------------
_emu = cuda_emulator("numpy_library_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


def _on_gpu(u, v):
    n, m = u.shape
    X, Y = np.meshgrid(np.arange(m), np.arange(n))
    g = np.mgrid[0:n, 0:m]
    best = np.argmax(u, axis=1)
    norms = np.linalg.norm(u, axis=1) + np.linalg.norm(v)
    c = np.cov(u)
    close = np.allclose(u, v, atol=1e-3)
    return best, u.argmin(axis=0), norms, c, X * Y + g[0], np.add.reduce(u), close


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_on_the_cuda_target(dtype):
    from cupy_backend import to_host

    rng = np.random.default_rng(19)
    u = rng.standard_normal((6, 5)).astype(dtype)
    u[3, 2] = np.nan
    v = u + rng.standard_normal((6, 5)).astype(dtype) * 1e-6
    cp = checked_cupy(_emu)
    got = ppto.compile(_on_gpu)(cp.device(u), cp.device(v))
    assert cp.launches
    want = _on_gpu(u, v)
    for g, w in zip(got, want):
        g = to_host(g) if not isinstance(g, bool) else g
        assert type(g) is type(w) or isinstance(w, np.ndarray)
        np.testing.assert_allclose(np.asarray(g), w, rtol=TOL(np.dtype(dtype)), equal_nan=True)
