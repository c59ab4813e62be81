"""Memory planning: a buffer per materialized intermediate, reused after its last reader.

Walks the parallel levels in order. Before a level starts, memory whose current buffer was last
read in an earlier level is free. Each kernel output of the level then takes, in order: the
memory of the array a slice assignment writes into, when that array is an intermediate nobody
else reads and the kernel does not read it elsewhere (``A[1:-1] = A[:-2]`` must be computed
before it overwrites, see fuse.py); else free memory of exactly its size (sizes are symbolic:
equal expressions); else new memory. Graph outputs are returned, so their memory is never
freed; graph inputs are the caller's and are never written.

``peak_bytes``: the largest, over levels, of inputs + memory in use.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Var
from ..lower.index_map import IndexMap, exact_same, interval, view_map
from ..ops.indexing import getitem_shape
from ..registry import REGISTRY
from ..shapes import size_of
from ..symbolic import evaluate, smax, smin
from ..types import TensorType
from .fuse import nbytes
from .plan import Buffer, GraphPlan, StoreOut


@dataclass(eq=False)
class Memory:
    name: str
    nbytes: object
    holder: Buffer  # the buffer living in it now
    free: bool = False


def plan_memory(plan: GraphPlan, notes: list[str]) -> GraphPlan:
    kernels = plan.kernels
    outputs = {id(a) for a in plan.graph.outputs if isinstance(a, Var)}
    readers: dict[int, list[int]] = {}
    for i, k in enumerate(kernels):
        for v in k.inputs:
            readers.setdefault(id(v), []).append(i)
    last_level: dict[str, int] = {}
    buffer_of: dict[int, Buffer] = {}
    memory_of: dict[str, Memory] = {}
    memories: list[Memory] = []
    in_use = []
    reused = 0
    for lv, members in enumerate(plan.levels):
        for m in memories:
            if not m.free and m.holder.role == "temp" and last_level[m.holder.name] < lv:
                m.free = True
        for i in members:
            k = kernels[i]
            stores = {id(s.out): s for s in k.stores}
            for v in k.outputs:
                size = nbytes(v.type)
                reads = readers.get(id(v), [])
                role = "output" if id(v) in outputs else "temp"
                b = Buffer(f"b{len(buffer_of)}", v, size, i, max(reads, default=i), role=role)
                last_level[b.name] = max((kernels[r].level for r in reads), default=lv)
                s = stores.get(id(v))
                base = buffer_of.get(id(s.base)) if s is not None else None
                slot = None
                # a value that reads the array elsewhere than it writes may still be written in
                # place when the kernel computes it whole (no blocks) and writes nothing else
                safe = id(v) not in k.hazards or (k.chunking is None and len(k.outputs) == 1)
                others = [r for r in readers.get(id(s.base), []) if r != i] if s else []
                done = all(kernels[r].level < lv for r in others)  # read in earlier levels only
                alone = s is not None and safe and done
                if alone and base is None and id(s.base) in plan.donated:
                    b.donor = s.base  # written in place into the input array
                    k.stores = tuple(
                        StoreOut(x.out, x.base, x.index, True) if x is s else x for x in k.stores
                    )
                    buffer_of[id(v)] = b
                    memory_of[b.name] = Memory(b.name, 0, b)  # the caller's memory, not ours
                    continue
                if alone and base is not None and base.role == "temp":
                    slot = memory_of[base.name]
                    k.stores = tuple(
                        StoreOut(x.out, x.base, x.index, True) if x is s else x for x in k.stores
                    )
                elif (addend := _addend(plan, k, v, buffer_of, readers, i)) is not None:
                    slot = memory_of[addend.name]  # out = P + X accumulated into X's memory
                    k.accumulate = addend.value
                elif role == "temp":
                    slot = next((m for m in memories if m.free and m.nbytes == size), None)
                if slot is not None:
                    b.reuses, slot.holder, slot.free = slot.holder.name, b, False
                    reused += 1
                else:
                    slot = Memory(b.name, size, b)
                    memories.append(slot)
                memory_of[b.name] = slot
                buffer_of[id(v)] = b
        total = 0
        for m in memories:
            if not m.free:
                total = total + m.nbytes
        in_use.append(total)
    plan.buffers = list(buffer_of.values())
    plan.memory = {name: m.name for name, m in memory_of.items()}
    plan.in_use = in_use
    if reused:
        notes.append(f"memory: {reused} buffer(s) take over the memory of dead ones")
    for k in kernels:
        k.bytes_read, k.bytes_written = kernel_bytes(k)
    return plan


def _addend(plan, k, v, buffer_of, readers, i) -> Buffer | None:
    """For ``v = matmul(a, b) + X`` (a kernel of exactly that: a product of matrices and its
    addend), the buffer of X when X is a float temp of v's type, C-ordered, read by no other
    kernel: v may take X's memory and the product be accumulated into it (BLAS ``beta = 1``
    on the CPU; an elementwise epilogue in place on the GPU)."""
    if k.kind != "contraction" or len(k.outputs) != 1 or k.stores or id(v) in plan.layouts:
        return None
    if len(k.body.eqns) != 2:
        return None
    p, add = k.body.eqns
    if p.op != "matmul" or add.op != "add" or add.out is not v:
        return None
    if not any(a is p.out for a in add.inputs):
        return None
    if any(a.type.rank != 2 for a in p.inputs) or v.type.dtype.name not in ("float32", "float64"):
        return None
    x = add.inputs[1] if add.inputs[0] is p.out else add.inputs[0]
    b = buffer_of.get(id(x)) if isinstance(x, Var) else None
    if b is None or b.role != "temp" or b.donor is not None or x.type != v.type:
        return None
    if id(x) in plan.layouts or readers.get(id(x)) != [i] or any(a is x for a in p.inputs):
        return None
    return b


def kernel_bytes(k) -> tuple:
    """(read, written): each array input read once, each output written once; a slice
    assignment in place writes its region only and does not read the array it writes into."""
    inplace = {id(s.out): s for s in k.stores if s.inplace}
    bases = {id(s.base) for s in inplace.values()}
    other_reads = {
        id(a) for e in k.body.eqns if e.op != "store" for a in e.inputs if isinstance(a, Var)
    }
    read = 0
    for v in k.inputs:
        if v.type.rank == 0:  # a scalar is a launch parameter, not memory traffic
            continue
        if id(v) not in bases or id(v) in other_reads:
            read = read + read_bytes(k, v)
    written = 0
    for v in k.outputs:
        s = inplace.get(id(v))
        t = v.type
        if s is not None:
            t = TensorType(t.dtype, getitem_shape(None, t.shape, s.index))
        written = written + nbytes(t)
    return read, written


def read_bytes(k, v):
    """Bytes of ``v`` the kernel reads: all of it, or where it reads only slices, the smaller of
    the box around them and their total."""
    users = [e for e in k.body.eqns if any(a is v for a in e.inputs)]
    maps = [view_map(e, exact_same) if REGISTRY[e.op].view else None for e in users]
    if not users or not all(isinstance(m, IndexMap) for m in maps):
        return nbytes(v.type)
    box, total = None, 0
    for e, m in zip(users, maps):
        spans = interval(m, tuple((0, d) for d in e.out.type.shape))
        total = total + size_of(e.out.type.shape)  # the elements this view reads
        if box is None:
            box = spans
        else:
            box = [(smin(a0, b0), smax(a1, b1)) for (a0, a1), (b0, b1) in zip(box, spans)]
    return smin(_volume(box), total) * v.type.dtype.itemsize


def _volume(spans):
    size = 1
    for lo, hi in spans:
        size = size * smax(hi - lo, 0)
    return size


def peak_bytes(plan: GraphPlan, env: dict) -> int:
    """Inputs + the memory in use at the busiest level, for these sizes."""
    inputs = sum(evaluate(nbytes(v.type), env) for v in plan.graph.inputs)
    inputs += sum(int(a.nbytes) for _, a in plan.graph.consts)
    return inputs + max((evaluate(t, env) for t in plan.in_use), default=0)
