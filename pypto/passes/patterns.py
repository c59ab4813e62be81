"""Pattern rewriting in the op vocabulary: (pattern, replacement) pairs.

A pattern is a tree of ``Op(name, *args, where=...)`` nodes over ``Cap(name)`` captures, spelled
with registry op names. One ``Op`` object used twice in a pattern must match one equation (the
``exp`` of a softmax is read by its sum and its division). ``add`` and ``multiply`` match their
operands in either order. A match applies only when every matched equation but the root is read
by matched equations alone (the values it removes are not needed elsewhere), and when the
replacement's rules derive exactly the root's type.

The attention rule: ``softmax(scale(Q @ K^T) [+ mask]) @ V`` -> ``attention(Q, K, V, ...)``,
for the stable softmax along the last axis as NumPy code and ``ppto.softmax`` write it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import PyptoError
from ..ir import Eqn, Graph, Literal, Var, freeze_attrs
from ..registry import REGISTRY
from ..shapes import ShapeContext, input_facts
from ..types import TensorType
from ..verify import same_type
from .graphs import consumers, producers, rebuild


@dataclass(frozen=True, eq=False)
class Cap:
    name: str


@dataclass(frozen=True, eq=False)
class Op:
    op: str
    args: tuple
    where: Callable | None = None  # (attrs dict, eqn) -> bool

    def __init__(self, op, *args, where=None):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "where", where)


_COMMUTATIVE = {"add", "multiply"}


def match(pattern, atom, prod: dict, state: dict | None = None) -> dict | None:
    """Bindings ``{"caps": {name: atom}, "eqns": {id(Op): Eqn}}`` or None."""
    state = state or {"caps": {}, "eqns": {}}
    if isinstance(pattern, Cap):
        bound = state["caps"].get(pattern.name)
        if bound is not None:
            return state if bound is atom else None
        return {"caps": {**state["caps"], pattern.name: atom}, "eqns": state["eqns"]}
    if not isinstance(atom, Var):
        return None
    eqn = prod.get(id(atom))
    if eqn is None or eqn.op != pattern.op or len(eqn.inputs) != len(pattern.args):
        return None
    seen = state["eqns"].get(id(pattern))
    if seen is not None:
        return state if seen is eqn else None
    if pattern.where is not None and not pattern.where(eqn.params, eqn):
        return None
    orders = [eqn.inputs]
    if eqn.op in _COMMUTATIVE:
        orders.append(tuple(reversed(eqn.inputs)))
    for inputs in orders:
        s = {"caps": state["caps"], "eqns": {**state["eqns"], id(pattern): eqn}}
        for p, a in zip(pattern.args, inputs):
            s = match(p, a, prod, s)
            if s is None:
                break
        if s is not None:
            return s
    return None


@dataclass(frozen=True)
class Rewrite:
    name: str
    pattern: Op
    replace: Callable  # (caps, root Eqn) -> list of (op, inputs, attrs) ending with the root's


def _last_axis(attrs, eqn) -> bool:
    rank = eqn.inputs[0].type.rank
    return attrs.get("axis") == (rank - 1,) and attrs.get("keepdims") is True


def _swaps_last_two(attrs, eqn) -> bool:
    perm = attrs["perm"]
    n = len(perm)
    return n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2)


def _softmax_rows(s):
    m = Op("max", s, where=_last_axis)
    e = Op("exp", Op("subtract", s, m))
    return Op("divide", e, Op("sum", e, where=_last_axis))


def _attention_rules() -> list[Rewrite]:
    rules = []
    for transposed in (True, False):
        k = Op("transpose", Cap("k"), where=_swaps_last_two) if transposed else Cap("kt")
        scores = Op("matmul", Cap("q"), k)
        for scale_op in (None, "multiply", "divide"):
            scaled = scores if scale_op is None else Op(scale_op, scores, Cap("scale"))
            for masked in (False, True):
                s = Op("add", scaled, Cap("mask")) if masked else scaled
                pattern = Op("matmul", _softmax_rows(s), Cap("v"))
                name = "attention" + "".join(
                    f" {p}"
                    for p, on in (
                        (f"({scale_op} by a scalar)", scale_op),
                        ("(+ mask)", masked),
                        ("(K given transposed)", not transposed),
                    )
                    if on
                )
                rules.append(Rewrite(name, pattern, _attention_replacement(scale_op, masked)))
    return rules


def _attention_replacement(scale_op, masked):
    def replace(caps, root):
        steps, k = [], caps.get("k")
        if k is None:  # Q @ Kt: read Kt through a transpose (an index map, no copy)
            kt = caps["kt"]
            if not isinstance(kt, Var) or kt.type.rank < 2:
                return None
            n = kt.type.rank
            steps.append(("transpose", (kt,), {"perm": tuple(range(n - 2)) + (n - 1, n - 2)}))
            k = "previous"
        operands = [caps["q"], k, caps["v"]]
        # each step at the precision NumPy computes it in: a float32 product scaled by a
        # float64 scalar is a float32 product, then float64 (the fused op has one precision)
        key = caps.get("k", caps.get("kt"))
        scores = np.result_type(caps["q"].type.dtype, key.type.dtype)
        if scores != root.out.type.dtype:
            return None
        if scale_op is not None:
            if caps["scale"].type.rank:
                return None
            operands.append(caps["scale"])
        if masked:
            operands.append(caps["mask"])
        steps.append(("attention", tuple(operands), {"scale_op": scale_op, "masked": masked}))
        return steps

    return replace


RULES: list[Rewrite] = _attention_rules()


def rewrite_patterns(graph: Graph, notes: list[str], facts=None, rules=None) -> Graph:
    """Apply the rewrite rules wherever they match (each root once, first rule that fits)."""
    rules = RULES if rules is None else rules
    prod = producers(graph)
    users = consumers(graph)
    outputs = {id(a) for a in graph.outputs if isinstance(a, Var)}
    if facts is None:
        facts = input_facts(v.type for v in graph.inputs)
    facts = [*facts, *graph.guards]
    replaced: dict[int, list[Eqn]] = {}
    for eqn in graph.eqns:
        for rule in rules:
            state = match(rule.pattern, eqn.out, prod)
            if state is None:
                continue
            matched = set(map(id, state["eqns"].values()))
            inner = [e for e in state["eqns"].values() if e is not eqn]
            if any(
                id(e.out) in outputs or any(id(u) not in matched for u in users.get(id(e.out), ()))
                for e in inner
            ):
                notes.append(f"pattern {rule.name}: not applied (a value inside is used elsewhere)")
                continue
            new = _build(rule.replace(state["caps"], eqn), eqn, ShapeContext(facts=facts))
            if new is None:
                continue
            replaced[id(eqn)] = new
            notes.append(f"pattern {rule.name}: {len(matched)} equations -> 1 `{new[-1].op}`")
            break
    if not replaced:
        return graph
    eqns = [x for e in graph.eqns for x in replaced.get(id(e), [e])]
    return rebuild(graph, eqns, graph.outputs)


def _build(steps, root: Eqn, ctx) -> list[Eqn] | None:
    """Type the replacement's equations; None unless the last derives the root's type."""
    if steps is None:
        return None
    built: list[Eqn] = []
    for i, (name, inputs, attrs) in enumerate(steps):
        inputs = tuple(built[-1].out if a == "previous" else a for a in inputs)
        try:
            norm, t = REGISTRY[name].infer(ctx, tuple(a.type for a in inputs), attrs)
        except PyptoError:
            return None
        last = i == len(steps) - 1
        if last and not same_type(ctx, t, root.out.type):
            return None
        out = root.out if last else Var(TensorType(t.dtype, t.shape, t.weak))
        built.append(Eqn(name, inputs, freeze_attrs(norm), out, root.site))
    if ctx.guards:  # the rules needed a size fact the graph does not have
        return None
    return built


__all__ = ["RULES", "Cap", "Literal", "Op", "Rewrite", "match", "rewrite_patterns"]
