"""A Plan kernel lowered once, for every target: what it reads, computes, stores and combines.

* ``loads``: each view the body computes from a value it reads from memory (an input, or a
  value computed whole beforehand), resolved through the whole chain of views into one read:
  that value and the composed index map (the chain's rules composed, pypto/lower/index_map.py);
* ``values``: the equations that compute, in order (views are not among them: they are reads);
* ``stores``: each slice assignment the kernel writes, with the map from its region to the
  positions it writes;
* ``combines``: each reduction and scan with the binary ufunc that combines partial results,
  its identity (NumPy's: None where an empty reduction raises, max and min) and the value an
  accumulator starts from.

The CUDA target renders a load at a point (one index expression, ``point``), the NumPy target
over an interval (one subscript of the source, ``interval`` and emit/views.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Var
from ..registry import REGISTRY
from .families import family
from .index_map import IndexMap, compose, getitem_map, view_map


@dataclass(frozen=True)
class Load:
    value: Var  # the view
    source: Var  # what it reads from memory
    map: IndexMap  # the view's index -> the source's index
    chain: tuple  # the view equations, outermost first


@dataclass(frozen=True)
class Combine:
    ufunc: np.ufunc  # combines two partial results
    identity: object  # NumPy's identity (None: an empty reduction raises)
    start: object  # what an accumulator starts from (the identity, else the dtype's extreme)


@dataclass(frozen=True)
class LoweredKernel:
    loads: dict  # id(view) -> Load
    values: tuple  # the computing equations, in order
    stores: tuple  # (StoreOut, IndexMap: region -> positions)
    combines: dict  # id(reduction or scan equation's output) -> Combine


def combine_of(e) -> Combine:
    """How a reduction or scan equation combines partial results, in its accumulator's type."""
    op = REGISTRY[e.op]
    ufunc = op.combine if op.kind == "reduce" else op.scan_step
    dtype = e.inputs[0].type.dtype if ufunc in (np.maximum, np.minimum) else e.out.type.dtype
    if ufunc.identity is not None:
        return Combine(ufunc, ufunc.identity, ufunc.identity)
    return Combine(ufunc, None, _extreme(dtype, low=ufunc is np.maximum))


def _extreme(dtype, low: bool):
    if dtype.kind == "f":
        return -np.inf if low else np.inf
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return int(info.min if low else info.max)


def lower_kernel(k, same, memory=frozenset()) -> LoweredKernel:
    """``k`` lowered; ``memory``: ids of values the kernel reads from memory besides its
    inputs (computed whole before it)."""
    prod = {id(e.out): e for e in k.body.eqns}
    sources = {id(v) for v in k.inputs} | set(memory)
    loads: dict = {}

    def load(v):
        """The composed read of view ``v``, or None where its chain does not end in memory."""
        if id(v) in loads:
            return loads[id(v)]
        e = prod.get(id(v))
        if e is None or id(v) in sources or family(e) != "index" or e.op == "store":
            return None
        m = view_map(e, same)
        a = e.inputs[0]
        if not isinstance(m, IndexMap) or not isinstance(a, Var):
            return None
        if id(a) in sources:
            found = Load(v, a, m, (e,))
        else:
            inner = load(a)
            if inner is None:
                return None
            found = Load(v, inner.source, compose(m, inner.map), (e, *inner.chain))
        loads[id(v)] = found
        return found

    for e in k.body.eqns:
        load(e.out)
    values = tuple(e for e in k.body.eqns if id(e.out) not in loads)
    stores = tuple((s, getitem_map(s.index, s.out.type.rank)) for s in k.stores)
    combines = {id(e.out): combine_of(e) for e in k.body.eqns if family(e) in ("reduce", "scan")}
    return LoweredKernel(loads, values, stores, combines)


__all__ = ["Combine", "Load", "LoweredKernel", "combine_of", "lower_kernel"]
