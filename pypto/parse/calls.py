"""Calls: NumPy functions (through the registry), array methods, ``math`` and builtins on
scalars, the ufunc methods ``outer`` / ``reduce`` / ``accumulate``, dtype constructors, ppto
ops, and helpers of the same module (inlined with their own names; arrays are passed by
reference, so a helper's in-place write is seen by the caller, as in Python).
"""

from __future__ import annotations

import inspect
import math
from typing import ClassVar

import numpy as np

from .. import api
from ..dtypes import weak_dtype
from ..errors import HostOnly, execution_error
from ..ops.ufunc_methods import ufunc_method
from ..registry import REGISTRY
from ..symbolic import Expr, Sym, SymFloat, is_nonneg, smax, smin
from .source import helper_source
from .values import BoundMethod, View, ViewOp

MATH = {
    math.sqrt: "sqrt",
    math.exp: "exp",
    math.log: "log",
    math.log2: "log2",
    math.log10: "log10",
    math.log1p: "log1p",
    math.expm1: "expm1",
    math.sin: "sin",
    math.cos: "cos",
    math.tan: "tan",
    math.asin: "arcsin",
    math.acos: "arccos",
    math.atan: "arctan",
    math.atan2: "arctan2",
    math.sinh: "sinh",
    math.cosh: "cosh",
    math.tanh: "tanh",
    math.hypot: "hypot",
    math.fabs: "abs",
    math.pow: "power",
    math.isnan: "isnan",
    math.isinf: "isinf",
    math.isfinite: "isfinite",
    math.floor: "floor",
    math.ceil: "ceil",
    math.trunc: "trunc",
}
MATH_TO_INT = {math.floor, math.ceil, math.trunc}
SCALAR_BUILTINS = {len, min, max, abs, float, int, bool}
VIEW_METHODS = frozenset({"transpose", "reshape", "ravel", "squeeze", "swapaxes"})


class Calls:
    BUILTINS: ClassVar[dict] = {f.__name__: f for f in (*SCALAR_BUILTINS, range)}

    def eval_Call(self, node):
        func = self.eval(node.func)
        args, kwargs = [], {}
        for a in node.args:
            if a.star:
                raise self.unsupported(a, "unpacking with * or ** in a call")
            value = self.eval(a.value)
            if a.keyword is None:
                args.append(value)
            else:
                kwargs[a.keyword.value] = value
        self.ensure_block()
        return self.call(func, args, kwargs, node)

    def call(self, func, args, kwargs, node):
        if isinstance(func, BoundMethod):
            return self.call_method(func, args, kwargs, node)
        if not callable(func) or type(func).__hash__ is None:
            raise self.unsupported(node, f"calling a {type(func).__name__} value", code="PPT104")
        if func is range:
            raise self.unsupported(node, "range() outside a `for` loop", code="PPT104")
        if func in SCALAR_BUILTINS:
            return self.call_builtin(func, args, kwargs, node)
        if func in MATH:
            return self.call_math(func, args, kwargs, node)
        owner = getattr(func, "__self__", None)
        if isinstance(owner, np.ufunc):  # np.add.reduce, np.add.accumulate, np.add.outer
            if func.__name__ == "at":  # np.add.at(x, idx, v): a write (parse/index_arrays.py)
                return self.ufunc_at(owner, args, kwargs, node)
            try:
                return ufunc_method(
                    owner,
                    func.__name__,
                    tuple(self.operand(a) for a in args),
                    {k: self.operand(v) for k, v in kwargs.items()},
                )
            except HostOnly:
                return self.break_graph(func, args, kwargs, node)
        if isinstance(func, type) and issubclass(func, np.generic):
            return self.convert(func, args, kwargs, node)
        op = REGISTRY.for_numpy(func) or REGISTRY.for_api(func)
        if op is not None:
            try:
                return self.call_op(op, args, kwargs, node)
            except HostOnly:  # a variant PyPTO has no kernel for: NumPy's call as written
                if REGISTRY.for_numpy(func) is None:
                    raise
                return self.break_graph(func, args, kwargs, node)
        if inspect.isfunction(func) and helper_source(func, self.frames[-1].src) is not None:
            return self.inline(func, args, kwargs, node)
        return self.break_graph(func, args, kwargs, node)

    def break_graph(self, func, args, kwargs, node):
        """A call PyPTO has no op for: one ``host_call`` equation, the call as written
        (ops/host_calls.py), or PPT104 saying why it cannot be."""
        from ..ops.host_calls import Refused, break_call, refusal

        if func in (np.asarray, np.asanyarray) and len(args) == 1 and set(kwargs) <= {"dtype"}:
            v = args[0]
            if isinstance(v, (View, api.Tensor)):  # NumPy returns the array itself
                dtype = kwargs.get("dtype")
                t = self.as_tensor(v)
                if dtype is None or np.dtype(dtype) == t.dtype:
                    return v
                return REGISTRY["astype"].api(t, np.dtype(dtype))
        shown = _written(node.func)  # as the source names it: np.linalg.solve
        try:
            result = break_call(
                func,
                shown,
                [self.operand_tensor(a) for a in args],
                {k: self.operand_tensor(v) for k, v in kwargs.items()},
                self.ctx,
                symbol=self.size_symbol,
            )
        except Refused as e:
            raise refusal(e, node, self) from None
        self.bind_sized(result)
        return result

    def size_symbol(self, hint: str = "nv"):
        """A new size symbol whose value the run binds (function.Bind)."""
        return Sym(self.new_symbol(hint), nonneg=True)

    def operand_tensor(self, v):
        """An argument of a graph break: arrays and scalars known at run time as tensors."""
        if isinstance(v, View):
            return v.tensor
        if isinstance(v, (list, tuple)):
            return type(v)(self.operand_tensor(x) for x in v)
        if isinstance(v, (Expr, SymFloat)):
            return self.as_tensor(v) if isinstance(v, SymFloat) else v
        return v

    # -- NumPy functions and ppto ops -------------------------------------------------------------
    def operand(self, v):
        if isinstance(v, View):
            return v.tensor
        if isinstance(v, list):
            return [self.operand(x) for x in v]
        if isinstance(v, tuple) and any(isinstance(x, (View, api.Tensor)) for x in v):
            return tuple(self.operand(x) for x in v)
        return v

    def call_op(self, op, args, kwargs, node):
        plain = [self.operand(a) for a in args]
        plain_kw = {k: self.operand(v) for k, v in kwargs.items()}
        try:
            inspect.signature(op.api).bind(*plain, **plain_kw)
        except TypeError as e:
            raise self.unsupported(node, f"{op.name}(): {e}", code="PPT206") from None
        result = op.api(*plain, **plain_kw)
        # a view of an operand in NumPy (a reorder; a composite's view_of: np.einsum("ij->ji", x))
        at = 0 if op.view else op.view_of(plain, plain_kw) if op.view_of else None
        if at is not None and at < len(args) and isinstance(result, api.Tensor):
            viewed = args[at]
            if isinstance(viewed, View) and self.is_array(viewed.base, viewed.tensor):
                rest = (*plain[:at], *plain[at + 1 :])  # (a NumPy scalar has no views)
                step = ViewOp(op.name, rest, plain_kw, at=at)
                return View(result, viewed.base, viewed.ops + (step,))
        return result

    def convert(self, scalar_type, args, kwargs, node):
        """``np.float32(x)``: a NumPy scalar of a number, an astype of a tensor."""
        if kwargs or len(args) != 1:
            raise self.unsupported(node, f"np.{scalar_type.__name__} with these arguments")
        (v,) = args
        if isinstance(v, View) and v.tensor.ndim and v.tensor.dtype == np.dtype(scalar_type):
            return v  # NumPy returns the array itself
        if isinstance(v, (View, api.Tensor, Expr)):
            return REGISTRY["astype"].api(self.as_tensor(v), np.dtype(scalar_type))
        return scalar_type(v)

    # -- array methods --------------------------------------------------------------------------
    def call_method(self, bm: BoundMethod, args, kwargs, node):
        obj, name = bm.obj, bm.name
        t = self.as_tensor(obj)
        plain = [self.operand(a) for a in args]
        plain_kw = {k: self.operand(v) for k, v in kwargs.items()}
        if name == "item":
            if args or kwargs:
                raise self.unsupported(node, ".item() with arguments")
            scalar = REGISTRY["reshape"].api(t, ())
            return api.apply(
                "astype", (scalar,), {"dtype": weak_dtype(_pytype(t.dtype)), "weak": True}
            )
        if name == "fill":
            (value,) = plain
            return self.write_through(obj, REGISTRY["full_like"].api(t, value), node)
        try:
            result = getattr(t, name)(*plain, **plain_kw)
        except TypeError as e:
            raise self.unsupported(node, f".{name}(): {e}", code="PPT206") from None
        except HostOnly:  # x.argmax() of complex values: NumPy's np.argmax(x), a graph break
            return self.break_graph(getattr(np, name), [obj, *args], kwargs, node)
        if name in VIEW_METHODS and isinstance(obj, View) and self.is_array(obj.base, t):
            return View(
                result, obj.base, obj.ops + (ViewOp(name, tuple(plain), plain_kw, method=True),)
            )
        return result

    # -- Python builtins and math on scalars -----------------------------------------------------
    def call_builtin(self, func, args, kwargs, node):
        if kwargs:
            raise self.unsupported(node, f"{func.__name__}() with keyword arguments")
        if func is len:
            (v,) = args
            if isinstance(v, (View, api.Tensor)):
                t = self.as_tensor(v)
                if t.ndim == 0:
                    raise self.unsupported(node, "len() of a 0-d array", code="PPT206")
                return t.shape[0]
            return len(v)
        if func in (min, max):
            return self.min_max(func, list(args[0]) if len(args) == 1 else list(args), node)
        (v,) = args
        if self.is_host(v) and not isinstance(v, (Expr, SymFloat)):
            return func(v)
        if func is abs:
            if isinstance(v, Expr):
                return self.absolute(v)
            return api.apply("abs", (self.as_tensor(v),), {"weak": self.is_weak(v)})
        if func is int and isinstance(v, Expr):
            return v
        if func is float and isinstance(v, Expr):
            return SymFloat.of(v)
        if func is int and isinstance(v, SymFloat):
            size = _symbolic_round(math.trunc, v)
            if size is not None:
                return size
        if func is bool and isinstance(v, Expr):
            return self.truth(v, node)
        t = self.as_tensor(v)
        if t.ndim:
            raise self.unsupported(
                node, f"{func.__name__}() of an array", hint="use .astype(...)", code="PPT206"
            )
        dtype = {float: np.float64, int: np.int64, bool: np.bool_}[func]
        return api.apply("astype", (t,), {"dtype": np.dtype(dtype), "weak": True})

    def min_max(self, func, values, node):
        """Python's min/max: sizes symbolically, numbers now, scalars known at run time as
        Python compares them (the first of equal values wins; a NaN first stays)."""
        if all(isinstance(v, (int, Expr)) and not isinstance(v, bool) for v in values):
            pick = smin if func is min else smax
            out = values[0]
            for v in values[1:]:
                out = pick(out, v)
            return out
        if all(self.is_host(v) for v in values):
            return func(values)
        for v in values:
            if not self.is_host(v) and self.as_tensor(v).ndim:
                raise self.unsupported(
                    node,
                    f"{func.__name__}() of array values",
                    hint=f"use np.{func.__name__}imum or x.{func.__name__}()",
                )
        better = "less" if func is min else "greater"
        out = values[0]
        for v in values[1:]:
            weak = self.is_weak(out) and self.is_weak(v)
            a, b = self.as_tensor(out), self.as_tensor(v)
            take = api.apply(better, (b, a), {"weak": True} if weak else {})
            out = api.apply("where", (take, b, a), {"weak": True} if weak else {})
            if not weak:  # Python returns one of the NumPy scalars, not a 0-d array
                out = REGISTRY["getitem"].api(out, ())
        return out

    def call_math(self, func, args, kwargs, node):
        if kwargs:
            raise self.unsupported(node, f"math.{func.__name__}() with keyword arguments")
        if func in MATH_TO_INT and len(args) == 1 and isinstance(args[0], (Expr, SymFloat)):
            size = _symbolic_round(func, args[0])
            if size is not None:
                return size  # math.floor(n / 2) is the size n // 2
        if all(self.is_host(a) and not isinstance(a, (Expr, SymFloat)) for a in args):
            try:
                return func(*args)
            except (ValueError, OverflowError, TypeError) as e:  # raised when it runs
                raise execution_error(
                    e, f"math.{func.__name__}: {type(e).__name__}: {e}", site=self.site
                ) from None
        operands = []
        for a in args:
            t = self.as_tensor(a)
            if t.ndim:
                raise self.unsupported(
                    node,
                    f"math.{func.__name__}() of an array",
                    hint=f"use np.{MATH[func]}",
                    code="PPT206",
                )
            if not t._atom.type.weak or t.dtype.kind in "iub":  # math works in Python floats
                t = api.apply("astype", (t,), {"dtype": np.dtype(np.float64), "weak": True})
            operands.append(t)
        out = api.apply(MATH[func], tuple(operands), {"weak": True})
        if func in MATH_TO_INT:
            out = api.apply("astype", (out,), {"dtype": np.dtype(np.int64), "weak": True})
        return out

    def is_host(self, v) -> bool:
        return not isinstance(v, (View, api.Tensor))

    # -- helpers ----------------------------------------------------------------------------------
    def inline(self, func, args, kwargs, node):
        from .source import Frame
        from .statements import Return

        if len(self.frames) > self.MAX_INLINE_DEPTH:
            raise self.unsupported(
                node,
                f"calls nested deeper than {self.MAX_INLINE_DEPTH} (unbounded recursion?)",
                code="PPT106",
            )
        src = helper_source(func, self.frames[-1].src)
        if src is None:
            raise self.unsupported(
                node,
                f"call to `{func.__qualname__}` from module `{func.__module__}`",
                hint="PyPTO inlines functions of the same module only",
                code="PPT104",
            )
        sig = inspect.signature(src.fn)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise self.unsupported(node, f"`{src.name}` takes *args or **kwargs", code="PPT104")
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.unsupported(node, f"{src.name}(): {e}", code="PPT206") from None
        bound.apply_defaults()
        env = {name: self.store_value(v, name) for name, v in bound.arguments.items()}
        frame = Frame(src, env, self.control_depth)
        self.frames.append(frame)
        try:
            self.exec_body(src.node.body.body)
            return None
        except Return as r:
            return r.value
        finally:
            self.frames.pop()


def _symbolic_round(func, v):
    """floor / ceil / trunc of a size or a symbolic float, as a size (None if not exact)."""
    if isinstance(v, Expr):
        return v
    if func is math.floor:
        return v.floor_size()
    if func is math.ceil:
        return v.ceil_size()
    floor = v.floor_size()  # trunc: floor when the value cannot be negative
    return floor if floor is not None and is_nonneg(floor) else None


def _pytype(dtype):
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[dtype.kind]


__all__ = ["Calls"]


def _written(node) -> str:
    """A call's callee as its source writes it (one line)."""
    import libcst as cst

    return " ".join(cst.Module([]).code_for_node(node).split())
