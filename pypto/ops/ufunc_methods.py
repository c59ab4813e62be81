"""The ufunc methods ``outer``, ``reduce`` and ``accumulate`` as the ops they are.

``np.add.reduce(x, axis)`` is ``np.sum`` with NumPy's ufunc default ``axis=0`` (``np.sum``
itself calls it); likewise ``multiply`` -> ``prod``, ``maximum`` -> ``max``, ``minimum`` ->
``min``, ``logical_and`` -> ``all``, ``logical_or`` -> ``any``; ``np.add.accumulate`` is
``np.cumsum`` along axis 0 (``multiply``: ``cumprod``). ``np.f.outer(a, b)`` is ``f`` of ``a``
with ``b.ndim`` new axes against ``b``. Anything else (another ufunc's reduce, ``initial=``,
``where=``, ``out=``, ``ufunc.at``) raises HostOnly: the tracer runs it as NumPy's call.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..api import current_builder, lift
from ..errors import HostOnly, UnsupportedError
from ..registry import REGISTRY

_NO_VALUE = object()


def _op_of(method: str, ufunc) -> str | None:
    """The op ``ufunc.method`` is, as the registry describes its ops: the reduction whose
    partial results ``ufunc`` combines (mean's ``add`` is a sum, then a division), the scan
    whose step it is."""
    for op in REGISTRY.ops():
        reduce = method == "reduce" and op.kind == "reduce" and op.name != "mean"
        if reduce and op.combine is ufunc:
            return op.name
        if method == "accumulate" and op.kind == "scan" and op.scan_step is ufunc:
            return op.name
    return None


def _reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
    return {"axis": axis, "dtype": dtype, "out": out, "keepdims": keepdims}, (
        initial is _NO_VALUE and where is True
    )


def _accumulate(array, axis=0, dtype=None, out=None):
    return {"axis": axis, "dtype": dtype, "out": out}, True


def _outer(a, b, /):
    return {}, True


_SIGNATURES = {"reduce": _reduce, "accumulate": _accumulate, "outer": _outer}


def ufunc_method(ufunc: np.ufunc, method: str, args: tuple, kwargs: dict):
    """The op ``ufunc.method(*args, **kwargs)`` stands for, applied; HostOnly if there is none."""
    what = f"np.{ufunc.__name__}.{method}"
    parse = _SIGNATURES.get(method)
    if parse is None:
        raise HostOnly(f"{what} (PyPTO has no op for it)")
    try:
        params, plain = parse(*args, **kwargs)
    except TypeError as e:
        raise HostOnly(f"{what}: {e}") from None
    if method == "outer":
        op = REGISTRY.for_numpy(ufunc)
        if op is None or op.kind != "map":
            raise HostOnly(f"{what} (PyPTO has no op for np.{ufunc.__name__})")
        if current_builder() is None:
            raise UnsupportedError(
                f"{what} of lazy tensors (it needs the rank, known when the chain runs)",
                hint="use @ppto.compile, or index: a[:, None] * b",
            )
        a, b = lift(args[0]), lift(args[1])
        return op.api(a[(Ellipsis,) + (None,) * b.ndim], b)
    name = _op_of(method, ufunc)
    if name is None or not plain or params.pop("out") is not None:
        raise HostOnly(f"{what} with these arguments")
    op = REGISTRY[name]
    takes_dtype = "dtype" in inspect.signature(op.api).parameters
    if not takes_dtype and params.pop("dtype") is not None:
        raise HostOnly(f"{what} with dtype=")
    return op.api(args[0], **params)


REGISTRY.ufunc_method = ufunc_method  # (for the lazy API's __array_ufunc__)

__all__ = ["ufunc_method"]
