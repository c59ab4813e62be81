"""The reference target: runs a Plan kernel by kernel, each kernel's body on the reference
executor, level by level.

It is how the passes are checked end to end before (and beside) the code emitters: a kernel's
body must be closed (computable from its inputs alone), and with ``check=True`` every temporary
lives in the memory the plan gave it, and memory the plan says is free is overwritten with
garbage, so a buffer reused too early, or an in-place store that clobbers a value still needed,
gives a wrong answer that the tests see.
"""

from __future__ import annotations

import os

import numpy as np

from ..executor import execute
from ..ir import Literal
from ..passes.plan import GraphPlan
from ..symbolic import evaluate


def checking() -> bool:
    """Whether plans run with their memory checked (PYPTO_CHECK_PLAN=1; the tests set it)."""
    return os.environ.get("PYPTO_CHECK_PLAN", "") == "1"


def run_plan(plan: GraphPlan, values: list, env: dict, check: bool | None = None) -> list:
    check = checking() if check is None else check
    graph = plan.graph
    vals: dict[int, object] = {id(v): x for v, x in zip(graph.inputs, values)}
    for v, array in graph.consts:
        vals[id(v)] = array
    buffers = {id(b.value): b for b in plan.buffers} if check else {}
    memory: dict[str, np.ndarray] = {}
    last_level = {}
    for b in plan.buffers if check else ():
        last_level[b.name] = max((plan.kernels[r].level for r in _readers(plan, b)), default=-1)
    for level, members in enumerate(plan.levels):
        if check:
            _poison_free(plan, memory, last_level, level)
        for i in members:
            k = plan.kernels[i]
            outs = execute(k.body, [vals[id(v)] for v in k.inputs], env)
            for v, x in zip(k.outputs, outs):
                b = buffers.get(id(v))
                if check and b is not None and b.donor is not None:  # in place, as planned
                    target = vals[id(b.donor)]
                    np.copyto(target, x)
                    vals[id(v)] = target
                elif b is not None and b.role == "temp" and isinstance(x, np.ndarray):
                    vals[id(v)] = _place(memory, plan.memory[b.name], evaluate(b.nbytes, env), x)
                elif check and isinstance(x, np.ndarray) and _in(memory, x):
                    vals[id(v)] = x.copy()  # an output is its own memory, not a view of a temp
                else:
                    vals[id(v)] = x
    return [a.value if isinstance(a, Literal) else vals[id(a)] for a in graph.outputs]


def _in(memory, x) -> bool:
    return any(np.shares_memory(x, m) for m in memory.values())


def _readers(plan, b):
    return [i for i, k in enumerate(plan.kernels) if any(v is b.value for v in k.inputs)]


def _place(memory, name, size, x):
    raw = memory.get(name)
    if raw is None or raw.size < size:
        raw = memory[name] = np.empty(max(size, 1), np.uint8)
    view = raw[: x.nbytes].view(x.dtype).reshape(x.shape)
    np.copyto(view, x)
    return view


def _poison_free(plan, memory, last_level, level):
    """Memory whose current buffer's readers all ran: fill it with garbage."""
    holder: dict[str, str] = {}
    for b in plan.buffers:  # the latest buffer living in each memory that has started
        if plan.kernels[b.first].level < level:
            holder[plan.memory[b.name]] = b.name
    roles = {b.name: b.role for b in plan.buffers}
    for mem, name in holder.items():
        if roles[name] == "temp" and last_level[name] < level and mem in memory:
            memory[mem].fill(0xA5)
