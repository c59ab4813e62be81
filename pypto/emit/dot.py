"""The op graph of a Plan as Graphviz DOT text: one cluster per kernel, values as edges.

Compute equations sit in their kernel's cluster; index maps (reorders) read by one kernel sit in
it too, those shared by several kernels outside any cluster; inputs and outputs are ellipses.
The text is deterministic (same plan, same bytes).
"""

from __future__ import annotations

from ..ir import Var
from ..passes.plan import GraphPlan
from ..printer import format_attr

_COLORS = {
    "elementwise": "#dbeafe",
    "reduction": "#dcfce7",
    "rowwise": "#bbf7d0",
    "scan": "#fef9c3",
    "contraction": "#fde68a",
    "attention": "#fecaca",
    "custom": "#e5e7eb",
    "copy": "#f3f4f6",
}


def plan_to_dot(plan: GraphPlan, title: str = "pypto") -> str:
    names = plan.names
    graph = plan.graph
    owners: dict[int, list[str]] = {}
    for k in plan.kernels:
        for e in k.body.eqns:
            owners.setdefault(id(e), []).append(k.name)
    lines = [
        f"digraph {_quote(title)} {{",
        "  rankdir=TB;",
        '  node [shape=box, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for v in graph.inputs:
        lines.append(f'  {_id(names, v)} [shape=ellipse, label="{names[id(v)]}\\n{v.type}"];')
    for v, _ in graph.consts:
        lines.append(f'  {_id(names, v)} [shape=ellipse, label="const {names[id(v)]}"];')
    for k in plan.kernels:
        lines.append(f"  subgraph cluster_{k.name} {{")
        label = f"{k.name}: {k.kind} (level {k.level})"
        lines.append(f'    label="{label}"; style=filled; color="{_COLORS.get(k.kind, "#fff")}";')
        for e in k.body.eqns:
            if owners[id(e)] == [k.name]:
                lines.append("    " + _node(names, e))
        lines.append("  }")
    for e in graph.eqns:
        if len(owners.get(id(e), [])) != 1:
            lines.append("  " + _node(names, e))
    for e in graph.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                lines.append(f'  {_id(names, a)} -> {_id(names, e.out)} [label="{names[id(a)]}"];')
    for i, a in enumerate(graph.outputs):
        if isinstance(a, Var):
            lines.append(f'  out{i} [shape=ellipse, label="output {i}"];')
            lines.append(f"  {_id(names, a)} -> out{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node(names, e) -> str:
    shown = [f"{k}={format_attr(v)}" for k, v in e.attrs if v is not None and v is not False]
    attrs = f"[{' '.join(shown)}]" if shown else ""
    label = f"{names[id(e.out)]} = {e.op}{attrs}\\n{e.out.type}".replace('"', "'")
    return f'{_id(names, e.out)} [label="{label}"];'


def _id(names, v) -> str:
    return "v_" + names[id(v)].replace(".", "_")


def _quote(text: str) -> str:
    return '"' + text.replace('"', "'") + '"'
