"""CUDA C of one Plan kernel: ``KernelWriter`` evaluates the kernel's body at an index.

A value at an index is a C local; index maps (transpose, slices, broadcast, flip, reshape,
concatenation) transform the index and never copy. Families: grid-stride elementwise loops (and
a 16-byte vector-load variant for plain maps), row-wise kernels (one block per row, block
reductions), per-thread reductions, two-stage reductions for few long rows, per-line scans and
block scans with carries. Sizes, slice starts and strides are ``long long`` parameters the host
computes (``params``: C declaration and host expression). See cuda_target.py for the module.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ..dtypes import ufunc_loop
from ..errors import InternalError
from ..ir import Literal, Var
from ..lower.families import family
from ..lower.index_map import Linear, Pieces, broadcast_map, point, view_map
from ..lower.kernel import lower_kernel
from ..passes.plan import Kernel
from ..registry import REGISTRY
from ..symbolic import Expr, SymFloat, affine, bare, free_symbols
from .common import dtype_code, ident, symfloat_code
from .cuda_prelude import compute_type, ctype
from .cuda_rules import CUDA_CODE, FUNCTORS, cuda_code

BLOCK = 256  # threads per block
MAX_GRID = 4096  # blocks of a grid-stride launch

_LOGICAL = (np.logical_or, np.logical_and)  # reductions whose accumulator is an int truth
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


class ScanElsewhere(InternalError):
    """A scan kernel whose scan values are read away from their own position."""


class NotInKernel(InternalError):
    """A loop's iterations cannot run inside this kernel (the host loop stays)."""


def loop_kernel(name: str, writers, var: str, step: int) -> str:
    """The kernels of a loop's body as one kernel that runs the loop: each thread runs every
    iteration over its elements (the kernels have one domain: a thread's elements are the same
    in each), the range from the host (``_lo``, ``_hi``)."""
    body = "".join(w.loop_body() for w in writers)  # (first: it adds the parameters)
    params = [decl for w in writers for decl, _ in w.params]
    params += ["long long jlo_", "long long jhi_"]
    test = "lv_ < jhi_" if step > 0 else "lv_ > jhi_"
    head = f"    for (long long lv_ = jlo_; {test}; lv_ += {step}) {{  // the loop over {var}\n"
    decls = ",\n    ".join(params)
    return f'extern "C" __global__ void {name}(\n    {decls}) {{\n{head}{body}    }}\n}}\n'


class KernelWriter:
    """The CUDA C of one Plan kernel, and the host arguments of its launch. ``loop``: the
    loop variable and step of a recurrence run inside the kernel (every thread runs all the
    iterations over its elements; the host passes the range as ``_lo``, ``_hi``)."""

    def __init__(self, ge, k: Kernel, name: str, outputs=None, kind=None, loop=None, prefix=""):
        self.ge, self.k, self.name = ge, k, name
        self.loop = loop
        self.prefix = prefix  # before each parameter's name (kernels rendered into one)
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
        self.low = lower_kernel(k, ge.plan.same, self.whole)  # reads, stores, combines
        self.positions = {id(s.out): m for s, m in self.low.stores}

    # -- parameters -------------------------------------------------------------------------
    def dim(self, d) -> str:
        """A size in C: a literal, or a parameter the host computes."""
        if isinstance(d, int):
            return str(d)
        if self.loop is not None and self.loop[0] in free_symbols(d):
            found = affine(d, self.loop[0])
            if found is None:
                raise NotInKernel(f"{d} is not linear in {self.loop[0]}")
            a, b = found
            return f"({self.dim(b)} + {a}LL * lv_)"
        name = self.dims.get(d)
        if name is None:
            name = self.dims[d] = f"{self.prefix}n{len(self.dims)}"
            self.params.append((f"long long {name}", f"np.int64({bare(self.ge.dim(d))})"))
        return name

    def array(self, v) -> tuple:
        """(pointer, strides) of an input or output array, or (scalar parameter, None)."""
        found = self.ptrs.get(id(v))
        if found is not None:
            return found
        host = self.ge.host_name(v, self.whole)
        p = f"{self.prefix}p{len(self.ptrs)}"
        written = any(v is o for o in self.outputs)
        if v.type.rank == 0 and not written and (v.type.weak or id(v) not in self.ge.buffers):
            ct = compute_type(v.type.dtype)
            conv = "np.float32" if v.type.dtype.name == "float16" else dtype_code(v.type.dtype)
            self.params.append((f"{ct} {p}", f"{conv}(_py({host}))"))
            found = (p, None)
        else:
            const = "" if written else "const "
            # (inside a loop the same memory is read after it is written: no __restrict__)
            restrict = "" if self.loop is not None else " __restrict__"
            self.params.append((f"{const}{ctype(v.type.dtype)}*{restrict} {p}", host))
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
        read = self.low.loads.get(id(v))
        if read is not None and id(v) not in self.whole:  # a view of memory: one read
            code = self.at(read.source, point(read.map, idx, self.dim))
        elif e is None or id(v) in self.whole:
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
        if self.loop is not None and any(self.loop[0] in free_symbols(e) for e, _ in v.terms):
            # (the host's Python float arithmetic, in the same order, in doubles)
            if not all(math.isfinite(c) for c in (v.const, *(c for _, c in v.terms))):
                raise NotInKernel("a number that is not finite")
            terms = [repr(float(v.const))]
            terms += [f"{c!r} * (double)({self.dim(e)})" for e, c in v.terms]
            return "(" + " + ".join(terms) + ")"
        name = self.dims.get(v)
        if name is None:
            name = self.dims[v] = f"{self.prefix}f{len(self.dims)}"
            self.params.append((f"double {name}", f"np.float64({symfloat_code(v, ident)})"))
        return name

    def offset(self, strides, idx) -> str:
        terms = [f"({i}) * {s}" for i, s in zip(idx, strides) if i != "0"]
        return " + ".join(terms) if terms else "0"

    def placed(self, v, idx) -> tuple:
        """``idx`` (an index of ``v``'s whole value) in the memory that holds ``v``: the Dask
        target's block programs hold part of an array, from its origin along one axis
        (``ge.origins``: id(value) -> (axis, origin))."""
        found = self.ge.origins.get(id(v))
        if found is None:
            return idx
        axis, origin = found
        return tuple(f"({i}) - {self.dim(origin)}" if a == axis else i for a, i in enumerate(idx))

    def blocked(self, shape, axis) -> tuple:
        """``shape`` with its axis ``axis`` (the kernel's chunk axis in it, or None) cut to the
        block ``_s:_e`` a Dask block program runs (``ge.span``); else as it is."""
        span = self.ge.span
        if span is None or axis is None:
            return tuple(shape)
        return tuple(span[2] - span[1] if a == axis else d for a, d in enumerate(shape))

    def position(self, axes) -> int | None:
        """Where the chunk axis of a block program (``ge.span``) is among the domain's
        ``axes`` an index runs over (None: not among them, or not a block program)."""
        span = self.ge.span
        return list(axes).index(span[0]) if span is not None and span[0] in axes else None

    def load(self, v, idx) -> str:
        p, strides = self.array(v)
        if strides is None:
            return p
        if getattr(self, "lane", None) is not None and id(v) in self.vectors:  # a vector's lane
            return f"{self.vectors[id(v)]}.{self.lane}"
        ref = f"{p}[{self.offset(strides, self.placed(v, idx))}]"
        return f"__half2float({ref})" if v.type.dtype.name == "float16" else ref

    def store(self, v, idx, value: str):
        p, strides = self.array(v)
        target = f"{p}[{self.offset(strides, self.placed(v, idx))}]"
        if v.type.dtype.name == "float16":
            value = f"__float2half({value})"
        self.add(f"{target} = {value};")

    def broadcast(self, a, idx, shape) -> tuple:
        """The index of operand ``a`` read by an op of result ``shape`` at ``idx``."""
        return point(broadcast_map(a.type.shape, shape, self.ge.plan.same), idx, self.dim)

    def eqn(self, e, idx) -> str:
        fam = family(e)
        if fam in ("map", "scalar"):
            return self.map(e, idx)
        if fam == "index":
            return self.reorder(e, idx)
        if fam == "gather":
            return self.gather(e, idx)
        if fam == "reduce":
            return self.reduce_inline(e, idx)
        if fam == "scan":
            if self.scan is not None and self.scan[0] is e and self.scan[1] == idx:
                return self.scan[2]
            raise ScanElsewhere(f"kernel {self.k.name}: a scan read away from its position")
        raise InternalError(f"kernel {self.k.name}: `{e.op}` is computed by the host")

    def map(self, e, idx) -> str:
        op = REGISTRY[e.op]
        template = cuda_code(op)
        if template is None:
            raise InternalError(f"`{e.op}` has no CUDA code")
        out_dt = e.out.type.dtype
        if op.ufunc is not None:
            loop = ufunc_loop(op.ufunc, [a.type.key for a in e.inputs])
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

    def gather(self, e, idx) -> str:
        """A gather at ``idx`` (its rule: ``Gather``, ops/gathers.py): the data operand at the
        index the index operand holds there (its bounds checked by the host before the
        launch; a negative one counts from the end)."""
        m = view_map(e, self.ge.plan.same)
        x, index = e.inputs
        v = self.at(index, point(m.index, idx, self.dim))
        j = self.local("long long", f"(long long){v}")
        n = self.dim(x.type.shape[m.axis])
        at = list(point(m.data, idx, self.dim))
        at[m.axis] = self.local("long long", f"{j} < 0 ? {j} + {n} : {j}")
        return self.at(x, tuple(at))

    def reorder(self, e, idx) -> str:
        """A view at ``idx``: its operand at the index its map gives (one rule per op, in the
        registry: pypto/lower/index_map.py)."""
        if e.op == "store":
            return self.store_value(e, idx)
        m = view_map(e, self.ge.plan.same)
        if isinstance(m, Linear):
            return self.at(e.inputs[0], self.reshape_index(idx, m.dst, m.src))
        if isinstance(m, Pieces):
            return self.concatenate(e, m, idx)
        return self.at(e.inputs[0], point(m, idx, self.dim))

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

    def concatenate(self, e, m: Pieces, idx) -> str:
        ct = compute_type(e.out.type.dtype)
        self.count += 1
        name = f"v{self.count}"
        self.add(f"{ct} {name};")
        for n, (piece, start, size) in enumerate(zip(e.inputs, m.starts(), m.sizes)):
            end = f"({self.dim(start)} + {self.dim(size)})" if start != 0 else self.dim(size)
            last = n == len(e.inputs) - 1
            head = "else" if last else f"{'if' if n == 0 else 'else if'} (({idx[m.axis]}) < {end})"
            with self.scope(head):
                self.add(f"{name} = {self.at(piece, point(m.piece(n), idx, self.dim))};")
        return name

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
        c = self.low.combines[id(e.out)]
        ct = self.acc_type(e)
        if c.identity is None:  # max, min: the accumulator starts at the dtype's extreme
            init = _limits(a.type.dtype, low=c.ufunc is np.maximum)
        else:
            init = str(int(c.identity))
        self.add(f"{ct} {acc} = ({ct}){init};")
        return acc, ct, kind

    def combine(self, e, acc, value, ct) -> str:
        a = e.inputs[0]
        if self.low.combines[id(e.out)].ufunc in _LOGICAL:
            value = f"(({value}) != 0)"
        elif compute_type(a.type.dtype) != ct:
            value = f"(({ct}){value})"
        code = self.combine_code(e, acc, value)
        if e.out.type.dtype.name == "float16" and e.op in ("sum", "prod"):
            code = f"ppto_h({code})"
        return code

    def combine_code(self, e, a: str, b: str) -> str:
        """Two partial results of reduction or scan ``e`` combined (its ufunc's C code)."""
        return CUDA_CODE[self.low.combines[id(e.out)].ufunc.__name__].format(a, b)

    def functor(self, e) -> str:
        """The block-reduction functor of reduction or scan ``e`` (cuda_prelude.py)."""
        return FUNCTORS[self.low.combines[id(e.out)].ufunc.__name__]

    def reduce_result(self, e, acc, axes, a) -> str:
        out = e.out.type.dtype
        if e.op == "mean":
            count = " * ".join(self.dim(a.type.shape[i]) for i in axes) or "1"
            code = f"({acc} / ({compute_type(out)})({count}))"
        elif self.low.combines[id(e.out)].ufunc in _LOGICAL:
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

    def loop_body(self) -> str:
        """The kernel's statements for one iteration of its loop (a C block; the loop around
        it is the caller's: ``loop_kernel``)."""
        if self.kind != "elementwise":
            raise NotInKernel(f"a {self.kind} kernel")
        self.depth = 3
        return "        {\n" + self.elementwise_kernel() + "        }\n"

    def grid_loop(self, shape, total_name="total", axis=None):
        """``for`` each element of ``shape`` (grid-stride): yields the index (``axis``: the
        chunk axis in ``shape``, see ``blocked``)."""
        total = self.elements(self.blocked(shape, axis))
        self.add(f"const long long {total_name} = {total};")
        return self.grid_stride("lin_", total_name), self.delinearize("lin_", shape, "i", axis)

    def elements(self, shape) -> str:
        """The number of elements of ``shape``, as a C expression (``long long``)."""
        return " * ".join(f"(long long){self.dim(d)}" for d in shape) or "1"

    def grid_stride(self, var: str, limit: str) -> str:
        """The head of a grid-stride loop of ``var`` over ``0 .. limit`` (every thread of the
        grid, one element at a time); its step is declared in the loop, so a kernel may have
        several such loops."""
        return (
            f"for (long long {var} = (long long)blockIdx.x * blockDim.x + threadIdx.x, "
            f"step_ = (long long)blockDim.x * gridDim.x; {var} < {limit}; {var} += step_)"
        )

    def delinearize(self, lin, shape, prefix, axis=None) -> list[str]:
        """Statements that split ``lin`` over ``shape`` (last axis fastest), and the index
        (along ``axis``, cut to a block (``blocked``), the block's start added)."""
        shape = self.blocked(shape, axis)
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
        if self.ge.span is not None and axis is not None:
            start = self.dim(self.ge.span[1])
            stmts.append(f"const long long {names[axis]}g = {names[axis]} + {start};")
            names[axis] += "g"
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
            axis = self.ge.chunk_axis(k, outs[0], stores)
            head, (stmts, idx) = self.grid_loop(shape, f"total{n}", axis)
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
        if self.kind != "elementwise" or k.stores or not self.outputs or self.ge.span:
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
        total = self.elements(shape)
        self.add(f"const long long vectors_ = ({total}) / {width};")
        head = self.grid_stride("w_", "vectors_")
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
        self.store(s.out, point(self.positions[id(s.out)], idx, self.dim), code)

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
        pos = self.position(kept)
        rows = self.elements(self.blocked(rows_shape, pos))
        reds = self.elements(red_shape)
        self.add(f"const long long rows_ = {rows};")
        self.add(f"const long long red_ = {reds};")
        if block_mode:
            self.add("__shared__ double scratch_[33];")
            head = "for (long long row_ = blockIdx.x; row_ < rows_; row_ += gridDim.x)"
        else:
            head = self.grid_stride("row_", "rows_")
        with self.scope(head):
            stmts, ridx = self.delinearize("row_", rows_shape, "k", pos)
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
                    functor = self.functor(e)
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
        if self.ge.span is not None:  # (a block program's rows are few by construction)
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
        rows = self.elements(rows_shape)
        reds = self.elements(red_shape)
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
                functor = self.functor(e)
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
                    self.add(f"{acc} = {self.combine_code(e, acc, part)};")
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
        """A reduction's accumulator: an int truth (any, all), the operand's type (max, min:
        no identity), else the result's."""
        c = self.low.combines[id(e.out)]
        if c.ufunc in _LOGICAL:
            return "int"
        if c.identity is None:
            return compute_type(e.inputs[0].type.dtype)
        return compute_type(e.out.type.dtype)

    def scan_kernel(self) -> str:
        k = self.k
        domain, ax = k.domain, k.scan_axis
        scan = next(e for e in k.body.eqns if family(e) == "scan")
        lines_shape = tuple(d for a, d in enumerate(domain) if a != ax)
        pos = self.position([a for a in range(len(domain)) if a != ax])
        total = self.elements(self.blocked(lines_shape, pos))
        self.add(f"const long long lines_ = {total};")
        head = self.grid_stride("line_", "lines_")
        out_ct = compute_type(scan.out.type.dtype)
        with self.scope(head):
            stmts, lidx = self.delinearize("line_", lines_shape, "k", pos)
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
                code = f"(s_ == 0 ? {x} : {self.combine_code(scan, acc, x)})"
                if scan.out.type.dtype.name == "float16":
                    code = f"ppto_h({code})"
                self.add(f"{acc} = {code};")
                self.scan = (scan, idx, acc)
                for v in self.outputs:
                    if not self.ge.plan.same(v.type.shape, domain):
                        raise ScanElsewhere(f"kernel {k.name}: a scan output off the domain")
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
        c = self.low.combines[id(scan.out)]
        one, functor = str(c.identity), self.functor(scan)
        half = scan.out.type.dtype.name == "float16"
        self.params.append(("long long parts_", "np.int64(_parts)"))
        self.params.append((f"{ct}* __restrict__ q0", "_q0"))
        total = self.elements(lines_shape)
        self.add(f"const long long lines_ = {total};")
        self.add(f"const long long n_ = {self.dim(domain[ax])};")
        self.add("const long long chunk_ = (n_ + parts_ - 1) / parts_;")
        self.add("__shared__ double scratch_[33];")
        self.add(f"__shared__ double tot_[{BLOCK}];")

        def step(a, b):
            code = self.combine_code(scan, a, b)
            return f"ppto_h({code})" if half else code

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

        def count(axes):  # the elements of the domain's ``axes`` (a block's, cut to it)
            return ge.count(self.blocked([k.domain[a] for a in axes], self.position(axes)))

        if self.kind in ("reduction", "rowwise"):
            rows = count([a for a in range(len(k.domain)) if a not in k.reduced])
            if getattr(self, "block_mode", False):
                return f"max(1, min({bare(rows)}, 65535))", str(BLOCK), "0"
            return f"_grid({bare(rows)})", str(BLOCK), "0"
        if self.kind == "scan":
            lines = count([a for a in range(len(k.domain)) if a != k.scan_axis])
            return f"_grid({bare(lines)})", str(BLOCK), "0"
        stores = {id(s.out): s for s in k.stores}
        sizes = [
            ge.count(self.blocked(ge.plan_domain_of(k, v, stores), ge.chunk_axis(k, v, stores)))
            for v in self.outputs
        ]
        return f"_grid(max({', '.join(sizes)}, 0))", str(BLOCK), "0"
