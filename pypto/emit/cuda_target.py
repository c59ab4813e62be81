"""The CUDA target: a Plan rendered as CUDA C kernels and the Python host code that runs them.

Files: this one (the graph: buffers, launches, streams, host computations; ``compile_graph_cuda``),
cuda_kernels.py (``KernelWriter``: one kernel's C), cuda_prelude.py (the device helpers),
runtime/cuda_helpers.py (the host code's helpers), cuda_attention.py (the attention kernel).

``CudaGraphEmitter(plan, name).render()`` gives ``(kernels, host_source)``: the kernels of one
RawModule source for the graph (one ``extern "C"`` kernel per Plan kernel, specialized to the
plan's dtypes; the module's source is the device helpers of cuda_prelude.py, which the runtime
has as ``_CUDA_PRELUDE``, then these) and a Python function ``name(*inputs, **sizes)``
that binds the size symbols from its inputs' shapes, allocates the buffers the memory plan
names, runs matrix products through ``cp.matmul`` (cuBLAS), and launches each kernel with a
grid derived from the run-time sizes. Every size the kernels need (symbolic extents, slice
starts, element strides) is computed by the host and passed as a ``long long`` argument, so
one compiled module serves every size its plan's guards allow.

Each kernel evaluates its body *at an index*: a value at an index is a C local; index maps
(transpose, slices, broadcast, flip, reshape, concatenation) transform the index, never copy.
Families:

* elementwise (stencils, stores, a product's epilogue): a grid-stride loop over the output's
  elements, 64-bit indices;
* reductions and row-wise kernels: with the last axis reduced, one block per row, threads
  striding the row, ``ppto_block_reduce`` (warp shuffles, then shared memory) for each
  reduction in order; else one thread per output element looping over the reduced elements;
* scans: one thread per line, sequentially along the scanned axis (NumPy's order of additions);
* attention: the tiled online-softmax kernel of cuda_attention.py;
* products, user operators without a CUDA expression, and creation ops: computed whole by the
  host (``cp.matmul``; the others through NumPy and copied to the device).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InternalError, UnsupportedError
from ..ir import Literal, Var
from ..lower.families import family
from ..lower.index_map import Linear, Pieces, interval, view_map
from ..lower.kernel import combine_of
from ..ops.gathers import take_bounds
from ..ops.pycode import PYTHON_CODE, python_code
from ..passes.plan import GraphPlan, Kernel
from ..registry import REGISTRY
from ..symbolic import free_symbols
from . import runtime
from .common import (
    attention_args,
    attr_code,
    bound_symbols,
    buffer_source,
    const_code,
    dim_code,
    dtype_code,
    eqn_symbols,
    function_ref,
    graph_symbols,
    host_call_code,
    ident,
    literal_code,
    read_bindings,
    return_code,
    sized_calls,
    value_idents,
)
from .cuda_kernels import _ACC_DTYPE, KernelWriter, NotInKernel, ScanElsewhere, loop_kernel
from .cuda_prelude import PRELUDE, compute_type
from .cuda_rules import cuda_code
from .views import region_code, view_code

_EXACT_IN_C = {"add", "subtract", "multiply", "divide", "neg"}


class CudaGraphEmitter:
    """Renders one GraphPlan as (CUDA source, Python host function ``name``)."""

    def __init__(self, plan: GraphPlan, name: str, loop=None):
        self.plan = plan
        self.name = name
        self.loop = loop  # (variable, step): the block's iterations inside its one kernel
        self.graph = plan.graph
        self.names = value_idents(plan)
        self.buffers = {id(b.value): b for b in plan.buffers}
        self.host_values: dict[int, str] = {}  # values the host computed whole this kernel
        self.consts: dict[str, np.ndarray] = {}
        self.user_ops: dict[str, object] = {}
        self.kernels: list[str] = []
        self.launches = 0
        # a Dask block program's (emit/dask_cuda.py): the chunk axis of the kernel's domain and
        # the block's bounds (axis, start, stop), and where its arrays start along their axes
        self.span = None
        self.origins: dict[int, tuple] = {}

    def dim(self, d) -> str:
        return dim_code(d)

    @property
    def impl_name(self) -> str:
        return f"{self.name}_impl"

    def module_source(self, kernels: str) -> str:
        """Source defining what the host function reads from its module: the RawModule's
        source (the runtime's ``_CUDA_PRELUDE`` and ``kernels``, compiled at first use), the
        constants, the user operators' table."""
        consts = ", ".join(f"{k!r}: {const_code(v)}" for k, v in self.consts.items())
        quoted = f"r'''{kernels}'''" if "'''" not in kernels else repr(kernels)
        return (
            f"{self.name}_module = {{'source': _CUDA_PRELUDE + {quoted}, 'fns': {{}}}}\n"
            f"{self.name}_consts = {{{consts}}}\n{self.impl_name} = {{}}\n"
        )

    def count(self, shape) -> str:
        """The number of elements of ``shape`` (a product of operands: sizes are operands)."""
        known = [d for d in shape if isinstance(d, int)]
        factors = [self.dim(d) for d in shape if not isinstance(d, int)]
        if math.prod(known) != 1 or not factors:
            factors.insert(0, str(math.prod(known)))
        return " * ".join(factors)

    def few_long(self, lines, length) -> str | bool:
        """The test that a kernel has few long lines (``lines < 64 and length >= 65536``: each
        line is split over many blocks); True or False where the sizes are constants."""
        tests = []
        for shape, op, bound in ((lines, "<", 64), (length, ">=", 65536)):
            if all(isinstance(d, int) for d in shape):
                n = math.prod(shape)
                if not (n < bound if op == "<" else n >= bound):
                    return False
            else:
                tests.append(f"{self.count(shape)} {op} {bound}")
        return " and ".join(tests) or True

    def shape(self, shape) -> str:
        items = [self.dim(d) for d in shape]
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    def whole_of(self, k: Kernel) -> set:
        return {
            id(e.out)
            for e in k.body.eqns
            if family(e) in ("contraction", "attention", "custom") or self._host_map(e)
        }

    def _host_map(self, e) -> bool:
        op = REGISTRY[e.op]
        if e.out.type.weak and e.op in PYTHON_CODE:  # Python arithmetic: on the host, in Python
            # (inside a loop's kernel, where the loop variable changes: float arithmetic that
            # C rounds as Python does, one IEEE double operation each)
            exact = e.op in _EXACT_IN_C and e.out.type.dtype.kind == "f" and cuda_code(op)
            return not (self.loop is not None and exact)
        return family(e) in ("map", "scalar") and not cuda_code(op)

    def host_name(self, v, whole) -> str:
        if id(v) in self.host_values:
            return self.host_values[id(v)]
        return self.names[id(v)]

    def written(self, k: Kernel) -> set:
        return {id(v) for v in k.outputs}

    def chunk_axis(self, k, v, stores):
        """The axis of output ``v``'s index space (``plan_domain_of``) that a block program
        cuts to its block (None: every axis whole)."""
        return None

    def buffer_shape(self, v) -> str:
        """The shape of the memory a kernel writes ``v`` into, as host code."""
        return self.shape(v.type.shape)

    def plan_domain_of(self, k, v, stores) -> tuple:
        """The index space a kernel output is written over: a store's, its value's region (the
        kernel's domain); any other output, its own shape."""
        if id(v) in stores:
            return tuple(k.domain)
        return tuple(v.type.shape)

    # -- the module --------------------------------------------------------------------------
    def render(self) -> tuple[str, str]:
        g = self.graph
        sig = self._signature()
        host = [f"def {self.name}(cp{', ' + sig if sig else ''}):"]
        body: list[str] = []
        sizes = [
            f"{ident(s)} = {self.names[id(v)]}.shape[{axis}]"
            for s, (v, axis) in bound_symbols(g).items()
        ]
        for i, (v, array) in enumerate(g.consts):
            self.consts[f"_c{i}"] = array
            body.append(f"{self.names[id(v)]} = _const(cp, {self.name}_consts, '_c{i}')")
        by_name = {b.name: b for b in self.plan.buffers}
        level_of = {i: n for n, level in enumerate(self.plan.levels) for i in level}
        if self.loop is not None:  # every kernel of the body inside one kernel that loops
            body += self._loop_kernel(by_name)
        for n, level in enumerate(self.plan.levels if self.loop is None else ()):
            if len(level) == 1:
                (i,) = level
                body += self._kernel(self.plan.kernels[i], f"{self.name}_k{i}", by_name)
                continue
            # kernels that may run at once: each on a stream of its own, after what came before;
            # a product's epilogue waits for the other product it reads (a late input)
            body.append(f"_main = cp.cuda.get_current_stream()  # level {n}: {len(level)} streams")
            body.append("_start = _main.record()")
            made = {}
            for j, i in enumerate(level):
                k = self.plan.kernels[i]
                made.update({id(v): i for v in k.outputs})
                body.append(f"with _stream(cp, {self.name}_module, {j}) as _st:")
                body.append("    _st.wait_event(_start)")
                waits = [f"_st.wait_event(_e{made[id(v)]})" for v in k.late_inputs if id(v) in made]
                inner = self._kernel(k, f"{self.name}_k{i}", by_name, before_launch=waits)
                body += ["    " + line for line in inner]
                body.append(f"    _e{i} = _st.record()")
            body += [f"_main.wait_event(_e{i})" for i in level]
        assert all(level_of.get(i) is not None for i in range(len(self.plan.kernels)))
        body.append(return_code(g.outputs, self.names, self._literal))
        body = read_bindings(sizes, "\n".join(body)) + body
        host += ["    " + line for line in body]
        return "\n" + "\n".join(self.kernels), "\n".join(host) + "\n"

    def _loop_kernel(self, by_name) -> list[str]:
        """The body's kernels as one that runs the loop (``loop_kernel``): each elementwise,
        over one domain, every output written in place (nothing the host makes per step)."""
        kernels = self.plan.kernels
        if self.graph.consts:
            raise NotInKernel("the body has constants")
        domain = kernels[0].domain
        if any(
            not self.plan.same(k.domain, domain) or len(k.domain) != len(domain) for k in kernels
        ):
            raise NotInKernel("the body's kernels have different domains")
        self.loop_writers = []
        lines = []
        for i, k in enumerate(kernels):
            lines += self._kernel(k, f"{self.name}_k{i}", by_name)
        cname = f"{self.name}_loop"
        writers = self.loop_writers
        if not writers:
            raise NotInKernel("no kernel left to run the loop")
        self.kernels.append(loop_kernel(cname, writers, *self.loop))
        launch = _Launch(writers)
        return lines + self._launch(kernels[0], launch, cname)

    def _signature(self) -> str:
        taken = set(bound_symbols(self.graph)) | set(sized_calls(self.graph).values())
        self.free = sorted(graph_symbols(self.plan, chunks=False) - taken)
        if self.loop is not None:  # the range instead of the variable
            self.free = [s for s in self.free if s != self.loop[0]] + ["_lo", "_hi"]
        params = ", ".join(self.names[id(v)] for v in self.graph.inputs)
        extra = ", ".join(ident(s) for s in self.free)
        return ", ".join(x for x in (params, "*, " + extra if extra else "") if x)

    def _kernel(self, k: Kernel, cname: str, by_name, before_launch=()) -> list[str]:
        lines = [f"# {k.name}: {k.kind} ({' '.join(k.ops) or 'copy'})"]
        self.host_values = {}
        prod = {id(e.out): e for e in k.body.eqns}
        outputs = {id(v) for v in k.outputs}
        direct = set()  # outputs the host computes (no kernel writes them)
        for e in k.body.eqns:
            if id(e.out) not in self.whole_of(k):
                continue
            if self.loop is not None and _moves(e, self.loop[0], self.graph.inputs):
                # (what does not move is computed once, before the loop)
                raise NotInKernel(f"`{e.op}` runs on the host at each step")
            code = self._host_eqn(e, prod)
            if id(e.out) in outputs:
                lines.append(f"{self.names[id(e.out)]} = {code}")
                direct.add(id(e.out))
                self.host_values[id(e.out)] = self.names[id(e.out)]
            else:
                local = f"{self.names[id(e.out)]}_whole"
                lines.append(f"{local} = {code}")
                self.host_values[id(e.out)] = local
        for e in k.body.eqns:  # CuPy would wrap indices outside the axis: NumPy raises
            if family(e) == "gather":
                if self.loop is not None:
                    raise NotInKernel("a gather's indices are checked on the host")
                index, n, axis = take_bounds(e)
                lines.append(f"_take_bounds({self._host_view(index, prod)}, {self.dim(n)}, {axis})")
        for v in k.outputs:
            if id(v) not in direct:
                lines += self._allocate(k, v, by_name, prod)
        if all(id(v) in direct for v in k.outputs):
            return lines  # the host made every output (a product, a user operator)
        return lines + self._launches(k, cname, by_name, before_launch)

    def _allocate(self, k: Kernel, v, by_name, prod) -> list[str]:
        """The memory kernel ``k`` writes its output ``v`` into."""
        lines = []
        s = next((x for x in k.stores if x.out is v), None)
        b = self.buffers.get(id(v))
        dt = dtype_code(v.type.dtype)
        name = self.names[id(v)]
        where, other = buffer_source(k, v, b, by_name, parallel=True)
        if self.loop is not None and where not in ("donor", "base"):
            raise NotInKernel(f"{name} is not written in place")
        if where == "donor":
            lines.append(f"{name} = {self.names[id(other)]}")
        elif where == "base":
            lines.append(f"{name} = {self._value_name(other)}")
        else:  # new memory (a store not in place never takes over its base's memory)
            if where == "reuse":
                prior = self.names[id(other)]
                lines.append(f"{name} = _reuse({prior}, {dt}, {self.shape(v.type.shape)})")
            else:
                lines.append(f"{name} = cp.empty({self.shape(v.type.shape)}, {dt})")
            if s is not None:  # the base first (a view of an input: through index maps)
                base = self._value_name(s.base)
                if isinstance(s.base, Var) and id(s.base) in prod:
                    base = self._host_view(s.base, prod)
                lines.append(f"cp.copyto({name}, {base})")
        return lines

    def _launches(self, k: Kernel, cname: str, by_name, before_launch) -> list[str]:
        """The launches of kernel ``k`` (its outputs allocated)."""
        lines = list(before_launch)
        if self.loop is not None:  # its statements go into the loop's kernel
            prefix = f"k{len(self.loop_writers)}"
            self.loop_writers.append(KernelWriter(self, k, cname, loop=self.loop, prefix=prefix))
            return lines
        writers = [KernelWriter(self, k, cname)]
        try:
            sources = [writers[0].render()]
        except ScanElsewhere:
            # the scan's values are read away from their position: the scan (and its prologue)
            # into a scratch array first, then the rest as an elementwise kernel reading it
            scan = next(e for e in k.body.eqns if family(e) == "scan")
            if any(v is scan.out for v in k.outputs):  # its own output buffer holds them
                scratch = self.names[id(scan.out)]
            else:
                scratch = f"{self.names[id(scan.out)]}_scan"
                dt = scan.out.type.dtype.name
                lines.append(f"{scratch} = cp.empty({self.buffer_shape(scan.out)}, np.{dt})")
            self.host_values[id(scan.out)] = scratch
            first = KernelWriter(self, k, cname, outputs=(scan.out,))
            sources = [first.render()]
            rest = tuple(v for v in k.outputs if v is not scan.out)
            second = KernelWriter(self, k, cname + "_epilogue", outputs=rest, kind="elementwise")
            sources.append(second.render())
            writers = [first, second]
        self.kernels += sources
        if len(writers) == 1 and k.kind == "scan":  # few long lines: a block scan as well
            sums = KernelWriter(self, k, cname + "_sums")
            scan = next(e for e in k.body.eqns if family(e) == "scan")
            final = KernelWriter(self, k, cname + "_scan")
            self.kernels += [sums.block_scan("sums"), final.block_scan("scan")]
            rows = [d for a, d in enumerate(k.domain) if a != k.scan_axis]
            length = [k.domain[k.scan_axis]]
            lines_, n = self.count(rows), self.count(length)
            split = [f"_parts = max(1, min(1024, {n} // 8192))"]
            dt = _ACC_DTYPE.get(compute_type(scan.out.type.dtype), scan.out.type.dtype.name)
            split.append(f"_q0 = cp.empty(({lines_} * _parts,), np.{dt})")
            blocks = f"{lines_} * _parts"
            split += self._launch(k, sums, sums.name, blocks)
            split += self._launch(k, final, final.name, blocks)
            whole = self._launch(k, writers[0], writers[0].name)
            return lines + _branch(self.few_long(rows, length), split, whole)
        vec = KernelWriter(self, k, cname + "_vec")
        width = vec.vector_width() if len(writers) == 1 else 0
        if width:
            self.kernels.append(vec.vector_kernel(width))
            arrays = [p[1] for p in vec.params if "*" in p[0]]
            total = self.count(k.outputs[0].type.shape)
            lines.append(f"if _vectors({total}, {width}, {', '.join(arrays)}):")
            lines += [
                "    " + x for x in self._launch(k, vec, vec.name, f"-(-{total} // {width} // 256)")
            ]
            lines.append("else:")
            lines += ["    " + x for x in self._launch(k, writers[0], writers[0].name)]
            return lines
        split = KernelWriter(self, k, cname + "_part")
        if len(writers) == 1 and split.two_stage_eligible():
            final = KernelWriter(self, k, cname + "_final")
            self.kernels += [split.two_stage("part"), final.two_stage("final")]
            kept = [d for a, d in enumerate(k.domain) if a not in k.reduced]
            red = [d for a, d in enumerate(k.domain) if a in k.reduced]
            rows = self.count(kept)
            # few long rows: each row split over many blocks, partial results combined after
            parts = [f"_parts = max(1, min(1024, {self.count(red)} // 8192))"]
            for i, e in enumerate(x for x in k.body.eqns if family(x) == "reduce"):
                dt = _ACC_DTYPE.get(split.acc_type(e), e.out.type.dtype.name)
                parts.append(f"_q{i} = cp.empty(({rows} * _parts,), np.{dt})")
            parts += self._launch(k, split, split.name, f"{rows} * _parts")
            parts += self._launch(k, final, final.name)
            whole = self._launch(k, writers[0], writers[0].name)
            return lines + _branch(self.few_long(kept, red), parts, whole)
        for writer in writers:
            lines += self._launch(k, writer, writer.name)
        return lines

    def _launch(self, k, writer, cname, blocks=None) -> list[str]:
        lines = []
        grid, block, smem = writer.launch()
        if blocks is not None:  # one block per (row, part)
            grid = f"max(1, min({blocks}, 65535))"
        for e in k.body.eqns:
            empty = family(e) == "reduce" and combine_of(e).identity is None
            if empty and not isinstance(e.inputs[0], Literal):
                axes = e.params["axis"]
                dims = [e.inputs[0].type.shape[i] for i in axes]
                if all(isinstance(d, int) for d in dims) and math.prod(dims) != 0:
                    continue  # (never empty)
                red = self.count(dims)
                lines.append(f"if {red} == 0 and {self.count(e.out.type.shape)} > 0:")
                lines.append(
                    "    raise ValueError('zero-size array to reduction operation "
                    f"{combine_of(e).ufunc.__name__} which has no identity')"
                )
        args = ", ".join(host for _, host in writer.params)
        lines.append(f"_grid_ = {grid}")
        lines.append("if _grid_ > 0:")
        lines.append(
            f"    _fn(cp, {self.name}_module, {cname!r})((_grid_,), ({block},), "
            f"({args}{',' if len(writer.params) == 1 else ''}), shared_mem={smem})"
        )
        self.launches += 1
        return lines

    def _literal(self, lit: Literal) -> str:
        return literal_code(lit, ident)

    def _value_name(self, v) -> str:
        if isinstance(v, Literal):
            return self._literal(v)
        return self.host_values.get(id(v), self.names[id(v)])

    def _host_eqn(self, e, prod) -> str:
        """Host code computing ``e`` whole: products through cp.matmul, attention through its
        kernel, anything else through NumPy (copied to the device)."""
        args = [self._host_view(a, prod) for a in e.inputs]
        attrs = {k: v for k, v in e.attrs if k != "weak"}
        if e.out.type.weak and e.op in PYTHON_CODE:
            return python_code(e.op, args, e.out.type.dtype)
        if e.op in ("matmul", "dot"):
            return f"cp.{e.op}({', '.join(args)})"
        if e.op == "attention":
            q, k_, v, scale, mask = attention_args(args, attrs)
            dt = f"np.{e.out.type.dtype.name}"
            return (
                f"_cuda_attention(cp, {q}, {k_}, {v}, {scale}, {mask}, {attrs['scale_op']!r}, {dt})"
            )
        if e.op == "host_call":  # a graph break: CuPy's function of the name, or NumPy's
            fn = function_ref(attrs["fn"], self.user_ops, self.impl_name)
            return host_call_code(attrs, args, fn, self.dim, cuda=True)
        return f"_device(cp, {self._impl_call(e, args, attrs)})"

    def _impl_call(self, e, args, attrs) -> str:
        """The op's NumPy implementation called on the host (device arrays copied over)."""
        items = [f"_host(cp, {a})" for a in args]
        items += [f"{k}={attr_code(v, self.dim)}" for k, v in attrs.items()]
        op = REGISTRY[e.op]
        fn = op.call or op.impl
        if getattr(np, getattr(fn, "__name__", ""), None) is fn:  # NumPy's own: by name
            return f"np.{fn.__name__}({', '.join(items)})"
        self.user_ops[e.op] = op.impl
        return f"{self.name}_impl[{e.op!r}]({', '.join(items)})"

    def _host_view(self, v, prod) -> str:
        """Host code for an operand of a host computation: an input, or index maps of one."""
        if isinstance(v, Literal):
            return self._literal(v)
        if id(v) in self.host_values:
            return self.host_values[id(v)]
        e = prod.get(id(v))
        if e is None:
            return self.names[id(v)]
        if family(e) == "scalar":  # a scalar feeding a product (a scale): on the host
            args = [self._host_view(a, prod) for a in e.inputs]
            if e.out.type.weak and e.op in PYTHON_CODE:
                return python_code(e.op, args, e.out.type.dtype)
            attrs = {k: v for k, v in e.attrs if k != "weak"}
            return self._impl_call(e, args, attrs)
        if family(e) != "index":
            raise UnsupportedError(
                f"the CUDA target computes `{e.op}` feeding a host computation only as a view"
            )
        a = self._host_view(e.inputs[0], prod)
        m = view_map(e, self.plan.same)
        if isinstance(m, Linear):  # CuPy's reshape, to the output's shape
            return f"cp.reshape({a}, {self.shape(e.out.type.shape)})"
        if isinstance(m, Pieces):
            raise UnsupportedError(f"the CUDA target cannot view `{e.op}` on the host")
        region = tuple((0, d) for d in e.out.type.shape)
        cut = region_code(interval(m, region), e.inputs[0].type.shape, self.dim, self.plan.same)
        base = f"{a}[{cut}]" if cut else a
        return view_code(
            m, base, region, e.out.type.shape, self.dim, self.shape, self.plan.same, "cp"
        )


def _moves(e, var: str, inputs) -> bool:
    """Whether an equation's sizes, attributes or literal operands read ``var``, or it reads
    anything but the block's inputs (computed once before the loop, it would be stale)."""
    given = {id(v) for v in inputs}
    if any(isinstance(a, Var) and id(a) not in given for a in e.inputs):
        return True
    return var in eqn_symbols(e) or any(
        var in free_symbols(d) for a in e.inputs for d in a.type.shape
    )


class _Launch:
    """The launch of a loop's kernel: its kernels' arguments, then the range."""

    def __init__(self, writers):
        self.writers = writers
        self.params = [p for w in writers for p in w.params]
        self.params += [("long long jlo_", "np.int64(_lo)"), ("long long jhi_", "np.int64(_hi)")]

    def launch(self):
        return self.writers[0].launch()


def _branch(test, then: list[str], otherwise: list[str]) -> list[str]:
    """``if test: then`` ``else: otherwise`` as lines; one of them where ``test`` is known."""
    if test is True or test is False:
        return then if test else otherwise
    return [f"if {test}:", *("    " + x for x in then), "else:", *("    " + x for x in otherwise)]


_COMPILED = [0]


def compile_graph_cuda(plan: GraphPlan, cp, loop=None):
    """The plan as ``run(values, env) -> outputs`` on the CUDA target, with ``cp`` the CuPy
    module (or the emulator's stand-in, pypto/testing/cuda_emu/fakecupy.py). ``loop``
    (variable, step): the plan of a loop's body with the iterations inside its kernel (``env``
    gives the range as ``_lo``, ``_hi``); None where they cannot be."""
    cache = plan.__dict__.setdefault("_cuda_fns", {})
    key = (id(cp), loop)
    if key in cache:
        return cache[key]
    emitter = CudaGraphEmitter(plan, "graph", loop=loop)
    try:
        kernels, host_source = emitter.render()
    except NotInKernel:
        if loop is None:
            raise
        cache[key] = None
        return None
    cuda_source = PRELUDE + kernels
    namespace = dict(runtime.namespace("cuda_helpers"), cp=cp)
    namespace["graph_module"] = {"source": cuda_source, "fns": {}}
    namespace["graph_consts"] = dict(emitter.consts)
    namespace["graph_impl"] = dict(emitter.user_ops)
    _COMPILED[0] += 1
    filename = f"<pypto-cuda-{_COMPILED[0]}>"
    import linecache

    linecache.cache[filename] = (len(host_source), None, host_source.splitlines(True), filename)
    try:
        exec(compile(host_source, filename, "exec"), namespace)
    except SyntaxError as e:
        raise InternalError(f"generated CUDA host code does not parse: {e}\n{host_source}") from e
    fn = namespace["graph"]
    free = emitter.free

    def run(values, env):
        return list(fn(cp, *values, **{ident(s): env[s] for s in free}))

    run.cuda_source = cuda_source
    run.host_source = host_source
    run.launches = emitter.launches
    cache[key] = run
    return run
