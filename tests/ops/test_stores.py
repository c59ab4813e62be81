"""``store`` against NumPy's ``__setitem__``: ``ppto.store(base, value, index)`` is a new array
equal to ``b = base.copy(); b[index] = value``, and ``base`` is left as it was.

The value is broadcast to the indexed region (extra leading axes of size 1 allowed) and cast to
base's dtype unsafely, as NumPy does; where NumPy raises (an index out of bounds, a value that
does not broadcast, a Python int out of the dtype's range), PyPTO must raise a PyptoError.
Inside ``ppto.compile`` a slice assignment is a store, with symbolic sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import arrays, assert_same, check, check_reuse, dtypes, quiet, shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

COVERED = {"store"}


# -- helpers ----------------------------------------------------------------------------------
def numpy_store(base, value, index):
    out = base.copy()
    out[index] = value
    return out


def data_of(shape, dtype=np.int32):
    """Distinct values, so that any misplaced element shows."""
    return np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)


@st.composite
def slices(draw, n):
    """A slice of an axis of size n, bounds sometimes out of range (Python clamps them)."""
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
    return slice(draw(bound), draw(bound), step)


@st.composite
def indices(draw, shape):
    """A basic index of an array of ``shape``: ints (sometimes out of bounds), slices, None and
    at most one ``...``; sometimes fewer items than axes, sometimes one too many."""
    if draw(st.integers(0, 3)) == 0:
        return draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    items, axes = [], list(shape)
    ellipsis = draw(st.booleans())
    consumed = draw(st.integers(0, len(axes)))
    if draw(st.integers(0, 9)) == 0:
        consumed = len(axes) + 1  # too many indices: NumPy raises IndexError
        axes.append(1)
    if ellipsis:
        skip = draw(st.integers(0, consumed))
        axes = axes[:skip] + axes[len(axes) - (consumed - skip) :]
    for k, n in enumerate(axes[:consumed]):
        if ellipsis and k == skip:
            items.append(Ellipsis)
        if draw(st.integers(0, 3)) == 0:
            items.append(draw(st.integers(-n - 1, n)))  # -n-1 and n are out of bounds
        else:
            items.append(draw(slices(n)))
    if ellipsis and skip == consumed:
        items.append(Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]  # a bare item, not a tuple
    return tuple(items)


def region_of(shape, index):
    """The shape NumPy's ``a[index]`` has, or None where NumPy refuses the index."""
    try:
        return np.empty(shape, np.int8)[index].shape
    except IndexError:
        return None


@st.composite
def value_shapes(draw, region):
    """A shape that broadcasts to ``region`` (sizes dropped or set to 1, leading 1s added), or
    sometimes an arbitrary one (which mostly does not)."""
    if region is None or draw(st.integers(0, 7)) == 0:
        return draw(shapes(max_dims=3, max_side=4))
    keep = draw(st.integers(0, len(region)))
    out = [1 if draw(st.integers(0, 2)) == 0 else d for d in region[len(region) - keep :]]
    return (1,) * draw(st.integers(0, 2)) + tuple(out)


def castable_elements(dtype, into):
    """Values of ``dtype`` whose cast into ``into`` is defined (no float into an integer out of
    its range, no negative float into an unsigned integer)."""
    dtype, into = np.dtype(dtype), np.dtype(into)
    if dtype.kind == "f" and into.kind in "iu":
        lo = 0.0 if into.kind == "u" else -100.0
        return st.floats(lo, 100.0, width=dtype.itemsize * 8)
    if dtype.kind == "f":
        return st.floats(width=dtype.itemsize * 8)
    return hnp.from_dtype(dtype)


@st.composite
def values(draw, region, into):
    """What is stored: a Python scalar, a NumPy scalar or an array, of any dtype."""
    kind = draw(st.sampled_from(["python", "numpy", "array", "array", "array"]))
    if kind == "python":
        small = st.one_of(
            st.booleans(),
            st.integers(-100, 100),
            st.floats(0.0 if np.dtype(into).kind == "u" else -100.0, 100.0),
        )
        return draw(small)
    dtype = draw(dtypes())
    elements = castable_elements(dtype, into)
    if kind == "numpy":
        return np.array(draw(elements), dtype=dtype)[()]
    return draw(hnp.arrays(dtype, draw(value_shapes(region)), elements=elements))


# -- hypothesis: random bases, indices and values -----------------------------------------------
@settings(max_examples=150)
@given(st.data())
def test_store_matches_setitem(data):
    base = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3))), label="base")
    index = data.draw(indices(base.shape), label="index")
    value = data.draw(values(region_of(base.shape, index), base.dtype), label="value")
    if isinstance(value, np.ndarray) and value.ndim and data.draw(st.booleans()):
        value = np.flip(np.flip(value).copy())  # a non-contiguous value
    before_base, before_value = base.copy(), np.copy(value)
    if data.draw(st.booleans()):  # the value as a lazy input
        check(
            lambda b, v: ppto.store(b, v, index),
            lambda b, v: numpy_store(b, v, index),
            b=base,
            v=value,
        )
    else:  # the value as an operand: a Python scalar, a NumPy scalar or a constant array
        check(lambda b: ppto.store(b, value, index), lambda b: numpy_store(b, value, index), b=base)
    assert_same(base, before_base)  # base is unchanged
    assert_same(value, before_value)


# -- indices ----------------------------------------------------------------------------------
INDICES = [
    (slice(1, None),),
    (slice(None, -1),),
    (slice(1, -1),),
    (slice(None, None, 2),),
    (slice(None, None, -1),),
    (slice(-1, 0, -2),),
    (slice(10, 20),),  # empty: bounds clamped
    (1,),
    (-1,),
    (0, slice(None, None, 2)),
    (slice(None), -2),
    (Ellipsis, 1),
    (1, Ellipsis),
    (Ellipsis,),
    (),
    (None, slice(1, 3)),
    (slice(None), None, 0),
    (Ellipsis, None),
    (-3, -4),
    (np.int64(2), np.int32(-1)),
    2,
    slice(1, 3),
    Ellipsis,
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_store_a_scalar(index):
    base = data_of((3, 4))
    for value in (7, -1, 2.9, True, np.float32(-3.5), np.int8(-2)):
        check(
            lambda b, v=value: ppto.store(b, v, index),
            lambda b, v=value: numpy_store(b, v, index),
            b=base,
        )
        check(
            lambda b, v: ppto.store(b, v, index),
            lambda b, v: numpy_store(b, v, index),
            b=base,
            v=value,
        )


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_store_an_array_of_the_region_shape(index):
    base = data_of((3, 4), np.float64)
    region = base[index].shape
    value = -data_of(region, np.float32) - 1
    check(
        lambda b, v: ppto.store(b, v, index), lambda b, v: numpy_store(b, v, index), b=base, v=value
    )
    # with extra leading axes of size 1
    check(
        lambda b, v: ppto.store(b, v, index),
        lambda b, v: numpy_store(b, v, index),
        b=base,
        v=value[None, None],
    )


def test_out_of_bounds_and_too_many_indices_raise():
    base = data_of((3, 4))
    for index in [
        (3,),
        (-4,),
        (0, 4),
        (0, -5),
        (0, 0, 0),
        (Ellipsis, Ellipsis),
        (Ellipsis, 0, 0, 0),
    ]:
        err = check(
            lambda b, i=index: ppto.store(b, 1, i), lambda b, i=index: numpy_store(b, 1, i), b=base
        )
        assert isinstance(err, IndexError)


def test_store_into_a_zero_dimensional_base():
    base = np.array(5.0)
    for index in [(), Ellipsis, (None,), (Ellipsis, None)]:
        check(
            lambda b, v, i=index: ppto.store(b, v, i),
            lambda b, v, i=index: numpy_store(b, v, i),
            b=base,
            v=np.array(2.5),
        )
        check(
            lambda b, i=index: ppto.store(b, 3, i), lambda b, i=index: numpy_store(b, 3, i), b=base
        )
    err = check(lambda b: ppto.store(b, 3, (0,)), lambda b: numpy_store(b, 3, (0,)), b=base)
    assert isinstance(err, IndexError)


def test_store_into_empty_regions():
    base = data_of((0, 3))
    check(
        lambda b: ppto.store(b, 1, (slice(None), 1)),
        lambda b: numpy_store(b, 1, (slice(None), 1)),
        b=base,
    )
    base = data_of((4,))
    for value in (np.ones(0), np.ones(1), np.ones((1, 0))):
        check(
            lambda b, v: ppto.store(b, v, (slice(3, 1),)),
            lambda b, v: numpy_store(b, v, (slice(3, 1),)),
            b=base,
            v=value,
        )


def test_an_ellipsis_after_integer_indices_broadcasts_the_value():
    """``b[0, 1, ...] = v`` assigns through a 0-d view, so ``v`` may have leading axes of size 1
    (``b[0, 1] = v``, an element assignment, refuses such a ``v``: both must agree with NumPy)."""
    base = data_of((2, 3), np.float64)
    for index in [(0, 1, Ellipsis), (Ellipsis, 0, 1), (0, Ellipsis, -1), (0, 1)]:
        for value in (np.array([5.0]), np.array([[-5]])):
            check(
                lambda b, v, i=index: ppto.store(b, v, i),
                lambda b, v, i=index: numpy_store(b, v, i),
                b=base,
                v=value,
            )
    check(
        lambda b, v: ppto.store(b, v, Ellipsis),
        lambda b, v: numpy_store(b, v, Ellipsis),
        b=np.array(0, np.int32),
        v=np.array([7]),
    )


# -- broadcasting the value -------------------------------------------------------------------
def test_store_broadcasts_the_value():
    base = data_of((3, 4, 2))
    index = (slice(None), slice(1, 3))  # a (3, 2, 2) region
    for shape in [
        (2,),
        (1,),
        (2, 1),
        (1, 2),
        (2, 2),
        (3, 1, 2),
        (1, 1, 1),
        (1, 3, 2, 2),
        (1, 1, 3, 1, 1),
    ]:
        value = -data_of(shape) - 1
        check(
            lambda b, v: ppto.store(b, v, index),
            lambda b, v: numpy_store(b, v, index),
            b=base,
            v=value,
        )


def test_a_value_that_does_not_broadcast_raises():
    base = data_of((3, 4, 2))
    index = (slice(None), slice(1, 3))  # a (3, 2, 2) region
    for shape in [(3,), (2, 3), (4, 2, 2), (2, 3, 2, 2), (3, 2, 2, 1), (0,), (2, 0)]:
        value = np.ones(shape, np.int32)
        err = check(
            lambda b, v: ppto.store(b, v, index),
            lambda b, v: numpy_store(b, v, index),
            b=base,
            v=value,
        )
        assert isinstance(err, ValueError), shape
        with pytest.raises(ppto.PyptoError):
            ppto.store(base, value, index).run()


def test_one_chain_on_several_shapes():
    """One traced store reused across sizes: each run matches NumPy or raises where it does."""
    chain = ppto.store(ppto.tensor("b"), ppto.tensor("v"), (slice(1, -1),))
    bindings = [
        {"b": data_of((n,)), "v": v}
        for n in (5, 2, 1, 0, 3, 7)
        for v in (np.array(-1), np.arange(3) + 100, np.ones((1, 1)) * 9)
    ]
    check_reuse(chain, lambda b, v: numpy_store(b, v, (slice(1, -1),)), bindings)
    chain = ppto.store(ppto.tensor("b"), ppto.tensor("v"), (Ellipsis, -1))
    bindings = [
        {"b": data_of(shape, np.float32), "v": -data_of(shape[:-1], np.int64)}
        for shape in [(2, 3), (4, 1), (1, 5), (0, 2), (3, 0), (2, 2, 2)]
    ]
    check_reuse(chain, lambda b, v: numpy_store(b, v, (Ellipsis, -1)), bindings)


# -- casting the value ------------------------------------------------------------------------
def test_store_casts_the_value_to_the_base_dtype():
    index = (slice(1, 3),)
    cases = [
        (np.int32, np.array([2.7, -2.7])),  # float into int truncates
        (np.int8, np.array([300, -129], np.int64)),  # NumPy integers wrap
        (np.uint8, np.array([-1, 256], np.int32)),
        (np.bool_, np.array([0.0, 0.5])),
        (np.float16, np.array([1e5, 1 / 3])),
        (np.float32, np.array([True, False])),
        (np.int64, np.array([1.5, 2.5], np.float16)),
    ]
    for dtype, value in cases:
        base = data_of((4,), dtype)
        got = check(
            lambda b, v: ppto.store(b, v, index),
            lambda b, v: numpy_store(b, v, index),
            b=base,
            v=value,
        )
        assert got.dtype == np.dtype(dtype)
    got = check(lambda b: ppto.store(b, 2.7, 0), lambda b: numpy_store(b, 2.7, 0), b=data_of((3,)))
    assert got.tolist() == [2, 1, 2]


def test_a_python_int_out_of_range_raises():
    base = data_of((3,), np.int8)
    for value in (300, -129):
        err = check(
            lambda b, v=value: ppto.store(b, v, 0), lambda b, v=value: numpy_store(b, v, 0), b=base
        )
        assert isinstance(err, OverflowError)
    err = check(
        lambda b: ppto.store(b, -1, 0), lambda b: numpy_store(b, -1, 0), b=base.astype(np.uint8)
    )
    assert isinstance(err, OverflowError)


# -- overlapping reads and writes -------------------------------------------------------------
OVERLAPS = {
    "shift_right": (lambda x: x[:-1], (slice(1, None),)),
    "shift_left": (lambda x: x[1:], (slice(None, -1),)),
    "reverse": (lambda x: x[::-1], (slice(None),)),
    "every_other": (lambda x: x[1::2], (slice(None, None, 2),)),
    "first_everywhere": (lambda x: x[0], (Ellipsis,)),
    "last_into_first": (lambda x: x[-1], (0,)),
    "shift_by_two_reversed": (lambda x: x[:-2][::-1], (slice(2, None),)),
}


@pytest.mark.parametrize("name", OVERLAPS)
def test_overlapping_read_and_write(name):
    """``store(x, x[:-1], (slice(1, None),))`` is NumPy's ``y = x.copy(); y[1:] = y[:-1]``:
    the value is read before the store."""
    read, index = OVERLAPS[name]

    def oracle(x):
        y = x.copy()
        y[index] = read(y)
        return y

    for shape in [(6,), (5, 3), (1,), (2, 2, 2)]:
        x = data_of(shape, np.float32)
        check(lambda x: ppto.store(x, read(x), index), oracle, x=x)


def test_transposed_value_of_itself():
    x = data_of((4, 4))
    check(
        lambda x: ppto.store(x, x.T, (Ellipsis,)), lambda x: numpy_store(x, x.T, (Ellipsis,)), x=x
    )
    check(
        lambda x: ppto.store(x, x.T[1:, :2], (slice(None, 3), slice(2, None))),
        lambda x: numpy_store(x, x.T[1:, :2], (slice(None, 3), slice(2, None))),
        x=x,
    )


def test_stores_chained():
    def build(x):
        y = ppto.store(x, 0, (slice(None, None, 2),))
        z = ppto.store(y, y[::-1] * 10, (Ellipsis,))
        return ppto.store(z, x[:2], (slice(-2, None),)) + y

    def oracle(x):
        y = x.copy()
        y[::2] = 0
        z = y.copy()
        z[...] = y[::-1] * 10
        w = z.copy()
        w[-2:] = x[:2]
        return w + y

    for n in (2, 5, 8):
        check(build, oracle, x=data_of((n,)) + 1)


# -- base unchanged, non-contiguous inputs ----------------------------------------------------
def test_base_is_unchanged():
    base = data_of((3, 4), np.float64)
    kept = base.copy()
    got = ppto.store(base, -1.0, (slice(None), slice(1, 3))).run()  # a constant base
    assert_same(base, kept)
    assert_same(got, numpy_store(kept, -1.0, (slice(None), slice(1, 3))))
    got = ppto.store(ppto.tensor("b"), 5, (0,)).run(b=base)  # a bound base
    assert_same(base, kept)
    assert_same(got, numpy_store(kept, 5, (0,)))
    # the base and the stored result both used: the base still reads as before
    b = ppto.tensor("b")
    got_base, got_store = ppto.run([b * 1, ppto.store(b, 0.5, (1,))], b=base)
    assert_same(got_base, kept)
    assert_same(got_store, numpy_store(kept, 0.5, (1,)))
    assert_same(base, kept)


@pytest.mark.parametrize("layout", ["transposed", "strided", "reversed", "fortran"])
def test_non_contiguous_base_and_value(layout):
    full = data_of((6, 8), np.int64)
    base = {
        "transposed": full.T,
        "strided": full[::2, 1::3],
        "reversed": full[::-1, ::-2],
        "fortran": np.asfortranarray(full),
    }[layout]
    kept = base.copy()
    value = (-data_of((base.shape[1], 2), np.float32)).T  # (2, cols), transposed
    index = (slice(1, 3),)
    check(
        lambda b, v: ppto.store(b, v, index), lambda b, v: numpy_store(b, v, index), b=base, v=value
    )
    check(
        lambda b, v: ppto.store(b, v[:, ::-1], index),
        lambda b, v: numpy_store(b, v[:, ::-1], index),
        b=base,
        v=value,
    )
    assert_same(base, kept)


# -- inside ppto.compile: slice assignment with symbolic sizes --------------------------------
def shift_copy(x):
    y = x.copy()
    y[1:] = y[:-1]
    return y


def shift_in_place(x):
    x[1:] = x[:-1]
    return x


def fill_border(x, v):
    out = x.copy()
    out[0, :] = v
    out[-1, :] = v
    out[1:-1, 0] = -v
    return out


def add_into_interior(x):
    out = np.zeros((x.shape[0] + 2, x.shape[1] + 2), dtype=x.dtype)
    out[1:-1, 1:-1] = x
    out[0] = out[-2]
    return out


def store_cast(x):
    y = np.zeros(x.shape, dtype=np.int16)
    y[::2] = x[::2] * 1.5
    return y


def store_broadcast_row(x):
    y = x.copy()
    y[..., 1:] = x[..., :1]
    return y


def store_from_a_size(x, n):
    y = x.copy()
    y[n:] = -1
    return y


def store_at_a_size(x, n):
    y = x.copy()
    y[n] = 7
    return y


def store_between_sizes(x, n):
    y = x.copy()
    y[n:-n, ...] = x[n:-n, ...] * 2
    return y


def store_through_a_0d_view(x):
    y = x.copy()
    y[0, 0, ...] = x[1:2, 1:2]
    return y


def store_reversed_in_place(x):
    x[...] = x[::-1]
    return x


CALLS = {
    shift_copy: [(data_of((n,)),) for n in (4, 0, 1, 2, 6)],
    shift_in_place: [(data_of((n,)),) for n in (4, 0, 1, 2, 6)],
    fill_border: [(data_of((n, 3), np.float64), 2.5) for n in (3, 1, 2, 5, 0)],
    add_into_interior: [
        (data_of(s, np.float32),) for s in [(2, 3), (1, 1), (3, 1), (0, 2), (4, 4)]
    ],
    store_cast: [(data_of((n,), np.float64) - 2,) for n in (4, 0, 1, 7)],
    store_broadcast_row: [(data_of(s, np.float32),) for s in [(2, 3), (1, 1), (3, 1), (0, 2)]],
    store_from_a_size: [(data_of((5,), np.float64), n) for n in (2, -7, -5, -1, 0, 1, 4, 5, 6)],
    store_at_a_size: [(data_of((5,)), n) for n in (2, -6, -5, -1, 0, 1, 4, 5)],
    store_between_sizes: [(data_of((5, 3), np.float64), n) for n in (1, -3, -1, 0, 2, 3, 4)],
    store_through_a_0d_view: [(data_of(s, np.float64),) for s in [(3, 4), (2, 2)]],
    store_reversed_in_place: [(data_of(s),) for s in [(4,), (0,), (1,), (2, 3)]],
}
COMPILED = list(CALLS)


@pytest.mark.parametrize("fn", COMPILED, ids=[fn.__name__ for fn in COMPILED])
def test_compiled(fn):
    """The compiled function returns NumPy's result and leaves its arguments as NumPy does
    (``shift_in_place`` writes into its argument, the others do not)."""
    compiled = ppto.compile(fn)
    for args in CALLS[fn]:
        ours = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            want = quiet(fn, *theirs)
        except Exception:
            with pytest.raises(ppto.PyptoError):
                quiet(compiled, *ours)
            continue
        assert_same(quiet(compiled, *ours), want)
        for got_arg, want_arg in zip(ours, theirs):
            assert_same(got_arg, want_arg)


@pytest.mark.parametrize("fn", [shift_in_place, store_reversed_in_place], ids=lambda f: f.__name__)
def test_compiled_writes_into_a_non_contiguous_argument(fn):
    """An argument the function writes into is a view: the writes land in the viewed array."""
    compiled = ppto.compile(fn)
    for make in (lambda a: a[::-2], lambda a: a[1::3], lambda a: a.reshape(2, 6).T[:, 1]):
        ours, theirs = data_of((12,), np.float32), data_of((12,), np.float32)
        want = fn(make(theirs))
        assert_same(compiled(make(ours)), want)
        assert_same(ours, theirs)
