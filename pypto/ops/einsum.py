"""``np.einsum``: a composite of transposes, reshapes, sums and matrix products.

The subscripts are NumPy's: explicit (``'ij,jk->ik'``) or implicit (the subscripts that appear
once, in ASCII order, after the broadcast axes), letters of either case, ``...`` for broadcast
axes, a subscript repeated in one operand for a diagonal (``'ii->i'``, ``'ii'``). The expansion
follows the contraction, not NumPy's loop: each operand's axes that nothing else needs are summed
first, then the operands are contracted two at a time from the left, keeping the axes the output
or a later operand needs. A pair with subscripts to contract goes through ``matmul`` for float
and complex dtypes (both operands transposed to (batch..., free, contracted) and (batch...,
contracted, free), reshaped where a group has other than one axis), and through a broadcast
``multiply`` and a ``sum`` in the operands' dtype for integers and bools (einsum of int8 wraps in
int8; of bools, an ``or`` of ``and`` products); a pair with none is a broadcast ``multiply``.
Sizes broadcast as NumPy's do: a subscript of size 1 in one operand stretches to the others'
size. The result has NumPy's dtype: the operands' result type (Python numbers count as arrays, as
NumPy's einsum makes them), or ``dtype=``; float16 is computed in float32, as NumPy computes it.

The subscript-list form (``np.einsum(a, [0, 1], b, [1, 2])``) and ``casting=`` other than
``'safe'`` raise HostOnly: a compiled function runs them as NumPy's call (a graph break).

A single operand whose every subscript is in the output is a view in NumPy, whose ``dtype=`` is
then ignored; so it is here (a transpose is a view here too; a diagonal is a gathered copy, its
values exactly the view's).
"""

from __future__ import annotations

import numpy as np

from ..api import Tensor, apply, current_builder, lift, no_out
from ..dtypes import to_dtype
from ..errors import ArgumentError, DTypeError, HostOnly, ShapeError
from ..registry import OpDef, register
from ..shapes import broadcast_shapes
from .composites import _op
from .reorders import concatenate, expand_dims, reshape, transpose

_ELLIPSIS = "..."
_OPTIMIZE = (False, True, "greedy", "optimal")
_ORDERS = ("C", "F", "A", "K")


def einsum(subscripts, *operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """``np.einsum(subscripts, *operands)``: sums of products over the repeated subscripts, the
    output's subscripts explicit after ``->`` or implicit. ``optimize`` is accepted and ignored
    (the contraction is pairwise from the left, products through ``matmul``), as is ``order``;
    ``dtype=`` computes in that dtype (cast to it under NumPy's ``'safe'`` rule)."""
    no_out(out, "einsum")
    if isinstance(subscripts, bytes):
        subscripts = subscripts.decode("ascii", errors="replace")
    if not isinstance(subscripts, str):  # (HostOnly: in a compiled function, NumPy's call)
        raise HostOnly(
            "einsum with subscript lists (np.einsum(a, [0, 1], b, [1, 2]))",
            hint="write the subscripts as a string: np.einsum('ij,jk->ik', a, b)",
        )
    if casting != "safe":
        raise HostOnly(
            f"einsum with casting={casting!r}", hint="cast the operands with .astype() first"
        )
    if not _optimize_ok(optimize):
        raise ArgumentError(
            f"einsum: optimize must be a bool, 'greedy', 'optimal' or an einsum_path list, "
            f"not {optimize!r}"
        )
    if not (isinstance(order, str) and order.upper() in _ORDERS):
        raise ArgumentError(f"einsum: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if not operands:
        raise ShapeError("einsum needs the subscripts string and at least one operand")
    _parse(subscripts, len(operands))  # refuse bad subscripts before anything runs
    dt = None if dtype is None else to_dtype(dtype, "dtype")
    return apply("einsum", operands, {"subscripts": subscripts, "dtype": dt})


def _optimize_ok(optimize) -> bool:
    if isinstance(optimize, (bool, np.bool_)):
        return True
    if isinstance(optimize, str):
        return optimize in _OPTIMIZE
    return isinstance(optimize, (list, tuple)) and bool(optimize) and optimize[0] == "einsum_path"


# -- the subscripts string ------------------------------------------------------------------------
def _labels(text: str, where: str) -> tuple:
    """The subscripts of one operand (or of the output): letters and at most one ``...``."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == " ":
            i += 1
        elif c == ".":
            if text[i : i + 3] != _ELLIPSIS or _ELLIPSIS in out:
                raise ShapeError(
                    "einstein sum subscripts string contains a '.' that is not part of an "
                    f"ellipsis ('...') in {where}"
                )
            out.append(_ELLIPSIS)
            i += 3
        elif c.isascii() and c.isalpha():
            out.append(c)
            i += 1
        else:
            raise ShapeError(
                f"invalid subscript {c!r} in einstein sum subscripts string, subscripts must be "
                "letters"
            )
    return tuple(out)


def _parse(subscripts: str, nop: int):
    """(each operand's subscripts, the output's or None where implicit), checked as far as
    they can be without the operands' ranks."""
    if "->" in subscripts:
        left, right = subscripts.split("->", 1)
    else:
        left, right = subscripts, None
    parts = left.split(",")
    if len(parts) != nop:
        raise ShapeError(
            f"einsum: the subscripts string names {len(parts)} operand(s), but {nop} were given"
        )
    inputs = tuple(_labels(p, f"operand {k}") for k, p in enumerate(parts))
    if right is None:
        return inputs, None
    output = _labels(right, "the output")
    seen = {s for labels in inputs for s in labels}
    for k, s in enumerate(output):
        if s == _ELLIPSIS:
            continue
        if s in output[k + 1 :]:
            raise ShapeError(
                f"einstein sum subscripts string includes output subscript {s!r} multiple times"
            )
        if s not in seen:
            raise ShapeError(
                f"einstein sum subscripts string included output subscript {s!r} which never "
                "appeared in an input"
            )
    return inputs, output


def returns_view(subscripts) -> bool:
    """Whether NumPy's ``np.einsum(subscripts, x)`` of one operand is a view of ``x``: every
    subscript of it is in the output (a transpose, a diagonal), nothing summed."""
    try:
        (labels,), output = _parse(subscripts, 1)
    except (ShapeError, AttributeError, TypeError):
        return False
    if output is None:  # implicit: the subscripts that appear once
        output = [s for s in labels if labels.count(s) == 1]
    return set(labels) <= set(output)


def _axis_labels(inputs, output, ranks):
    """Every operand's axes as labels (letters; the broadcast axes of ``...`` as ints 0..n-1,
    aligned on the right as broadcasting aligns them) and the output's."""
    nb = 0
    for k, (labels, rank) in enumerate(zip(inputs, ranks)):
        letters = sum(1 for s in labels if s != _ELLIPSIS)
        if letters > rank:
            raise ShapeError(
                f"einstein sum subscripts string contains too many subscripts for operand {k} "
                f"({letters} subscripts, {rank} dimensions)"
            )
        if _ELLIPSIS not in labels and letters != rank:
            raise ShapeError(
                f"operand {k} has more dimensions ({rank}) than subscripts given in einstein sum "
                f"({letters}), but no '...' ellipsis provided to broadcast the extra dimensions."
            )
        nb = max(nb, rank - letters)

    def expanded(labels, n):
        out = []
        for s in labels:
            out.extend(range(nb - n, nb) if s == _ELLIPSIS else (s,))
        return out

    axes = [
        expanded(labels, rank - sum(1 for s in labels if s != _ELLIPSIS))
        for labels, rank in zip(inputs, ranks)
    ]
    if output is None:
        counts: dict = {}
        for labels in inputs:
            for s in labels:
                counts[s] = counts.get(s, 0) + 1
        once = sorted(s for s, n in counts.items() if n == 1 and s != _ELLIPSIS)
        return axes, list(range(nb)) + once
    if _ELLIPSIS not in output and nb:
        raise ShapeError(
            "output has more dimensions than subscripts given in einstein sum, but no '...' "
            "ellipsis provided to broadcast the extra dimensions."
        )
    return axes, expanded(output, nb)


def _show(label) -> str:
    return repr(label) if isinstance(label, str) else f"broadcast axis {label} (of '...')"


# -- the expansion --------------------------------------------------------------------------------
def _strong(t: Tensor) -> Tensor:
    """A Python number as the array NumPy's einsum makes of it (float64, int64, ...)."""
    return t.astype(t.dtype) if t._atom.type.weak else t


def _permuted(x: Tensor, labels: list, order: list) -> Tensor:
    if labels == order:
        return x
    return transpose(x, tuple(labels.index(s) for s in order))


def _summed(x: Tensor, labels: list, drop: list, dtype) -> tuple[Tensor, list]:
    """x summed over the axes of ``drop`` (a sum in ``dtype``; ``any`` for bools)."""
    if not drop:
        return x, labels
    axes = tuple(labels.index(s) for s in drop)
    if dtype == np.bool_:
        x = x.any(axis=axes)
    else:
        x = x.sum(axis=axes, dtype=dtype)
    return x, [s for s in labels if s not in drop]


def _diagonal(x: Tensor, labels: list, k: int, ctx) -> tuple[Tensor, list]:
    """x with every subscript repeated in it taken once: its diagonal, moved last. Gathered,
    not computed (the values as they are, -0.0 and NaNs too, as NumPy's view has them): the
    two axes last, flattened, padded by n elements to n * (m + 1), seen as (n, m + 1); its
    first column is x[i, i]."""
    while True:
        repeated = [s for s in dict.fromkeys(labels) if labels.count(s) > 1]
        if not repeated:
            return x, labels
        s = repeated[0]
        p = labels.index(s)
        q = labels.index(s, p + 1)
        n, m = x.shape[p], x.shape[q]
        if not ctx.eq(n, m):
            raise ShapeError(
                f"dimensions in operand {k} for collapsing index {s!r} don't match "
                f"({ctx.show_dim(n)} != {ctx.show_dim(m)})"
            )
        rest = [i for i in range(len(labels)) if i not in (p, q)]
        x = _permuted(x, list(range(len(labels))), rest + [p, q])
        lead = x.shape[:-2]
        pad = _op("broadcast_to")(np.zeros((), x.dtype), lead + (n,))
        flat = concatenate([reshape(x, lead + (n * m,)), pad], axis=-1)
        x = reshape(flat, lead + (n, m + 1))[(Ellipsis, slice(None), 0)]
        labels = [labels[i] for i in rest] + [s]


def _product(dims) -> object:
    total = 1
    for d in dims:
        total = d if isinstance(total, int) and total == 1 else total * d
    return total


def _pair(a: Tensor, la: list, b: Tensor, lb: list, keep: set, dtype) -> tuple[Tensor, list]:
    """The contraction of two operands over their common subscripts that ``keep`` lacks."""
    batch = [s for s in la if s in lb and s in keep]
    contracted = [s for s in la if s in lb and s not in keep]
    left = [s for s in la if s not in lb]
    right = [s for s in lb if s not in la]
    labels = batch + left + right
    nb, nl, nc, nr = len(batch), len(left), len(contracted), len(right)
    if contracted and dtype.kind in "fc":  # a matrix product: (..., L, C) @ (..., C, R)
        a = _permuted(a, la, batch + left + contracted)
        b = _permuted(b, lb, batch + contracted + right)
        sa, sb = a.shape, b.shape
        if nl != 1 or nc != 1:
            a = reshape(a, sa[:nb] + (_product(sa[nb : nb + nl]), _product(sa[nb + nl :])))
        if nc != 1 or nr != 1:
            b = reshape(b, sb[:nb] + (_product(sb[nb : nb + nc]), _product(sb[nb + nc :])))
        c = _op("matmul")(a, b)
        if nl != 1 or nr != 1:
            c = reshape(c, c.shape[:nb] + sa[nb : nb + nl] + sb[nb + nc :])
        return c, labels
    # a broadcast product, then a sum over the contracted axes (in the operands' dtype)
    a = _permuted(a, la, batch + left + contracted)
    b = _permuted(b, lb, batch + right + contracted)
    if nr:
        a = expand_dims(a, tuple(range(nb + nl, nb + nl + nr)))
    if nl:
        b = expand_dims(b, tuple(range(nb, nb + nl)))
    prod = _op("multiply")(a, b)
    drop = tuple(range(nb + nl + nr, nb + nl + nr + nc))
    if not drop:
        return prod, labels
    if dtype == np.bool_:
        return prod.any(axis=drop), labels
    return prod.sum(axis=drop, dtype=dtype), labels


def _same(ctx, d, full) -> bool:
    """Whether an axis of size ``d`` already has its subscript's size (broadcasting asked)."""
    return d == full or (not (isinstance(d, int) and d == 1) and ctx.eq(d, full))


def _einsum(*operands, subscripts, dtype):
    ctx = current_builder().ctx
    inputs, output = _parse(subscripts, len(operands))
    ops = [_strong(lift(x)) for x in operands]
    axes, out = _axis_labels(inputs, output, [x.ndim for x in ops])

    view = len(ops) == 1 and set(axes[0]) <= set(out)  # NumPy's view: dtype= is ignored
    if view:
        ctype = work = ops[0].dtype
    else:
        dts = [x.dtype for x in ops]
        if dtype is not None:
            for k, d in enumerate(dts):
                if not np.can_cast(d, dtype, "safe"):
                    raise DTypeError(
                        f"einsum: operand {k} cannot be cast from {d} to {dtype} according to "
                        "the rule 'safe'"
                    )
        ctype = dtype if dtype is not None else np.result_type(*dts)
        work = np.dtype(np.float32) if ctype == np.float16 else ctype  # (as NumPy computes)
        ops = [x if x.dtype == work else x.astype(work) for x in ops]

    for k in range(len(ops)):
        ops[k], axes[k] = _diagonal(ops[k], axes[k], k, ctx)

    # every subscript's size: its sizes in the operands broadcast together
    sizes: dict = {}
    for k, (x, labels) in enumerate(zip(ops, axes)):
        for ax, (s, d) in enumerate(zip(labels, x.shape)):
            if s not in sizes:
                sizes[s] = d
                continue
            try:
                (sizes[s],) = broadcast_shapes(ctx, (sizes[s],), (d,))
            except ShapeError:
                raise ShapeError(
                    f"einsum: operands could not be broadcast together: subscript {_show(s)} "
                    f"has size {ctx.show_dim(d)} in operand {k} (axis {ax}), "
                    f"{ctx.show_dim(sizes[s])} before"
                ) from None
    for k, (x, labels) in enumerate(zip(ops, axes)):
        full = tuple(sizes[s] for s in labels)
        if not all(_same(ctx, d, f) for d, f in zip(x.shape, full)):
            ops[k] = _op("broadcast_to")(x, full)

    # each operand summed over the subscripts nothing else needs, then the pairs from the left
    for k in range(len(ops)):
        others = set(out).union(*(axes[j] for j in range(len(ops)) if j != k))
        ops[k], axes[k] = _summed(ops[k], axes[k], [s for s in axes[k] if s not in others], work)
    x, labels = ops[0], axes[0]
    for k in range(1, len(ops)):
        keep = set(out).union(*axes[k + 1 :])
        x, labels = _pair(x, labels, ops[k], axes[k], keep, work)

    x = _permuted(x, labels, out)
    return x if x.dtype == ctype else x.astype(ctype)


def _einsum_ref(*operands, subscripts, dtype):
    return np.einsum(subscripts, *operands, dtype=dtype)


einsum.__name__ = einsum.__qualname__ = "einsum"


def _view_of(args, kwargs):
    """NumPy's einsum of one operand that sums nothing is a view of it (position 1)."""
    return 1 if len(args) == 2 and isinstance(args[0], str) and returns_view(args[0]) else None


register(
    OpDef(
        "einsum",
        "composite",
        einsum,
        impl=_einsum_ref,
        expand=_einsum,
        numpy=(np.einsum,),
        view_of=_view_of,
    )
)
