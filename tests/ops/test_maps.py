"""Elementwise ops against NumPy: every unary and binary ufunc op, reached as ``ppto.<name>``, as
an operator, through ``np.<ufunc>(tensor)`` dispatch and through its aliases; NEP 50 promotion;
folding of numbers; ``where``, ``clamp``, ``clip``, ``astype`` and ``copy``.

The NumPy functions below are written out independently of PyPTO's own tables, so the oracle is
always NumPy called directly.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from helpers import ALL_DTYPES, arrays, assert_same, check, dtypes, quiet, shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto
from pypto.ops import maps

UNARY = {
    "neg": np.negative,
    "positive": np.positive,
    "abs": np.absolute,
    "sign": np.sign,
    "sqrt": np.sqrt,
    "cbrt": np.cbrt,
    "square": np.square,
    "reciprocal": np.reciprocal,
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "signbit": np.signbit,
    "logical_not": np.logical_not,
    "invert": np.invert,
}

BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "floor_divide": np.floor_divide,
    "mod": np.remainder,
    "power": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "arctan2": np.arctan2,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2,
    "heaviside": np.heaviside,
    "copysign": np.copysign,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}

ALIASES = {
    "negative": np.negative,
    "absolute": np.absolute,
    "bitwise_not": np.invert,
    "sub": np.subtract,
    "mul": np.multiply,
    "true_divide": np.divide,
    "div": np.divide,
    "remainder": np.remainder,
    "pow": np.power,
}

BINARY_OPERATORS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}
UNARY_OPERATORS = {"neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert}

COVERED = {*UNARY, *BINARY, "clamp", "where", "astype", "copy", "clip"}

INT_DTYPES = [d for d in ALL_DTYPES if d.kind in "iu"]


# -- helpers ------------------------------------------------------------------------------------
def check_args(pfn, nfn, args, bound, rtol=None):
    """``check`` of ``pfn(*operands)`` against ``nfn(*operands)``: operand i is a placeholder bound
    to args[i] where bound[i], else the constant args[i] itself."""
    inputs = {f"a{i}": a for i, (a, b) in enumerate(zip(args, bound)) if b}

    def operands(kw):
        return [kw[f"a{i}"] if b else a for i, (a, b) in enumerate(zip(args, bound))]

    return check(
        lambda **kw: pfn(*operands(kw)), lambda **kw: nfn(*operands(kw)), rtol=rtol, **inputs
    )


def python_scalars():
    """Weak Python scalars: small and out-of-range ints, floats (NaN, Inf too), bools."""
    return st.one_of(
        st.integers(-3, 3),
        st.integers(-300, 300),
        st.integers(-(2**65), 2**65),
        st.floats(),
        st.booleans(),
    )


@st.composite
def numpy_scalars(draw, which=ALL_DTYPES):
    return draw(arrays(draw(dtypes(which)), ()))[()]


@st.composite
def value_arrays(draw, dtype, shape):
    """Arrays of any values, of moderate values (|v| <= 100, finite), or of tiny integers
    (0..7: shift counts and exponents that do not overflow), in any memory layout."""
    size = draw(st.sampled_from(["any", "small", "tiny"]))
    a = draw(arrays(dtype, shape, finite=size != "any", small=size != "any"))
    if size == "tiny" and a.dtype.kind in "iu":
        np.remainder(a, 8, out=a)  # in place: a non-contiguous view stays one
    return a


@st.composite
def operand(draw, dtype, shape):
    """A second operand: an array (placeholder or constant), a Python scalar (constant or
    placeholder) or a NumPy scalar."""
    kind = draw(st.sampled_from(["array", "array", "const_array", "py", "py_input", "np"]))
    if kind in ("array", "const_array"):
        return draw(value_arrays(dtype, shape)), kind == "array"
    if kind in ("py", "py_input"):
        return draw(python_scalars()), kind == "py_input"
    return draw(numpy_scalars()), draw(st.booleans())


def special_values(dtype) -> np.ndarray:
    """Edge values of a dtype: extremes, zeros of both signs, NaN, infinities, subnormals."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = {info.min, info.max, 0, 1, 2, 3, 7, info.max - 1}
        if dtype.kind == "i":
            vals |= {-1, -2, -7, info.min + 1}
        return np.array(sorted(vals), dtype=dtype)
    info = np.finfo(dtype)
    return np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, 100.0]
        + [info.max, info.min, info.tiny, info.smallest_subnormal, -info.smallest_subnormal],
        dtype=dtype,
    )


EDGE_SHAPES = [(), (0,), (2, 0, 3), (1, 4), (3, 4)]


def edge_arrays(dtype):
    """Arrays of every EDGE_SHAPES shape filled from special_values."""
    vals = special_values(dtype)
    for shape in EDGE_SHAPES:
        size = int(np.prod(shape))
        yield np.resize(vals, size).reshape(shape) if size else np.zeros(shape, dtype)


def test_tables_list_every_map_op():
    assert set(UNARY) == {name for name, _, _ in maps.UNARY}
    assert set(BINARY) == {name for name, _, _ in maps.BINARY}


# -- unary ops ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary(name, data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    fn = UNARY[name]
    check(lambda x: getattr(ppto, name)(x), lambda x: fn(x), x=x)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_edge_values_every_dtype(name):
    fn = UNARY[name]
    for dt in ALL_DTYPES:
        for x in edge_arrays(dt):
            check(lambda x: getattr(ppto, name)(x), lambda x: fn(x), x=x)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=20)
@given(data=st.data())
def test_unary_numpy_dispatch(name, data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    fn = UNARY[name]
    check(lambda x: fn(x), lambda x: fn(x), x=x)


@pytest.mark.parametrize("name", sorted(UNARY_OPERATORS))
@settings(max_examples=20)
@given(data=st.data())
def test_unary_operator(name, data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    fn = UNARY_OPERATORS[name]
    check(lambda x: fn(x), lambda x: fn(x), x=x)


# -- binary ops ---------------------------------------------------------------------------------
def broadcast_pairs():
    """Shapes that broadcast, and (sometimes) independent shapes that may not."""
    return st.one_of(
        hnp.mutually_broadcastable_shapes(
            num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=4
        ).map(lambda b: b.input_shapes),
        st.tuples(shapes(max_dims=3, max_side=3), shapes(max_dims=3, max_side=3)),
    )


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary(name, data):
    s1, s2 = data.draw(broadcast_pairs())
    x = data.draw(value_arrays(data.draw(dtypes()), s1))
    y, y_bound = data.draw(operand(data.draw(dtypes()), s2))
    args, bound = [x, y], [True, y_bound]
    if data.draw(st.booleans()):  # the other operand on the left
        args, bound = args[::-1], bound[::-1]
    fn = BINARY[name]
    check_args(getattr(ppto, name), fn, args, bound)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_edge_values_every_dtype_pair(name):
    fn = BINARY[name]
    for d1 in ALL_DTYPES:
        x = special_values(d1)[:, None]
        for d2 in ALL_DTYPES:
            y = special_values(d2)[None, :]
            check(lambda x, y: getattr(ppto, name)(x, y), lambda x, y: fn(x, y), x=x, y=y)
            for a in (x[:0], np.asarray(x[0, 0])):  # size 0 and 0-d
                check(lambda x, y: getattr(ppto, name)(x, y), lambda x, y: fn(x, y), x=a, y=y)
                check(lambda x, y: getattr(ppto, name)(x, y), lambda x, y: fn(x, y), x=y, y=a)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=20)
@given(data=st.data())
def test_binary_numpy_dispatch(name, data):
    fn = BINARY[name]
    check_args(fn, fn, *draw_binary_operands(data))


def draw_binary_operands(data):
    """A bound array and another operand (tensor, Python or NumPy scalar, array), either order."""
    s1, s2 = data.draw(broadcast_pairs())
    x = data.draw(value_arrays(data.draw(dtypes()), s1))
    y, y_bound = data.draw(operand(data.draw(dtypes()), s2))
    args, bound = [x, y], [True, y_bound]
    if data.draw(st.booleans()):
        args, bound = args[::-1], bound[::-1]
    return args, bound


@pytest.mark.parametrize("name", sorted(BINARY_OPERATORS))
@settings(max_examples=30)
@given(data=st.data())
def test_binary_operator(name, data):
    """``t OP other`` and the reflected ``other OP t`` with another tensor, a Python scalar, a
    NumPy array or a NumPy scalar as the other operand (on the left too)."""
    fn = BINARY_OPERATORS[name]
    check_args(fn, fn, *draw_binary_operands(data))


@pytest.mark.parametrize("name", sorted(ALIASES))
@settings(max_examples=20)
@given(data=st.data())
def test_alias(name, data):
    fn = ALIASES[name]
    s1, s2 = data.draw(broadcast_pairs())
    x = data.draw(arrays(data.draw(dtypes()), s1))
    if fn.nin == 1:
        check(lambda x: getattr(ppto, name)(x), lambda x: fn(x), x=x)
        return
    y = data.draw(arrays(data.draw(dtypes()), s2))
    check(lambda x, y: getattr(ppto, name)(x, y), lambda x, y: fn(x, y), x=x, y=y)


def test_operators_use_the_right_ops():
    """Each operator against the NumPy operator on fixed operands where they all differ."""
    x = np.array([[5, -7, 12], [3, 0, -1]], dtype=np.int64)
    y = np.array([2, 3, 5], dtype=np.int64)
    for fn in BINARY_OPERATORS.values():
        check_args(fn, fn, [x, np.abs(y)], [True, True])
        check_args(fn, fn, [x, 3], [True, False])
        check_args(fn, fn, [3, np.abs(x)], [False, True])
        check_args(fn, fn, [y, np.abs(x)], [False, True])
    for fn in UNARY_OPERATORS.values():
        check_args(fn, fn, [x], [True])


# -- NEP 50 promotion ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["add", "divide"])
@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_promotion(name, dt):
    """Result dtype (and value) of every array/array, array/Python-scalar and array/NumPy-scalar
    combination, either side, constant or bound as an input, equals NumPy's."""
    f, fn = getattr(ppto, name), BINARY[name]
    for x in (np.array([0, 1, 1], dtype=dt), np.array(1, dtype=dt)):
        for dt2 in ALL_DTYPES:
            y = np.array([1, 1, 1], dtype=dt2)
            check(lambda x, y: f(x, y), lambda x, y: fn(x, y), x=x, y=y)
            check(lambda x, y: f(y, x), lambda x, y: fn(y, x), x=x, y=y)
            strong = dt2.type(1)  # NumPy scalars are strong
            for bound in ([True, False], [True, True]):
                check_args(f, fn, [x, strong], bound)
                check_args(f, fn, [strong, x], bound[::-1])
        op = {"add": operator.add, "divide": operator.truediv}[name]
        for weak in (1, 0, 2.5, -0.0, True, False):
            for bound in ([True, False], [True, True]):
                check_args(f, fn, [x, weak], bound)
                check_args(f, fn, [weak, x], bound[::-1])
                check_args(op, op, [x, weak], bound)
                check_args(op, op, [weak, x], bound[::-1])


def test_promotion_examples():
    f32 = np.array([1.5, 2.5], dtype=np.float32)
    i8 = np.array([1, 2], dtype=np.int8)
    got = (ppto.tensor("x") * 2.0).run(x=f32)
    assert got.dtype == np.float32
    got = (ppto.tensor("x") * np.float64(2)).run(x=f32)
    assert got.dtype == np.float64
    got = (ppto.tensor("x") + 3).run(x=i8)
    assert got.dtype == np.int8
    got = (ppto.tensor("x") + np.int64(3)).run(x=i8)
    assert got.dtype == np.int64
    got = (ppto.tensor("x") / 2).run(x=i8)
    assert got.dtype == np.float64


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_python_int_out_of_range_raises(dt):
    """``int8_array + 300`` raises OverflowError in NumPy; PyPTO must raise a PyptoError."""
    info = np.iinfo(dt)
    x = np.array([1, 2], dtype=dt)
    for big in (int(info.max) + 1, int(info.min) - 1, 2**70):
        for pfn, nfn in [(operator.add, operator.add), (ppto.add, np.add), (np.add, np.add)]:
            for bound in ([True, False], [True, True]):
                assert isinstance(check_args(pfn, nfn, [x, big], bound), OverflowError)
                assert isinstance(check_args(pfn, nfn, [big, x], bound[::-1]), OverflowError)


def test_int8_plus_300_raises():
    x = ppto.tensor("x")
    with pytest.raises(ppto.PyptoError):
        (x + 300).run(x=np.array([1], dtype=np.int8))


# -- folding: numbers only compute right away ---------------------------------------------------
def test_folding_examples():
    r = ppto.sqrt(64)
    assert type(r) is float and r == 8.0
    r = ppto.add(1, 2)
    assert type(r) is int and r == 3
    r = ppto.sin(np.float32(1))
    assert isinstance(r, np.float32)
    assert_same(r, np.sin(np.float32(1)))
    r = ppto.multiply(2, 2.5)
    assert type(r) is float and r == 5.0
    r = ppto.less(1, 2)
    assert type(r) is bool and r is True
    r = ppto.add(np.int8(3), 4)
    assert isinstance(r, np.int8) and r == 7


FOLD_SCALARS = [3, 0, -2, 2.5, 0.5, -0.75, True, False, np.float32(1.5), np.int8(5), np.uint8(3)]


def _fold_cases():
    for name, fn in UNARY.items():
        for a in FOLD_SCALARS:
            yield name, fn, (a,)
    for name, fn in BINARY.items():
        for a in FOLD_SCALARS[:7]:
            for b in (2, 0.5, True, np.float32(2)):
                yield name, fn, (a, b)
                yield name, fn, (b, a)


def _numpy_outcome(fn, args):
    """NumPy's result, or the exception it raises (errstate 'raise': floating-point warnings
    become exceptions here, so those cases are told apart)."""
    try:
        with np.errstate(all="raise"):
            return fn(*args), None
    except Exception as e:
        return None, e


def _check_fold(name, fn, args):
    want, err = _numpy_outcome(fn, args)
    if err is not None:
        return False  # refusals: test_folding_refusals; warnings: test_folding_respects_errstate
    got = getattr(ppto, name)(*args)
    if all(type(a) in (bool, int, float) for a in args) and want.dtype.name in WEAK_DEFAULT:
        assert type(got) is type(want.item()), (name, args, got, want)
    else:
        assert isinstance(got, np.generic), (name, args, got, want)
    assert_same(got, want)
    return True


WEAK_DEFAULT = ("bool", "int64", "float64")  # what Python bool, int and float stand for


def test_folding_every_op():
    """Ops on numbers only: the value NumPy gives, a Python number when all inputs are Python
    numbers, a NumPy scalar of NumPy's dtype otherwise (where NumPy neither warns nor raises)."""
    checked = 0
    for name, fn, args in _fold_cases():
        if all(type(a) is bool for a in args):
            continue  # test_folding_python_bools
        checked += _check_fold(name, fn, args)
    assert checked > 500


def test_folding_python_bools():
    """Python bools are not weak: np.sqrt(True) is np.float16(1.0), np.reciprocal(True) is
    np.int8(1); folding keeps NumPy's dtype (a Python float would stand for float64)."""
    checked = 0
    for name, fn, args in _fold_cases():
        if all(type(a) is bool for a in args):
            checked += _check_fold(name, fn, args)
    assert checked > 50


def test_folding_refusals():
    """Where NumPy refuses numbers (``-True``, ``np.int8(1) + 300``), PyPTO raises a PyptoError."""
    refused = 0
    for name, fn, args in _fold_cases():
        _, err = _numpy_outcome(fn, args)
        if err is None or isinstance(err, FloatingPointError):
            continue
        refused += 1
        with pytest.raises(ppto.PyptoError):
            quiet(getattr(ppto, name), *args)
    assert refused > 0
    with pytest.raises(ppto.PyptoError):
        ppto.add(np.int8(1), 300)
    with pytest.raises(ppto.PyptoError):
        ppto.power(2, -1)


def test_folding_respects_errstate():
    """np.log(0.0) under np.errstate(all='ignore') neither warns nor raises: -inf, silently."""
    with np.errstate(all="ignore"):
        want = np.log(0.0)
        got = ppto.log(0.0)
    assert got == want == -np.inf
    with np.errstate(all="raise"), pytest.raises(ppto.PyptoError):
        ppto.log(0.0)  # NumPy raises FloatingPointError here


# -- where --------------------------------------------------------------------------------------
@st.composite
def branch(draw, shape):
    kind = draw(st.sampled_from(["array", "array", "const_array", "py", "py_input", "np"]))
    if kind in ("array", "const_array"):
        return draw(arrays(draw(dtypes()), shape)), kind == "array"
    if kind in ("py", "py_input"):
        value = draw(st.one_of(st.integers(-300, 300), st.floats(), st.booleans()))
        return value, kind == "py_input"
    return draw(numpy_scalars()), draw(st.booleans())


@given(st.data())
def test_where(data):
    sc, sx, sy = data.draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=4
        )
    ).input_shapes
    cond = data.draw(arrays(data.draw(dtypes()), sc))
    x, xb = data.draw(branch(sx))
    y, yb = data.draw(branch(sy))
    pfn = data.draw(st.sampled_from([ppto.where, np.where]))
    check_args(pfn, np.where, [cond, x, y], [True, xb, yb])


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_where_condition_of_every_dtype(dt):
    cond = special_values(dt)
    x = np.arange(cond.size, dtype=np.float32)
    check(lambda c, x: ppto.where(c, x, -1.0), lambda c, x: np.where(c, x, -1.0), c=cond, x=x)
    check(lambda c: ppto.where(c, 1, 2.5), lambda c: np.where(c, 1, 2.5), c=cond)
    check(lambda c, a, b: ppto.where(c, a, b), lambda c, a, b: np.where(c, a, b), c=cond, a=1, b=2)


def test_where_weak_branches_keep_array_dtype():
    cond = np.array([True, False, True])
    for dt in ALL_DTYPES:
        x = np.ones(3, dtype=dt)
        for s in (2, 2.5, True):
            for bound in (False, True):
                check_args(ppto.where, np.where, [cond, x, s], [True, True, bound])
                check_args(ppto.where, np.where, [cond, s, x], [True, bound, True])


def test_where_with_condition_only_refused():
    with pytest.raises(ppto.PyptoError):
        ppto.where(ppto.tensor("c"))


# -- clamp and clip -----------------------------------------------------------------------------
@st.composite
def bound(draw, x_dtype, shape, allow_none=True, int_in_range=False):
    """A clip bound: None, a Python int (beyond the dtype's range too, unless int_in_range), a
    Python float or bool, a NumPy scalar, or an array of any dtype."""
    kinds = ["int", "float", "np", "array", "array"] + (["none", "none"] if allow_none else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        if int_in_range and x_dtype.kind in "iu":
            info = np.iinfo(x_dtype)  # strictly inside: np.clip drops a bound at the extremes
            return draw(st.integers(int(info.min) + 1, int(info.max) - 1))
        return draw(st.one_of(st.integers(-5, 5), st.integers(-1000, 1000), st.booleans()))
    if kind == "float":
        return draw(st.floats())
    if kind == "np":
        return draw(numpy_scalars())
    return draw(arrays(draw(dtypes()), shape))


def clip_shapes():
    return hnp.mutually_broadcastable_shapes(
        num_shapes=3, min_dims=0, max_dims=3, min_side=0, max_side=4
    ).map(lambda b: b.input_shapes)


@given(st.data())
def test_clamp(data):
    sx, slo, shi = data.draw(clip_shapes())
    dt = data.draw(dtypes())
    x = data.draw(arrays(dt, sx))
    lo = data.draw(bound(dt, slo, allow_none=False, int_in_range=True))
    hi = data.draw(bound(dt, shi, allow_none=False, int_in_range=True))
    bound_lo, bound_hi = data.draw(st.booleans()), data.draw(st.booleans())
    check_args(ppto.clamp, np.clip, [x, lo, hi], [True, bound_lo, bound_hi])


@given(st.data())
def test_clip(data):
    """ppto.clip, np.clip(tensor) and x.clip with bounds of every kind (constants)."""
    sx, slo, shi = data.draw(clip_shapes())
    dt = data.draw(dtypes())
    x = data.draw(arrays(dt, sx))
    lo, hi = data.draw(bound(dt, slo)), data.draw(bound(dt, shi))
    form = data.draw(st.sampled_from(["ppto", "np", "method"]))
    build = {
        "ppto": lambda x: ppto.clip(x, lo, hi),
        "np": lambda x: np.clip(x, lo, hi),
        "method": lambda x: x.clip(lo, hi),
    }[form]
    check(build, lambda x: np.clip(x, lo, hi), x=x)


@given(st.data())
def test_clip_array_bounds_as_inputs(data):
    sx, slo, shi = data.draw(clip_shapes())
    x = data.draw(arrays(data.draw(dtypes()), sx))
    lo = data.draw(arrays(data.draw(dtypes()), slo))
    hi = data.draw(arrays(data.draw(dtypes()), shi))
    check(
        lambda x, lo, hi: ppto.clip(x, lo, hi),
        lambda x, lo, hi: np.clip(x, lo, hi),
        x=x,
        lo=lo,
        hi=hi,
    )
    check(lambda x, lo: ppto.clip(x, lo, None), lambda x, lo: np.clip(x, lo, None), x=x, lo=lo)
    check(lambda x, hi: x.clip(None, hi), lambda x, hi: x.clip(None, hi), x=x, hi=hi)


def check_clip_forms(x, lo, hi):
    """ppto.clip, np.clip(tensor) and the method (positional and keyword) against np.clip."""
    check_args(ppto.clip, np.clip, [x, lo, hi], [True, False, False])
    check_args(np.clip, np.clip, [x, lo, hi], [True, False, False])
    check_args(lambda x: x.clip(lo, hi), lambda x: x.clip(lo, hi), [x], [True])
    return check_args(
        lambda x: x.clip(min=lo, max=hi), lambda x: x.clip(min=lo, max=hi), [x], [True]
    )


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_clip_bound_combinations(dt):
    x = special_values(dt)
    for lo, hi in [(1, 3), (-1.5, 2.5), (0, None), (None, 2), (None, None), (3, 1), (np.nan, 1)]:
        check_clip_forms(x, lo, hi)


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_clip_python_int_beyond_range(dt):
    """np.clip ignores a Python-int bound beyond an integer array's range (NEP 50)."""
    info = np.iinfo(dt)
    x = special_values(dt)
    below, above = int(info.min) - 1, int(info.max) + 1
    for lo, hi in [(below, None), (None, above), (below, above), (below, 5), (0, above)]:
        check_clip_forms(x, lo, hi)
    # beyond the range on the far side it is a real bound, which NumPy refuses to convert
    for lo, hi in [(above, None), (None, below)]:
        assert isinstance(check_clip_forms(x, lo, hi), OverflowError)


def test_clip_python_int_bounds_as_inputs():
    """The same Python-int bounds passed as inputs of the chain (weak scalars, as NEP 50 treats
    them): np.clip(int8_x, -129, None) ignores the bound, so must PyPTO."""
    for dt in INT_DTYPES:
        info = np.iinfo(dt)
        x = special_values(dt)
        below, above = int(info.min) - 1, int(info.max) + 1
        for lo, hi in [(0, 5), (below, None), (None, above), (below, above), (below, 5)]:
            check_args(ppto.clip, np.clip, [x, lo, hi], [True, lo is not None, hi is not None])


def test_clip_both_none_is_positive():
    """np.clip(x, None, None) is np.positive(x): a copy, refused for bool."""
    for dt in ALL_DTYPES:
        x = special_values(dt)
        got = check(lambda x: ppto.clip(x, None, None), lambda x: np.clip(x, None, None), x=x)
        assert isinstance(got, Exception) == (dt.kind == "b")


def test_clip_folds_numbers():
    """clip of numbers only computes right away, as every op does."""
    for a, lo, hi in [(5, 1, 3), (0.5, 1, 3), (5, None, 3), (-2, 0, None)]:
        assert_same(ppto.clip(a, lo, hi), np.clip(a, lo, hi))


# -- astype and copy ----------------------------------------------------------------------------
@given(st.data())
def test_astype(data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    target = data.draw(dtypes())
    spelling = data.draw(st.sampled_from([target, target.type, target.name]))
    form = data.draw(st.sampled_from(["ppto", "method"]))
    if form == "ppto":
        check(lambda x: ppto.astype(x, spelling), lambda x: x.astype(target), x=x)
    else:
        check(lambda x: x.astype(spelling), lambda x: x.astype(target), x=x)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=str)
def test_astype_every_pair(dt):
    for x in edge_arrays(dt):
        for target in ALL_DTYPES:
            check_args(ppto.astype, np.ndarray.astype, [x, target], [True, False])


def test_astype_weak_scalar():
    for s in (3, -2.5, True):
        for target in ALL_DTYPES:
            check_args(
                ppto.astype, lambda s, t: np.asarray(s).astype(t), [s, target], [True, False]
            )


@given(st.data())
def test_copy(data):
    x = data.draw(arrays(data.draw(dtypes()), shapes()))
    build = data.draw(
        st.sampled_from([lambda x: ppto.copy(x), lambda x: np.copy(x), lambda x: x.copy()])
    )
    check(build, lambda x: np.copy(x), x=x)


def test_copy_of_chain_is_independent_of_input():
    x = np.arange(6.0).reshape(2, 3)[:, ::2]
    got = ppto.copy(ppto.tensor("x")).run(x=x)
    assert_same(got, x.copy())
    got[...] = -1
    assert_same(x, np.arange(6.0).reshape(2, 3)[:, ::2])
