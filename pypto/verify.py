"""verify(): re-derive every type of a Graph from its inputs (jaxpr's typecheck).

Checks: each value defined once before use (SSA), every op registered and primitive, attributes
already normalized (normalizing again changes nothing), each recorded output type equal to the
one its rules derive, outputs defined, and every size question the rules ask answered by a proof,
the input specialization or a recorded guard (no unrecorded assumption). Raises InternalError.
"""

from __future__ import annotations

import numpy as np

from .errors import InternalError, PyptoError
from .ir import Graph, Literal, Var
from .printer import format_graph
from .registry import REGISTRY
from .shapes import ShapeContext, input_facts
from .types import TensorType


def _fail(graph: Graph, message: str, index: int | None = None):
    where = f"equation {index}: " if index is not None else ""
    raise InternalError(f"verify: {where}{message}\n{format_graph(graph)}")


def verify(graph: Graph, facts=None, named: bool = True) -> Graph:
    """Raise InternalError unless the graph is well formed. ``facts``: what holds where the graph
    runs (a block of a function); by default, what specializing its inputs guarantees.
    ``named=False``: a kernel's body, whose inputs are values of a larger graph, unnamed."""
    if facts is None:
        facts = input_facts(v.type for v in graph.inputs)
    ctx = ShapeContext(facts=[*facts, *graph.guards])
    defined: set[int] = set()

    def define(v, index=None):
        if not isinstance(v, Var):
            _fail(graph, f"{v!r} is not a Var", index)
        if id(v) in defined:
            _fail(graph, f"{v!r} is defined twice", index)
        defined.add(id(v))

    names = [v.name for v in graph.inputs]
    if named and (len(set(names)) != len(names) or not all(n and n.isidentifier() for n in names)):
        _fail(graph, f"input names must be distinct identifiers: {names}")
    for v in graph.inputs:
        define(v)
    for v, array in graph.consts:
        define(v)
        if v.type != TensorType(array.dtype, tuple(array.shape)):
            _fail(graph, f"constant {v!r} does not match its array {array.dtype}{array.shape}")

    for i, eqn in enumerate(graph.eqns):
        op = REGISTRY.lookup(eqn.op)
        if op is None:
            _fail(graph, f"unknown op {eqn.op!r}", i)
        if op.kind == "composite":
            _fail(graph, f"composite op {eqn.op!r} must be expanded", i)
        for a in eqn.inputs:
            if isinstance(a, Literal):
                _check_literal(graph, a, i)
            elif id(a) not in defined:
                _fail(graph, f"{a!r} is used before it is defined", i)
        attrs = eqn.params
        try:
            norm, derived = op.infer(ctx, tuple(a.type for a in eqn.inputs), attrs)
        except PyptoError as e:
            _fail(graph, f"`{eqn.op}` rules reject their inputs: {e.message}", i)
        if norm != attrs:
            _fail(graph, f"`{eqn.op}` attributes not normalized: {attrs} -> {norm}", i)
        if not same_type(ctx, derived, eqn.out.type):
            _fail(graph, f"`{eqn.op}` recorded {eqn.out.type}, rules derive {derived}", i)
        define(eqn.out, i)

    for a in graph.outputs:
        if isinstance(a, Var) and id(a) not in defined:
            _fail(graph, f"output {a!r} is not defined")
    if ctx.guards:
        shown = ", ".join(str(g) for g in ctx.guards)
        _fail(graph, f"rules relied on size facts not recorded as guards: {shown}")
    return graph


def same_type(ctx: ShapeContext, a: TensorType, b: TensorType) -> bool:
    """Equal types; sizes may be spelled differently where the facts prove them equal
    (``x.0`` and ``y.0`` under the guard ``x.0 == y.0``)."""
    if a == b:
        return True
    return (
        a.dtype == b.dtype
        and a.weak == b.weak
        and a.rank == b.rank
        and all(x == y or ctx.known(x, "==", y) is True for x, y in zip(a.shape, b.shape))
    )


def _check_literal(graph: Graph, lit: Literal, index: int):
    t = lit.type
    if t.shape != ():
        _fail(graph, f"literal {lit} is not a scalar", index)
    if not t.weak and not (isinstance(lit.value, np.generic) and lit.value.dtype == t.dtype):
        _fail(graph, f"strong literal {lit} does not hold a NumPy scalar of its dtype", index)
