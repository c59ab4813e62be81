"""Graph breaks: a call PyPTO has no op for runs as the source writes it.

``np.linalg.solve(A, b)``, ``np.sort(x)``, ``np.cov(x)``, a function of another module: the
front end makes each such call one equation ``host_call`` (kind ``custom``). Fusion never
crosses it: the kernels before it compute its operands, it runs on the host as the original
call (``fn`` itself, on read-only views of its array arguments), the kernels after it read
its result. On the CUDA target it is CuPy's function of the same name where CuPy has one, else
the NumPy call on copies brought to the host (emit/runtime/cuda_helpers.py ``_cuda_call``).

Its result's dtype, rank and sizes are found when the call is traced: by calling it on small
sample arrays (a base probe and one per size symbol, an affine fit checked by one more probe:
ops/custom.py), or from ``SHAPES`` where sample values would not do. A tuple result is one
equation per item used. Every result is checked when it runs: a call whose size depends on the
values is an error there, never a wrong answer.

Refused (PPT104, with the reason): calls that write into an argument (``out=``, ``np.copyto``,
``np.fill_diagonal``, ...; found also when a probe writes into its read-only sample), draws of
``np.random`` (their order would follow PyPTO's schedule, not the source's), results whose size
depends on the values (``np.unique``, ``np.nonzero``), calls whose result is not an array or a
number (``print``, None), and calls no probe can run. A call whose sample raises a TypeError
(of the dtypes, which the samples share with the real arguments) raises NumPy's error where
the statement runs.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from ..api import Tensor, _freeze, apply
from ..dtypes import to_dtype
from ..errors import ShapeError, execution_error
from ..registry import OpDef, register
from ..shapes import size_of, unsized
from ..symbolic import Expr, floordiv
from .custom import _derive_shape, _probe_array, probe_sizes

SLOT = "<operand>"

# functions that write into an argument: PyPTO would not see the write
WRITERS = {
    "copyto",
    "put",
    "place",
    "putmask",
    "fill_diagonal",
    "put_along_axis",
    "shuffle",
}


def _nonzero(args, sample):
    return [(None,)] * len(args["a"].shape)


def _argwhere(args, sample):
    return [(None, len(args["a"].shape))]


def _one_axis(args, sample):
    return [(None,)] * len(sample)


def _compress(args, sample):
    axis = args.get("axis")
    shape = list(args["a"].shape)
    if axis is None:
        return [(None,)]
    if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        return None
    shape[axis] = None
    return [tuple(shape)]


def _unique(args, sample):
    """Values (and index, counts) of the distinct count; the inverse of the input's shape (or
    its length along ``axis``), as NumPy's sample gives its rank."""
    axis, ar = args.get("axis"), args["ar"]
    if axis is not None and not isinstance(axis, int):
        return None
    values = (None,)
    if axis is not None:
        if not -len(ar.shape) <= axis < len(ar.shape):
            return None
        values = tuple(None if k == axis % len(ar.shape) else d for k, d in enumerate(ar.shape))
    shapes = [values]
    flags = ("return_index", "return_inverse", "return_counts")
    for k, flag in enumerate(f for f in flags if args.get(f)):
        if flag != "return_inverse":
            shapes.append((None,))
            continue
        inverse = sample[k + 1]
        if axis is not None:
            shapes.append((ar.shape[axis],))
        elif inverse.ndim == len(ar.shape):
            shapes.append(tuple(ar.shape))
        else:
            shapes.append((size_of(ar.shape),))
    return shapes


# results whose size depends on the values: (module, name) -> (the bound arguments with the
# operands' types, the sample's items) -> each item's shape, None on the axes the values size
DATA_SIZED = {
    ("numpy", "nonzero"): _nonzero,
    ("numpy", "flatnonzero"): _one_axis,
    ("numpy", "argwhere"): _argwhere,
    ("numpy", "extract"): _one_axis,
    ("numpy", "compress"): _compress,
    ("numpy", "trim_zeros"): _one_axis,
    ("numpy", "unique"): _unique,
    ("numpy", "unique_values"): _one_axis,
    ("numpy", "unique_counts"): _one_axis,
}
# sized by the values, not (yet) compiled: refused
DATA_REFUSED = {"unique_inverse", "unique_all"}


def _same_shape(shapes, template, kwargs):
    """The operand's shape: a square matrix's inverse or factor."""
    return shapes[0] if len(shapes) == 1 and len(template) == 1 and not kwargs else None


def _along_axis(shapes, template, kwargs):
    """The operand's shape where the call names an axis (np.sort, np.argsort)."""
    axis = kwargs.get("axis", template[1] if len(template) > 1 else -1)
    return shapes[0] if len(shapes) == 1 and isinstance(axis, int) else None


def _rfft(shapes, template, kwargs):
    """np.fft.rfft: n // 2 + 1 along its axis (not affine in n: probes cannot find it)."""
    if len(shapes) != 1 or len(template) != 1 or set(kwargs) - {"axis", "norm"}:
        return None
    shape = list(shapes[0])
    axis = kwargs.get("axis", -1)
    if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        return None
    shape[axis] = floordiv(shape[axis], 2) + 1
    return tuple(shape)


# the common ones, without probes: (operand shapes, template, kwargs) -> shape, or None (probe)
SHAPES = {
    ("numpy.linalg", "inv"): _same_shape,
    ("numpy.linalg", "cholesky"): _same_shape,
    ("numpy", "sort"): _along_axis,
    ("numpy", "argsort"): _along_axis,
    ("numpy.fft", "rfft"): _rfft,
}


class Refused(Exception):
    """The call cannot run as a graph break (the message says why)."""


def break_call(fn, name: str, args: list, kwargs: dict, ctx, symbol=None):
    """The traced result of ``fn(*args, **kwargs)`` (tensors among them are its operands):
    a Tensor, a tuple of them, or raises Refused. ``symbol()``: a new size symbol, for a
    result whose size the values decide (the caller binds it: ``sized`` axes)."""
    _refuse_writers(fn, name, kwargs)
    operands: list[Tensor] = []
    template = _template(args, operands)
    kw = []
    for k, v in sorted(kwargs.items()):  # an array keyword: an operand after the positional
        if isinstance(v, Tensor):
            operands.append(v)
            v = SLOT
        kw.append((k, v))
    kw = tuple(kw)
    if _has_size(template) or _has_size(kw):
        raise Refused(
            f"`{name}` with a size known only at run time as an argument (not supported yet)",
            "pass an array, or a size known when compiling",
        )
    try:
        hash(_freeze(template))
        hash(_freeze(kw))
    except TypeError:
        raise Refused(
            f"`{name}`: its arguments other than arrays must be numbers, strings, tuples or None"
        ) from None
    types = [t._atom.type for t in operands]
    sample, arrays, zeros = _run_sample(fn, name, template, kw, types, ctx)
    items = sample if isinstance(sample, tuple) else (sample,)
    if any(np.may_share_memory(v, a) for v in items for a in arrays):
        raise Refused(
            f"`{name}` returns a view of its argument: PyPTO would not follow writes through "
            "it (not supported yet)"
        )
    sized = _data_shapes(fn, name, template, kw, types, items)
    var = None
    if sized is not None:
        if symbol is None:
            raise Refused(f"`{name}`: the size of its result depends on the values")
        var = symbol()
    results = []
    for i, value in enumerate(items):
        item = i if isinstance(sample, tuple) else None
        if not isinstance(value, (np.ndarray, np.generic, bool, int, float, complex)):
            raise Refused(
                f"`{name}` returns {type(value).__name__}"
                + (f" as item {i}" if item is not None else "")
                + ", not an array or a number"
            )
        py = type(value) in (bool, int, float, complex)
        attrs = {
            "fn": fn,
            "name": name,
            "template": _freeze(template),
            "kwargs": kw,
            "item": item,
            "array": isinstance(value, np.ndarray),
            "out_dtype": to_dtype(np.asarray(value).dtype, "result"),
            "out_shape": None,
            "sized": (),
        }
        if sized is None:
            attrs["out_shape"] = _shape(ctx, fn, name, template, kw, types, item, zeros)
        else:  # the values' axes take the new symbol, at most the first operand's size
            bound = size_of(types[0].shape) if types else 1
            attrs["out_shape"] = tuple(var if d is None else d for d in sized[i])
            attrs["sized"] = tuple((k, bound) for k, d in enumerate(sized[i]) if d is None)
        out = apply("host_call", tuple(operands), attrs)
        if py:  # a Python number: weak, as Python's own arithmetic on it
            out = apply("astype", (out,), {"dtype": out.dtype, "weak": True})
        results.append(out)
    return tuple(results) if isinstance(sample, tuple) else results[0]


def _refuse_writers(fn, name, kwargs):
    module = getattr(fn, "__module__", None) or ""
    owner = getattr(fn, "__self__", None)
    short = getattr(fn, "__name__", "")
    if module.startswith("numpy.random") or module == "random" or "random" in name.split("."):
        raise Refused(
            f"`{name}` draws random numbers: PyPTO's schedule may order draws unlike the source",
            "draw them outside the compiled function and pass them in",
        )
    if "out" in kwargs or short in WRITERS or (isinstance(owner, np.ufunc) and short == "at"):
        raise Refused(f"`{name}` writes into an argument, which PyPTO would not see")
    if short in DATA_REFUSED and module.startswith("numpy"):
        raise Refused(f"`{name}`: the size of its result depends on the values (not supported yet)")
    if module == "builtins" or inspect.isclass(fn):  # print, sorted, a type
        raise Refused(f"`{name}` is not a function on arrays PyPTO can run as written")


def _data_shapes(fn, name, template, kw, types, items):
    """Each item's shape (None on the axes the values size) for a call whose result's size
    depends on the values (``DATA_SIZED``); None for any other call."""
    rule = DATA_SIZED.get((getattr(fn, "__module__", None), getattr(fn, "__name__", None)))
    if rule is None:
        return None
    try:
        args, kwargs = fill(template, types, kw)
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    shapes = rule(bound.arguments, items)
    if shapes is None or len(shapes) != len(items):
        raise Refused(f"`{name}`: these arguments are not supported with a result sized by values")
    for shape, value in zip(shapes, items):
        if len(shape) != np.ndim(value):
            raise Refused(f"`{name}`: its result's rank is not the one PyPTO expects")
    return shapes


def _has_size(v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(_has_size(x) for x in v)
    return isinstance(v, Expr)


def _template(v, operands):
    """The arguments with each tensor replaced by SLOT (in order), lists as lists."""
    if isinstance(v, Tensor):
        operands.append(v)
        return SLOT
    if isinstance(v, (list, tuple)):
        return type(v)(_template(x, operands) for x in v)
    if isinstance(v, np.ndarray):
        raise Refused("an array constant as the argument of a call PyPTO has no op for")
    return v


def fill(template, arrays, kwargs=()):
    """``template`` with its slots filled by ``arrays`` in order (a list: the arguments), then
    the slots among the values of ``kwargs`` (pairs) by the arrays left: (args, kwargs dict)."""
    it = iter(arrays)

    def put(v):
        if isinstance(v, str) and v == SLOT:
            return next(it)
        if isinstance(v, (list, tuple)):
            return type(v)(put(x) for x in v)
        return v

    args = [put(v) for v in template]
    return args, {k: put(v) for k, v in kwargs}


def _run_sample(fn, name, template, kw, types, ctx):
    """``fn`` on read-only sample arrays of the operands' ranks and dtypes (sizes as the
    shape probes' base; where those are unknown and the call rejects them, one size; where
    the call rejects sample integers as indices, zeros): its result, the arrays, and whether
    integers are zeros."""
    dims, values, base = probe_sizes(ctx, types)
    sizes = [base] if all(v is not None for v in values) else [base, [8] * len(base)]
    tries = [(s, False) for s in sizes] + [(s, True) for s in sizes]
    for k, (sizes, zeros) in enumerate(tries):
        arrays = _zeroed(
            [
                _probe_array(
                    tuple(sizes[dims.index(d)] if isinstance(d, Expr) else d for d in t.shape),
                    t.dtype,
                )
                for t in types
            ],
            zeros,
        )
        try:
            return _call_readonly(fn, template, kw, arrays), arrays, zeros
        except _Wrote:
            raise Refused(f"`{name}` writes into an argument, which PyPTO would not see") from None
        except TypeError as e:  # of the dtypes (the samples have the real ones): NumPy's
            raise execution_error(e, f"`{name}`: {type(e).__name__}: {e}") from None  # error
        except Exception as e:
            if k + 1 < len(tries):
                continue
            raise Refused(
                f"`{name}`: PyPTO has no op for it and could not learn what it returns: "
                f"called on sample arrays it raised {type(e).__name__}: {e}",
                "PyPTO runs a call it has no op for as written, once sample arrays show its "
                "result; a function of the same module is compiled with the caller",
            ) from None
    raise AssertionError("unreachable")


class _Wrote(Exception):
    pass


def _call_readonly(fn, template, kw, arrays):
    for a in arrays:
        a.flags.writeable = False
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            args, kwargs = fill(template, arrays, kw)
            return fn(*args, **kwargs)
        except ValueError as e:
            if "read-only" in str(e):
                raise _Wrote from None
            raise


def _zeroed(arrays, zeros: bool) -> list:
    """Integer sample arrays as zeros (valid indices of any axis) where ``zeros``."""
    if not zeros:
        return arrays
    out = [np.zeros_like(a) if a.dtype.kind in "iu" else a for a in arrays]
    for a in out:
        a.flags.writeable = False
    return out


def _shape(ctx, fn, name, template, kw, types, item, zeros=False):
    rule = SHAPES.get((getattr(fn, "__module__", None), getattr(fn, "__name__", None)))
    shape = None if rule is None else rule([t.shape for t in types], template, dict(kw))
    if shape is not None:
        return tuple(shape)

    def one(*arrays):
        out = _call_readonly(fn, template, kw, _zeroed(list(arrays), zeros))
        return np.asarray(out if item is None else out[item])

    try:
        return _derive_shape(ctx, one, None, None, types)
    except ShapeError as e:
        raise Refused(f"`{name}`: {e.message}") from None


def _impl(*arrays, fn, name, template, kwargs, item, array, out_shape, out_dtype, sized):
    from ..emit.runtime.numpy_helpers import _call

    shape = unsized(out_shape, sized)
    spec = (fn, name, item, shape, out_dtype.name)
    args, kw = fill(template, arrays, kwargs)
    return _call(spec, *args, **kw)


_ATTRS = ("fn", "name", "template", "kwargs", "item", "array", "out_shape", "out_dtype", "sized")


def host_call(*operands, **attrs):
    """The graph-break op on ``operands`` (the front end builds it, ``break_call``; attributes:
    fn, name, template, kwargs, item, array, out_shape, out_dtype, sized)."""
    if sorted(attrs) != sorted(_ATTRS):
        from ..errors import ArgumentError

        raise ArgumentError(
            "host_call is the node the compiler makes for a call it has no op for",
            hint="call the function itself inside a @ppto.compile function",
        )
    return apply("host_call", operands, attrs)


register(
    OpDef(
        "host_call",
        "custom",
        host_call,
        impl=_impl,
        shape_rule=lambda ctx, *shapes, out_shape, **attrs: out_shape,
        dtype_rule=lambda *keys, out_dtype, **attrs: out_dtype,
        array_0d=lambda array, **attrs: array,
    )
)


def refusal(e: Refused, node, tracer):
    """The UnsupportedError a refused call raises (at the call)."""
    message, *hint = e.args
    return tracer.unsupported(
        node,
        message,
        hint=hint[0]
        if hint
        else "docs: Supported Python, graph breaks (`pypto ops` lists "
        "the functions PyPTO compiles natively)",
        code="PPT104",
    )


__all__ = ["SHAPES", "Refused", "break_call", "fill", "host_call", "refusal"]
