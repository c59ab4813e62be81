"""What an equation is to fusion, chunking and the emitters: its family."""

from __future__ import annotations

from ..registry import REGISTRY


def family(eqn) -> str:
    """What an equation is to fusion: index (map), scalar, map, gather, reduce, scan,
    contraction, attention, custom or store."""
    op = REGISTRY[eqn.op]
    if eqn.op == "store":
        return "store"
    if op.kind == "reorder":
        return "index"
    if op.kind == "map":
        if eqn.out.type.rank == 0 and all(a.type.rank == 0 for a in eqn.inputs):
            return "scalar"
        return "map"
    if op.kind == "contract":
        return op.kernel or "contraction"
    return {"reduce": "reduce", "scan": "scan", "gather": "gather"}.get(op.kind, "custom")


__all__ = ["family"]
