"""Small shape and dtype rules shared by several op entries."""

from __future__ import annotations

import operator

import numpy as np

from ..dtypes import result_type, ufunc_out_dtype, weak_dtype
from ..errors import ArgumentError
from ..shapes import broadcast_shapes
from ..symbolic import Expr


def as_dtype(key) -> np.dtype:
    """An operand descriptor as a dtype (a weak Python type becomes its default dtype)."""
    return weak_dtype(key) if isinstance(key, type) else key


def same_dtype(key, **attrs) -> np.dtype:
    return as_dtype(key)


def promoted_dtype(*keys, **attrs) -> np.dtype:
    return result_type(*keys)


def ufunc_dtype(ufunc: np.ufunc, name: str):
    def rule(*keys, **attrs):
        return ufunc_out_dtype(ufunc, keys, name)

    return rule


def broadcast_rule(ctx, *shapes, **attrs):
    return broadcast_shapes(ctx, *shapes)


def same_shape(ctx, shape, **attrs):
    return shape


def accumulate_dtype(key, dtype=None, **attrs) -> np.dtype:
    """sum, prod, cumsum, cumprod: bool and small integers accumulate in the default integer."""
    if dtype is not None:
        return dtype
    dt = as_dtype(key)
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return np.dtype(np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def size_arg(d):
    """A size given by the user: an int (NumPy integers too) or a symbolic size; not a bool."""
    if isinstance(d, Expr):
        return d
    if isinstance(d, (bool, np.bool_)):
        raise ArgumentError(f"sizes must be integers, not {d!r}")
    try:
        return operator.index(d)
    except TypeError:
        raise ArgumentError(f"sizes must be integers, not {d!r}") from None


def shape_arg(shape) -> tuple:
    """A shape given by the user: one size or a sequence of sizes."""
    return tuple(size_arg(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
