"""Reorders: ops that only move, drop or repeat elements (index maps, never arithmetic).

``transpose moveaxis reshape expand_dims squeeze broadcast_to flip concatenate`` and basic indexing
(``getitem``; its normalization lives in indexing.py). Each keeps its operand's dtype, except
``concatenate``, which promotes like NumPy.
"""

from __future__ import annotations

import numpy as np

from ..api import apply, current_site
from ..errors import ArgumentError, PyptoError, ShapeError, UnsupportedError
from ..lower.index_map import (
    IndexMap,
    Linear,
    Pieces,
    Read,
    broadcast_map,
    exact_same,
    getitem_map,
    moves_data,
)
from ..registry import REGISTRY, OpDef, register
from ..shapes import fits, normalize_axes, normalize_axis, size_of
from ..symbolic import Expr, floordiv
from .indexing import SliceSpec, check_supported, getitem_shape, normalize_index
from .rules import promoted_dtype, same_dtype, shape_arg


def _reorder(
    name,
    api,
    impl,
    shape_rule,
    normalize=None,
    numpy=(),
    dtype_rule=same_dtype,
    aliases=(),
    layout=None,
    write=None,
    array_0d=None,
    index_map=None,
):
    """``layout``: the order of axes in memory of the result (passes/layout.py) from the
    equation and its operands' ``(order, zero)``, or "merge" (NumPy's iterator order, as maps);
    none: C order (a reshape copies to C order).

    ``write``: for a view NumPy lets one write through, ``write(base, new, **attrs)`` is the
    base's value once ``new`` (the view's whole new value) is written through the view
    ``op(base, **attrs)``; none: writes through it are refused.

    ``index_map(e, same)``: where each result element comes from (pypto/lower/index_map.py):
    the one statement of the view's index rule that chunking, fusion and the targets read."""
    api.__name__ = api.__qualname__ = name
    register(
        OpDef(
            name,
            "reorder",
            api,
            impl=impl,
            shape_rule=shape_rule,
            dtype_rule=dtype_rule,
            normalize=normalize,
            numpy=numpy,
            aliases=aliases,
            index_map=index_map,
            view=name != "concatenate",
            layout=layout,
            write=write,
            array_0d=array_0d,
        )
    )


def _axes(axes) -> tuple:
    return tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)


def same_layout(e, ins):
    """A view that keeps its operand's order of axes (flip; a store keeps its base's)."""
    return ins[0]


def _transpose_layout(e, ins):
    perm = e.params["perm"]
    order, zero = ins[0]
    return tuple(perm.index(a) for a in order), frozenset(perm.index(a) for a in zero)


def _expand_dims_layout(e, ins):
    """New axes (size 1) go innermost."""
    rank = e.out.type.rank
    order, zero = ins[0]
    new = sorted(a % rank for a in _axes(e.params["axis"]))
    old = [a for a in range(rank) if a not in new]  # input axis i is output axis old[i]
    return tuple(old[a] for a in order) + tuple(new), frozenset(old[a] for a in zero)


def _squeeze_layout(e, ins):
    order, zero = ins[0]
    rank = e.inputs[0].type.rank
    gone = {a % rank for a in _axes(e.params["axis"])}
    kept = [a for a in range(rank) if a not in gone]
    return (
        tuple(kept.index(a) for a in order if a in kept),
        frozenset(kept.index(a) for a in zero if a in kept),
    )


def _broadcast_to_layout(e, ins):
    """New leading axes and stretched size-1 axes have stride 0 (they go innermost)."""
    (order, zero), x = ins[0], e.inputs[0]
    rank, shape = e.out.type.rank, e.out.type.shape
    lead = rank - x.type.rank
    stretched = {lead + a for a, d in enumerate(x.type.shape) if d == 1 and shape[lead + a] != 1}
    new = tuple(range(lead))
    return (
        tuple(lead + a for a in order) + new,
        frozenset(lead + a for a in zero) | frozenset(new) | stretched,
    )


def _getitem_layout(e, ins):
    """Slices keep an input axis, integers drop it, new axes (size 1) go innermost."""
    index, in_rank = e.params["index"], e.inputs[0].type.rank
    order, zero = ins[0]
    where, new, out_axis, in_axis = {}, [], 0, 0
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    for item in index:
        if item is None:
            new.append(out_axis)
            out_axis += 1
        elif item is Ellipsis or isinstance(item, SliceSpec):
            for _ in range(in_rank - consumed if item is Ellipsis else 1):
                where[in_axis] = out_axis
                in_axis, out_axis = in_axis + 1, out_axis + 1
        else:  # an integer
            in_axis += 1
    for a in range(in_axis, in_rank):  # axes the index leaves out: whole
        where[a] = out_axis
        out_axis += 1
    if out_axis != e.out.type.rank:
        raise ValueError("index does not match the output rank")
    kept = tuple(where[a] for a in order if a in where)
    return kept + tuple(new), frozenset(where[a] for a in zero if a in where)


# -- transpose ------------------------------------------------------------------------------------
def transpose(x, axes=None):
    """Permute axes (``axes=None`` reverses them), as ``np.transpose``."""
    return apply("transpose", (x,), {"perm": axes})


def _transpose_norm(ctx, t, perm):
    if perm is None:
        return {"perm": tuple(reversed(range(t.rank)))}
    perm = perm if isinstance(perm, tuple) else (perm,)
    if len(perm) != t.rank:
        raise ShapeError(f"axes {perm} don't match an array of rank {t.rank}")
    perm = tuple(normalize_axis(a, t.rank) for a in perm)
    if sorted(perm) != list(range(t.rank)):
        raise ShapeError(f"axes {perm} are not a permutation of the array's axes")
    return {"perm": perm}


def _permutation_map(e, same):
    perm = e.params["perm"]  # result axis j is operand axis perm[j]
    return IndexMap(tuple(Read(perm.index(i)) for i in range(len(perm))), len(perm))


# the rules of a view that permutes axes (``perm``): transpose, moveaxis
PERMUTE = {
    "impl": lambda x, perm: np.transpose(x, perm),
    "shape_rule": lambda ctx, shape, perm: tuple(shape[a] for a in perm),
    "layout": _transpose_layout,
    "write": lambda base, new, perm: transpose(new, tuple(np.argsort(perm).tolist())),
    "index_map": _permutation_map,
}

_reorder(
    "transpose", transpose, normalize=_transpose_norm, numpy=(np.transpose,),
    aliases=("permute_dims",), **PERMUTE,
)  # fmt: skip


# -- moveaxis -------------------------------------------------------------------------------------
def moveaxis(x, source, destination):
    """Move axes ``source`` to positions ``destination`` (ints or sequences), as
    ``np.moveaxis``; the other axes keep their order."""
    return apply("moveaxis", (x,), {"source": source, "destination": destination})


def _moveaxis_norm(ctx, t, source=None, destination=None, perm=None):
    if perm is not None:  # normalized already
        return _transpose_norm(ctx, t, perm)
    src, dst = _axis_list(source, t.rank, "source"), _axis_list(destination, t.rank, "destination")
    if len(src) != len(dst):
        raise ShapeError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    order = [a for a in range(t.rank) if a not in src]
    for d, a in sorted(zip(dst, src)):
        order.insert(d, a)
    return {"perm": tuple(order)}


def _axis_list(axes, rank, what):
    """Axes in the order given (np.moveaxis pairs them), each once."""
    out = tuple(normalize_axis(a, rank) for a in _axes(axes))
    if len(set(out)) != len(out):
        raise ShapeError(f"repeated axis in `{what}` argument")
    return out


_reorder("moveaxis", moveaxis, normalize=_moveaxis_norm, numpy=(np.moveaxis,), **PERMUTE)


# -- reshape --------------------------------------------------------------------------------------
def reshape(x, shape, order="C"):
    """Give new sizes to the same elements in C order; one size may be -1 (inferred)."""
    if order != "C":
        raise UnsupportedError(f"reshape with order={order!r}", hint="only order='C' is supported")
    return apply("reshape", (x,), {"shape": shape})


def _reshape_norm(ctx, t, shape):
    shape = shape_arg(shape)
    # as NumPy: any negative size is the one to infer (-1 is the documented spelling)
    unknown = [i for i, d in enumerate(shape) if isinstance(d, int) and d < 0]
    if len(unknown) > 1:
        raise ShapeError("can only specify one unknown dimension (-1)")
    total = size_of(t.shape)
    known = size_of(d for i, d in enumerate(shape) if i not in unknown)
    shown = ctx.show(shape)
    bad = ShapeError(f"cannot reshape an array of size {ctx.show_dim(total)} into shape {shown}")
    if unknown:
        if known == 0:
            raise bad
        shape = tuple(floordiv(total, known) if i in unknown else d for i, d in enumerate(shape))
    # One question for both forms, so that normalizing again asks (and guards) the same thing.
    if not ctx.eq(total, size_of(shape)):
        raise bad
    return {"shape": shape}


_reorder(
    "reshape",
    reshape,
    lambda x, shape: np.reshape(x, shape),  # positional: NumPy 2.0 names it newshape
    lambda ctx, s, shape: shape,
    _reshape_norm,
    (np.reshape,),
    write=lambda base, new, shape: _reshape_write(base, new, shape),
    index_map=lambda e, same: Linear(tuple(e.inputs[0].type.shape), tuple(e.out.type.shape)),
)


def _reshape_write(base, new, shape):
    """A reshape that only adds or drops size-1 axes is a view of every array; another one is
    a view only of a contiguous array, which a compiled function cannot know of its argument."""
    if moves_data(Linear(tuple(base.shape), tuple(shape)), base.shape, shape, exact_same):
        raise UnsupportedError(
            "writing through a reshape that moves elements between axes",
            hint="NumPy writes through it only when the array is contiguous; write into the "
            "array itself with the matching index",
            code="PPT105",
        )
    return reshape(new, base.shape)


# -- expand_dims / squeeze ------------------------------------------------------------------------
def expand_dims(x, axis):
    """Insert size-1 axes at positions ``axis`` (int or tuple) of the result."""
    return apply("expand_dims", (x,), {"axis": axis})


def _expand_shape(ctx, shape, axis):
    it = iter(shape)
    return tuple(1 if i in axis else next(it) for i in range(len(shape) + len(axis)))


_reorder(
    "expand_dims",
    expand_dims,
    np.expand_dims,
    _expand_shape,
    lambda ctx, t, axis: {
        "axis": normalize_axes(axis, t.rank + (len(axis) if isinstance(axis, tuple) else 1))
    },
    (np.expand_dims,),
    layout=_expand_dims_layout,
    write=lambda base, new, axis: reshape(new, base.shape),
    index_map=lambda e, same: IndexMap(
        tuple(Read(j) for j in range(e.out.type.rank) if j not in e.params["axis"]),
        e.out.type.rank,
    ),
)


def squeeze(x, axis=None):
    """Remove size-1 axes (all of them, or those named by ``axis``)."""
    return apply("squeeze", (x,), {"axis": axis})


def _squeeze_norm(ctx, t, axis):
    if axis is None:
        return {
            "axis": tuple(
                i
                for i, d in enumerate(t.shape)
                if d == 1 or (isinstance(d, Expr) and ctx.eq(d, 1, assume=False))
            )
        }
    axes = normalize_axes(axis, t.rank, scalar_compat=True)
    for a in axes:
        if not ctx.eq(t.shape[a], 1):
            raise ShapeError(
                f"cannot squeeze axis {a}: its size is not 1 (shape {ctx.show(t.shape)})"
            )
    return {"axis": axes}


_reorder(
    "squeeze",
    squeeze,
    np.squeeze,
    lambda ctx, shape, axis: tuple(d for i, d in enumerate(shape) if i not in axis),
    _squeeze_norm,
    (np.squeeze,),
    layout=_squeeze_layout,
    write=lambda base, new, axis: reshape(new, base.shape),
    index_map=lambda e, same: _squeeze_map(e.inputs[0].type.rank, e.params["axis"]),
)


def _squeeze_map(rank, axis):
    reads, out = [], 0
    for i in range(rank):
        if i in axis:
            reads.append(Read(None, 0, 0))
        else:
            reads.append(Read(out))
            out += 1
    return IndexMap(tuple(reads), out)


# -- broadcast_to ---------------------------------------------------------------------------------
def broadcast_to(x, shape):
    """A view of ``x`` with the given shape, by NumPy's broadcasting rules."""
    return apply("broadcast_to", (x,), {"shape": shape})


def _broadcast_to_norm(ctx, t, shape):
    shape = shape_arg(shape)
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise ShapeError(f"all elements of broadcast shape must be non-negative: {shape}")
    if len(shape) < t.rank:
        raise ShapeError(
            f"cannot broadcast shape {ctx.show(t.shape)} to fewer dimensions {ctx.show(shape)}"
        )
    for d, target in zip(reversed(t.shape), reversed(shape)):
        if not fits(ctx, d, target):
            raise ShapeError(f"cannot broadcast shape {ctx.show(t.shape)} to {ctx.show(shape)}")
    return {"shape": shape}


_reorder(
    "broadcast_to",
    broadcast_to,
    np.broadcast_to,
    lambda ctx, s, shape: shape,
    _broadcast_to_norm,
    (np.broadcast_to,),
    layout=_broadcast_to_layout,
    index_map=lambda e, same: broadcast_map(e.inputs[0].type.shape, e.out.type.shape, same),
)


# -- flip -----------------------------------------------------------------------------------------
def flip(x, axis=None):
    """Reverse the order of elements along ``axis`` (None: all axes)."""
    return apply("flip", (x,), {"axis": axis})


_reorder(
    "flip",
    flip,
    np.flip,
    lambda ctx, shape, axis: shape,
    lambda ctx, t, axis: {"axis": normalize_axes(axis, t.rank)},
    (np.flip,),
    layout=same_layout,
    write=lambda base, new, axis: flip(new, axis),
    index_map=lambda e, same: IndexMap(
        tuple(
            Read(i, -1, d - 1) if i in e.params["axis"] and d != 1 else Read(i)
            for i, d in enumerate(e.inputs[0].type.shape)
        ),
        e.out.type.rank,
    ),
)


# -- basic indexing -------------------------------------------------------------------------------
def getitem(x, index):
    """``x[index]`` with basic indexing: ints, slices (any step), None and ``...``."""
    try:
        for item in index if isinstance(index, tuple) else (index,):
            check_supported(item)  # refuse advanced indexing where it is written
    except PyptoError as e:
        raise e.with_context(None, current_site()) from None
    return apply("getitem", (x,), {"index": index})


def _getitem_impl(x, index):
    return np.asarray(x)[index] if not isinstance(x, (np.ndarray, np.generic)) else x[index]


_reorder(
    "getitem",
    getitem,
    _getitem_impl,
    getitem_shape,
    lambda ctx, t, index: {"index": normalize_index(ctx, t.shape, index)},
    layout=_getitem_layout,
    array_0d=lambda index: Ellipsis in index,  # x[0, ...] is a 0-d view, x[0] a scalar
    write=lambda base, new, index: REGISTRY["store"].api(base, new, index),
    index_map=lambda e, same: getitem_map(e.params["index"], e.inputs[0].type.rank),
)


# -- concatenate ----------------------------------------------------------------------------------
def concatenate(arrays, axis=0):
    """Join a sequence of arrays along an existing axis (None: flatten them first)."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ArgumentError("concatenate needs a non-empty list or tuple of arrays")
    if axis is None:
        arrays, axis = [reshape(a, -1) for a in arrays], 0
    return apply("concatenate", tuple(arrays), {"axis": axis})


def _concat_norm(ctx, *types, axis):
    if types[0].rank == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    for i, t in enumerate(types):
        if t.rank != types[0].rank:
            raise ShapeError(
                "all the input arrays must have the same number of dimensions, but the array "
                f"at index 0 has {types[0].rank} dimension(s) and the array at index {i} has "
                f"{t.rank} dimension(s)"
            )
    axis = normalize_axis(axis, types[0].rank)
    for i, t in enumerate(types[1:], 1):
        for a, (d0, d) in enumerate(zip(types[0].shape, t.shape)):
            if a != axis and not ctx.eq(d0, d):
                raise ShapeError(
                    "all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {a}, the array at index 0 has size "
                    f"{ctx.show_dim(d0)} and the array at index {i} has size {ctx.show_dim(d)}"
                )
    return {"axis": axis}


def _concat_shape(ctx, *shapes, axis):
    total = 0
    for s in shapes:
        total = total + s[axis]
    first = shapes[0]
    return tuple(
        total if a == axis else _pick(ctx, [s[a] for s in shapes]) for a in range(len(first))
    )


def _pick(ctx, dims):
    """Of sizes known to be equal, the most static one."""
    return next((d for d in dims if isinstance(d, int)), dims[0])


def _concat_impl(*arrays, axis):
    return np.concatenate(arrays, axis=axis)


_reorder(
    "concatenate",
    concatenate,
    _concat_impl,
    _concat_shape,
    _concat_norm,
    (np.concatenate,),
    dtype_rule=promoted_dtype,
    aliases=("concat",),
    layout="merge",
    index_map=lambda e, same: Pieces(
        e.params["axis"], tuple(a.type.shape[e.params["axis"]] for a in e.inputs), e.out.type.rank
    ),
)
