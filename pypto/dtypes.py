"""Dtypes PyPTO supports, their short names, and NumPy 2 promotion (NEP 50).

Python scalars are *weak*: ``float32_array * 2.0`` stays float32. A weak operand is described to
the dtype rules by its Python type (``int``, ``float`` or ``complex``), exactly as
``np.ufunc.resolve_dtypes`` expects, so promotion is NumPy's own and never re-implemented here.
"""

from __future__ import annotations

import numpy as np

from .errors import DTypeError

SUPPORTED = tuple(
    np.dtype(t)
    for t in (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)
_SHORT = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
}
_WEAK_DTYPE = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}
_WEAK_PROBE = {bool: False, int: 0, float: 0.0, complex: 0j}

# The descriptor of an operand as dtype rules see it: a dtype, or a Python type when weak.
DKey = "np.dtype | type"


def short_name(dtype: np.dtype) -> str:
    return _SHORT.get(dtype.name, dtype.name)


def to_dtype(x, what: str = "dtype") -> np.dtype:
    """Normalize anything NumPy accepts as a dtype; refuse what PyPTO does not support."""
    try:
        dt = np.dtype(x)
    except TypeError as e:
        raise DTypeError(f"{what}: {x!r} is not a dtype ({e})") from None
    if dt not in SUPPORTED:
        raise DTypeError(
            f"{what}: dtype {dt} is not supported",
            hint="PyPTO supports bool, signed and unsigned integers, float16/32/64, complex64/128",
        )
    return dt


def python_scalar_type(value) -> type | None:
    """``int``, ``float`` or ``complex`` for a weak Python scalar; ``bool`` for a Python bool
    (NumPy treats it as np.bool_, which is already the lowest type); None otherwise."""
    for t in (bool, int, float, complex):
        if type(value) is t:
            return t
    return None


def weak_dtype(pytype: type) -> np.dtype:
    """The dtype NumPy gives a weak Python scalar when nothing stronger is around."""
    return _WEAK_DTYPE[pytype]


def weak_pytype(dtype: np.dtype) -> type:
    """The Python type a weak value of this default dtype stands for."""
    return {"b": bool, "i": int, "f": float, "c": complex}[dtype.kind]


def result_type(*keys) -> np.dtype:
    """np.result_type of operand descriptors, weak ones as Python values (NEP 50)."""
    args = [_WEAK_PROBE[k] if isinstance(k, type) else k for k in keys]
    return np.result_type(*args)


def ufunc_loop(ufunc: np.ufunc, keys) -> tuple:
    """The loop NumPy runs for operand descriptors: its operand and result dtypes. A Python
    bool (``x * (a > 0)``) is NumPy's bool, the lowest kind (any other dtype wins)."""
    keys = tuple(np.dtype(bool) if k is bool else k for k in keys)
    return ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)


def ufunc_out_dtype(ufunc: np.ufunc, keys, name: str) -> np.dtype:
    """Output dtype of ``ufunc`` for operand descriptors, as NumPy's loop resolution decides."""
    try:
        resolved = ufunc_loop(ufunc, keys)
    except Exception as e:  # NumPy raises TypeError subclasses (no loop, bool negative, ...)
        shown = ", ".join(
            k.__name__ + " (Python scalar)" if isinstance(k, type) else str(k) for k in keys
        )
        raise DTypeError(f"`{name}` does not support {shown}: {e}") from None
    return resolved[ufunc.nin]


def is_integer_or_bool(dt: np.dtype) -> bool:
    return dt.kind in "biu"
