"""Scheduling: kernels in dependency order, grouped into parallel levels.

A kernel's level is one more than the latest level of the kernels whose outputs it needs to
start. Inputs only a contraction's epilogue reads (``late_inputs``) need only be ready before the
epilogue: such a kernel may share a level with their producer (on the GPU: a second stream and an
event before the epilogue; on the CPU: the product runs while the other one does, the epilogue
after both). Kernels of one level have no dependency between them and may run at once.
"""

from __future__ import annotations

from ..errors import InternalError
from .plan import GraphPlan, Kernel


def order_kernels(kernels: list[Kernel]) -> tuple[list[Kernel], dict[str, str]]:
    """A topological order by level (stable: otherwise the order fusion made them in), the
    kernels renamed k0, k1, ... in it; and old name -> new name. Running the kernels one by one
    in this order runs the levels in order, as memory planning assumes (a kernel of a later
    level may take memory whose last reader is in an earlier level)."""
    made_by = {id(v): k for k in kernels for v in k.outputs}
    placed: list[Kernel] = []
    done: set[int] = set()
    pending = list(kernels)
    while pending:
        for k in pending:
            needs = {id(made_by[id(v)]) for v in k.inputs if id(v) in made_by} - {id(k)}
            if needs <= done:
                placed.append(k)
                done.add(id(k))
                pending.remove(k)
                break
        else:  # fusion guarantees no cycle; never loop forever
            raise InternalError("kernels depend on each other in a cycle")
    levels = _levels(placed)
    placed = [k for _, k in sorted(enumerate(placed), key=lambda p: (levels[p[0]], p[0]))]
    renamed = {}
    for i, k in enumerate(placed):
        renamed[k.name], k.name = f"k{i}", f"k{i}"
    return placed, renamed


def _levels(kernels: list[Kernel]) -> list[int]:
    """Each kernel's level, for kernels in a topological order."""
    made_by = {id(v): i for i, k in enumerate(kernels) for v in k.outputs}
    levels: list[int] = []
    for k in kernels:
        late = {id(v) for v in k.late_inputs}
        level = 0
        for v in k.inputs:
            j = made_by.get(id(v))
            if j is not None and j < len(levels):
                level = max(level, levels[j] + (0 if id(v) in late else 1))
        levels.append(level)
    return levels


def schedule(plan: GraphPlan, notes: list[str]) -> GraphPlan:
    kernels = plan.kernels
    for k, level in zip(kernels, _levels(kernels)):
        k.level = level
    depth = max((k.level for k in kernels), default=-1) + 1
    plan.levels = [[i for i, k in enumerate(kernels) if k.level == lv] for lv in range(depth)]
    wide = [lv for lv in plan.levels if len(lv) > 1]
    if wide:
        notes.append(f"{len(wide)} level(s) with kernels that may run at once")
    return plan
