"""What a value given to PyPTO is, abstractly: the checks and descriptions shared by the lazy
API's ``run`` (tracer.py) and ``@ppto.compile`` (compile.py)."""

from __future__ import annotations

import numpy as np

from .dtypes import to_dtype
from .errors import BindingError, PyptoError
from .symbolic import Dim, Sym


def refuse_foreign(name: str, value, what: str = "input") -> None:
    """GPU arrays (until the CUDA backend exists) and np.matrix are refused, by name."""
    if hasattr(value, "__cuda_array_interface__"):
        raise BindingError(
            f"{what} {name!r} is a GPU array ({type(value).__module__}.{type(value).__name__})",
            hint="the CUDA backend is not built yet; pass a NumPy array",
            code="PPT406",
        )
    if isinstance(value, np.matrix):
        raise BindingError(
            f"{what} {name!r} is an np.matrix", hint="pass np.asarray(m)", code="PPT406"
        )


def dtype_of(name: str, dtype, what: str = "input") -> np.dtype:
    """A value's dtype, refused by name when PyPTO does not support it."""
    try:
        return to_dtype(dtype, f"{what} {name!r}")
    except PyptoError as e:
        raise BindingError(e.message, hint=e.hint, code="PPT405") from None


def symbolic_shape(name: str, shape, env: dict) -> tuple[Dim, ...]:
    """Sizes of 1 stay 1 (broadcasting depends on them); others become the symbols ``name.k``,
    whose values go into ``env``."""
    dims = []
    for axis, size in enumerate(shape):
        if size == 1:
            dims.append(1)
        else:
            dims.append(Sym(f"{name}.{axis}"))
            env[f"{name}.{axis}"] = int(size)
    return tuple(dims)
