"""The lazy API: ``Tensor``, ``tensor()``, and ``apply``, through which every op function goes.

A ``Tensor`` is one of two things:

* *lazy*: a node of a recorded expression (``ppto.sin(x) + y``) whose inputs are bound only when
  the chain runs; nothing is typed or computed when it is built;
* *traced*: a value of a graph being built, with a known type (rank, dtype, symbolic sizes).
  Running a chain replays its lazy nodes as traced tensors (tracer.py), and composite ops are
  written against traced tensors, so ``softmax`` is ordinary NumPy-style code.

``apply(name, args, attrs)`` decides which: any lazy argument makes a lazy node; inside a trace
it adds an equation (or expands a composite); with Python numbers only, it computes the number
right away (``ppto.sqrt(64) == 8.0``, a Python float, weak as NumPy treats Python floats).
"""

from __future__ import annotations

import contextvars
import inspect
import keyword
import re
import weakref

import numpy as np

from .bindings import is_dask_array
from .builder import GraphBuilder, literal
from .dtypes import python_scalar_type, to_dtype
from .errors import ArgumentError, PyptoError, UnsupportedError, api_boundary
from .registry import REGISTRY
from .shapes import ShapeContext
from .sites import Site, user_site
from .symbolic import Expr, SymFloat

_BUILDER: contextvars.ContextVar[GraphBuilder | None] = contextvars.ContextVar(
    "pypto_builder", default=None
)


class Node:
    """A recorded operation of a lazy chain (or a placeholder / constant leaf)."""

    __slots__ = (
        "__weakref__",
        "args",
        "attrs",
        "cache",
        "dtype",
        "name",
        "op",
        "shape",
        "site",
        "value",
    )

    def __init__(
        self,
        op: str,
        args=(),
        attrs=None,
        site: Site | None = None,
        *,
        name=None,
        shape=None,
        dtype=None,
        value=None,
    ):
        self.op = op  # "placeholder", "const", or a registry op name
        self.args = args  # Node or scalar constants
        self.attrs = attrs or {}
        self.site = site
        self.name = name  # placeholders
        self.shape = shape  # placeholders: declared shape (entries None, int or symbol name)
        self.dtype = dtype  # placeholders: declared dtype
        self.value = value  # constants: the array; placeholders: a dask array bound to it
        self.cache = None  # trace cache, owned by tracer.py


# How a chain runs: tracer.py puts its ``run`` here when imported (``import pypto`` does), so
# that the lazy API does not import the compiler that runs it.
RUN_CHAIN: list = []


def current_builder() -> GraphBuilder | None:
    return _BUILDER.get()


def current_site() -> Site | None:
    """Where the user wrote what is being built: the traced statement, or the calling line."""
    builder = _BUILDER.get()
    if builder is not None and builder.site is not None:
        return builder.site
    return user_site()


def _freeze(v):
    """Lists become tuples (recursively): attributes are immutable and hashable."""
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return v


def _is_scalar(a) -> bool:
    return python_scalar_type(a) is not None or isinstance(a, (np.generic, Expr, SymFloat))


@api_boundary
def apply(name: str, args: tuple, attrs: dict | None = None):
    """Apply registry op ``name`` to ``args`` (tensors, arrays or scalars) with ``attrs``."""
    op = REGISTRY[name]
    attrs = {k: _freeze(v) for k, v in (attrs or {}).items()}
    args = tuple(_as_operand(a) for a in args)
    builder = _BUILDER.get()
    if any(isinstance(a, Tensor) and a._node is not None for a in args):
        if any(isinstance(a, Tensor) and a._node is None for a in args):
            raise ArgumentError("cannot mix a lazy tensor into a traced computation")
        return Tensor(Node(op.name, tuple(_lazy_arg(a) for a in args), attrs, user_site()))
    if builder is not None:
        if op.kind == "composite":
            return op.expand(*args, **attrs)
        atoms = tuple(_atom(a, builder) for a in args)
        return Tensor(None, builder.apply(op, atoms, attrs), builder)
    if all(_is_scalar(a) for a in args):
        return _fold(op, args, attrs)
    return Tensor(Node(op.name, tuple(_lazy_arg(a) for a in args), attrs, user_site()))


def _as_operand(a):
    if isinstance(a, (list, tuple)):
        return np.asarray(a)
    return a


def _lazy_arg(a):
    if isinstance(a, Tensor):
        return a._node
    if isinstance(a, np.ndarray):
        return Node("const", value=a)
    if is_dask_array(a):  # an input bound to itself: the chain runs on the Dask target
        name = "dask_" + re.sub(r"\W", "_", str(a.name))[:40]
        return Node("placeholder", name=name, value=a)
    if _is_scalar(a):
        return a
    raise ArgumentError(f"cannot use {type(a).__name__} as an operand: {a!r}")


def _atom(a, builder: GraphBuilder):
    if isinstance(a, Tensor):
        if a._builder is not builder:
            raise ArgumentError("a traced tensor was used outside of its trace")
        return a._atom
    if isinstance(a, np.ndarray):
        return builder.add_const(a)
    if _is_scalar(a):
        return literal(a)
    raise ArgumentError(f"cannot use {type(a).__name__} as an operand: {a!r}")


def _fold(op, args, attrs):
    """An op applied to numbers only: computed now (through a one-op graph, so composites and
    primitives alike). Python numbers in, a Python number out, when NumPy's result has the
    dtype a Python number stands for (bool, int64, float64, complex128); ``np.sqrt(True)`` is a
    float16, so that stays a NumPy scalar."""
    from .executor import execute  # below the API, imported when first needed
    from .verify import verify

    builder = GraphBuilder(ShapeContext())
    token = _BUILDER.set(builder)
    try:
        out = apply(op.name, args, attrs)
    finally:
        _BUILDER.reset(token)
    (result,) = execute(verify(builder.finish([out._atom])), [])
    if (
        all(python_scalar_type(a) is not None for a in args)
        and isinstance(result, np.generic)
        and result.dtype in _PYTHON_NUMBER_DTYPES
    ):
        return result.item()
    return result


_PYTHON_NUMBER_DTYPES = tuple(np.dtype(t) for t in ("bool", "int64", "float64", "complex128"))


def _op(name: str):
    return REGISTRY[name].api


def lift(a) -> Tensor:
    """An operand as a traced tensor of the current trace (composite ops start with this)."""
    if isinstance(a, Tensor):
        return a
    builder = _BUILDER.get()
    return Tensor(None, _atom(_as_operand(a), builder), builder)


def no_out(out, name: str) -> None:
    if out is not None:
        raise UnsupportedError(
            f"{name}(out=...) is not supported",
            hint="a chain returns new arrays; assign the result instead",
        )


class Tensor:
    """A lazy (or traced) tensor. Build chains with ppto functions, operators and methods;
    compute with ``.run(name=array, ...)``."""

    __slots__ = ("__weakref__", "_atom", "_builder", "_node")

    def __init__(self, node: Node | None, atom=None, builder: GraphBuilder | None = None):
        self._node = node
        self._atom = atom
        self._builder = builder
        if builder is not None:  # (a block cut where a size is bound carries it on)
            builder.tensors.append(weakref.ref(self))

    # -- running ----------------------------------------------------------------------------------
    @api_boundary
    def run(self, **bindings):
        """Bind the named inputs to arrays (or scalars) and compute the chain's value."""
        return RUN_CHAIN[0](self, **bindings)

    # -- what is known before running ------------------------------------------------------------
    def _type(self, what: str):
        if self._atom is None:
            raise UnsupportedError(
                f"the {what} of a lazy tensor is only known when it runs",
                hint="write the chain without it (reshape(-1), axis=-1, ...) or use @ppto.compile",
            )
        return self._atom.type

    @property
    def shape(self) -> tuple:
        return self._type("shape").shape

    @property
    def ndim(self) -> int:
        return self._type("rank").rank

    @property
    def dtype(self) -> np.dtype:
        return self._type("dtype").dtype

    @property
    def size(self):
        from .shapes import size_of

        return size_of(self.shape)

    def __repr__(self):
        if self._node is None:
            return f"Tensor(traced {self._atom.type})"
        return f"Tensor({_describe(self._node, 3)})"

    # -- things a lazy tensor cannot do -----------------------------------------------------------
    def __bool__(self):
        raise UnsupportedError(
            "a lazy tensor has no truth value: its value is only known when the chain runs",
            hint="use ppto.where(cond, a, b) instead of `if`",
        )

    def __iter__(self):
        raise UnsupportedError("cannot iterate over a lazy tensor", hint="index it: x[i]")

    def __array__(self, *args, **kwargs):
        raise UnsupportedError(
            "a lazy tensor is not an array yet", hint="compute it with .run(name=array, ...)"
        )

    # -- NumPy dispatch: np.sin(t), np.sum(t, axis=1), ... build lazy nodes ------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        op = REGISTRY.for_numpy(ufunc)
        if method in ("reduce", "accumulate", "outer"):  # (pypto/ops/ufunc_methods.py)
            return REGISTRY.ufunc_method(ufunc, method, inputs, kwargs)
        if method != "__call__" or op is None or kwargs:
            what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
            extra = f" with {', '.join(kwargs)}=" if kwargs and op is not None else ""
            raise UnsupportedError(f"{what}{extra} is not supported on PyPTO tensors")
        return op.api(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        op = REGISTRY.for_numpy(func)
        name = getattr(func, "__name__", str(func))
        if op is None:
            raise UnsupportedError(f"np.{name} is not supported on PyPTO tensors")
        try:
            inspect.signature(op.api).bind(*args, **kwargs)
        except TypeError as e:
            raise ArgumentError(f"np.{name}: {e}") from None
        return op.api(*args, **kwargs)

    def __getitem__(self, index):
        return _op("getitem")(self, index)

    __hash__ = None  # == builds a node, so tensors cannot be dict keys

    # -- methods ----------------------------------------------------------------------------------
    @property
    def T(self):
        return _op("transpose")(self)

    def transpose(self, *axes):
        return _op("transpose")(self, _varargs(axes))

    def reshape(self, *shape):
        return _op("reshape")(self, _varargs(shape) if shape else shape)

    def flatten(self):
        return _op("reshape")(self, (-1,))

    ravel = flatten

    def squeeze(self, axis=None):
        return _op("squeeze")(self, axis)

    def swapaxes(self, axis1, axis2):
        return _op("swapaxes")(self, axis1, axis2)

    def astype(self, dtype):
        return _op("astype")(self, dtype)

    def copy(self):
        return _op("copy")(self)

    def clip(self, min=None, max=None):
        return _op("clip")(self, min, max)

    def sum(self, axis=None, dtype=None, keepdims=False):
        return _op("sum")(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, keepdims=False):
        return _op("prod")(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False):
        return _op("mean")(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return _op("max")(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return _op("min")(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _op("argmax")(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _op("argmin")(self, axis=axis, out=out, keepdims=keepdims)

    def take(self, indices, axis=None, out=None, mode="raise"):
        return _op("take")(self, indices, axis=axis, out=out, mode=mode)

    def any(self, axis=None, keepdims=False):
        return _op("any")(self, axis=axis, keepdims=keepdims)

    def all(self, axis=None, keepdims=False):
        return _op("all")(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return _op("var")(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return _op("std")(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None):
        return _op("cumsum")(self, axis=axis, dtype=dtype)

    def cumprod(self, axis=None, dtype=None):
        return _op("cumprod")(self, axis=axis, dtype=dtype)

    def dot(self, other):
        return _op("dot")(self, other)


_BINARY_OPERATORS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "divide",
    "floordiv": "floor_divide",
    "mod": "mod",
    "pow": "power",
    "matmul": "matmul",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "left_shift",
    "rshift": "right_shift",
}
_COMPARISONS = {
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "eq": "equal",
    "ne": "not_equal",
}
_UNARY_OPERATORS = {"neg": "neg", "pos": "positive", "abs": "abs", "invert": "invert"}


def _power(self, other):
    """``x ** y`` as NumPy's operator computes it: for a float (or complex) array, a Python int
    2 or -1 or a Python float 0.5 runs ``square``, ``reciprocal`` or ``sqrt`` (NumPy's
    ``fast_scalar_power``; ``np.power`` itself, and other exponents, stay ``power``)."""
    if (type(other) is int and other in (2, -1)) or (type(other) is float and other == 0.5):
        return apply("power_operator", (self,), {"exponent": other})  # decided when traced
    return _op("power")(self, other)


def _install_operators():
    def method(opname, reflected=False):
        if reflected:
            return lambda self, other: _op(opname)(other, self)
        return lambda self, other: _op(opname)(self, other)

    for dunder, opname in {**_BINARY_OPERATORS, **_COMPARISONS}.items():
        setattr(Tensor, f"__{dunder}__", method(opname))
    Tensor.__pow__ = _power
    for dunder, opname in _BINARY_OPERATORS.items():
        setattr(Tensor, f"__r{dunder}__", method(opname, reflected=True))
    for dunder, opname in _UNARY_OPERATORS.items():
        setattr(Tensor, f"__{dunder}__", lambda self, _n=opname: _op(_n)(self))


_install_operators()


def _varargs(args: tuple):
    """x.reshape(3, 4) and x.reshape((3, 4)) mean the same; no arguments mean None."""
    if not args:
        return None
    if len(args) == 1 and (args[0] is None or isinstance(args[0], (tuple, list))):
        return args[0]
    return args


def _describe(node: Node, depth: int) -> str:
    if node.op == "placeholder":
        return node.name
    if node.op == "const":
        return f"array{node.value.shape}"
    if depth == 0:
        return "..."
    parts = [_describe(a, depth - 1) if isinstance(a, Node) else repr(a) for a in node.args]
    parts += [f"{k}={v!r}" for k, v in node.attrs.items() if v is not None and v is not False]
    return f"{node.op}({', '.join(parts)})"


@api_boundary
def tensor(name: str, shape=None, dtype=None) -> Tensor:
    """A named input of a lazy chain, bound by ``run(name=array)``.

    ``shape`` and ``dtype`` are optional; when given, ``run`` checks the bound array against them.
    Shape entries are ints (exact size), None (any size) or a name (a size shared by every input
    that uses the same name, e.g. ``shape=("n", "n")`` for a square matrix).
    """
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ArgumentError(f"a tensor name must be a Python identifier, not {name!r}")
    if shape is not None:
        if isinstance(shape, (int, str)):
            shape = (shape,)
        shape = tuple(shape)
        for d in shape:
            ok = (
                d is None
                or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
                or (isinstance(d, str) and d.isidentifier())
            )
            if not ok:
                raise ArgumentError(
                    f"tensor {name!r}: shape entries are sizes >= 0, None or names, not {d!r}"
                )
    if dtype is not None:
        try:
            dtype = to_dtype(dtype, f"tensor {name!r}")
        except PyptoError as e:
            raise e.with_context(None, user_site()) from None
    return Tensor(Node("placeholder", name=name, shape=shape, dtype=dtype, site=user_site()))


def traced(atom, builder: GraphBuilder) -> Tensor:
    return Tensor(None, atom, builder)
