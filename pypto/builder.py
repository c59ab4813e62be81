"""Building a Graph one equation at a time, typing each equation with its registry rules.

The builder is what every front end writes through (the lazy API's tracer now; the libcst front
end later). Errors from the rules get the operands named and the user's source site attached.
"""

from __future__ import annotations

import numpy as np

from .dtypes import python_scalar_type, to_dtype, ufunc_loop, weak_dtype
from .errors import PyptoError, execution_error
from .ir import Atom, Eqn, Graph, Literal, Var, freeze_attrs
from .registry import OpDef
from .shapes import Breach, ShapeContext, size_of
from .sites import Site
from .symbolic import Expr, SymFloat
from .types import TensorType


def literal(value) -> Literal:
    """A scalar constant: Python numbers and symbolic sizes are weak, NumPy scalars strong."""
    if isinstance(value, Expr):
        return Literal(value, TensorType(np.dtype(np.int64), (), weak=True))
    if isinstance(value, SymFloat):
        return Literal(value, TensorType(np.dtype(np.float64), (), weak=True))
    pytype = python_scalar_type(value)
    if pytype is bool:
        return Literal(np.bool_(value), TensorType(np.dtype(bool), ()))
    if pytype is not None:
        return Literal(value, TensorType(weak_dtype(pytype), (), weak=True))
    if isinstance(value, np.generic):
        return Literal(value, TensorType(to_dtype(value.dtype, "scalar constant"), ()))
    raise TypeError(f"not a scalar constant: {value!r}")


class GraphBuilder:
    def __init__(self, ctx: ShapeContext):
        self.ctx = ctx
        self.inputs: list[Var] = []
        self.consts: list[tuple[Var, np.ndarray]] = []
        self.eqns: list[Eqn] = []
        self.labels: dict[int, str] = {}  # id(Var) -> how errors name it
        self.site: Site | None = None  # the user site of what is being built
        self.tensors: list = []  # weak references to the api.Tensor objects made here

    def add_input(self, name: str, type: TensorType) -> Var:
        v = Var(type, name)
        self.inputs.append(v)
        self.labels[id(v)] = name
        return v

    def add_const(self, array: np.ndarray) -> Var:
        a = np.asarray(array)
        v = Var(TensorType(to_dtype(a.dtype, "constant array"), tuple(int(d) for d in a.shape)))
        self.consts.append((v, a))
        self.labels[id(v)] = "constant" + self.ctx.show(a.shape)
        return v

    def label(self, atom: Atom) -> str:
        if isinstance(atom, Literal):
            return str(atom)
        return self.labels.get(id(atom), "value")

    def describe(self, atom: Atom) -> str:
        t = atom.type
        return f"{self.label(atom)}: {t.dtype} {self.ctx.show(t.shape)}"

    def apply(self, op: OpDef, inputs: tuple[Atom, ...], attrs: dict) -> Var:
        try:
            norm, out_type = op.infer(self.ctx, tuple(a.type for a in inputs), attrs)
        except PyptoError as e:
            operands = ", ".join(self.describe(a) for a in inputs)
            prefix = f"`{op.name}` of {operands}" if operands else f"`{op.name}`"
            raise e.with_context(prefix, self.site) from None
        _python_ints_fit(op, inputs, self.site)
        self._negative_powers(op, inputs, out_type)
        out = Var(out_type)
        self.eqns.append(Eqn(op.name, tuple(inputs), freeze_attrs(norm), out, self.site))
        args = ", ".join(self.label(a) for a in inputs)
        text = f"{op.name}({args})"
        self.labels[id(out)] = text if len(text) <= 48 else f"{op.name}(...)"
        return out

    def _negative_powers(self, op: OpDef, inputs, out_type) -> None:
        """An integer to a constant negative power is NumPy's ValueError (unless the result is
        empty): known when traced, so every target raises it (a kernel cannot)."""
        if op.name != "power" or out_type.dtype.kind not in "iu":
            return
        exponent = inputs[1]
        if not isinstance(exponent, Literal) or isinstance(exponent.value, (Expr, SymFloat)):
            return
        if np.ndim(exponent.value) or not exponent.value < 0:
            return
        text = "Integers to negative integer powers are not allowed."
        breach = Breach(ValueError, text, site=self.site)
        if self.ctx.checked(breach, self.ctx.ge, size_of(out_type.shape), 1):
            raise execution_error(ValueError(text), text, site=self.site)

    def finish(self, outputs) -> Graph:
        return Graph(
            tuple(self.inputs),
            tuple(self.consts),
            tuple(self.eqns),
            tuple(outputs),
            tuple(self.ctx.guards),
        )


_COMPARISONS = {np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal}


def _python_ints_fit(op: OpDef, inputs, site) -> None:
    """A Python int an integer ufunc loop (or a store) cannot hold is NumPy's OverflowError
    (``int8_array + 300``), whatever the array's values, even for an empty array; NumPy's
    comparisons take any Python int."""
    if op.ufunc is not None and op.ufunc not in _COMPARISONS:
        loop = ufunc_loop(op.ufunc, [a.type.key for a in inputs])[: op.ufunc.nin]
    elif op.name == "store":
        loop = (None, inputs[0].type.dtype)
    else:
        return
    for a, dt in zip(inputs, loop):
        if not (isinstance(a, Literal) and a.type.weak and type(a.value) is int):
            continue
        if dt is not None and dt.kind in "iu":
            info = np.iinfo(dt)
            if not info.min <= a.value <= info.max:
                text = f"Python integer {a.value} out of bounds for {dt}"
                raise execution_error(OverflowError(text), text, site=site)
