"""The IR: a flat SSA graph of equations, jaxpr-like.

    { lambda x:f32[x.0,x.1] .
      let a:f32[x.0] = sum[axes=(1,)] x
          b:f32[x.0] = sin a
      in (b) }

* ``Var``: an SSA value with a ``TensorType``; identity is the object (defined exactly once).
* ``Literal``: a scalar constant inside an equation; weak (a Python number or a symbolic size)
  or strong (a NumPy scalar).
* ``Eqn``: ``out = op[attrs] inputs``; ``op`` names a registry entry; attrs are normalized by
  the entry and hashable; ``site`` is the user's source location (not part of the meaning).
* ``Graph``: inputs (named), constants (arrays), equations in dependency order, outputs, and the
  guards on input sizes under which its shapes hold.

Nodes are frozen; passes build new graphs. ``verify()`` (verify.py) re-derives every type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .shapes import Guard
from .sites import Site
from .types import TensorType

# The printed form of a graph: printer.py puts its ``format_graph`` here when imported
# (``import pypto`` does), so that the IR does not import its printer.
FORMAT_GRAPH: list = [repr]


@dataclass(frozen=True, eq=False)
class Var:
    type: TensorType
    name: str | None = None  # inputs keep their user-facing name

    def __repr__(self):
        return f"Var({self.name or hex(id(self))}:{self.type})"


@dataclass(frozen=True)
class Literal:
    value: Any  # weak: bool | int | float | complex | symbolic Expr; strong: np.generic
    type: TensorType

    def __str__(self):
        v = self.value
        text = repr(v.item()) if isinstance(v, np.generic) else str(v)
        return text if self.type.weak else f"{text}:{self.type}"


Atom = Var | Literal


def freeze_attrs(attrs: dict) -> tuple:
    """Attributes as a sorted tuple of pairs; every value must be hashable (immutable)."""
    items = tuple(sorted(attrs.items()))
    hash(items)
    return items


@dataclass(frozen=True, eq=False)
class Eqn:
    op: str
    inputs: tuple[Atom, ...]
    attrs: tuple  # from freeze_attrs
    out: Var
    site: Site | None = field(default=None, compare=False)

    @property
    def params(self) -> dict:
        return dict(self.attrs)


@dataclass(frozen=True, eq=False)
class Graph:
    inputs: tuple[Var, ...]
    consts: tuple[tuple[Var, np.ndarray], ...]
    eqns: tuple[Eqn, ...]
    outputs: tuple[Atom, ...]
    guards: tuple[Guard, ...] = ()

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.inputs)

    def __str__(self):
        return FORMAT_GRAPH[0](self)
