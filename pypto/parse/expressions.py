"""Expressions: names, constants, attributes, operators, comparisons, indexing.

Dispatch is by node type (``eval_<NodeType>``); a node type without a handler is unsupported
and named in the error. Semantics follow Python and NumPy exactly:

* Python numbers and sizes (``n - 1``, ``x.shape[0] // 2``) are computed at compile time, sizes
  symbolically; comparisons of sizes are decided (and guarded) at compile time;
* arithmetic on Python numbers known only at run time (a float parameter) is Python arithmetic:
  its result is a Python number, weak in later NumPy promotion (``weak=True`` equations);
* anything involving an array is NumPy: the registry op of the operator.
"""

from __future__ import annotations

import ast
import builtins
import operator
import types

import libcst as cst
import numpy as np

from .. import api
from ..cache import MISSING
from ..errors import UnsupportedError, execution_error
from ..ops.grids import GRIDS, grid
from ..registry import REGISTRY
from ..shapes import make_guard, size_of
from ..symbolic import Expr, SymFloat, smax
from .values import BoundMethod, SymCond, Undefined, View, ViewOp

BINARY = {
    cst.Add: "add",
    cst.Subtract: "sub",
    cst.Multiply: "mul",
    cst.Divide: "truediv",
    cst.FloorDivide: "floordiv",
    cst.Modulo: "mod",
    cst.Power: "pow",
    cst.MatrixMultiply: "matmul",
    cst.BitAnd: "and",
    cst.BitOr: "or",
    cst.BitXor: "xor",
    cst.LeftShift: "lshift",
    cst.RightShift: "rshift",
}
OP_NAME = {**api._BINARY_OPERATORS, **api._COMPARISONS}  # Python operator -> registry op
PYTHON_OP = {k: getattr(operator, k + "_" if k in ("and", "or") else k) for k in OP_NAME}
COMPARE = {
    cst.LessThan: "lt",
    cst.GreaterThan: "gt",
    cst.LessThanEqual: "le",
    cst.GreaterThanEqual: "ge",
    cst.Equal: "eq",
    cst.NotEqual: "ne",
}
CONSTRUCT_NAMES = {
    "Lambda": "a lambda",
    "ListComp": "a list comprehension",
    "SetComp": "a set comprehension",
    "DictComp": "a dict comprehension",
    "GeneratorExp": "a generator expression",
    "Dict": "a dict",
    "Set": "a set",
    "FormattedString": "an f-string",
    "Await": "await",
    "Yield": "yield",
    "NamedExpr": "an assignment expression (:=)",
}
TENSOR_METHODS = frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "any",
        "all",
        "argmax",
        "argmin",
        "var",
        "std",
        "cumsum",
        "cumprod",
        "reshape",
        "transpose",
        "flatten",
        "ravel",
        "squeeze",
        "swapaxes",
        "astype",
        "copy",
        "clip",
        "dot",
        "item",
        "fill",
    }
)
CONSTANTS = {"True": True, "False": False, "None": None}


def is_tensor(v) -> bool:
    """A value known only at run time (a tensor, or a size comparison decided at run time)."""
    return isinstance(v, (View, api.Tensor, SymCond))


def run_time_slice(i) -> bool:
    """A slice with a bound known only at run time (``p[i]:p[i + 1]``)."""
    return isinstance(i, slice) and any(isinstance(b, api.Tensor) for b in (i.start, i.stop))


def is_host(v) -> bool:
    """A value computed at compile time (not a tensor)."""
    return not is_tensor(v)


def _sequences(a, b) -> bool:
    return isinstance(a, (tuple, list)) and type(a) is type(b)


def is_size(v) -> bool:
    return isinstance(v, Expr) or (
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    )


class Expressions:
    # -- plumbing -------------------------------------------------------------------------------
    def set_site(self, node) -> None:
        self.site = self.frames[-1].src.parsed.site(node)
        if self.builder is not None:
            self.builder.site = self.site

    def unsupported(self, node, message: str, hint: str | None = None, code: str = "PPT103"):
        return UnsupportedError(
            message, hint=hint, site=self.frames[-1].src.parsed.site(node), code=code
        )

    def eval(self, node):
        handler = getattr(self, "eval_" + type(node).__name__, None)
        if handler is None:
            what = CONSTRUCT_NAMES.get(type(node).__name__, type(node).__name__)
            raise self.unsupported(node, f"{what} is not supported")
        saved = self.site
        self.set_site(node)
        try:
            return handler(node)
        finally:
            self.site = saved
            if self.builder is not None:
                self.builder.site = saved

    def tensor(self, value):
        return self.as_tensor(value)

    def is_weak(self, v) -> bool:
        """A Python number (known now or at run time): arithmetic on it is Python's."""
        if isinstance(v, (View, api.Tensor)):
            t = v.tensor if isinstance(v, View) else v
            return t._atom.type.weak
        # (np.float64 is a float subclass, but a NumPy scalar: strong)
        numbers = (bool, int, float, complex, Expr, SymFloat)
        return isinstance(v, numbers) and not isinstance(v, np.generic)

    # -- leaves -----------------------------------------------------------------------------------
    reads = None  # the tracer's record of scope lookups (the compile cache's)

    def eval_Name(self, node):
        name = node.value
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in self.env:
            held = self.env[name]
            if isinstance(held, Undefined):
                raise self.unsupported(
                    node, f"`{name}` cannot be used here: {held.why}", code="PPT107"
                )
            return self.load_value(held)
        src = self.frames[-1].src
        value = src.scope.get(name, MISSING)
        if self.reads is not None:
            self.reads.read(src.fn, name, value)
        if value is not MISSING:
            return getattr(value, "__wrapped_function__", value)
        if name in self.BUILTINS:
            return self.BUILTINS[name]
        if hasattr(builtins, name):  # print, sorted, ...: refused where they are called
            return getattr(builtins, name)
        raise self.unsupported(node, f"name `{name}` is not defined", code="PPT107")

    def eval_Integer(self, node):
        return ast.literal_eval(node.value)

    eval_Float = eval_Imaginary = eval_SimpleString = eval_Integer

    def eval_ConcatenatedString(self, node):
        return self.eval(node.left) + self.eval(node.right)

    def eval_Ellipsis(self, node):
        return Ellipsis

    def eval_Tuple(self, node):
        return tuple(self.element(e) for e in node.elements)

    def eval_List(self, node):
        return [self.element(e) for e in node.elements]

    def element(self, e):
        if isinstance(e, cst.StarredElement):
            raise self.unsupported(e, "unpacking with * in a tuple or list")
        return self.eval(e.value)

    # -- attributes -------------------------------------------------------------------------------
    def eval_Attribute(self, node):
        obj = self.eval(node.value)
        attr = node.attr.value
        if is_tensor(obj):
            return self.tensor_attribute(obj, attr, node)
        if isinstance(obj, (types.ModuleType, np.ufunc, np.dtype, type)):
            try:
                value = getattr(obj, attr)
            except AttributeError:
                value = MISSING
            if self.reads is not None and isinstance(obj, (types.ModuleType, type)):
                self.reads.read(obj, attr, value)  # (config.K, Cfg.scale: the cache keys on it)
            if value is MISSING:
                name = getattr(obj, "__name__", type(obj).__name__)
                raise self.unsupported(node, f"`{name}` has no attribute `{attr}`", code="PPT107")
            return value
        raise self.unsupported(
            node, f"the attribute `.{attr}` of a {type(obj).__name__} value is not supported"
        )

    def tensor_attribute(self, obj, attr, node):
        t = self.tensor(obj)
        if attr == "T":
            return self.view_call(obj, "transpose", (), {})
        if attr == "shape":
            return tuple(t.shape)
        if attr == "ndim":
            return t.ndim
        if attr == "size":
            return size_of(t.shape)
        if attr == "dtype":
            return t.dtype
        if attr in TENSOR_METHODS:
            return BoundMethod(obj, attr)
        raise self.unsupported(
            node,
            f"the array attribute or method `.{attr}` is not supported",
            hint="the array methods PyPTO knows: " + ", ".join(sorted(TENSOR_METHODS)),
        )

    def view_call(self, obj, opname: str, args: tuple, kwargs: dict):
        """Apply a registry op to a tensor; a view op on a view stays a view of the same Ref."""
        result = REGISTRY[opname].api(self.tensor(obj), *args, **kwargs)
        if (
            isinstance(obj, View)
            and isinstance(result, api.Tensor)
            and self.is_array(obj.base, obj.tensor)  # (a NumPy scalar has no views)
        ):
            return View(result, obj.base, obj.ops + (ViewOp(opname, args, kwargs),))
        return result

    # -- indexing ---------------------------------------------------------------------------------
    def eval_Subscript(self, node):
        if id(node) in self.unmasked:  # X[mask] in a masked copy: X whole (parse/masks.py)
            return self.eval(node.value)
        base = self.eval(node.value)
        index = self.index_of(node)
        if is_tensor(base):
            return self.getitem(base, index)
        if id(base) in GRIDS:  # np.mgrid[0:n, 0:m], np.ogrid[...]
            return grid(index, GRIDS[id(base)])
        if isinstance(base, (tuple, list, str)):
            items = index if isinstance(index, tuple) else (index,)
            if any(isinstance(i, Expr) for i in items) or any(
                isinstance(i, slice) and any(isinstance(b, Expr) for b in (i.start, i.stop))
                for i in items
            ):
                raise self.unsupported(node, "indexing a tuple with a size known only at run time")
            try:
                return base[index]
            except (IndexError, TypeError) as e:
                raise self.unsupported(node, f"{type(e).__name__}: {e}", code="PPT204") from None
        raise self.unsupported(node, f"indexing a {type(base).__name__} value")

    def index_of(self, node: cst.Subscript):
        items = tuple(self.index_item(e.slice) for e in node.slice)
        single = len(node.slice) == 1 and not isinstance(node.slice[0].comma, cst.Comma)
        return items[0] if single else items

    def index_item(self, s):
        if isinstance(s, cst.Slice):
            bounds = [None if b is None else self.eval(b) for b in (s.lower, s.upper, s.step)]
            for k, (b, part) in enumerate(zip(bounds, (s.lower, s.upper, s.step))):
                if not is_tensor(b):
                    continue
                t = self.tensor(b)
                if k == 2 or t.ndim or t.dtype.kind not in "iu":  # (a start or stop integer
                    raise self.unsupported(  # known at run time: parse/index_arrays.py)
                        part,
                        "a slice step known only at run time"
                        if k == 2
                        else "a slice bound known only at run time that is not an integer",
                        hint="slice steps must be constants; bounds integers",
                    )
                bounds[k] = t
            return slice(*bounds)
        if s.star is not None:
            raise self.unsupported(s, "unpacking with * in an index")
        value = self.eval(s.value)
        if (
            is_tensor(value)
            and self.tensor(value).ndim == 0
            and self.tensor(value).dtype.kind not in "iu"
        ):
            raise self.unsupported(  # (an integer one is a gather: ``gather``)
                s.value,
                "an index known only at run time (an array value)",
                hint="index with sizes, integer parameters or loop variables",
                code="PPT101",
            )
        return value

    def getitem(self, base, index):
        t = self.tensor(base)
        if isinstance(index, tuple):
            index = tuple(self.tensor(i) if is_tensor(i) else i for i in index)
        elif is_tensor(index):
            index = self.tensor(index)
        items = index if isinstance(index, tuple) else (index,)
        if any(run_time_slice(i) for i in items):  # x[p[i]:p[i + 1]] (parse/index_arrays.py)
            return self.slice_at_run_time(base, items)
        split = self.basic_first(t, items)
        if split is not None:  # x[idx, 1:3]: x[:, 1:3][idx] (parse/index_arrays.py)
            basic, rest, front = split
            out = self.getitem(self.getitem(base, basic), rest)
            return out if front is None else REGISTRY["transpose"].api(self.tensor(out), front)
        gathered = self.gather(t, items)
        if gathered is None:
            gathered = self.masked_read(t, index)
        if gathered is not None:
            return gathered
        scalar = len(items) == t.ndim and all(is_size(i) for i in items)
        if scalar or not isinstance(base, View):  # a full integer index copies one element
            return REGISTRY["getitem"].api(t, index)
        return self.view_call(base, "getitem", (index,), {})

    # -- operators --------------------------------------------------------------------------------
    def eval_BinaryOperation(self, node):
        op = BINARY[type(node.operator)]
        return self.binop(op, self.eval(node.left), self.eval(node.right), node)

    def binop(self, op: str, a, b, node):
        if is_host(a) and is_host(b):
            return self.host_binop(op, a, b, node)
        if self.is_weak(a) and self.is_weak(b):  # Python arithmetic on run-time numbers
            return api.apply(OP_NAME[op], (self.tensor(a), self.tensor(b)), {"weak": True})
        a = self.tensor(a) if is_tensor(a) else a
        b = self.tensor(b) if is_tensor(b) else b
        return PYTHON_OP[op](a, b)

    def host_binop(self, op, a, b, node):
        if op in ("lt", "le", "gt", "ge", "eq", "ne") and _sequences(a, b):
            return self.compare_sequences(op, a, b, node)
        symbolic = self.symbolic_float(op, a, b)
        if symbolic is not None:
            return symbolic
        if isinstance(a, (Expr, SymFloat)) or isinstance(b, (Expr, SymFloat)):
            if isinstance(a, np.generic) or isinstance(b, np.generic):  # NumPy's, strong
                self.ensure_block()
                return api.apply(OP_NAME[op], (self.tensor(a), self.tensor(b)))
            if op in ("lt", "le", "gt", "ge", "eq", "ne") and is_size(a) and is_size(b):
                return self.decide(op, a, b)
            if op in ("add", "sub", "mul", "floordiv", "mod") and is_size(a) and is_size(b):
                return PYTHON_OP[op](a, b)
            if op == "pow" and isinstance(b, int) and 0 <= b <= 8 and is_size(a):
                out = 1
                for _ in range(b):
                    out = out * a
                return out
            self.ensure_block()
            return api.apply(OP_NAME[op], (a, b), {"weak": True})
        try:
            return PYTHON_OP[op](a, b)
        except Exception as e:  # Python raises it when the statement runs
            raise execution_error(e, f"{type(e).__name__}: {e}", site=self.site) from None

    def compare_sequences(self, op, a, b, node):
        """Python's comparison of two tuples (or two lists), element by element, with sizes
        decided as ``decide`` does: ``x.shape == y.shape``, ``x.shape == (2, n)``."""
        for u, v in zip(a, b):
            same = self.host_binop("eq", u, v, node)
            if not isinstance(same, (bool, np.bool_)):
                raise self.unsupported(
                    node, "a comparison of sequences whose items are known only at run time"
                )
            if not same:
                if op in ("eq", "ne"):
                    return op == "ne"
                return self.host_binop(op, u, v, node)
        return PYTHON_OP[op](len(a), len(b))

    def symbolic_float(self, op, a, b):
        """Sizes mixed with floats stay symbolic while linear: ``n + 1.0``, ``n / 2``."""
        floats = (float, SymFloat)
        if not (isinstance(a, (Expr, SymFloat)) or isinstance(b, (Expr, SymFloat))):
            return None
        if isinstance(a, np.generic) or isinstance(b, np.generic):
            return None  # a NumPy scalar: NumPy's arithmetic
        if op in ("add", "sub") and (isinstance(a, floats) or isinstance(b, floats)):
            left = SymFloat.of(a)
            return None if left is None else (left.add(b) if op == "add" else left.sub(b))
        number = (int, float)
        if op == "mul":
            if (
                isinstance(a, (Expr, SymFloat))
                and isinstance(b, number)
                and not isinstance(b, bool)
                and (isinstance(b, float) or isinstance(a, SymFloat))
            ):
                return SymFloat.of(a).scale(b)
            if (
                isinstance(b, (Expr, SymFloat))
                and isinstance(a, number)
                and not isinstance(a, bool)
                and (isinstance(a, float) or isinstance(b, SymFloat))
            ):
                return SymFloat.of(b).scale(a)
        if op == "truediv" and isinstance(b, number) and not isinstance(b, bool) and b != 0:
            return SymFloat.of(a).scale(1.0 / b)
        return None

    def decide(self, op, a, b):
        """A comparison of sizes: decided now when a proof, the facts or the sizes of this call
        answer it (guarded), else (a loop variable) a SymCond the run decides."""
        lhs, rel, rhs = {
            "ge": (a, ">=", b),
            "gt": (a, ">=", b + 1),
            "le": (b, ">=", a),
            "lt": (b, ">=", a + 1),
            "eq": (a, "==", b),
            "ne": (a, "!=", b),
        }[op]
        known = self.ctx.known(lhs, rel, rhs)
        if known is not None:
            return known
        if self.ctx.concrete(lhs - rhs):
            return (
                self.ctx.ge(lhs, rhs)
                if rel == ">="
                else (self.ctx.eq(lhs, rhs) if rel == "==" else not self.ctx.eq(lhs, rhs))
            )
        return SymCond(make_guard(lhs, rel, rhs))

    def eval_UnaryOperation(self, node):
        if isinstance(node.operator, cst.Not):
            self.tested.add(id(node.expression))  # (only its truth counts)
        v = self.eval(node.expression)
        kind = type(node.operator)
        if kind is cst.Not:
            if isinstance(v, SymCond):
                return SymCond(v.guard.negated())
            if is_tensor(v) and self.as_tensor(v).ndim == 0:  # a run-time scalar: a bool
                return api.apply("logical_not", (self.truth_of(self.as_tensor(v)),), {"weak": True})
            if is_tensor(v):
                raise self.unsupported(
                    node, "`not` on an array value", hint="use np.logical_not(x), or ~x on booleans"
                )
            return not self.truth(v, node)
        name = {cst.Minus: "neg", cst.Plus: "positive", cst.BitInvert: "invert"}[kind]
        if is_host(v):
            if isinstance(v, (Expr, SymFloat)):
                if kind is cst.Minus:
                    return -v if isinstance(v, Expr) else v.scale(-1.0)
                if kind is cst.Plus:
                    return v
            else:
                py = {
                    cst.Minus: operator.neg,
                    cst.Plus: operator.pos,
                    cst.BitInvert: operator.invert,
                }[kind]
                return py(v)
        if self.is_weak(v):
            return api.apply(name, (self.tensor(v),), {"weak": True})
        return REGISTRY[name].api(self.tensor(v))

    def eval_Comparison(self, node):
        left = self.eval(node.left)
        result = None
        for target in node.comparisons:
            right = self.eval(target.comparator)
            value = self.compare(target.operator, left, right, target)
            if result is not None:
                if is_tensor(result) or is_tensor(value):
                    raise self.unsupported(
                        node,
                        "a chained comparison of array values",
                        hint="combine comparisons with &",
                    )
                value = result and value
            result = value
            left = right
        return result

    def compare(self, operator_node, a, b, node):
        kind = type(operator_node)
        if kind in (cst.Is, cst.IsNot):
            if is_tensor(a) and is_tensor(b):
                same = (
                    isinstance(a, View)
                    and isinstance(b, View)
                    and a.base is b.base
                    and (not a.ops and not b.ops)
                )
                if not same and not (isinstance(a, View) and isinstance(b, View)):
                    raise self.unsupported(node, "`is` between two array values")
            elif is_tensor(a) or is_tensor(b):
                same = False  # an array is never None (nor any other constant)
            else:
                same = a is b
            return same if kind is cst.Is else not same
        if kind in (cst.In, cst.NotIn):
            if is_tensor(a) or is_tensor(b):
                raise self.unsupported(node, "`in` with an array value")
            return (a in b) if kind is cst.In else (a not in b)
        return self.binop(COMPARE[kind], a, b, node)

    def eval_BooleanOperation(self, node):
        if id(node) in self.tested:  # (an operand's truth is all that counts too)
            self.tested |= {id(node.left), id(node.right)}
        whole = id(node) in self.tested or id(node) in self.whole
        if whole:  # both operands stand where nothing else of the statement is computed yet
            self.whole |= {id(node.left), id(node.right)}
        left = self.eval(node.left)
        if whole and (
            isinstance(left, SymCond) or (is_tensor(left) and self.as_tensor(left).ndim == 0)
        ):
            return self.short_circuit(node, left)  # parse/statements.py: a run-time branch
        if is_tensor(left) and self.as_tensor(left).ndim == 0:
            return self.run_time_bool_op(node, left)
        if is_tensor(left):
            raise self.bool_op_refused(node, "arrays")
        truth = self.truth(left, node.left)
        if isinstance(node.operator, cst.And):
            return self.eval(node.right) if truth else left
        return left if truth else self.eval(node.right)

    def run_time_bool_op(self, node, left):
        """``a and b`` / ``a or b`` on a scalar known only at run time, as Python has it: the
        first false (and) / true (or) operand, both of one type; where only the truth counts
        (an ``if`` test, ``not``: ``tested``), the truth of each, whatever their types. The
        right operand is computed in either case (its value is discarded when Python would
        not have computed it): inside a larger expression only; a whole test or value (``if a
        and b:``, ``z = a or b``) computes it only where Python does (``short_circuit``)."""
        tested = id(node) in self.tested
        right = self.eval(node.right)
        if is_tensor(right) and self.as_tensor(right).ndim:
            raise self.bool_op_refused(node, "arrays")
        is_and = isinstance(node.operator, cst.And)
        a, b = self.as_tensor(left), self.tensor(right)
        if tested:
            name = "logical_and" if is_and else "logical_or"
            ta, tb = self.truth_of(a), self.truth_of(b)
            weak = {"weak": True} if ta._atom.type.weak and tb._atom.type.weak else {}
            return api.apply(name, (ta, tb), weak)
        ta, tb = a._atom.type, b._atom.type
        if (ta.dtype, ta.weak) != (tb.dtype, tb.weak):
            raise self.bool_op_refused(node, "types")
        take, other = (b, a) if is_and else (a, b)
        weak = {"weak": True} if ta.weak else {}
        out = api.apply("where", (self.truth_of(a), take, other), weak)
        return out if ta.weak else REGISTRY["getitem"].api(out, ())  # a NumPy scalar

    def bool_op_refused(self, node, why: str):
        """The error for ``and``/``or`` PyPTO cannot compile: on ``"arrays"``, or on a run-time
        scalar and a value of another type (``"types"``)."""
        if why == "arrays":
            return self.unsupported(
                node,
                "`and`/`or` on array values",
                hint="use & and | (or np.logical_and / np.logical_or)",
            )
        word = "and" if isinstance(node.operator, cst.And) else "or"
        return self.unsupported(
            node,
            f"`{word}` of a value known only at run time and a value of another type "
            "(Python's result is one of them: its type would depend on the values)",
            hint="compare them: (a > 0) and (b > 0)",
        )

    def truth_of(self, t):
        """``bool(t)`` of a scalar known at run time: a bool itself (NumPy's or Python's),
        else a Python bool."""
        if t.dtype == np.dtype(bool):
            return t
        return api.apply("astype", (t,), {"dtype": np.dtype(bool), "weak": True})

    def eval_IfExp(self, node):
        cond = self.eval(node.test)
        if is_tensor(cond):
            raise self.unsupported(
                node,
                "a conditional expression on a value known only at run time",
                hint="use np.where(cond, a, b)",
            )
        return self.eval(node.body) if self.truth(cond, node.test) else self.eval(node.orelse)

    def truth(self, v, node) -> bool:
        """The truth of a compile-time value (sizes are decided and guarded)."""
        if isinstance(v, Expr):
            v = self.decide("ne", v, 0)
        if isinstance(v, SymCond):
            raise self.unsupported(
                node,
                "a condition on a size only the run knows (a loop variable, a size the values "
                "decide) here",
                hint="decide it in an `if` statement",
                code="PPT106",
            )
        if is_tensor(v):
            raise self.unsupported(node, "the truth value of an array")
        return bool(v)

    def absolute(self, v):
        if isinstance(v, Expr):
            return smax(v, -v)
        return abs(v)


__all__ = ["BoundMethod", "Expressions", "Undefined", "is_host", "is_size", "is_tensor"]
