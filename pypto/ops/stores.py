"""``store``: slice assignment as a value (``A[1:-1] = v`` makes a new A).

The IR is functional: an in-place write ``A[index] = value`` becomes ``A2 = store(A, value)``
with the normalized basic index as an attribute; later reads of A read A2. The value is
broadcast to the indexed region and cast to A's dtype as NumPy's ``__setitem__`` does (unsafe
casting). Overlapping reads (``A[1:] = A[:-1]``) are correct by construction: the right-hand
side is a value computed before the store. Front ends write the final value of an argument back
into the caller's array, so callers see NumPy's in-place behaviour.
"""

from __future__ import annotations

import numpy as np

from ..api import apply
from ..errors import ShapeError
from ..lower.index_map import getitem_map
from ..registry import OpDef, register
from ..shapes import fits
from .indexing import getitem_shape, normalize_index
from .reorders import same_layout
from .rules import as_dtype


def store(base, value, index):
    """``base`` with ``base[index] = value`` applied (a new value; ``base`` is unchanged)."""
    return apply("store", (base, value), {"index": index})


def _normalize(ctx, base, value, index):
    index = normalize_index(ctx, base.shape, index)
    region = getitem_shape(ctx, base.shape, index)
    # NumPy broadcasts the value to the region; extra leading axes of size 1 are allowed
    extra = value.rank - len(region)
    if extra > 0 and any(d != 1 for d in value.shape[:extra]):
        raise ShapeError(
            f"could not broadcast input array from shape {ctx.show(value.shape)} into shape "
            f"{ctx.show(region)}"
        )
    for d, r in zip(reversed(value.shape), reversed(region)):
        if not fits(ctx, d, r):
            raise ShapeError(
                f"could not broadcast input array from shape {ctx.show(value.shape)} into "
                f"shape {ctx.show(region)}"
            )
    return {"index": index}


def _impl(base, value, index):
    out = np.array(base, copy=True)
    out[index] = value
    return out if out.ndim or isinstance(base, np.ndarray) else out[()]


register(
    OpDef(
        "store",
        "reorder",
        store,
        impl=_impl,
        shape_rule=lambda ctx, base, value, index: base,
        dtype_rule=lambda base, value, index: as_dtype(base),
        normalize=_normalize,
        # the base positions each element of the region (the value broadcast to it) goes to
        index_map=lambda e, same: getitem_map(e.params["index"], e.inputs[0].type.rank),
        layout=same_layout,  # the base's order of axes
    )
)
