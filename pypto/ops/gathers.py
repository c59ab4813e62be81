"""Gathers: ``take`` reads its operand at positions an index array holds (``np.take``,
``x[idx]``, ``x[:, idx]``, ``x[k]`` with an integer known only at run time);
``take_along_axis`` likewise, the index array matched to the operand's other axes position by
position (``np.take_along_axis(logp, labels[:, None], axis=1)``).

Their own kind (family ``gather``): a result element is the operand's element at the index
the index array holds there along ``axis`` (a negative index counts from the end). Each
op's ``index_map`` states the rule once as data (``Gather``: the affine reads of the index
operand and of the data operand's other axes, pypto/lower/index_map.py), which chunking and
both targets read; fusion computes it at its result's positions like a map, its consumers fused
after it, and reads both operands from memory (the index values come before the kernel, and
the operand is read wherever they point). NumPy raises IndexError for an index outside the
axis before anything is written: the NumPy target checks the indices before a kernel that
also writes in place (``_take_bounds``; otherwise ``np.take`` checks its own block), the CUDA
target before every launch (CuPy would wrap them around).
"""

from __future__ import annotations

import numpy as np

from ..api import apply
from ..errors import HostOnly, ShapeError
from ..lower.index_map import Gather, IndexMap, Read, broadcast_map
from ..registry import OpDef, register
from ..shapes import broadcast_shapes, normalize_axis
from .rules import same_dtype


def take(x, indices, axis=None, out=None, mode="raise"):
    """``x``'s elements at ``indices`` along ``axis`` (None: of ``x`` flattened)."""
    from .reorders import reshape

    if out is not None or mode != "raise":
        raise HostOnly("take with out= or mode= (NumPy's own call)")
    if axis is None:
        x, axis = reshape(x, -1), 0
    return apply("take", (x, indices), {"axis": axis})


def take_along_axis(arr, indices, axis=-1):
    """``arr``'s elements at ``indices`` along ``axis``, the other axes matched position by
    position (broadcast); None: of ``arr`` flattened."""
    from .reorders import reshape

    if axis is None:
        arr, axis = reshape(arr, -1), 0
    return apply("take_along_axis", (arr, indices), {"axis": axis})


def _integers(index, name):
    if index.dtype.kind not in "iu":
        raise HostOnly(f"{name} with indices that are not integers (NumPy's own call)")


def _take_norm(ctx, x, index, axis):
    _integers(index, "take")
    if x.rank == 0:
        raise ShapeError("cannot take from a zero-dimensional array along an axis")
    return {"axis": normalize_axis(axis, x.rank)}


def _take_shape(ctx, x, index, axis):
    return (*x[:axis], *index, *x[axis + 1 :])


def _take_map(e, same) -> Gather:
    x, index = e.inputs
    axis, r, out = e.params["axis"], index.type.rank, e.out.type.rank
    data = tuple(
        Read(None, 0, 0) if a == axis else Read(a if a < axis else a + r - 1)
        for a in range(x.type.rank)
    )
    return Gather(IndexMap(data, out), IndexMap(tuple(Read(axis + k) for k in range(r)), out), axis)


def _along_norm(ctx, x, index, axis):
    _integers(index, "take_along_axis")
    if x.rank != index.rank:
        raise ShapeError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis(axis, x.rank)
    for a, (d, i) in enumerate(zip(x.shape, index.shape)):
        if a != axis:
            broadcast_shapes(ctx, (d,), (i,))  # (NumPy's ValueError where they do not)
    return {"axis": axis}


def _along_shape(ctx, x, index, axis):
    return tuple(
        i if a == axis else broadcast_shapes(ctx, (d,), (i,))[0]
        for a, (d, i) in enumerate(zip(x, index))
    )


def _along_map(e, same) -> Gather:
    x, index = e.inputs
    axis, shape = e.params["axis"], e.out.type.shape
    data = broadcast_map(x.type.shape, shape, same)
    data = IndexMap(
        tuple(Read(None, 0, 0) if a == axis else r for a, r in enumerate(data.reads)), data.out_rank
    )
    return Gather(data, broadcast_map(index.type.shape, shape, same), axis)


def _register(name, api, impl, shape, norm, gather):
    register(
        OpDef(
            name,
            "gather",
            api,
            impl=impl,
            shape_rule=shape,
            dtype_rule=lambda x, index, **attrs: same_dtype(x),
            normalize=norm,
            numpy=(getattr(np, name),),
            index_map=gather,
        )
    )


_register(
    "take",
    take,
    lambda x, index, axis: np.take(x, index, axis=axis),
    _take_shape,
    _take_norm,
    _take_map,
)
_register(
    "take_along_axis",
    take_along_axis,
    lambda x, index, axis: np.take_along_axis(x, index, axis),
    _along_shape,
    _along_norm,
    _along_map,
)


def take_bounds(e) -> tuple:
    """(index operand, the size of the axis it indexes, that axis) of a gather equation."""
    x, index = e.inputs
    axis = e.params["axis"]
    return index, x.type.shape[axis], axis


__all__ = ["take", "take_along_axis", "take_bounds"]
