"""The Function IR: blocks of op graphs joined by host control flow.

A Python function becomes:

* ``params``: arrays (typed inputs), integers (size symbols: ``range(n)``, ``A[:n]``), scalars
  known only at run time (weak Python floats, NumPy scalars), and constants it was specialized on
  (bools, strings, None);
* ``body``: a sequence of steps. A ``Block`` runs a pure ``Graph``: it reads host variables into
  the graph's inputs and writes the graph's outputs into host variables. A ``Loop`` runs its body
  for each value of a loop symbol (``for i in range(start, stop, step)``; ``i`` is a size symbol
  inside, so ``A[i, :]`` is a slice with a symbolic bound). A ``Branch`` runs one of two bodies on
  a scalar known only at run time (``if alpha > 0``); conditions known at compile time were
  decided (and guarded) while tracing. A ``While`` runs its body while a condition computed
  before each iteration holds;
* ``result``: what the function returns, ``writebacks``: argument arrays written in place (their
  final value is copied into the caller's array), ``guards``: the size facts the trace relied on.

Host variables are typed (a loop-carried variable keeps one type across iterations). Passes work
on the graphs of blocks; the host program is small and is interpreted here (emitters will
render it as Python).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .errors import ExecutionError, InternalError, PyptoError
from .executor import execute, resolve
from .printer import format_graph
from .shapes import Guard, input_facts, make_guard
from .symbolic import Dim, affine, evaluate, floordiv, format_dim, free_symbols, substitute
from .types import TensorType
from .verify import verify


@dataclass(frozen=True, eq=False)
class HostVar:
    name: str
    type: TensorType

    def __repr__(self):
        return f"{self.name}:{self.type}"


@dataclass(frozen=True, eq=False)
class Block:
    graph: Any  # Graph
    inputs: tuple[HostVar, ...]  # graph.inputs[i] reads inputs[i]
    outputs: tuple[HostVar, ...]  # graph.outputs[i] is written to outputs[i]


@dataclass(frozen=True, eq=False)
class Loop:
    var: str  # the loop symbol
    start: Dim
    stop: Dim
    step: int
    body: tuple
    guards: tuple[Guard, ...] = ()  # they mention the loop symbol: checked at each iteration
    # passes/loops.py: the whole loop as one block of array operations over a new axis (or,
    # for a nest, the interchanged nest: a Loop), run instead of the iterations when ``when``
    # holds (its sizes and bounds at both ends)
    vector: Block | Loop | None = None
    when: tuple[Guard, ...] = ()
    decision: str = ""  # how the loop runs, and why (explain)
    # passes/loops.py: a recurrence whose lines are independent: the body as one block whose
    # iterations a target may run inside one kernel (each thread one line, all iterations)
    lines: Block | None = None
    # the guards at both ends (``at_ends``: where they hold, every iteration's do), checked
    # once before the loop (with ``lines``, the inner loops' forms at both ends too: the one
    # kernel runs only where they hold); None: each iteration checks its own
    ends: tuple[Guard, ...] | None = None
    # ``break`` under a run-time condition: the body writes whether it broke here (a Python
    # bool), checked after each iteration (parse/returns.py)
    until: HostVar | None = None

    def count(self) -> Dim:
        """How many iterations the range has (when it is not empty)."""
        span = self.stop - self.start if self.step > 0 else self.start - self.stop
        s = abs(self.step)
        return span if s == 1 else floordiv(span + s - 1, s)

    def at_ends(self, guards) -> list[Guard] | None:
        """``guards`` at the first and the last iteration: where those hold (and the range is
        not empty), every iteration's hold (each is linear in the loop variable). None when
        one is not linear, or is a ``!=`` on the variable (it may fail between the ends)."""
        last = self.start + self.step * (self.count() - 1)
        out = []
        for g in guards:
            if self.var not in free_symbols(g.expr):
                out.append(g)
                continue
            if affine(g.expr, self.var) is None or g.rel == "!=":
                return None
            for at in (self.start, last):
                at_end = make_guard(substitute(g.expr, self.var, at), g.rel, 0)
                out.append(replace(at_end, breach=None))
        return out

    def facts(self) -> list[Guard]:
        """What the range guarantees inside the body."""
        from .symbolic import Sym

        i = Sym(self.var, nonneg=False)
        if self.step > 0:
            return [make_guard(i, ">=", self.start), make_guard(self.stop - 1, ">=", i)]
        return [make_guard(self.start, ">=", i), make_guard(i, ">=", self.stop + 1)]


@dataclass(frozen=True, eq=False)
class Branch:
    cond: HostVar
    then: tuple
    orelse: tuple
    fact: Guard | None = None  # a size comparison (``i > 0``): a fact in then, its negation in else
    then_guards: tuple[Guard, ...] = ()  # checked when that side runs (they mention loop symbols)
    else_guards: tuple[Guard, ...] = ()

    def facts(self, side: str) -> list[Guard]:
        if self.fact is None:
            return []
        return [self.fact] if side == "then" else [self.fact.negated()]


@dataclass(frozen=True, eq=False)
class While:
    """``while <test>: <body>``: before each iteration ``test`` runs and writes the truth of
    the condition into ``cond`` (a Python bool known only at run time); the loop ends where it
    is false. Names the body re-assigns are carried in host variables of one type, as in a
    ``Loop``."""

    test: tuple
    cond: HostVar
    body: tuple
    until: HostVar | None = None  # as Loop.until


@dataclass(frozen=True, eq=False)
class Bind:
    """A size the values decide (``x[mask]``, ``np.nonzero``, ``x[ptr[i]:ptr[i + 1]]``): the
    symbol ``var`` takes the size of axis ``axis`` of the host variable ``source`` (the value
    just computed), at most ``bound`` (what the cost model assumes). ``guards`` are the size
    facts the code after it relies on that mention the symbol, checked here."""

    var: str
    source: HostVar
    axis: int
    bound: Dim
    guards: list  # (filled while the code after it is traced: shapes.ShapeContext.bind)
    what: str = ""  # the expression, as the source writes it (messages, explain)
    restart: bool = False  # where its guards fail, the original runs instead (mark_restarts)


@dataclass(frozen=True, eq=False)
class Fail:
    """Code that can only raise (a shape error in a branch or loop body that may never run):
    the error is raised if the run reaches it, as NumPy would raise there."""

    error: Exception


@dataclass(frozen=True, eq=False)
class Param:
    name: str
    kind: str  # "array" | "int" | "scalar" | "const"
    type: TensorType | None = None  # array, scalar
    value: Any = None  # const
    host: HostVar | None = None  # array, scalar: the host variable holding the argument

    def __repr__(self):
        if self.kind == "const":
            return f"{self.name}={self.value!r}"
        if self.kind == "int":
            return f"{self.name}:int"
        return f"{self.name}:{self.type}"


@dataclass(frozen=True, eq=False)
class Function:
    name: str
    params: tuple[Param, ...]
    body: tuple
    result: Any  # see Result below
    writebacks: tuple[tuple[str, HostVar], ...]
    guards: tuple[Guard, ...]
    keyword_only: tuple[str, ...] = ()  # parameters passed by keyword (calling the original)

    def __str__(self):
        return format_function(self)


# The result is a nested structure of: ("host", HostVar), ("param", name), ("dim", Dim),
# ("const", value), ("tuple", (items...)).
Result = tuple


# -- printing -------------------------------------------------------------------------------------
def format_function(fn: Function) -> str:
    lines = [f"def {fn.name}({', '.join(repr(p) for p in fn.params)}):"]
    _format_steps(fn.body, lines, "    ")
    for name, hv in fn.writebacks:
        lines.append(f"    {name}[...] = {hv.name}  # written back into the argument")
    lines.append(f"    return {_format_result(fn.result)}")
    if fn.guards:
        lines.append("  where " + ", ".join(str(g) for g in fn.guards))
    return "\n".join(lines)


def _format_steps(steps, lines, indent):
    for step in steps:
        if isinstance(step, Block):
            outs = ", ".join(h.name for h in step.outputs) or "_"
            ins = ", ".join(h.name for h in step.inputs)
            lines.append(f"{indent}{outs} = block({ins}):")
            lines.extend(indent + "    " + line for line in format_graph(step.graph).split("\n"))
        elif isinstance(step, Bind):
            note = f"  # assumes {', '.join(str(g) for g in step.guards)}" if step.guards else ""
            lines.append(f"{indent}{step.var} = {step.source.name}.shape[{step.axis}]{note}")
        elif isinstance(step, Fail):
            message = str(step.error).split("\n")[0]
            lines.append(f"{indent}raise {type(step.error).__name__}({message!r})")
        elif isinstance(step, While):
            lines.append(f"{indent}while True:")
            _format_steps(step.test, lines, indent + "    ")
            lines.append(f"{indent}    if not {step.cond.name}:")
            lines.append(f"{indent}        break")
            _format_steps(step.body, lines, indent + "    ")
            _format_until(step, lines, indent)
        elif isinstance(step, Loop):
            rng = f"{format_dim(step.start)}, {format_dim(step.stop)}, {step.step}"
            if step.vector is not None:
                when = " and ".join(str(g) for g in step.when) or "True"
                lines.append(f"{indent}if {when}:  # the loop over {step.var}: {step.decision}")
                _format_steps((step.vector,), lines, indent + "    ")
                lines.append(f"{indent}else:")
                indent += "    "
            note = f"  # {step.decision}" if step.decision and step.vector is None else ""
            lines.append(f"{indent}for {step.var} in range({rng}):{note}")
            if step.guards:
                lines.append(f"{indent}    # assumes {', '.join(str(g) for g in step.guards)}")
            _format_steps(step.body, lines, indent + "    ")
            if not step.body:
                lines.append(f"{indent}    pass")
            _format_until(step, lines, indent)
        else:
            lines.append(f"{indent}if {step.cond.name}:")
            _format_steps(step.then, lines, indent + "    ")
            if not step.then:
                lines.append(f"{indent}    pass")
            if step.orelse:
                lines.append(f"{indent}else:")
                _format_steps(step.orelse, lines, indent + "    ")


def _format_until(loop, lines, indent) -> None:
    if loop.until is not None:
        lines.append(f"{indent}    if {loop.until.name}:")
        lines.append(f"{indent}        break")


def _format_result(result) -> str:
    kind, value = result
    if kind == "tuple":
        items = ", ".join(_format_result(r) for r in value)
        return f"({items}{',' if len(value) == 1 else ''})"
    if kind == "host":
        return value.name
    if kind == "dim":
        return format_dim(value)
    return repr(value) if kind == "const" else value


# -- verification ---------------------------------------------------------------------------------
def verify_function(fn: Function) -> Function:
    """verify() every block with the facts that hold where it runs; check host variable types."""
    array_types = [p.type for p in fn.params if p.kind == "array"]
    base = [*input_facts(array_types), *fn.guards]
    _verify_steps(fn.body, base)
    for name, hv in fn.writebacks:
        param = next(p for p in fn.params if p.name == name)
        if param.type != hv.type:
            raise InternalError(f"writeback of {name}: {hv.type} into {param.type}")
    return fn


def _verify_steps(steps, facts):
    for step in steps:
        if isinstance(step, Block):
            g = step.graph
            if [v.type for v in g.inputs] != [h.type for h in step.inputs] or [
                a.type for a in g.outputs
            ] != [h.type for h in step.outputs]:
                raise InternalError("block inputs/outputs do not match their host variables")
            verify(g, facts=facts)
        elif isinstance(step, Bind):  # what the code after it relies on, checked here
            facts = [*facts, *step.guards]
        elif isinstance(step, Fail):
            continue
        elif isinstance(step, While):
            _verify_steps(step.test, facts)
            _verify_steps(step.body, facts)
        elif isinstance(step, Loop):
            _verify_steps(step.body, [*facts, *step.facts(), *step.guards])
            if step.vector is not None:
                _verify_steps((step.vector,), [*facts, *step.when])
            if step.lines is not None:
                _verify_steps((step.lines,), [*facts, *step.facts(), *step.guards])
        else:
            _verify_steps(step.then, [*facts, *step.facts("then"), *step.then_guards])
            _verify_steps(step.orelse, [*facts, *step.facts("else"), *step.else_guards])


# -- sizes the values decide: where a broken assumption can run the original instead --------------
def mark_restarts(fn: Function) -> Function:
    """``fn`` with ``restart`` set on the ``Bind`` steps before which nothing can have written
    into an argument: where an assumption about their size breaks (``x[mask][:1]`` of an empty
    selection, a selection of one element broadcast against more), the original function runs
    from the start instead of PyPTO's error, which gives NumPy's result. A block that stores
    into anything while an argument is among its inputs counts as a write (conservatively);
    so does every step of an enclosing loop's body (an earlier iteration ran it). Writebacks
    come at the end."""
    params = {id(p.host) for p in fn.params if p.host is not None}

    def writes(step) -> bool:
        if isinstance(step, Block):
            return any(e.op == "store" for e in step.graph.eqns) and any(
                id(h) in params for h in step.inputs
            )
        if isinstance(step, Branch):
            return any(map(writes, step.then)) or any(map(writes, step.orelse))
        if isinstance(step, While):
            return any(map(writes, (*step.test, *step.body)))
        if isinstance(step, Loop):
            return any(map(writes, step.body))
        return False  # (Bind, Fail)

    def walk(steps, clean: bool) -> tuple:
        out = []
        for step in steps:
            if isinstance(step, Bind) and clean:
                step = replace(step, restart=True)
            elif isinstance(step, Branch):
                step = replace(step, then=walk(step.then, clean), orelse=walk(step.orelse, clean))
            elif isinstance(step, While):
                inside = clean and not writes(step)
                step = replace(step, test=walk(step.test, inside), body=walk(step.body, inside))
            elif isinstance(step, Loop):
                step = replace(step, body=walk(step.body, clean and not writes(step)))
            out.append(step)
            clean = clean and not writes(step)
        return tuple(out)

    return replace(fn, body=walk(fn.body, True))


class RunOriginal(Exception):
    """Raised by the interpreter where a restartable Bind's assumption breaks (``mark_restarts``):
    ``run_function`` runs the original function, or raises ``error`` where it has none."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


# -- execution ------------------------------------------------------------------------------------
def run_function(
    fn: Function,
    args: dict,
    env: dict,
    run_block=None,
    run_lines=None,
    write=None,
    run_loop=None,
    original=None,
):
    """Run ``fn`` on bound arguments (name -> value) with size-symbol values ``env``; performs
    the writebacks into argument arrays and returns the function's result. ``run_block(block,
    values, env)`` runs one block (default: its graph on the reference executor);
    ``run_lines(loop, values, env)`` a loop's ``lines`` block with the iterations inside its
    kernel (``env`` has the range as ``_lo``, ``_hi``), or None where the target cannot.
    ``write(target, final)`` writes an argument's final value into it (default: np.copyto).
    ``run_loop(loop, host, env)`` may run a whole loop (True), else (False) it runs here.
    ``original``: the user's function, run instead where a size the values decide breaks an
    assumption before anything was written (``mark_restarts``)."""
    host: dict[int, object] = {id(p.host): args[p.name] for p in fn.params if p.host is not None}
    env = dict(env)  # (sizes the values decide are bound as the run goes: Bind)
    try:
        _run_steps(fn.body, host, env, run_block or _reference, run_lines, run_loop)
    except RunOriginal as e:  # (nothing written yet: mark_restarts)
        if original is None:
            raise e.error from None
        keyword = set(fn.keyword_only)
        return original(
            *(args[p.name] for p in fn.params if p.name not in keyword),
            **{k: args[k] for k in fn.keyword_only},
        )
    except PyptoError:  # the writes made before the error are made, as NumPy makes them
        _write_back(fn, host, args, write)
        raise
    _write_back(fn, host, args, write)
    return _result(fn.result, host, args, env)


def _write_back(fn: Function, host: dict, args: dict, write=None) -> None:
    for name, hv in fn.writebacks:
        final, target = host.get(id(hv)), args[name]
        if final is not None and final is not target:
            if write is not None:
                write(target, final)
            else:
                np.copyto(target, final, casting="unsafe")


def _reference(block, values, env):
    return execute(block.graph, values, env)


def _run_steps(steps, host, env, run_block, run_lines=None, run_loop=None):
    for step in steps:
        if isinstance(step, Block):
            try:
                values = [host[id(h)] for h in step.inputs]
            except KeyError:
                missing = [h.name for h in step.inputs if id(h) not in host]
                raise ExecutionError(
                    f"{', '.join(missing)} used before assignment (a loop that ran zero times "
                    "or a branch that did not assign it)"
                ) from None
            try:
                results = run_block(step, values, env)
            except PyptoError as e:  # what the block computed before the error
                for i, v in getattr(e, "partial", {}).items():
                    host[id(step.outputs[i])] = v
                raise
            for h, v in zip(step.outputs, results):
                host[id(h)] = v
        elif isinstance(step, Bind):
            env[step.var] = int(host[id(step.source)].shape[step.axis])
            try:
                _check(step.guards, env, f"the size of {step.what}")
            except PyptoError as e:
                if step.restart:
                    raise RunOriginal(e) from None
                raise
        elif isinstance(step, Fail):
            e = step.error
            raise type(e)(e.message, hint=e.hint, site=e.site, code=e.code)
        elif isinstance(step, While):
            while True:
                _run_steps(step.test, host, env, run_block, run_lines, run_loop)
                if not bool(host[id(step.cond)]):
                    break
                _run_steps(step.body, host, env, run_block, run_lines, run_loop)
                if step.until is not None and bool(host[id(step.until)]):
                    break
        elif isinstance(step, Loop):
            if step.vector is not None and all(g.holds(env) for g in step.when):
                _run_steps((step.vector,), host, env, run_block, run_lines, run_loop)
                continue
            if run_loop is not None and run_loop(step, host, env):
                continue
            start, stop = evaluate(step.start, env), evaluate(step.stop, env)
            if step.lines is not None and run_lines is not None:
                ends = step.ends
                if ends is not None and all(g.holds(env) for g in ends):
                    values = [host[id(h)] for h in step.lines.inputs]
                    results = run_lines(step, values, {**env, "_lo": start, "_hi": stop})
                    if results is not None:
                        for h, v in zip(step.lines.outputs, results):
                            host[id(h)] = v
                        continue
            for i in range(start, stop, step.step):
                env[step.var] = i
                _check(step.guards, env, f"at {step.var} = {i} the loop")
                _run_steps(step.body, host, env, run_block, run_lines, run_loop)
                if step.until is not None and bool(host[id(step.until)]):
                    break
            env.pop(step.var, None)
        elif bool(host[id(step.cond)]):
            _check(step.then_guards, env, "this branch")
            _run_steps(step.then, host, env, run_block, run_lines, run_loop)
        else:
            _check(step.else_guards, env, "this branch")
            _run_steps(step.orelse, host, env, run_block, run_lines, run_loop)


def _check(guards, env, where: str) -> None:
    for g in guards:
        if not g.holds(env):
            if g.breach is not None:  # NumPy raises here too (an index past the end)
                raise g.breach.exception([evaluate(d, env) for d in g.breach.dims])
            shown = ", ".join(f"{k} = {v}" for k, v in env.items() if k in str(g))
            raise ExecutionError(
                f"{where} breaks an assumption PyPTO made when compiling it: {g} ({shown})",
                hint="indices that depend on a loop variable must stay in bounds and keep their "
                "sign (write A[i - 1] only where i >= 1)",
            )


def _result(result, host, args, env):
    kind, value = result
    if kind == "tuple":
        return tuple(_result(r, host, args, env) for r in value)
    if kind == "host":
        return host[id(value)]
    if kind == "param":
        return args[value]
    if kind == "dim":
        return resolve(value, env)
    return value


def guards_hold(fn: Function, env) -> bool:
    return all(g.holds(env) for g in fn.guards)
