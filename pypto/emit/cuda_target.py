"""The CUDA target: a Plan rendered as CUDA C kernels and the Python host code that runs them.

``CudaGraphEmitter(plan, name).render()`` gives ``(cuda_source, host_source)``: one RawModule
source for the graph (the device helpers of cuda_prelude.py, then one ``extern "C"`` kernel per
Plan kernel, specialized to the plan's dtypes) and a Python function ``name(*inputs, **sizes)``
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

import contextlib

import numpy as np

from ..errors import InternalError, UnsupportedError
from ..ir import Literal, Var
from ..ops.indexing import SliceSpec
from ..passes.fuse import family
from ..passes.plan import GraphPlan, Kernel
from ..registry import REGISTRY
from ..symbolic import Expr, SymFloat, as_symbol, format_code
from .cuda_prelude import PRELUDE, compute_type, ctype
from .numpy_target import _ident, _pyrepr, const_code, literal_code, symfloat_code

BLOCK = 256  # threads per block
MAX_GRID = 4096  # blocks of a grid-stride launch

_IDENTITY = {"sum": "0", "prod": "1", "any": "0", "all": "1"}
_COMBINE = {
    "sum": ("ppto_sum_op", "({a} + {b})"),
    "mean": ("ppto_sum_op", "({a} + {b})"),
    "prod": ("ppto_prod_op", "({a} * {b})"),
    "max": ("ppto_max_op", "ppto_maximum({a}, {b})"),
    "min": ("ppto_min_op", "ppto_minimum({a}, {b})"),
    "any": ("ppto_or_op", "({a} || {b})"),
    "all": ("ppto_and_op", "({a} && {b})"),
}
_EMPTY = {"max": "maximum", "min": "minimum"}
_VECTOR = {"float32": "float4", "int32": "int4", "uint32": "uint4", "float64": "double2",
           "int64": "longlong2"}  # fmt: skip
_ACC_DTYPE = {  # partial results of a two-stage reduction, by accumulator type
    "int": "int32",
    "float": "float32",
    "double": "float64",
    "long long": "int64",
    "unsigned long long": "uint64",
}


def _limits(dtype, low: bool) -> str:
    if dtype.kind == "f":
        inf = "PPTO_DINF" if dtype.name == "float64" else "PPTO_INF"
        return f"(-{inf})" if low else inf
    if dtype.kind == "b":
        return "false" if low else "true"
    info = np.iinfo(dtype)
    value = info.min if low else info.max
    c = ctype(dtype)
    if value == -(2**63):
        return "(-9223372036854775807LL - 1)"
    return f"(({c}){value}{'ULL' if dtype.kind == 'u' else 'LL'})"


def _c_literal(value, dtype) -> str:
    """A C literal of ``value`` in ``dtype``'s compute type."""
    ct = compute_type(dtype)
    if dtype.kind == "b":
        return "true" if value else "false"
    if dtype.kind in "iu":
        return f"(({ct}){int(value)}{'ULL' if dtype.kind == 'u' else 'LL'})"
    v = float(value)
    if v != v:
        return f"(({ct})__longlong_as_double(0x7ff8000000000000LL))"
    if v in (float("inf"), float("-inf")):
        return f"(({ct}){'-' if v < 0 else ''}PPTO_DINF)"
    return f"(({ct}){v!r})"


class _ScanElsewhere(InternalError):
    """A scan kernel whose scan values are read away from their own position."""


class KernelWriter:
    """The CUDA C of one Plan kernel, and the host arguments of its launch."""

    def __init__(self, ge: CudaGraphEmitter, k: Kernel, name: str, outputs=None, kind=None):
        self.ge, self.k, self.name = ge, k, name
        self.outputs = tuple(k.outputs if outputs is None else outputs)
        self.kind = kind or k.kind
        self.prod = {id(e.out): e for e in k.body.eqns}
        self.params: list[tuple[str, str]] = []  # (C declaration, host expression)
        self.dims: dict = {}  # symbolic size -> parameter name
        self.ptrs: dict[int, tuple] = {}  # id(value) -> (pointer, strides) or (scalar, None)
        self.lines: list[str] = []
        self.depth = 1
        self.memo: dict = {}
        self.count = 0
        self.scan = None  # (scan eqn, index, accumulator) inside a scan's loop
        own = {id(v) for v in self.outputs}  # computed whole (by the host), read like inputs
        self.whole = ge.whole_of(k) | (set(ge.host_values) - own)

    # -- parameters -------------------------------------------------------------------------
    def dim(self, d) -> str:
        """A size in C: a literal, or a parameter the host computes."""
        if isinstance(d, int):
            return str(d)
        name = self.dims.get(d)
        if name is None:
            name = self.dims[d] = f"n{len(self.dims)}"
            self.params.append((f"long long {name}", f"np.int64({self.ge.dim(d)})"))
        return name

    def array(self, v) -> tuple:
        """(pointer, strides) of an input or output array, or (scalar parameter, None)."""
        found = self.ptrs.get(id(v))
        if found is not None:
            return found
        host = self.ge.host_name(v, self.whole)
        p = f"p{len(self.ptrs)}"
        written = any(v is o for o in self.outputs)
        if v.type.rank == 0 and not written and (v.type.weak or id(v) not in self.ge.buffers):
            ct = compute_type(v.type.dtype)
            conv = "np.float32" if v.type.dtype.name == "float16" else f"np.{v.type.dtype.name}"
            if v.type.dtype.name == "bool":
                conv = "np.bool_"
            self.params.append((f"{ct} {p}", f"{conv}(_py({host}))"))
            found = (p, None)
        else:
            const = "" if written else "const "
            self.params.append((f"{const}{ctype(v.type.dtype)}* __restrict__ {p}", host))
            strides = []
            for axis in range(v.type.rank):
                s = f"{p}s{axis}"
                self.params.append((f"long long {s}", f"_stride({host}, {axis})"))
                strides.append(s)
            found = (p, tuple(strides))
        self.ptrs[id(v)] = found
        return found

    # -- statements ----------------------------------------------------------------------------
    def add(self, text: str):
        self.lines.append("    " * self.depth + text)

    def local(self, ct: str, code: str) -> str:
        self.count += 1
        name = f"v{self.count}"
        self.add(f"const {ct} {name} = {code};")
        return name

    @contextlib.contextmanager
    def scope(self, head: str | None = None):
        """A C block (``head {``): values computed inside stay inside."""
        if head is not None:
            self.add(head + " {")
        self.depth += 1
        saved = self.memo
        self.memo = dict(saved)
        try:
            yield
        finally:
            self.memo = saved
            self.depth -= 1
            if head is not None:
                self.add("}")

    # -- values at an index ------------------------------------------------------------------
    def at(self, v, idx: tuple) -> str:
        """The C expression (a local or a parameter) of ``v`` at ``idx`` (one C index per
        axis of ``v``), in ``v``'s compute type."""
        if isinstance(v, Literal):
            return self.literal(v)
        key = (id(v), idx)
        found = self.memo.get(key)
        if found is not None:
            return found
        e = self.prod.get(id(v))
        if e is None or id(v) in self.whole:
            code = self.load(v, idx)
            if v.type.rank == 0:  # a scalar parameter: no local needed
                self.memo[key] = code
                return code
        else:
            code = self.eqn(e, idx)
        if code.isidentifier():
            self.memo[key] = code
            return code
        name = self.local(compute_type(v.type.dtype), code)
        self.memo[key] = name
        return name

    def literal(self, lit: Literal) -> str:
        v = lit.value
        if isinstance(v, (Expr, SymFloat)) or (isinstance(v, int) and not isinstance(v, bool)):
            if isinstance(v, (Expr, int)):
                code = self.dim(v)
            else:
                code = self.dim_float(v)
            return f"(({compute_type(lit.type.dtype)}){code})"
        if isinstance(v, np.generic):
            v = v.item()
        return _c_literal(v, lit.type.dtype)

    def dim_float(self, v: SymFloat) -> str:
        name = self.dims.get(v)
        if name is None:
            name = self.dims[v] = f"f{len(self.dims)}"
            self.params.append((f"double {name}", f"float({symfloat_code(v, self.ge.sym)})"))
        return name

    def offset(self, strides, idx) -> str:
        terms = [f"({i}) * {s}" for i, s in zip(idx, strides) if i != "0"]
        return " + ".join(terms) if terms else "0"

    def load(self, v, idx) -> str:
        p, strides = self.array(v)
        if strides is None:
            return p
        if getattr(self, "lane", None) is not None and id(v) in self.vectors:  # a vector's lane
            return f"{self.vectors[id(v)]}.{self.lane}"
        ref = f"{p}[{self.offset(strides, idx)}]"
        return f"__half2float({ref})" if v.type.dtype.name == "float16" else ref

    def store(self, v, idx, value: str):
        p, strides = self.array(v)
        target = f"{p}[{self.offset(strides, idx)}]"
        if v.type.dtype.name == "float16":
            value = f"__float2half({value})"
        self.add(f"{target} = {value};")

    def broadcast(self, a, idx, shape) -> tuple:
        """The index of operand ``a`` read by an op of result ``shape`` at ``idx``."""
        shift = len(shape) - a.type.rank
        out = []
        for i, d in enumerate(a.type.shape):
            j = i + shift
            one = d == 1 or self.ge.plan.same((d,), (1,))
            other_one = shape[j] == 1 or self.ge.plan.same((shape[j],), (1,))
            out.append("0" if one and not other_one else idx[j])
        return tuple(out)

    def eqn(self, e, idx) -> str:
        fam = family(e)
        if fam in ("map", "scalar"):
            return self.map(e, idx)
        if fam == "index":
            return self.reorder(e, idx)
        if fam == "reduce":
            return self.reduce_inline(e, idx)
        if fam == "scan":
            if self.scan is not None and self.scan[0] is e and self.scan[1] == idx:
                return self.scan[2]
            raise _ScanElsewhere(f"kernel {self.k.name}: a scan read away from its position")
        raise InternalError(f"kernel {self.k.name}: `{e.op}` is computed by the host")

    def map(self, e, idx) -> str:
        op = REGISTRY[e.op]
        template = op.extra.get("cuda_code") or op.cuda
        if template is None:
            raise InternalError(f"`{e.op}` has no CUDA code")
        out_dt = e.out.type.dtype
        if op.ufunc is not None:
            keys = tuple(a.type.key for a in e.inputs) + (None,) * op.ufunc.nout
            loop = op.ufunc.resolve_dtypes(keys)
            types, result = loop[: op.ufunc.nin], loop[op.ufunc.nin]
        elif e.op == "where":
            types, result = (np.dtype(bool), out_dt, out_dt), out_dt
        elif e.op in ("astype", "copy"):
            types, result = (e.inputs[0].type.dtype,), out_dt
        else:  # a user operator with a CUDA expression: operands in their own types
            types, result = tuple(a.type.dtype for a in e.inputs), out_dt
        args = []
        for a, t in zip(e.inputs, types):
            code = (
                self.at(a, self.broadcast(a, idx, e.out.type.shape)) if isinstance(a, Var) else None
            )
            if code is None:
                code = self.literal(a)
            if compute_type(a.type.dtype) != compute_type(t):
                code = f"(({compute_type(t)}){code})"
            args.append(code)
        code = template.format(*args, T=compute_type(result))
        if compute_type(result) != compute_type(out_dt):
            code = f"(({compute_type(out_dt)}){code})"
        if out_dt.name == "float16":
            code = f"ppto_h({code})"
        return code

    def reorder(self, e, idx) -> str:
        a = e.inputs[0]
        p = e.params
        if e.op == "transpose":
            ai = [None] * len(p["perm"])
            for j, q in enumerate(p["perm"]):
                ai[q] = idx[j]
            return self.at(a, tuple(ai))
        if e.op == "expand_dims":
            return self.at(a, tuple(i for j, i in enumerate(idx) if j not in p["axis"]))
        if e.op == "squeeze":
            it = iter(idx)
            return self.at(
                a, tuple("0" if j in p["axis"] else next(it) for j in range(a.type.rank))
            )
        if e.op == "broadcast_to":
            return self.at(a, self.broadcast(a, idx, e.out.type.shape))
        if e.op == "flip":
            return self.at(
                a,
                tuple(
                    f"({self.dim(d)} - 1 - ({i}))" if j in p["axis"] else i
                    for j, (i, d) in enumerate(zip(idx, a.type.shape))
                ),
            )
        if e.op == "getitem":
            return self.at(a, self.getitem_index(p["index"], idx, a.type.rank))
        if e.op == "reshape":
            return self.at(a, self.reshape_index(idx, e.out.type.shape, a.type.shape))
        if e.op == "concatenate":
            return self.concatenate(e, idx)
        if e.op == "store":
            return self.store_value(e, idx)
        raise InternalError(f"no CUDA code for the reorder `{e.op}`")

    def getitem_index(self, index, idx, rank) -> tuple:
        items = [i for i in index if i is not Ellipsis]
        ai, j = [], 0
        for item in items:
            if item is None:
                j += 1
            elif isinstance(item, SliceSpec):
                if item.start == 0 and item.step == 1:  # the same index (``c[:]``)
                    ai.append(idx[j])
                else:
                    ai.append(f"({self.dim(item.start)} + {item.step} * ({idx[j]}))")
                j += 1
            else:
                ai.append(f"({self.dim(item)})")
        ai += list(idx[j : j + rank - len(ai)])
        return tuple(ai)

    def reshape_index(self, idx, dst, src) -> tuple:
        if not dst or not src:
            return tuple("0" for _ in src)
        lin = idx[0]
        for i, d in zip(idx[1:], dst[1:]):
            lin = f"(({lin}) * {self.dim(d)} + ({i}))"
        self.count += 1
        flat = f"r{self.count}"
        self.add(f"const long long {flat} = {lin};")
        out = []
        stride = "1"
        for d in reversed(src[1:]):
            out.append(f"(({flat} / {stride}) % {self.dim(d)})")
            stride = f"({stride} * {self.dim(d)})"
        out.append(f"({flat} / {stride})")
        return tuple(reversed(out))

    def concatenate(self, e, idx) -> str:
        ax = e.params["axis"]
        ct = compute_type(e.out.type.dtype)
        self.count += 1
        name = f"v{self.count}"
        self.add(f"{ct} {name};")
        start = 0
        for n, piece in enumerate(e.inputs):
            size = piece.type.shape[ax]
            end = f"({self.dim(start)} + {self.dim(size)})" if start != 0 else self.dim(size)
            last = n == len(e.inputs) - 1
            head = "else" if last else f"{'if' if n == 0 else 'else if'} (({idx[ax]}) < {end})"
            pi = tuple(
                f"(({i}) - {self.dim(start)})" if j == ax and start != 0 else i
                for j, i in enumerate(idx)
            )
            with self.scope(head):
                self.add(f"{name} = {self.at(piece, pi)};")
            start = start + size
        return name

    def store_positions(self, index, idx, out_rank) -> tuple:
        """The output index a store's value at domain index ``idx`` goes to, and the domain
        axes it consumes: SliceSpec items take one axis each, integers none, None one."""
        items = list(index)
        explicit = sum(1 for i in items if i is not None and i is not Ellipsis)
        if Ellipsis in items:
            k = items.index(Ellipsis)
            items[k : k + 1] = [SliceSpec(0, 1, None)] * (out_rank - explicit)
        else:
            items += [SliceSpec(0, 1, None)] * (out_rank - explicit)
        pos, j = [], 0
        for item in items:
            if item is None:
                j += 1
            elif isinstance(item, SliceSpec):
                start = self.dim(item.start) if item.start != 0 else None
                i = idx[j]
                if item.step != 1:
                    i = f"({item.step} * ({i}))"
                pos.append(f"({start} + {i})" if start else i)
                j += 1
            else:
                pos.append(f"({self.dim(item)})")
        return tuple(pos)

    def store_value(self, e, idx) -> str:
        """The value of ``base[index] = value`` read at ``idx`` inside the kernel."""
        raise InternalError(f"kernel {self.k.name}: a slice assignment read in its own kernel")

    def reduce_inline(self, e, idx) -> str:
        """A reduction at ``idx`` by one thread: a loop over the reduced elements."""
        a = e.inputs[0]
        axes, keep = e.params["axis"], e.params["keepdims"]
        acc, ct, _ = self.reduce_init(e)
        full, it, loops = [], iter(idx), []
        for i, d in enumerate(a.type.shape):
            if i in axes:
                self.count += 1
                t = f"t{self.count}"
                loops.append((t, d))
                full.append(t)
                if keep:
                    next(it)
            else:
                full.append(next(it))
        depth = self.depth
        heads = [f"for (long long {t} = 0; {t} < {self.dim(d)}; ++{t})" for t, d in loops]
        with contextlib.ExitStack() as stack:
            for h in heads:
                stack.enter_context(self.scope(h))
            self.add(f"{acc} = {self.combine(e, acc, self.at(a, tuple(full)), ct)};")
        assert self.depth == depth
        return self.reduce_result(e, acc, axes, a)

    def reduce_init(self, e):
        self.count += 1
        acc = f"acc{self.count}"
        kind = e.op
        a = e.inputs[0]
        if kind in ("any", "all"):
            ct = "int"
        elif kind in ("max", "min"):
            ct = compute_type(a.type.dtype)
        else:
            ct = compute_type(e.out.type.dtype)
        if kind in ("max", "min"):
            init = _limits(a.type.dtype, low=kind == "max")
        else:
            init = _IDENTITY.get(kind, "0")
        self.add(f"{ct} {acc} = ({ct}){init};")
        return acc, ct, kind

    def combine(self, e, acc, value, ct) -> str:
        a = e.inputs[0]
        if e.op in ("any", "all"):
            value = f"(({value}) != 0)"
        elif compute_type(a.type.dtype) != ct:
            value = f"(({ct}){value})"
        code = _COMBINE[e.op][1].format(a=acc, b=value)
        if e.out.type.dtype.name == "float16" and e.op in ("sum", "prod"):
            code = f"ppto_h({code})"
        return code

    def reduce_result(self, e, acc, axes, a) -> str:
        out = e.out.type.dtype
        if e.op == "mean":
            count = " * ".join(self.dim(a.type.shape[i]) for i in axes) or "1"
            code = f"({acc} / ({compute_type(out)})({count}))"
        elif e.op in ("any", "all"):
            code = f"({acc} != 0)"
        else:
            code = acc
        if out.name == "float16":
            code = f"ppto_h({code})"
        return code

    # -- kernels -----------------------------------------------------------------------------
    def render(self) -> str:
        if self.kind in ("reduction", "rowwise"):
            body = self.reduction_kernel()
        elif self.kind == "scan":
            body = self.scan_kernel()
        else:
            body = self.elementwise_kernel()
        params = ",\n    ".join(decl for decl, _ in self.params) or "int unused_"
        return f'extern "C" __global__ void {self.name}(\n    {params}) {{\n' + body + "}\n"

    def grid_loop(self, shape, total_name="total"):
        """``for`` each element of ``shape`` (grid-stride): yields the index."""
        total = " * ".join(f"(long long){self.dim(d)}" for d in shape) or "1"
        self.add(f"const long long {total_name} = {total};")
        self.add("const long long step_ = (long long)blockDim.x * gridDim.x;")
        head = (
            "for (long long lin_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            f"lin_ < {total_name}; lin_ += step_)"
        )
        return head, self.delinearize("lin_", shape, "i")

    def delinearize(self, lin, shape, prefix) -> list[str]:
        """Statements that split ``lin`` over ``shape`` (last axis fastest), and the index."""
        names = [f"{prefix}{a}" for a in range(len(shape))]
        stmts = []
        rest = lin
        for a in range(len(shape) - 1, 0, -1):
            stmts.append(f"const long long {names[a]} = {rest} % {self.dim(shape[a])};")
            nxt = f"{prefix}q{a}"
            stmts.append(f"const long long {nxt} = {rest} / {self.dim(shape[a])};")
            rest = nxt
        if shape:
            stmts.append(f"const long long {names[0]} = {rest};")
        return stmts, tuple(names)

    def elementwise_kernel(self) -> str:
        k = self.k
        stores = {id(s.out): s for s in k.stores}
        groups: list[tuple[tuple, list]] = []
        for v in self.outputs:
            shape = self.ge.plan_domain_of(k, v, stores)
            for g in groups:
                if len(g[0]) == len(shape) and self.ge.plan.same(g[0], shape):
                    g[1].append(v)
                    break
            else:
                groups.append((shape, [v]))
        for n, (shape, outs) in enumerate(groups):
            head, (stmts, idx) = self.grid_loop(shape, f"total{n}")
            with self.scope(head):
                for s in stmts:
                    self.add(s)
                for v in outs:
                    if id(v) in stores:
                        self.write_store(stores[id(v)], idx)
                    else:
                        self.store(v, idx, self.at(v, idx))
        return "\n".join(self.lines) + "\n"

    # -- vectorized elementwise kernels ---------------------------------------------------------
    def vector_width(self) -> int:
        """Elements per vector load for a plain map kernel (every array read and written at the
        same element: same shapes, no index maps, no stores; 4-byte or 8-byte types), else 0."""
        k = self.k
        if self.kind != "elementwise" or k.stores or not self.outputs:
            return 0
        shape = self.outputs[0].type.shape
        if not shape or any(v.type.rank == 0 for v in self.outputs):
            return 0
        arrays = [v for v in (*k.inputs, *self.outputs) if v.type.rank > 0]
        if any(family(e) not in ("map", "scalar") for e in k.body.eqns):
            return 0
        if self.whole or any(id(e.out) in self.whole for e in k.body.eqns):
            return 0
        for e in k.body.eqns:  # no broadcasting inside: every array operand has the shape
            for a in e.inputs:
                if (
                    isinstance(a, Var)
                    and a.type.rank
                    and not (a.type.rank == len(shape) and self.ge.plan.same(a.type.shape, shape))
                ):
                    return 0
        sizes = {v.type.dtype.itemsize for v in arrays}
        if any(v.type.dtype.name not in _VECTOR for v in arrays) or len(sizes) != 1:
            return 0
        if any(
            v.type.rank != len(shape) or not self.ge.plan.same(v.type.shape, shape) for v in arrays
        ):
            return 0
        return 16 // sizes.pop()

    def vector_kernel(self, width: int) -> str:
        """Each thread: ``width`` consecutive elements through one 16-byte load per array (the
        host launches it only for C-contiguous, 16-byte aligned arrays whose size ``width``
        divides)."""
        shape = self.outputs[0].type.shape
        total = " * ".join(f"(long long){self.dim(d)}" for d in shape) or "1"
        self.add(f"const long long vectors_ = ({total}) / {width};")
        self.add("const long long step_ = (long long)blockDim.x * gridDim.x;")
        head = (
            "for (long long w_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            "w_ < vectors_; w_ += step_)"
        )
        arrays = [v for v in self.k.inputs if v.type.rank > 0]
        with self.scope(head):
            self.vectors = {}
            for v in arrays:
                p, _ = self.array(v)
                vt = _VECTOR[v.type.dtype.name]
                self.add(f"const {vt} {p}v = reinterpret_cast<const {vt}*>({p})[w_];")
                self.vectors[id(v)] = f"{p}v"
            outs = {}
            for v in self.outputs:
                p, _ = self.array(v)
                outs[id(v)] = f"{p}o"
                self.add(f"{_VECTOR[v.type.dtype.name]} {p}o;")
            for lane in range(width):
                self.lane = "xyzw"[lane]
                with self.scope(f"/* element {lane} */"):
                    idx = tuple(f"L{lane}" for _ in shape)
                    for v in self.outputs:
                        self.add(f"{outs[id(v)]}.{self.lane} = {self.at(v, idx)};")
            self.lane = None
            for v in self.outputs:
                p, _ = self.array(v)
                vt = _VECTOR[v.type.dtype.name]
                self.add(f"reinterpret_cast<{vt}*>({p})[w_] = {outs[id(v)]};")
        params = ",\n    ".join(decl for decl, _ in self.params)
        body = "\n".join(self.lines) + "\n"
        return f'extern "C" __global__ void {self.name}(\n    {params}) {{\n' + body + "}\n"

    def write_store(self, s, idx):
        e = self.prod[id(s.out)]
        value = e.inputs[1]
        vidx = self.broadcast(value, idx, self.k.domain) if isinstance(value, Var) else None
        code = self.at(value, vidx) if vidx is not None else self.literal(value)
        vt, ot = value.type.dtype, s.out.type.dtype
        if compute_type(vt) != compute_type(ot):
            code = f"ppto_cast<{compute_type(ot)}>({code})"
        self.store(s.out, self.store_positions(s.index, idx, s.out.type.rank), code)

    def reduction_kernel(self) -> str:
        k = self.k
        domain, reduced = k.domain, tuple(k.reduced)
        kept = [a for a in range(len(domain)) if a not in reduced]
        reduces = [e for e in k.body.eqns if family(e) == "reduce"]
        block_mode = (
            len(domain) - 1 in reduced
            and all(
                len(e.inputs[0].type.shape) == len(domain)
                and self.ge.plan.same(e.inputs[0].type.shape, domain)
                and tuple(e.params["axis"]) == reduced
                for e in reduces
            )
            and all(v.type.rank in (len(domain), len(kept)) for v in self.outputs)
        )
        self.block_mode = block_mode
        rows_shape = tuple(domain[a] for a in kept)
        red_shape = tuple(domain[a] for a in reduced)
        rows = " * ".join(f"(long long){self.dim(d)}" for d in rows_shape) or "1"
        reds = " * ".join(f"(long long){self.dim(d)}" for d in red_shape) or "1"
        self.add(f"const long long rows_ = {rows};")
        self.add(f"const long long red_ = {reds};")
        if block_mode:
            self.add("__shared__ double scratch_[33];")
            head = "for (long long row_ = blockIdx.x; row_ < rows_; row_ += gridDim.x)"
        else:
            self.add("const long long step_ = (long long)blockDim.x * gridDim.x;")
            head = (
                "for (long long row_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                "row_ < rows_; row_ += step_)"
            )
        with self.scope(head):
            stmts, ridx = self.delinearize("row_", rows_shape, "k")
            for s in stmts:
                self.add(s)

            def inner(start, step):
                """A loop over the row's reduced elements (strided by the block's threads)."""
                return f"for (long long t_ = {start}; t_ < red_; t_ += {step})"

            if block_mode:
                for e in reduces:  # each reduction by the whole block, in order
                    acc, ct, _ = self.reduce_init(e)
                    with self.scope(inner("threadIdx.x", "blockDim.x")):
                        st, tidx = self.delinearize("t_", red_shape, "j")
                        for s in st:
                            self.add(s)
                        value = self.at(e.inputs[0], self.full_index(ridx, tidx, reduced))
                        self.add(f"{acc} = {self.combine(e, acc, value, ct)};")
                    functor = _COMBINE[e.op][0]
                    self.add(
                        f"{acc} = ppto_block_reduce<{ct}>({acc}, {functor}(), ({ct}*)scratch_);"
                    )
                    ci = self.canonical(e, ridx, kept, reduced, len(domain))
                    self.memo[(id(e.out), ci)] = self.local(
                        compute_type(e.out.type.dtype),
                        self.reduce_result(e, acc, reduced, e.inputs[0]),
                    )
            full_outs = [  # outputs at the domain's shape (a row-wise kernel's)
                v
                for v in self.outputs
                if reduced
                and v.type.rank == len(domain)
                and self.ge.plan.same(v.type.shape, domain)
            ]
            small = [v for v in self.outputs if v not in full_outs]
            for v in small:
                if v.type.rank == len(domain):
                    vidx = tuple(
                        "0" if a in reduced else ridx[kept.index(a)] for a in range(len(domain))
                    )
                elif v.type.rank == len(kept):
                    vidx = ridx
                else:
                    raise InternalError(f"kernel {k.name}: output of rank {v.type.rank}")
                value = self.at(v, vidx)
                if block_mode:
                    with self.scope("if (threadIdx.x == 0)"):
                        self.store(v, vidx, value)
                else:
                    self.store(v, vidx, value)
            if full_outs:
                start, step = ("threadIdx.x", "blockDim.x") if block_mode else ("0", "1")
                with self.scope(inner(start, step)):
                    st, tidx = self.delinearize("t_", red_shape, "j")
                    for s in st:
                        self.add(s)
                    fi = self.full_index(ridx, tidx, reduced)
                    for v in full_outs:
                        self.store(v, fi, self.at(v, fi))
            if block_mode:
                self.add("__syncthreads();")
        return "\n".join(self.lines) + "\n"

    def two_stage_eligible(self) -> bool:
        """A reduction kernel (outputs at the reduced shape, the last axis reduced, no
        reduction reading another) that can split each row over many blocks: partial results,
        then one block per row combining them (for few, long rows: one block per row would
        leave the GPU idle)."""
        k = self.k
        domain, reduced = k.domain, tuple(k.reduced)
        kept = len(domain) - len(reduced)
        reduces = [e for e in k.body.eqns if family(e) == "reduce"]
        if k.kind != "reduction" or not reduces or len(domain) - 1 not in reduced:
            return False
        for e in reduces:
            a = e.inputs[0]
            if not isinstance(a, Var) or tuple(e.params["axis"]) != reduced:
                return False
            if len(a.type.shape) != len(domain) or not self.ge.plan.same(a.type.shape, domain):
                return False
            if any(family(d) == "reduce" for d in self._producers(a)):
                return False
        return all(v.type.rank in (len(domain), kept) for v in self.outputs) and all(
            self.ge.plan.same(
                tuple(
                    d for j, d in enumerate(v.type.shape) if j not in reduced or v.type.rank == kept
                ),
                tuple(domain[j] for j in range(len(domain)) if j not in reduced),
            )
            for v in self.outputs
            if v.type.rank == kept
        )

    def _producers(self, v) -> list:
        """The equations ``v`` is computed from inside the kernel."""
        found, stack, seen = [], [v], set()
        while stack:
            x = stack.pop()
            e = self.prod.get(id(x)) if isinstance(x, Var) else None
            if e is None or id(e) in seen:
                continue
            seen.add(id(e))
            found.append(e)
            stack += list(e.inputs)
        return found

    def two_stage(self, stage: str) -> str:
        """``stage`` "part": block b reduces part b % parts_ of row b / parts_ into the partial
        arrays; "final": one block per row combines a row's partials, then the epilogue."""
        k = self.k
        domain, reduced = k.domain, tuple(k.reduced)
        kept = [a for a in range(len(domain)) if a not in reduced]
        reduces = [e for e in k.body.eqns if family(e) == "reduce"]
        self.block_mode = True
        rows_shape = tuple(domain[a] for a in kept)
        red_shape = tuple(domain[a] for a in reduced)
        rows = " * ".join(f"(long long){self.dim(d)}" for d in rows_shape) or "1"
        reds = " * ".join(f"(long long){self.dim(d)}" for d in red_shape) or "1"
        self.params.append(("long long parts_", "np.int64(_parts)"))
        partials = []
        for i, e in enumerate(reduces):
            ct = self.acc_type(e)
            partials.append(f"q{i}")
            self.params.append((f"{ct}* __restrict__ q{i}", f"_q{i}"))
        self.add(f"const long long rows_ = {rows};")
        self.add(f"const long long red_ = {reds};")
        self.add("__shared__ double scratch_[33];")
        if stage == "part":
            self.add("const long long chunk_ = (red_ + parts_ - 1) / parts_;")
            head = "for (long long b_ = blockIdx.x; b_ < rows_ * parts_; b_ += gridDim.x)"
        else:
            head = "for (long long row_ = blockIdx.x; row_ < rows_; row_ += gridDim.x)"
        with self.scope(head):
            if stage == "part":
                self.add("const long long row_ = b_ / parts_;")
                self.add("const long long lo_ = (b_ % parts_) * chunk_;")
                self.add("const long long hi_ = lo_ + chunk_ < red_ ? lo_ + chunk_ : red_;")
            stmts, ridx = self.delinearize("row_", rows_shape, "k")
            for st in stmts:
                self.add(st)
            for i, e in enumerate(reduces):
                acc, ct, _ = self.reduce_init(e)
                functor = _COMBINE[e.op][0]
                if stage == "part":
                    with self.scope(
                        "for (long long t_ = lo_ + threadIdx.x; t_ < hi_; t_ += blockDim.x)"
                    ):
                        st, tidx = self.delinearize("t_", red_shape, "j")
                        for line in st:
                            self.add(line)
                        value = self.at(e.inputs[0], self.full_index(ridx, tidx, reduced))
                        self.add(f"{acc} = {self.combine(e, acc, value, ct)};")
                    self.add(
                        f"{acc} = ppto_block_reduce<{ct}>({acc}, {functor}(), ({ct}*)scratch_);"
                    )
                    with self.scope("if (threadIdx.x == 0)"):
                        self.add(f"q{i}[b_] = {acc};")
                    continue
                with self.scope("for (long long p_ = threadIdx.x; p_ < parts_; p_ += blockDim.x)"):
                    part = f"q{i}[row_ * parts_ + p_]"
                    self.add(f"{acc} = {_COMBINE[e.op][1].format(a=acc, b=part)};")
                self.add(f"{acc} = ppto_block_reduce<{ct}>({acc}, {functor}(), ({ct}*)scratch_);")
                ci = self.canonical(e, ridx, kept, reduced, len(domain))
                code = self.reduce_result(e, acc, reduced, e.inputs[0])
                self.memo[(id(e.out), ci)] = self.local(compute_type(e.out.type.dtype), code)
            if stage == "final":
                for v in self.outputs:
                    if v.type.rank == len(domain):
                        vidx = tuple(
                            "0" if a in reduced else ridx[kept.index(a)] for a in range(len(domain))
                        )
                    else:
                        vidx = ridx
                    value = self.at(v, vidx)
                    with self.scope("if (threadIdx.x == 0)"):
                        self.store(v, vidx, value)
            self.add("__syncthreads();")
        params = ",\n    ".join(decl for decl, _ in self.params)
        body = "\n".join(self.lines) + "\n"
        return f'extern "C" __global__ void {self.name}(\n    {params}) {{\n' + body + "}\n"

    def full_index(self, ridx, tidx, reduced) -> tuple:
        it_k, it_t = iter(ridx), iter(tidx)
        rank = len(ridx) + len(tidx)
        return tuple(next(it_t) if a in reduced else next(it_k) for a in range(rank))

    def canonical(self, e, ridx, kept, reduced, rank) -> tuple:
        """The index of a reduction's result at the current row."""
        if e.params["keepdims"]:
            return tuple("0" if a in reduced else ridx[kept.index(a)] for a in range(rank))
        return ridx

    def acc_type(self, e) -> str:
        if e.op in ("any", "all"):
            return "int"
        if e.op in ("max", "min"):
            return compute_type(e.inputs[0].type.dtype)
        return compute_type(e.out.type.dtype)

    def scan_kernel(self) -> str:
        k = self.k
        domain, ax = k.domain, k.scan_axis
        scan = next(e for e in k.body.eqns if family(e) == "scan")
        lines_shape = tuple(d for a, d in enumerate(domain) if a != ax)
        total = " * ".join(f"(long long){self.dim(d)}" for d in lines_shape) or "1"
        self.add(f"const long long lines_ = {total};")
        self.add("const long long step_ = (long long)blockDim.x * gridDim.x;")
        head = (
            "for (long long line_ = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            "line_ < lines_; line_ += step_)"
        )
        out_ct = compute_type(scan.out.type.dtype)
        step = {"cumsum": "+", "cumprod": "*"}[scan.op]
        with self.scope(head):
            stmts, lidx = self.delinearize("line_", lines_shape, "k")
            for s in stmts:
                self.add(s)
            acc = "acc_"
            self.add(f"{out_ct} {acc} = ({out_ct})0;")
            with self.scope(f"for (long long s_ = 0; s_ < {self.dim(domain[ax])}; ++s_)"):
                it = iter(lidx)
                idx = tuple("s_" if a == ax else next(it) for a in range(len(domain)))
                x = self.at(scan.inputs[0], idx)
                if compute_type(scan.inputs[0].type.dtype) != out_ct:
                    x = f"(({out_ct}){x})"
                code = f"(s_ == 0 ? {x} : ({acc} {step} {x}))"
                if scan.out.type.dtype.name == "float16":
                    code = f"ppto_h({code})"
                self.add(f"{acc} = {code};")
                self.scan = (scan, idx, acc)
                for v in self.outputs:
                    if not self.ge.plan.same(v.type.shape, domain):
                        raise _ScanElsewhere(f"kernel {k.name}: a scan output off the domain")
                    self.store(v, idx, self.at(v, idx))
                self.scan = None
        return "\n".join(self.lines) + "\n"

    def block_scan(self, stage: str) -> str:
        """A scan over few, long lines: each line cut into ``parts_`` chunks, one block each,
        each thread a contiguous piece of its block's chunk. "sums": each block's total into
        ``q0``; "scan": each block starts from the totals of the chunks before it and the
        pieces before its thread's (an exclusive scan of the threads' totals), then walks its
        piece, writing the outputs (the prologue recomputed in both stages; additions in
        another order than NumPy's, within the float tolerance)."""
        k = self.k
        domain, ax = k.domain, k.scan_axis
        scan = next(e for e in k.body.eqns if family(e) == "scan")
        lines_shape = tuple(d for a, d in enumerate(domain) if a != ax)
        ct = compute_type(scan.out.type.dtype)
        op = {"cumsum": "+", "cumprod": "*"}[scan.op]
        one = "0" if scan.op == "cumsum" else "1"
        functor = "ppto_sum_op" if scan.op == "cumsum" else "ppto_prod_op"
        half = scan.out.type.dtype.name == "float16"
        self.params.append(("long long parts_", "np.int64(_parts)"))
        self.params.append((f"{ct}* __restrict__ q0", "_q0"))
        total = " * ".join(f"(long long){self.dim(d)}" for d in lines_shape) or "1"
        self.add(f"const long long lines_ = {total};")
        self.add(f"const long long n_ = {self.dim(domain[ax])};")
        self.add("const long long chunk_ = (n_ + parts_ - 1) / parts_;")
        self.add("__shared__ double scratch_[33];")
        self.add(f"__shared__ double tot_[{BLOCK}];")
        step = (lambda a, b: f"ppto_h({a} {op} {b})") if half else (lambda a, b: f"({a} {op} {b})")

        def walk(write: bool):
            with self.scope("for (long long s_ = a_; s_ < z_; ++s_)"):
                it = iter(lidx)
                idx = tuple("s_" if a == ax else next(it) for a in range(len(domain)))
                x = self.at(scan.inputs[0], idx)
                if compute_type(scan.inputs[0].type.dtype) != ct:
                    x = f"(({ct}){x})"
                self.add(f"acc_ = {step('acc_', x)};")
                if write:
                    self.scan = (scan, idx, "acc_")
                    for v in self.outputs:
                        self.store(v, idx, self.at(v, idx))
                    self.scan = None

        with self.scope("for (long long b_ = blockIdx.x; b_ < lines_ * parts_; b_ += gridDim.x)"):
            self.add("const long long line_ = b_ / parts_, part_ = b_ % parts_;")
            self.add("const long long lo_ = part_ * chunk_;")
            self.add("const long long hi_ = lo_ + chunk_ < n_ ? lo_ + chunk_ : n_;")
            self.add("const long long piece_ = (hi_ - lo_ + blockDim.x - 1) / blockDim.x;")
            self.add("const long long a_ = lo_ + threadIdx.x * piece_;")
            self.add("const long long z_ = a_ + piece_ < hi_ ? a_ + piece_ : hi_;")
            stmts, lidx = self.delinearize("line_", lines_shape, "k")
            for st in stmts:
                self.add(st)
            self.add(f"{ct} acc_ = ({ct}){one};")
            walk(write=False)
            if stage == "sums":
                self.add(f"acc_ = ppto_block_reduce<{ct}>(acc_, {functor}(), ({ct}*)scratch_);")
                with self.scope("if (threadIdx.x == 0)"):
                    self.add("q0[b_] = acc_;")
            else:
                self.add(f"{ct}* tot = ({ct}*)tot_;")
                self.add("tot[threadIdx.x] = acc_;")
                self.add("__syncthreads();")
                with self.scope("if (threadIdx.x == 0)"):
                    self.add(f"{ct} run = ({ct}){one};")
                    self.add("for (long long p = 0; p < part_; ++p)")
                    self.add(f"    run = {step('run', 'q0[line_ * parts_ + p]')};")
                    with self.scope("for (unsigned i = 0; i < blockDim.x; ++i)"):
                        self.add(f"const {ct} t = tot[i];")
                        self.add("tot[i] = run;")
                        self.add(f"run = {step('run', 't')};")
                self.add("__syncthreads();")
                self.add("acc_ = tot[threadIdx.x];")
                self.add("__syncthreads();")
                walk(write=True)
        params = ",\n    ".join(decl for decl, _ in self.params)
        body = "\n".join(self.lines) + "\n"
        return f'extern "C" __global__ void {self.name}(\n    {params}) {{\n' + body + "}\n"

    def launch(self) -> tuple[str, str, str]:
        """(grid, block, shared memory) as host expressions."""
        k = self.k
        ge = self.ge
        if self.kind in ("reduction", "rowwise"):
            rows = ge.count([k.domain[a] for a in range(len(k.domain)) if a not in k.reduced])
            if getattr(self, "block_mode", False):
                return f"max(1, min({rows}, 65535))", str(BLOCK), "0"
            return f"_grid({rows})", str(BLOCK), "0"
        if self.kind == "scan":
            lines = ge.count([d for a, d in enumerate(k.domain) if a != k.scan_axis])
            return f"_grid({lines})", str(BLOCK), "0"
        stores = {id(s.out): s for s in k.stores}
        sizes = [ge.count(ge.plan_domain_of(k, v, stores)) for v in self.outputs]
        return f"_grid(max({', '.join(sizes)}, 0))", str(BLOCK), "0"


class CudaGraphEmitter:
    """Renders one GraphPlan as (CUDA source, Python host function ``name``)."""

    def __init__(self, plan: GraphPlan, name: str):
        self.plan = plan
        self.name = name
        self.graph = plan.graph
        self.names = {k: "v_" + _ident(v) for k, v in plan.names.items()}
        for v in self.graph.inputs:
            self.names[id(v)] = _ident(v.name)
        self.buffers = {id(b.value): b for b in plan.buffers}
        self.host_values: dict[int, str] = {}  # values the host computed whole this kernel
        self.consts: dict[str, np.ndarray] = {}
        self.user_ops: dict[str, object] = {}
        self.kernels: list[str] = []
        self.launches = 0

    def sym(self, name: str) -> str:
        return _ident(name)

    def dim(self, d) -> str:
        return format_code(d, self.sym)

    @property
    def impl_name(self) -> str:
        return f"{self.name}_impl"

    def module_source(self, cuda_source: str) -> str:
        """Source defining what the host function reads from its module: the RawModule's
        source (compiled at first use), the constants, the user operators' table."""
        consts = ", ".join(f"{k!r}: {const_code(v)}" for k, v in self.consts.items())
        quoted = f"r'''{cuda_source}'''" if "'''" not in cuda_source else repr(cuda_source)
        return (
            f"{self.name}_module = {{'source': {quoted}, 'fns': {{}}}}\n"
            f"{self.name}_consts = {{{consts}}}\n{self.impl_name} = {{}}\n"
        )

    def count(self, shape) -> str:
        return " * ".join(f"({self.dim(d)})" for d in shape) or "1"

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
        return family(e) in ("map", "scalar") and not (op.extra.get("cuda_code") or op.cuda)

    def host_name(self, v, whole) -> str:
        if id(v) in self.host_values:
            return self.host_values[id(v)]
        return self.names[id(v)]

    def written(self, k: Kernel) -> set:
        return {id(v) for v in k.outputs}

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
        bound = set()
        for v in g.inputs:
            for axis, d in enumerate(v.type.shape):
                s = as_symbol(d) if isinstance(d, Expr) else None
                if s is not None and s not in bound:
                    bound.add(s)
                    body.append(f"{_ident(s)} = {self.names[id(v)]}.shape[{axis}]")
        for i, (v, array) in enumerate(g.consts):
            self.consts[f"_c{i}"] = array
            body.append(f"{self.names[id(v)]} = _const(cp, {self.name}_consts, '_c{i}')")
        by_name = {b.name: b for b in self.plan.buffers}
        level_of = {i: n for n, level in enumerate(self.plan.levels) for i in level}
        for n, level in enumerate(self.plan.levels):
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
        results = []
        for a in g.outputs:
            if isinstance(a, Literal):
                results.append(self._literal(a))
            elif a.type.weak:
                results.append(f"_py({self.names[id(a)]})")
            else:
                results.append(self.names[id(a)])
        body.append(f"return ({', '.join(results)}{',' if len(results) == 1 else ''})")
        host += ["    " + line for line in body]
        source = PRELUDE + "\n" + "\n".join(self.kernels)
        return source, "\n".join(host) + "\n"

    def _signature(self) -> str:
        from ..printer import _symbols

        found: set[str] = set()
        for v in self.graph.inputs:
            _symbols(v.type.shape, found)
        bound = set()
        for v in self.graph.inputs:
            for d in v.type.shape:
                s = as_symbol(d) if isinstance(d, Expr) else None
                if s is not None:
                    bound.add(s)
        every: set[str] = set()
        for e in self.graph.eqns:
            _symbols(e.out.type.shape, every)
            _symbols(e.attrs, every)
            for a in e.inputs:
                if isinstance(a, Literal):
                    _symbols(a.value, every)
                    if isinstance(a.value, SymFloat):
                        for term, _ in a.value.terms:
                            from ..symbolic import free_symbols

                            every.update(free_symbols(term))
        self.free = sorted((every | found) - bound)
        params = ", ".join(self.names[id(v)] for v in self.graph.inputs)
        extra = ", ".join(_ident(s) for s in self.free)
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
            code = self._host_eqn(e, prod)
            if id(e.out) in outputs:
                lines.append(f"{self.names[id(e.out)]} = {code}")
                direct.add(id(e.out))
                self.host_values[id(e.out)] = self.names[id(e.out)]
            else:
                local = f"{self.names[id(e.out)]}_whole"
                lines.append(f"{local} = {code}")
                self.host_values[id(e.out)] = local
        stores = {id(s.out): s for s in k.stores}
        for v in k.outputs:
            if id(v) in direct:
                continue
            b = self.buffers.get(id(v))
            dt = f"np.{v.type.dtype.name}" if v.type.dtype.name != "bool" else "np.bool_"
            s = stores.get(id(v))
            name = self.names[id(v)]
            if (
                s is not None
                and s.inplace
                and not k.hazards.get(id(v))
                and b is not None
                and b.donor is not None
            ):
                lines.append(f"{name} = {self.names[id(b.donor)]}")
            elif (
                s is not None and s.inplace and not k.hazards.get(id(v)) and id(s.base) not in prod
            ):
                lines.append(f"{name} = {self._value_name(s.base)}")
            else:  # new memory (a store not in place never takes over its base's memory)
                if s is None and b is not None and b.reuses and b.reuses in by_name:
                    prior = self.names[id(by_name[b.reuses].value)]
                    lines.append(f"{name} = _reuse({prior}, {dt}, {self.shape(v.type.shape)})")
                else:
                    lines.append(f"{name} = cp.empty({self.shape(v.type.shape)}, {dt})")
                if s is not None:  # the base first (a view of an input: through index maps)
                    base = self._value_name(s.base)
                    if isinstance(s.base, Var) and id(s.base) in prod:
                        base = self._host_view(s.base, prod)
                    lines.append(f"cp.copyto({name}, {base})")
        if all(id(v) in direct for v in k.outputs):
            return lines  # the host made every output (a product, a user operator)
        lines += before_launch
        writers = [KernelWriter(self, k, cname)]
        try:
            sources = [writers[0].render()]
        except _ScanElsewhere:
            # the scan's values are read away from their position: the scan (and its prologue)
            # into a scratch array first, then the rest as an elementwise kernel reading it
            scan = next(e for e in k.body.eqns if family(e) == "scan")
            scratch = f"{self.names[id(scan.out)]}_scan"
            dt = scan.out.type.dtype.name
            lines.append(f"{scratch} = cp.empty({self.shape(scan.out.type.shape)}, np.{dt})")
            self.host_values[id(scan.out)] = scratch
            first = KernelWriter(self, k, cname, outputs=(scan.out,))
            sources = [first.render()]
            second = KernelWriter(self, k, cname + "_epilogue", kind="elementwise")
            sources.append(second.render())
            writers = [first, second]
        self.kernels += sources
        if len(writers) == 1 and k.kind == "scan":  # few long lines: a block scan as well
            sums = KernelWriter(self, k, cname + "_sums")
            scan = next(e for e in k.body.eqns if family(e) == "scan")
            final = KernelWriter(self, k, cname + "_scan")
            self.kernels += [sums.block_scan("sums"), final.block_scan("scan")]
            lines_, n = (
                self.count([d for a, d in enumerate(k.domain) if a != k.scan_axis]),
                self.count([k.domain[k.scan_axis]]),
            )
            lines.append(f"if ({lines_}) < 64 and ({n}) >= 65536:")
            lines.append(f"    _parts = max(1, min(1024, ({n}) // 8192))")
            dt = _ACC_DTYPE.get(compute_type(scan.out.type.dtype), scan.out.type.dtype.name)
            lines.append(f"    _q0 = cp.empty((({lines_}) * _parts,), np.{dt})")
            blocks = f"({lines_}) * _parts"
            lines += ["    " + x for x in self._launch(k, sums, sums.name, blocks)]
            lines += ["    " + x for x in self._launch(k, final, final.name, blocks)]
            lines.append("else:")
            lines += ["    " + x for x in self._launch(k, writers[0], writers[0].name)]
            return lines
        vec = KernelWriter(self, k, cname + "_vec")
        width = vec.vector_width() if len(writers) == 1 else 0
        if width:
            self.kernels.append(vec.vector_kernel(width))
            arrays = [p[1] for p in vec.params if "*" in p[0]]
            total = self.count(k.outputs[0].type.shape)
            lines.append(f"if _vectors({total}, {width}, {', '.join(arrays)}):")
            lines += [
                "    " + x
                for x in self._launch(k, vec, vec.name, f"-(-({total}) // {width} // 256)")
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
            rows, reds = self.count(kept), self.count(red)
            # few long rows: each row split over many blocks, partial results combined after
            lines.append(f"if ({rows}) < 64 and ({reds}) >= 65536:")
            lines.append(f"    _parts = max(1, min(1024, ({reds}) // 8192))")
            for i, e in enumerate(x for x in k.body.eqns if family(x) == "reduce"):
                dt = _ACC_DTYPE.get(split.acc_type(e), e.out.type.dtype.name)
                lines.append(f"    _q{i} = cp.empty((({rows}) * _parts,), np.{dt})")
            lines += [
                "    " + x for x in self._launch(k, split, split.name, "(" + rows + ") * _parts")
            ]
            lines += ["    " + x for x in self._launch(k, final, final.name)]
            lines.append("else:")
            lines += ["    " + x for x in self._launch(k, writers[0], writers[0].name)]
            return lines
        for writer in writers:
            lines += self._launch(k, writer, writer.name)
        return lines

    def _launch(self, k, writer, cname, blocks=None) -> list[str]:
        lines = []
        grid, block, smem = writer.launch()
        if blocks is not None:  # one block per (row, part)
            grid = f"max(1, min({blocks}, 65535))"
        for e in k.body.eqns:
            if e.op in _EMPTY and not isinstance(e.inputs[0], Literal):
                axes = e.params["axis"]
                red = self.count([e.inputs[0].type.shape[i] for i in axes])
                lines.append(f"if {red} == 0 and {self.count(e.out.type.shape)} > 0:")
                lines.append(
                    "    raise ValueError('zero-size array to reduction operation "
                    f"{_EMPTY[e.op]} which has no identity')"
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
        return literal_code(lit, self.sym)

    def _value_name(self, v) -> str:
        if isinstance(v, Literal):
            return self._literal(v)
        return self.host_values.get(id(v), self.names[id(v)])

    def _host_eqn(self, e, prod) -> str:
        """Host code computing ``e`` whole: products through cp.matmul, attention through its
        kernel, anything else through NumPy (copied to the device)."""
        args = [self._host_view(a, prod) for a in e.inputs]
        attrs = {k: v for k, v in e.attrs if k != "weak"}
        if e.op in ("matmul", "dot"):
            return f"cp.{e.op}({', '.join(args)})"
        if e.op == "attention":
            q, k_, v, *rest = args
            scale = rest.pop(0) if attrs["scale_op"] else "None"
            mask = rest.pop(0) if attrs["masked"] else "None"
            dt = f"np.{e.out.type.dtype.name}"
            return (
                f"_cuda_attention(cp, {q}, {k_}, {v}, {scale}, {mask}, {attrs['scale_op']!r}, {dt})"
            )
        return f"_device(cp, {self._impl_call(e, args, attrs)})"

    def _impl_call(self, e, args, attrs) -> str:
        """The op's NumPy implementation called on the host (device arrays copied over)."""
        items = [f"_host(cp, {a})" for a in args]
        items += [f"{k}={_attr(v, self.dim)}" for k, v in attrs.items()]
        op = REGISTRY[e.op]
        fn = op.extra.get("numpy_function", op.impl)
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
            attrs = {k: v for k, v in e.attrs if k != "weak"}
            return self._impl_call(e, args, attrs)
        if family(e) != "index":
            raise UnsupportedError(
                f"the CUDA target computes `{e.op}` feeding a host computation only as a view"
            )
        a = self._host_view(e.inputs[0], prod)
        p = e.params
        if e.op == "transpose":
            return f"cp.transpose({a}, {p['perm']!r})"
        if e.op == "expand_dims":
            return f"cp.expand_dims({a}, {p['axis']!r})"
        if e.op == "squeeze":
            return f"cp.squeeze({a}, {p['axis']!r})"
        if e.op == "broadcast_to":
            return f"cp.broadcast_to({a}, {self.shape(e.out.type.shape)})"
        if e.op == "flip":
            return f"cp.flip({a}, {p['axis']!r})"
        if e.op == "reshape":
            return f"cp.reshape({a}, {self.shape(e.out.type.shape)})"
        if e.op == "getitem":
            items = []
            for item in p["index"]:
                if item is Ellipsis:
                    items.append("...")
                elif item is None:
                    items.append("None")
                elif isinstance(item, SliceSpec):
                    start, n = self.dim(item.start), self.dim(item.length)
                    items.append(f"_slice({start}, {n}, {item.step})")
                else:
                    items.append(self.dim(item))
            return f"{a}[{', '.join(items) or '()'}]"
        raise UnsupportedError(f"the CUDA target cannot view `{e.op}` on the host")


def _attr(v, dim, sym=_ident) -> str:
    if isinstance(v, SymFloat):
        return symfloat_code(v, sym)
    if isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if isinstance(v, Expr):
        return dim(v)
    if isinstance(v, tuple):
        inner = ", ".join(_attr(x, dim) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})"
    return _pyrepr(v)


HOST_PRELUDE = '''\
import numpy as np


def _grid(n):
    """Blocks of a grid-stride launch over n items (0: nothing to launch)."""
    return 0 if n <= 0 else max(1, min(-(-n // 256), 4096))


def _stride(a, axis):
    return np.int64(a.strides[axis] // a.itemsize)


def _py(x):
    return x.item() if hasattr(x, "item") else x


def _slice(start, n, step):
    stop = start + step * n
    return slice(start, stop if stop >= 0 else None, step)


def _fn(cp, module, name):
    """The kernel ``name`` of the graph's RawModule (compiled at first use, then cached)."""
    if "mod" not in module:
        module["mod"] = cp.RawModule(code=module["source"], options=("--std=c++17",))
    fn = module["fns"].get(name)
    if fn is None:
        fn = module["fns"][name] = module["mod"].get_function(name)
    return fn


def _vectors(n, width, *arrays):
    """Whether a vectorized kernel may run: whole vectors, C-contiguous 16-byte aligned arrays."""
    if n % width:
        return False
    for a in arrays:
        ptr = a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data
        if ptr % 16 or not a.flags.c_contiguous:
            return False
    return True


def _reuse(array, dtype, shape):
    """A buffer of ``shape`` in the memory of a dead one (the memory plan's reuse)."""
    raw = array.reshape(-1).view(np.uint8)
    count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    return raw[:count].view(dtype).reshape(shape)


def _stream(cp, module, i):
    """The graph's i-th stream for kernels of one level (made once, non-blocking)."""
    streams = module.setdefault("streams", [])
    while len(streams) <= i:
        streams.append(cp.cuda.Stream(non_blocking=True))
    return streams[i]


def _const(cp, consts, key):
    value = consts[key]
    if not isinstance(value, np.ndarray):
        return value
    device = consts.get(("device", id(cp), key))  # uploaded once per CuPy module
    if device is None:
        device = consts[("device", id(cp), key)] = cp.asarray(value)
    return device


def _host(cp, x):
    """A device array as NumPy (for user operators and creation ops run on the host)."""
    on_device = hasattr(x, "__cuda_array_interface__") or type(x).__module__.startswith("cupy")
    return cp.asnumpy(x) if on_device else x


def _device(cp, x):
    return cp.asarray(x) if isinstance(x, np.ndarray) else x


def _cuda_attention(cp, q, k, v, scale, mask, scale_op, dtype):
    """softmax(scale(q @ k^T) + mask) @ v by the tiled online-softmax kernel (cuda_attention.py):
    batch axes broadcast and flattened, the score matrix never stored."""
    fa = _FA  # cuda_attention.py: the kernel source, its name expressions and launch
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    lq, d, lk, dv = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    out_dt = np.dtype(dtype)
    if lk == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    t = np.result_type(q.dtype, k.dtype, v.dtype)
    t = t if t.kind == "f" else np.dtype(np.float64)
    wide = "double" in (_CT[t.name], _CT[out_dt.name]) or (
        mask is not None and np.dtype(mask.dtype).name == "float64"
    )
    acc = np.float64 if wide else np.float32
    b = int(np.prod(batch, dtype=np.int64))

    def flat(x, rows, cols):
        x = cp.broadcast_to(x.astype(t, copy=False), (*batch, rows, cols))
        return cp.ascontiguousarray(x).reshape(b, rows, cols)

    qf, kf, vf = flat(q, lq, d), flat(k, lk, d), flat(v, lk, dv)
    out = cp.empty((*batch, lq, dv), out_dt)
    if mask is not None:
        mask = cp.asarray(mask)
        if mask.dtype.kind not in "f":
            mask = mask.astype(acc)
        if mask.ndim > 2 and any(n != 1 for n in mask.shape[:-2]):
            m = cp.ascontiguousarray(cp.broadcast_to(mask, (*batch, lq, lk))).reshape(b, lq, lk)
            strides = [s // m.itemsize for s in m.strides]
        else:
            m = cp.broadcast_to(mask.reshape(mask.shape[-2:]) if mask.ndim >= 2 else mask, (lq, lk))
            strides = [0] + [s // m.itemsize for s in m.strides]
        mt = _CT[m.dtype.name]
    else:
        m, strides, mt = None, [0, 0, 0], _CT[t.name]
    name = fa["name_expression"](_CT[t.name], mt, _CT[np.dtype(acc).name], _CT[out_dt.name])
    grid, block, smem = fa["launch"](b, lq, lk, d, dv, np.dtype(acc).itemsize)
    if b == 0 or lq == 0 or grid[0] == 0:
        return out
    modules = _ATTENTION.setdefault(id(cp), {})
    fn = modules.get(name)
    if fn is None:
        mod = cp.RawModule(code=fa["SOURCE"], options=("--std=c++17",), name_expressions=(name,))
        fn = modules[name] = mod.get_function(name)
    op = {None: 0, "multiply": 1, "divide": 2}[scale_op]
    i64 = np.int64
    fn(
        grid,
        block,
        (
            qf,
            kf,
            vf,
            m,
            out,
            i64(b),
            i64(lq),
            i64(lk),
            i64(d),
            i64(dv),
            *(i64(s) for s in strides),
            acc(1 if scale is None else scale),
            np.int32(op),
        ),
        shared_mem=smem,
    )
    return out


_ATTENTION: dict = {}
_CT = {"float16": "__half", "float32": "float", "float64": "double"}
'''


_COMPILED = [0]


def compile_graph_cuda(plan: GraphPlan, cp):
    """The plan as ``run(values, env) -> outputs`` on the CUDA target, with ``cp`` the CuPy
    module (or the emulator's stand-in, pypto/emit/cuda_emu/fakecupy.py)."""
    cache = plan.__dict__.setdefault("_cuda_fns", {})
    found = cache.get(id(cp))
    if found is not None:
        return found
    emitter = CudaGraphEmitter(plan, "graph")
    cuda_source, host_source = emitter.render()
    from . import cuda_attention

    namespace: dict = {"cp": cp, "_FA": vars(cuda_attention)}
    exec(compile(HOST_PRELUDE, "<pypto-cuda-prelude>", "exec"), namespace)
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
        return list(fn(cp, *values, **{_ident(s): env[s] for s in free}))

    run.cuda_source = cuda_source
    run.host_source = host_source
    run.launches = emitter.launches
    cache[id(cp)] = run
    return run
