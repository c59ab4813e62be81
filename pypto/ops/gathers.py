"""Gathers: ``take`` reads its operand at positions an index array holds (``np.take``,
``x[idx]``, ``x[:, idx]``, ``x[k]`` with an integer known only at run time).

Its own kind (family ``gather``): a result element is the operand's element at
``x[..., idx[j...], ...]`` along ``axis`` (a negative index counts from the end), so no index
map describes it; fusion computes it at its result's positions like a map, its consumers fused
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
from ..registry import OpDef, register
from ..shapes import normalize_axis
from .rules import same_dtype


def take(x, indices, axis=None, out=None, mode="raise"):
    """``x``'s elements at ``indices`` along ``axis`` (None: of ``x`` flattened)."""
    from .reorders import reshape

    if out is not None or mode != "raise":
        raise HostOnly("take with out= or mode= (NumPy's own call)")
    if axis is None:
        x, axis = reshape(x, -1), 0
    return apply("take", (x, indices), {"axis": axis})


def _norm(ctx, x, index, axis):
    if index.dtype.kind not in "iu":
        raise HostOnly("take with indices that are not integers (NumPy's own call)")
    if x.rank == 0:
        raise ShapeError("cannot take from a zero-dimensional array along an axis")
    return {"axis": normalize_axis(axis, x.rank)}


def _shape(ctx, x, index, axis):
    return (*x[:axis], *index, *x[axis + 1 :])


def _impl(x, index, axis):
    return np.take(x, index, axis=axis)


register(
    OpDef(
        "take",
        "gather",
        take,
        impl=_impl,
        shape_rule=_shape,
        dtype_rule=lambda x, index, **attrs: same_dtype(x),
        normalize=_norm,
        numpy=(np.take,),
    )
)


def take_bounds(e) -> tuple:
    """(index operand, the size of the axis it indexes, that axis) of a ``take`` equation."""
    x, index = e.inputs
    axis = e.params["axis"]
    return index, x.type.shape[axis], axis


__all__ = ["take", "take_bounds"]
