"""Reductions: ``sum prod mean max min any all`` over an axis, a tuple of axes or all axes.

Attributes after normalization: ``axis`` (sorted tuple of non-negative axes), ``keepdims``, and
``dtype`` (the accumulator/result dtype asked for, or None) for sum, prod and mean.
"""

from __future__ import annotations

import functools

import numpy as np

from ..api import apply, current_site, no_out
from ..dtypes import to_dtype
from ..errors import execution_error
from ..registry import OpDef, register
from ..shapes import Breach, normalize_axes
from .rules import accumulate_dtype, as_dtype


def _reduced_shape(ctx, shape, axis, keepdims, **attrs):
    if keepdims:
        return tuple(1 if i in axis else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axis)


def _normalize(ctx, t, axis=None, keepdims=False, scalar_compat=True, identity=None, **attrs):
    out = {"axis": normalize_axes(axis, t.rank, scalar_compat), "keepdims": bool(keepdims)}
    if identity is not None:  # max, min: NumPy raises for an empty axis (whatever else is)
        text = f"zero-size array to reduction operation {identity} which has no identity"
        breach = Breach(ValueError, text, site=current_site())
        for a in out["axis"]:
            if not ctx.checked(breach, ctx.ge, t.shape[a], 1):
                raise execution_error(ValueError(text), text)
    if "dtype" in attrs:
        dt = attrs["dtype"]
        out["dtype"] = None if dt is None else to_dtype(dt, "dtype")
    return out


def _mean_dtype(key, dtype=None, **attrs):
    if dtype is not None:
        return dtype
    dt = as_dtype(key)
    return np.dtype(np.float64) if dt.kind in "biu" else dt


# how partial results combine (NumPy's ufunc; its identity is the empty reduction's value,
# None where NumPy raises for an empty axis: max, min)
COMBINE = {
    "sum": np.add,
    "prod": np.multiply,
    "mean": np.add,
    "max": np.maximum,
    "min": np.minimum,
    "any": np.logical_or,
    "all": np.logical_and,
}


def _reduction(name, numpy_fns, dtype_rule, aliases, with_dtype: bool, doc: str):
    impl = numpy_fns[0]
    if with_dtype:

        def api(a, axis=None, dtype=None, out=None, keepdims=False):
            no_out(out, name)
            return apply(name, (a,), {"axis": axis, "dtype": dtype, "keepdims": keepdims})

    else:

        def api(a, axis=None, out=None, keepdims=False):
            no_out(out, name)
            return apply(name, (a,), {"axis": axis, "keepdims": keepdims})

    api.__name__ = api.__qualname__ = name
    api.__doc__ = doc
    register(
        OpDef(
            name,
            "reduce",
            api,
            impl=impl,
            shape_rule=_reduced_shape,
            dtype_rule=dtype_rule,
            # NumPy's ufunc reductions take axis 0 / -1 on a 0-d array; np.mean does not
            normalize=functools.partial(
                _normalize,
                scalar_compat=name != "mean",
                identity=None if COMBINE[name].identity is not None else COMBINE[name].__name__,
            ),
            numpy=tuple(numpy_fns),
            aliases=aliases,
            combine=COMBINE[name],
        )
    )


_reduction(
    "sum",
    (np.sum,),
    accumulate_dtype,
    ("reduce_sum",),
    True,
    "Sum over ``axis`` (int, tuple or None for all); small ints accumulate in int64.",
)
_reduction(
    "prod",
    (np.prod,),
    accumulate_dtype,
    ("reduce_prod",),
    True,
    "Product over ``axis``; small ints accumulate in int64.",
)
_reduction(
    "mean",
    (np.mean,),
    _mean_dtype,
    ("reduce_mean",),
    True,
    "Mean over ``axis``; integers give float64.",
)
_reduction(
    "max",
    (np.max, np.amax),
    lambda key, **a: as_dtype(key),
    ("reduce_max", "amax"),
    False,
    "Maximum over ``axis`` (NaN propagates; empty raises at run time).",
)
_reduction(
    "min",
    (np.min, np.amin),
    lambda key, **a: as_dtype(key),
    ("reduce_min", "amin"),
    False,
    "Minimum over ``axis`` (NaN propagates; empty raises at run time).",
)
_reduction(
    "any",
    (np.any,),
    lambda key, **a: np.dtype(bool),
    ("reduce_any",),
    False,
    "Whether any element over ``axis`` is true.",
)
_reduction(
    "all",
    (np.all,),
    lambda key, **a: np.dtype(bool),
    ("reduce_all",),
    False,
    "Whether all elements over ``axis`` are true.",
)
