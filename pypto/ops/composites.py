"""Composite ops: written once as NumPy-style code over other ops, expanded when traced.

A composite never appears in a graph: its ``expand`` runs on traced tensors (types known), so
the passes see only primitive ops, and a softmax written by hand and ``ppto.softmax`` are the same
graph. Each expansion follows the arithmetic of NumPy's (or SciPy's) own implementation, so
results match it, dtypes included. ``impl`` is the NumPy reference, used when a composite is
applied to plain numbers.
"""

from __future__ import annotations

import numpy as np

from ..api import Tensor, apply, current_builder, lift, no_out
from ..dtypes import is_integer_or_bool, python_scalar_type, to_dtype
from ..errors import ArgumentError, AxisError, DTypeError, ShapeError, UnsupportedError
from ..registry import OpDef, register
from ..shapes import normalize_axes, normalize_axis
from ..symbolic import Expr, smax
from .maps import clamp, where
from .reorders import concatenate, expand_dims, reshape, transpose


def _composite(name, api, expand, impl=None, numpy=(), aliases=(), view_of=None):
    api.__name__ = api.__qualname__ = name
    register(
        OpDef(
            name,
            "composite",
            api,
            impl=impl,
            expand=expand,
            numpy=numpy,
            aliases=aliases,
            view_of=view_of,
        )
    )


def _first(args, kwargs):
    """``view_of`` of a composite whose result is always a view of its first argument."""
    return 0


def _op(name):
    from ..registry import REGISTRY

    return REGISTRY[name].api


# -- softmax / log_softmax (SciPy's formulations) -----------------------------------------------
def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along ``axis`` (default: the last; None: all)."""
    return apply("softmax", (x,), {"axis": axis})


def _softmax(x, axis):
    x = lift(x)
    e = _op("exp")(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_ref(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


_composite("softmax", softmax, _softmax, _softmax_ref)


def log_softmax(x, axis=-1):
    """x - max - log(sum(exp(x - max))) along ``axis``; a non-finite max counts as 0 (SciPy)."""
    return apply("log_softmax", (x,), {"axis": axis})


def _log_softmax(x, axis):
    x = lift(x)
    m = x.max(axis=axis, keepdims=True)
    m = where(_op("isfinite")(m), m, 0)
    shifted = x - m
    return shifted - _op("log")(_op("exp")(shifted).sum(axis=axis, keepdims=True))


def _log_softmax_ref(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    shifted = x - m
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


_composite("log_softmax", log_softmax, _log_softmax, _log_softmax_ref)


# -- var / std (NumPy's _var) ---------------------------------------------------------------------
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance along ``axis``: mean of squared deviations, divided by (n - ddof)."""
    no_out(out, "var")
    return apply("var", (a,), {"axis": axis, "dtype": dtype, "ddof": ddof, "keepdims": keepdims})


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation: sqrt of ``var``."""
    no_out(out, "std")
    return apply("std", (a,), {"axis": axis, "dtype": dtype, "ddof": ddof, "keepdims": keepdims})


def _var(a, axis, dtype, ddof, keepdims):
    x = lift(a)
    if x.dtype.kind == "c":
        raise UnsupportedError("var/std of complex values")
    if not isinstance(ddof, (int, np.integer, Expr)):  # (a bool is an int, as in NumPy)
        raise ArgumentError(f"ddof must be an integer, not {ddof!r}")
    axes = normalize_axes(axis, x.ndim)
    count = 1
    for ax in axes:
        count = count * x.shape[ax]
    ctype = (
        to_dtype(dtype, "dtype")
        if dtype is not None
        else (np.dtype(np.float64) if is_integer_or_bool(x.dtype) else None)
    )
    total = x.sum(axis=axes, dtype=ctype, keepdims=True)
    mean = _cast(total / count, total.dtype)
    dev = x - mean
    sq = _op("square")(dev) if x.dtype.kind != "b" else dev * dev
    ret = sq.sum(axis=axes, dtype=ctype, keepdims=keepdims)
    ddof = ddof if isinstance(ddof, Expr) else int(ddof)
    return _cast(ret / smax(count - ddof, 0), ret.dtype)


def _cast(t, dtype):
    return t if t.dtype == dtype else t.astype(dtype)


def _std(a, axis, dtype, ddof, keepdims):
    v = _var(a, axis, dtype, ddof, keepdims)
    if v.dtype.kind in "biu" and v.ndim > 0:  # NumPy's in-place sqrt into ints refuses
        raise DTypeError(f"Cannot cast ufunc 'sqrt' output from float64 to {v.dtype}")
    return _cast(_op("sqrt")(v), v.dtype)


_composite("var", var, _var, np.var, (np.var,))
_composite("std", std, _std, np.std, (np.std,))


# -- gradient (np.gradient, uniform spacing, edge_order 1) ---------------------------------------
def gradient(f, *varargs, axis=None, edge_order=1):
    """Central differences inside, one-sided differences at the edges (``np.gradient`` with
    scalar spacings). One axis gives one tensor; several give a tuple."""
    if edge_order != 1:
        raise UnsupportedError(
            f"gradient with edge_order={edge_order}", hint="only edge_order=1 is supported"
        )
    for h in varargs:
        if python_scalar_type(h) is None and not isinstance(h, (np.generic, Tensor)):
            raise UnsupportedError(
                "gradient with coordinate arrays as spacing",
                hint="pass scalar spacings (a uniform grid)",
            )
    if axis is None:
        if current_builder() is None:
            raise UnsupportedError(
                "gradient over all axes of a lazy tensor (its rank is only known when it runs)",
                hint="pass axis=0, axis=1, ...",
            )
        axes = tuple(range(lift(f).ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        spacing = _spacing(varargs, (axis,), 0)
        return apply("gradient", (f, spacing), {"axis": axis, "group": None})
    # one node per axis; each knows its group, to refuse repeated axes as NumPy does
    outs = tuple(
        apply("gradient", (f, _spacing(varargs, axes, i)), {"axis": ax, "group": axes})
        for i, ax in enumerate(axes)
    )
    return outs[0] if len(outs) == 1 else outs


def _spacing(varargs, axes, i):
    if not varargs:
        return 1.0
    if len(varargs) == 1:
        return varargs[0]
    if len(varargs) != len(axes):
        raise ArgumentError(f"gradient: {len(varargs)} spacings for {len(axes)} axes")
    return varargs[i]


def _gradient(f, spacing, axis, group):
    f = lift(f)
    ax = normalize_axis(axis, f.ndim)
    if group is not None and len({normalize_axis(a, f.ndim) for a in group}) != len(group):
        raise AxisError("repeated axis")
    otype = f.dtype
    if otype.kind in "iu":
        f, otype = f.astype(np.float64), np.dtype(np.float64)
    n = f.shape[ax]
    if not current_builder().ctx.ge(n, 2):
        raise ShapeError(
            "Shape of array too small to calculate a numerical gradient, at least "
            "(edge_order + 1) elements are required."
        )

    def part(start, stop):
        return f[(slice(None),) * ax + (slice(start, stop),)]

    if isinstance(spacing, Tensor) and spacing.ndim:
        raise UnsupportedError(
            "gradient with coordinate arrays as spacing",
            hint="pass scalar spacings (a uniform grid)",
        )
    if isinstance(spacing, Tensor) and spacing._atom.type.weak:  # 2. * dx is Python arithmetic
        twice = apply("multiply", (2.0, spacing), {"weak": True})
    else:
        twice = 2.0 * spacing
    interior = (part(2, None) - part(None, -2)) / twice
    first = (part(1, 2) - part(0, 1)) / spacing
    last = (part(-1, None) - part(-2, -1)) / spacing
    return _cast(concatenate([first, interior, last], axis=ax), otype)


_composite("gradient", gradient, _gradient, np.gradient, (np.gradient,))


# -- x ** 2, x ** -1, x ** 0.5: NumPy's operator ------------------------------------------------
def power_operator(x, exponent):
    """``x ** exponent`` for a Python int 2 or -1 or a Python float 0.5, as NumPy's ``**``
    computes it: ``square``, ``reciprocal``, ``sqrt`` for float and complex arrays (NumPy's
    ``fast_scalar_power``), else ``power``."""
    return apply("power_operator", (x,), {"exponent": exponent})


_FAST_POWER = {2: "square", -1: "reciprocal", 0.5: "sqrt"}


def _power_operator(x, exponent):
    x = lift(x)
    if x.dtype.kind in "fc":
        return _op(_FAST_POWER[exponent])(x)
    return _op("power")(x, exponent)


def _power_operator_ref(x, exponent):
    return x**exponent


_composite("power_operator", power_operator, _power_operator, _power_operator_ref)


# -- outer, stack, swapaxes, ravel, clip ----------------------------------------------------------
def outer(a, b):
    """``np.outer``: every product of the flattened a with the flattened b."""
    return apply("outer", (a, b))


def _strong(t):
    t = lift(t)
    return t.astype(t.dtype) if t._atom.type.weak else t


def _outer(a, b):
    return reshape(_strong(a), (-1, 1)) * reshape(_strong(b), (1, -1))


_composite("outer", outer, _outer, np.outer, (np.outer,))


def stack(arrays, axis=0):
    """Join arrays of equal shape along a new axis."""
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ArgumentError("stack needs a non-empty list or tuple of arrays")
    return apply("stack", tuple(arrays), {"axis": axis})


def _stack(*arrays, axis):
    arrays = [lift(a) for a in arrays]
    ctx = current_builder().ctx
    first = arrays[0].shape
    for a in arrays[1:]:
        if len(a.shape) != len(first) or not all(ctx.eq(d0, d) for d0, d in zip(first, a.shape)):
            raise ShapeError(
                "all input arrays must have the same shape, got "
                + " and ".join(ctx.show(t.shape) for t in (arrays[0], a))
            )
    ax = normalize_axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in arrays], axis=ax)


_composite("stack", stack, _stack, np.stack, (np.stack,))


def swapaxes(a, axis1, axis2):
    """Exchange two axes."""
    return apply("swapaxes", (a,), {"axis1": axis1, "axis2": axis2})


def _swapaxes(a, axis1, axis2):
    a = lift(a)
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, tuple(perm))


_composite("swapaxes", swapaxes, _swapaxes, np.swapaxes, (np.swapaxes,), view_of=_first)


def ravel(a):
    """The elements in C order, as a vector."""
    return reshape(a, -1)


_composite("ravel", ravel, ravel, np.ravel, (np.ravel,), aliases=("flatten",), view_of=_first)


def clip(a, a_min=None, a_max=None):
    """Limit values to [a_min, a_max]; either bound may be None (NumPy's np.clip)."""
    operands = (a,) + tuple(b for b in (a_min, a_max) if b is not None)
    return apply("clip", operands, {"has_min": a_min is not None, "has_max": a_max is not None})


def _run_time_int(b) -> bool:
    return isinstance(b, Tensor) and b._atom.type.weak and b.dtype.kind == "i"


def _clip(a, *bounds, has_min, has_max):
    x = lift(a)
    bounds = list(bounds)
    lo = bounds.pop(0) if has_min else None
    hi = bounds.pop(0) if has_max else None
    if x.dtype.kind in "iu":  # as np.clip: Python ints beyond the dtype's range are no bound
        info = np.iinfo(x.dtype)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
        if (lo is None) != (hi is None) and any(_run_time_int(b) for b in (lo, hi)):
            # a Python int known only at run time: clamp (np.clip) drops it there if it is
            # beyond the dtype's range; the missing bound is the dtype's extreme
            lo = x.dtype.type(info.min) if lo is None else lo
            hi = x.dtype.type(info.max) if hi is None else hi
    if lo is None and hi is None:
        return _op("positive")(x)
    if lo is None:
        return _op("minimum")(x, hi)
    if hi is None:
        return _op("maximum")(x, lo)
    return clamp(x, lo, hi)


_composite("clip", clip, _clip, np.clip, (np.clip,))


# -- vstack / hstack / dstack / column_stack (NumPy's atleast_Nd, then concatenate) -----------
def _arrays(name, tup):
    if not isinstance(tup, (list, tuple)) or not tup:
        raise ArgumentError(f"{name} needs a non-empty list or tuple of arrays")
    return tuple(tup)


def _no_dtype(name, dtype, casting):
    if dtype is not None or casting != "same_kind":
        raise UnsupportedError(f"{name}() with dtype= or casting=", hint="cast with .astype()")


def vstack(tup, *, dtype=None, casting="same_kind"):
    """Stack arrays in sequence vertically (row wise): 1-D arrays become rows."""
    _no_dtype("vstack", dtype, casting)
    return apply("vstack", _arrays("vstack", tup), {})


def _atleast_2d(a):
    a = lift(a)
    if a.ndim == 0:
        return reshape(a, (1, 1))
    return expand_dims(a, 0) if a.ndim == 1 else a


def _vstack(*arrays):
    return concatenate([_atleast_2d(a) for a in arrays], axis=0)


_composite("vstack", vstack, _vstack, np.vstack, (np.vstack,), aliases=("row_stack",))


def hstack(tup, *, dtype=None, casting="same_kind"):
    """Stack arrays in sequence horizontally (column wise): 1-D arrays end to end."""
    _no_dtype("hstack", dtype, casting)
    return apply("hstack", _arrays("hstack", tup), {})


def _hstack(*arrays):
    arrays = [lift(a) for a in arrays]
    arrays = [reshape(a, (1,)) if a.ndim == 0 else a for a in arrays]
    return concatenate(arrays, axis=0 if arrays[0].ndim == 1 else 1)


_composite("hstack", hstack, _hstack, np.hstack, (np.hstack,))


def dstack(tup):
    """Stack arrays in sequence depth wise (along a third axis)."""
    return apply("dstack", _arrays("dstack", tup), {})


def _atleast_3d(a):
    a = lift(a)
    if a.ndim == 0:
        return reshape(a, (1, 1, 1))
    if a.ndim == 1:
        return expand_dims(expand_dims(a, 0), 2)
    return expand_dims(a, 2) if a.ndim == 2 else a


def _dstack(*arrays):
    return concatenate([_atleast_3d(a) for a in arrays], axis=2)


_composite("dstack", dstack, _dstack, np.dstack, (np.dstack,))


def column_stack(tup):
    """Stack 1-D arrays as columns into a 2-D array (2-D arrays as they are)."""
    return apply("column_stack", _arrays("column_stack", tup), {})


def _column_stack(*arrays):
    out = []
    for a in arrays:
        a = lift(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1))
        elif a.ndim == 1:
            a = expand_dims(a, 1)
        out.append(a)
    return concatenate(out, axis=1)


_composite("column_stack", column_stack, _column_stack, np.column_stack, (np.column_stack,))


# -- diff -----------------------------------------------------------------------------------------
_NONE = object()


def diff(a, n=1, axis=-1, prepend=_NONE, append=_NONE):
    """The n-th discrete difference along ``axis`` (``a[1:] - a[:-1]``, ``!=`` for bools),
    after ``prepend`` and ``append`` are joined on (a scalar as one slice)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise DTypeError(f"diff's order n must be an int, got {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise ShapeError(f"order must be non-negative but got {n}")
    operands = (a,) + tuple(x for x in (prepend, append) if x is not _NONE)
    attrs = {"n": n, "axis": axis, "has_prepend": prepend is not _NONE}
    attrs["has_append"] = append is not _NONE
    return apply("diff", operands, attrs)


def _diff(a, *ends, n, axis, has_prepend, has_append):
    a = lift(a)
    if n == 0:
        return a
    if a.ndim == 0:
        raise ShapeError("diff requires input that is at least one dimensional")
    ax = normalize_axis(axis, a.ndim)
    ends = list(ends)
    parts = []
    for present in (has_prepend, has_append):
        if not present:
            parts.append(None)
            continue
        e = lift(ends.pop(0))
        if e.ndim == 0:
            shape = tuple(1 if k == ax else d for k, d in enumerate(a.shape))
            e = _op("broadcast_to")(e, shape)
        parts.append(e)
    pieces = [p for p in (parts[0], a, parts[1]) if p is not None]
    if len(pieces) > 1:
        a = concatenate(pieces, axis=ax)
    step = _op("not_equal") if a.dtype == np.bool_ else _op("subtract")
    for _ in range(n):
        head = tuple(slice(1, None) if k == ax else slice(None) for k in range(a.ndim))
        tail = tuple(slice(None, -1) if k == ax else slice(None) for k in range(a.ndim))
        a = step(a[head], a[tail])
    return a


_composite("diff", diff, _diff, np.diff, (np.diff,))


# -- isclose (NumPy 2's formulation) ---------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol * |b|`` where ``b`` is finite, or ``a == b``; with
    ``equal_nan``, NaN against NaN too."""
    for name, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
            raise UnsupportedError(f"isclose with a {name} that is not a number")
    return apply(
        "isclose", (a, b), {"rtol": float(rtol), "atol": float(atol), "equal_nan": bool(equal_nan)}
    )


def _isclose(a, b, rtol, atol, equal_nan):
    x, y = lift(a), lift(b)
    if not y._atom.type.weak:  # b in a floating type (NumPy: result_type(b, 1.0))
        dt = np.result_type(y.dtype, 1.0)
        if dt != y.dtype:
            y = y.astype(dt)
    elif y.dtype.kind in "iub":  # a Python int: float(b)
        y = y.astype(np.float64)
    # (NumPy computes under errstate(invalid="ignore"): inf - inf is never computed here, its
    # pairs are not close by the isfinite test either way)
    finite = _op("isfinite")(x) & _op("isfinite")(y)
    xs, ys = where(finite, x, 0), where(finite, y, 0)
    close = _op("less_equal")(_op("absolute")(xs - ys), atol + rtol * _op("absolute")(ys))
    result = (close & finite) | _op("equal")(x, y)
    if equal_nan:
        result = result | (_op("isnan")(x) & _op("isnan")(y))
    return result


_composite("isclose", isclose, _isclose, np.isclose, (np.isclose,))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``bool(np.all(np.isclose(a, b, ...)))``: a Python bool, as NumPy returns."""
    isclose(a, b, rtol, atol, equal_nan)  # (its argument checks)
    attrs = {"rtol": float(rtol), "atol": float(atol), "equal_nan": bool(equal_nan)}
    return apply("allclose", (a, b), attrs)


def _allclose(a, b, rtol, atol, equal_nan):
    every = _isclose(a, b, rtol, atol, equal_nan).all()
    return apply("astype", (every,), {"dtype": np.dtype(bool), "weak": True})


_composite("allclose", allclose, _allclose, np.allclose, (np.allclose,))


# -- roll -----------------------------------------------------------------------------------------
def roll(a, shift, axis=None):
    """``a`` rolled by ``shift`` along ``axis`` (None: the flattened array, then its shape
    back); sequences roll several axes, shifts along one axis adding up (NumPy broadcasts
    ``shift`` against ``axis``)."""

    def ints(x, what):
        items = tuple(x) if isinstance(x, (tuple, list)) else (x,)
        for v in items:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer, Expr)):
                raise DTypeError(f"roll's {what} must be ints, got {type(v).__name__}")
            if what == "axis" and isinstance(v, Expr):
                raise UnsupportedError("roll with an axis known only at run time")
        return tuple(v if isinstance(v, Expr) else int(v) for v in items)

    shifts = ints(shift, "shift")  # (an int argument of a compiled function: a symbol)
    axes = None if axis is None else ints(axis, "axis")
    if axes is not None and len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise ShapeError("'shift' and 'axis' should be scalars or 1D sequences")
    return apply("roll", (a,), {"shift": shifts, "axis": axes})


def _roll(a, shift, axis):
    x = lift(a)
    if axis is None:
        flat = reshape(x, (-1,))
        return reshape(_roll(flat, shift, (0,)), x.shape)
    n = max(len(shift), len(axis))
    total: dict[int, int] = {}
    for s, ax in zip(shift * (n // len(shift)), axis * (n // len(axis))):
        ax = normalize_axis(ax, x.ndim)
        total[ax] = total.get(ax, 0) + s
    for ax, s in sorted(total.items()):
        size = x.shape[ax]
        if isinstance(size, int) and size <= 1:
            continue
        k = s % smax(size, 1)  # (an empty axis: nothing moves)
        if isinstance(k, int) and k == 0:
            continue
        head = tuple(slice(size - k, None) if i == ax else slice(None) for i in range(x.ndim))
        tail = tuple(slice(None, size - k) if i == ax else slice(None) for i in range(x.ndim))
        x = concatenate([x[head], x[tail]], axis=ax)
    return x if x is not lift(a) else _op("copy")(x)  # NumPy's roll is a new array


_composite("roll", roll, _roll, np.roll, (np.roll,))


# -- round / around (NumPy's PyArray_Round) ----------------------------------------------------
def round_(a, decimals=0, out=None):
    """``a`` rounded to ``decimals`` digits, halves to even, as NumPy does it: ``rint(a)`` for 0
    decimals, ``rint(a * f) / f`` with ``f = 10.0**decimals`` (``rint(a / f) * f`` for negative
    decimals; integers then cast back, and left as they are for decimals >= 0)."""
    no_out(out, "round")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise DTypeError(
            f"'{type(decimals).__name__}' object cannot be interpreted as an integer (decimals)"
        )
    return apply("round", (a,), {"decimals": int(decimals)})


def _power_of_ten(n: int) -> float:
    """NumPy's power_of_ten: exact below 1e9, then multiplied by 10 one step at a time."""
    if n < 9:
        return float(10**n)
    ret = 1e9
    for _ in range(n - 9):
        ret *= 10.0
    return ret


def _round(a, decimals):
    x = lift(a)
    if decimals == 0 and x.dtype.kind not in "iu":  # NumPy: rint (of bools too: float16)
        if x.dtype.kind == "c":
            raise UnsupportedError(
                "round of a complex array",
                hint="round x.real and x.imag, or call np.round outside the compiled code",
            )
        return _op("rint")(x)
    if x.dtype == np.bool_:
        raise DTypeError(
            "Cannot cast ufunc 'multiply' output from dtype('float64') to dtype('bool') with "
            "casting rule 'same_kind'"
        )
    if x.dtype.kind == "c":  # NumPy rounds the two parts apart (their zeros' signs kept)
        raise UnsupportedError(
            "round of a complex array",
            hint="round x.real and x.imag, or call np.round outside the compiled code",
        )
    integer = x.dtype.kind in "iu"
    if decimals >= 0:
        if integer:
            return _op("copy")(x)
        f = _power_of_ten(decimals)
        return _op("divide")(_op("rint")(_op("multiply")(x, f)), f)
    f = _power_of_ten(-decimals)
    y = _op("multiply")(_op("rint")(_op("divide")(x, f)), f)
    return y.astype(x.dtype) if integer else y


round_.__name__ = round_.__qualname__ = "round"
_composite("round", round_, _round, np.round, (np.round, np.around), aliases=("around",))
