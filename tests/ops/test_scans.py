"""Scans against NumPy: ``cumsum`` and ``cumprod`` along None (the flattened array), an int or a
negative int, with ``dtype=``, on 0-d, size-0 and non-contiguous inputs of every dtype, reached as
``ppto.<name>``, as methods and through ``np.<name>(tensor)``.

PyPTO computes a scan with the NumPy function itself (after a C-order reshape for axis=None, which
is what NumPy's ravel does), so values are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ALL_DTYPES, arrays, assert_same, check, dtypes, shapes
from hypothesis import given
from hypothesis import strategies as st

import pypto as ppto

SCANS = {"cumsum": np.cumsum, "cumprod": np.cumprod}

COVERED = set(SCANS)


def call(form, name, x, **kwargs):
    if form == "ppto":
        return getattr(ppto, name)(x, **kwargs)
    if form == "method":
        return getattr(x, name)(**kwargs)
    return SCANS[name](x, **kwargs)  # np.<name>(tensor) dispatch


def scan_axes(ndim):
    """None or an int, out of range sometimes (a 0-d input scans as a 1-element vector)."""
    n = max(ndim, 1)
    return st.one_of(st.none(), st.integers(-n - 1, n))


@pytest.mark.parametrize("name", sorted(SCANS))
@given(data=st.data())
def test_scan(name, data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["axis"] = data.draw(scan_axes(x.ndim))
    if data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(st.one_of(st.none(), dtypes()))
    form = data.draw(st.sampled_from(["ppto", "method", "np"]))
    fn = SCANS[name]
    check(lambda x: call(form, name, x, **kwargs), lambda x: fn(x, **kwargs), x=x)


@pytest.mark.parametrize("name", sorted(SCANS))
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_every_dtype_and_axis(name, dt):
    """bool and small ints accumulate in int64 (uint8 in uint64), floats keep their dtype; with
    ``dtype=`` every supported dtype; axis None, every axis, negative axes, out of range."""
    fn = SCANS[name]
    for shape in [(), (0,), (3, 0), (1,), (2, 3), (2, 3, 2)]:
        x = (np.arange(int(np.prod(shape))).reshape(shape) % 4 + 1).astype(dt)
        n = max(x.ndim, 1)
        for axis in [None, *range(-n - 1, n + 1)]:
            check(lambda x, a=axis: fn(x, axis=a), lambda x, a=axis: fn(x, axis=a), x=x)
        for target in ALL_DTYPES:
            check(
                lambda x, t=target: getattr(ppto, name)(x, axis=-1, dtype=t),
                lambda x, t=target: fn(x, axis=-1, dtype=t),
                x=x,
            )


@pytest.mark.parametrize("name", sorted(SCANS))
def test_0d_input(name):
    """A 0-d input scans as a 1-element vector: axis None, 0 and -1 work, 1 and -2 do not."""
    fn = SCANS[name]
    for value in (np.array(2.5), np.array(-3, np.int8), np.array(True), 7, 2.5, True):
        for axis in (None, 0, -1, 1, -2):
            for form in ("ppto", "np"):
                check(
                    lambda x, a=axis, f=form: call(f, name, x, axis=a),
                    lambda x, a=axis: fn(x, axis=a),
                    x=value,
                )


@pytest.mark.parametrize("name", sorted(SCANS))
def test_axis_none_flattens_non_contiguous_input_in_c_order(name):
    fn = SCANS[name]
    base = np.arange(1.0, 25.0).reshape(2, 3, 4)
    for x in (base.T, base[:, ::2, ::-1], np.asfortranarray(base), base.transpose(1, 0, 2)):
        check(lambda x: getattr(ppto, name)(x), lambda x: fn(x), x=x)
        check(lambda x: getattr(x, name)(), lambda x: getattr(x, name)(), x=x)


@pytest.mark.parametrize("name", sorted(SCANS))
def test_nan_and_overflow(name):
    fn = SCANS[name]
    for x in (
        np.array([1.0, np.nan, 2.0, np.inf, -np.inf]),
        np.array([[np.inf, 0.0], [np.nan, -0.0]], dtype=np.float32),
        np.array([100, 100, 100], dtype=np.int8),
        np.array([60000, 60000], dtype=np.float16),
    ):
        for axis in (None, 0, -1):
            check(lambda x, a=axis: fn(x, axis=a), lambda x, a=axis: fn(x, axis=a), x=x)
        for dt in (np.int8, np.float16, np.uint32):
            check(lambda x, t=dt: fn(x, dtype=t), lambda x, t=dt: fn(x, dtype=t), x=x)


def test_scans_in_one_chain():
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)

    def build(x):
        return (np.cumsum(x, axis=1), x.cumprod(0), ppto.cumsum(x), ppto.cumprod(x, -1, np.float32))

    def oracle(x):
        return (np.cumsum(x, axis=1), x.cumprod(0), np.cumsum(x), np.cumprod(x, -1, np.float32))

    check(build, oracle, x=x)


def test_numbers_fold():
    """Every op applied to numbers only computes right away: np.cumsum(3) is array([3])."""
    for name, fn in SCANS.items():
        for value in (3, 2.5, True):
            for axis in (0, None):
                assert_same(getattr(ppto, name)(value, axis=axis), fn(value, axis=axis))
