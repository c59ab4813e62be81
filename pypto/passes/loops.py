"""Loop transformations on the Function IR: a loop becomes array operations over a new axis.

For each ``for i in range(start, stop, step)`` whose body is blocks (inner loops first: a
vectorized inner loop is a block), the body's blocks are merged into one graph and tested:

* **independent** (DaCe's LoopToMap): every array the body writes is written at an index
  ``a*i + b`` on some axis (``a != 0``) that no other iteration reads or writes (the classic
  test on the index facts: equal affine indices, or a distance that is not a multiple of ``a``);
  arrays the body only reads are free. The loop becomes the graph over a leading axis of
  ``n`` iterations: ``x[i]`` reads ``x[start:stop:step]``, ``y[i, :] = v`` one store of the
  whole region, the loop variable used as a value ``np.arange``;
* **accumulation**: a host value or an array region the body only updates as ``s = s + g`` (or
  ``-``) with ``g`` free of ``s``: ``g`` over the new axis, summed, added once (a reduction;
  floating-point sums are then associated differently than the loop did, as any reduction).

A loop that passes becomes ``Loop.vector`` (a Block) run when ``Loop.when`` holds: the range is
not empty, and the loop's guards hold at its first and last iteration (they are affine in ``i``,
so they hold in between); otherwise the iterations run as before, so a breach raises NumPy's
error at the iteration NumPy raises it. ``Loop.decision`` says what was decided and why, for a
loop that stays a host loop the dependence (or the construct) that kept it there.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..builder import GraphBuilder
from ..errors import PyptoError
from ..function import Block, Branch, Fail, Function, HostVar, Loop
from ..ir import Eqn, Graph, Literal, Var
from ..ops.indexing import SliceSpec
from ..registry import REGISTRY
from ..shapes import ShapeContext, input_facts, make_guard
from ..symbolic import Expr, affine, floordiv, format_dim, free_symbols, substitute

# ops whose batched form is the op itself with its axes moved by one
_AXIS_OPS = {"sum", "prod", "mean", "max", "min", "any", "all", "cumsum", "cumprod", "flip"}


class Refused(Exception):
    """The loop stays a host loop; the message says why."""


def vectorize_loops(fn: Function) -> Function:
    array_types = [p.type for p in fn.params if p.kind == "array"]
    facts = [*input_facts(array_types), *fn.guards]
    outside = _Outside(fn)
    return replace(fn, body=_steps(fn.body, facts, outside))


def _steps(steps, facts, outside) -> tuple:
    out = []
    for step in steps:
        if isinstance(step, Loop):
            body = _steps(step.body, [*facts, *step.facts(), *step.guards], outside)
            step = replace(step, body=body)
            try:
                vector, when, decision = _vectorize(step, facts, outside)
                step = replace(step, vector=vector, when=when, decision=decision)
            except Refused as e:
                step = replace(step, decision=f"host loop: {e}")
        elif isinstance(step, Branch):
            then = _steps(step.then, [*facts, *step.facts("then"), *step.then_guards], outside)
            orelse = _steps(step.orelse, [*facts, *step.facts("else"), *step.else_guards], outside)
            step = replace(step, then=then, orelse=orelse)
        out.append(step)
    return tuple(out)


class _Outside:
    """Which host variables are read outside a given loop (its last value would be needed)."""

    def __init__(self, fn: Function):
        self.fn = fn

    def reads(self, loop: Loop) -> set[int]:
        found: set[int] = set()
        _reads(self.fn.body, loop, found)
        found |= {id(h) for _, h in self.fn.writebacks}
        found |= _result_reads(self.fn.result)
        return found


def _reads(steps, skip, found):
    for step in steps:
        if step is skip:
            continue
        if isinstance(step, Block):
            found.update(id(h) for h in step.inputs)
        elif isinstance(step, Loop):
            _reads(step.body, skip, found)
            if step.vector is not None:
                found.update(id(h) for h in step.vector.inputs)
        elif isinstance(step, Branch):
            found.add(id(step.cond))
            _reads(step.then, skip, found)
            _reads(step.orelse, skip, found)


def _result_reads(result) -> set[int]:
    kind, value = result
    if kind == "tuple":
        return set().union(*(_result_reads(r) for r in value)) if value else set()
    return {id(value)} if kind == "host" else set()


# -- the decision -----------------------------------------------------------------------------
def _vectorize(loop: Loop, facts, outside):
    blocks = []
    for step in loop.body:
        if isinstance(step, Block):
            blocks.append(step)
        elif isinstance(step, Loop) and step.vector is not None:
            blocks.append(step.vector)
        elif isinstance(step, Loop):
            raise Refused(f"the inner loop over {step.var} stays a host loop")
        elif isinstance(step, Fail):
            raise Refused("its body can raise")
        else:
            raise Refused("its body has a branch decided at run time")
    if not blocks:
        raise Refused("its body is empty")
    var, step = loop.var, loop.step
    count = _count(loop)
    last = loop.start + step * (count - 1)
    # what must hold for the vector form: a non-empty range, the guards at both ends
    when = [make_guard(count, ">=", 1)]
    inner = [g for s in loop.body if isinstance(s, Loop) and s.vector is not None for g in s.when]
    for g in [*loop.guards, *inner]:
        if affine(g.expr, var) is None:
            raise Refused(f"its assumption {g} is not linear in {var}")
        for at in (loop.start, last):
            when.append(replace(make_guard(substitute(g.expr, var, at), g.rel, 0), breach=None))
    known = ShapeContext(facts=facts)
    when = [g for g in dict.fromkeys(when) if known.known(g.expr, g.rel, 0) is not True]
    ctx = ShapeContext(facts=[*facts, *when])
    merged = _merge(blocks)
    plan = _Analysis(merged, var, step, outside.reads(loop))
    graph, kinds = _Batcher(merged, plan, var, loop.start, step, count, ctx).run()
    if ctx.guards:  # what building it assumed beyond the facts: checked before it runs
        when += [g for g in ctx.guards if g not in when]
    outputs = tuple(h for h, _ in merged.outputs if id(h) not in plan.dropped)
    block = Block(graph, tuple(h for h, _ in merged.inputs), outputs)
    what = "an accumulation: a reduction over a new axis" if "reduce" in kinds else None
    axis = f"independent iterations: array operations over a new axis of {format_dim(count)}"
    decision = what or axis
    return block, tuple(when), decision


def _count(loop: Loop):
    span = loop.stop - loop.start if loop.step > 0 else loop.start - loop.stop
    s = abs(loop.step)
    return span if s == 1 else floordiv(span + s - 1, s)


class _Merged:
    def __init__(self, graph: Graph, inputs, outputs):
        self.graph = graph
        self.inputs = inputs  # [(HostVar, Var)]
        self.outputs = outputs  # [(HostVar, Atom)]


def _merge(blocks) -> _Merged:
    """The body's blocks as one graph: a value one block hands to the next stays inside."""
    env: dict[int, object] = {}
    inputs: list[tuple[HostVar, Var]] = []
    eqns, consts, guards, written = [], [], [], {}
    names: set[str] = set()
    for block in blocks:
        g = block.graph
        sub: dict[int, object] = {}
        for v, h in zip(g.inputs, block.inputs):
            if id(h) not in env:
                name = v.name
                while name in names:
                    name += "_"
                names.add(name)
                nv = Var(v.type, name)
                inputs.append((h, nv))
                env[id(h)] = nv
            sub[id(v)] = env[id(h)]
        consts.extend(g.consts)
        guards.extend(g.guards)
        for e in g.eqns:
            ins = tuple(sub.get(id(a), a) if isinstance(a, Var) else a for a in e.inputs)
            eqns.append(e if ins == e.inputs else Eqn(e.op, ins, e.attrs, e.out, e.site))
        for o, h in zip(g.outputs, block.outputs):
            env[id(h)] = sub.get(id(o), o) if isinstance(o, Var) else o
            written[id(h)] = h
    outputs = [(h, env[id(h)]) for h in written.values()]
    graph = Graph(
        tuple(v for _, v in inputs),
        tuple(consts),
        tuple(eqns),
        tuple(a for _, a in outputs),
        tuple(dict.fromkeys(guards)),
    )
    return _Merged(graph, inputs, outputs)


class _Analysis:
    """The dependence test, and what each output of the merged body is."""

    def __init__(self, merged: _Merged, var: str, step: int, read_outside: set[int]):
        self.var, self.step = var, step
        g = merged.graph
        self.producer = {id(e.out): e for e in g.eqns}
        self.input_of = {id(h): v for h, v in merged.inputs}
        self.dropped: set[int] = set()  # outputs nothing after the loop reads (temporaries)
        self.accumulations: dict[int, int] = {}  # id(add's out) -> which operand it keeps
        exempt: set[tuple[int, int]] = set()  # (id(eqn out), id(value)): an accumulator's use
        for h, o in merged.outputs:
            v_in = self.input_of.get(id(h))
            if isinstance(o, Var) and v_in is not None and o is not v_in:
                self._accumulation(o, v_in, exempt)
        root: dict[int, Var] = {id(v): v for v in g.inputs}
        version: dict[int, int] = {id(v): 0 for v in g.inputs}
        latest: dict[int, int] = {id(v): 0 for v in g.inputs}
        accesses: dict[int, list] = {}  # id(root) -> [(write?, index or None, version)]
        for e in g.eqns:
            inputs = e.inputs
            if e.op in ("getitem", "store") and id(e.inputs[0]) in root:
                base = e.inputs[0]
                r, k = root[id(base)], version[id(base)]
                if e.op == "getitem" and (id(e.out), id(base)) not in exempt:
                    accesses.setdefault(id(r), []).append((False, e.params["index"], k))
                if e.op == "store":
                    if k != latest[id(r)]:
                        raise Refused(f"`{r.name}` is written from an older value of itself")
                    root[id(e.out)], version[id(e.out)] = r, k + 1
                    latest[id(r)] = k + 1
                    if (id(e.out), id(base)) not in exempt:
                        accesses.setdefault(id(r), []).append((True, e.params["index"], k + 1))
                inputs = e.inputs[1:]
            for a in inputs:
                if isinstance(a, Var) and id(a) in root and (id(e.out), id(a)) not in exempt:
                    accesses.setdefault(id(root[id(a)]), []).append((False, None, version[id(a)]))
        for h, o in merged.outputs:
            v_in = self.input_of.get(id(h))
            if isinstance(o, Var) and id(o) in root:
                if v_in is None or root[id(o)] is not v_in:
                    raise Refused(f"`{h.name}` becomes another array in the loop")
                if version[id(o)] != latest[id(v_in)]:
                    raise Refused(f"`{h.name}` is an older value of itself after the loop")
            elif v_in is None:  # a value the body makes; its last value is not kept
                if id(h) in read_outside:
                    raise Refused(f"`{h.name}` keeps its last iteration's value after the loop")
                self.dropped.add(id(h))
            elif o is not v_in and id(o) not in self.accumulations:
                raise Refused(f"`{h.name}` carries a value from one iteration to the next")
        for key, items in accesses.items():
            name = next(v.name for v in g.inputs if id(v) == key)
            for w, wix, wk in items:
                if w:
                    for other, ix, k in items:
                        self._check(name, wix, wk, other, ix, k)

    def _accumulation(self, o, v_in, exempt) -> None:
        """``o = v_in + g`` (or ``-``), or the store of ``v_in[idx] + g`` at ``idx``."""
        e = self.producer.get(id(o))
        if e is None:
            return
        if e.op == "store" and e.inputs[0] is v_in:
            index, value = e.params["index"], e.inputs[1]
            if any(self._mentions(d) for d in _index_dims(index)):
                return
            add = self.producer.get(id(value)) if isinstance(value, Var) else None
            if add is None or add.op not in ("add", "subtract"):
                return
            for keep in (0, 1):
                read = add.inputs[keep]
                r = self.producer.get(id(read)) if isinstance(read, Var) else None
                ok = keep == 0 or add.op == "add"
                if (
                    ok
                    and r is not None
                    and r.op == "getitem"
                    and r.inputs[0] is v_in
                    and r.params["index"] == index
                    and not self._reads(add.inputs[1 - keep], v_in)
                ):
                    self.accumulations[id(add.out)] = keep
                    exempt.update({(id(e.out), id(v_in)), (id(r.out), id(v_in))})
                    return
            return
        if e.op not in ("add", "subtract") or e.out.type.dtype == np.dtype(bool):
            return
        for keep in (0, 1):
            if (
                e.inputs[keep] is v_in
                and (keep == 0 or e.op == "add")
                and not self._reads(e.inputs[1 - keep], v_in)
            ):
                self.accumulations[id(e.out)] = keep
                exempt.add((id(e.out), id(v_in)))
                return

    def _mentions(self, d) -> bool:
        return hasattr(d, "terms") and self.var in free_symbols(d)

    def _reads(self, atom, v) -> bool:
        seen, todo = set(), [atom]
        while todo:
            x = todo.pop()
            if x is v:
                return True
            if not isinstance(x, Var) or id(x) in seen:
                continue
            seen.add(id(x))
            e = self.producer.get(id(x))
            if e is not None:
                todo.extend(e.inputs)
        return False

    def _check(self, name, w, wk, other_write, x, k) -> None:
        """The write at ``w`` (making version ``wk``) against an access at ``x`` (a write
        making, or a read of, version ``k``) in other iterations: they must touch other
        elements, or (a read) come in the same order as the loop runs them."""
        distance = _distance(w, x, self.var)
        if distance == 0 or distance is _DISJOINT:
            return
        kind = "written" if other_write else "read"
        where = f"`{name}` is written at [{_show(w)}] and {kind} at [{_show(x)}]"
        if distance is None:
            raise Refused(f"{where}: every iteration, or an unknown distance apart")
        if other_write:
            raise Refused(f"{where}, {abs(distance)} apart")
        later = distance * self.step > 0  # the read's iteration comes after the write's
        if later != (k >= wk):
            raise Refused(f"{where}: a dependence carried at distance {abs(distance)}")


_DISJOINT = object()


def _distance(w, x, var):
    """``i_x - i_w`` for iterations whose elements at ``w`` and ``x`` can be the same one
    (an int), ``_DISJOINT`` when none can, None when unknown or any two iterations can."""
    if x is None:
        return None
    deltas = set()
    for iw, ix in zip(_axes(w), _axes(x)):
        if isinstance(iw, SliceSpec) or isinstance(ix, SliceSpec):
            continue
        fw, fx = affine(iw, var), affine(ix, var)
        if fw is None or fx is None:
            return None
        (a, b), (c, d) = fw, fx
        diff = b - d
        if a == 0 and c == 0:
            if isinstance(diff, int) and diff != 0:
                return _DISJOINT
            continue
        if a != c or not isinstance(diff, int):
            return None
        if diff % a:
            return _DISJOINT
        deltas.add(diff // a)
    if len(deltas) > 1:
        return _DISJOINT
    return deltas.pop() if deltas else None


def _index_dims(index):
    for item in index:
        if isinstance(item, SliceSpec):
            yield item.start
            yield item.length
        elif item is not None and item is not Ellipsis:
            yield item


def _axes(index) -> list:
    return [item for item in index if item is not None and item is not Ellipsis]


def _show(index) -> str:
    if index is None:
        return "..."
    return ", ".join(str(i) if not isinstance(i, SliceSpec) else repr(i) for i in index)


# -- building the graph over the new axis -------------------------------------------------------
class _Batcher:
    """The merged body over a leading axis of ``count`` iterations (vmap with index rules)."""

    def __init__(self, merged: _Merged, analysis: _Analysis, var, start, step, count, ctx):
        self.m, self.a = merged, analysis
        self.var, self.start, self.step, self.count = var, start, step, count
        self.b = GraphBuilder(ctx)
        self.kinds: set[str] = set()

    def run(self):
        b, g = self.b, self.m.graph
        self.val: dict[int, object] = {}
        self.batched: set[int] = set()
        self.weak: set[int] = set()  # batched values made only of weak scalars (the loop index)
        for v in g.inputs:
            self.val[id(v)] = b.add_input(v.name, v.type)
        for v, array in g.consts:
            self.val[id(v)] = b.add_const(array)
        for e in g.eqns:
            b.site = e.site
            try:
                self._eqn(e)
            except PyptoError as err:
                raise Refused(f"`{e.op}` over the new axis: {str(err).splitlines()[0]}") from None
        outputs = []
        for h, o in self.m.outputs:
            if id(h) in self.a.dropped:
                continue
            if self._is_batched(o):
                raise Refused(f"`{h.name}` would be one value per iteration")
            new = self._atom(o)
            if new.type != h.type:
                raise Refused(f"`{h.name}` would change type")
            outputs.append(new)
        return b.finish(outputs), self.kinds

    # values
    def _atom(self, a):
        if isinstance(a, Var):
            return self.val[id(a)]
        if isinstance(a.value, Expr) and self.var in free_symbols(a.value):
            return self._index_value(a)
        return a

    def _is_batched(self, a) -> bool:
        if isinstance(a, Var):
            return id(a) in self.batched
        return isinstance(a, Literal) and self._mentions(a.value)

    def _mentions(self, d) -> bool:
        return not isinstance(d, (int, float, complex, bool, np.generic)) and (
            hasattr(d, "terms") and self.var in free_symbols(d)
        )

    def _index_value(self, lit: Literal):
        """The loop variable used as a value: its values over the new axis (np.arange)."""
        f = affine(lit.value, self.var)
        if f is None:
            raise Refused(f"the value {lit.value} is not linear in {self.var}")
        a, rest = f
        first = a * self.start + rest
        stop = first + a * self.step * self.count
        if a * self.step == 0:
            raise Refused("a constant index value")
        v = self.b.apply(
            REGISTRY["arange"],
            (),
            {"start": first, "stop": stop, "step": a * self.step, "dtype": np.dtype(np.int64)},
        )
        self.weak.add(id(v))
        return v

    def _set(self, e: Eqn, v, batched: bool, weak: bool = False):
        self.val[id(e.out)] = v
        if batched:
            self.batched.add(id(v))
            self.batched.add(id(e.out))
            if weak:
                self.weak.add(id(e.out))

    def _apply(self, name, inputs, attrs):
        return self.b.apply(REGISTRY[name], tuple(inputs), attrs)

    def _expand(self, v, rank: int):
        """A batched value of per-iteration rank ``v.rank - 1`` given ``rank`` (size-1 axes
        after the loop axis), so that NumPy's broadcasting lines up the loop axes."""
        missing = rank - (v.type.rank - 1)
        if missing <= 0:
            return v
        return self._apply("expand_dims", [v], {"axis": tuple(range(1, 1 + missing))})

    def _loop_axis(self, v, at: int):
        """Move a batched value's loop axis from 0 to ``at``."""
        if at == 0:
            return v
        perm = list(range(1, v.type.rank))
        perm.insert(at, 0)
        return self._apply("transpose", [v], {"perm": tuple(perm)})

    def _front(self, v, at: int):
        """Move axis ``at`` of a value to the front."""
        if at == 0:
            return v
        perm = [at] + [k for k in range(v.type.rank) if k != at]
        return self._apply("transpose", [v], {"perm": tuple(perm)})

    # equations
    def _eqn(self, e: Eqn):
        op = REGISTRY[e.op]
        attrs = e.params
        batched = [self._is_batched(a) for a in e.inputs]
        keep = self.a.accumulations.get(id(e.out))
        if keep is not None:
            return self._set(e, self._accumulate(e, keep), False)
        if e.op in ("getitem", "store"):
            return self._index_op(e, batched)
        if any(self._mentions(v) for v in _attr_dims(attrs)):
            raise Refused(f"`{e.op}` has a size that depends on {self.var}")
        ins = [self._atom(a) for a in e.inputs]
        if not any(batched):
            return self._set(e, self._apply(e.op, ins, attrs), False)
        rank = e.out.type.rank
        if op.kind == "map":
            strong = [
                a.type.dtype
                for a, bt in zip(e.inputs, batched)
                if not a.type.weak and not (bt and self._weak(a))
            ]
            fixed = []
            for a, v, bt in zip(e.inputs, ins, batched):
                if bt:
                    v = self._expand(v, rank)
                    if self._weak(a) and strong:
                        v = self._apply("astype", [v], {"dtype": np.result_type(*strong)})
                    elif self._weak(a) and v.type.dtype != a.type.dtype:
                        v = self._apply("astype", [v], {"dtype": a.type.dtype})
                fixed.append(v)
            out = self._apply(e.op, fixed, attrs)
            return self._set(e, out, True, weak=not strong)
        if e.op in _AXIS_OPS and "axis" in attrs:
            axis = attrs["axis"]
            shifted = tuple(x + 1 for x in axis) if isinstance(axis, tuple) else axis + 1
            return self._set(e, self._apply(e.op, ins, {**attrs, "axis": shifted}), True)
        if e.op == "transpose":
            perm = (0, *(p + 1 for p in attrs["perm"]))
            return self._set(e, self._apply(e.op, ins, {"perm": perm}), True)
        if e.op == "expand_dims":
            axis = tuple(x + 1 for x in attrs["axis"])
            return self._set(e, self._apply(e.op, ins, {"axis": axis}), True)
        if e.op in ("reshape", "broadcast_to"):
            src = e.inputs[0]
            if e.op == "broadcast_to":
                ins[0] = self._expand(ins[0], rank)
            shape = (self.count, *attrs["shape"])
            if src.type.rank == 0 and e.op == "reshape":
                return self._set(e, self._apply(e.op, ins, {"shape": shape}), True)
            return self._set(e, self._apply(e.op, ins, {"shape": shape}), True)
        if e.op in ("matmul", "dot"):
            return self._set(e, self._product(e, ins, batched), True)
        raise Refused(f"`{e.op}` has no rule over a new axis yet")

    def _weak(self, a) -> bool:
        return (isinstance(a, Var) and id(a) in self.weak) or isinstance(a, Literal)

    def _product(self, e, ins, batched):
        x, y = e.inputs
        if e.op == "dot" and not (1 <= x.type.rank <= 2 and 1 <= y.type.rank <= 2):
            raise Refused("`dot` of arrays of rank above 2 over a new axis")
        if batched[1] and not batched[0] and y.type.rank == 1:
            # a @ v_i for each i: (a @ V.T).T
            vt = self._apply("transpose", [ins[1]], {"perm": (1, 0)})
            out = self._apply("matmul", [ins[0], vt], {})
            return self._front(out, out.type.rank - 1)
        if batched[0] and batched[1] and x.type.rank == 1 and y.type.rank == 1:
            prod = self._apply("multiply", ins, {})
            return self._apply("sum", [prod], {"axis": (1,), "keepdims": False, "dtype": None})
        if batched[0] and batched[1] and (x.type.rank == 1 or y.type.rank == 1):
            raise Refused("a product of a vector and a matrix, both over the new axis")
        if batched[1] and not batched[0] and y.type.rank >= 2 and x.type.rank == 1:
            return self._apply("matmul", ins, {})
        if batched[0] and not batched[1] and x.type.rank == 1 and y.type.rank >= 2:
            return self._apply("matmul", ins, {})
        rank = max(x.type.rank, y.type.rank)
        return self._apply(
            "matmul", [self._expand(v, rank) if b else v for v, b in zip(ins, batched)], {}
        )

    def _index_op(self, e: Eqn, batched):
        index = e.params["index"]
        base = self._atom(e.inputs[0])
        new, at, pos = [], None, 0  # at: where the loop axis lands among the result's axes
        for item in index:
            if item is None:
                new.append(None)
                pos += 1
                continue
            if item is Ellipsis:
                new.append(item)
                continue
            if isinstance(item, SliceSpec):
                if self._mentions(item.start) or self._mentions(item.length):
                    raise Refused(
                        f"a slice [{item!r}] whose bounds depend on {self.var} (a ragged "
                        "iteration space)"
                    )
                new.append(item)
                pos += 1
                continue
            f = affine(item, self.var)
            if f is None:
                raise Refused(f"the index {item} is not linear in {self.var}")
            a, rest = f
            if a == 0:
                new.append(item)
                continue
            if at is not None:
                raise Refused(f"two indices depend on {self.var} (a diagonal)")
            new.append(SliceSpec(a * self.start + rest, a * self.step, self.count))
            at = pos
            pos += 1
        if batched[0]:
            if at is not None:
                raise Refused(f"an index that depends on {self.var} into a value over the loop")
            new.insert(0, SliceSpec(0, 1, self.count))
            at = 0
        index = tuple(new)
        if e.op == "getitem":
            out = self._apply("getitem", [base], {"index": index})
            if at is None:
                return self._set(e, out, False)
            return self._set(e, self._front(out, at), True)
        value, vb = self._atom(e.inputs[1]), batched[1]
        if at is None:
            if vb:
                raise Refused("every iteration writes the same place")
            return self._set(e, self._apply("store", [base, value], {"index": index}), False)
        if vb or value.type.rank:  # the value over the loop, its loop axis at ``at``
            if not vb:
                value = self._apply("expand_dims", [value], {"axis": (0,)})
            value = self._loop_axis(self._expand(value, pos - 1), at)
        out = self._apply("store", [base, value], {"index": index})
        return self._set(e, out, batched[0])

    def _accumulate(self, e: Eqn, keep: int):
        """``start + g`` at every iteration: ``start + sum(g over the new axis)``."""
        g = e.inputs[1 - keep]
        if not self._is_batched(g):
            raise Refused("an accumulation of the same value at every iteration")
        total = self._atom(g)
        if total.type.dtype.kind not in "iufc":
            raise Refused(f"an accumulation of {total.type.dtype} values")
        attrs = {"axis": (0,), "keepdims": False, "dtype": total.type.dtype}
        s = self._apply("sum", [total], attrs)
        self.kinds.add("reduce")
        ins = [s, s]
        ins[keep] = self._atom(e.inputs[keep])
        return self._apply(e.op, ins, dict(e.params))


def _attr_dims(attrs: dict):
    for v in attrs.values():
        if isinstance(v, tuple):
            yield from (x for x in v if not isinstance(x, SliceSpec))
        else:
            yield v
