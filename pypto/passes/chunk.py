"""Chunking: split each kernel's domain into blocks along one axis, where that is legal.

An axis of the domain is legal when every value of the kernel's body can follow it: walking the
body backwards from its outputs, each equation says which axis of each operand the chunk axis
becomes (an index map moves it: transpose permutes, a slice shifts and strides it, an inserted
or broadcast axis drops it), or that it cannot follow (a reduction or scan along it, a reshape
that mixes it with other axes, a user operator, a value read along two different axes). Reduced
and scanned axes are never chunk axes (the emitter would have to combine partial results); a
matrix product is split along its rows or batch, never along its columns.

The block size is chosen from a cache budget: ``block = max(1, budget // (bytes per element of
every value the kernel makes or reads * elements per step of the axis))``, a symbolic expression
evaluated at run time; emitters run a kernel whole when one block covers it. ``halo`` records,
for inputs read at shifted positions along the axis (stencils), the smallest and largest offset.
"""

from __future__ import annotations

import os

from ..ir import Var
from ..lower.families import family
from ..lower.index_map import (
    BAD,
    Linear,
    Pieces,
    broadcast_map,
    chunk_tag,
    getitem_map,
    view_map,
)
from ..registry import REGISTRY
from ..shapes import size_of
from ..symbolic import floordiv, smax
from .plan import Chunking, GraphPlan, Kernel

# Bytes of one block's working set: about a core's L2 (2 MiB on the machines measured), and
# large enough that each NumPy call has ~100k elements, so the per-call overhead (~1 us) and
# the page faults of fresh temporaries (glibc maps blocks above 128 KiB afresh) stay small.
CACHE_BUDGET = 4 << 20
LIVE_TEMPORARIES = 3  # block-sized temporaries alive at once (the emitter reuses dead ones)


def chunk(plan: GraphPlan, notes: list[str], budget: int | None = None) -> GraphPlan:
    if budget is None:  # PYPTO_CHUNK_BUDGET: the tests make it small so that blocks are many
        budget = int(os.environ.get("PYPTO_CHUNK_BUDGET", CACHE_BUDGET))
    chunked = 0
    for k in plan.kernels:
        k.chunking = choose(k, budget, plan.names, plan.same, _memory_order(plan, k))
        chunked += k.chunking is not None
    if chunked:
        notes.append(f"chunking: {chunked} kernel(s) may run in blocks")
    return plan


def _memory_order(plan: GraphPlan, k: Kernel):
    """The order in memory of the axes of an elementwise kernel's output at its domain's shape
    (blocks along the outermost are contiguous), or None: C order."""
    if k.kind not in ("elementwise", "copy"):
        return None
    for v in k.outputs:
        if id(v) in plan.layouts and plan.same(v.type.shape, k.domain):
            return plan.layouts[id(v)]
    return None


def candidate_axes(k: Kernel, order=None) -> list[int]:
    rank = len(k.domain)
    if order is not None and not k.reduced and k.scan_axis is None and len(order) == rank:
        return list(order)  # outermost in memory first
    if k.kind in ("custom",):
        return []
    if k.kind in ("contraction", "attention"):
        return list(range(rank - 1))  # batch axes and rows, never columns
    if k.reduced:
        # only axes before every reduced one: a block is then whole rows, which NumPy reduces
        # in the order it uses for the whole array; a block of an inner kept axis is a strided
        # view that NumPy sums in another order (floats would differ in the last bit)
        return list(range(min(k.reduced)))
    return [a for a in range(rank) if a != k.scan_axis]


def choose(k: Kernel, budget: int, names: dict, same, order=None) -> Chunking | None:
    why = []
    for axis in candidate_axes(k, order):
        if k.domain[axis] == 1:
            continue
        tags = follow(k, axis, same)
        if tags is None:
            why.append(f"axis {axis} cannot be followed through the body")
            continue
        # per element of the domain: the inputs and outputs read and written at full shape,
        # and a few live temporaries
        widest = max(v.type.dtype.itemsize for v in _values(k))
        per_point = LIVE_TEMPORARIES * widest + sum(
            v.type.dtype.itemsize
            for v in (*k.inputs, *k.outputs)
            if v.type.rank and same(v.type.shape, k.domain)
        )
        # a scan along an outer axis is swept one row at a time: a step's working set is a row
        sweep = k.scan_axis is not None and k.scan_axis < len(k.domain) - 1
        inner = size_of(
            d for a, d in enumerate(k.domain) if a != axis and not (sweep and a == k.scan_axis)
        )
        block = smax(floordiv(budget, per_point * smax(inner, 1)), 1)
        halos = _halos(k, tags).items()
        halo = tuple((names.get(id(v), "?"), lo, hi) for v, (lo, hi) in halos)
        work = per_point * size_of(k.domain)  # bytes of one pass: emitters split big kernels
        return Chunking(axis, block, k.domain[axis], halo, budget, "; ".join(why), work, tags)
    return None


def _values(k: Kernel):
    yield from k.inputs
    for e in k.body.eqns:
        yield e.out


def follow(k: Kernel, axis: int, same):
    """id(value) -> (the axis of that value the chunk axis is, the offsets at which the body
    reads it along that axis), or None where it does not vary along the chunk axis; None
    overall if some value cannot follow."""
    tags: dict[int, object] = {}

    def put(v, tag):
        if not isinstance(v, Var) or tag is None:
            if isinstance(v, Var):
                tags.setdefault(id(v), None)
            return True
        old = tags.get(id(v))
        if old is None:
            tags[id(v)] = tag
            return True
        if old[0] != tag[0]:  # read along two different axes
            return False
        tags[id(v)] = (old[0], old[1] | tag[1])
        return True

    start = (axis, frozenset({0}))
    reduced_out = [a for a in range(len(k.domain)) if a not in k.reduced]
    stores = {id(st.out): st for st in k.stores}
    for v in k.outputs:
        if id(v) in stores:  # written over a region: the domain is the region
            m = getitem_map(stores[id(v)].index, v.type.rank)
            tag = chunk_tag(m, axis, frozenset({0}))
            if tag is BAD:
                return None
        elif same(v.type.shape, k.domain) or v.type.rank == len(k.domain):
            tag = start  # full shape, or reduced with keepdims
        else:
            tag = (reduced_out.index(axis), start[1]) if axis in reduced_out else None
        if not put(v, tag):
            return None
    for e in reversed(k.body.eqns):
        t = tags.get(id(e.out))
        if t is None:
            for a in e.inputs:
                put(a, None)
            continue
        moved = operand_tags(e, t, same)
        if moved is BAD:
            return None
        for a, tag in zip(e.inputs, moved):
            if not put(a, tag):
                return None
    return tags


def _shift(offsets, start):
    return frozenset(o + start for o in offsets)


def operand_tags(e, tag, same):
    ax, off = tag
    out = e.out.type
    fam = family(e)
    if fam in ("map", "scalar"):
        return [
            chunk_tag(broadcast_map(a.type.shape, out.shape, same), ax, off)
            if isinstance(a, Var)
            else None
            for a in e.inputs
        ]
    if fam == "gather":  # the data operand whole along the gathered axis (Gather's rule)
        m = view_map(e, same)
        tags = [chunk_tag(m.data, ax, off), chunk_tag(m.index, ax, off)]
        return BAD if BAD in tags else tags
    if fam == "reduce":
        axes, keep = e.params["axis"], e.params["keepdims"]
        if keep:
            return [None if ax in axes else (ax, off)]
        kept = [a for a in range(e.inputs[0].type.rank) if a not in axes]
        return [(kept[ax], off)]
    if fam == "scan":
        return BAD if ax == e.params["axis"] else [(ax, off)]
    if fam == "store":  # the base follows the same axis, the value the region's axis
        value, m = e.inputs[1], view_map(e, same)
        pos = m.reads[ax].src
        i = None if pos is None else pos - (m.out_rank - value.type.rank)
        if i is not None and (i < 0 or value.type.shape[i] == 1):
            i = None
        return [(ax, off), None if i is None else (i, frozenset({0}))]
    if fam == "index":
        m = view_map(e, same)
        if isinstance(m, Linear):
            src = m.src
            return [(ax, off)] if same(tuple(src[: ax + 1]), tuple(out.shape[: ax + 1])) else BAD
        if isinstance(m, Pieces):
            if ax != m.axis:
                return [(ax, off) for _ in e.inputs]
            # along its axis: piece k holds the positions from its start on
            return [(ax, _shift(off, -start)) for start in m.starts()]
        t = chunk_tag(m, ax, off)
        return BAD if t is BAD else [t]
    if fam in ("contraction", "attention") and e.op != "dot":
        return _product_tags(e, ax, off)
    return BAD


def _product_tags(e, ax, off):
    out_rank = e.out.type.rank
    res = []
    for pos, a in enumerate(e.inputs):
        r = a.type.rank
        if e.op == "attention" and pos >= 3:  # scale, mask: broadcast against the scores
            i = ax - (out_rank - r)
            res.append(None if i < 0 or a.type.shape[i] == 1 else (i, off))
            continue
        if ax == out_rank - 2:  # rows: the first operand's rows only
            res.append((r - 2, off) if pos == 0 else None)
        else:  # a batch axis
            i = ax - (out_rank - r)
            res.append(None if i < 0 or a.type.shape[i] == 1 else (i, off))
    if e.op == "matmul" and any(a.type.rank < 2 for a in e.inputs):
        return BAD
    return res


def _halos(k: Kernel, tags) -> dict:
    """Inputs read at offsets other than 0 along the chunk axis: (smallest, largest)."""
    found = {}
    for v in k.inputs:
        t = tags.get(id(v))
        if t is None or t[1] == {0}:
            continue
        offs = sorted(t[1], key=str)
        if all(isinstance(o, int) for o in offs):
            found[v] = (min(offs), max(offs))
        else:
            found[v] = (offs[0], offs[-1])
    return found


__all__ = [
    "CACHE_BUDGET",
    "REGISTRY",
    "candidate_axes",
    "choose",
    "chunk",
    "follow",
    "operand_tags",
]
