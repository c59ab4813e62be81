"""Memory layouts: the order of axes in memory NumPy would give each value.

NumPy lays a ufunc's new result out in the order of its operands' axes in memory (``K`` order:
``np.exp(y.T)`` is F-ordered when y is C-ordered, and so is anything computed elementwise from
it). A kernel whose output follows that order writes it in the order its inputs are read: the
chunk pass takes blocks along the outermost axis in memory, and the NumPy target allocates the
output in this order, so ``sin(s)[:, None] * exp(y.T)`` streams through y and the output instead
of transposing one into the other, and returns the strides NumPy's result has.

A layout is ``(order, zero)``: the axes from outermost to innermost in memory, and the axes of
stride 0 (broadcast). Inputs are taken to be C-ordered (a plan does not depend on the strides
of its arguments; other strides change only speed and the strides of results). Rules, from
NumPy 2's behaviour:

* elementwise maps (``astype``, ``copy``, ``where`` included): axes sorted by their order in
  the operands, ignoring operands where either axis is broadcast; where operands disagree, C
  order wins (NumPy's iterator, ``npyiter_find_best_axis_ordering``);
* reductions keep the order of the kept axes; scans keep their input's; concatenations merge
  their inputs' as maps do;
* views follow their registry entry's ``layout`` (ops/reorders.py): ``transpose``
  permutes, ``getitem``/``squeeze`` drop axes, new axes (size 1) and ``broadcast_to``'s (stride
  0) go innermost, ``flip`` and ``store`` keep their operand's order;
* everything else (products, reshapes, creation ops, user operators) is C-ordered.

``plan.layouts`` maps id(value) to its order, for values of rank 2 or more not in C order.
"""

from __future__ import annotations

from ..ir import Var
from ..registry import REGISTRY
from .plan import GraphPlan


def layout(plan: GraphPlan, notes: list[str]) -> GraphPlan:
    found = infer_layouts(plan.graph)
    plan.layouts = {
        k: order for k, (order, _) in found.items() if len(order) > 1 and order != _c(len(order))
    }
    if plan.layouts:
        notes.append(f"layout: {len(plan.layouts)} value(s) not in C order, as NumPy lays them")
    return plan


def _c(rank: int) -> tuple:
    return tuple(range(rank))


def infer_layouts(graph) -> dict[int, tuple[tuple, frozenset]]:
    """id(value) -> (order of its axes in memory, outermost first; its axes of stride 0)."""
    lay: dict[int, tuple[tuple, frozenset]] = {}

    def of(a):
        if isinstance(a, Var) and id(a) in lay:
            return lay[id(a)]
        rank = a.type.rank
        return _c(rank), frozenset()

    for e in graph.eqns:
        rank = e.out.type.rank
        try:
            lay[id(e.out)] = _rule(e, [of(a) for a in e.inputs], rank)
        except (KeyError, ValueError, IndexError, TypeError):  # an op this does not model
            lay[id(e.out)] = (_c(rank), frozenset())
    return lay


def _rule(e, ins, rank):
    op = REGISTRY[e.op]
    rule = op.layout
    if rank < 2:
        return _c(rank), frozenset()
    if (op.kind == "map" and e.inputs) or rule == "merge":
        return _merge(e, ins, rank), frozenset()
    if op.kind == "reduce":
        (order, _), x = ins[0], e.inputs[0]
        axes = e.params.get("axis")
        every = set(range(x.type.rank))
        reduced = every if axes is None else {a % x.type.rank for a in _tuple(axes)}
        if e.params.get("keepdims"):
            return order, frozenset()
        kept = [a for a in range(x.type.rank) if a not in reduced]
        return tuple(kept.index(a) for a in order if a in kept), frozenset()
    if op.kind == "scan":
        return ins[0][0], frozenset()
    if callable(rule):  # a reorder's own rule (ops/reorders.py, ops/stores.py)
        return rule(e, ins)
    return _c(rank), frozenset()


def _tuple(axes):
    return tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)


def _merge(e, ins, rank):
    """NumPy's iterator order for an elementwise result: C order, with an axis moved outward
    past another only where every operand that has both (not broadcast) agrees."""
    shape = e.out.type.shape
    operands = []  # per operand: output axis -> its position in memory (outer first), present
    for a, (order, zero) in zip(e.inputs, ins):
        if not isinstance(a, Var) or a.type.rank == 0:
            continue
        lead = rank - a.type.rank
        position = {lead + ax: i for i, ax in enumerate(order)}
        present = {
            lead + ax
            for ax, d in enumerate(a.type.shape)
            if ax not in zero and not (d == 1 and shape[lead + ax] != 1) and d != 1
        }
        operands.append((position, present))
    perm = list(range(rank))
    for i0 in range(1, rank):
        ax0, ipos = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            ax1 = perm[i1]
            ambiguous, swap = True, False
            for position, present in operands:
                if ax0 in present and ax1 in present:
                    if position[ax0] > position[ax1]:  # ax0 is inner here: C order stands
                        swap = False
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if not ambiguous:
                if swap:
                    ipos = i1
                else:
                    break
        perm.insert(ipos, perm.pop(i0))
    return tuple(perm)
