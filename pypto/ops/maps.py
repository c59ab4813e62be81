"""Elementwise (map) ops: one registry entry each, most of them backed by a NumPy ufunc.

A ufunc-backed entry takes its dtype rule from the ufunc's own loop resolution
(``ufunc.resolve_dtypes``), so promotion, NEP 50 weak scalars and refusals (``-`` on bool) are
exactly NumPy's; its shape rule is broadcasting.
"""

from __future__ import annotations

import numpy as np

from ..api import apply
from ..dtypes import result_type, to_dtype
from ..errors import UnsupportedError
from ..registry import OpDef, register
from .rules import broadcast_rule, same_dtype, same_shape, ufunc_dtype

# name, ufunc, aliases
UNARY = [
    ("neg", np.negative, ("negative",)),
    ("positive", np.positive, ()),
    ("abs", np.absolute, ("absolute",)),
    ("sign", np.sign, ()),
    ("sqrt", np.sqrt, ()),
    ("cbrt", np.cbrt, ()),
    ("square", np.square, ()),
    ("reciprocal", np.reciprocal, ()),
    ("exp", np.exp, ()),
    ("exp2", np.exp2, ()),
    ("expm1", np.expm1, ()),
    ("log", np.log, ()),
    ("log2", np.log2, ()),
    ("log10", np.log10, ()),
    ("log1p", np.log1p, ()),
    ("sin", np.sin, ()),
    ("cos", np.cos, ()),
    ("tan", np.tan, ()),
    ("arcsin", np.arcsin, ()),
    ("arccos", np.arccos, ()),
    ("arctan", np.arctan, ()),
    ("sinh", np.sinh, ()),
    ("cosh", np.cosh, ()),
    ("tanh", np.tanh, ()),
    ("arcsinh", np.arcsinh, ()),
    ("arccosh", np.arccosh, ()),
    ("arctanh", np.arctanh, ()),
    ("floor", np.floor, ()),
    ("ceil", np.ceil, ()),
    ("trunc", np.trunc, ()),
    ("rint", np.rint, ()),
    ("isnan", np.isnan, ()),
    ("isinf", np.isinf, ()),
    ("isfinite", np.isfinite, ()),
    ("signbit", np.signbit, ()),
    ("logical_not", np.logical_not, ()),
    ("invert", np.invert, ("bitwise_not",)),
]

BINARY = [
    ("add", np.add, ()),
    ("subtract", np.subtract, ("sub",)),
    ("multiply", np.multiply, ("mul",)),
    ("divide", np.divide, ("true_divide", "div")),
    ("floor_divide", np.floor_divide, ()),
    ("mod", np.remainder, ("remainder",)),
    ("power", np.power, ("pow",)),
    ("maximum", np.maximum, ()),
    ("minimum", np.minimum, ()),
    ("fmax", np.fmax, ()),
    ("fmin", np.fmin, ()),
    ("arctan2", np.arctan2, ()),
    ("hypot", np.hypot, ()),
    ("logaddexp", np.logaddexp, ()),
    ("logaddexp2", np.logaddexp2, ()),
    ("heaviside", np.heaviside, ()),
    ("copysign", np.copysign, ()),
    ("logical_and", np.logical_and, ()),
    ("logical_or", np.logical_or, ()),
    ("logical_xor", np.logical_xor, ()),
    ("bitwise_and", np.bitwise_and, ()),
    ("bitwise_or", np.bitwise_or, ()),
    ("bitwise_xor", np.bitwise_xor, ()),
    ("left_shift", np.left_shift, ()),
    ("right_shift", np.right_shift, ()),
    ("equal", np.equal, ()),
    ("not_equal", np.not_equal, ()),
    ("less", np.less, ()),
    ("less_equal", np.less_equal, ()),
    ("greater", np.greater, ()),
    ("greater_equal", np.greater_equal, ()),
]


def _ufunc_op(name: str, ufunc: np.ufunc, aliases: tuple) -> None:
    if ufunc.nin == 1:

        def api(x):
            return apply(name, (x,))

    else:

        def api(x1, x2):
            return apply(name, (x1, x2))

    api.__name__ = api.__qualname__ = name
    api.__doc__ = f"Elementwise ``np.{ufunc.__name__}``."
    register(
        OpDef(
            name,
            "map",
            api,
            impl=ufunc,
            shape_rule=broadcast_rule,
            dtype_rule=ufunc_dtype(ufunc, name),
            numpy=(ufunc,),
            aliases=aliases,
            ufunc=ufunc,
        )
    )


for _name, _ufunc, _aliases in UNARY + BINARY:
    _ufunc_op(_name, _ufunc, _aliases)


# -- the maps that are not plain ufunc calls -------------------------------------------------------
_CLIP_UFUNC = np._core.umath.clip  # what np.clip calls when both bounds are given


def clamp(x, lo, hi):
    """``np.clip`` with both bounds given: min(max(x, lo), hi), NaN propagating. As np.clip, a
    Python int bound beyond an integer array's range is no bound."""
    return apply("clamp", (x, lo, hi))


register(
    OpDef(
        "clamp",
        "map",
        clamp,
        impl=np.clip,  # not the raw ufunc: np.clip drops out-of-range Python int bounds
        shape_rule=broadcast_rule,
        dtype_rule=ufunc_dtype(_CLIP_UFUNC, "clamp"),
        ufunc=_CLIP_UFUNC,
    )
)


def where(condition, x=None, y=None):
    """``np.where(condition, x, y)``: x where condition is true, else y (broadcast)."""
    if x is None or y is None:
        raise UnsupportedError(
            "np.where with only a condition returns indices (a size known only from the data)",
            hint="pass both values: np.where(condition, x, y)",
        )
    return apply("where", (condition, x, y))


def _where_dtype(cond, x, y, **attrs):
    return result_type(x, y)


register(
    OpDef(
        "where",
        "map",
        where,
        impl=np.where,
        shape_rule=broadcast_rule,
        dtype_rule=_where_dtype,
        numpy=(np.where,),
        array_0d=True,  # an array, 0-d too
    )
)


def astype(x, dtype):
    """``x.astype(dtype)``: convert elementwise, as NumPy casts (unsafe casting)."""
    return apply("astype", (x,), {"dtype": dtype})


def _astype_impl(x, dtype):
    if isinstance(x, (np.ndarray, np.generic)):
        return x.astype(dtype)
    return np.asarray(x).astype(dtype)[()]  # a Python number becomes a NumPy scalar


register(
    OpDef(
        "astype",
        "map",
        astype,
        impl=_astype_impl,
        shape_rule=same_shape,
        dtype_rule=lambda key, dtype: dtype,
        normalize=lambda ctx, t, dtype: {"dtype": to_dtype(dtype, "astype")},
    )
)


def copy(x):
    """``np.copy(x)`` / ``x.copy()``: the same values (a lazy chain never aliases)."""
    return apply("copy", (x,))


register(
    OpDef(
        "copy",
        "map",
        copy,
        impl=np.copy,
        shape_rule=same_shape,
        dtype_rule=same_dtype,
        numpy=(np.copy,),
        array_0d=True,  # an array, 0-d too
    )
)
