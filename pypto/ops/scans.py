"""Scans: ``cumsum`` and ``cumprod`` along one axis.

``axis=None`` scans the flattened array, as NumPy does (a reshape, then a scan along axis 0).
A rank-0 input scans as a 1-element vector, as NumPy does. Attributes after normalization:
``axis`` (non-negative int) and ``dtype`` (or None).
"""

from __future__ import annotations

import numpy as np

from ..api import Tensor, apply, no_out
from ..dtypes import to_dtype
from ..registry import OpDef, register
from ..shapes import normalize_axis
from .rules import accumulate_dtype


def _normalize(ctx, t, axis, dtype=None):
    return {
        "axis": normalize_axis(axis, max(t.rank, 1)),
        "dtype": None if dtype is None else to_dtype(dtype, "dtype"),
    }


def _scan_shape(ctx, shape, axis, dtype):
    return shape if shape else (1,)


def _scan(name: str, ufunc_fn, step, doc: str):
    def api(a, axis=None, dtype=None, out=None):
        no_out(out, name)
        if axis is None:  # the flattened array (a number scans as a 1-element vector anyway)
            if isinstance(a, Tensor) or np.ndim(a) > 0:
                a = apply("reshape", (a,), {"shape": (-1,)})
            axis = 0
        return apply(name, (a,), {"axis": axis, "dtype": dtype})

    api.__name__ = api.__qualname__ = name
    api.__doc__ = doc
    register(
        OpDef(
            name,
            "scan",
            api,
            impl=ufunc_fn,
            shape_rule=_scan_shape,
            dtype_rule=accumulate_dtype,
            normalize=_normalize,
            numpy=(ufunc_fn,),
            scan_step=step,  # the binary ufunc a scan applies between neighbours
        )
    )


_scan("cumsum", np.cumsum, np.add, "Cumulative sum along ``axis`` (None: of the flattened array).")
_scan(
    "cumprod",
    np.cumprod,
    np.multiply,
    "Cumulative product along ``axis`` (None: of the flattened array).",
)
