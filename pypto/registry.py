"""The op registry: one ``OpDef`` per op, read by every layer (API, executor, passes, emitters).

An entry says what the op *is* (kind), how it is called (``api``, whose signature is the op's
public signature, also used to bind NumPy calls), how it types (``normalize`` for attributes, a
shape rule and a dtype rule) and how NumPy computes it (``impl``). Composite ops carry an
``expand`` written with other ops instead of rules; they never appear in a graph.

Kinds: ``map`` (elementwise, broadcasting), ``reduce``, ``scan``, ``reorder`` (pure index maps),
``contract`` (matrix products), ``custom`` (user operators that are not elementwise; user
operators declared elementwise are ``map``), ``composite``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import RegistryError
from .ops.pycode import python_dtype
from .shapes import ShapeContext
from .types import TensorType

KINDS = ("map", "reduce", "scan", "reorder", "gather", "contract", "custom", "composite")


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str
    api: Callable  # the public function; its signature is the op's signature
    impl: Callable | None = None  # NumPy implementation: impl(*values, **attrs)
    shape_rule: Callable | None = None  # (ctx, *shapes, **attrs) -> shape
    dtype_rule: Callable | None = None  # (*operand keys, **attrs) -> np.dtype
    normalize: Callable | None = None  # (ctx, *types, **attrs) -> normalized attrs dict
    expand: Callable | None = None  # composites: (*tensors, **attrs) -> Tensor
    numpy: tuple = ()  # the NumPy callables this op stands for
    aliases: tuple[str, ...] = ()
    ufunc: np.ufunc | None = None
    cuda: str | None = None  # scalar C expression for user map operators ({0}, {1}: operands)
    builtin: bool = True
    # reorders: where each result element comes from, ``index_map(eqn, same) -> IndexMap |
    # Linear | Pieces`` (pypto/lower/index_map.py); ``same(shape_a, shape_b)`` decides sizes
    index_map: Callable | None = None
    view: bool = False  # NumPy's result is a view of the first operand (it sees later writes)
    # composites whose result NumPy gives as a view of an operand: ``view_of(args, kwargs)``
    # is its position among the call's arguments, None where this call makes a copy
    view_of: Callable | None = None
    # views NumPy lets one write through: ``write(base, new, **attrs)`` is the base once ``new``
    # is written through the view (the frontend)
    write: Callable | None = None
    # the order of the result's axes in memory from its operands' (passes/layout.py)
    layout: Callable | str | None = None
    # NumPy gives a rank-0 result as a 0-d array (True, or a function of the attributes);
    # None: reorders do, others give a NumPy scalar
    array_0d: bool | Callable | None = None
    scan_step: np.ufunc | None = None  # scans: the binary ufunc between neighbours
    combine: np.ufunc | None = None  # reductions: the binary ufunc combining partial results
    kernel: str | None = None  # contractions: the kind of kernel fusion makes ("attention")
    unfused_bytes: Callable | None = None  # contractions: memory traffic when not fused
    call: Callable | None = None  # the NumPy function generated code calls (default: impl)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise RegistryError(f"op {self.name!r}: unknown kind {self.kind!r}")
        if self.kind == "composite":
            if self.expand is None:
                raise RegistryError(f"composite op {self.name!r} needs an expand function")
        elif self.impl is None or self.shape_rule is None or self.dtype_rule is None:
            raise RegistryError(f"op {self.name!r} needs impl, shape_rule and dtype_rule")
        if self.kind == "reorder" and self.index_map is None:
            raise RegistryError(f"reorder {self.name!r} needs an index_map")

    def infer(self, ctx: ShapeContext, types: tuple[TensorType, ...], attrs: dict):
        """Normalized attributes and the output type, from the input types.

        The attribute ``weak=True`` on a map op of scalars marks *Python* arithmetic (``a * 2``
        on Python numbers, ``math.sqrt``): its result is a Python number, weak like its
        operands, where NumPy's ufunc would return a strong NumPy scalar.
        """
        weak = attrs.get("weak", False)
        if weak:
            attrs = {k: v for k, v in attrs.items() if k != "weak"}
            if self.kind != "map" or any(t.rank for t in types):
                raise RegistryError(f"`{self.name}`: weak=True is for scalar map ops only")
        if self.normalize is not None:
            attrs = self.normalize(ctx, *types, **attrs)
        # (a weak astype converts to its dtype attribute: float(n) of an int is a float)
        py = python_dtype(self.name, [t.key for t in types]) if weak else None
        if self.name == "astype":
            py = None
        dtype = py if py is not None else self.dtype_rule(*(t.key for t in types), **attrs)
        shape = self.shape_rule(ctx, *(t.shape for t in types), **attrs)
        if weak:
            return {**attrs, "weak": True}, TensorType(np.dtype(dtype), (), weak=True)
        return attrs, TensorType(np.dtype(dtype), tuple(shape))

    def returns_array(self, params: dict) -> bool:
        """Whether NumPy gives a rank-0 result of this op as a 0-d array (views, stores,
        ``np.copy``, ``np.full``, ``np.where``) rather than a NumPy scalar (ufuncs,
        reductions): ``array_0d``, a bool or a function of the normalized attributes;
        reorders by default."""
        rule = self.kind == "reorder" if self.array_0d is None else self.array_0d
        return rule(**params) if callable(rule) else bool(rule)


class Registry:
    def __init__(self):
        self._ops: dict[str, OpDef] = {}
        self._alias: dict[str, str] = {}
        self._numpy: dict[int, str] = {}  # id(callable) -> op name
        self._api: dict[int, str] = {}  # id(op.api) -> op name
        self.version = 0  # bumped on every change; part of every trace cache key
        # ufunc.reduce / .accumulate / .outer as ops (set by pypto/ops/ufunc_methods.py, which
        # the lazy API's __array_ufunc__ reaches through here, not by importing it)
        self.ufunc_method = None

    def register(self, op: OpDef, replace: bool = False) -> OpDef:
        for name in (op.name, *op.aliases):
            if not name.isidentifier():
                raise RegistryError(f"op name {name!r} is not a Python identifier")
            existing = self.lookup(name)
            if existing is None:
                continue
            if existing.builtin:
                raise RegistryError(f"{name!r} is a built-in op and cannot be replaced")
            if not replace:
                raise RegistryError(
                    f"an operator named {name!r} is already registered",
                    hint="pass replace=True to register_operator to replace it",
                )
            self.unregister(existing.name)
        self._ops[op.name] = op
        for alias in op.aliases:
            self._alias[alias] = op.name
        for fn in op.numpy:
            self._numpy.setdefault(id(fn), op.name)
        self._api[id(op.api)] = op.name
        self.version += 1
        return op

    def unregister(self, name: str) -> None:
        op = self._ops.get(self._alias.get(name, name))
        if op is None or op.builtin:
            raise RegistryError(f"no user operator named {name!r} to unregister")
        del self._ops[op.name]
        for alias in op.aliases:
            self._alias.pop(alias, None)
        for fn in op.numpy:
            if self._numpy.get(id(fn)) == op.name:
                del self._numpy[id(fn)]
        self._api.pop(id(op.api), None)
        self.version += 1

    def lookup(self, name: str) -> OpDef | None:
        return self._ops.get(self._alias.get(name, name))

    def __getitem__(self, name: str) -> OpDef:
        op = self.lookup(name)
        if op is None:
            raise RegistryError(f"no op named {name!r}", code="PPT502")
        return op

    def __contains__(self, name: str) -> bool:
        return self.lookup(name) is not None

    def for_numpy(self, fn) -> OpDef | None:
        """The op standing for a NumPy callable (np.sin, np.sum, ...), if any."""
        name = self._numpy.get(id(fn))
        return self._ops[name] if name is not None else None

    def for_api(self, fn) -> OpDef | None:
        """The op whose public function ``fn`` is (``ppto.softmax``, a user operator)."""
        name = self._api.get(id(fn))
        return self._ops.get(name) if name is not None else None

    def ops(self) -> list[OpDef]:
        return list(self._ops.values())

    def names(self) -> list[str]:
        """Every public name: op names and aliases."""
        return sorted([*self._ops, *self._alias])


REGISTRY = Registry()
register = REGISTRY.register
