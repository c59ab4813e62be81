"""The CUDA target's table of map ops: the scalar C expression each one computes.

Owned by the target (the registry says what an op is; each target says how it renders it): a
new elementwise op is a row in ops/maps.py and, where CUDA needs it, a row here.
"""

from __future__ import annotations

from ..ops.pycode import INFIX_CODE

# The scalar C code of each built-in map op: {0}, {1} are the operands, already in the ufunc
# loop's types; {T} the loop's result type (cuda_prelude.py has the ppto_* helpers). A user
# operator gives its own (``register_operator(cuda=...)``, ``OpDef.cuda``).
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
    "heaviside": "({0} != {0} ? {0} : ({0} < 0 ? ({T})0 : ({0} > 0 ? ({T})1 : {1})))",
    "copysign": "copysign({0}, {1})",
    "logical_and": "({0} && {1})",
    "logical_or": "({0} || {1})",
    "logical_xor": "((bool){0} != (bool){1})",
    "left_shift": "ppto_lshift({0}, {1})",
    "right_shift": "ppto_rshift({0}, {1})",
    "clamp": "ppto_clip({0}, {1}, {2})",
    "where": "({0} ? {1} : {2})",
    "astype": "ppto_cast<{T}>({0})",
    "copy": "{0}",
    "full": "(({T}){0})",  # the value, broadcast, in the result's type
}

# the functors of ppto_block_reduce (cuda_prelude.py) by the ufunc that combines
FUNCTORS = {
    "add": "ppto_sum_op",
    "multiply": "ppto_prod_op",
    "maximum": "ppto_max_op",
    "minimum": "ppto_min_op",
    "logical_or": "ppto_or_op",
    "logical_and": "ppto_and_op",
}


def cuda_code(op) -> str | None:
    """The C expression template of a map op: the table's, or a user operator's own."""
    return CUDA_CODE.get(op.name) if op.builtin else op.cuda


__all__ = ["CUDA_CODE", "FUNCTORS", "cuda_code"]
