"""Loop transformations on the Function IR: a loop becomes array operations over a new axis.

For each ``for i in range(start, stop, step)`` whose body is blocks (inner loops first: a
vectorized inner loop is a block), the body's blocks are merged into one graph, tested and
rebuilt over a leading axis of the iterations by the index rules of ``lower/loop_axis.py``:

* **independent** (DaCe's LoopToMap): every array the body writes is written at an index
  ``a*i + b`` on some axis that no other iteration reaches, or reaches only in the order array
  statements keep (an anti-dependence); arrays the body only reads are free. ``x[i]`` reads
  ``x[start:stop:step]``, ``y[i, :] = v`` is one store of the whole region, the loop variable
  used as a value ``np.arange``, a slice whose length moves with ``i`` (``C[i, :i + 1]``) the
  hull of every iteration's slice, masked;
* **accumulation**: a host value or an array region the body only updates as ``s = s + g`` (or
  ``-``, or a chain of them) with ``g`` free of ``s``: ``g`` over the new axis, summed, added
  once (a reduction; floating-point sums are then associated differently than the loop did,
  as any reduction).

A loop that passes becomes ``Loop.vector`` (a Block) run when ``Loop.when`` holds: the range is
not empty, and the loop's guards hold at its first and last iteration (they are affine in ``i``,
so they hold in between); otherwise the iterations run as before, so a breach raises NumPy's
error at the iteration NumPy raises it. ``Loop.decision`` says what was decided and why, for a
loop that stays a host loop the dependence (or the construct) that kept it there.
"""

from __future__ import annotations

from dataclasses import replace

from ..function import Bind, Block, Branch, Fail, Function, HostVar, Loop, While
from ..ir import Eqn, Graph, Var
from ..lower.loop_axis import (
    Analysis,
    Batcher,
    Merged,
    Refused,
    independent_lines,
    own_elements,
)
from ..shapes import ShapeContext, input_facts, make_guard
from ..symbolic import affine, format_dim, free_symbols


def vectorize_loops(fn: Function) -> Function:
    array_types = [p.type for p in fn.params if p.kind == "array"]
    facts = [*input_facts(array_types), *fn.guards]
    outside = _Outside(fn)
    return replace(fn, body=_steps(fn.body, facts, outside))


def _steps(steps, facts, outside) -> tuple:
    out = []
    for step in steps:
        if isinstance(step, Bind):  # (checked where the size is bound)
            facts = [*facts, *step.guards]
        if isinstance(step, Loop):
            body = _steps(step.body, [*facts, *step.facts(), *step.guards], outside)
            ends = step.at_ends(step.guards)
            original, step = (
                step,
                replace(step, body=body, ends=None if ends is None else tuple(ends)),
            )
            try:
                if step.until is not None:
                    raise Refused("its body can `break`")
                vector, when, decision = _vectorize(step, facts, outside.reads(original))
                step = replace(step, vector=vector, when=when, decision=decision)
            except Refused as e:
                step = replace(step, decision=f"host loop: {e}")
                if step.until is None:  # (a loop that may break runs its iterations as written)
                    step = _interchange(step, facts, outside.reads(original)) or _lines(
                        step, [*facts, *step.facts(), *step.guards]
                    )
        elif isinstance(step, Branch):
            then = _steps(step.then, [*facts, *step.facts("then"), *step.then_guards], outside)
            orelse = _steps(step.orelse, [*facts, *step.facts("else"), *step.else_guards], outside)
            step = replace(step, then=then, orelse=orelse)
        elif isinstance(step, While):  # (its iterations are not counted: a host loop)
            test, body = _steps(step.test, facts, outside), _steps(step.body, facts, outside)
            step = replace(step, test=test, body=body)
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
            if step.until is not None:
                found.add(id(step.until))
            _reads(step.body, skip, found)
            if step.vector is not None:
                _reads((step.vector,), skip, found)
        elif isinstance(step, Branch):
            found.add(id(step.cond))
            _reads(step.then, skip, found)
            _reads(step.orelse, skip, found)
        elif isinstance(step, While):
            found.add(id(step.cond))
            _reads(step.test, skip, found)
            _reads(step.body, skip, found)
        elif isinstance(step, Bind):
            found.add(id(step.source))


def _result_reads(result) -> set[int]:
    kind, value = result
    if kind == "tuple":
        return set().union(*(_result_reads(r) for r in value)) if value else set()
    return {id(value)} if kind == "host" else set()


# -- the decision -----------------------------------------------------------------------------
def _vectorize(loop: Loop, facts, read_outside: set[int]):
    blocks = []
    for step in loop.body:
        if isinstance(step, Block):
            blocks.append(step)
        elif isinstance(step, Loop) and isinstance(step.vector, Block):
            blocks.append(step.vector)
        elif isinstance(step, Loop):
            raise Refused(f"the inner loop over {step.var} stays a host loop")
        elif isinstance(step, Fail):
            raise Refused("its body can raise")
        elif isinstance(step, While):
            raise Refused("its body has a `while` loop")
        elif isinstance(step, Bind):
            raise Refused(f"the size of {step.what} in its body depends on the values")
        else:
            raise Refused("its body has a branch decided at run time")
    if not blocks:
        raise Refused("its body is empty")
    var, step = loop.var, loop.step
    count = loop.count()
    last = loop.start + step * (count - 1)
    # what must hold for the vector form: a non-empty range, the guards at both ends
    inner = [g for s in loop.body if isinstance(s, Loop) and s.vector is not None for g in s.when]
    # (only blocks reach here: a loop whose vector form is an interchanged nest refused above)
    for g in [*loop.guards, *inner]:
        if affine(g.expr, var) is None:
            raise Refused(f"its assumption {g} is not linear in {var}")
        if g.rel == "!=" and var in free_symbols(g.expr):  # (it may fail between the ends)
            raise Refused(f"its assumption {g} is checked at each iteration")
    when = [make_guard(count, ">=", 1), *loop.at_ends([*loop.guards, *inner])]
    known = ShapeContext(facts=facts)
    when = [g for g in dict.fromkeys(when) if known.known(g.expr, g.rel, 0) is not True]
    ctx = ShapeContext(facts=[*facts, *when])
    merged = _merge(blocks)
    span = (loop.start, last) if step > 0 else (last, loop.start)
    plan = Analysis(merged, var, step, span, read_outside)
    graph, kinds = Batcher(merged, plan, var, loop.start, step, count, ctx).run()
    if ctx.guards:  # what building it assumed beyond the facts: checked before it runs
        when += [g for g in ctx.guards if g not in when]
    outputs = tuple(h for h, _ in merged.outputs if id(h) not in plan.dropped)
    block = Block(graph, tuple(h for h, _ in merged.inputs), outputs)
    what = None
    if "contraction" in kinds:
        what = "an accumulation: a matrix product (a contraction over a new axis)"
    elif "reduce" in kinds:
        what = "an accumulation: a reduction over a new axis"
    axis = f"independent iterations: array operations over a new axis of {format_dim(count)}"
    decision = what or axis
    return block, tuple(when), decision


class _Fixed:
    """What is read outside a loop nest, for the loops an interchange makes inside it."""

    def __init__(self, found: set[int]):
        self.found = found

    def reads(self, loop) -> set[int]:
        return self.found


def _interchange(loop: Loop, facts, read_outside: set[int]) -> Loop | None:
    """``for i: for j: body`` whose ``i`` iterations touch only their own elements (each
    array written is indexed by ``i`` the same way at every access, ``y[i, j] =
    f(y[i, j - 1])``): ``for j: for i: body`` is the same loop, and its inner loop may become
    array operations over ``i`` (a recurrence along ``j``, run over all the lines at once).
    The interchanged nest becomes ``loop.vector``, run where every guard holds at the four
    corners (no error can come, in either order); None where this does not apply."""
    if len(loop.body) != 1 or not isinstance(loop.body[0], Loop):
        return None
    inner = loop.body[0]
    if inner.vector is not None or not inner.body:
        return None
    if not all(isinstance(s, Block) for s in inner.body):
        return None
    if any(loop.var in free_symbols(d) for d in (inner.start, inner.stop)):
        return None
    try:
        own_elements(_merge(list(inner.body)), loop.var, read_outside)
    except Refused:
        return None
    guards = [*loop.guards, *inner.guards]
    at_j = inner.at_ends(guards)
    corners = None if at_j is None else loop.at_ends(at_j)
    if corners is None:
        return None
    known = ShapeContext(facts=facts)
    when = [g for g in dict.fromkeys(corners) if known.known(g.expr, g.rel, 0) is not True]
    swapped = Loop(loop.var, loop.start, loop.stop, loop.step, inner.body, tuple(guards))
    outer = Loop(inner.var, inner.start, inner.stop, inner.step, (swapped,))
    (outer,) = _steps((outer,), facts, _Fixed(read_outside))
    if outer.body[0].vector is None:
        return None
    what = f"interchanged: the loop over {inner.var} outside, over {loop.var} inside"
    return replace(loop, vector=outer, when=tuple(when), decision=f"{loop.decision}; {what}")


def _lines(loop: Loop, facts) -> Loop:
    """A host loop whose body only carries each line's own values (a recurrence along
    independent lines: ``y[:, j] = f(y[:, j - 1])``) gets ``lines``, its body as one block that
    a target may run inside one kernel; the decision says so, or why not."""
    blocks, whens = [], []
    for s in loop.body:  # blocks, and inner loops run as array operations (an interchange's)
        if isinstance(s, Loop) and isinstance(s.vector, Block):
            blocks.append(s.vector)
            whens += s.when
        elif isinstance(s, Block):
            blocks.append(s)
        else:
            return loop
    ends = loop.at_ends([*loop.guards, *whens])  # (inner loops' forms hold at every step)
    if not blocks or ends is None:
        return loop
    merged = _merge(blocks)
    known = ShapeContext(facts=facts)

    def same(a, b):
        return all(known.known(x - y, "==", 0) is True for x, y in zip(a, b))

    try:
        independent_lines(merged, loop.var, same)
    except Refused as e:
        return replace(loop, decision=f"{loop.decision}; not one kernel on the GPU: {e}")
    graph = merged.graph  # (it relies on the inner loops' forms holding: the ends check it)
    graph = replace(graph, guards=tuple(dict.fromkeys([*graph.guards, *whens])))
    block = Block(graph, tuple(h for h, _ in merged.inputs), tuple(h for h, _ in merged.outputs))
    why = "a recurrence along independent lines: one kernel that loops inside on the CUDA target"
    return replace(loop, lines=block, ends=tuple(ends), decision=f"{loop.decision}; {why}")


def _merge(blocks) -> Merged:
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
    return Merged(graph, inputs, outputs)
