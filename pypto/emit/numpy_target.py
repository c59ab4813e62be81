"""The NumPy target: a Plan rendered as Python source that calls NumPy.

Each graph becomes one Python function. It binds the size symbols from its inputs' shapes,
gets each kernel's output buffers (new memory, or memory a dead buffer leaves, as the Plan
says), and runs the kernels in order. A kernel is a nested function ``part(_s, _e)`` that
computes the kernel's outputs for the block ``_s:_e`` of its chunk axis; ``_chunks`` calls it
once when the axis fits the block size, else block by block on a thread pool (NumPy releases
the GIL). Inside ``part`` every value is computed only over the region the block needs: the
region of each output is walked back through the body (index maps shift, transpose, insert or
drop axes; reductions read whole rows; stencil slices read their halo), so intermediates are
block-sized and stay in cache. Matrix products, attention and user operators run whole before
the blocks (BLAS has its own threads); their epilogues run block by block.

``render_graph(plan, name)`` returns the function's source; ``compile_graph(plan)`` a callable
``(values, env) -> outputs`` (the source run once with ``exec``).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..errors import InternalError
from ..ir import Literal, Var
from ..lower.families import family
from ..lower.index_map import (
    IndexMap,
    Linear,
    Pieces,
    broadcast_map,
    interval,
    moves_data,
    view_map,
)
from ..lower.kernel import lower_kernel
from ..ops.gathers import take_bounds
from ..ops.indexing import SliceSpec
from ..ops.pycode import PYTHON_CODE, python_code
from ..passes.plan import GraphPlan, Kernel
from ..registry import REGISTRY
from ..symbolic import (
    Sym,
    bare,
    smax,
    smin,
)
from . import runtime
from .common import (
    attention_args,
    attr_code,
    bound_symbols,
    buffer_source,
    const_code,
    dim_code,
    dtype_code,
    function_ref,
    graph_symbols,
    host_call_code,
    ident,
    literal_code,
    read_bindings,
    return_code,
    sized_calls,
    source_lines,
    value_idents,
)
from .numpy_rules import NUMPY_CODE
from .program import load_graph
from .views import region_code, subscript_code, view_code

_S, _E, _I0, _I1 = Sym("_s"), Sym("_e"), Sym("_i0"), Sym("_i1")


STRIDED_OUT_BUGS = {np.negative, np.isfinite}  # see _fresh_out (the prelude)


def _ufunc_call(ufunc, args) -> str:
    """The source calling a ufunc on ``args`` (source); ``, out=...`` may be added at its end."""
    if ufunc in STRIDED_OUT_BUGS:
        return f"_fresh_out(np.{ufunc.__name__}, {', '.join(args)})"
    return f"np.{ufunc.__name__}({', '.join(args)})"


class Lines:
    def __init__(self):
        self.lines: list[str] = []
        self.indent = 1

    def add(self, text: str):
        self.lines.append("    " * self.indent + text)


class GraphEmitter:
    """Renders one GraphPlan as the source of a function ``name(*inputs, **symbols)``."""

    def __init__(self, plan: GraphPlan, name: str):
        self.plan = plan
        self.name = name
        # the module-level dicts the function reads constants and user operators from
        self.consts_name, self.impl_name = f"_consts{name}", f"_impl{name}"
        self.graph = plan.graph
        self.names = value_idents(plan)
        self.prod = {id(e.out): e for e in self.graph.eqns}
        self.sized = sized_calls(self.graph)  # results sized by their values: bound after it
        self.out = Lines()
        self.counter = 0
        self.sweep = None  # the scan eqn of a row sweep being emitted
        self.within: dict = {}  # (concatenation, lo, hi) -> the piece that region lies in
        self.scratch, self.slots = False, 0  # block arrays in scratch slots (chunked kernels)
        self.views: set[str] = set()  # locals holding transposed, sliced or flipped views
        self.user_ops: dict[str, object] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.inline_blocks = False  # a chunked kernel's block inline (the Dask target's tasks)

    def module_names(self) -> dict:
        """What the rendered function reads from its module besides the prelude."""
        return {self.consts_name: self.consts, self.impl_name: self.user_ops}

    def module_source(self) -> str:
        """Source defining what ``module_names`` gives: the constants written out; the user
        operators' table left for the loader to fill (a transpiled module names them)."""
        items = ", ".join(f"{k!r}: {const_code(v)}" for k, v in self.consts.items())
        return f"{self.consts_name} = {{{items}}}\n{self.impl_name} = {{}}\n"

    # -- symbols -----------------------------------------------------------------------------
    def dim(self, d) -> str:
        return dim_code(d)

    # -- the function ------------------------------------------------------------------------
    def render(self) -> str:
        """The function's source. Values are walked recursively (Python 3.11 keeps
        pure-Python recursion off the C stack), so long chains get a higher limit."""
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20 * len(self.graph.eqns) + 1000))
        try:
            return self._render()
        finally:
            sys.setrecursionlimit(limit)

    def _render(self) -> str:
        g = self.graph
        bound = self._bind_symbols()
        free = sorted(self._free_symbols() - bound - set(self.sized.values()))
        params = ", ".join(self.names[id(v)] for v in g.inputs)
        extra = ", ".join(f"{ident(s)}" for s in free)
        sig = ", ".join(x for x in (params, "*, " + extra if extra else "") if x)
        head = [f"def {self.name}({sig}):"]
        self.free = free
        for i, (v, array) in enumerate(g.consts):
            key = f"_c{i}"
            self.consts[key] = array
            self.out.add(f"{self.names[id(v)]} = {self.consts_name}[{key!r}]")
        buffers = {id(b.value): b for b in self.plan.buffers}
        by_name = {b.name: b for b in self.plan.buffers}
        for k in self.plan.kernels:
            self.out.add(f"# {k.name}: {k.kind} ({' '.join(k.ops) or 'copy'}){source_lines(k)}")
            for v in k.outputs:
                b = buffers[id(v)]
                # in the order of axes NumPy's result has (passes/layout.py): memory shape,
                # then a transpose to the value's axes
                order = self.plan.layouts.get(id(v))
                shape = self._shape(
                    v.type.shape if order is None else [v.type.shape[a] for a in order]
                )
                back = "" if order is None else f".transpose({tuple(np.argsort(order).tolist())})"
                dt = dtype_code(v.type.dtype)
                where, other = buffer_source(k, v, b, by_name, parallel=False)
                name = self.names[id(v)]
                if id(v) in self.sized:  # (the call's own array)
                    continue
                if where in ("donor", "base"):  # a slice assignment, in place
                    self.out.add(f"{name} = {self.names[id(other)]}")
                elif where == "reuse":
                    self.out.add(f"{name} = _reuse({self.names[id(other)]}, {dt}, {shape}){back}")
                else:
                    self.out.add(f"{name} = _out({shape}, {dt}){back}")
            self._kernel(k)
        made_by = {id(e.out): e for e in g.eqns}
        scalars = {  # rank-0 results NumPy gives as scalars (not views, copies, stores)
            i for i in buffers if not REGISTRY[made_by[i].op].returns_array(made_by[i].params)
        }
        self.out.add(return_code(g.outputs, self.names, self._literal, scalars))
        bindings = read_bindings(self.prelude_lines, "\n".join(self.out.lines))
        return "\n".join(head + bindings + self.out.lines) + "\n"

    def _bind_symbols(self) -> set[str]:
        bound = bound_symbols(self.graph)
        self.prelude_lines = [
            f"    {ident(s)} = {self.names[id(v)]}.shape[{axis}]" for s, (v, axis) in bound.items()
        ]
        return set(bound)

    def _free_symbols(self) -> set[str]:
        return graph_symbols(self.plan)

    def _shape(self, shape) -> str:
        items = [self.dim(d) for d in shape]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    # -- kernels -----------------------------------------------------------------------------
    def _kernel(self, k: Kernel):
        c = k.chunking
        if c is not None:
            tags = c.follows  # what the Plan decided each value reads along the axis
            region = tuple((_S, _E) if a == c.axis else (0, d) for a, d in enumerate(k.domain))
        else:
            tags = {}
            region = tuple((0, d) for d in k.domain)
        self.kernel, self.tags = k, tags
        self.inputs = {id(v) for v in k.inputs}
        heavy = [e for e in k.body.eqns if family(e) in ("contraction", "attention", "custom")]
        # views of what the kernel reads from memory, each one read (the lowering)
        self.low = lower_kernel(k, self.plan.same, {id(e.out) for e in heavy})
        pre = self.pre = _Ctx(self.out, {})
        if k.accumulate is not None:  # out = a @ b + X, out in X's memory: BLAS adds a @ b
            product = k.body.eqns[0]
            a, b = (
                self._value(x, r, pre)
                for x, r in zip(product.inputs, self._operand_regions(product))
            )
            self.out.add(f"_gemm_acc({a}, {b}, {self.names[id(k.outputs[0])]})")
            return
        # values computed whole before the blocks: products, attention, user operators
        self.whole: dict[int, str] = {}
        for e in heavy:
            local = f"{self.names[id(e.out)]}_whole"
            code = self._eqn(e, self._heavy_region(e.out), pre)
            target = self._product_target(k, e)
            if id(e.out) in self.sized:  # its size known once it ran: its own array
                local = self.names[id(e.out)]
                self.out.add(f"{local} = {code}")
            elif target is not None:  # the product straight into the kernel's output buffer;
                self.out.add(f"{code[:-1]}, out={target})")  # its epilogue works in place
                local = target
            else:
                self.out.add(f"{local} = {code}")
            self.whole[id(e.out)] = local
        if any(s.inplace for s in k.stores):  # NumPy raises before anything is written into
            # memory that outlives an error: the indices first (np.take checks them otherwise)
            for e in k.body.eqns:
                if family(e) == "gather":
                    index, n, axis = take_bounds(e)
                    js = self._value(index, self._full(index), pre)
                    self.out.add(f"_take_bounds({js}, {self.dim(n)}, {axis})")
        for s in k.stores:
            if not s.inplace:
                base = self._value(s.base, self._full(s.base), pre)
                self.out.add(f"np.copyto({self.names[id(s.out)]}, {base})")
        self.uses: dict[int, int] = {}  # readers of each value inside the kernel (+1: output)
        for e in k.body.eqns:
            for a in e.inputs:
                self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        for v in k.outputs:
            self.uses[id(v)] = self.uses.get(id(v), 0) + 1
        part = Lines()
        part.indent = self.out.indent + 1
        self.scratch, self.slots = c is not None and not self.inline_blocks, 0
        if self.scratch:
            part.add("_bufs = _take()")
        scan = next((e for e in k.body.eqns if family(e) == "scan"), None)
        sweep = scan is not None and scan.params["axis"] < scan.out.type.rank - 1
        if sweep:
            # A scan along an outer axis: a sweep over it in batches of rows. Per row one
            # call (the running sum into the batch's next row; every access contiguous); the
            # prologue and epilogue run once per batch, which stays in cache. Used when rows
            # are long enough for NumPy's per-call overhead; else NumPy's scan on the block.
            ax = scan.params["axis"]
            rows = 1
            for a, (lo, hi) in enumerate(region):
                rows = rows if a == ax else rows * (hi - lo)
            part.add(f"if {self.dim(rows)} >= 256:")
            head = Lines()
            head.indent = part.indent + 1
            head.add(f"_rows = max(1, 65536 // {self.dim(rows)})")
            n = self.dim(k.domain[ax])
            batch = tuple((_I0, _I1) if a == ax else r for a, r in enumerate(region))
            self.sweep = (scan, batch, self._sweep_target(k, scan, region, batch))
            if self.sweep[2] is None:  # the batch's scan values in a scratch array
                shape = tuple(
                    Sym("_rows") if a == ax else hi - lo for a, (lo, hi) in enumerate(region)
                )
                head.add(
                    f"_scan = np.empty({self._shape(shape)}, {dtype_code(scan.out.type.dtype)})"
                )
            head.add("_prev = None  # the last row of the batch before")
            head.add(f"for _i0 in range(0, {n}, _rows):")
            body = Lines()
            body.indent = head.indent + 1
            body.add(f"_i1 = min(_i0 + _rows, {n})")
            self._outputs(k, batch, c, body)
            self.sweep = None
            part.lines += head.lines + body.lines
            part.add("else:")
            block = Lines()
            block.indent = part.indent + 1
            self._outputs(k, region, c, block)
            part.lines += block.lines
        else:
            self._outputs(k, region, c, part)
        if self.scratch:
            part.add("_give(_bufs)")
        self.scratch = False
        idle = [line.strip() for line in part.lines] == ["_bufs = _take()", "_give(_bufs)"]
        if c is None or self.inline_blocks:  # one block: its statements inline
            self.out.lines += [line[4:] for line in part.lines]
        elif idle:  # the product alone (written straight into the output): no blocks to run
            pass
        else:
            extent, block, work = (self.dim(x) for x in (c.extent, c.block, c.work))
            small = f"{bare(extent)} <= {block} and {bare(work)} <= {1 << 22}"
            known = all(isinstance(x, int) for x in (c.extent, c.block, c.work))
            if not sweep and known:  # sizes known: decided here
                if c.extent <= c.block and c.work <= 1 << 22:
                    one = Lines()
                    one.indent = self.out.indent
                    one.add(f"_s, _e = 0, {bare(extent)}")
                    self._outputs(k, region, c, one)
                    self.out.lines += one.lines
                    return
            elif not sweep:  # one block (as _chunks would run it): its statements here, no
                # closure, no scratch lease (what a small kernel in a loop body pays per call)
                one = Lines()
                one.indent = self.out.indent + 1
                one.add(f"_s, _e = 0, {bare(extent)}")
                self._outputs(k, region, c, one)
                self.out.add(f"if {small}:")
                self.out.lines += one.lines
                self.out.add("else:")
                self.out.indent += 1
            self.out.add("def part(_s, _e):")
            shift = "" if sweep else "    "
            self.out.lines += [shift + line for line in part.lines] or [
                "    " * (self.out.indent + 1) + "pass"
            ]
            if sweep:  # a sweep's calls are per row: many small calls from two threads
                work = 0  # contend for the GIL (measured 1.7x slower than one thread)
            self.out.add(f"_chunks(part, {extent}, {block}, {work})")
            if not sweep and not known:
                self.out.indent -= 1

    def _sweep_target(self, k, scan, region, batch):
        """Where a sweep writes its scan values: straight into the kernel's output when the
        scan is that output (same type, over the domain), else None (a scratch batch)."""
        if scan.out not in k.outputs or any(s.out is scan.out for s in k.stores):
            return None
        if not self.plan.same(scan.out.type.shape, self.kernel.domain):
            return None
        at = self._at(scan.out, batch)
        return f"{self.names[id(scan.out)]}[{self._index(at, scan.out.type.shape)}]"

    def _product_target(self, k, e):
        """The output buffer a matrix product may be written into directly: the kernel's only
        output, of the product's type (so the epilogue, elementwise, can update it in place)."""
        if e.op != "matmul" or len(k.outputs) != 1 or k.stores:
            return None
        v = k.outputs[0]
        if v.type.dtype != e.out.type.dtype or not self.plan.same(v.type.shape, e.out.type.shape):
            return None
        if e.out.type.rank < 2 or any(a.type.rank < 2 for a in e.inputs):
            return None
        after = {id(e.out)}  # the epilogue must read the product where it writes: no reorder
        for x in k.body.eqns:  # (a transpose) after the product
            if any(id(a) in after for a in x.inputs):
                if family(x) == "index":
                    return None
                after.add(id(x.out))
        return self.names[id(v)]

    def _outputs(self, k, region, c, lines):
        """Compute the kernel's outputs over ``region``, into ``lines``."""
        ctx = _Ctx(lines, {})
        stores = {id(s.out): s for s in k.stores}
        self.fresh: set[str] = set()  # locals holding arrays this block made (reusable)
        writes = []  # stores are written after every value is computed
        for v in k.outputs:
            if id(v) in stores:
                writes.append(self._store(stores[id(v)], region, ctx))
            else:
                r = self._output_region(v, region, c)
                index = self._index(self._at(v, r), v.type.shape) or "..."
                target = f"{self.names[id(v)]}[{index}]"
                code = self._value(v, r, ctx, out=target)
                if id(v) in self.sized:
                    continue
                if code != target and not (code == "_blk" and self.sweep[2] == target):
                    lines.add(f"{target} = {code}")
        for w in writes:
            lines.add(w)

    def _output_region(self, v, region, c):
        full = len(region) == v.type.rank and self.plan.same(v.type.shape, self.kernel.domain)
        if full:  # an output at the domain's shape: the block's region (a row of a sweep)
            return tuple(region)
        if c is None:
            return self._full(v)
        tag = self.tags.get(id(v))
        if tag is None:
            return self._full(v)
        return tuple((_S, _E) if a == tag[0] else (0, d) for a, d in enumerate(v.type.shape))

    def _store(self, s, region, ctx):
        """``out[index] = value`` for the block: the index composed with the block's region."""
        e = self.prod[id(s.out)]
        value = e.inputs[1]
        vr = self._broadcast_region(value, region, self.kernel.domain)
        code = self._value(value, vr, ctx) if isinstance(value, Var) else self._literal(value)
        items, axis, base_axis = [], 0, 0  # the region's axis, the array's
        for item in s.index:
            if item is Ellipsis:
                items.append("...")
            elif item is None:
                items.append("None")
                axis += 1
            elif isinstance(item, SliceSpec):
                lo, hi = region[axis]
                start = item.start + item.step * lo
                stop = item.start + item.step * hi
                origin = self._origin(s.out, base_axis)
                start, stop = start - origin, stop - origin
                base_axis += 1
                if item.step > 0:
                    items.append(f"{self.dim(start)}:{self.dim(stop)}:{item.step}")
                else:
                    items.append(f"_slc({self.dim(start)}, {self.dim(stop)}, {item.step})")
                axis += 1
            else:
                items.append(self.dim(item - self._origin(s.out, base_axis)))
                base_axis += 1
        index = ", ".join(items) if items else "()"  # x[()] = v, as the user wrote it
        return f"{self.names[id(s.out)]}[{index}] = {code}"

    # -- values over regions -----------------------------------------------------------------
    def _full(self, v):
        return tuple((0, d) for d in v.type.shape)

    def _heavy_region(self, v):
        """Where a product, attention or user operator is computed (before the blocks): whole."""
        return self._full(v)

    def _operand_regions(self, e):
        """The regions of a product's (attention's, user operator's) operands it reads."""
        return [self._full(a) if isinstance(a, Var) else None for a in e.inputs]

    def _origin(self, v, axis):
        """The index along ``axis`` where the array holding ``v`` starts (0: it is the whole
        value; the Dask target's blocks hold a slab)."""
        return 0

    def _at(self, v, region):
        """``region`` of ``v`` in the array that holds it."""
        return tuple(
            (lo - self._origin(v, a), hi - self._origin(v, a)) for a, (lo, hi) in enumerate(region)
        )

    def _direct(self, v) -> bool:
        """Whether ``v`` is an array the kernel reads from memory as it is (views of it are
        subscripts of it)."""
        return id(v) in self.inputs or id(v) in self.whole

    def _value(self, v, region, ctx, out=None) -> str:
        """The code of ``v`` over ``region``; with ``out`` (a kernel output's slice), a map
        computed last writes straight into it (``np.add(a, b, out=...)``) and ``out`` is
        returned."""
        if isinstance(v, Literal):
            return self._literal(v)
        key = (id(v), region)
        if key in ctx.memo:
            return ctx.memo[key]
        e = self.prod.get(id(v))
        if e is not None and id(v) not in self.inputs and id(v) not in self.whole:
            direct = self._split(e, region, ctx, out)
            if direct is None:
                direct = self._ufunc_in_place(e, region, ctx, out)
            if direct is not None:
                ctx.memo[key] = direct
                return direct
        name = self.whole.get(id(v), self.names[id(v)])
        if id(v) in self.inputs or id(v) in self.whole:
            at = self._at(v, region)
            code = f"{name}[{self._index(at, v.type.shape)}]" if v.type.rank else name
            if code.endswith("[]"):
                code = name
            ctx.memo[key] = code
            return code
        e = self.prod.get(id(v))
        if e is None:
            raise InternalError(f"{name} is neither an input nor computed in the kernel")
        code = self._eqn(e, region, ctx)
        if code == "_blk":  # a sweep's batch of scan values: in the output, or in scratch
            ctx.memo[key] = code  # the epilogue may overwrite (the carry is a copy)
            if self.sweep[2] is None:
                self.fresh.add(code)
            return code
        if family(e) in ("index",) and region == self._full(v):
            ctx.memo[key] = code
            return code
        local = f"{name}_{self._next()}"
        if family(e) == "index" and self._strided(e):
            self.views.add(local)  # a strided view: new arrays made from it follow its layout
        if self.scratch and ctx is not self.pre and self._is_ufunc_map(e) and code.endswith(")"):
            # laid out like the first operand when that is a strided view (a transposed read
            # into C order is NumPy's slow path: W2 3x slower)
            first = code[code.index("(") + 1 :].split(",")[0].strip(") ")
            like = first if first.isidentifier() and first in self.views else None
            code = f"{code[:-1]}, out={self._tmp(e.out.type.dtype, region, ctx, like)})"
        ctx.lines.add(f"{local} = {code}")
        ctx.memo[key] = local
        if family(e) in ("map", "reduce", "scan") and not e.out.type.weak and v.type.rank:
            self.fresh.add(local)
        return local

    def _strided(self, e) -> bool:
        """A view that moves elements (a transpose, a slice, a flip): new arrays made from it
        follow its layout."""
        a, m = self._view(e)
        return isinstance(m, IndexMap) and moves_data(
            m, a.type.shape, e.out.type.shape, self.plan.same
        )

    def _ufunc_in_place(self, e, region, ctx, out):
        """A ufunc map written into ``out``, or into an operand's block-sized array that
        nothing reads afterwards (no new temporary); None when neither applies."""
        if not self._is_ufunc_map(e):
            return None
        op = REGISTRY[e.op]
        args = [
            self._value(a, self._broadcast_region(a, region, e.out.type.shape), ctx)
            if isinstance(a, Var)
            else self._literal(a)
            for a in e.inputs
        ]
        target = out
        if target is None:
            for a, code in zip(e.inputs, args):
                if (
                    isinstance(a, Var)
                    and code in self.fresh
                    and self.uses.get(id(a)) == 1
                    and a.type.dtype == e.out.type.dtype
                    and self.plan.same(a.type.shape, e.out.type.shape)
                ):
                    target = code
                    break
        if target is None:
            return None
        ctx.lines.add(f"{_ufunc_call(op.ufunc, args)[:-1]}, out={target})")
        return target

    def _split(self, e, region, ctx, out):
        """A ufunc map whose operand is a concatenation that ``region`` spans several pieces
        of (``np.gradient``'s edges and interior): computed piece by piece into ``out`` (or a
        new block array), each piece reading its part where it is, so the concatenation is
        never copied. Pieces of the chunk axis run only where the block meets them."""
        if not self._is_ufunc_map(e):
            return None
        rank = e.out.type.rank
        cats = []  # (operand, its concatenation, the axis of e it runs along)
        for a in e.inputs:
            c = self.prod.get(id(a)) if isinstance(a, Var) else None
            if c is None or id(a) in self.inputs or id(a) in self.whole:
                continue
            if family(c) != "index" or not isinstance(view_map(c, self.plan.same), Pieces):
                continue
            if any(p.type.dtype != a.type.dtype for p in c.inputs):
                continue  # pieces the concatenation promotes: the op runs on the promoted whole
            ax = c.params["axis"]
            j = ax + rank - a.type.rank
            if (id(a), *region[j]) in self.within or not self.plan.same(
                (a.type.shape[ax],), (e.out.type.shape[j],)
            ):
                continue  # already inside one piece, or broadcast along the axis
            cats.append((a, c, j))
        if not cats:
            return None
        a, c, j = cats[0]
        ax = c.params["axis"]
        sizes = [p.type.shape[ax] for p in c.inputs]
        # other operands concatenated along the same axis at the same places split with it
        # (the rest read their pieces' part through _cat)
        same = [
            o
            for o, oc, oj in cats
            if oj == j
            and len(oc.inputs) == len(sizes)
            and self.plan.same(tuple(p.type.shape[oc.params["axis"]] for p in oc.inputs), sizes)
        ]
        lo, hi = region[j]
        target = out
        if target is None:
            target = f"{self.names[id(e.out)]}_{self._next()}"
            ctx.lines.add(f"{target} = {self._tmp(e.out.type.dtype, region, ctx)}")
            self.fresh.add(target)
        full = lo == 0 and self.plan.same((hi,), (e.out.type.shape[j],))
        start = 0
        for k, size in enumerate(sizes):
            end = start + size
            plo, phi = (start, end) if full else (smax(lo, start), smin(hi, end))
            for o in same:
                self.within[(id(o), plo, phi)] = k
            sub = tuple((plo, phi) if i == j else r for i, r in enumerate(region))
            index = [":"] * rank
            index[j] = f"{self.dim(plo - lo)}:{self.dim(phi - lo)}"
            piece_out = f"{target}[{', '.join(index)}]"
            if full and self._thin(size) and self.scratch and ctx is not self.pre:
                # a thin piece of another axis than the chunk axis (np.gradient's edge
                # columns): computed once for every block before them, copied in per block
                whole = self._whole_piece(e, j, plo, phi)
                window = [f"{self.dim(a)}:{self.dim(b)}" for a, b in region]
                window[j] = ":"
                ctx.lines.add(f"np.copyto({piece_out}, {whole}[{', '.join(window)}])")
            elif full:
                self._ufunc_in_place(e, sub, ctx, piece_out)
            else:  # a block of the chunk axis meets only some pieces
                ctx.lines.add(f"if {self.dim(plo)} < {self.dim(phi)}:")
                lines = Lines()
                lines.indent = ctx.lines.indent + 1
                self._ufunc_in_place(e, sub, _Ctx(lines, dict(ctx.memo)), piece_out)
                ctx.lines.lines += lines.lines
            start = end
        return target

    @staticmethod
    def _thin(size) -> bool:
        """A piece this narrow is cheaper computed once for all blocks than once per block."""
        return isinstance(size, (int, np.integer)) and 0 < size <= 4

    def _whole_piece(self, e, j, lo, hi) -> str:
        """``e`` over its whole extent on every axis but ``j``, where it spans (lo, hi):
        computed before the blocks (the name of the array)."""
        key = ("piece", id(e.out), j, lo, hi)
        name = self.pre.memo.get(key)
        if name is None:
            region = tuple((lo, hi) if i == j else (0, d) for i, d in enumerate(e.out.type.shape))
            name = f"{self.names[id(e.out)]}_{self._next()}"
            self.pre.lines.add(f"{name} = {self._tmp(e.out.type.dtype, region, self.pre)}")
            self._ufunc_in_place(e, region, self.pre, name)
            self.pre.memo[key] = name
        return name

    def _tmp(self, dtype, region, ctx, like=None) -> str:
        """A new block array: in a chunked kernel's block, a slot of this thread's scratch
        (reused by every block: no allocation, no page faults), else (before the blocks, or
        unchunked) new memory."""
        shape = self._shape(tuple(hi - lo for lo, hi in region))
        dt = dtype_code(dtype)
        if not self.scratch or ctx is self.pre:
            return f"np.empty({shape}, {dt})"
        self.slots += 1
        like = f", {like}" if like else ""
        return f"_tmp(_bufs, {self.slots - 1}, {shape}, {dt}{like})"

    def _is_ufunc_map(self, e) -> bool:
        op = REGISTRY[e.op]
        return (
            family(e) == "map"
            and op.ufunc is not None
            and not e.attrs
            and not e.out.type.weak
            and op.ufunc.nout == 1
            and bool(e.out.type.rank)
        )

    def _next(self) -> int:
        self.counter += 1
        return self.counter

    def _index(self, region, shape) -> str:
        return region_code(region, shape, self.dim, self.plan.same)

    def _broadcast_region(self, a, region, shape):
        """The region of operand ``a`` that a map with result ``shape`` reads over ``region``
        (right-aligned; a size-1 axis against a larger one is broadcast: read whole)."""
        return interval(broadcast_map(a.type.shape, shape, self.plan.same), region)

    def _literal(self, lit: Literal) -> str:
        return literal_code(lit, ident)

    def _eqn(self, e, region, ctx) -> str:
        fam = family(e)
        op = REGISTRY[e.op]
        attrs = {k: v for k, v in e.attrs if k != "weak"}
        if fam in ("map", "scalar"):
            if op.ufunc is None and e.op not in NUMPY_CODE:  # its NumPy impl, whole
                return self._whole_then_slice(e, region, ctx)
            args = [
                self._value(a, self._broadcast_region(a, region, e.out.type.shape), ctx)
                if isinstance(a, Var)
                else self._literal(a)
                for a in e.inputs
            ]
            if e.out.type.weak and e.op in PYTHON_CODE:  # Python arithmetic, as Python does it
                return python_code(e.op, args, e.out.type.dtype)
            code = self._map_code(e, op, args, attrs, region)
            return f"_py({code})" if e.out.type.weak else code
        if fam == "reduce":
            axes, keep = attrs["axis"], attrs["keepdims"]
            a = e.inputs[0]
            it = iter(region)
            ar, kept = [], []  # the operand's region; a kept axis' own region (or None)
            for i, d in enumerate(a.type.shape):
                if i in axes:
                    ar.append((0, d))
                    if keep:
                        kept.append(next(it))
                else:
                    ar.append(next(it))
                    kept.append(None)
            kw = f"axis={axes!r}, keepdims={keep}"
            if attrs.get("dtype") is not None:
                kw += f", dtype=np.{attrs['dtype'].name}"
            fn = op.numpy[0].__name__  # np.sum, np.max, ...
            code = f"np.{fn}({self._value(a, tuple(ar), ctx)}, {kw})"
            if keep and any(r is not None and tuple(r) != (0, 1) for r in kept):
                # a region that leaves out the kept axis' one element (``x.min(keepdims=True)
                # [1:]``: empty)
                cut = [":" if r is None else f"{self.dim(r[0])}:{self.dim(r[1])}" for r in kept]
                code = f"{code}[{', '.join(cut)}]"
            return code
        if fam == "scan" and self.sweep and self.sweep[0] is e and region == self.sweep[1]:
            # a batch of a sweep: row by row, each the previous row (carried across batches
            # in _prev) stepped with the input's row, NumPy's own order of operations
            step = op.scan_step.__name__
            inp = self._value(e.inputs[0], region, ctx)
            if not inp.isidentifier():
                ctx.lines.add(f"_in = {inp}")
                inp = "_in"
            ax = e.params["axis"]
            target = self.sweep[2]
            lead = ":, " * ax
            if target is None:
                ctx.lines.add(f"_blk = _scan[{lead}:(_i1 - _i0)]")
            else:
                ctx.lines.add(f"_blk = {target}")
            ctx.lines.add("for _r in range(_i1 - _i0):")
            ctx.lines.add("    if _i0 + _r == 0:")
            ctx.lines.add(f"        np.copyto(_blk[{lead}0], {inp}[{lead}0])")
            ctx.lines.add("    else:")
            ctx.lines.add(f"        np.{step}(_prev, {inp}[{lead}_r], out=_blk[{lead}_r])")
            ctx.lines.add(f"    _prev = _blk[{lead}_r]")
            if target is None:  # the scratch batch is overwritten by the next batch
                ctx.lines.add("_prev = _prev.copy()")
            return "_blk"
        if fam == "scan":
            ax = attrs["axis"]
            a = e.inputs[0]
            dt = f", dtype=np.{attrs['dtype'].name}" if attrs.get("dtype") is not None else ""
            if a.type.rank == 0 or region[ax] != (0, e.out.type.shape[ax]):
                return self._whole_then_slice(e, region, ctx)
            return f"np.{op.numpy[0].__name__}({self._value(a, region, ctx)}, axis={ax}{dt})"
        if fam == "index":
            return self._reorder(e, region, ctx)
        if fam == "gather":  # np.take checks its indices (see _kernel for kernels that write)
            m = view_map(e, self.plan.same)
            x, index = e.inputs
            xr = list(interval(m.data, region))
            xr[m.axis] = (0, x.type.shape[m.axis])
            xs = self._value(x, tuple(xr), ctx)
            js = self._value(index, interval(m.index, region), ctx)
            return f"np.{e.op}({xs}, {js}, axis={m.axis})"
        if fam in ("contraction", "attention", "custom"):
            if region != self._heavy_region(e.out):
                raise InternalError(f"{e.op} is computed whole")
            args = [
                self._value(a, r, ctx) if isinstance(a, Var) else self._literal(a)
                for a, r in zip(e.inputs, self._operand_regions(e))
            ]
            if e.op == "attention":
                q, k, v, scale, mask = attention_args(args, attrs)
                shape = self._shape(tuple(hi - lo for lo, hi in region))
                dt = f"np.{e.out.type.dtype.name}"
                return (
                    f"_attention({q}, {k}, {v}, {scale}, {mask}, {attrs['scale_op']!r}, "
                    f"np.empty({shape}, {dt}))"
                )
            if e.op in ("matmul", "dot"):
                return f"np.{e.op}({', '.join(args)})"
            return self._user_call(e, args, attrs)
        raise InternalError(f"no NumPy code for `{e.op}`")

    def _map_code(self, e, op, args, attrs, region) -> str:
        """A ufunc call, or the code the NumPy target's table gives (emit/numpy_rules.py)."""
        if op.ufunc is not None and not attrs:
            return _ufunc_call(op.ufunc, args)
        code = NUMPY_CODE.get(e.op) if op.builtin else None
        if code is not None:
            return code(args, attrs, self._shape(tuple(hi - lo for lo, hi in region)))
        return self._user_call(e, args, attrs)

    def _user_call(self, e, args, attrs) -> str:
        if e.op == "host_call":  # a graph break: the call as written
            fn = function_ref(attrs["fn"], self.user_ops, self.impl_name)
            return host_call_code(attrs, args, fn, dim_code)
        kw = [f"{k}={attr_code(v)}" for k, v in attrs.items()]
        return f"{self._impl_ref(e.op)}({', '.join([*args, *kw])})"

    def _impl_ref(self, name: str) -> str:
        """The code naming an op's implementation: NumPy's function when the op is one (the
        module stays self-contained), else the module's table of user operators."""
        op = REGISTRY[name]
        fn = op.call or op.impl
        if getattr(np, getattr(fn, "__name__", ""), None) is fn:
            return f"np.{fn.__name__}"
        self.user_ops[name] = op.impl
        return f"{self.impl_name}[{name!r}]"

    def _whole_then_slice(self, e, region, ctx) -> str:
        """Compute the value whole (creation ops, scans along the block axis), then slice."""
        pre = self.pre  # once per kernel call, before the blocks
        key = (id(e.out), "whole")
        if key not in pre.memo:
            attrs = {k: v for k, v in e.attrs if k != "weak"}
            args = [
                self._value(a, self._full(a), pre) if isinstance(a, Var) else self._literal(a)
                for a in e.inputs
            ]
            kw = [f"{k}={attr_code(v)}" for k, v in attrs.items()]
            local = f"{self.names[id(e.out)]}_w{self._next()}"
            pre.lines.add(f"{local} = {self._impl_ref(e.op)}({', '.join([*args, *kw])})")
            pre.memo[key] = local
        whole = pre.memo[key]
        index = self._index(region, e.out.type.shape)
        return f"{whole}[{index}]" if index else whole

    # -- reorders ----------------------------------------------------------------------------
    def _reorder(self, e, region, ctx) -> str:
        """A view over ``region``: its operand over the interval its map gives (one rule per
        op, in the registry: pypto/lower/index_map.py), then subscripted, transposed or
        broadcast to the view's value (emit/views.py)."""
        a, m = self._view(e)
        if isinstance(m, Linear):
            return self._reshape(a, m, region, ctx)
        if isinstance(m, Pieces):
            return self._concatenate(e, m, region, ctx)
        direct = self._direct(a)
        if direct and m.reads and m.fixed() and not e.out.type.rank:
            name = self.whole.get(id(a), self.names[id(a)])  # one element: a[i, j]
            return f"{name}[{', '.join(self.dim(r.offset) for r in m.reads)}]"
        if direct:
            name = self.whole.get(id(a), self.names[id(a)])
            code = subscript_code(m, name, region, a.type.shape, self.dim, self.plan.same)
            if code is not None:
                return code
        base = self._value(a, interval(m, region), ctx)
        return view_code(m, base, region, e.out.type.shape, self.dim, self._shape, self.plan.same)

    def _view(self, e):
        """A view's operand and map: for a view of memory, the memory read through the whole
        chain's composed map (one subscript); else its operand through its own map."""
        found = self.low.loads.get(id(e.out))
        if found is not None:
            return found.source, found.map
        return e.inputs[0], view_map(e, self.plan.same)

    def _reshape(self, a, m: Linear, region, ctx) -> str:
        src, dst = m.src, m.dst
        p = 0
        while p < min(len(src), len(dst)) and self.plan.same((src[p],), (dst[p],)):
            p += 1
        restricted = [i for i, (r, d) in enumerate(zip(region, dst)) if r != (0, d)]
        if all(i < p for i in restricted):
            ar = tuple(region[i] if i < p else (0, d) for i, d in enumerate(src))
            shape = self._shape(tuple(hi - lo for lo, hi in region[:p]) + tuple(dst[p:]))
            return f"np.reshape({self._value(a, ar, ctx)}, {shape})"
        whole = f"np.reshape({self._value(a, self._full(a), ctx)}, {self._shape(dst)})"
        index = self._index(region, dst)
        return f"{whole}[{index}]" if index else whole

    def _concatenate(self, e, m: Pieces, region, ctx) -> str:
        ax = m.axis
        lo, hi = region[ax]
        k = self.within.get((id(e.out), lo, hi))
        if k is not None:  # the region lies inside piece k (see _split)
            return self._value(e.inputs[k], interval(m.piece(k), region), ctx)
        whole = lo == 0 and self.plan.same((hi,), (e.out.type.shape[ax],))
        parts = []
        for piece, start, n in zip(e.inputs, m.starts(), m.sizes):
            if whole:
                span = (0, n)
            else:
                span = (smin(smax(lo - start, 0), n), smin(smax(hi - start, 0), n))
            pr = tuple(span if i == ax else r for i, r in enumerate(region))
            parts.append(self._value(piece, pr, ctx))
        if whole:
            return f"np.concatenate([{', '.join(parts)}], axis={ax})"
        mixed = any(p.type.dtype != e.out.type.dtype for p in e.inputs)  # (promoted)
        dt = f", {dtype_code(e.out.type.dtype)}" if mixed else ""
        return f"_cat([{', '.join(parts)}], {ax}{dt})"  # a block may lie inside one piece


class _Ctx:
    def __init__(self, lines, memo):
        self.lines = lines
        self.memo = memo


def compile_graph(plan: GraphPlan):
    """The plan as a Python function ``run(values, env) -> outputs`` (loaded from its source;
    ``run.program``: what the compile cache keeps, None when it calls user operators)."""
    cached = getattr(plan, "_numpy_fn", None)
    if cached is not None:
        return cached
    emitter = GraphEmitter(plan, "graph")
    program = {"source": emitter.render(), "names": emitter.module_names()}
    program["free"] = [(ident(s), s) for s in emitter.free]  # (its name in the code, symbol)
    run = load_graph(program)
    run.program = None if emitter.user_ops else program
    run.source = runtime.vendored(cuda=False, standalone=True) + "\n\n" + program["source"]
    plan._numpy_fn = run
    return run


def debug_source(plan: GraphPlan) -> str:
    return (
        runtime.vendored(cuda=False, standalone=True)
        + "\n\n"
        + GraphEmitter(plan, "graph").render()
    )


__all__ = ["compile_graph", "debug_source", "os"]
