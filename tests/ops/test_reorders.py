"""Reorders and basic indexing against NumPy: transpose, reshape, expand_dims, squeeze,
broadcast_to, flip, concatenate, stack, swapaxes, ravel / flatten and ``x[...]``.

Every op here only moves elements, so results must match NumPy exactly: dtype, shape, values.
Sizes are symbolic inside PyPTO and a traced graph is reused across sizes while its guards hold,
so several tests run one lazy chain on several shapes and compare each run with NumPy.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import arrays, check, check_reuse, dtypes, shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

COVERED = {
    "transpose",
    "reshape",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "getitem",
    "flip",
    "moveaxis",
    "concatenate",
    "stack",
    "swapaxes",
    "ravel",
}


# -- helpers ----------------------------------------------------------------------------------
def same_rank_shapes(nd, min_size=2, max_size=5, max_side=6):
    return st.lists(
        hnp.array_shapes(min_dims=nd, max_dims=nd, min_side=0, max_side=max_side),
        min_size=min_size,
        max_size=max_size,
    )


def data_of(shape, dtype=np.int32):
    """Distinct values, so that any misplaced element shows."""
    return np.arange(math.prod(shape), dtype=dtype).reshape(shape)


def axis_in(nd, extra=1):
    """An axis, in range or (by ``extra``) just out of it on either side."""
    return st.integers(-nd - extra, nd - 1 + extra)


# -- transpose --------------------------------------------------------------------------------
@given(st.data())
def test_transpose_default_reverses_axes(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    form = data.draw(st.sampled_from(["ppto", "np", "T", "method", "none"]))
    build = {
        "ppto": lambda x: ppto.transpose(x),
        "np": lambda x: np.transpose(x),
        "T": lambda x: x.T,
        "method": lambda x: x.transpose(),
        "none": lambda x: ppto.transpose(x, None),
    }[form]
    check(build, lambda x: np.transpose(x), x=a)


@settings(max_examples=60)
@given(st.data())
def test_transpose_explicit_axes(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    nd = a.ndim
    perm = data.draw(st.permutations(range(nd)))
    negate = data.draw(st.lists(st.booleans(), min_size=nd, max_size=nd))
    axes = tuple(p - nd if n else p for p, n in zip(perm, negate))
    form = data.draw(st.sampled_from(["ppto", "np", "varargs", "tuple", "list"]))
    build = {
        "ppto": lambda x: ppto.transpose(x, axes),
        "np": lambda x: np.transpose(x, axes),
        "varargs": lambda x: x.transpose(*axes),
        "tuple": lambda x: x.transpose(axes),
        "list": lambda x: ppto.transpose(x, list(axes)),
    }[form]
    check(build, lambda x: np.transpose(x, axes), x=a)


@given(st.data())
def test_transpose_invalid_axes_raise_like_numpy(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3)), layout=False))
    nd = a.ndim
    axes = tuple(
        data.draw(st.lists(axis_in(nd), min_size=max(nd - 1, 0), max_size=nd + 1), label="axes")
    )
    check(lambda x: ppto.transpose(x, axes), lambda x: np.transpose(x, axes), x=a)


def test_transpose_invalid_permutations_raise():
    a = data_of((2, 3, 4))
    for axes in [(0, 0, 1), (0, 1), (0, 1, 2, 3), (0, 1, 3), (0, 1, -4), (1, -2, 0)]:
        with pytest.raises(ppto.PyptoError):
            ppto.transpose(ppto.tensor("x"), axes).run(x=a)
        with pytest.raises(ValueError):  # NumPy agrees
            np.transpose(a, axes)


# -- reshape ----------------------------------------------------------------------------------
def _prime_factors(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def reshape_targets(draw, shape):
    """A new shape for an array of ``shape``: mostly valid (a regrouping of the size's factors,
    maybe with -1), sometimes arbitrary (mostly invalid)."""
    n = math.prod(shape)
    if draw(st.integers(0, 4)) == 0:
        # -1 is the unknown size; other negative sizes are test_reshape_any_negative_size's
        return tuple(draw(st.lists(st.integers(-1, 7), max_size=4)))
    if n == 0:
        dims = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
        dims[draw(st.integers(0, len(dims) - 1))] = 0
    else:
        factors = draw(st.permutations(_prime_factors(n)))
        cuts = sorted(draw(st.lists(st.integers(0, len(factors)), max_size=3)))
        bounds = [0, *cuts, len(factors)]
        dims = [math.prod(factors[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
        for _ in range(draw(st.integers(0, 2))):
            dims.insert(draw(st.integers(0, len(dims))), 1)
    if dims and draw(st.booleans()):
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return tuple(dims)


@settings(max_examples=100)
@given(st.data())
def test_reshape(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    target = data.draw(reshape_targets(a.shape), label="target")
    forms = ["ppto", "np", "method"]
    if target:
        forms.append("varargs")
    if len(target) == 1:
        forms.append("int")
    form = data.draw(st.sampled_from(forms))
    build = {
        "ppto": lambda x: ppto.reshape(x, target),
        "np": lambda x: np.reshape(x, target),
        "method": lambda x: x.reshape(target),
        "varargs": lambda x: x.reshape(*target),
        "int": lambda x: ppto.reshape(x, target[0]),
    }[form]
    check(build, lambda x: np.reshape(x, target), x=a)


@pytest.mark.parametrize(
    "shape, target",
    [
        ((2, 3), (4, -1)),
        ((2, 3), (-1, -1)),
        ((2, 3), (7,)),
        ((2, 3), (-2, -1)),
        ((0, 3), (0, -1)),
        ((0, 3), (-1, 0)),
        ((0, 3), (1, 2)),
        ((), (2,)),
        ((5,), ()),
    ],
)
def test_reshape_invalid_sizes_raise(shape, target):
    a = data_of(shape)
    with pytest.raises(ValueError):
        np.reshape(a, target)
    with pytest.raises(ppto.PyptoError):
        ppto.tensor("x").reshape(target).run(x=a)


@pytest.mark.parametrize("target", [(-2, 3), (-5,), (2, -7), (-3, 2, 1)])
def test_reshape_any_negative_size_is_the_unknown_one(target):
    # NumPy reads any negative size (not only -1) as the one to infer
    check(lambda x: x.reshape(target), lambda x: x.reshape(target), x=data_of((6,)))


@pytest.mark.parametrize(
    "shape, target",
    [((0,), (-1,)), ((0, 3), (3, 0)), ((0, 3), (-1, 3)), ((4, 0), (0, 2, -1)), ((), (1, 1))],
)
def test_reshape_size_zero_and_scalar(shape, target):
    check(lambda x: x.reshape(target), lambda x: x.reshape(target), x=data_of(shape))


@given(st.data())
def test_reshape_chain_reused_across_shapes(data):
    nd = data.draw(st.integers(1, 3))
    target = data.draw(
        st.sampled_from([(-1,), (2, -1), (-1, 2), (3, -1, 1), (1, -1), (-1, 4), (6,), (0, -1)])
    )
    shape_list = data.draw(same_rank_shapes(nd))
    chain = ppto.tensor("x").reshape(target)
    check_reuse(chain, lambda x: x.reshape(target), [{"x": data_of(s)} for s in shape_list])


# -- expand_dims ------------------------------------------------------------------------------
@settings(max_examples=60)
@given(st.data())
def test_expand_dims(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3))))
    nd = a.ndim
    axis = data.draw(
        st.one_of(
            axis_in(nd + 1),
            st.lists(axis_in(nd + 2), max_size=3).map(tuple),
        ),
        label="axis",
    )
    form = data.draw(st.sampled_from(["ppto", "np"]))
    build = {
        "ppto": lambda x: ppto.expand_dims(x, axis),
        "np": lambda x: np.expand_dims(x, axis),
    }[form]
    check(build, lambda x: np.expand_dims(x, axis), x=a)


# -- squeeze ----------------------------------------------------------------------------------
@settings(max_examples=80)
@given(st.data())
def test_squeeze(data):
    # small sides so that size-1 axes are common
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=4, max_side=2))))
    nd = a.ndim
    # an int axis on a 0-d array is test_squeeze_0d_with_int_axis's case
    int_axis = axis_in(nd) if nd else st.nothing()
    axis = data.draw(
        st.one_of(
            st.none(),
            int_axis,
            st.lists(axis_in(nd), max_size=3).map(tuple),
        ),
        label="axis",
    )
    form = data.draw(st.sampled_from(["ppto", "np", "method"]))
    build = {
        "ppto": lambda x: ppto.squeeze(x, axis),
        "np": lambda x: np.squeeze(x, axis),
        "method": lambda x: x.squeeze(axis),
    }[form]
    check(build, lambda x: np.squeeze(x, axis), x=a)


def test_squeeze_axis_whose_size_is_not_1_raises():
    a = data_of((1, 3, 1))
    for axis in (1, -2, (0, 1), (1, 2)):
        with pytest.raises(ValueError):
            np.squeeze(a, axis)
        with pytest.raises(ppto.PyptoError):
            ppto.squeeze(ppto.tensor("x"), axis).run(x=a)


@pytest.mark.parametrize("axis", [0, -1])
def test_squeeze_0d_with_int_axis(axis):
    # NumPy accepts axis 0 and -1 on a 0-d array (kept for backwards compatibility)
    check(lambda x: ppto.squeeze(x, axis), lambda x: np.squeeze(x, axis), x=np.array(3.5))


# -- broadcast_to -----------------------------------------------------------------------------
@st.composite
def broadcast_targets(draw, shape):
    """Mostly valid targets for ``shape`` (extra leading axes, size-1 axes stretched),
    sometimes with one size changed (invalid unless it hits a size-1 axis)."""
    prefix = draw(st.lists(st.integers(0, 3), max_size=2))
    core = [draw(st.integers(0, 3)) if d == 1 else d for d in shape]
    target = prefix + core
    if target and draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, len(target) - 1))
        target[i] = draw(st.integers(0, 4))
    if draw(st.integers(0, 5)) == 0 and target:
        target = target[1:]  # fewer dimensions: invalid unless taken from the prefix
    return tuple(target)


@settings(max_examples=80)
@given(st.data())
def test_broadcast_to(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes(max_dims=3, max_side=3))))
    target = data.draw(broadcast_targets(a.shape), label="target")
    form = data.draw(st.sampled_from(["ppto", "np"]))
    build = {
        "ppto": lambda x: ppto.broadcast_to(x, target),
        "np": lambda x: np.broadcast_to(x, target),
    }[form]
    check(build, lambda x: np.broadcast_to(x, target), x=a)


@pytest.mark.parametrize(
    "shape, target",
    [((3,), (4,)), ((3,), ()), ((2, 3), (3,)), ((2, 1), (3, 1)), ((3,), (-1,)), ((0,), (2,))],
)
def test_broadcast_to_invalid_targets_raise(shape, target):
    a = data_of(shape)
    with pytest.raises(ValueError):
        np.broadcast_to(a, target)
    with pytest.raises(ppto.PyptoError):
        ppto.broadcast_to(ppto.tensor("x"), target).run(x=a)


def test_broadcast_to_int_target():
    check(lambda x: ppto.broadcast_to(x, 4), lambda x: np.broadcast_to(x, 4), x=np.array(2.5))
    check(lambda x: ppto.broadcast_to(x, 4), lambda x: np.broadcast_to(x, 4), x=data_of((1,)))


# -- flip -------------------------------------------------------------------------------------
@settings(max_examples=60)
@given(st.data())
def test_flip(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    nd = a.ndim
    axis = data.draw(
        st.one_of(st.none(), axis_in(nd), st.lists(axis_in(nd), max_size=3).map(tuple)),
        label="axis",
    )
    form = data.draw(st.sampled_from(["ppto", "np", "default"]))
    build = {
        "ppto": lambda x: ppto.flip(x, axis),
        "np": lambda x: np.flip(x, axis),
        "default": lambda x: ppto.flip(x),
    }[form]
    want_axis = None if form == "default" else axis
    check(build, lambda x: np.flip(x, want_axis), x=a)


# -- moveaxis ---------------------------------------------------------------------------------
@settings(max_examples=60)
@given(st.data())
def test_moveaxis(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    nd = a.ndim
    k = data.draw(st.integers(1, max(nd, 1)))
    source = data.draw(st.lists(axis_in(nd), min_size=k, max_size=k), label="source")
    dest = data.draw(st.lists(axis_in(nd), min_size=k, max_size=k), label="destination")
    if data.draw(st.booleans()) and k == 1:
        source, dest = source[0], dest[0]
    form = data.draw(st.sampled_from(["ppto", "np"]))
    build = {
        "ppto": lambda x: ppto.moveaxis(x, source, dest),
        "np": lambda x: np.moveaxis(x, source, dest),
    }[form]
    check(build, lambda x: np.moveaxis(x, source, dest), x=a)


# -- concatenate ------------------------------------------------------------------------------
@st.composite
def concat_inputs(draw):
    """1-3 arrays of one rank (1-3), mostly equal except along ``axis``, dtypes often mixed;
    sometimes a size or the rank differs (NumPy raises)."""
    nd = draw(st.integers(1, 3))
    base = list(draw(hnp.array_shapes(min_dims=nd, max_dims=nd, min_side=0, max_side=4)))
    axis = draw(st.one_of(st.none(), axis_in(nd)))
    n = draw(st.integers(1, 3))
    same_dtype = draw(st.booleans())
    dt0 = draw(dtypes())
    arrs = []
    for _ in range(n):
        shape = list(base)
        if axis is not None and -nd <= axis < nd:
            shape[axis] = draw(st.integers(0, 4))
        mishap = draw(st.integers(0, 7))
        if mishap == 0:
            shape[draw(st.integers(0, nd - 1))] = draw(st.integers(0, 4))
        elif mishap == 1:
            shape = shape[1:] if draw(st.booleans()) else [*shape, 2]
        dt = dt0 if same_dtype else draw(dtypes())
        arrs.append(draw(arrays(dt, tuple(shape))))
    return arrs, axis


@settings(max_examples=100)
@given(st.data())
def test_concatenate(data):
    arrs, axis = data.draw(concat_inputs())
    names = [f"a{i}" for i in range(len(arrs))]
    inputs = dict(zip(names, arrs))
    form = data.draw(st.sampled_from(["ppto", "tuple", "np"]))

    def build(**kw):
        ts = [kw[n] for n in names]
        if form == "ppto":
            return ppto.concatenate(ts, axis=axis)
        if form == "tuple":
            return ppto.concatenate(tuple(ts), axis)
        return np.concatenate(ts, axis=axis)

    check(build, lambda **kw: np.concatenate([kw[n] for n in names], axis=axis), **inputs)


def test_concatenate_default_axis_and_dispatch():
    a, b = data_of((2, 3)), data_of((4, 3), np.float32)
    check(lambda x, y: np.concatenate([x, y]), lambda x, y: np.concatenate([x, y]), x=a, y=b)
    check(lambda x, y: ppto.concatenate([x, y]), lambda x, y: np.concatenate([x, y]), x=a, y=b)
    check(
        lambda x, y: ppto.concatenate([x, y], axis=None),
        lambda x, y: np.concatenate([x, y], axis=None),
        x=a,
        y=data_of((5,), np.uint8),
    )
    c = data_of((1, 3), np.int8)  # a constant array among the lazy tensors
    check(lambda x: np.concatenate([c, x]), lambda x: np.concatenate([c, x]), x=b)
    check(lambda x: ppto.concatenate([x, c, x], -2), lambda x: np.concatenate([x, c, x], -2), x=a)


@pytest.mark.parametrize(
    "s1, s2, axis",
    [
        ((2, 3), (3,), 0),  # rank mismatch
        ((2, 3), (2, 4), 0),  # size mismatch off the axis
        ((2, 3), (3, 3), 1),
        ((2, 3), (2, 3), 2),  # axis out of range
        ((2, 3), (2, 3), -3),
        ((), (), 0),  # 0-d arrays cannot be concatenated
    ],
)
def test_concatenate_errors(s1, s2, axis):
    a, b = data_of(s1), data_of(s2)
    with pytest.raises(ValueError):
        np.concatenate([a, b], axis=axis)
    with pytest.raises(ppto.PyptoError):
        ppto.concatenate([ppto.tensor("x"), ppto.tensor("y")], axis=axis).run(x=a, y=b)


def test_concatenate_mixed_dtypes_promote():
    pairs = [("bool", "int8"), ("int8", "uint8"), ("uint32", "int32"), ("float16", "int64")]
    pairs += [("bool", "float16"), ("uint8", "float32"), ("int64", "uint32")]
    for d1, d2 in pairs:
        a, b = data_of((2,), d1), data_of((3,), d2)
        got = check(
            lambda x, y: ppto.concatenate([x, y]), lambda x, y: np.concatenate([x, y]), x=a, y=b
        )
        assert got.dtype == np.result_type(a, b)


# -- stack ------------------------------------------------------------------------------------
@settings(max_examples=80)
@given(st.data())
def test_stack(data):
    shape = data.draw(shapes(max_dims=3, max_side=4))
    nd = len(shape)
    n = data.draw(st.integers(1, 3))
    arrs = []
    for _ in range(n):
        s = list(shape)
        if s and data.draw(st.integers(0, 7)) == 0:  # a shape mismatch
            s[data.draw(st.integers(0, nd - 1))] = data.draw(st.integers(0, 4))
        arrs.append(data.draw(arrays(data.draw(dtypes()), tuple(s))))
    axis = data.draw(axis_in(nd + 1), label="axis")
    names = [f"a{i}" for i in range(n)]
    form = data.draw(st.sampled_from(["ppto", "np"]))

    def build(**kw):
        ts = [kw[k] for k in names]
        return ppto.stack(ts, axis=axis) if form == "ppto" else np.stack(ts, axis=axis)

    check(build, lambda **kw: np.stack([kw[k] for k in names], axis=axis), **dict(zip(names, arrs)))


def test_stack_shape_mismatch_raises():
    for s1, s2 in [((2, 3), (3, 2)), ((2,), (2, 1)), ((), (1,))]:
        a, b = data_of(s1), data_of(s2)
        with pytest.raises(ValueError):
            np.stack([a, b])
        with pytest.raises(ppto.PyptoError):
            ppto.stack([ppto.tensor("x"), ppto.tensor("y")]).run(x=a, y=b)


# -- swapaxes ---------------------------------------------------------------------------------
@given(st.data())
def test_swapaxes(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    nd = a.ndim
    ax1, ax2 = data.draw(axis_in(nd)), data.draw(axis_in(nd))
    form = data.draw(st.sampled_from(["ppto", "np", "method"]))
    build = {
        "ppto": lambda x: ppto.swapaxes(x, ax1, ax2),
        "np": lambda x: np.swapaxes(x, ax1, ax2),
        "method": lambda x: x.swapaxes(ax1, ax2),
    }[form]
    check(build, lambda x: np.swapaxes(x, ax1, ax2), x=a)


# -- ravel / flatten --------------------------------------------------------------------------
@given(st.data())
def test_ravel_and_flatten(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(shapes())))
    form = data.draw(st.sampled_from(["ravel", "flatten", "method_ravel", "method_flatten", "np"]))
    build = {
        "ravel": lambda x: ppto.ravel(x),
        "flatten": lambda x: ppto.flatten(x),
        "method_ravel": lambda x: x.ravel(),
        "method_flatten": lambda x: x.flatten(),
        "np": lambda x: np.ravel(x),
    }[form]
    check(build, lambda x: np.ravel(x), x=a)


# -- all reorders: one chain, several shapes --------------------------------------------------
REUSED = {
    "transpose": (lambda x: ppto.transpose(x), lambda x: np.transpose(x)),
    "transpose_neg": (lambda x: x.swapaxes(0, -1), lambda x: np.swapaxes(x, 0, -1)),
    "expand_dims": (lambda x: ppto.expand_dims(x, (0, -1)), lambda x: np.expand_dims(x, (0, -1))),
    "squeeze": (lambda x: ppto.squeeze(x), lambda x: np.squeeze(x)),
    "squeeze0": (lambda x: ppto.squeeze(x, 0), lambda x: np.squeeze(x, 0)),
    "broadcast_to": (
        lambda x: ppto.broadcast_to(x, (2, 1, 3)),
        lambda x: np.broadcast_to(x, (2, 1, 3)),
    ),
    "broadcast_lead": (
        lambda x: ppto.broadcast_to(x[..., :1], (3, 2, 4, 1)),
        lambda x: np.broadcast_to(x[..., :1], (3, 2, 4, 1)),
    ),
    "flip": (lambda x: ppto.flip(x, -1), lambda x: np.flip(x, -1)),
    "moveaxis": (lambda x: ppto.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1)),
    "concat": (
        lambda x: ppto.concatenate([x, x[1:], ppto.flip(x, 0)], axis=0),
        lambda x: np.concatenate([x, x[1:], np.flip(x, 0)], axis=0),
    ),
    "concat_last": (
        lambda x: ppto.concatenate([x[..., ::2], x], axis=-1),
        lambda x: np.concatenate([x[..., ::2], x], axis=-1),
    ),
    "stack": (lambda x: ppto.stack([x, x * 2], axis=-1), lambda x: np.stack([x, x * 2], axis=-1)),
    "ravel": (lambda x: ppto.ravel(x.T), lambda x: np.ravel(x.T)),
}


@settings(max_examples=100)
@given(st.data())
def test_reorder_chains_reused_across_shapes(data):
    name = data.draw(st.sampled_from(sorted(REUSED)))
    build, oracle = REUSED[name]
    nd = data.draw(st.integers(1, 3))
    shape_list = data.draw(same_rank_shapes(nd, max_side=4))
    chain = build(ppto.tensor("x"))
    check_reuse(chain, oracle, [{"x": data_of(s)} for s in shape_list])


def test_concatenate_chain_reused_across_shapes():
    chain = ppto.concatenate([ppto.tensor("x"), ppto.tensor("y")], axis=1)
    shape_pairs = [
        ((2, 3), (2, 4)),
        ((5, 0), (5, 2)),
        ((2, 3), (3, 3)),  # mismatch off the axis: NumPy raises
        ((4, 2), (4, 7)),
        ((0, 2), (0, 3)),
        ((3, 2), (2, 2)),
    ]
    bindings = [{"x": data_of(s1), "y": data_of(s2, np.int8)} for s1, s2 in shape_pairs]
    check_reuse(chain, lambda x, y: np.concatenate([x, y], axis=1), bindings)


# -- getitem: basic indexing ------------------------------------------------------------------
@settings(max_examples=200)
@given(st.data())
def test_getitem_basic_indices(data):
    shape = data.draw(shapes(max_dims=4, max_side=5))
    a = data.draw(arrays(data.draw(dtypes()), shape))
    index = data.draw(
        hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True), label="index"
    )
    form = data.draw(st.sampled_from(["operator", "ppto"]))
    if form == "operator":
        check(lambda x: x[index], lambda x: x[index], x=a)
    else:
        check(lambda x: ppto.getitem(x, index), lambda x: x[index], x=a)


def wide_slices():
    bound = st.one_of(st.none(), st.integers(-12, 12))
    step = st.one_of(st.none(), st.integers(-4, 4).filter(bool))
    return st.builds(slice, bound, bound, step)


def index_items(max_int=8):
    """Index items with bounds well outside the shape: ints (some out of bounds, some NumPy
    integers), slices with any step and any bounds, None and ``...``."""
    ints = st.integers(-max_int, max_int)
    return st.one_of(
        ints,
        ints.map(np.int64),
        wide_slices(),
        st.none(),
        st.just(Ellipsis),
    )


def wide_indices(max_items=4):
    return st.one_of(
        index_items(),
        st.lists(index_items(), max_size=max_items).map(tuple),
    )


@settings(max_examples=200)
@given(st.data())
def test_getitem_wide_bounds_and_steps(data):
    shape = data.draw(shapes(max_dims=3, max_side=6))
    a = data.draw(arrays(data.draw(dtypes()), shape))
    index = data.draw(wide_indices(), label="index")
    check(lambda x: x[index], lambda x: x[index], x=a)


@pytest.mark.parametrize(
    "index",
    [
        np.s_[10:-10:-3],
        np.s_[-10:10:3],
        np.s_[::-1],
        np.s_[100:],
        np.s_[:-100],
        np.s_[-1:-100:-1],
        np.s_[3:1],
        np.s_[1:-1],
        np.s_[..., None],
        np.s_[None, ..., ::-2],
    ],
)
def test_getitem_slices_on_many_sizes(index):
    chain = ppto.tensor("x")[index]
    sizes = [(13,), (5,), (2,), (1,), (0,), (20,), (3,), (1,), (7,)]
    check_reuse(chain, lambda x: x[index], [{"x": data_of(s)} for s in sizes])


def test_getitem_one_chain_on_several_shapes():
    chain = ppto.tensor("x")[1:-1]
    check_reuse(chain, lambda x: x[1:-1], [{"x": data_of(s)} for s in [(5,), (2,), (1,), (0,)]])
    chain = ppto.tensor("x")[-2]
    sizes = [(5,), (2,), (1,), (0,), (3,)]
    check_reuse(chain, lambda x: x[-2], [{"x": data_of(s)} for s in sizes])
    chain = ppto.tensor("x")[1:, ::-2][0]
    sizes = [(4, 5), (2, 1), (1, 3), (3, 0), (5, 5), (6, 2)]
    check_reuse(chain, lambda x: x[1:, ::-2][0], [{"x": data_of(s)} for s in sizes])


@settings(max_examples=120)
@given(st.data())
def test_getitem_chain_reused_across_shapes(data):
    nd = data.draw(st.integers(1, 3))
    items = data.draw(
        st.lists(
            st.one_of(st.integers(-4, 4), wide_slices(), st.none(), st.just(Ellipsis)),
            max_size=nd + 1,
        ),
        label="items",
    )
    index = tuple(items)
    shape_list = data.draw(same_rank_shapes(nd, min_size=3, max_size=6))
    chain = ppto.tensor("x")[index]
    check_reuse(chain, lambda x: x[index], [{"x": data_of(s)} for s in shape_list])


@given(st.data())
def test_getitem_integer_out_of_bounds_raises_indexing_error(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4))
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    i = data.draw(st.one_of(st.integers(n, n + 5), st.integers(-n - 5, -n - 1)))
    index = (slice(None),) * axis + (i,)
    a = data_of(shape)
    with pytest.raises(IndexError):
        a[index]
    with pytest.raises(ppto.IndexingError):
        ppto.tensor("x")[index].run(x=a)


@given(st.data())
def test_getitem_too_many_indices_raises(data):
    shape = data.draw(shapes(max_dims=3, max_side=3))
    index = (0,) * (len(shape) + 1)
    a = data_of(shape)
    with pytest.raises(IndexError):
        a[index]
    with pytest.raises(ppto.IndexingError):
        ppto.tensor("x")[index].run(x=a)


def advanced_indices(shape):
    """Indices NumPy reads as advanced indexing: a list, an integer array, a boolean mask."""
    n = shape[0]
    ints = st.integers(0, max(n - 1, 0)) if n else st.just(0)
    int_list = st.lists(ints, min_size=1, max_size=3)
    mask = hnp.arrays(np.bool_, (n,))
    item = st.one_of(
        int_list,
        int_list.map(np.array),
        mask,
        mask.map(list),
    )
    return st.one_of(item, item.map(lambda i: (i,)), item.map(lambda i: (i, Ellipsis)))


@given(st.data())
def test_getitem_advanced_indexing_is_refused(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    index = data.draw(advanced_indices(shape), label="index")
    a = data_of(shape)
    a[index]  # NumPy accepts it (advanced indexing)
    with pytest.raises(ppto.UnsupportedError):
        ppto.tensor("x")[index].run(x=a)


@pytest.mark.parametrize(
    "index",
    [
        [0, 1],
        [1],
        np.array([0, 1]),
        np.array([True, False, True]),
        [True, False, True],
        (slice(None), [0, 1]),
        (0, np.array([1, 2])),
        np.array([[0, 1]]),
    ],
    ids=["list", "list1", "intarray", "mask", "boollist", "slice_list", "int_array2", "array2d"],
)
def test_getitem_advanced_indexing_examples_are_refused(index):
    a = data_of((3, 4))
    a[index]  # NumPy accepts it
    with pytest.raises(ppto.UnsupportedError):
        ppto.tensor("x")[index].run(x=a)
