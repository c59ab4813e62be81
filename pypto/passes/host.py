"""Host liveness: a block writes only the host variables something reads later.

The front end writes every name a block assigns into a host variable (``e = np.exp(...)`` keeps
``e``), which would force every local array to be materialized. Liveness over the host program
(blocks, loops run any number of times, branches, the result and the argument write-backs) finds
the outputs nothing reads; they are dropped, and dead-code removal then drops what computed them.
"""

from __future__ import annotations

from dataclasses import replace

from ..function import Bind, Block, Fail, Function, Loop, While
from ..ir import Graph
from .graphs import rebuild


def prune_host_outputs(fn: Function) -> Function:
    live = _result_vars(fn.result) | {id(hv) for _, hv in fn.writebacks}
    body, _ = _steps(fn.body, live)
    return replace(fn, body=body)


def _result_vars(result) -> set[int]:
    kind, value = result
    if kind == "tuple":
        return set().union(*(_result_vars(r) for r in value)) if value else set()
    return {id(value)} if kind == "host" else set()


def _steps(steps, live_after: set[int]):
    """(new steps, live before them)."""
    out, live = [], set(live_after)
    for step in reversed(steps):
        step, live = _step(step, live)
        out.append(step)
    return tuple(reversed(out)), live


def _step(step, live: set[int]):
    if isinstance(step, Block):
        keep = [i for i, h in enumerate(step.outputs) if id(h) in live]
        if len(keep) < len(step.outputs):
            step = _prune_block(step, keep)
        before = (live - {id(h) for h in step.outputs}) | {id(h) for h in step.inputs}
        return step, before
    if isinstance(step, Fail):
        return step, live
    if isinstance(step, Bind):  # (it reads the size of its value)
        return step, live | {id(step.source)}
    if isinstance(step, While):  # test, then body, any number of times; test once more
        end = set(live)
        while True:
            until = {id(step.until)} if step.until is not None else set()
            body, after_test = _steps(step.body, end | until)
            test, start = _steps(step.test, after_test | end | {id(step.cond)})
            grown = end | start
            if grown == end:
                break
            end = grown
        return replace(step, test=test, body=body), live | start
    if isinstance(step, Loop):  # the body may run zero, one or many times
        end = set(live) | ({id(step.until)} if step.until is not None else set())
        while True:
            body, start = _steps(step.body, end)
            grown = end | start
            if grown == end:
                break
            end = grown
        if step.vector is not None:
            start = start | _steps((step.vector,), end)[1]
        return replace(step, body=body), live | start
    then, live_then = _steps(step.then, live)
    orelse, live_else = _steps(step.orelse, live)
    return replace(step, then=then, orelse=orelse), live_then | live_else | {id(step.cond)}


def _prune_block(block: Block, keep: list[int]) -> Block:
    """The block writing only outputs ``keep``, reading only the inputs still needed."""
    from .simplify import dead_code

    g = block.graph
    g = dead_code(rebuild(g, g.eqns, tuple(g.outputs[i] for i in keep)), [])
    read = {id(a) for e in g.eqns for a in e.inputs} | {id(a) for a in g.outputs}
    used = [i for i, v in enumerate(g.inputs) if id(v) in read]
    graph = Graph(tuple(g.inputs[i] for i in used), g.consts, g.eqns, g.outputs, g.guards)
    return Block(graph, tuple(block.inputs[i] for i in used), tuple(block.outputs[i] for i in keep))
