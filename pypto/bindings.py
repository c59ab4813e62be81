"""What a value given to PyPTO is, abstractly: the checks and descriptions shared by the lazy
API's ``run`` (tracer.py) and ``@ppto.compile`` (compile.py)."""

from __future__ import annotations

import numpy as np

from .dtypes import to_dtype
from .errors import BindingError, PyptoError
from .symbolic import Dim, Sym


def is_device_array(value) -> bool:
    """A GPU array (CuPy's, or anything with ``__cuda_array_interface__``): the CUDA target."""
    if type(value) is np.ndarray:  # (the common case, asked per argument per call)
        return False
    return all(hasattr(value, a) for a in ("__cuda_array_interface__", "dtype", "shape"))


def is_dask_array(value) -> bool:
    """A dask array (``dask.array.Array``): the Dask target (emit/dask_target.py)."""
    if type(value) is np.ndarray:
        return False
    return type(value).__module__.startswith("dask.") and hasattr(value, "__dask_graph__")


def check_dask(name: str, value, what: str = "argument") -> None:
    """A dask array's chunk sizes must be known (PyPTO plans with its shape)."""
    if any(c != c for cs in value.chunks for c in cs):  # NaN: not known
        raise BindingError(
            f"{what} {name!r} is a dask array of unknown chunk sizes",
            hint="call x.compute_chunk_sizes() first",
            code="PPT406",
        )


def device_module(values):
    """The CuPy module for the first GPU array among ``values``, or None (all on the host). The
    emulator's stand-in marks its arrays with the module to use (``_pypto_cupy``)."""
    for v in values:
        if is_device_array(v):
            found = getattr(v, "_pypto_cupy", None)
            if found is not None:
                return found
            import importlib

            try:
                return importlib.import_module("cupy")
            except ImportError:
                raise BindingError(
                    f"a GPU array ({type(v).__module__}.{type(v).__name__}) was given but CuPy "
                    "is not installed",
                    hint="pip install pypto-compiler[cuda]",
                    code="PPT406",
                ) from None
    return None


def refuse_foreign(name: str, value, what: str = "input") -> None:
    """np.matrix, and GPU arrays without CuPy's ``shape``/``dtype``, are refused by name (GPU
    arrays run on the CUDA target)."""
    if hasattr(value, "__cuda_array_interface__") and not is_device_array(value):
        raise BindingError(
            f"{what} {name!r} is a GPU array ({type(value).__module__}.{type(value).__name__}) "
            "without a dtype and shape",
            hint="pass a CuPy array (cupy.asarray(x) wraps any __cuda_array_interface__ array)",
            code="PPT406",
        )
    if isinstance(value, np.matrix):
        raise BindingError(
            f"{what} {name!r} is an np.matrix", hint="pass np.asarray(m)", code="PPT406"
        )
    if isinstance(value, np.ma.MaskedArray) or (
        isinstance(value, np.ndarray) and _overrides_numpy(type(value))
    ):
        raise BindingError(
            f"{what} {name!r} is a {type(value).__module__}.{type(value).__name__}, whose "
            "operations are not NumPy's (a masked array's mask would be dropped)",
            hint="pass np.asarray(x) (or x.filled(value) for a masked array) if that is meant",
            code="PPT406",
        )


def _overrides_numpy(cls) -> bool:
    """An ndarray subclass that changes what NumPy's functions and ufuncs do on it."""
    return any(
        getattr(cls, name, None) is not getattr(np.ndarray, name)
        for name in ("__array_ufunc__", "__array_function__")
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
