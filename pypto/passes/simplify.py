"""Simplification: constant folding, algebraic identities, CSE, dead-code removal.

Each rewrite keeps every value's type exactly (dtype, shape, weakness): an identity such as
``x * 1 -> x`` applies only when ``x`` already has the product's type, so NumPy's promotion is
never changed. ``x + 0`` is *not* an identity for floats (``-0.0 + 0 == 0.0``) and is left alone.
User operators are never folded or merged (they may not be pure). Every function here returns a
new Graph and appends what it did to ``notes``.
"""

from __future__ import annotations

import numpy as np

from ..ir import Eqn, Graph, Literal, Var, freeze_attrs
from ..lower.index_map import IndexMap, Linear, compose, exact_same, identity, view_map
from ..registry import REGISTRY
from ..symbolic import Expr, SymFloat
from ..types import TensorType
from .graphs import rebuild


def fold_constants(graph: Graph, notes: list[str], facts=None) -> Graph:
    """Scalar ops on literals become literals (``2 * 3.0``, ``np.float32(1) / 3``)."""
    sub: dict[int, object] = {}
    eqns, folded = [], 0
    for eqn in graph.eqns:
        inputs = tuple(_subst(a, sub) for a in eqn.inputs)
        op = REGISTRY[eqn.op]
        if (
            op.kind == "map"
            and op.builtin
            and inputs
            and eqn.out.type.rank == 0
            and not op.returns_array(eqn.params)  # np.zeros(()) is a 0-d array, not a number
            and all(isinstance(a, Literal) and _plain(a.value) for a in inputs)
        ):
            attrs = {k: v for k, v in eqn.attrs if k != "weak"}
            try:
                with np.errstate(all="ignore"):
                    value = op.impl(*(a.value for a in inputs), **attrs)
            except Exception:  # an error NumPy raises at run time stays a run-time error
                value = None
            if value is not None and np.asarray(value).dtype == eqn.out.type.dtype:
                t = eqn.out.type
                value = np.asarray(value)[()]
                sub[id(eqn.out)] = Literal(value.item() if t.weak else value, t)
                folded += 1
                continue
        eqns.append(_with_inputs(eqn, inputs))
    if folded:
        notes.append(f"constant folding: {folded} scalar op(s) computed at compile time")
    return rebuild(graph, eqns, tuple(_subst(a, sub) for a in graph.outputs))


def _plain(value) -> bool:
    return not isinstance(value, (Expr, SymFloat))


def identities(graph: Graph, notes: list[str], facts=None) -> Graph:
    """``transpose(transpose(x))``, ``reshape(reshape(x))``, ``x * 1``, ``x / 1``, ``x - 0``,
    identity reorders, same-type ``astype``/``copy``, and ``x / 2^k`` as ``x * 2^-k``. A graph
    output is never replaced by another value (NumPy would return a new array, not an alias of
    x)."""
    outputs = {id(a) for a in graph.outputs if isinstance(a, Var)}
    sub: dict[int, object] = {}
    producer: dict[int, Eqn] = {}
    eqns, done = [], []
    for eqn in graph.eqns:
        eqn = _with_inputs(eqn, tuple(_subst(a, sub) for a in eqn.inputs))
        replaced, how = _identity(eqn, producer)
        if replaced is not None and not isinstance(replaced, Eqn) and id(eqn.out) in outputs:
            replaced, how = None, None
        if isinstance(replaced, Eqn):
            eqn = replaced
        elif replaced is not None:
            sub[id(eqn.out)] = replaced
            done.append(how)
            continue
        if how:
            done.append(how)
        producer[id(eqn.out)] = eqn
        eqns.append(eqn)
    for how in sorted(set(done)):
        notes.append(f"identity: {how} ({done.count(how)}x)")
    return rebuild(graph, eqns, tuple(_subst(a, sub) for a in graph.outputs))


def _identity(eqn: Eqn, producer: dict):
    """(replacement atom or rewritten Eqn or None, description)."""
    x = eqn.inputs[0] if eqn.inputs else None
    same = isinstance(x, Var) and x.type == eqn.out.type
    if _is_view(eqn):
        m, inner = view_map(eqn, exact_same), producer.get(id(x))
        if same and m in (identity(eqn.out.type.rank), Linear(x.type.shape, x.type.shape)):
            return x, f"{eqn.op} that moves no element -> x"
        if inner is not None and _is_view(inner):
            base, mi = inner.inputs[0], view_map(inner, exact_same)
            if isinstance(m, Linear) and isinstance(mi, Linear):  # one reshape
                if base.type == eqn.out.type:
                    return base, f"{eqn.op}({inner.op}(x)) -> x"
                return Eqn("reshape", (base,), eqn.attrs, eqn.out, eqn.site), (
                    f"{eqn.op}({inner.op}(x)) -> reshape(x)"
                )
            perm = (
                _permutation(m, x.type.shape, eqn.out.type.shape)
                and _permutation(mi, base.type.shape, x.type.shape)
                and _permutation(compose(m, mi), base.type.shape, eqn.out.type.shape)
            )
            if perm:  # one transpose (or none)
                if perm == tuple(range(len(perm))):
                    return base, f"{eqn.op}({inner.op}(x)) -> x"
                new = Eqn("transpose", (base,), freeze_attrs({"perm": perm}), eqn.out, eqn.site)
                return new, f"{eqn.op}({inner.op}(x)) -> transpose(x)"
    if eqn.op in ("astype", "copy") and same:
        return x, f"{eqn.op} to the same type -> x"
    if eqn.op in ("multiply", "divide", "subtract") and len(eqn.inputs) == 2:
        a, b = eqn.inputs
        unit = 0 if eqn.op == "subtract" else 1
        if _is(b, unit) and isinstance(a, Var) and a.type == eqn.out.type:
            return a, f"x {_SYMBOL[eqn.op]} {unit} -> x"
        if eqn.op == "multiply" and _is(a, 1) and isinstance(b, Var) and b.type == eqn.out.type:
            return b, "1 * x -> x"
        r = _reciprocal_power_of_two(b, eqn.out.type.dtype)
        if eqn.op == "divide" and r is not None and isinstance(a, Var) and a.type == eqn.out.type:
            new = Eqn("multiply", (a, r), eqn.attrs, eqn.out, eqn.site)
            return new, "x / 2^k -> x * 2^-k (the same rounding, no division)"
    return None, None


def _is_view(eqn: Eqn) -> bool:
    return REGISTRY[eqn.op].view and isinstance(eqn.inputs[0], Var)


def _permutation(m, in_shape, out_shape):
    """The axes of a view that only permutes them, as ``np.transpose``'s ``axes`` (each result
    axis' operand axis); None for any other view (a slice has the map of its whole axis)."""
    if not isinstance(m, IndexMap) or len(m.reads) != m.out_rank:
        return None
    if any(r.src is None or r.scale != 1 or r.offset != 0 for r in m.reads):
        return None
    if any(out_shape[r.src] != d for r, d in zip(m.reads, in_shape)):
        return None
    perm = [0] * m.out_rank
    for i, r in enumerate(m.reads):
        perm[r.src] = i
    return tuple(perm) if sorted(perm) == list(range(m.out_rank)) else None


def _reciprocal_power_of_two(atom, dtype):
    """1/c as a literal of c's type (a Python float for a Python int c) where c is a literal of
    magnitude 2^k whose reciprocal 2^-k is exact in ``dtype`` (a float type): then x / c and
    x * (1/c) round the same real number x * 2^-k, so they agree bit for bit (NaN, infinities,
    signed zeros, subnormals included). Otherwise None."""
    if not isinstance(atom, Literal) or not _plain(atom.value) or dtype.kind != "f":
        return None
    python_int = atom.type.weak and type(atom.value) is int  # x / 2: x * 0.5, a Python float
    if (atom.type.dtype.kind != "f" and not python_int) or np.ndim(atom.value) != 0:
        return None
    with np.errstate(all="ignore"):
        try:
            c = dtype.type(atom.value)
        except OverflowError:  # a Python int beyond every float
            return None
        r = dtype.type(1) / c
        if c != atom.value or not np.isfinite(r) or r == 0 or dtype.type(1) / r != c:
            return None
    if np.frexp(c)[0] not in (0.5, -0.5) or np.frexp(r)[0] not in (0.5, -0.5):
        return None
    if python_int:
        return Literal(float(r), TensorType(np.dtype(np.float64), (), True))
    value = atom.type.dtype.type(r)
    if value != r:
        return None
    return Literal(value.item() if atom.type.weak else value, atom.type)


_SYMBOL = {"multiply": "*", "divide": "/", "subtract": "-"}


def _is(atom, value) -> bool:
    if not isinstance(atom, Literal) or not _plain(atom.value):
        return False
    v = atom.value
    return not isinstance(v, (bool, np.bool_)) and np.ndim(v) == 0 and v == value


def cse(graph: Graph, notes: list[str], facts=None) -> Graph:
    """Equations computing the same op of the same operands and attributes become one (but two
    outputs stay two arrays)."""
    outputs = {id(a) for a in graph.outputs if isinstance(a, Var)}
    sub: dict[int, object] = {}
    seen: dict[tuple, Var] = {}
    eqns, merged = [], 0
    for eqn in graph.eqns:
        eqn = _with_inputs(eqn, tuple(_subst(a, sub) for a in eqn.inputs))
        fresh = eqn.out.type.rank and all(a.type.rank == 0 for a in eqn.inputs)
        if REGISTRY[eqn.op].builtin and not fresh:  # two np.zeros(n) stay two arrays (each
            key = (eqn.op, tuple(_key(a) for a in eqn.inputs), eqn.attrs)  # may be written)
            prior = seen.get(key)
            both_out = id(eqn.out) in outputs and prior is not None and id(prior) in outputs
            if prior is not None and prior.type == eqn.out.type and not both_out:
                sub[id(eqn.out)] = prior
                merged += 1
                continue
            seen[key] = eqn.out
        eqns.append(eqn)
    if merged:
        notes.append(f"common subexpressions: {merged} duplicate equation(s) merged")
    return rebuild(graph, eqns, tuple(_subst(a, sub) for a in graph.outputs))


def _key(atom):
    if isinstance(atom, Var):
        return ("v", id(atom))
    v = atom.value
    return ("l", type(v).__name__, repr(v), atom.type)


def dead_code(graph: Graph, notes: list[str], facts=None) -> Graph:
    """Equations whose results nothing reads."""
    live: set[int] = {id(a) for a in graph.outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(graph.eqns):
        if id(eqn.out) in live:
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    removed = len(graph.eqns) - len(kept)
    if removed:
        notes.append(f"dead code: {removed} unused equation(s) removed")
    return rebuild(graph, list(reversed(kept)), graph.outputs)


def _subst(atom, sub):
    return sub.get(id(atom), atom) if isinstance(atom, Var) else atom


def _with_inputs(eqn: Eqn, inputs: tuple) -> Eqn:
    if all(a is b for a, b in zip(inputs, eqn.inputs)):
        return eqn
    return Eqn(eqn.op, inputs, eqn.attrs, eqn.out, eqn.site)
