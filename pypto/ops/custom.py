"""User operators (design document 7.1): ``@ppto.register_operator`` on a NumPy function.

    @ppto.register_operator
    def custom_conv2d(image, kernel): ...          # any NumPy code

    ppto.custom_conv2d(x, k)                       # a lazy op, like a built-in one

The decorated function keeps working on arrays; given a PyPTO tensor it builds a node. Arrays
(and tensors) among the positional arguments are the op's operands; other arguments are constants
of the node. Options:

* ``elementwise=True``: the function maps elements independently and broadcasts like a ufunc, so
  later passes may fuse it (kind ``map``); ``cuda="..."`` gives its scalar C expression, with
  ``{0}``, ``{1}``, ... for the operands.
* ``shape=`` a function of the operands' shapes (and the keyword arguments) giving the result's
  shape; sizes may be symbolic and support + - * //. ``dtype=`` a dtype, or a function of the
  operands' dtypes. By default both are found by calling the function on small arrays: for
  each size symbol, probes that vary it show how each result size depends on it (an affine
  fit, checked by one more probe); a function for which no such fit holds needs ``shape=``.
* ``replace=True`` replaces a user operator of the same name (a built-in op is never replaced).

The derived shape and dtype are recorded on the node; the executor checks every result against
them, so a wrong rule is an error, never a wrong answer.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..api import Tensor, _freeze, apply, current_builder
from ..dtypes import to_dtype
from ..errors import ArgumentError, RegistryError, ShapeError
from ..registry import REGISTRY, OpDef
from ..shapes import broadcast_shapes
from ..symbolic import Expr, add, mul

_SLOT = "<operand>"


def register_operator(
    fn=None, *, name=None, elementwise=False, cuda=None, shape=None, dtype=None, replace=False
):
    """Register ``fn`` (a NumPy function) as ``ppto.<name>``. Usable bare or with options."""
    if fn is None:
        return functools.partial(
            register_operator,
            name=name,
            elementwise=elementwise,
            cuda=cuda,
            shape=shape,
            dtype=dtype,
            replace=replace,
        )
    if not callable(fn):
        raise RegistryError(f"register_operator needs a function, not {fn!r}")
    opname = name or fn.__name__
    if cuda is not None and not elementwise:
        raise RegistryError(f"operator {opname!r}: a CUDA expression needs elementwise=True")

    @functools.wraps(fn)
    def api(*args, **kwargs):
        if not any(isinstance(a, Tensor) for a in args) and current_builder() is None:
            return fn(*args, **kwargs)
        operands = tuple(a for a in args if _is_operand(a))
        template = tuple(_SLOT if _is_operand(a) else a for a in args)
        attrs = {
            # None when every argument is an operand / no keyword arguments: less to read
            "template": None if len(operands) == len(args) else template,
            "kwargs": tuple(sorted(kwargs.items())) or None,
        }
        try:
            hash(tuple(_freeze(v) for v in attrs.values()))
        except TypeError:
            raise ArgumentError(
                f"{opname}: arguments other than arrays must be constants "
                "that can be hashed (numbers, strings, tuples)"
            ) from None
        return apply(opname, operands, attrs)

    def impl(*arrays, template, kwargs, out_shape=None, out_dtype=None):
        return fn(*_fill(template, arrays), **dict(kwargs or ()))

    def normalize(ctx, *types, template, kwargs, out_shape=None, out_dtype=None):
        attrs = {"template": template, "kwargs": kwargs}
        if out_dtype is None:
            out_dtype = (
                _user_dtype(dtype, types, kwargs)
                if dtype is not None
                else _probe(fn, template, kwargs, types, [_unit(t) for t in types])[1]
            )
        attrs["out_dtype"] = out_dtype
        if not elementwise:
            if out_shape is None:
                out_shape = (
                    tuple(shape(*(t.shape for t in types), **dict(kwargs or ())))
                    if shape is not None
                    else _derive_shape(ctx, fn, template, kwargs, types)
                )
            attrs["out_shape"] = out_shape
        return attrs

    def shape_rule(ctx, *shapes, template, kwargs, out_dtype, out_shape=None):
        return out_shape if out_shape is not None else broadcast_shapes(ctx, *shapes)

    op = OpDef(
        opname,
        "map" if elementwise else "custom",
        api,
        impl=impl,
        shape_rule=shape_rule,
        dtype_rule=lambda *keys, out_dtype, **a: out_dtype,
        normalize=normalize,
        cuda=cuda,
        builtin=False,
    )
    REGISTRY.register(op, replace=replace)
    return api


def unregister_operator(name: str) -> None:
    """Remove a user operator (built-in ops cannot be removed)."""
    REGISTRY.unregister(name)


def _is_operand(a) -> bool:
    return isinstance(a, (Tensor, np.ndarray))


def _fill(template, arrays):
    if template is None:
        return list(arrays)
    it = iter(arrays)
    return [next(it) if isinstance(a, str) and a == _SLOT else a for a in template]


def _unit(t):
    return tuple(1 for _ in t.shape)


def _user_dtype(dtype, types, kwargs):
    if callable(dtype) and not isinstance(dtype, type):
        return to_dtype(dtype(*(t.dtype for t in types), **dict(kwargs or ())), "dtype rule result")
    return to_dtype(dtype, "dtype")


def _probe_array(shape, dtype):
    """Deterministic, well-conditioned values (ones would make every matrix singular; square
    float matrices are symmetric positive definite)."""
    rng = np.random.default_rng(len(shape))
    if dtype.kind == "b":
        return np.ones(shape, dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 4, size=shape).astype(dtype)
    a = rng.uniform(0.5, 1.5, size=shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:  # square: symmetric positive definite
        n = shape[-1]  # (what np.linalg.cholesky, eigh, solve accept)
        a = (a + np.swapaxes(a, -1, -2)) / 2 + 2 * n * np.eye(n)
    return a.astype(dtype)


def _probe(fn, template, kwargs, types, shapes):
    arrays = [_probe_array(s, t.dtype) for s, t in zip(shapes, types)]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*_fill(template, arrays), **dict(kwargs or ()))
    except Exception as e:
        raise ShapeError(
            f"could not find the result's shape and dtype by calling it on small arrays of "
            f"shapes {shapes}: {type(e).__name__}: {e}",
            hint="give register_operator shape= (and dtype=)",
            code="PPT503",
        ) from None
    if not isinstance(out, (np.ndarray, np.generic)):
        raise ShapeError(f"returned {type(out).__name__}, not a NumPy array", code="PPT503")
    return tuple(out.shape), to_dtype(out.dtype, "result")


def _derive_shape(ctx, fn, template, kwargs, types):
    """An affine rule: each result size is b + sum(a_j * size_j) over the input size symbols.

    Probes call ``fn`` on small arrays: a base probe, one probe per symbol with that size one
    larger, and a check probe with every size two larger. Sizes keep their order (a kernel
    smaller than an image stays smaller). If ``fn`` rejects independent sizes (it needs a
    square matrix, say), symbols of equal value are tied together (and guarded equal).
    """
    dims, values, base = probe_sizes(ctx, types)
    try:
        return _affine_fit(fn, template, kwargs, types, dims, [[j] for j in range(len(dims))], base)
    except ShapeError:
        groups: dict = {}
        for j, v in enumerate(values):  # (no values known, as in pypto transpile: all tied)
            groups.setdefault(v if v is not None else "free", []).append(j)
        tied = [g for g in groups.values() if len(g) > 1]
        if not tied:
            raise
        for g in tied:
            for j in g[1:]:
                ctx.eq(dims[j], dims[g[0]])  # the rule holds only while they stay equal
        return _affine_fit(fn, template, kwargs, types, dims, list(groups.values()), base)


def probe_sizes(ctx, types):
    """The size symbols of ``types`` (in order), their values when tracing with real inputs
    (None: unknown), and the probes' base sizes: small ones as they are, larger ones in their
    order (above 16), unknown ones 8, 10, 12, ..."""
    dims: list = []
    for t in types:
        for d in t.shape:
            if isinstance(d, Expr) and not any(d == e for e in dims):
                dims.append(d)
    values = [ctx.value(d) for d in dims]
    known = sorted({v for v in values if v is not None})
    base = [
        (v if v <= 16 else 17 + known.index(v)) if v is not None else 8 + 2 * j
        for j, v in enumerate(values)
    ]
    return dims, values, base


def _affine_fit(fn, template, kwargs, types, dims, groups, base):
    def probe(sizes):
        shapes = [
            tuple(d if isinstance(d, int) else sizes[dims.index(d)] for d in t.shape) for t in types
        ]
        return _probe(fn, template, kwargs, types, shapes)[0]

    def shifted(members, by):
        return (
            [b + by if any(j in m for m in members) else b for j, b in enumerate(base)]
            if members
            else list(base)
        )

    out0 = probe(base)
    coeffs = []
    for g in groups:
        outg = probe(shifted([g], 1))
        if len(outg) != len(out0):
            raise ShapeError(
                "the result's rank depends on the input sizes",
                code="PPT503",
                hint="give register_operator shape=",
            )
        coeffs.append([o - o0 for o, o0 in zip(outg, out0)])
    got = probe(shifted(groups, 2))
    predicted = [o0 + 2 * sum(c[i] for c in coeffs) for i, o0 in enumerate(out0)]
    if list(got) != predicted:
        raise ShapeError(
            f"its result's shape is not an affine function of the input sizes "
            f"(probes gave {out0} and {got})",
            code="PPT503",
            hint="give register_operator shape=",
        )
    rule = []
    for i, o0 in enumerate(out0):
        dim = o0
        for c, g in zip(coeffs, groups):
            if c[i]:
                dim = add(add(dim, -c[i] * base[g[0]]), mul(c[i], dims[g[0]]))
        rule.append(dim)
    return tuple(rule)
