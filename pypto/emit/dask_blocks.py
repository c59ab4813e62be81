"""One kernel of a Plan as the source of a Dask task: the NumPy target's code for it.

The Dask target (emit/dask_target.py) runs each kernel of a Plan as tasks. Each kernel is cut
out of its graph as a *sub-plan* (its inputs, body and outputs; the outputs in new memory, so
that a task never writes into the arrays Dask holds) and rendered twice by the NumPy target:

* ``whole``: the kernel over whole arrays (``kernel(*inputs, **sizes)``): one task, for a
  kernel that cannot be split (a reduction or scan along every candidate axis, a user
  operator);
* ``block``: one block ``_s:_e`` of the kernel's chunk axis (the Plan's ``Chunking``), for a
  chunked kernel: the statements the NumPy target runs for a block, inline. Each input that
  varies along the chunk axis arrives as a *slab* (the rows the block reads, halo included),
  which starts at ``_oJ`` along its axis; each output is the block's rows (a slice
  assignment's: the rows ``_pJ:_qJ`` of the array it assigns into, which it starts as a copy
  of). Every index the NumPy target writes is shifted by these origins (its ``_origin``
  hook), so the block runs the same code as the NumPy target's block.

``programs(plan, kernel)`` gives both (``block`` None where the kernel is not chunked or its
block cannot be rendered).
"""

from __future__ import annotations

import dataclasses
import hashlib

from ..errors import InternalError
from ..ir import Graph
from ..passes.plan import Buffer, GraphPlan, Kernel
from ..symbolic import Sym
from .common import dtype_code, graph_symbols, ident
from .numpy_target import GraphEmitter, Lines


class NotBlockable(Exception):
    """The kernel's block cannot be rendered as a slab program (runs whole instead)."""


@dataclasses.dataclass(frozen=True)
class Program:
    """A kernel's task code: ``source`` defines ``entry``; ``names`` its module's tables."""

    key: str
    source: str
    entry: str
    names: dict
    symbols: tuple  # (name in the code, symbol) of the sizes it takes as keywords


@dataclasses.dataclass(frozen=True)
class KernelPrograms:
    whole: Program
    block: Program | None
    slabs: tuple  # per input: (its axis, smallest offset, largest offset) or None (whole)
    outs: tuple  # per output: (its axis, the store's start or None for a plain output)


def sub_plan(plan: GraphPlan, k: Kernel) -> GraphPlan:
    """Kernel ``k`` as a plan of its own: its outputs in new memory, slice assignments onto
    copies of their bases (never in place), a product never accumulated into its addend."""
    consts = {id(v): a for v, a in plan.graph.consts}
    stores = tuple(dataclasses.replace(s, inplace=False) for s in k.stores)
    k2 = dataclasses.replace(k, stores=stores, accumulate=None, level=0)
    inputs = tuple(v for v in k.inputs if id(v) not in consts)
    graph = Graph(
        inputs,
        tuple((v, consts[id(v)]) for v in k.inputs if id(v) in consts),
        k.body.eqns,
        k.outputs,
    )
    buffers = [Buffer(f"o{i}", v, 0, 0, 0, role="output") for i, v in enumerate(k.outputs)]
    return GraphPlan(
        graph=graph,
        source=graph,
        kernels=[k2],
        levels=[[0]],
        buffers=buffers,
        facts=plan.facts,
        names=plan.names,
        same=plan.same,
    )


def programs(plan: GraphPlan, k: Kernel) -> KernelPrograms:
    cache = plan.__dict__.setdefault("_dask_programs", {})
    found = cache.get(id(k))
    if found is None:
        found = cache[id(k)] = _programs(plan, k)
    return found


def _programs(plan: GraphPlan, k: Kernel) -> KernelPrograms:
    sub = sub_plan(plan, k)
    whole = _whole(sub, k.name)
    try:
        slabs, outs = _layout(k)
        block = _block(sub, k.name, slabs, outs)
    except (NotBlockable, InternalError):
        return KernelPrograms(whole, None, (), ())
    return KernelPrograms(whole, block, slabs, outs)


def _program(emitter: GraphEmitter, symbols) -> Program:
    source = emitter.render()
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    return Program(key, source, emitter.name, emitter.module_names(), tuple(symbols))


def _whole(sub: GraphPlan, name: str) -> Program:
    emitter = GraphEmitter(sub, f"{ident(name)}_whole")
    prog = _program(emitter, ())
    return dataclasses.replace(prog, symbols=tuple((ident(s), s) for s in emitter.free))


def _layout(k: Kernel):
    """(per input: its slab (axis, lo, hi) or None; per output: (axis, store start or None))."""
    c = k.chunking
    if c is None or k.kind in ("custom", "attention"):
        raise NotBlockable("not chunked")
    tags = c.follows
    stores = {id(s.out): s for s in k.stores}
    outs = []
    for v in k.outputs:
        tag = tags.get(id(v))
        if tag is None or not v.type.rank:
            raise NotBlockable("an output does not follow the chunk axis")
        offs = tuple(tag[1])
        if len(offs) != 1 or not isinstance(offs[0], int):
            raise NotBlockable("an output read at several offsets")
        s = stores.get(id(v))
        if s is None:
            if offs[0] != 0:
                raise NotBlockable("a plain output at an offset")
            outs.append((tag[0], None))
        else:
            if any(item is Ellipsis for item in s.index):
                raise NotBlockable("an index with an ellipsis")
            if not any(s.base is x for x in k.inputs):
                raise NotBlockable("a slice assignment into a value the kernel computes")
            outs.append((tag[0], offs[0]))
    slabs = []
    for v in k.inputs:
        tag = tags.get(id(v))
        if tag is None or not v.type.rank:
            slabs.append(None)
            continue
        offs = tuple(tag[1])
        if not all(isinstance(o, int) for o in offs):
            slabs.append(None)  # read at symbolic offsets: the whole array
            continue
        slabs.append((tag[0], min(offs), max(offs)))
    return tuple(slabs), tuple(outs)


def _block(sub, name, slabs, outs) -> Program:
    emitter = BlockEmitter(sub, f"{ident(name)}_block", slabs, outs)
    symbols = sorted(graph_symbols(sub, chunks=False))
    emitter.symbols = symbols
    return _program(emitter, tuple((ident(s), s) for s in symbols))


_S, _E = Sym("_s"), Sym("_e")


class BlockEmitter(GraphEmitter):
    """The NumPy target's code for one block of a chunked kernel, on slabs (module doc)."""

    def __init__(self, sub: GraphPlan, name: str, slabs, outs):
        super().__init__(sub, name)
        self.inline_blocks = True
        k = sub.kernels[0]
        self.k = k
        # id(value) -> (axis, origin symbol) of the arrays that hold part of their value
        self.origins: dict[int, tuple[int, Sym]] = {}
        for j, (v, slab) in enumerate(zip(sub.graph.inputs, self._graph_slabs(slabs))):
            if slab is not None:
                self.origins[id(v)] = (slab[0], Sym(f"_o{j}"))
        for j, (v, (axis, start)) in enumerate(zip(k.outputs, outs)):
            self.origins[id(v)] = (axis, _S if start is None else Sym(f"_p{j}"))
        self.outs = outs

    def _graph_slabs(self, slabs):
        """The slabs of the sub-plan's inputs (the kernel's inputs less its constants)."""
        by_id = {id(v): s for v, s in zip(self.k.inputs, slabs)}
        return [by_id[id(v)] for v in self.plan.graph.inputs]

    def _origin(self, v, axis):
        found = self.origins.get(id(v))
        return found[1] if found is not None and found[0] == axis else 0

    def _direct(self, v) -> bool:
        return super()._direct(v) and id(v) not in self.origins

    def _heavy_region(self, v):
        tag = self.tags.get(id(v)) if self.tags else None
        if tag is None:
            return self._full(v)
        offs = tuple(tag[1])
        if not all(isinstance(o, int) for o in offs):
            raise NotBlockable("a product read at symbolic offsets")
        lo, hi = min(offs), max(offs)
        # a value computed before the blocks holds the block's rows only
        self.origins.setdefault(id(v), (tag[0], _S + lo))
        return tuple(
            (_S + lo, _E + hi) if a == tag[0] else (0, d) for a, d in enumerate(v.type.shape)
        )

    def _free_symbols(self):
        return set(self.symbols)

    def _bind_symbols(self):
        self.prelude_lines = []
        return set()

    def _render(self) -> str:
        g = self.graph
        k = self.k
        params = ", ".join(self.names[id(v)] for v in g.inputs)
        keys = ["_s", "_e"]
        keys += [f"_o{j}" for j, v in enumerate(g.inputs) if id(v) in self.origins]
        for j, (_axis, start) in enumerate(self.outs):
            if start is not None:
                keys += [f"_p{j}", f"_q{j}"]
        keys += [ident(s) for s in self.symbols]
        self.free = list(self.symbols)
        sig = ", ".join(x for x in (params, "*, " + ", ".join(keys)) if x)
        head = [f"def {self.name}({sig}):"]
        for i, (v, array) in enumerate(g.consts):
            key = f"_c{i}"
            self.consts[key] = array
            self.out.add(f"{self.names[id(v)]} = {self.consts_name}[{key!r}]")
        stores = {id(s.out): s for s in k.stores}
        for j, v in enumerate(k.outputs):
            name = self.names[id(v)]
            axis, start = self.outs[j]
            if start is None:
                shape = tuple(_E - _S if a == axis else d for a, d in enumerate(v.type.shape))
                self.out.add(f"{name} = np.empty({self._shape(shape)}, {dtype_code(v.type.dtype)})")
                continue
            base = stores[id(v)].base
            if base.type.dtype != v.type.dtype or base.type.rank != v.type.rank:
                raise NotBlockable("a slice assignment whose base is converted")
            p, q = Sym(f"_p{j}"), Sym(f"_q{j}")
            region = tuple((p, q) if a == axis else (0, d) for a, d in enumerate(v.type.shape))
            at = self._at(base, region)
            index = self._index(at, base.type.shape) or "..."
            self.out.add(f"{name} = {self.names[id(base)]}[{index}].copy()")
        # the stores start from their copies: the kernel writes them in place
        k.stores = tuple(dataclasses.replace(s, inplace=True) for s in k.stores)
        try:
            self._kernel(k)
        finally:
            k.stores = tuple(dataclasses.replace(s, inplace=False) for s in k.stores)
        results = ", ".join(self.names[id(v)] for v in k.outputs)
        self.out.add(f"return ({results},)")
        lines = Lines()
        lines.lines = head + self.out.lines
        return "\n".join(lines.lines) + "\n"


__all__ = ["KernelPrograms", "NotBlockable", "Program", "programs", "sub_plan"]
