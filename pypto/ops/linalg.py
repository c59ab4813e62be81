"""``np.linalg.norm``: vector norms of any order and the matrix norms that need no
decomposition (Frobenius, 1, -1, inf, -inf), following NumPy's code step for step; the
default (the 2-norm of the flattened array) is ``sqrt(x @ x)`` as NumPy computes it.

Matrix norms of order 2, -2 and 'nuc' (singular values) and complex values run as NumPy's
call (a graph break).
"""

from __future__ import annotations

import math

import numpy as np

from ..api import apply, lift
from ..errors import ArgumentError, HostOnly, ShapeError
from ..registry import OpDef, register
from ..shapes import normalize_axis
from .composites import _op
from .creation import full
from .reorders import concatenate, reshape


def norm(x, ord=None, axis=None, keepdims=False):
    """The norm of ``x`` (``np.linalg.norm``): of the flattened array, or along ``axis``
    (an int: vector norms; a pair: matrix norms)."""
    if axis is not None and not isinstance(axis, tuple):
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise ArgumentError("'axis' must be None, an integer or a tuple of integers")
        axis = (int(axis),)
    if isinstance(ord, str) and ord not in ("fro", "f", "nuc"):
        raise ShapeError(f"Invalid norm order '{ord}'")
    return apply("norm", (x,), {"ord": ord, "axis": axis, "keepdims": bool(keepdims)})


def _max0(t, axis):
    """``t.max(axis, initial=0)``: a zero in front of every slice (empty ones give 0)."""
    zero = full(tuple(1 if k == axis else d for k, d in enumerate(t.shape)), 0, dtype=t.dtype)
    return concatenate([zero, t], axis=axis).max(axis=axis)


def _norm(x, ord, axis, keepdims):
    x = lift(x)
    if x.dtype.kind == "c":
        raise HostOnly("np.linalg.norm of complex values")
    if x.dtype.kind not in "f":
        x = x.astype(np.float64)
    nd = x.ndim
    if axis is None and (
        ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1)
    ):
        flat = reshape(x, (-1,))
        ret = _op("sqrt")(_op("dot")(flat, flat))
        return reshape(ret, (1,) * nd) if keepdims else ret
    axes = tuple(range(nd)) if axis is None else axis
    if len(axes) == 1:
        ax = normalize_axis(axes[0], nd)
        ret = _vector_norm(x, ord, ax)
        if keepdims:
            ret = _op("expand_dims")(ret, ax)
        return ret
    if len(axes) == 2:
        row, col = (normalize_axis(a, nd) for a in axes)
        if row == col:
            raise ShapeError("Duplicate axes given.")
        ret = _matrix_norm(x, ord, row, col)
        if keepdims:
            ret = _op("expand_dims")(ret, tuple(sorted((row, col))))
        return ret
    raise ShapeError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, ax):
    absx = _op("absolute")(x)
    if ord == math.inf:
        return _max0(absx, ax)
    if ord == -math.inf:
        return absx.min(axis=ax)
    if ord == 0:
        return _op("not_equal")(x, 0).astype(x.dtype).sum(axis=ax)
    if ord == 1:
        return absx.sum(axis=ax)
    if ord is None or ord == 2:
        return _op("sqrt")((x * x).sum(axis=ax))
    if isinstance(ord, str):
        raise ShapeError(f"Invalid norm order '{ord}' for vectors")
    ret = (absx**ord).sum(axis=ax)
    return _op("power")(ret, np.reciprocal(ord, dtype=ret.dtype))


def _matrix_norm(x, ord, row, col):
    if ord in (2, -2, "nuc"):
        raise HostOnly(f"np.linalg.norm of order {ord!r} of matrices (singular values)")
    absx = _op("absolute")(x)
    if ord in (1, -1):
        sums = absx.sum(axis=row)
        c = col - 1 if col > row else col
        return _max0(sums, c) if ord == 1 else sums.min(axis=c)
    if ord in (math.inf, -math.inf):
        sums = absx.sum(axis=col)
        r = row - 1 if row > col else row
        return _max0(sums, r) if ord > 0 else sums.min(axis=r)
    if ord in (None, "fro", "f"):
        return _op("sqrt")((x * x).sum(axis=(row, col)))
    raise ShapeError("Invalid norm order for matrices.")


norm.__name__ = norm.__qualname__ = "norm"
register(
    OpDef(
        "norm",
        "composite",
        norm,
        impl=np.linalg.norm,
        expand=_norm,
        numpy=(np.linalg.norm,),
    )
)
