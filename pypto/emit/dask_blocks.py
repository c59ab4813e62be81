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

import numpy as np

from ..errors import InternalError
from ..ir import Graph, Var
from ..passes.plan import Buffer, GraphPlan, Kernel
from ..symbolic import Sym, provably_nonneg
from .common import dtype_code, graph_symbols, ident
from .dask_program import NotBlockable, Program, digest
from .numpy_target import GraphEmitter, Lines


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


def _once(plan: GraphPlan, k: Kernel, build, *extra):
    """``build(plan, k, *extra)``, made once per kernel of a plan (kept on the plan); None where
    the kernel does not split that way (NotBlockable, or a renderer that cannot write it)."""
    cache = plan.__dict__.setdefault("_dask", {})
    key = (build.__name__, id(k), *extra)
    if key not in cache:
        try:
            cache[key] = build(plan, k, *extra)
        except (NotBlockable, InternalError):
            cache[key] = None
    return cache[key]


def programs(plan: GraphPlan, k: Kernel, cuda: bool = False) -> KernelPrograms:
    """The kernel's programs: the NumPy target's, or the CUDA target's (``cuda``: CuPy
    chunks, emit/dask_cuda.py)."""
    return _once(plan, k, _programs, cuda)


def _programs(plan: GraphPlan, k: Kernel, cuda: bool) -> KernelPrograms:
    from . import dask_cuda

    sub = sub_plan(plan, k)
    whole = dask_cuda.whole_program(sub, k.name) if cuda else _whole(sub, k.name)
    try:
        slabs, outs = _layout(k)
        block, slabs = _block(sub, k.name, slabs, outs, cuda)
    except (NotBlockable, InternalError):
        return KernelPrograms(whole, None, (), ())
    return KernelPrograms(whole, block, slabs, outs)


def _program(emitter: GraphEmitter, symbols) -> Program:
    source = emitter.render()
    key = digest(source, emitter.consts, emitter.user_ops)
    return Program(key, source, emitter.name, emitter.module_names(), tuple(symbols))


def _whole(sub: GraphPlan, name: str) -> Program:
    emitter = GraphEmitter(sub, f"{ident(name)}_whole")
    prog = _program(emitter, ())
    return dataclasses.replace(prog, symbols=tuple((ident(s), s) for s in emitter.free))


def _layout(k: Kernel):
    """(per input: its slab (axis, lo, hi) or None; per output: (axis, store start or None))."""
    c = k.chunking
    if c is None or k.kind == "custom":
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
    slabs = [_slab_of(tags, v) for v in k.inputs]
    return tuple(slabs), tuple(outs)


def _block(sub, name, slabs, outs, cuda=False) -> tuple[Program, tuple]:
    """The block program (the NumPy target's, or with ``cuda`` the CUDA target's on the slabs
    the NumPy target's settles on) and its slabs."""
    symbols = sorted(graph_symbols(sub, chunks=False))

    def make(slabs):
        emitter = BlockEmitter(sub, f"{ident(name)}_block", slabs, outs)
        emitter.symbols = symbols
        return emitter

    program, slabs = settle(make, slabs, sub.kernels[0].inputs)
    if cuda:
        from .dask_cuda import block_program

        program = block_program(sub, name, slabs, outs, symbols)
    return program, slabs


def settle(make, slabs, inputs) -> tuple[Program, tuple]:
    """The program ``make(slabs)`` renders, and its slabs: an input read outside its slab
    (at a fixed index, a broadcast row, along another axis too) is read whole instead, and the
    program rendered again, until every read of a slab lies inside it."""
    slabs = list(slabs)
    while True:
        emitter = make(tuple(slabs))
        program = _program(emitter, tuple((ident(s), s) for s in emitter.symbols))
        outside = emitter.outside
        if not outside:
            return program, tuple(slabs)
        for i, v in enumerate(inputs):
            if id(v) in outside:
                slabs[i] = None


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
        self.slab: dict[int, tuple] = {}  # id(input) -> (axis, lo, hi): what it holds
        self.outside: set[int] = set()  # inputs read outside their slabs
        for j, (v, slab) in enumerate(zip(sub.graph.inputs, self._graph_slabs(slabs))):
            if slab is not None:
                self.origins[id(v)] = (slab[0], Sym(f"_o{j}"))
                self.slab[id(v)] = slab
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

    def _at(self, v, region):
        slab = self.slab.get(id(v))
        if slab is not None:  # a read of a slab: inside it? (else the input is read whole)
            axis, lo, hi = slab
            start, stop = region[axis]
            if not (provably_nonneg(start - (_S + lo)) and provably_nonneg(_E + hi - stop)):
                self.outside.add(id(v))
        return super()._at(v, region)

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
        if id(v) not in self.inputs:  # a value computed before the blocks: the block's rows
            self.origins.setdefault(id(v), (tag[0], _S + lo))
        return tuple(
            (_S + lo, _E + hi) if a == tag[0] else (0, d) for a, d in enumerate(v.type.shape)
        )

    def _operand_regions(self, e):
        """Each operand over what the block's rows of the product read of it (the chunking's
        rule for products: the first operand's rows, a batch axis of each), else whole."""
        from ..lower.index_map import BAD
        from ..passes.chunk import operand_tags

        tag = self.tags.get(id(e.out)) if self.tags else None
        moved = BAD if tag is None else operand_tags(e, tag, self.plan.same)
        if moved is BAD:
            return super()._operand_regions(e)
        regions = []
        for a, t in zip(e.inputs, moved):
            if not isinstance(a, Var):
                regions.append(None)
                continue
            offs = () if t is None else tuple(t[1])
            if t is None or not all(isinstance(o, int) for o in offs):
                regions.append(self._full(a))
                continue
            lo, hi = min(offs), max(offs)
            regions.append(
                tuple(
                    (_S + lo, _E + hi) if i == t[0] else (0, d) for i, d in enumerate(a.type.shape)
                )
            )
        return regions

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
            at = GraphEmitter._at(self, base, region)  # (the base's slab holds p:q: no probe)
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


# -- reductions along the chunk axis: partial, combine, finalize -----------------------------
@dataclasses.dataclass(frozen=True)
class Reduction:
    """One reduction of a tree: its partial values combine with ``combine`` (a NumPy ufunc's
    name) over ``axes``; ``count``: a mean's number of elements (its partials are sums)."""

    combine: str
    axes: tuple
    keepdims: bool
    count: object  # Dim or None


@dataclasses.dataclass(frozen=True)
class TreeProgram:
    partial: Program  # a block's partial reductions (keepdims), on slabs as BlockEmitter's
    slabs: tuple  # per input of ``partial``: (axis, lo, hi) or None (read whole)
    inputs: tuple  # the kernel's inputs ``partial`` takes (its constants are its own)
    axis: int  # the domain axis the blocks split (a reduced one)
    reductions: tuple  # per reduction: Reduction
    final: Program | None  # the maps after the reductions, over whole arrays
    final_inputs: tuple  # per argument of ``final``: ("reduction", i) or ("input", Var)
    outputs: tuple  # per kernel output: ("reduction", i) or ("final", j)


def tree_program(plan: GraphPlan, k: Kernel) -> TreeProgram | None:
    """A reduction kernel as partial reductions per block of a reduced axis, their combination
    (a tree) and the maps after them; None where its body does not split so."""
    return _once(plan, k, _tree)


def _tree(plan: GraphPlan, k: Kernel) -> TreeProgram:
    from ..lower.families import family
    from ..ops.reductions import COMBINE

    if k.kind != "reduction" or not k.reduced or k.stores:
        raise NotBlockable("not a reduction")
    reduces = [e for e in k.body.eqns if family(e) == "reduce"]
    axes = {e.params["axis"] for e in reduces}
    if len(axes) != 1:
        raise NotBlockable("reductions over different axes")
    (red_axes,) = axes
    for e in reduces:
        if e.op not in COMBINE or not plan.same(e.inputs[0].type.shape, k.domain):
            raise NotBlockable("a reduction not over the domain")
    axis = red_axes[0]
    partial, slabs, inputs, epilogue = _partial(plan, k, reduces, axis, "partial")
    index = {id(e.out): i for i, e in enumerate(reduces)}  # a reduction's value -> its slot
    reductions = []
    for e in reduces:
        count = None
        if e.op == "mean":
            count = 1
            for a in red_axes:
                count = count * e.inputs[0].type.shape[a]
        reductions.append(Reduction(COMBINE[e.op].__name__, red_axes, e.params["keepdims"], count))
    outputs, final, final_inputs = [], None, ()
    made = [v for v in k.outputs if id(v) not in index]
    if made:
        ins = _read_from_outside(epilogue)
        ek = Kernel(
            k.name,
            "elementwise",
            made[0].type.shape,
            Graph(tuple(ins), (), tuple(epilogue), tuple(made)),
        )
        esub = sub_plan(plan, ek)
        final = _whole(esub, f"{k.name}_final")
        consts = {id(v) for v, _ in plan.graph.consts}
        final_inputs = tuple(
            ("reduction", index[id(a)]) if id(a) in index else ("input", a)
            for a in ins
            if id(a) not in consts
        )
    j = 0
    for v in k.outputs:
        if id(v) in index:
            outputs.append(("reduction", index[id(v)]))
        else:
            outputs.append(("final", j))
            j += 1
    return TreeProgram(
        partial, slabs, inputs, axis, tuple(reductions), final, final_inputs, tuple(outputs)
    )


def _symbols_of(eqns) -> set[str]:
    from .common import eqn_symbols

    found: set[str] = set()
    for e in eqns:
        found |= eqn_symbols(e)
    return found


class PartialEmitter(BlockEmitter):
    """A block's partial reductions: each reduction over the block's rows of the split axis
    (and the whole of its other reduced axes), kept dims; or a scan over the block's rows;
    what it reads on slabs."""

    def __init__(self, sub: GraphPlan, name: str, reduces, slabs):
        super().__init__(sub, name, slabs, ())
        self.reduces = reduces

    def _render(self) -> str:
        from ..lower.kernel import lower_kernel
        from .numpy_target import _Ctx

        g, k = self.graph, self.k
        params = ", ".join(self.names[id(v)] for v in g.inputs)
        keys = ["_s", "_e"]
        keys += [f"_o{j}" for j, v in enumerate(g.inputs) if id(v) in self.origins]
        keys += [ident(s) for s in self.symbols]
        self.free = list(self.symbols)
        head = [f"def {self.name}({params}{', ' if params else ''}*, {', '.join(keys)}):"]
        for i, (v, array) in enumerate(g.consts):
            self.consts[f"_c{i}"] = array
            self.out.add(f"{self.names[id(v)]} = {self.consts_name}[{f'_c{i}'!r}]")
        c = k.chunking
        self.kernel, self.tags = k, c.follows
        self.inputs = {id(v) for v in k.inputs}
        self.low = lower_kernel(k, self.plan.same, set())
        self.pre = _Ctx(self.out, {})
        self.whole, self.uses, self.fresh = {}, {}, set()
        ctx = _Ctx(self.out, {})
        region = tuple((_S, _E) if a == c.axis else (0, d) for a, d in enumerate(k.domain))
        results = []
        for i, e in enumerate(self.reduces):
            a = e.inputs[0]
            attrs = e.params
            if e.op in ("cumsum", "cumprod"):  # a scan over the block's rows
                dtype = np.dtype(e.out.type.dtype).name
                code = self._value(a, region, ctx)
                self.out.add(f"_r{i} = np.{e.op}({code}, axis={attrs['axis']}, dtype=np.{dtype})")
                results.append(f"_r{i}")
                continue
            dtype = attrs.get("dtype") or (e.out.type.dtype if e.op == "mean" else None)
            if e.op == "mean" and attrs.get("dtype") is None and dtype == np.float16:
                dtype = np.dtype(np.float32)  # NumPy's mean of float16 sums in float32
            fn = "sum" if e.op == "mean" else e.op
            kw = f"axis={attrs['axis']!r}, keepdims=True"
            if dtype is not None:
                kw += f", dtype=np.{np.dtype(dtype).name}"
            self.out.add(f"_r{i} = np.{fn}({self._value(a, region, ctx)}, {kw})")
            results.append(f"_r{i}")
        self.out.add(f"return ({', '.join(results)},)")
        return "\n".join(head + self.out.lines) + "\n"


# -- scans along the chunk axis: a scan per block, carries, then the maps after -----------------
@dataclasses.dataclass(frozen=True)
class ScanProgram:
    partial: Program  # a block's scan of its rows (on slabs)
    slabs: tuple  # per input of ``partial``
    inputs: tuple
    axis: int  # the scanned axis: the blocks split it
    step: str  # the ufunc that carries one block's last row into the next block
    final: Program | None  # the maps after the scan, per block (BlockEmitter), or None
    final_slabs: tuple  # per input of ``final``: its slab (the scan's value: slot 0)
    final_inputs: tuple  # per input of ``final``: None (the scan's value) or the Var


def scan_program(plan: GraphPlan, k: Kernel) -> ScanProgram | None:
    """A scan kernel as a scan per block of the scanned axis, carries, the maps after it."""
    return _once(plan, k, _scan_tree)


def _scan_tree(plan: GraphPlan, k: Kernel) -> ScanProgram:
    from ..lower.families import family
    from ..registry import REGISTRY

    scans = [e for e in k.body.eqns if family(e) == "scan"]
    if k.kind != "scan" or len(scans) != 1 or k.stores:
        raise NotBlockable("not one scan")
    (scan,) = scans
    axis = scan.params["axis"]
    if not plan.same(scan.out.type.shape, k.domain) or scan.inputs[0].type.rank != len(k.domain):
        raise NotBlockable("a scan not over the domain")
    partial, slabs, inputs, epilogue = _partial(plan, k, [scan], axis, "scan")
    final, final_slabs, final_inputs = None, (), ()
    if epilogue:
        final, final_slabs, final_inputs = after(plan, k, scan.out, epilogue, axis)
    elif tuple(k.outputs) != (scan.out,):
        raise NotBlockable("outputs other than the scan")
    step = REGISTRY[scan.op].scan_step.__name__
    return ScanProgram(partial, slabs, inputs, axis, step, final, final_slabs, final_inputs)


def after(plan: GraphPlan, k: Kernel, value: Var, eqns, axis: int, cuda: bool = False):
    """The maps ``eqns`` of kernel ``k`` that come after ``value`` (computed apart: a scan, a
    product by dask.array), per block of ``axis`` (BlockEmitter): (program, per input its
    slab, per input None for ``value`` or the Var)."""
    from ..passes.chunk import follow
    from ..passes.plan import Chunking

    ins = _read_from_outside(eqns)
    if any(v is value for v in k.outputs) or all(a is not value for a in ins):
        raise NotBlockable("the value is an output, or not read after")
    ek = Kernel(k.name, "elementwise", k.domain, Graph(ins, (), tuple(eqns), k.outputs))
    tags = follow(ek, axis, plan.same)
    if tags is None:
        raise NotBlockable("the axis cannot be followed after the value")
    ek.chunking = Chunking(axis, 1, k.domain[axis], follows=tags)
    outs = []
    for v in k.outputs:
        tag = tags.get(id(v))
        if tag is None or tuple(tag[1]) != (0,) or tag[0] != axis:
            raise NotBlockable("an output that does not follow the axis")
        outs.append((axis, None))
    slabs = [_slab_of(tags, v) for v in ins]
    if slabs[ins.index(value)] != (axis, 0, 0):
        raise NotBlockable("the value read at offsets")
    program, slabs = _block(sub_plan(plan, ek), f"{k.name}_after", slabs, tuple(outs), cuda)
    if slabs[ins.index(value)] is None:
        raise NotBlockable("the value read outside its block")
    consts = {id(v) for v, _ in plan.graph.consts}
    kept = [(v, sl) for v, sl in zip(ins, slabs) if id(v) not in consts]
    return program, tuple(sl for _, sl in kept), tuple(None if v is value else v for v, _ in kept)


# -- a product too large for every task: dask.array's matmul, then the epilogue per block ------
PANEL_BYTES = 256 << 20  # an operand every task would read whole: at most this


@dataclasses.dataclass(frozen=True)
class ProductProgram:
    operands: tuple  # (the rows' Var, the panel's Var)
    value: Var  # the product
    final: Program | None  # the epilogue per block of rows (BlockEmitter); None: no epilogue
    final_slabs: tuple
    final_inputs: tuple  # the Vars ``final`` reads (the product among them)


def product_program(plan: GraphPlan, k: Kernel, cuda: bool = False) -> ProductProgram | None:
    """A contraction kernel whose product's operands are two of its inputs, as
    ``da.matmul`` and its epilogue per block; None where it is not such a kernel."""
    return _once(plan, k, _product, cuda)


def _product(plan: GraphPlan, k: Kernel, cuda: bool) -> ProductProgram:
    if k.kind != "contraction" or k.stores or k.chunking is None:
        raise NotBlockable("not a product")
    product = k.body.eqns[0] if k.body.eqns else None
    if product is None or product.op != "matmul" or any(e.op == "matmul" for e in k.body.eqns[1:]):
        raise NotBlockable("not one matmul first")
    a, b = product.inputs
    if not (isinstance(a, Var) and isinstance(b, Var)) or a.type.rank != 2 or b.type.rank != 2:
        raise NotBlockable("operands that are not two matrices the kernel reads")
    if not all(any(x is v for v in k.inputs) for x in (a, b)) or k.chunking.axis != 0:
        raise NotBlockable("operands computed in the kernel")
    if tuple(k.outputs) == (product.out,) and len(k.body.eqns) == 1:
        return ProductProgram((a, b), product.out, None, (), ())
    final, slabs, inputs = after(plan, k, product.out, k.body.eqns[1:], 0, cuda)
    inputs = tuple(product.out if v is None else v for v in inputs)
    return ProductProgram((a, b), product.out, final, slabs, inputs)


def _read_from_outside(eqns) -> tuple:
    """The values ``eqns`` read that none of them makes, in order of first use."""
    made = {id(e.out) for e in eqns}
    return tuple(
        dict.fromkeys(a for e in eqns for a in e.inputs if isinstance(a, Var) and id(a) not in made)
    )


def _partial(plan: GraphPlan, k: Kernel, cut, axis: int, what: str):
    """Kernel ``k`` split at the equations ``cut`` (its reductions, its scan): the block
    program computing them on slabs of the values before them along ``axis`` (PartialEmitter),
    the slabs and inputs it takes (constants are its own), and the equations after them."""
    from ..lower.families import family
    from ..passes.chunk import follow
    from ..passes.plan import Chunking

    cut_ids = {id(e) for e in cut}
    need = {id(e.inputs[0]) for e in cut}
    prologue = []
    for e in reversed(k.body.eqns):
        if id(e.out) in need and id(e) not in cut_ids:
            prologue.append(e)
            need |= {id(a) for a in e.inputs}
    prologue.reverse()
    inner = {id(e.out) for e in prologue}
    epilogue = [e for e in k.body.eqns if id(e.out) not in inner and id(e) not in cut_ids]
    if any(id(a) in inner for e in epilogue for a in e.inputs):
        raise NotBlockable(f"the maps after the {family(cut[0])} read the values before it")
    inputs = tuple(v for v in k.inputs if id(v) in need)
    tops = tuple(dict.fromkeys(e.inputs[0] for e in cut))  # the values reduced or scanned
    pk = Kernel(k.name, "elementwise", k.domain, Graph(inputs, (), tuple(prologue), tops))
    tags = follow(pk, axis, plan.same)
    if tags is None:
        raise NotBlockable(f"axis {axis} cannot be followed through the prologue")
    pk.chunking = Chunking(axis, 1, k.domain[axis], follows=tags)
    sub = sub_plan(plan, pk)
    symbols = sorted(graph_symbols(sub, chunks=False) | _symbols_of(cut))

    def make(slabs):
        emitter = PartialEmitter(sub, f"{ident(k.name)}_{what}", list(cut), slabs)
        emitter.symbols = symbols
        return emitter

    program, slabs = settle(make, [_slab_of(tags, v) for v in inputs], inputs)
    consts = {id(v) for v, _ in plan.graph.consts}
    kept = [(v, sl) for v, sl in zip(inputs, slabs) if id(v) not in consts]
    return program, tuple(sl for _, sl in kept), tuple(v for v, _ in kept), epilogue


def _slab_of(tags, v):
    """The slab a block reads of ``v``: (its axis, smallest, largest offset), or None (read
    whole: it does not vary along the axis, or at symbolic offsets)."""
    tag = tags.get(id(v))
    offs = () if tag is None else tuple(tag[1])
    if tag is None or not v.type.rank or not all(isinstance(o, int) for o in offs):
        return None
    return (tag[0], min(offs), max(offs))


__all__ = [
    "KernelPrograms",
    "NotBlockable",
    "ProductProgram",
    "Program",
    "ScanProgram",
    "TreeProgram",
    "product_program",
    "programs",
    "scan_program",
    "sub_plan",
    "tree_program",
]
