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
from .pycode import INFIX_CODE
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


# the CUDA target's scalar code: {0}, {1} are the operands, already in the ufunc loop's types;
# {T} the loop's result type (pypto/emit/cuda_prelude.py has the ppto_* helpers)
CUDA_CODE = {
    **INFIX_CODE,
    "neg": "(-{0})",
    "positive": "(+{0})",
    "abs": "ppto_abs({0})",
    "sign": "ppto_sign({0})",
    "sqrt": "sqrt({0})",
    "cbrt": "cbrt({0})",
    "square": "({0} * {0})",
    "reciprocal": "ppto_reciprocal({0})",
    "exp": "exp({0})",
    "exp2": "exp2({0})",
    "expm1": "expm1({0})",
    "log": "log({0})",
    "log2": "log2({0})",
    "log10": "log10({0})",
    "log1p": "log1p({0})",
    "sin": "sin({0})",
    "cos": "cos({0})",
    "tan": "tan({0})",
    "arcsin": "asin({0})",
    "arccos": "acos({0})",
    "arctan": "atan({0})",
    "sinh": "sinh({0})",
    "cosh": "cosh({0})",
    "tanh": "tanh({0})",
    "arcsinh": "asinh({0})",
    "arccosh": "acosh({0})",
    "arctanh": "atanh({0})",
    "floor": "floor({0})",
    "ceil": "ceil({0})",
    "trunc": "trunc({0})",
    "rint": "rint({0})",
    "isnan": "isnan({0})",
    "isinf": "isinf({0})",
    "isfinite": "isfinite({0})",
    "signbit": "signbit({0})",
    "logical_not": "(!{0})",
    "invert": "ppto_invert(({T}){0})",
    "floor_divide": "ppto_floordiv({0}, {1})",
    "mod": "ppto_mod({0}, {1})",
    "power": "ppto_power({0}, {1})",
    "maximum": "ppto_maximum({0}, {1})",
    "minimum": "ppto_minimum({0}, {1})",
    "fmax": "ppto_fmax({0}, {1})",
    "fmin": "ppto_fmin({0}, {1})",
    "arctan2": "atan2({0}, {1})",
    "hypot": "hypot({0}, {1})",
    "logaddexp": "ppto_logaddexp({0}, {1})",
    "logaddexp2": "ppto_logaddexp2({0}, {1})",
    "logical_and": "({0} && {1})",
    "logical_or": "({0} || {1})",
    "logical_xor": "((bool){0} != (bool){1})",
    "left_shift": "ppto_lshift({0}, {1})",
    "right_shift": "ppto_rshift({0}, {1})",
    "clamp": "ppto_clip({0}, {1}, {2})",
    "where": "({0} ? {1} : {2})",
    "astype": "ppto_cast<{T}>({0})",
    "copy": "{0}",
}


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
            extra={"cuda_code": CUDA_CODE[name]},
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
        extra={"cuda_code": CUDA_CODE["clamp"]},
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
        extra={
            "numpy_code": lambda args, attrs, shape: f"np.where({', '.join(args)})",
            "cuda_code": CUDA_CODE["where"],
            "array_0d": True,  # an array, 0-d too
        },
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
        # generated code: the same conversion (a helper of the generated module's prelude)
        extra={
            "numpy_code": lambda args, attrs, shape: (
                f"_astype({args[0]}, np.{attrs['dtype'].name})"
            ),
            "cuda_code": CUDA_CODE["astype"],
        },
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
        extra={
            "numpy_code": lambda args, attrs, shape: f"np.copy({args[0]})",
            "cuda_code": CUDA_CODE["copy"],
            "array_0d": True,  # an array, 0-d too
        },
    )
)
