"""Array creation against NumPy: full, arange, linspace, eye and the composites zeros, ones,
empty, zeros_like, ones_like, empty_like and full_like.

They are reached three ways: with Python values only, PyPTO computes at once (``ppto.zeros(3)``
is an array); with a lazy tensor argument (a fill value, a bound, an array to be like) they build
a chain computed by ``run``; inside ``ppto.compile``, sizes are symbolic (``np.arange(n)``) and
one compiled function is reused across sizes while its guards hold. Results must match NumPy
exactly: dtype, shape, values. ``np.empty``'s contents are unspecified in NumPy; PyPTO gives
zeros, so only its dtype and shape are compared with NumPy and its values with zero.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ALL_DTYPES, arrays, assert_same, check, dtypes, quiet, shapes
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pypto as ppto

COVERED = {
    "full",
    "arange",
    "linspace",
    "eye",
    "zeros",
    "ones",
    "empty",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
}

NUMBER_DTYPES = [d for d in ALL_DTYPES if d.kind != "b"]


# -- helpers ----------------------------------------------------------------------------------
def eager(got, want, empty=False):
    """``got()`` (PyPTO on Python values only: computed at once) against ``want()`` (NumPy).

    Where NumPy raises, PyPTO must raise a PyptoError. ``empty``: compare dtype and shape only,
    and PyPTO's values with zeros."""
    try:
        expected = quiet(want)
    except Exception as e:
        with pytest.raises(ppto.PyptoError):
            quiet(got)
        return e
    result = quiet(got)
    assert isinstance(result, np.ndarray), f"{type(result).__name__}, not an array"
    if empty:
        assert_empty(result, expected)
    else:
        assert_same(result, expected)
    return result


def assert_empty(got, want):
    """``np.empty``-like results: NumPy's dtype and shape; PyPTO's contents are zeros."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} != NumPy's {want.shape}"
    np.testing.assert_array_equal(got, np.zeros_like(want))


def check_empty(build, oracle, **inputs):
    """``check`` for the lazy ``empty_like``: dtype and shape as NumPy's, values zeros."""
    try:
        want = quiet(oracle, **inputs)
    except Exception as e:
        with pytest.raises(ppto.PyptoError):
            build(**{k: ppto.tensor(k) for k in inputs}).run(**inputs)
        return e
    got = quiet(build(**{k: ppto.tensor(k) for k in inputs}).run, **inputs)
    assert_empty(got, want)
    return got


@st.composite
def shape_args(draw, max_dims=3, negative=True):
    """A shape as users give it: an int, a tuple or a list (NumPy ints too), sometimes with a
    negative size (which NumPy refuses)."""
    shape = list(draw(shapes(min_dims=0, max_dims=max_dims)))
    if negative and shape and draw(st.integers(0, 5)) == 0:
        shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(-3, -1))
    if draw(st.booleans()):
        shape = [np.int64(d) if draw(st.booleans()) else d for d in shape]
    form = draw(st.sampled_from(["tuple", "list", "int"] if len(shape) == 1 else ["tuple", "list"]))
    return {"tuple": tuple(shape), "list": shape, "int": shape[0] if shape else 0}[form]


def optional_dtype(which=ALL_DTYPES):
    return st.one_of(st.none(), dtypes(which), st.sampled_from([int, float, bool, "int16"]))


@st.composite
def python_scalars(draw, into=None):
    """A bool, int or float; small, and a float is non-negative where it is cast into an
    unsigned dtype (NumPy's result is undefined there)."""
    kind = draw(st.sampled_from(["bool", "int", "float"]))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "int":
        return draw(st.integers(-100, 100))
    lo = 0.0 if into is not None and np.dtype(into).kind == "u" else -100.0
    return draw(st.floats(lo, 100.0))


@st.composite
def numpy_scalars(draw, into=None):
    """A NumPy scalar of any dtype, with values that cast into ``into`` with defined results."""
    dtype = draw(dtypes())
    value = draw(python_scalars())
    if dtype.kind == "u" or (dtype.kind == "f" and into is not None and np.dtype(into).kind == "u"):
        value = abs(value)
    with np.errstate(all="ignore"):
        return np.array(value).astype(dtype)[()]


def fill_values(into=None):
    return st.one_of(python_scalars(into), numpy_scalars(into))


# -- full -------------------------------------------------------------------------------------
@settings(max_examples=60)
@given(st.data())
def test_full_with_python_values_computes_at_once(data):
    shape = data.draw(shape_args(), label="shape")
    dtype = data.draw(optional_dtype(), label="dtype")
    value = data.draw(fill_values(dtype), label="value")
    if dtype is None and data.draw(st.booleans()):
        eager(lambda: ppto.full(shape, value), lambda: np.full(shape, value))
    else:
        eager(lambda: ppto.full(shape, value, dtype), lambda: np.full(shape, value, dtype))


def test_full_default_dtypes_are_numpys():
    for value, dtype in [(True, bool), (3, np.int64), (2.5, np.float64), (np.float16(1), None)]:
        got = eager(lambda v=value: ppto.full(3, v), lambda v=value: np.full(3, v))
        if dtype is not None:
            assert got.dtype == np.dtype(dtype)
    eager(lambda: ppto.full((2, 0), 1.5), lambda: np.full((2, 0), 1.5))
    eager(lambda: ppto.full((), 7), lambda: np.full((), 7))
    eager(lambda: ppto.full([2, 1], -1, dtype="int8"), lambda: np.full([2, 1], -1, dtype="int8"))


def test_full_casts_the_fill_value_or_raises_like_numpy():
    eager(lambda: ppto.full(3, 2.7, dtype=np.int8), lambda: np.full(3, 2.7, dtype=np.int8))
    eager(lambda: ppto.full(3, -2.7, dtype=np.int32), lambda: np.full(3, -2.7, dtype=np.int32))
    eager(lambda: ppto.full(2, 0.5, dtype=bool), lambda: np.full(2, 0.5, dtype=bool))
    eager(lambda: ppto.full(2, 1e6, dtype="e"), lambda: np.full(2, 1e6, dtype="e"))
    # Python integers out of the dtype's range: NumPy raises OverflowError
    assert isinstance(
        eager(lambda: ppto.full(3, 300, np.int8), lambda: np.full(3, 300, np.int8)), OverflowError
    )
    eager(lambda: ppto.full(3, -1, np.uint8), lambda: np.full(3, -1, np.uint8))
    # NumPy integers wrap
    eager(lambda: ppto.full(3, np.int64(300), np.int8), lambda: np.full(3, np.int64(300), np.int8))


@given(st.data())
def test_full_with_a_lazy_fill_value(data):
    shape = data.draw(shape_args(), label="shape")
    dtype = data.draw(optional_dtype(), label="dtype")
    value = data.draw(fill_values(dtype), label="value")
    if data.draw(st.booleans()) and not isinstance(value, (bool, int, float)):
        value = np.array(value)  # a 0-d array
    check(lambda v: ppto.full(shape, v, dtype=dtype), lambda v: np.full(shape, v, dtype), v=value)


# -- zeros, ones, empty -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@given(data=st.data())
def test_filled_with_python_values(name, data):
    shape = data.draw(shape_args(), label="shape")
    dtype = data.draw(optional_dtype(), label="dtype")
    ours, theirs = getattr(ppto, name), getattr(np, name)
    if dtype is None:
        got = eager(lambda: ours(shape), lambda: theirs(shape), empty=name == "empty")
        if not isinstance(got, Exception):
            assert got.dtype == np.float64
    else:
        eager(lambda: ours(shape, dtype), lambda: theirs(shape, dtype), empty=name == "empty")
        eager(
            lambda: ours(shape, dtype=dtype),
            lambda: theirs(shape, dtype=dtype),
            empty=name == "empty",
        )


def test_filled_negative_sizes_raise():
    for name in ("zeros", "ones", "empty"):
        for shape in (-1, (2, -1), [-3], (0, -2)):
            with pytest.raises(ValueError):
                getattr(np, name)(shape)
            with pytest.raises(ppto.PyptoError):
                getattr(ppto, name)(shape)


# -- the _like forms --------------------------------------------------------------------------
LIKE = ["zeros_like", "ones_like", "empty_like"]


@pytest.mark.parametrize("name", LIKE)
@given(data=st.data())
def test_like(name, data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3))), label="a")
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(optional_dtype(), label="dtype")
    if data.draw(st.booleans()):
        kwargs["shape"] = data.draw(st.one_of(st.none(), shape_args()), label="shape")
    ours, theirs = getattr(ppto, name), getattr(np, name)
    if name == "empty_like":
        check_empty(lambda x: ours(x, **kwargs), lambda x: theirs(x, **kwargs), x=a)
    else:
        check(lambda x: ours(x, **kwargs), lambda x: theirs(x, **kwargs), x=a)


@pytest.mark.parametrize("name", LIKE)
def test_like_a_numpy_array_runs_without_inputs(name):
    a = np.asfortranarray(np.arange(6, dtype=np.int8).reshape(2, 3))
    ours, theirs = getattr(ppto, name), getattr(np, name)
    for kwargs in ({}, {"dtype": np.float32}, {"shape": (4,)}, {"shape": 0, "dtype": bool}):
        got, want = ours(a, **kwargs).run(), theirs(a, **kwargs)
        if name == "empty_like":
            assert_empty(got, want)
        else:
            assert_same(got, want)


@settings(max_examples=60)
@given(st.data())
def test_full_like(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3))), label="a")
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(optional_dtype(), label="dtype")
    if data.draw(st.booleans()):
        kwargs["shape"] = data.draw(st.one_of(st.none(), shape_args()), label="shape")
    into = kwargs.get("dtype") or a.dtype
    value = data.draw(fill_values(into), label="value")
    if data.draw(st.booleans()):  # the fill value as a lazy input too
        check(
            lambda x, v: ppto.full_like(x, v, **kwargs),
            lambda x, v: np.full_like(x, v, **kwargs),
            x=a,
            v=value,
        )
    else:
        check(
            lambda x: ppto.full_like(x, value, **kwargs),
            lambda x: np.full_like(x, value, **kwargs),
            x=a,
        )


def test_full_like_casts_the_fill_value():
    a = np.arange(4, dtype=np.int8)
    got = check(lambda x: ppto.full_like(x, 2.7), lambda x: np.full_like(x, 2.7), x=a)
    assert got.tolist() == [2, 2, 2, 2]
    check(lambda x: ppto.full_like(x, -2.7), lambda x: np.full_like(x, -2.7), x=a)
    check(lambda x: ppto.full_like(x, 0.5), lambda x: np.full_like(x, 0.5), x=a > 1)
    check(lambda x: ppto.full_like(x, 7), lambda x: np.full_like(x, 7), x=np.ones(3, np.float16))
    check(
        lambda x: ppto.full_like(x, 2.7, dtype=int),
        lambda x: np.full_like(x, 2.7, dtype=int),
        x=np.ones((2, 2)),
    )
    # a Python int out of range: NumPy raises OverflowError
    err = check(lambda x: ppto.full_like(x, 300), lambda x: np.full_like(x, 300), x=a)
    assert isinstance(err, OverflowError)
    check(lambda x: ppto.full_like(x, -1), lambda x: np.full_like(x, -1), x=a.astype(np.uint8))


# -- arange -----------------------------------------------------------------------------------
def _arange_args(start, stop, step, form):
    """Positional and keyword arguments of one arange call form."""
    return {
        "stop": ((stop,), {}),
        "start_stop": ((start, stop), {}),
        "all": ((start, stop, step), {}),
        "step_kw": ((stop,), {"step": step}),
        "kw": ((start,), {"stop": stop, "step": step}),
    }[form]


@st.composite
def arange_bounds(draw):
    kind = draw(st.sampled_from(["int", "int", "float", "numpy", "mixed"]))
    if kind == "int":
        start, stop = draw(st.integers(-10, 10)), draw(st.integers(-10, 10))
        step = draw(st.integers(-4, 4))
    elif kind == "float":
        start, stop = draw(st.floats(-10, 10)), draw(st.floats(-10, 10))
        step = draw(st.sampled_from([0.1, 0.25, 0.3, 1.0, 1.5, -0.5, -0.7, -2.0, 0.0]))
    else:
        scalar = st.one_of(
            st.integers(-10, 10),
            st.floats(-10, 10, allow_subnormal=False).map(lambda v: round(v, 1)),
        )

        def maybe_numpy(v):
            if kind == "mixed" and draw(st.booleans()):
                return v
            dtype = draw(dtypes(NUMBER_DTYPES))
            if dtype.kind == "u":
                v = abs(v)
            if dtype.kind in "iu":
                v = int(v)
            return np.array(v).astype(dtype)[()]

        start, stop = maybe_numpy(draw(scalar)), maybe_numpy(draw(scalar))
        step = maybe_numpy(draw(st.sampled_from([1, 2, -1, -3, 0.5, -0.5])))
    return start, stop, step


@settings(max_examples=100)
@given(st.data())
def test_arange(data):
    start, stop, step = data.draw(arange_bounds(), label="bounds")
    form = data.draw(st.sampled_from(["stop", "start_stop", "all", "all", "step_kw", "kw"]))
    args, kwargs = _arange_args(start, stop, step, form)
    with np.errstate(all="ignore"):  # NumPy wraps unsigned spans: np.arange(uint8 9, uint32 0)
        try:  # has 2**32 elements; keep the oracle small
            length = (stop - start) / step if step else 0
        except OverflowError:  # Python -1 minus a uint8 0: not representable (NEP 50)
            length = (float(stop) - float(start)) / float(step)
    assume(not np.isfinite(length) or length < 10_000)
    if data.draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = data.draw(dtypes(NUMBER_DTYPES), label="dtype")
    eager(lambda: ppto.arange(*args, **kwargs), lambda: np.arange(*args, **kwargs))


def test_arange_default_dtypes_are_numpys():
    assert eager(lambda: ppto.arange(5), lambda: np.arange(5)).dtype == np.int64
    assert eager(lambda: ppto.arange(0.0, 1), lambda: np.arange(0.0, 1)).dtype == np.float64
    assert eager(lambda: ppto.arange(0, 1, 0.25), lambda: np.arange(0, 1, 0.25)).dtype == float
    eager(lambda: ppto.arange(np.float32(3)), lambda: np.arange(np.float32(3)))
    eager(lambda: ppto.arange(np.int8(2), 5), lambda: np.arange(np.int8(2), 5))
    eager(lambda: ppto.arange(5, dtype=np.float32), lambda: np.arange(5, dtype=np.float32))
    eager(lambda: ppto.arange(0.5, 3, dtype=int), lambda: np.arange(0.5, 3, dtype=int))


def test_arange_negative_steps_and_empty_ranges():
    for args in [(5, 0, -1), (5, 0, -2), (0, 5, -1), (3,), (0,), (-3,), (2, 2), (4, 1), (1, 1.0)]:
        eager(lambda a=args: ppto.arange(*a), lambda a=args: np.arange(*a))
    for args in [(1, 0, -0.3), (0, 1, 0.1), (1.0, -1.0, -0.5), (-0.5, 0.5, 0.125)]:
        eager(lambda a=args: ppto.arange(*a), lambda a=args: np.arange(*a))


def test_arange_step_zero_raises():
    eager(lambda: ppto.arange(0, 5, 0), lambda: np.arange(0, 5, 0))
    eager(lambda: ppto.arange(0.0, 5.0, 0.0), lambda: np.arange(0.0, 5.0, 0.0))


def test_arange_bounds_without_a_length_raise_a_pypto_error():
    """NumPy refuses bounds whose length it cannot compute (NaN, infinite)."""
    for args in [(np.nan,), (0, np.inf), (0.0, 1.0, np.nan), (-np.inf, 0.0)]:
        for kwargs in ({}, {"dtype": np.float64}):
            with pytest.raises(ValueError):
                np.arange(*args, **kwargs)
            with pytest.raises(ppto.PyptoError):
                quiet(ppto.arange, *args, **kwargs)


def test_arange_a_step_beyond_the_range():
    """A step that dwarfs a non-empty span (infinite, or span / step underflowing to 0): NumPy
    gives one element when the step points from start to stop, none otherwise."""
    for args in [
        (0.0, 1.0, np.inf),
        (0.0, 1e-300, 1e300),
        (0.0, -1e-300, -1e300),
        (1.0, 0.0, np.inf),
        (0.0, 1.0, -np.inf),
    ]:
        eager(lambda a=args: ppto.arange(*a), lambda a=args: np.arange(*a))


def test_arange_bool_bounds():
    """NumPy takes bools as the integers 0 and 1."""
    eager(lambda: ppto.arange(True), lambda: np.arange(True))
    eager(lambda: ppto.arange(False, 3), lambda: np.arange(False, 3))


# -- linspace ---------------------------------------------------------------------------------
@st.composite
def linspace_bound(draw):
    v = draw(
        st.one_of(
            st.integers(-10, 10),
            st.floats(-10, 10, allow_subnormal=False),
            st.sampled_from([0.0, -0.0, 1.0]),
        )
    )
    if draw(st.booleans()):
        dtype = draw(
            dtypes(
                [np.dtype(t) for t in ("int8", "int32", "int64", "float16", "float32", "float64")]
            )
        )
        with np.errstate(all="ignore"):
            return np.array(v).astype(dtype)[()]
    return v


@settings(max_examples=80)
@given(st.data())
def test_linspace(data):
    start, stop = (
        data.draw(linspace_bound(), label="start"),
        data.draw(linspace_bound(), label="stop"),
    )
    num = data.draw(st.sampled_from([0, 1, 2, 3, 5, 8, 50, -1]), label="num")
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["endpoint"] = data.draw(st.booleans())
    if data.draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = data.draw(dtypes(NUMBER_DTYPES), label="dtype")
    if data.draw(st.booleans()):
        eager(
            lambda: ppto.linspace(start, stop, num, **kwargs),
            lambda: np.linspace(start, stop, num, **kwargs),
        )
    else:  # the bounds as lazy inputs
        check(
            lambda a, b: ppto.linspace(a, b, num, **kwargs),
            lambda a, b: np.linspace(a, b, num, **kwargs),
            a=start,
            b=stop,
        )


def test_linspace_small_counts_and_endpoint():
    for num in (0, 1, 2):
        for endpoint in (True, False):
            eager(
                lambda n=num, e=endpoint: ppto.linspace(2, 3, n, endpoint=e),
                lambda n=num, e=endpoint: np.linspace(2, 3, n, endpoint=e),
            )
    assert eager(lambda: ppto.linspace(0, 1), lambda: np.linspace(0, 1)).shape == (50,)
    eager(lambda: ppto.linspace(0, 1, 4, False), lambda: np.linspace(0, 1, 4, False))
    eager(
        lambda: ppto.linspace(0, 10, 5, dtype=np.int32),
        lambda: np.linspace(0, 10, 5, dtype=np.int32),
    )
    eager(lambda: ppto.linspace(np.float32(0), 1, 5), lambda: np.linspace(np.float32(0), 1, 5))
    eager(lambda: ppto.linspace(0, 1, -1), lambda: np.linspace(0, 1, -1))
    eager(lambda: ppto.linspace(0, 1, np.int64(3)), lambda: np.linspace(0, 1, np.int64(3)))


# -- eye --------------------------------------------------------------------------------------
@settings(max_examples=80)
@given(st.data())
def test_eye(data):
    n = data.draw(st.integers(-1, 5), label="N")
    m = data.draw(st.one_of(st.none(), st.integers(-1, 5)), label="M")
    k = data.draw(st.integers(-6, 6), label="k")
    kwargs = {}
    if data.draw(st.booleans()):
        kwargs["dtype"] = data.draw(dtypes(), label="dtype")
    if data.draw(st.booleans()):
        eager(lambda: ppto.eye(n, m, k, **kwargs), lambda: np.eye(n, m, k, **kwargs))
    else:
        eager(lambda: ppto.eye(n, M=m, k=k, **kwargs), lambda: np.eye(n, M=m, k=k, **kwargs))
    if m is None and k == 0:
        eager(lambda: ppto.eye(n, **kwargs), lambda: np.eye(n, **kwargs))


def test_eye_diagonals():
    for n, m, k in [
        (3, None, 0),
        (3, 4, 1),
        (4, 3, -1),
        (3, 5, -2),
        (2, 3, 5),
        (3, 3, -3),
        (0, 2, 0),
    ]:
        got = eager(lambda a=(n, m, k): ppto.eye(*a), lambda a=(n, m, k): np.eye(*a))
        assert got.dtype == np.float64
    eager(lambda: ppto.eye(3, dtype=int), lambda: np.eye(3, dtype=int))
    eager(lambda: ppto.eye(2, 3, k=1, dtype=bool), lambda: np.eye(2, 3, k=1, dtype=bool))
    eager(lambda: ppto.eye(-1), lambda: np.eye(-1))
    eager(lambda: ppto.eye(3, -2), lambda: np.eye(3, -2))


# -- inside ppto.compile: symbolic sizes ------------------------------------------------------
# NumPy functions compiled from their source (so they live at module level); an int argument n
# is a symbolic size, as are the sizes of an array argument.
def arange_n(n):
    return np.arange(n)


def arange_from_two(n):
    return np.arange(2, n)


def arange_step_three(n):
    return np.arange(0, n, 3)


def arange_down_by_two(n):
    return np.arange(n, 0, -2)


def arange_reversed(n):
    return np.arange(n - 1, -1, -1)


def arange_float_bounds(n):
    return np.arange(1.0, n + 1.0)


def arange_float32(n):
    return np.arange(n, dtype=np.float32)


def arange_keyword_step(n):
    return np.arange(n, step=2)


def zeros_n(n):
    return np.zeros(n)


def zeros_plus_arange(x):
    return np.zeros(x.shape[0]) + np.arange(x.shape[0])


def zeros_like_dtype(x):
    return np.zeros((x.shape[0], x.shape[1]), dtype=x.dtype)


def ones_list_shape(n):
    return np.ones([n, 2], dtype=np.int32)


def ones_of_shape(x):
    return np.ones(x.shape, dtype=bool)


def full_n(n):
    return np.full((n, 2), 7, dtype=np.int8)


def full_bool(n):
    return np.full(n, True)


def full_float_default(x):
    return np.full(x.shape[0] + 1, 2.5)


def full_from_data(x):
    return np.full((3, x.shape[0]), x.sum())


def zeros_like_x(x):
    return np.zeros_like(x)


def ones_like_int8(x):
    return np.ones_like(x, dtype=np.int8)


def full_like_cast(x):
    return np.full_like(x, 2.7)


def zeros_like_shape(x):
    return np.zeros_like(x, shape=(x.shape[0], 2))


def full_like_shape_dtype(x):
    return np.full_like(x, 3, dtype=np.float32, shape=x.shape[0])


def linspace_n(n):
    return np.linspace(0, 1, n)


def linspace_no_endpoint(n):
    return np.linspace(0.0, 1.0, n, endpoint=False)


def linspace_symbolic_bounds(n):
    return np.linspace(0, n, 5)


def linspace_float32(n):
    return np.linspace(-1, 1, n, dtype=np.float32)


def linspace_int(n):
    return np.linspace(0, 10, n, dtype=np.int64)


def linspace_of_x(x):
    return x * np.linspace(0.5, 2.0, x.shape[0])


def eye_n(n):
    return np.eye(n)


def eye_k1(x):
    return np.eye(x.shape[0], k=1)


def eye_rect(n):
    return np.eye(n, n + 2, k=-1)


def eye_symbolic_k(n):
    return np.eye(3, 4, k=n)


def eye_dtype(x):
    return np.eye(x.shape[0], dtype=x.dtype)


def arange_between_sizes(n):
    return np.arange(n, 2 * n)


def arange_two_sizes_down(n, m):
    return np.arange(n, m, -1)


def arange_symmetric(n):
    return np.arange(-n, n, 4)


def arange_half_offsets(n):
    return np.arange(0.5, n + 0.5)


def arange_float_stop(n):
    return np.arange(n + 0.5)


def arange_float_size(n):
    return np.arange(n * 1.0)


def zeros_smaller(n):
    return np.zeros(n - 3)


def zeros_of_x_smaller(x):
    return np.zeros((2, x.shape[0] - 3))


def ones_two_sizes(n):
    return np.ones((n, n - 1))


def full_of_a_size(n):
    return np.full(3, n)


def full_of_half_a_size(n):
    return np.full(n, n / 2)


def full_cast_to_int8(n):
    return np.full(n, 1.5, dtype=np.int8)


def full_like_of_a_size(x):
    return np.full_like(x, x.shape[0])


def zeros_like_smaller(x):
    return np.zeros_like(x, shape=(x.shape[0] - 2,))


def linspace_smaller(n):
    return np.linspace(0, 1, n - 3)


def linspace_integers(n):
    return np.linspace(0, n, n + 1)


def eye_smaller(n):
    return np.eye(n - 3)


def eye_fewer_columns(n):
    return np.eye(3, n - 3)


def _ints(lo=-2, hi=7):
    return [(n,) for n in range(lo, hi)]


def _vectors(dtype=np.float64):
    return [(np.arange(n, dtype=dtype),) for n in range(6)]


def _matrices(dtype=np.float64):
    return [(np.ones((n, m), dtype=dtype),) for n, m in [(0, 3), (1, 1), (2, 3), (4, 2), (3, 0)]]


COMPILED = [
    (arange_n, _ints()),
    (arange_from_two, _ints()),
    (arange_step_three, _ints()),
    (arange_down_by_two, _ints()),
    (arange_reversed, _ints(0)),
    (arange_float_bounds, _ints()),
    (arange_float32, _ints()),
    (arange_keyword_step, _ints()),
    (zeros_n, _ints()),
    (zeros_plus_arange, _vectors()),
    (zeros_like_dtype, _matrices(np.int8)),
    (ones_list_shape, _ints()),
    (ones_of_shape, _matrices(np.float32)),
    (full_n, _ints()),
    (full_bool, _ints()),
    (full_float_default, _vectors(np.int32)),
    (full_from_data, _vectors(np.int32)),
    (zeros_like_x, _matrices(np.float16)),
    (ones_like_int8, _matrices()),
    (full_like_cast, _matrices(np.int8)),
    (zeros_like_shape, _matrices(np.uint8)),
    (full_like_shape_dtype, _matrices(np.int32)),
    (linspace_n, _ints()),
    (linspace_no_endpoint, _ints()),
    (linspace_symbolic_bounds, _ints()),
    (linspace_float32, _ints()),
    (linspace_int, _ints()),
    (linspace_of_x, _vectors(np.float32)),
    (eye_n, _ints()),
    (eye_k1, _vectors()),
    (eye_rect, _ints()),
    (eye_symbolic_k, _ints(-5, 6)),
    (eye_dtype, _vectors(np.int32)),
    (arange_between_sizes, _ints()),
    (arange_two_sizes_down, [(n, m) for n in range(-1, 3) for m in range(-1, 3)]),
    (arange_symmetric, _ints(-3)),
    (arange_half_offsets, _ints()),
    (arange_float_stop, _ints()),
    (arange_float_size, _ints()),
    (zeros_smaller, _ints(0)),
    (zeros_of_x_smaller, _vectors()),
    (ones_two_sizes, _ints(0)),
    (full_of_a_size, _ints()),
    (full_of_half_a_size, _ints()),
    (full_cast_to_int8, _ints()),
    (full_like_of_a_size, _vectors(np.int8)),
    (zeros_like_smaller, _vectors()),
    (linspace_smaller, _ints(0)),
    (linspace_integers, _ints()),
    (eye_smaller, _ints(0)),
    (eye_fewer_columns, _ints(0)),
]


def compiled_matches(fn, calls, empty=False):
    """One ``ppto.compile(fn)``, called with each argument tuple of ``calls`` (other sizes reuse
    it while its guards hold): each result must be NumPy's, or a PyptoError where NumPy raises."""
    compiled = ppto.compile(fn)
    for args in calls:
        try:
            want = quiet(fn, *args)
        except Exception:
            with pytest.raises(ppto.PyptoError):
                quiet(compiled, *args)
            continue
        got = quiet(compiled, *args)
        if empty:
            assert_empty(got, want)
        else:
            assert_same(got, want)


@pytest.mark.parametrize(("fn", "calls"), COMPILED, ids=[fn.__name__ for fn, _ in COMPILED])
def test_compiled(fn, calls):
    """One compiled function for all sizes: first traced at a middling size, then the others
    from the smallest up and back down (the later calls reuse specializations while their
    guards hold). Compiling reads the source of this file, which takes a while: once per
    function."""
    first = calls[len(calls) // 2 + 1 :][:1]
    compiled_matches(fn, first + calls + calls[::-1])


def empty_n(n):
    return np.empty((n, 3))


def empty_like_x(x):
    return np.empty_like(x)


def empty_like_dtype_shape(x):
    return np.empty_like(x, dtype=np.int16, shape=(2, x.shape[0]))


@pytest.mark.parametrize(
    ("fn", "calls"),
    [
        (empty_n, _ints()),
        (empty_like_x, _matrices(np.float32)),
        (empty_like_dtype_shape, _vectors()),
    ],
    ids=["empty_n", "empty_like_x", "empty_like_dtype_shape"],
)
def test_compiled_empty(fn, calls):
    compiled_matches(fn, calls, empty=True)
