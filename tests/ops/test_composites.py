"""Composite ops against NumPy: softmax, log_softmax, var, std and gradient.

Composites re-express NumPy's (or SciPy's) arithmetic with other ops, so float values are
compared with ``helpers.tolerance`` of the result's dtype; dtype and shape must always match
exactly. softmax and log_softmax have no NumPy function: their references below are SciPy's
formulations written with NumPy.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import (
    FLOAT_DTYPES,
    arrays,
    check,
    check_reuse,
    dtypes,
    quiet,
    shapes,
    tolerance,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

COVERED = {"softmax", "log_softmax", "var", "std", "gradient", "power_operator"}

INT_DTYPES = [np.dtype(t) for t in ("int8", "uint8", "int32", "uint32", "int64")]


def silenced(fn):
    """NumPy's own RuntimeWarnings (degrees of freedom <= 0, ...) silenced: pytest turns
    warnings into errors, which would read as NumPy refusing the input."""

    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*args, **kwargs)

    return wrapper


def rtol_for(oracle, **inputs):
    """The tolerance for the dtype NumPy's result has (None where NumPy raises: no values)."""
    try:
        want = quiet(oracle, **inputs)
    except Exception:
        return None
    first = want[0] if isinstance(want, tuple) else want
    return tolerance(np.asarray(first).dtype)


def axes_for(nd):
    """An axis argument: an int (in range or just outside), None, or a tuple of axes (possibly
    repeated, which NumPy refuses)."""
    one = st.integers(-nd - 1, nd)
    in_range = st.integers(-nd, nd - 1) if nd else one
    return st.one_of(one, st.none(), st.lists(in_range, max_size=3).map(tuple))


# -- softmax / log_softmax --------------------------------------------------------------------
def softmax_ref(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax_ref(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    shifted = x - m
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


SOFTMAXES = {"softmax": softmax_ref, "log_softmax": log_softmax_ref}


@settings(max_examples=100)
@given(st.data())
def test_softmax_and_log_softmax(data):
    name = data.draw(st.sampled_from(sorted(SOFTMAXES)))
    ref = SOFTMAXES[name]
    # 0-d inputs: test_softmax_of_a_0d_array
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(min_dims=1, max_dims=3))))
    fn = getattr(ppto, name)
    if data.draw(st.booleans()):  # the default axis: the last
        build, oracle = (lambda x: fn(x)), (lambda x: ref(x))
    else:
        axis = data.draw(axes_for(a.ndim), label="axis")
        build, oracle = (lambda x: fn(x, axis=axis)), (lambda x: ref(x, axis=axis))
    check(build, oracle, rtol=rtol_for(oracle, x=a), x=a)


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
@pytest.mark.parametrize("axis", ["default", -1, 0, None, (), (0,)])
def test_softmax_of_a_0d_array(name, axis):
    # NumPy's reductions accept axis 0 and -1 on a 0-d array (np.max(np.array(3.0), axis=-1));
    # a tuple axis (0,) is out of bounds for both
    fn, ref = getattr(ppto, name), SOFTMAXES[name]
    if axis == "default":
        build, oracle = (lambda x: fn(x)), (lambda x: ref(x))
    else:
        build, oracle = (lambda x: fn(x, axis=axis)), (lambda x: ref(x, axis=axis))
    check(build, oracle, rtol=tolerance("d"), x=np.array(2.5))


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "bool"])
def test_softmax_of_integers(name, dtype):
    a = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    for axis in (-1, 0, None, (0, 1)):
        oracle = lambda x, axis=axis: SOFTMAXES[name](x, axis=axis)  # noqa: E731
        check(
            lambda x, axis=axis: getattr(ppto, name)(x, axis=axis),
            oracle,
            rtol=rtol_for(oracle, x=a),
            x=a,
        )


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_non_finite_rows(name):
    inf, nan = np.inf, np.nan
    a = np.array([[inf, 1.0, 2.0], [-inf, -inf, -inf], [nan, 1.0, 0.0], [1e308, -1e308, 0.0]])
    for axis in (-1, 0, None):
        oracle = lambda x, axis=axis: SOFTMAXES[name](x, axis=axis)  # noqa: E731
        check(
            lambda x, axis=axis: getattr(ppto, name)(x, axis=axis),
            oracle,
            rtol=tolerance(np.float64),
            x=a,
        )


@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_chain_reused_across_shapes(name):
    fn, ref = getattr(ppto, name), SOFTMAXES[name]
    rng = np.random.default_rng(0)
    sizes = [(3, 4), (2, 7), (5, 2), (4, 0), (0, 3), (6, 6)]
    for axis in (-1, 0, None):
        chain = fn(ppto.tensor("x"), axis=axis)
        bindings = [{"x": rng.standard_normal(s).astype(np.float32)} for s in sizes]
        check_reuse(chain, lambda x, axis=axis: ref(x, axis=axis), bindings, tolerance("f"))


# -- var / std --------------------------------------------------------------------------------
@settings(max_examples=150)
@given(st.data())
def test_var_and_std(data):
    name = data.draw(st.sampled_from(["var", "std"]))
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3, max_side=4))))
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["axis"] = data.draw(axes_for(a.ndim), label="axis")
    if data.draw(st.booleans()):
        kwargs["ddof"] = data.draw(st.sampled_from([0, 1, 2]), label="ddof")
    if data.draw(st.booleans()):
        kwargs["keepdims"] = data.draw(st.booleans(), label="keepdims")
    if data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    form = data.draw(st.sampled_from(["ppto", "np", "method"]))
    build = {
        "ppto": lambda x: getattr(ppto, name)(x, **kwargs),
        "np": lambda x: getattr(np, name)(x, **kwargs),
        "method": lambda x: getattr(x, name)(**kwargs),
    }[form]
    oracle = silenced(lambda x: getattr(np, name)(x, **kwargs))
    check(build, oracle, rtol=rtol_for(oracle, x=a), x=a)


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "uint32", "int64"])
def test_var_and_std_of_integers_and_bools_are_float64(name, dtype):
    a = (np.arange(24) * 7 % 11).astype(dtype).reshape(2, 3, 4)
    for kwargs in ({}, {"axis": 0}, {"axis": (0, 2), "ddof": 1}, {"axis": -1, "keepdims": True}):
        oracle = silenced(lambda x, kw=kwargs: getattr(np, name)(x, **kw))
        got = check(
            lambda x, kw=kwargs: getattr(ppto, name)(x, **kw), oracle, rtol=tolerance("d"), x=a
        )
        assert np.asarray(got).dtype == np.float64


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float32", "float64"])
def test_var_and_std_size_zero_along_the_axis_is_nan(name, dtype):
    a = np.zeros((3, 0, 2), dtype)
    for kwargs in ({}, {"axis": 1}, {"axis": (0, 1), "keepdims": True}, {"axis": 1, "ddof": 1}):
        oracle = silenced(lambda x, kw=kwargs: getattr(np, name)(x, **kw))
        got = check(
            lambda x, kw=kwargs: getattr(ppto, name)(x, **kw), oracle, rtol=tolerance("d"), x=a
        )
        assert np.isnan(got).all()


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_ddof_at_least_the_count(name):
    a = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    for kwargs in ({"axis": 1, "ddof": 3}, {"axis": 0, "ddof": 2}, {"ddof": 7}):
        oracle = silenced(lambda x, kw=kwargs: getattr(np, name)(x, **kw))
        check(lambda x, kw=kwargs: getattr(ppto, name)(x, **kw), oracle, rtol=1e-12, x=a)


@settings(max_examples=60)
@given(st.data())
def test_var_integer_dtype_argument(data):
    # an integer dtype= truncates the mean and the result, as NumPy's unsafe casts do
    a = data.draw(
        arrays(
            data.draw(dtypes()), data.draw(shapes(min_side=1, max_dims=3)), finite=True, small=True
        )
    )
    axis = data.draw(
        st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1) if a.ndim else st.none())
    )
    dtype = data.draw(st.sampled_from(["int32", "int64"]))
    keepdims = data.draw(st.booleans())
    oracle = silenced(lambda x: np.var(x, axis=axis, dtype=dtype, keepdims=keepdims))
    check(lambda x: ppto.var(x, axis=axis, dtype=dtype, keepdims=keepdims), oracle, x=a)


@pytest.mark.parametrize("axis, keepdims", [(0, False), (None, True), (1, True)])
def test_std_integer_dtype_argument(axis, keepdims):
    # NumPy takes the sqrt in place into the integer result and refuses (array results)
    a = np.arange(12.0).reshape(3, 4) ** 1.5
    oracle = silenced(lambda x: np.std(x, axis=axis, dtype=np.int64, keepdims=keepdims))
    check(lambda x: ppto.std(x, axis=axis, dtype=np.int64, keepdims=keepdims), oracle, x=a)


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_chain_reused_across_shapes(name):
    rng = np.random.default_rng(1)
    sizes = [(3, 4), (2, 5), (5, 2), (0, 3), (4, 0), (2, 2), (6, 3)]
    for kwargs in ({"axis": 0}, {"axis": -1, "ddof": 1}, {}, {"axis": 1, "keepdims": True}):
        chain = getattr(ppto, name)(ppto.tensor("x"), **kwargs)
        bindings = [{"x": rng.standard_normal(s)} for s in sizes]
        oracle = silenced(lambda x, kw=kwargs: getattr(np, name)(x, **kw))
        check_reuse(chain, oracle, bindings, tolerance("d"))


# -- gradient ---------------------------------------------------------------------------------
SPACINGS = st.one_of(
    st.floats(0.125, 4.0),
    st.floats(-4.0, -0.125),
    st.floats(0.125, 4.0).map(np.float64),
    st.floats(0.125, 4.0).map(np.float32),
    st.integers(1, 3),
)


@settings(max_examples=100)
@given(st.data())
def test_gradient_one_axis(data):
    dt = data.draw(dtypes())  # bool: NumPy refuses (boolean subtract), PyPTO must too
    a = data.draw(arrays(dt, data.draw(shapes(min_dims=1, max_dims=3, max_side=5))))
    axis = data.draw(st.integers(-a.ndim - 1, a.ndim), label="axis")
    spacing = data.draw(st.one_of(st.just(()), SPACINGS.map(lambda h: (h,))), label="spacing")
    form = data.draw(st.sampled_from(["ppto", "np"]))
    build = {
        "ppto": lambda f: ppto.gradient(f, *spacing, axis=axis),
        "np": lambda f: np.gradient(f, *spacing, axis=axis),
    }[form]
    oracle = lambda f: np.gradient(f, *spacing, axis=axis)  # noqa: E731
    check(build, oracle, rtol=rtol_for(oracle, f=a), f=a)


@settings(max_examples=60)
@given(st.data())
def test_gradient_axes_tuple_returns_a_tuple(data):
    dt = data.draw(dtypes(FLOAT_DTYPES + INT_DTYPES))
    a = data.draw(arrays(dt, data.draw(shapes(min_dims=2, max_dims=3, max_side=5))))
    nd = a.ndim
    axes = data.draw(st.permutations(range(nd)))[: data.draw(st.integers(2, nd))]
    axes = tuple(ax - nd if data.draw(st.booleans()) else ax for ax in axes)
    which = data.draw(st.sampled_from(["none", "one", "each"]), label="spacing")
    if which == "none":
        spacing = ()
    elif which == "one":
        spacing = (data.draw(SPACINGS),)
    else:
        spacing = tuple(data.draw(SPACINGS) for _ in axes)
    oracle = lambda f: np.gradient(f, *spacing, axis=axes)  # noqa: E731
    got = check(
        lambda f: ppto.gradient(f, *spacing, axis=axes), oracle, rtol=rtol_for(oracle, f=a), f=a
    )
    if not isinstance(got, BaseException):  # NumPy computed it: a tuple, one per axis
        assert isinstance(got, tuple) and len(got) == len(axes)


@pytest.mark.parametrize("axis", [(0,), (-1,), [1]])
def test_gradient_single_axis_in_a_tuple_returns_one_array(axis):
    # np.gradient returns a tuple only for two axes or more
    a = np.arange(12.0).reshape(3, 4) ** 2
    check(lambda f: ppto.gradient(f, axis=axis), lambda f: np.gradient(f, axis=axis), f=a)


@pytest.mark.parametrize("axis", [(0, 0), (1, -1), (0, 1, 0)])
def test_gradient_repeated_axes_raise(axis):
    a = np.arange(12.0).reshape(3, 4) ** 2
    with pytest.raises(ValueError):
        np.gradient(a, axis=axis)
    with pytest.raises(ppto.PyptoError):
        ppto.run(list(ppto.gradient(ppto.tensor("f"), axis=axis)), f=a)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64"])
def test_gradient_of_integers_is_float64(dtype):
    a = (np.arange(20) ** 2 % 13).astype(dtype).reshape(4, 5)
    for axis in (0, 1, -1):
        got = check(
            lambda f, axis=axis: ppto.gradient(f, axis=axis),
            lambda f, axis=axis: np.gradient(f, axis=axis),
            rtol=tolerance("d"),
            f=a,
        )
        assert got.dtype == np.float64


def test_gradient_of_bools_is_refused_by_both():
    a = np.array([[True, False, True], [False, False, True]])
    with pytest.raises(TypeError):
        np.gradient(a, axis=1)
    with pytest.raises(ppto.PyptoError):
        ppto.gradient(ppto.tensor("f"), axis=1).run(f=a)


@pytest.mark.parametrize(
    "shape, axis", [((1, 4), 0), ((3, 1), -1), ((0, 3), 0), ((4,), 1), ((), 0)]
)
def test_gradient_axis_too_small_or_out_of_range_raises(shape, axis):
    a = np.ones(shape)
    with pytest.raises(ValueError):
        np.gradient(a, axis=axis)
    with pytest.raises(ppto.PyptoError):
        ppto.gradient(ppto.tensor("f"), axis=axis).run(f=a)


def test_gradient_spacing_count_must_match_the_axes():
    a = np.arange(12.0).reshape(3, 4)
    with pytest.raises(TypeError):
        np.gradient(a, 1.0, 2.0, axis=0)
    with pytest.raises(ppto.PyptoError):
        ppto.gradient(ppto.tensor("f"), 1.0, 2.0, axis=0).run(f=a)


def diffusion(u, k, grad):
    return grad(u, axis=0) * grad(k, axis=0) + grad(u, axis=1) * grad(k, axis=1)


@settings(max_examples=60)
@given(st.data())
def test_gradient_diffusion_of_the_design_document(data):
    dt = data.draw(dtypes(FLOAT_DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=6))
    u = data.draw(arrays(dt, shape, finite=True, small=True))
    k = data.draw(arrays(dt, shape, finite=True, small=True))
    # products of differences: relative error grows with cancellation, so an absolute floor
    scale = float(np.max(np.abs(u), initial=1.0)) * float(np.max(np.abs(k), initial=1.0))
    check(
        lambda u, k: diffusion(u, k, ppto.gradient),
        lambda u, k: diffusion(u, k, np.gradient),
        rtol=tolerance(dt),
        atol=tolerance(dt) * scale,
        u=u,
        k=k,
    )


def test_gradient_diffusion_chain_reused_across_shapes():
    u, k = ppto.tensor("u"), ppto.tensor("k")
    chain = diffusion(u, k, ppto.gradient)
    rng = np.random.default_rng(2)
    sizes = [((3, 4), (3, 4)), ((2, 2), (2, 2)), ((5, 2), (5, 2)), ((1, 3), (1, 3))]
    sizes += [((4, 0), (4, 0)), ((3, 4), (3, 5)), ((7, 6), (7, 6)), ((2, 9), (2, 9))]
    bindings = [{"u": rng.standard_normal(su), "k": rng.standard_normal(sk)} for su, sk in sizes]
    check_reuse(chain, lambda u, k: diffusion(u, k, np.gradient), bindings, tolerance("d"))


def test_gradient_chain_reused_across_sizes():
    chain = ppto.gradient(ppto.tensor("f"), np.float64(0.5), axis=-1)
    rng = np.random.default_rng(3)
    sizes = [(5,), (2,), (3,), (1,), (0,), (8,), (2, 4), (3, 2), (3, 1)]
    bindings = [{"f": rng.standard_normal(s).astype(np.float32)} for s in sizes]
    check_reuse(chain, lambda f: np.gradient(f, np.float64(0.5), axis=-1), bindings)
    bindings = [{"f": data} for data in ((np.arange(math.prod(s)) ** 2).reshape(s) for s in sizes)]
    check_reuse(chain, lambda f: np.gradient(f, np.float64(0.5), axis=-1), bindings)


# -- x ** 2, x ** -1, x ** 0.5 -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex128", "int32", "uint8"])
@pytest.mark.parametrize("exponent", [2, -1, 0.5, 3, 2.0])
def test_the_power_operator_is_numpys_bit_for_bit(dtype, exponent):
    """``x ** 2``, ``x ** -1``, ``x ** 0.5`` run what NumPy's operator runs (square, reciprocal,
    sqrt for float and complex arrays; power otherwise, and for other exponents): the same bits,
    NaN, infinities, signed zeros and subnormals included; NumPy's error where it raises."""
    rng = np.random.default_rng(9)
    if np.dtype(dtype).kind in "fc":
        info = np.finfo(dtype)
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.max, -1.5]
        values = np.concatenate([special, rng.standard_normal(50) * 10]).astype(dtype)
    else:
        values = rng.integers(0, 9, 40).astype(dtype)
    x = ppto.tensor("x")
    with np.errstate(all="ignore"):
        try:
            want = values**exponent
        except (ValueError, OverflowError) as e:  # negative integer powers; -1 as a uint8
            with pytest.raises(ppto.PyptoError):
                (x**exponent).run(x=values)
            assert "negative" in str(e) or "out of bounds" in str(e)
            return
        got = (x**exponent).run(x=values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
