"""Small helpers over Graphs shared by the passes: rebuilding, consumers, producers."""

from __future__ import annotations

from ..ir import Eqn, Graph, Var


def rebuild(graph: Graph, eqns, outputs) -> Graph:
    """The graph with new equations and outputs; constants nothing reads are dropped."""
    read = {id(a) for e in eqns for a in e.inputs} | {id(a) for a in outputs}
    consts = tuple((v, a) for v, a in graph.consts if id(v) in read)
    return Graph(graph.inputs, consts, tuple(eqns), tuple(outputs), graph.guards)


def producers(graph: Graph) -> dict[int, Eqn]:
    """id(value) -> the equation defining it."""
    return {id(e.out): e for e in graph.eqns}


def consumers(graph: Graph) -> dict[int, list[Eqn]]:
    """id(value) -> the equations reading it (each once, in graph order)."""
    found: dict[int, list[Eqn]] = {}
    for e in graph.eqns:
        for a in dict.fromkeys(id(a) for a in e.inputs if isinstance(a, Var)):
            found.setdefault(a, []).append(e)
    return found
