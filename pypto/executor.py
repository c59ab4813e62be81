"""The reference executor: runs a Graph op by op with each op's NumPy implementation.

It is the oracle later backends are compared with, so it checks itself: every value it computes
must have exactly the dtype and shape the rules recorded (a mismatch is a bug in a rule, raised as
InternalError, never a silently different answer). Errors NumPy raises while computing (a
zero-size maximum, an integer to a negative power) are re-raised as ExecutionError naming the op
and the user's source line.
"""

from __future__ import annotations

import weakref

import numpy as np

from .errors import ExecutionError, InternalError, PyptoError, execution_error
from .ir import Graph, Literal
from .ops.pycode import PYTHON_CODE, python_value
from .registry import REGISTRY
from .shapes import unsized
from .symbolic import Expr, as_symbol, evaluate


def bind_symbols(graph: Graph, values) -> dict[str, int]:
    """Size-symbol values from the shapes of the input values (in graph.inputs order)."""
    env: dict[str, int] = {}
    for var, value in zip(graph.inputs, values):
        for d, n in zip(var.type.shape, np.shape(value)):
            name = as_symbol(d)
            if name is not None:
                env[name] = int(n)
    return env


def resolve(value, env):
    """Attributes with symbolic sizes, made concrete for NumPy (objects such as a normalized
    slice say how, with a ``resolve(env)`` method)."""
    if isinstance(value, Expr):
        return evaluate(value, env)
    if isinstance(value, tuple):
        return tuple(resolve(v, env) for v in value)
    if hasattr(value, "resolve"):
        return value.resolve(env)
    return value


def execute(graph: Graph, values: list, env: dict[str, int] | None = None) -> list:
    """Run ``graph`` on input ``values`` (in graph.inputs order); returns the output values."""
    if env is None:
        env = bind_symbols(graph, values)
    vals: dict[int, object] = {id(v): x for v, x in zip(graph.inputs, values)}
    for v, array in graph.consts:
        vals[id(v)] = array

    def get(atom):
        if isinstance(atom, Literal):
            return resolve(atom.value, env)
        return vals[id(atom)]

    last = last_uses(graph)
    for i, eqn in enumerate(graph.eqns):
        op = REGISTRY[eqn.op]
        args = [get(a) for a in eqn.inputs]
        for v in last.get(i, ()):  # free what nothing reads any more, as eager NumPy would
            del vals[v]
        attrs = {k: resolve(_unbound(eqn, k, v), env) for k, v in eqn.attrs if k != "weak"}
        weak = eqn.out.type.weak and eqn.op in PYTHON_CODE  # Python arithmetic, as Python does it
        try:
            if weak:
                result = python_value(eqn.op, args, eqn.out.type.dtype)
            else:
                result = op.impl(*args, **attrs)
        except PyptoError as e:
            e.partial = _computed(graph, vals)
            raise e.with_context(f"running `{_shown(eqn)}`", eqn.site) from None
        except Exception as e:  # NumPy's own errors: keep the message, add where it happened
            error = execution_error(
                e, f"running `{_shown(eqn)}`: {type(e).__name__}: {e}", site=eqn.site
            )
            error.partial = _computed(graph, vals)
            raise error from e
        if not weak:  # (Python's result is converted to the equation's Python type)
            _check(eqn, result, env)
        if eqn.out.type.weak and not weak:  # Python arithmetic gives Python numbers
            result = result.item()
        vals[id(eqn.out)] = result
    return [get(a) for a in graph.outputs]


def _unbound(eqn, key, value):
    """A graph break's result shape with the sizes its values decide left out (their symbols
    are bound after it has run: function.Bind)."""
    if key == "out_shape" and eqn.op == "host_call":
        return unsized(value, dict(eqn.attrs)["sized"])
    return value


def _shown(eqn) -> str:
    """The op as the source wrote it (a graph break: the function it calls)."""
    return eqn.params["name"] if eqn.op == "host_call" else eqn.op


def _computed(graph: Graph, vals: dict) -> dict[int, object]:
    """Output index -> value, for the outputs computed before an error (NumPy has made those
    writes into its arguments when it raises)."""
    return {
        i: vals[id(a)]
        for i, a in enumerate(graph.outputs)
        if not isinstance(a, Literal) and id(a) in vals
    }


_LAST_USES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def last_uses(graph: Graph) -> dict[int, list[int]]:
    """Equation index -> ids of the values it is the last reader of (outputs never die)."""
    if graph in _LAST_USES:
        return _LAST_USES[graph]
    seen: set[int] = {id(a) for a in graph.outputs if not isinstance(a, Literal)}
    last: dict[int, list[int]] = {}
    for i in range(len(graph.eqns) - 1, -1, -1):
        for a in graph.eqns[i].inputs:
            if not isinstance(a, Literal) and id(a) not in seen:
                seen.add(id(a))
                last.setdefault(i, []).append(id(a))
    _LAST_USES[graph] = last
    return last


def _check(eqn, result, env):
    t = eqn.out.type
    dtype = getattr(result, "dtype", None)
    shape = tuple(np.shape(result))
    want = t.concrete_shape(env)
    if dtype != t.dtype or shape != want:
        kind = "user operator" if not REGISTRY[eqn.op].builtin else "op"
        raise (ExecutionError if kind == "user operator" else InternalError)(
            f"{kind} `{eqn.op}` returned {dtype} {shape}, its rules say {t.dtype} {want}",
            site=eqn.site,
            hint="give register_operator an explicit shape= and dtype=" if kind != "op" else None,
        )
