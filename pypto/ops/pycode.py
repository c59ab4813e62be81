"""Python arithmetic on Python numbers: what a ``weak=True`` equation computes.

A compiled function's ``a / b`` of two float arguments, ``math.sqrt(a)`` or ``n << 40`` is
Python's, not NumPy's: ``a / 0.0`` is a ZeroDivisionError, ``math.sqrt(-1.0)`` a ValueError, a
shift never wraps. The executor and both targets compute such equations with this code.
"""

from __future__ import annotations

import math

import numpy as np

from ..symbolic import bare

# binary ops that are one infix operator, spelled the same in Python and in CUDA C
INFIX = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "equal": "==",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
INFIX_CODE = {name: f"({{0}} {symbol} {{1}})" for name, symbol in INFIX.items()}

# op -> Python's operator or math function; {0}, {1} are the operands. The result is converted
# to the Python type of the equation's (weak) dtype.
PYTHON_CODE = {
    **INFIX_CODE,
    "neg": "(-{0})",
    "positive": "(+{0})",
    "abs": "abs({0})",
    "sqrt": "math.sqrt({0})",
    "exp": "math.exp({0})",
    "expm1": "math.expm1({0})",
    "log": "math.log({0})",
    "log2": "math.log2({0})",
    "log10": "math.log10({0})",
    "log1p": "math.log1p({0})",
    "sin": "math.sin({0})",
    "cos": "math.cos({0})",
    "tan": "math.tan({0})",
    "arcsin": "math.asin({0})",
    "arccos": "math.acos({0})",
    "arctan": "math.atan({0})",
    "sinh": "math.sinh({0})",
    "cosh": "math.cosh({0})",
    "tanh": "math.tanh({0})",
    "floor": "math.floor({0})",
    "ceil": "math.ceil({0})",
    "trunc": "math.trunc({0})",
    "isnan": "math.isnan({0})",
    "isinf": "math.isinf({0})",
    "isfinite": "math.isfinite({0})",
    "invert": "(~{0})",
    "floor_divide": "({0} // {1})",
    "mod": "({0} % {1})",
    "power": "({0} ** {1})",
    "arctan2": "math.atan2({0}, {1})",
    "hypot": "math.hypot({0}, {1})",
    "left_shift": "({0} << {1})",
    "right_shift": "({0} >> {1})",
    "astype": "{0}",  # .item(), math.floor's int: the conversion below
}
PYTHON_TYPES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def python_code(op: str, args, dtype: np.dtype) -> str | None:
    """Python source computing a weak equation of ``op`` on ``args`` (source), or None."""
    template = PYTHON_CODE.get(op)
    if template is None:
        return None
    return f"{PYTHON_TYPES[dtype.kind]}({bare(template.format(*args))})"


_PYTHON_FUNCTIONS: dict = {}


def python_value(op: str, values, dtype: np.dtype):
    """The value of a weak equation, by the same code (None when ``op`` has none)."""
    fn = _PYTHON_FUNCTIONS.get((op, len(values), dtype.kind))
    if fn is None:
        names = [f"a{i}" for i in range(len(values))]
        code = python_code(op, names, dtype)
        if code is None:
            return None
        fn = eval(f"lambda {', '.join(names)}: {code}", {"math": math})
        _PYTHON_FUNCTIONS[(op, len(values), dtype.kind)] = fn
    return fn(*values)


_SAMPLES = {bool: True, int: 1, float: 1.0, complex: 1j}


def python_dtype(op: str, keys) -> np.dtype | None:
    """The dtype of Python's result for operands of these Python types (``True + True`` is
    the int 2, ``1 / 1`` a float), or None where Python has no such operation."""
    template = PYTHON_CODE.get(op)
    if template is None or not all(k in _SAMPLES for k in keys):
        return None
    try:
        value = eval(template.format(*(repr(_SAMPLES[k]) for k in keys)), {"math": math})
    except (TypeError, ValueError, ArithmeticError):
        return None
    return np.dtype(type(value)) if type(value) is not int else np.dtype(np.int64)
