"""The pass pipeline: a graph in, a Plan out. Read top to bottom; each pass is one function.

Graph passes rewrite the op graph (each result is verified); fusion cuts it into kernels; plan
passes decide order, parallel levels, memory and chunks. ``plan_graph`` caches its result per
graph (graphs are immutable), so a compiled function or chain is planned once.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

from ..function import Bind, Block, Branch, Fail, Function, Loop, While
from ..ir import Graph, Var
from ..printer import value_names
from ..shapes import input_facts
from ..verify import verify
from .chunk import chunk
from .fuse import Fuser, build_kernels
from .layout import layout
from .memory import plan_memory
from .patterns import rewrite_patterns
from .plan import GraphPlan
from .schedule import order_kernels, schedule
from .simplify import cse, dead_code, fold_constants, identities

GRAPH_PASSES = [
    ("fold constants", fold_constants),
    ("algebraic identities", identities),
    ("common subexpressions", cse),
    ("patterns (attention)", rewrite_patterns),
    ("dead code", dead_code),
]
PLAN_PASSES = [
    ("schedule", schedule),
    ("layout", layout),
    ("chunk", chunk),
    ("plan memory", plan_memory),
]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def simplify(graph: Graph, notes: list[str], facts) -> Graph:
    for _, fn in GRAPH_PASSES:
        graph = fn(graph, notes, facts)  # every graph pass: (graph, notes, facts) -> graph
        verify(graph, facts=facts)
    return graph


def plan_graph(graph: Graph, facts=None, donated: frozenset = frozenset()) -> GraphPlan:
    """The Plan of a graph (``facts``: what holds where it runs, for a function's blocks;
    ``donated``: ids of inputs whose arrays the graph may write in place)."""
    cached = _CACHE.get(graph)
    if cached is not None:
        return cached
    if facts is None:
        facts = input_facts(v.type for v in graph.inputs)
    notes: list[str] = []
    simple = simplify(graph, notes, facts)
    names = value_names(simple)
    fuser = Fuser(simple, names, facts)
    groups = fuser.run()
    kernels, renamed = order_kernels(build_kernels(fuser, groups))
    decisions = [replace(d, kernel=renamed[d.kernel]) for d in fuser.decisions]
    for k in kernels:
        k.reasons = [str(d) for d in decisions if d.kernel == k.name]
    plan = GraphPlan(simple, graph, kernels, decisions=decisions)
    plan.same = fuser.same
    plan.names, plan.facts, plan.donated = names, tuple(facts), frozenset(donated)
    plan.simplified = notes
    plan.passes = [n for n, _ in GRAPH_PASSES] + ["fuse"] + [n for n, _ in PLAN_PASSES]
    for _, fn in PLAN_PASSES:
        plan = fn(plan, plan.notes)
    _CACHE[graph] = plan
    return plan


def plan_function(fn: Function) -> dict[int, GraphPlan]:
    """id(block) -> its Plan, for every block of a function (with the facts that hold there)."""
    array_types = [p.type for p in fn.params if p.kind == "array"]
    plans: dict[int, GraphPlan] = {}
    blocks: list[Block] = []
    _collect(fn.body, blocks)
    # An input array a block reassigns (``A[1:] = ...`` reads A and writes A) may be written in
    # place: nothing can see its old value afterwards, unless some block hands one host
    # variable's array to another unchanged (then two names would share it).
    shared = any(
        isinstance(a, Var)
        and a.type.rank >= 1  # (a number handed on is not written in place)
        and a in b.graph.inputs
        and b.inputs[b.graph.inputs.index(a)] is not h
        for b in blocks
        for a, h in zip(b.graph.outputs, b.outputs)
    )
    _plan_steps(fn.body, [*input_facts(array_types), *fn.guards], plans, not shared)
    return plans


def _collect(steps, out):
    for step in steps:
        if isinstance(step, Block):
            out.append(step)
        elif isinstance(step, Loop):
            _collect(step.body, out)
            if step.vector is not None:  # a block, or an interchanged nest
                _collect((step.vector,), out)
            if step.lines is not None:
                out.append(step.lines)
        elif isinstance(step, Branch):
            _collect(step.then, out)
            _collect(step.orelse, out)
        elif isinstance(step, While):
            _collect(step.test, out)
            _collect(step.body, out)


def _donated(block: Block) -> frozenset:
    g = block.graph
    outputs = {id(a) for a in g.outputs}
    return frozenset(
        id(v)
        for v, h in zip(g.inputs, block.inputs)
        if v.type.rank >= 1 and id(v) not in outputs and any(o is h for o in block.outputs)
    )


def _plan_steps(steps, facts, plans, donate=False):
    for step in steps:
        if isinstance(step, Block):
            donated = _donated(step) if donate else frozenset()
            plans[id(step)] = plan_graph(step.graph, facts, donated)
        elif isinstance(step, Fail):
            continue
        elif isinstance(step, Bind):  # (checked where the size is bound)
            facts = [*facts, *step.guards]
        elif isinstance(step, While):
            _plan_steps(step.test, facts, plans, donate)
            _plan_steps(step.body, facts, plans, donate)
        elif isinstance(step, Loop):
            _plan_steps(step.body, [*facts, *step.facts(), *step.guards], plans, donate)
            if step.vector is not None:
                _plan_steps((step.vector,), [*facts, *step.when], plans, donate)
            if step.lines is not None:
                inside = [*facts, *step.facts(), *step.guards]
                _plan_steps((step.lines,), inside, plans, donate)
        elif isinstance(step, Branch):
            _plan_steps(step.then, [*facts, *step.facts("then"), *step.then_guards], plans, donate)
            _plan_steps(
                step.orelse, [*facts, *step.facts("else"), *step.else_guards], plans, donate
            )
