"""Array creation: ``full arange linspace eye`` and the composites built on ``full``
(``zeros ones empty`` and their ``_like`` forms).

Creation ops have no array operands (``full`` and ``linspace`` take their scalar values as
operands, which may be known only at run time); sizes are attributes and may be symbolic.
They are maps over the output's index space. ``np.empty`` is ``np.zeros`` here: its contents are
unspecified in NumPy, and deterministic zeros are one valid choice.
"""

from __future__ import annotations

import math

import numpy as np

from ..api import apply, lift
from ..dtypes import python_scalar_type, result_type, to_dtype
from ..errors import ShapeError, UnsupportedError
from ..registry import OpDef, register
from ..symbolic import Expr, SymFloat, floordiv
from .rules import as_dtype, shape_arg, size_arg


def _dtype_or_none(dtype):
    return None if dtype is None else to_dtype(dtype, "dtype")


# -- full -----------------------------------------------------------------------------------------
def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (dtype: given, or the value's)."""
    return apply("full", (fill_value,), {"shape": shape, "dtype": dtype})


def _full_norm(ctx, value, shape, dtype):
    shape = shape_arg(shape)
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise ShapeError(f"negative dimensions are not allowed: {shape}")
    if value.rank:
        raise UnsupportedError("full with an array fill value", hint="use broadcast_to")
    return {"shape": shape, "dtype": _dtype_or_none(dtype)}


register(
    OpDef(
        "full",
        "map",
        full,
        impl=lambda v, shape, dtype: np.full(shape, v, dtype=dtype),
        shape_rule=lambda ctx, v, shape, dtype: shape,
        dtype_rule=lambda v, shape, dtype: dtype if dtype is not None else as_dtype(v),
        normalize=_full_norm,
        numpy=(np.full,),
        array_0d=True,  # np.full((), v) is a 0-d array
    )
)


def _filled(name, value, doc):
    def api(shape, dtype=float):
        return apply(name, (), {"shape": shape, "dtype": dtype})

    def expand(shape, dtype):
        return full(shape, value, dtype=dtype)

    def like_api(a, dtype=None, shape=None):
        return apply(name + "_like", (a,), {"dtype": dtype, "shape": shape})

    def like_expand(a, dtype, shape):
        a = lift(a)
        return full(a.shape if shape is None else shape, value, a.dtype if dtype is None else dtype)

    for fn, exp, n, np_fn in (
        (api, expand, name, getattr(np, name)),
        (like_api, like_expand, name + "_like", getattr(np, name + "_like")),
    ):
        fn.__name__ = fn.__qualname__ = n
        fn.__doc__ = doc if n == name else f"``np.{n}``: {doc[0].lower()}{doc[1:]}"
        register(OpDef(n, "composite", fn, expand=exp, impl=np_fn, numpy=(np_fn,)))


_filled("zeros", 0, "An array of zeros (default dtype float64).")
_filled("ones", 1, "An array of ones (default dtype float64).")
_filled("empty", 0, "An array with unspecified contents (PyPTO gives zeros).")


def ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
    """``np.ndarray(shape, dtype)``: a new array with unspecified contents (``np.empty``: zeros
    here). Over a ``buffer`` (a view of other memory) or with ``strides``, it is refused."""
    if buffer is not None or strides is not None or offset:
        raise UnsupportedError(
            "np.ndarray over a buffer or with strides (a view of other memory)",
            hint="use np.empty(shape, dtype) for a new array",
        )
    return apply("ndarray", (), {"shape": shape, "dtype": dtype})


register(
    OpDef(
        "ndarray",
        "composite",
        ndarray,
        expand=lambda shape, dtype: full(shape, 0, dtype=dtype),
        impl=lambda shape, dtype: np.empty(shape, dtype),
        numpy=(np.ndarray,),
    )
)


def full_like(a, fill_value, dtype=None, shape=None):
    """An array like ``a`` (shape, dtype) filled with ``fill_value``."""
    return apply("full_like", (a, fill_value), {"dtype": dtype, "shape": shape})


def _full_like(a, fill_value, dtype, shape):
    a = lift(a)
    return full(
        a.shape if shape is None else shape, fill_value, a.dtype if dtype is None else dtype
    )


register(
    OpDef(
        "full_like",
        "composite",
        full_like,
        expand=_full_like,
        impl=np.full_like,
        numpy=(np.full_like,),
    )
)


# -- arange ---------------------------------------------------------------------------------------
def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop): ``np.arange``. Sizes may be symbolic when every
    bound is an integer; float bounds must be constants."""
    if stop is None:
        start, stop = 0, start
    return apply(
        "arange",
        (),
        {"start": start, "stop": stop, "step": 1 if step is None else step, "dtype": dtype},
    )


def _number(v, what):
    if isinstance(v, (Expr, SymFloat, np.number)) or python_scalar_type(v) in (bool, int, float):
        return int(v) if isinstance(v, (bool, np.bool_)) else v
    raise UnsupportedError(
        f"arange with a {what} known only at run time: its length would depend on the data",
        hint="give arange integer bounds (sizes, parameters) or constants",
    )


def _arange_norm(ctx, start, stop, step, dtype):
    start, stop, step = (
        _number(v, w) for v, w in ((start, "start"), (stop, "stop"), (step, "step"))
    )
    if isinstance(step, Expr):
        raise UnsupportedError("arange with a symbolic step", hint="use a constant step")
    if step == 0:
        raise ShapeError("Maximum allowed size exceeded (arange with step 0)")
    if dtype is None:  # NumPy's own choice, from the types of the bounds
        probe = [
            1 if isinstance(v, Expr) else 1.0 if isinstance(v, SymFloat) else v
            for v in (start, stop, step)
        ]
        try:
            dtype = np.arange(*probe).dtype
        except (ValueError, OverflowError, TypeError) as e:
            raise ShapeError(f"arange{tuple(probe)}: {e}") from None
    return {"start": start, "stop": stop, "step": step, "dtype": to_dtype(dtype, "dtype")}


def _arange_shape(ctx, start, stop, step, dtype):
    if any(isinstance(v, SymFloat) for v in (start, stop)):  # np.arange(1.0, n + 1.0)
        span = SymFloat.of(stop).sub(start).scale(1.0 / float(step))
        length = span.ceil_size()
        if length is None:
            raise UnsupportedError(
                "arange whose length is not a whole multiple of a size",
                hint="use np.arange(n) * step + start",
            )
        return (length if ctx.ge(length, 0) else 0,)
    if isinstance(start, Expr) or isinstance(stop, Expr):
        if any(isinstance(v, (float, np.floating)) for v in (start, stop, step)):
            raise UnsupportedError("arange mixing symbolic sizes with float bounds")
        step = int(step)
        span = (stop - start) if step > 0 else (start - stop)
        if not ctx.ge(span, 0):
            return (0,)
        return (floordiv(span + abs(step) - 1, abs(step)),)
    # NumPy's own length rule: (stop - start) / step in the bounds' arithmetic (NumPy scalars
    # wrap), one element when a nonzero span divides to 0, ceil otherwise
    with np.errstate(all="ignore"):
        delta = stop - start
        quotient = np.float64(delta / step)
    if quotient == 0.0 and delta != 0:
        return (0 if np.signbit(quotient) else 1,)
    if not np.isfinite(quotient):
        raise ShapeError(f"arange({start}, {stop}, {step}): the length would be {quotient}")
    return (max(0, math.ceil(quotient)),)


register(
    OpDef(
        "arange",
        "map",
        arange,
        impl=lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype),
        shape_rule=_arange_shape,
        dtype_rule=lambda start, stop, step, dtype: dtype,
        normalize=lambda ctx, start, stop, step, dtype: _arange_norm(ctx, start, stop, step, dtype),
        numpy=(np.arange,),
        call=np.arange,  # generated code calls it with the same arguments
    )
)


# -- linspace -------------------------------------------------------------------------------------
def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """``num`` evenly spaced values from start to stop (``np.linspace``)."""
    return apply("linspace", (start, stop), {"num": num, "endpoint": endpoint, "dtype": dtype})


def _linspace_norm(ctx, start, stop, num, endpoint, dtype):
    if start.rank or stop.rank:
        raise UnsupportedError("linspace with array bounds")
    num = size_arg(num)
    if isinstance(num, int) and num < 0:
        raise ShapeError(f"Number of samples, {num}, must be non-negative.")
    return {"num": num, "endpoint": bool(endpoint), "dtype": _dtype_or_none(dtype)}


register(
    OpDef(
        "linspace",
        "map",
        linspace,
        impl=lambda a, b, num, endpoint, dtype: np.linspace(
            a, b, num, endpoint=endpoint, dtype=dtype
        ),
        shape_rule=lambda ctx, a, b, num, endpoint, dtype: (num,),
        # NumPy: result_type(start, stop, float(num)), Python bounds weak
        dtype_rule=lambda a, b, num, endpoint, dtype: dtype or result_type(a, b, float),
        normalize=_linspace_norm,
        numpy=(np.linspace,),
        call=np.linspace,  # generated code calls it with the same arguments
    )
)


# -- eye ------------------------------------------------------------------------------------------
def eye(N, M=None, k=0, dtype=float):
    """Ones on the k-th diagonal of an N x M matrix, zeros elsewhere."""
    return apply("eye", (), {"N": N, "M": M, "k": k, "dtype": dtype})


register(
    OpDef(
        "eye",
        "map",
        eye,
        impl=lambda N, M, k, dtype: np.eye(N, M, k, dtype=dtype),
        shape_rule=lambda ctx, N, M, k, dtype: (N, N if M is None else M),
        dtype_rule=lambda N, M, k, dtype: dtype,
        normalize=lambda ctx, N, M, k, dtype: {
            "N": size_arg(N),
            "M": None if M is None else size_arg(M),
            "k": size_arg(k),
            "dtype": to_dtype(dtype, "dtype"),
        },
        numpy=(np.eye,),
        call=np.eye,  # generated code calls it with the same arguments
    )
)
