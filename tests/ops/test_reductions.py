"""Reductions against NumPy: ``sum prod mean max min any all`` over None, an int, negative ints,
tuples (duplicates and out-of-range axes refused as NumPy refuses them), with keepdims and
``dtype=``, reached as ``ppto.<name>``, as methods, through ``np.<name>(tensor)`` and through the
``reduce_*`` / ``amax`` / ``amin`` aliases.

PyPTO computes a reduction with the NumPy function itself, so values are compared exactly.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from helpers import ALL_DTYPES, FLOAT_DTYPES, arrays, check, dtypes, shapes
from hypothesis import given
from hypothesis import strategies as st

import pypto as ppto

REDUCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
    "any": np.any,
    "all": np.all,
}
WITH_DTYPE = {"sum", "prod", "mean"}
ALIASES = {
    "reduce_sum": np.sum,
    "reduce_prod": np.prod,
    "reduce_mean": np.mean,
    "reduce_max": np.max,
    "reduce_min": np.min,
    "reduce_any": np.any,
    "reduce_all": np.all,
    "amax": np.amax,
    "amin": np.amin,
}

COVERED = set(REDUCTIONS)


@contextmanager
def no_empty_mean_warning():
    """np.mean of an empty slice warns through ``warnings`` (not np.errstate); NumPy and PyPTO
    both call np.mean, so both see the same warning: ignore it for the comparison."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        yield


def axes(ndim):
    """None, an int (out of range sometimes), or a tuple of ints (duplicates sometimes).

    For a 0-d input, NumPy's ufunc reductions also accept axis=0 and axis=-1 (a legacy special
    case); those are tested in test_0d_input_axis_0_or_minus_1.
    """
    if ndim == 0:
        return st.sampled_from([None, (), 1, -2, (0,), (-1,), (0, 0)])
    one = st.integers(-ndim - 1, ndim)
    return st.one_of(st.none(), one, st.lists(one, max_size=ndim + 1).map(tuple))


def call(form, name, x, **kwargs):
    """The reduction ``name`` of x, called as ``form`` says."""
    if form == "ppto":
        return getattr(ppto, name)(x, **kwargs)
    if form == "method":
        return getattr(x, name)(**kwargs)
    return REDUCTIONS[name](x, **kwargs)  # np.<name>(tensor) dispatch


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reduction(name, data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    kwargs = {"axis": data.draw(axes(x.ndim))}
    if data.draw(st.booleans()):
        kwargs["keepdims"] = data.draw(st.booleans())
    if name in WITH_DTYPE and data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(st.one_of(st.none(), dtypes()))
    form = data.draw(st.sampled_from(["ppto", "method", "np"]))
    fn = REDUCTIONS[name]
    with no_empty_mean_warning():
        check(lambda x: call(form, name, x, **kwargs), lambda x: fn(x, **kwargs), x=x)


@pytest.mark.parametrize("name", sorted(ALIASES))
@given(data=st.data())
def test_alias(name, data):
    x = data.draw(arrays(data.draw(dtypes()), shapes(min_dims=1)))
    axis = data.draw(axes(x.ndim))
    keepdims = data.draw(st.booleans())
    fn = ALIASES[name]
    with no_empty_mean_warning():
        check(
            lambda x: getattr(ppto, name)(x, axis=axis, keepdims=keepdims),
            lambda x: fn(x, axis=axis, keepdims=keepdims),
            x=x,
        )


@pytest.mark.parametrize("name", sorted(WITH_DTYPE))
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_dtype_argument(name, dt):
    """``dtype=`` every supported dtype, for every input dtype, over all axes and one."""
    fn = REDUCTIONS[name]
    x = np.array([[1, 0, 3], [2, 5, 1]]).astype(dt)
    for target in [None, *ALL_DTYPES]:
        for axis in (None, 0, (1,)):
            for form in ("ppto", "method", "np"):
                check(
                    lambda x, f=form, t=target, a=axis: call(f, name, x, axis=a, dtype=t),
                    lambda x, t=target, a=axis: fn(x, axis=a, dtype=t),
                    x=x,
                )


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_every_dtype_default_result_dtype(name):
    """Sum of int32 is int64, of uint8 uint64, mean of ints float64, max keeps the dtype, any/all
    give bool: every dtype, with 0-d, size-0 and ordinary inputs."""
    fn = REDUCTIONS[name]
    for dt in ALL_DTYPES:
        for shape in [(), (0,), (2, 0), (0, 3), (1,), (2, 3), (2, 3, 4)]:
            x = (np.arange(int(np.prod(shape))).reshape(shape) % 5).astype(dt)
            for axis in [None, *range(x.ndim), -1 if x.ndim else ()]:
                for keepdims in (False, True):
                    with no_empty_mean_warning():
                        check(
                            lambda x, a=axis, k=keepdims: fn(x, axis=a, keepdims=k),
                            lambda x, a=axis, k=keepdims: fn(x, axis=a, keepdims=k),
                            x=x,
                        )


def test_integer_and_bool_result_dtypes():
    x = ppto.tensor("x")
    assert ppto.sum(x).run(x=np.ones(3, np.int32)).dtype == np.int64
    assert ppto.sum(x).run(x=np.ones(3, np.uint8)).dtype == np.uint64
    assert ppto.sum(x).run(x=np.ones(3, bool)).dtype == np.int64
    assert ppto.mean(x).run(x=np.ones(3, np.int8)).dtype == np.float64
    assert ppto.mean(x).run(x=np.ones(3, np.float16)).dtype == np.float16
    assert ppto.prod(x).run(x=np.ones(3, np.int8)).dtype == np.int64
    assert ppto.max(x).run(x=np.ones(3, np.uint8)).dtype == np.uint8
    assert ppto.any(x).run(x=np.ones(3, np.float32)).dtype == np.bool_


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_axis_errors(name):
    """Duplicate axes (also spelled negative) and out-of-range axes: NumPy raises, so must PyPTO."""
    fn = REDUCTIONS[name]
    x = np.arange(24.0).reshape(2, 3, 4)
    for axis in [(0, 0), (1, -2), (0, 1, 0), 3, -4, (0, 3), (-4,)]:
        err = check(lambda x, a=axis: fn(x, axis=a), lambda x, a=axis: fn(x, axis=a), x=x)
        assert isinstance(err, Exception)
        check(
            lambda x, a=axis: getattr(ppto, name)(x, axis=a, keepdims=True),
            lambda x, a=axis: fn(x, axis=a, keepdims=True),
            x=x,
        )


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_empty_inputs(name):
    """np.max over an empty axis raises (so PyPTO must), np.sum of nothing is 0, np.mean nan."""
    fn = REDUCTIONS[name]
    for shape in [(0,), (0, 3), (3, 0), (2, 0, 4)]:
        for dt in ALL_DTYPES:
            x = np.zeros(shape, dtype=dt)
            for axis in [None, 0, -1, (0, -1)]:
                with no_empty_mean_warning():
                    got = check(
                        lambda x, a=axis: fn(x, axis=a), lambda x, a=axis: fn(x, axis=a), x=x
                    )
                reduced = (
                    range(x.ndim) if axis is None else np.arange(x.ndim)[list(np.atleast_1d(axis))]
                )
                empty_axis = any(shape[a] == 0 for a in reduced)
                if name in ("max", "min"):
                    assert isinstance(got, Exception) == empty_axis


@pytest.mark.parametrize("name", ["max", "min", "sum", "prod", "mean"])
def test_nan_propagation(name):
    fn = REDUCTIONS[name]
    for dt in FLOAT_DTYPES:
        x = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 0.0], [-0.0, 0.0, 2.0]], dtype=dt)
        for axis in (None, 0, 1):
            got = check(lambda x, a=axis: fn(x, axis=a), lambda x, a=axis: fn(x, axis=a), x=x)
            assert np.isnan(got).any()


def test_max_min_signed_zero_and_nan_values():
    x = np.array([[np.nan, 1.0], [2.0, np.nan], [-0.0, 0.0]])
    for fn in (np.max, np.min, np.amax, np.amin):
        check(lambda x, f=fn: f(x, axis=1), lambda x, f=fn: f(x, axis=1), x=x)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_0d_input(name):
    """0-d arrays and weak Python scalars: axis None and () (and out of range) as NumPy."""
    fn = REDUCTIONS[name]
    for value in (np.array(2.5), np.array(-3, np.int8), np.array(True), 7, 2.5, True):
        for axis in (None, (), 1, -2, (0,)):
            for keepdims in (False, True):
                check(
                    lambda x, a=axis, k=keepdims: fn(x, axis=a, keepdims=k),
                    lambda x, a=axis, k=keepdims: fn(x, axis=a, keepdims=k),
                    x=value,
                )


def test_0d_input_axis_0_or_minus_1():
    """NumPy's ufunc reductions accept axis=0 and axis=-1 on a 0-d array (np.sum(np.array(5.0),
    axis=0) is 5.0; np.mean refuses it): PyPTO must do as NumPy does, either way."""
    for name, fn in REDUCTIONS.items():
        for axis in (0, -1):
            for keepdims in (False, True):
                check(
                    lambda x, a=axis, k=keepdims, n=name: getattr(ppto, n)(x, axis=a, keepdims=k),
                    lambda x, a=axis, k=keepdims, f=fn: f(x, axis=a, keepdims=k),
                    x=np.array(5.0),
                )


@given(st.data())
def test_methods_and_dispatch_agree(data):
    """x.sum(axis=...), np.sum(tensor, axis=...) and ppto.sum in one chain."""
    x = data.draw(arrays(data.draw(dtypes()), shapes(min_dims=2, min_side=1)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))

    def build(x):
        return (
            x.sum(axis=axis),
            np.max(x, axis=axis, keepdims=True),
            ppto.mean(x, axis),
            np.any(x, axis=axis),
            x.prod(axis=(axis,)),
        )

    def oracle(x):
        return (
            x.sum(axis=axis),
            np.max(x, axis=axis, keepdims=True),
            np.mean(x, axis),
            np.any(x, axis=axis),
            x.prod(axis=(axis,)),
        )

    check(build, oracle, x=x)
