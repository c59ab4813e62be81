"""The front end: a Python function's libcst tree, interpreted on traced values, becomes a
Function IR (pypto/function.py).

The tracer walks the function body statement by statement. Expressions run on traced tensors
through the op registry (so NumPy's semantics come from one place); Python-level values (sizes,
constants, modules) are computed at compile time. Straight-line code accumulates equations in
the current *block*; a loop, a run-time ``if`` or the end of the function closes the block:
every tensor bound to a name is written to a host variable, which later blocks read.

The construct families live in expressions.py, calls.py and statements.py (mixins of Tracer);
values.py says what a name can hold.
"""

from __future__ import annotations

import itertools
import weakref

from .. import api
from ..builder import GraphBuilder
from ..errors import InternalError, PyptoError, UnsupportedError
from ..function import Bind, Block, Fail, Function, HostVar, Param, mark_restarts, verify_function
from ..ir import Graph, Var
from ..lower.index_map import Linear, exact_same, moves_data, view_map
from ..registry import REGISTRY
from ..shapes import ShapeContext, input_facts
from ..symbolic import Sym, as_symbol
from ..types import ArgSpec, TensorType
from .calls import Calls
from .expressions import Expressions
from .index_arrays import IndexArrays
from .masks import Masks
from .source import Frame, FunctionSource
from .statements import Return, Statements
from .values import Ref, SymCond, Undefined, View, ViewRef


class Tracer(Expressions, Calls, IndexArrays, Masks, Statements):
    MAX_INLINE_DEPTH = 32

    def __init__(self, src: FunctionSource, specs: dict[str, ArgSpec], env: dict):
        arrays = [s.type for s in specs.values() if s.kind == "array"]
        self.ctx = ShapeContext(env, facts=input_facts(arrays))
        self._names: set[str] = set(specs)
        self.steps: list = []
        self.builder: GraphBuilder | None = None
        self._token = None
        self._imports: dict[int, api.Tensor] = {}
        self._pending: list = []  # (atom, HostVar): extra outputs of the current block
        self.dirty: list[Ref] = []
        self.frames: list[Frame] = []
        self.control_depth = 0  # inside loops or run-time branches
        self.tested: set[int] = set()  # ids of expression nodes of which only the truth counts
        self.return_depths: set[int] = set()  # control depths a `return` may end the function at
        self.loop_depths: list[int] = []  # the control depths of the loop bodies being traced
        self.unmasked: set[int] = set()  # ids of `X[mask]` reads evaluated as X (masks.py)
        self.whole: set[int] = set()  # ids of expressions that are a statement's whole value
        self.reads = None  # told the names looked up in the functions' scopes
        self.assigned_at: dict = {}  # name -> site of its latest assignment (for errors)
        self.site = None
        self._symbols = set(specs)
        self.src = src
        self.params: list[Param] = []
        self.param_refs: list[Ref] = []
        env0 = {}
        for name, spec in specs.items():
            if spec.kind in ("array", "scalar"):
                hv = HostVar(name, spec.type)
                ref = Ref(host=hv, hint=name, param=name if spec.kind == "array" else None)
                env0[name] = ref
                if spec.kind == "array":
                    self.param_refs.append(ref)
                self.params.append(Param(name, spec.kind, spec.type, host=hv))
            elif spec.kind == "int":
                env0[name] = Sym(name, nonneg=False)
                self.params.append(Param(name, "int"))
            else:
                env0[name] = spec.value
                self.params.append(Param(name, "const", value=spec.value))
        self.frames.append(Frame(src, env0))

    # -- the whole function ---------------------------------------------------------------------
    def trace(self) -> Function:
        try:
            try:
                self.exec_body(self.src.node.body.body)
                value = None
            except Return as r:
                value = r.value
            except PyptoError as e:
                if isinstance(e, (UnsupportedError, InternalError)):
                    raise
                # NumPy raises at this statement when it runs: what came before runs first
                # (and its writes into the arguments are made), then this error
                e.with_context(None, self.site)
                self.flush()
                self.steps.append(Fail(e))
                value = None
            result = self.result_spec(value)
            self.flush()
        except PyptoError as e:
            e.with_context(None, self.site)  # an error without a site gets the statement's
            raise
        except Exception as e:  # a bug in PyPTO: say where, keep the cause
            raise InternalError(
                f"compiling `{self.src.name}` failed inside PyPTO: {type(e).__name__}: {e}",
                site=self.site,
            ) from e
        finally:
            self._close_builder()
        writebacks = tuple((r.param, r.host) for r in self.param_refs if r.version > 0)
        fn = Function(
            self.src.name,
            tuple(self.params),
            tuple(self.steps),
            result,
            writebacks,
            tuple(self.ctx.guards),
            tuple(p.name.value for p in self.src.node.params.kwonly_params),
        )
        return verify_function(mark_restarts(fn))

    def result_spec(self, value):
        if isinstance(value, tuple):
            return ("tuple", tuple(self.result_spec(v) for v in value))
        if isinstance(value, View) and not value.ops and value.base.param is not None:
            return ("param", value.base.param)  # NumPy returns the argument object itself
        if (
            isinstance(value, View)
            and not value.ops
            and not value.base.dirty
            and (value.base.host is not None)
        ):
            return ("host", value.base.host)
        if isinstance(value, (View, api.Tensor)):
            t = self.as_tensor(value)
            hv = self.new_host("result", t._atom.type)
            self._pending.append((t._atom, hv))
            return ("host", hv)
        if isinstance(value, Undefined):
            raise UnsupportedError(
                f"returning a value that is not defined here: {value.why}",
                site=self.site,
                code="PPT107",
            )
        from ..symbolic import Expr, SymFloat

        if isinstance(value, (Expr, SymFloat)):
            return ("dim", value)
        if isinstance(value, list):
            raise UnsupportedError("returning a list", hint="return a tuple", site=self.site)
        return ("const", value)

    # -- blocks -----------------------------------------------------------------------------------
    def ensure_block(self) -> GraphBuilder:
        if self.builder is None:
            self.builder = GraphBuilder(self.ctx)
            self.builder.site = self.site
            self._token = api._BUILDER.set(self.builder)
            self._imports = {}
        return self.builder

    def _close_builder(self):
        if self._token is not None:
            api._BUILDER.reset(self._token)
            self._token = None
        self.builder = None

    def flush(self) -> None:
        """Close the current block: every tensor newer than its host variable is written."""
        builder = self.builder
        if builder is None:
            return
        outputs = list(self._pending)
        for ref in self.dirty:
            if not ref.dirty or ref.value is None or ref.value._builder is not builder:
                continue
            t = ref.value._atom.type
            if ref.host is None or ref.host.type != t:
                ref.host = self.new_host(ref.hint, t)
            outputs.append((ref.value._atom, ref.host))
            ref.dirty = False
        imports = self._imports
        self.dirty, self._pending = [], []
        self._close_builder()
        if outputs:
            self.steps.append(_block(builder, imports, outputs))

    def bind_sized(self, results) -> None:
        """Graph breaks among ``results`` whose size the values decide (``x[mask]``,
        ``np.nonzero``: the ``sized`` axes of a ``host_call``): the block ends after them, a
        ``Bind`` gives each new size symbol its value, and the code after them (the rest of
        the statement too) goes on in a new block."""
        items = results if isinstance(results, tuple) else (results,)
        made = self.producers()
        binds, seen = [], set()
        for t in items:
            e = made.get(id(t._atom)) if isinstance(t, api.Tensor) else None
            while e is not None and e.op == "astype":  # (a Python number's weak cast)
                e = made.get(id(e.inputs[0]))
            if e is None or e.op != "host_call":
                continue
            for axis, bound in e.params["sized"]:
                var = as_symbol(e.out.type.shape[axis])
                if var not in seen:
                    seen.add(var)
                    binds.append((t, axis, var, bound, e.params["name"]))
        if not binds:
            return
        carried = self.cut()
        for t, axis, var, bound, what in binds:
            guards = self.ctx.bind(var)
            self.steps.append(Bind(var, carried[id(t)], axis, bound, guards, f"`{what}`"))

    def cut(self) -> dict:
        """End the current block in the middle of a statement: every tensor of it that is
        still referenced (names, operands of the expression being evaluated) becomes a host
        variable and is read again in the next block (the same Tensor objects, rebound).
        Returns id(Tensor) -> its host variable."""
        builder = self.builder
        for frame in self.frames:  # (caches: read again where needed, not carried)
            for held in frame.env.values():
                for v in held if isinstance(held, tuple) else (held,):
                    if isinstance(v, ViewRef):
                        v.cached = None
                    elif isinstance(v, Ref) and not v.dirty and v.host is not None:
                        v.value = None
        live = [t for r in builder.tensors if (t := r()) is not None and t._builder is builder]
        imported = {id(t._atom): hv for hv, t in self._imports.values()}
        consts = {id(v): a for v, a in builder.consts}
        exported = {id(a): hv for a, hv in self._pending}
        named = [  # (flush gives these their host variables)
            r for r in self.dirty if r.dirty and r.value is not None and r.value._builder is builder
        ]
        for t in live:
            a = t._atom
            if (
                isinstance(a, Var)
                and not any(id(a) in d for d in (imported, consts, exported))
                and all(r.value._atom is not a for r in named)
            ):
                exported[id(a)] = self.new_host("t", a.type)
                self._pending.append((a, exported[id(a)]))
        self.flush()
        exported.update({id(r.value._atom): r.host for r in named})
        hosts = {}
        self.ensure_block()
        for t in live:
            a = t._atom
            if isinstance(a, Var) and id(a) in consts:
                t._atom = self.builder.add_const(consts[id(a)])
            elif isinstance(a, Var):
                hv = imported.get(id(a)) or exported[id(a)]
                t._atom = self.import_host(hv)._atom
                hosts[id(t)] = hv
            t._builder = self.builder
            self.builder.tensors.append(weakref.ref(t))
        return hosts

    def import_host(self, hv: HostVar) -> api.Tensor:
        builder = self.ensure_block()
        held = self._imports.get(id(hv))
        if held is None:
            held = self._imports[id(hv)] = (
                hv,
                api.traced(builder.add_input(hv.name, hv.type), builder),
            )
        return held[1]

    def new_host(self, hint: str, type: TensorType) -> HostVar:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "t"
        if not base[0].isalpha() and base[0] != "_":
            base = "t" + base
        return HostVar(_fresh(base, self._names), type)

    def new_symbol(self, hint: str) -> str:
        return _fresh(hint, self._symbols)

    # -- references -------------------------------------------------------------------------------
    def read_ref(self, ref: Ref) -> api.Tensor:
        if (
            ref.value is not None
            and self.builder is not None
            and ref.value._builder is self.builder
        ):
            return ref.value
        if ref.host is None:
            raise InternalError("a value was lost between blocks", site=self.site)
        ref.value = self.import_host(ref.host)
        return ref.value

    def write_ref(self, ref: Ref, t: api.Tensor) -> None:
        ref.value, ref.version, ref.dirty = t, ref.version + 1, True
        self.dirty.append(ref)

    def new_ref(self, t: api.Tensor, hint: str = "t") -> Ref:
        ref = Ref(t, hint=hint)
        self.dirty.append(ref)
        return ref

    def read_view(self, v: ViewRef) -> api.Tensor:
        if (
            v.version == v.base.version
            and v.cached is not None
            and (v.cached._builder is self.builder)
        ):
            return v.cached
        t = self.read_ref(v.base)
        for op in v.ops:
            t = self.apply_view_op(op, t)
        if v.base.version != v.made and self.by_layout(t, v.base, v.ops):
            raise UnsupportedError(
                "reading a reshaped view after a write into its array: NumPy's reshape is a "
                "view of a contiguous array and a copy of another, which a compiled function "
                "cannot tell apart",
                hint="copy it before the write (v = x.reshape(-1).copy()) or reshape after",
                site=self.site,
                code="PPT105",
            )
        v.cached, v.version = t, v.base.version
        return t

    def producers(self) -> dict:
        """id(value) -> the equation of the current block that computes it."""
        return {id(e.out): e for e in self.builder.eqns}

    def by_layout(self, t, base: Ref, ops) -> bool:
        """Whether NumPy's view ``t`` of ``base`` (made by ``ops``) is a view or a copy by the
        array's layout: ``ravel`` (a copy unless contiguous, 1-D too), or a reshape that moves
        elements between axes (not only adding or dropping size-1 axes)."""
        if any(op.op == "ravel" for op in ops):
            return True
        made_by = self.producers()
        atom, root = t._atom, self.read_ref(base)._atom
        while atom is not root and id(atom) in made_by:
            e = made_by[id(atom)]
            m = view_map(e, exact_same)
            if isinstance(m, Linear) and moves_data(m, m.src, m.dst, exact_same):
                return True
            atom = e.inputs[0]
        return False

    def apply_view_op(self, op, t):
        if op.op == "run_time_slice":  # not an op: a graph break (parse/index_arrays.py)
            return self.read_slice(t, *op.args)

        if op.method:
            return getattr(t, op.op)(*op.args, **op.kwargs)
        args = (*op.args[: op.at], t, *op.args[op.at :])
        return REGISTRY[op.op].api(*args, **op.kwargs)

    # -- name binding ---------------------------------------------------------------------------
    @property
    def env(self) -> dict:
        return self.frames[-1].env

    def store_value(self, value, hint: str):
        """What a name holds for an evaluated value (aliases share a Ref)."""
        if isinstance(value, View):
            if not value.ops:
                return value.base
            return ViewRef(value.base, value.ops, made=value.base.version)
        if isinstance(value, api.Tensor):
            return self.new_ref(value, hint)
        if isinstance(value, tuple):
            return tuple(self.store_value(v, hint) for v in value)
        return value

    def load_value(self, held):
        if isinstance(held, Ref):
            return View(self.read_ref(held), held)
        if isinstance(held, ViewRef):
            return View(self.read_view(held), held.base, held.ops)
        if isinstance(held, tuple):
            return tuple(self.load_value(v) for v in held)
        return held

    def as_tensor(self, value) -> api.Tensor:
        """Any operand as a traced tensor of the current block."""
        self.ensure_block()
        if isinstance(value, View):
            return value.tensor
        if isinstance(value, api.Tensor):
            return value
        if isinstance(value, SymCond):
            g = value.guard
            op = {">=": "greater_equal", "==": "equal", "!=": "not_equal"}[g.rel]
            return api.apply(op, (g.expr, 0), {"weak": True})
        return api.lift(value)

    # -- snapshots (a loop traced again with wider types) -----------------------------------------
    def snapshot(self):
        refs = {}
        for frame in self.frames:
            for held in frame.env.values():
                self._collect_refs(held, refs)
        for ref in self.param_refs:
            refs[id(ref)] = ref
        return {
            "envs": [dict(f.env) for f in self.frames],
            "refs": {k: (r, r.state()) for k, r in refs.items()},
            "names": set(self._names),
            "steps": (self.steps, len(self.steps)),
            "guards": len(self.ctx.guards),
            "seen": set(self.ctx._seen),
            "dirty": list(self.dirty),
        }

    def restore(self, snap) -> None:
        self.flush_discard()
        for frame, env in zip(self.frames, snap["envs"]):
            frame.env.clear()
            frame.env.update(env)
        for ref, state in snap["refs"].values():
            ref.restore(state)
        self._names = set(snap["names"])
        steps, n = snap["steps"]
        self.steps = steps
        del steps[n:]
        del self.ctx.guards[snap["guards"] :]
        self.ctx._seen = snap["seen"]
        self.dirty = list(snap["dirty"])

    def flush_discard(self):
        self._pending = []
        self._close_builder()

    def _collect_refs(self, held, out):
        if isinstance(held, Ref):
            out[id(held)] = held
        elif isinstance(held, ViewRef):
            out[id(held.base)] = held.base
        elif isinstance(held, tuple):
            for v in held:
                self._collect_refs(v, out)


def _fresh(base: str, taken: set) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first name not taken (now taken)."""
    name = base
    for k in itertools.count(1):
        if name not in taken:
            break
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _block(builder: GraphBuilder, imports: dict, outputs) -> Block:
    """The block's graph, without the equations and inputs that no output needs."""
    graph = builder.finish([atom for atom, _ in outputs])
    needed = {id(a) for a in graph.outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(graph.eqns):
        if id(eqn.out) in needed:
            kept.append(eqn)
            needed.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    host_of = {id(t._atom): hv for hv, t in imports.values()}
    inputs = tuple(v for v in graph.inputs if id(v) in needed)
    consts = tuple((v, a) for v, a in graph.consts if id(v) in needed)
    graph = Graph(inputs, consts, tuple(reversed(kept)), graph.outputs, ())
    return Block(graph, tuple(host_of[id(v)] for v in inputs), tuple(h for _, h in outputs))


def trace_function(
    src: FunctionSource, specs: dict[str, ArgSpec], env: dict, reads=None
) -> Function:
    """The Function IR of ``src`` for arguments specialized as ``specs`` (sizes in ``env``);
    ``reads.read(fn, name, value)`` is told every name looked up in a function's scope (the
    compile cache keys on them)."""
    tracer = Tracer(src, specs, env)
    tracer.reads = reads
    return tracer.trace()
