"""Basic indexing normalized: ``x[1:-1, ::2, None, ..., i]`` with sizes that may be symbolic.

The normalized index is a tuple with one item per consumed or inserted axis:

* a ``Dim`` (int or symbolic): an integer index, already non-negative and in bounds;
* ``SliceSpec(start, step, length)``: a slice, start in bounds when length > 0;
* ``None``: a new axis of size 1.

``...`` is expanded and trailing axes are filled with full slices. Out-of-range slice bounds are
clamped as Python does; an integer index out of bounds raises IndexError as NumPy does. When a
bound is compared with a symbolic size, the answer is decided by the ShapeContext (and guarded).
Advanced indexing (integer arrays, boolean masks) is refused: its result's size depends on data.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..errors import IndexingError, SliceStepError, UnsupportedError
from ..shapes import Breach
from ..symbolic import Dim, Expr, evaluate, floordiv


@dataclass(frozen=True, repr=False)
class SliceSpec:
    start: Dim
    step: int
    length: Dim

    def resolve(self, env) -> slice:
        """The Python slice with the same elements, for concrete sizes."""
        start, length = evaluate(self.start, env), evaluate(self.length, env)
        if length <= 0:
            return slice(0, 0, 1)
        stop = start + self.step * length
        return slice(start, stop if stop >= 0 else None, self.step)

    def __repr__(self):
        stop = self.start + self.step * self.length
        stop_text = "" if self.step < 0 and stop == -1 else str(stop)
        return f"{self.start}:{stop_text}" + (f":{self.step}" if self.step != 1 else "")


def _as_int(item):
    if isinstance(item, Expr):
        return item
    if isinstance(item, (bool, np.bool_)):
        return None
    try:
        return operator.index(item)
    except TypeError:
        return None


def check_supported(item):
    if item is None or item is Ellipsis or isinstance(item, (slice, SliceSpec)):
        return
    if _as_int(item) is not None:
        return
    if hasattr(item, "_node"):  # a PyPTO tensor: a mask or an index array
        raise UnsupportedError(
            "indexing with a tensor (boolean-mask indexing or an index array): the result's "
            "size would depend on the data",
            hint="use np.where(mask, x, other) to select elementwise",
        )
    if isinstance(item, (bool, np.bool_)) or (
        isinstance(item, np.ndarray) and item.dtype == np.dtype(bool)
    ):
        raise UnsupportedError(
            "boolean-mask indexing (its result's size depends on the data)",
            hint="use np.where(mask, x, other) to select elementwise",
        )
    if isinstance(item, (list, np.ndarray)):
        raise UnsupportedError(
            "indexing with an array (advanced indexing)",
            hint="use basic indexing: ints, slices, None and ...",
        )
    raise IndexingError(
        "only integers, slices (`:`), ellipsis (`...`) and None (`np.newaxis`) are valid "
        f"indices, not {item!r}"
    )


def normalize_index(ctx, shape: tuple, index) -> tuple:
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        check_supported(item)
    if sum(item is Ellipsis for item in items) > 1:
        raise IndexingError("an index can only have a single ellipsis ('...')")
    consuming = sum(1 for item in items if item is not None and item is not Ellipsis)
    if consuming > len(shape):
        raise IndexingError(
            f"too many indices for array: array is {len(shape)}-dimensional, "
            f"but {consuming} were indexed"
        )
    fill = (slice(None),) * (len(shape) - consuming)
    ellipsis = any(i is Ellipsis for i in items)
    if ellipsis:
        at = next(k for k, i in enumerate(items) if i is Ellipsis)
        items = items[:at] + fill + items[at + 1 :]
    else:
        items = items + fill
    out, axis = [], 0
    for item in items:
        if item is None:
            out.append(None)
            continue
        n = shape[axis]
        if isinstance(item, SliceSpec):
            out.append(item)  # already normalized
        elif isinstance(item, slice):
            out.append(_slice(ctx, item, n))
        else:
            out.append(_integer(ctx, _as_int(item), n, axis))
        axis += 1
    if ellipsis and all(not isinstance(i, SliceSpec) and i is not None for i in out):
        out.append(Ellipsis)  # x[0, 1, ...] is a 0-d view (and stores into it broadcast)
    return tuple(out)


def _integer(ctx, i: Dim, n: Dim, axis: int) -> Dim:
    def oob():
        return IndexingError(
            f"index {i} is out of bounds for axis {axis} with size {ctx.show_dim(n)}"
        )

    from ..api import current_site  # (the API imports the ops)

    breach = Breach(
        IndexError,
        f"index {{}} is out of bounds for axis {axis} with size {{}}",
        (i, n),
        current_site(),
    )
    if ctx.ge(i, 0):
        if not ctx.checked(breach, ctx.ge, n, i + 1):
            raise oob()
        return i
    if not ctx.checked(breach, ctx.ge, n + i, 0):
        raise oob()
    return n + i


def _bound(ctx, b, n: Dim, lo: int, hi: Dim) -> Dim:
    """A slice bound made non-negative and clamped to [lo, hi] (Python's slice.indices)."""
    b = int(b) if isinstance(b, (bool, np.bool_)) else _as_int(b)  # x[True:] is x[1:]
    if b is None:
        raise IndexingError("slice indices must be integers or None")
    if not ctx.ge(b, 0):
        b = n + b
        return b if ctx.ge(b, lo) else lo
    return b if ctx.ge(hi, b) else hi


def _slice(ctx, s: slice, n: Dim) -> SliceSpec:
    step = 1 if s.step is None else _as_int(s.step)
    if not isinstance(step, int):
        raise UnsupportedError("a slice step must be a constant integer")
    if step == 0:
        raise SliceStepError("slice step cannot be zero")
    if step > 0:
        start = 0 if s.start is None else _bound(ctx, s.start, n, 0, n)
        stop = n if s.stop is None else _bound(ctx, s.stop, n, 0, n)
        span = stop - start
    else:
        start = n - 1 if s.start is None else _bound(ctx, s.start, n, -1, n - 1)
        stop = -1 if s.stop is None else _bound(ctx, s.stop, n, -1, n - 1)
        span = start - stop
    if not ctx.ge(span, 0):
        span = 0
    length = span if abs(step) == 1 else floordiv(span + abs(step) - 1, abs(step))
    if isinstance(start, int) and start < 0:  # empty reversed slice of an empty axis
        start = 0
    return SliceSpec(start, step, length)


def getitem_shape(ctx, shape, index):
    out, axis = [], 0
    for item in index:
        if item is Ellipsis:
            continue
        if item is None:
            out.append(1)
            continue
        if isinstance(item, SliceSpec):
            out.append(item.length)
        axis += 1
    return tuple(out)
