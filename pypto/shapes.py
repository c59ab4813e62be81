"""Deciding questions about symbolic sizes, and the shape helpers every shape rule shares.

Shape rules ask questions such as "is this size 1?" or "is ``n - 2 >= 0``?". A ``ShapeContext``
answers them, in this order: by proof (constants, non-negative polynomials), from *facts* (guards
already known to hold), from concrete values of the symbols when tracing with real inputs, or by a
stated assumption when nothing is known (ahead-of-time compilation). Every answer that is not
proven is recorded as a ``Guard``; a graph is valid exactly for inputs on which its guards hold,
so a cached graph is reused only after its guards are checked (torch.compile's guards, in small).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace

from .errors import AxisError, ShapeError, execution_error
from .symbolic import Dim, Expr, add, as_symbol, evaluate, free_symbols, is_nonneg, mul

_NEGATE = {"==": "!=", "!=": "==", ">=": ">="}


def _normalize(expr: Dim, rel: str) -> Dim:
    """Canonical sign for (in)equalities so that a guard and its mirror image compare equal."""
    if rel in ("==", "!=") and isinstance(expr, Expr) and expr.terms[0][1] < 0:
        return mul(expr, -1)
    return expr


@dataclass(frozen=True, eq=False)
class Breach:
    """What NumPy raises where a guard fails at run time (an index past the end of an axis is
    NumPy's IndexError): the exception class, a message with ``{}`` for each of ``dims``
    (evaluated when it fails) and the user's site."""

    error: type
    message: str
    dims: tuple = ()
    site: object = None

    def exception(self, values) -> BaseException:
        text = self.message.format(*values)
        return execution_error(self.error(text), text, site=self.site)


@dataclass(frozen=True)
class Guard:
    """``expr rel 0`` for rel in ``==``, ``!=``, ``>=``; ``lhs``/``rhs`` only for display."""

    expr: Dim
    rel: str
    lhs: Dim = field(default=None, compare=False)
    rhs: Dim = field(default=None, compare=False)
    breach: Breach | None = field(default=None, compare=False)  # what NumPy raises if it fails

    def holds(self, env) -> bool:
        v = evaluate(self.expr, env)
        return v == 0 if self.rel == "==" else v != 0 if self.rel == "!=" else v >= 0

    def negated(self) -> Guard:
        if self.rel == ">=":
            return Guard(add(mul(self.expr, -1), -1), ">=", self.rhs, add(self.lhs, 1))
        return Guard(self.expr, _NEGATE[self.rel], self.lhs, self.rhs)

    def __str__(self):
        if self.lhs is None:
            return f"{self.expr} {self.rel} 0"
        return f"{self.lhs} {self.rel} {self.rhs}"


def make_guard(lhs: Dim, rel: str, rhs: Dim) -> Guard:
    return Guard(_normalize(add(lhs, mul(rhs, -1)), rel), rel, lhs, rhs)


def input_facts(types) -> list[Guard]:
    """What specialization guarantees about input sizes: a size symbol is never 1 (inputs'
    size-1 axes are specialized to the literal 1)."""
    facts = []
    for t in types:
        for d in t.shape:
            if as_symbol(d) is not None:
                facts.append(make_guard(d, "!=", 1))
    return facts


class ShapeContext:
    def __init__(self, env: dict | None = None, facts=()):
        self.env = env
        self.facts: dict = {}  # (expr, rel) -> how many scopes assert it
        self.guards: list[Guard] = []
        self._seen: set = set()
        self.breach: Breach | None = None  # set around a question whose guard NumPy checks
        # sizes the values decide (function.Bind): symbol -> (the guards checked where it is
        # bound, the loop symbols open there); loop symbols open now
        self.bound: dict[str, tuple[list, frozenset]] = {}
        self.loops: list[str] = []
        self.assume(facts)

    def assume(self, facts) -> None:
        """Add facts (a loop body knows its variable's range); ``forget`` removes them."""
        for g in facts:
            key = (g.expr, g.rel)
            self.facts[key] = self.facts.get(key, 0) + 1

    def forget(self, facts) -> None:
        for g in facts:
            key = (g.expr, g.rel)
            self.facts[key] -= 1
            if not self.facts[key]:
                del self.facts[key]

    def known(self, lhs: Dim, rel: str, rhs: Dim) -> bool | None:
        """The answer when a proof or the facts give it (nothing recorded), else None."""
        g = make_guard(lhs, rel, rhs)
        e = g.expr
        if isinstance(e, int):
            return g.holds({})
        if rel == ">=":
            if is_nonneg(e):
                return True
            if is_nonneg(add(mul(e, -1), -1)):
                return False
        elif is_nonneg(add(e, -1)) or is_nonneg(add(mul(e, -1), -1)):
            return rel == "!="  # provably nonzero
        if (e, rel) in self.facts or (rel == ">=" and self._implied(e)):
            return True
        offset = self._offset_from_equality(e)
        if offset is not None:  # e - f == offset for a known f == 0
            return Guard(offset, rel).holds({})
        neg = g.negated()
        if (neg.expr, neg.rel) in self.facts or (neg.rel == ">=" and self._implied(neg.expr)):
            return False
        return None

    def concrete(self, d: Dim) -> bool:
        """Whether every symbol of d has a value (so a question about it can be decided)."""
        return self.env is not None and free_symbols(d) <= self.env.keys()

    def _decide(self, lhs: Dim, rel: str, rhs: Dim, assume: bool) -> bool:
        answer = self.known(lhs, rel, rhs)
        if answer is not None:
            return answer
        g = make_guard(lhs, rel, rhs)
        e, neg = g.expr, g.negated()
        if self.env is not None and free_symbols(e) <= self.env.keys():
            outcome = g.holds(self.env)
        else:
            outcome = assume
        self._record(g if outcome else neg)
        return outcome

    def _offset_from_equality(self, e: Dim) -> int | None:
        """e - (a known f == 0, or a sum of two) as a constant: ``x.0 - z.0`` from the facts
        ``x.0 == y.0`` and ``y.0 == z.0``."""
        equal = [f for f, rel in self.facts if rel == "=="]
        for f in equal:
            for sign in (1, -1):
                d = add(e, mul(f, -sign))
                if isinstance(d, int):
                    return d
                for g in equal:
                    for sign2 in (1, -1):
                        d2 = add(d, mul(g, -sign2))
                        if isinstance(d2, int):
                            return d2
        return None

    def _implied(self, e: Dim) -> bool:
        """e >= 0 follows from a known g >= 0 with e - g provably non-negative."""
        known = [x for x, rel in self.facts if rel == ">="]
        known += [g.expr for g in self.guards if g.rel == ">="]
        return any(is_nonneg(add(e, mul(k, -1))) for k in known)

    def bind(self, symbol: str) -> list:
        """``symbol`` is a size bound at run time here: the list of guards that mention it,
        checked where it is bound (function.Bind)."""
        self.bound[symbol] = ([], frozenset(self.loops))
        return self.bound[symbol][0]

    def _record(self, g: Guard):
        if self.breach is not None:
            g = replace(g, breach=self.breach)
        if (g.expr, g.rel) in self._seen:
            return
        self._seen.add((g.expr, g.rel))
        names = free_symbols(g.expr)
        binds = [s for s in self.bound if s in names]
        if binds:  # checked where the last of them is bound, unless it mentions a loop's
            guards, open_there = self.bound[binds[-1]]  # variable opened since (the loop
            if not (names & set(self.loops)) - open_there:  # checks it then)
                guards.append(g)
                return
        self.guards.append(g)

    def eq(self, a: Dim, b: Dim, assume: bool = True) -> bool:
        return self._decide(a, "==", b, assume)

    def ge(self, a: Dim, b: Dim, assume: bool = True) -> bool:
        return self._decide(a, ">=", b, assume)

    def checked(self, breach: Breach, question, *args) -> bool:
        """``question(*args)`` (``self.ge``, ``self.eq``), its guard marked with what NumPy
        raises should it fail at run time."""
        saved, self.breach = self.breach, breach
        try:
            return question(*args)
        finally:
            self.breach = saved

    def value(self, d: Dim) -> int | None:
        """The concrete value of d when tracing with real inputs (for messages only)."""
        if isinstance(d, int):
            return d
        if self.env is not None and free_symbols(d) <= self.env.keys():
            return evaluate(d, self.env)
        return None

    def show_dim(self, d: Dim) -> str:
        """A size for an error message: its concrete value when known."""
        v = self.value(d)
        return str(d) if v is None else str(v)

    def show(self, shape) -> str:
        """A shape for an error message, with concrete values where known."""
        parts = [self.show_dim(d) for d in shape]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def broadcast_shapes(ctx: ShapeContext, *shapes) -> tuple[Dim, ...]:
    """NumPy broadcasting of several shapes."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        acc = dims[0]
        for d in dims[1:]:
            acc = _broadcast_dim(ctx, acc, d, shapes)
        out.append(acc)
    return tuple(out)


def _broadcast_dim(ctx: ShapeContext, a: Dim, b: Dim, shapes) -> Dim:
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    if ctx.bound and (free_symbols(a) | free_symbols(b)) & ctx.bound.keys():
        # a size the values decide (x[mask]): assumed equal, NumPy's error where it is not
        text = "operands could not be broadcast together: sizes {} and {} along an axis"
        if ctx.checked(Breach(ValueError, text, (a, b)), ctx.eq, a, b):
            return b if isinstance(b, int) else a
    if ctx.eq(a, b):  # equal sizes need no question about 1
        return b if isinstance(b, int) and not isinstance(a, int) else a
    if isinstance(b, Expr) and ctx.eq(b, 1, assume=False):
        return a
    if isinstance(a, Expr) and ctx.eq(a, 1, assume=False):
        return b
    raise ShapeError(
        "shapes " + " and ".join(ctx.show(s) for s in shapes) + " do not broadcast together",
        code="PPT201",
    )


def fits(ctx: ShapeContext, d: Dim, target: Dim) -> bool:
    """Whether a size broadcasts to ``target`` (equal, or 1)."""
    return (
        d == target
        or d == 1
        or ctx.eq(d, target)
        or (isinstance(d, Expr) and ctx.eq(d, 1, assume=False))
    )


def normalize_axis(axis, rank: int) -> int:
    try:
        a = operator.index(axis)
    except TypeError:
        raise AxisError(f"axis must be an integer, not {axis!r}") from None
    if not -rank <= a < rank:
        raise AxisError(f"axis {a} is out of bounds for array of dimension {rank}")
    return a % rank if rank else a


def normalize_axes(axis, rank: int, scalar_compat: bool = False) -> tuple[int, ...]:
    """None -> all axes; int or sequence -> sorted non-negative tuple; duplicates refused.

    ``scalar_compat``: as NumPy's ufunc reductions and squeeze, accept the int axis 0 or -1 of
    a 0-d array (meaning no axis)."""
    if scalar_compat and rank == 0 and type(axis) is int and axis in (0, -1):
        return ()
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, (tuple, list)):
        axes = tuple(normalize_axis(a, rank) for a in axis)
    else:
        axes = (normalize_axis(axis, rank),)
    if len(set(axes)) != len(axes):
        raise AxisError("duplicate value in 'axis'")
    return tuple(sorted(axes))


def size_of(shape) -> Dim:
    n: Dim = 1
    for d in shape:
        n = mul(n, d)
    return n


def unsized(shape, sized) -> tuple:
    """The shape a graph break's result is checked against: None on the axes the values size
    (their symbol is bound after it: function.Bind)."""
    axes = {k for k, _ in sized}
    return tuple(None if k in axes else d for k, d in enumerate(shape))
