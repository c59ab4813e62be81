"""The one printed form of a Graph, for humans (and for ``explain`` later).

    { lambda x:f64[x.0,x.1] y:f64[x.1,x.0] .
      let a:f64[x.0] = sum[axes=(1,)] x
          b:f64[x.0] = sin a
          c:f64[x.0,x.1] = transpose[perm=(1, 0)] y
          d:f64[x.0,x.1] = exp c
          e:f64[x.0,1] = expand_dims[axes=(1,)] b
          f:f64[x.0,x.1] = multiply e d
      in (f) }

Inputs keep their names; other values are named a, b, ..., z, ba, bb, ... in order of definition.
Attributes that are None or False are omitted. Constants are listed after ``consts``, guards after
``where``.
"""

from __future__ import annotations

import dataclasses
import string

import numpy as np

from . import ir
from .dtypes import short_name
from .ir import Graph, Literal, Var
from .symbolic import Expr, free_symbols


def _names(taken: set[str]):
    letters = string.ascii_lowercase
    i = 0
    while True:
        n, name = i, ""
        while True:
            name = letters[n % 26] + name
            n //= 26
            if n == 0:
                break
        i += 1
        if name not in taken:
            yield name


def format_attr(value) -> str:
    if isinstance(value, np.dtype):
        return short_name(value)
    if isinstance(value, tuple):
        inner = ", ".join(format_attr(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, Expr):
        return str(value)
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def symbols_in(value, out: set) -> set:
    """Size symbols mentioned in a type, an attribute or a literal (so names avoid them)."""
    if isinstance(value, Expr):
        out |= free_symbols(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            symbols_in(v, out)
    elif isinstance(value, dict):
        symbols_in(tuple(value.values()), out)
    elif isinstance(value, slice):
        symbols_in((value.start, value.stop, value.step), out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            symbols_in(getattr(value, f.name), out)
    return out


def value_names(graph: Graph) -> dict[int, str]:
    """id(value) -> its printed name: inputs by name, the rest a, b, ... in order of definition
    (avoiding size-symbol names)."""
    taken = set(graph.input_names)
    for v in graph.inputs:
        symbols_in(v.type.shape, taken)
    for eqn in graph.eqns:
        symbols_in(eqn.attrs, taken)
        symbols_in(eqn.out.type.shape, taken)
        for a in eqn.inputs:
            if isinstance(a, Literal):
                symbols_in(a.value, taken)
    fresh = _names(taken)
    names: dict[int, str] = {id(v): v.name for v in graph.inputs}
    for v, _ in graph.consts:
        names[id(v)] = next(fresh)
    for eqn in graph.eqns:
        names[id(eqn.out)] = next(fresh)
    return names


def format_graph(graph: Graph, names: dict[int, str] | None = None) -> str:
    """The printed graph; ``names`` (from value_names of a larger graph) names a kernel's body
    as the graph it was cut from."""
    names = value_names(graph) if names is None else names

    def name(atom) -> str:
        if isinstance(atom, Literal):
            return str(atom)
        return names.get(id(atom), f"<undefined {atom!r}>")

    def define(v: Var) -> str:
        return f"{name(v)}:{v.type}"

    header = " ".join(f"{name(v)}:{v.type}" for v in graph.inputs)
    lines = [f"{{ lambda {header} ." if header else "{ lambda ."]
    if graph.consts:
        lines.append("  consts " + " ".join(define(v) for v, _ in graph.consts))
    body = []
    for eqn in graph.eqns:
        shown = [f"{k}={format_attr(v)}" for k, v in eqn.attrs if v is not None and v is not False]
        op = f"{eqn.op}[{' '.join(shown)}]" if shown else eqn.op
        args = " ".join(name(a) for a in eqn.inputs)
        body.append(f"{define(eqn.out)} = {op} {args}".rstrip())
    for i, text in enumerate(body):
        lines.append(("  let " if i == 0 else "      ") + text)
    outs = ", ".join(name(a) for a in graph.outputs)
    lines.append(f"  in ({outs}) }}")
    if graph.guards:
        lines.append("  where " + ", ".join(str(g) for g in graph.guards))
    return "\n".join(lines)


ir.FORMAT_GRAPH[:] = [format_graph]
