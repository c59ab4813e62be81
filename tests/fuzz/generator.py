"""Random NumPy-style functions for the differential fuzzer, as source text.

``generate(seed)`` returns a `Program`: the text of a module (``import numpy as np`` and one
``def f(x0, x1, s0): ...``) and the recipe of its inputs. The same seed gives the same program
and the same inputs. The generator evaluates every subexpression it writes with NumPy on the
drawn inputs while it builds the function, so it knows each value's shape, dtype and magnitude:
operands are chosen to broadcast, comparisons and other non-smooth functions are only applied
where the operands are well apart (a rounding difference cannot flip them), and any float
subexpression larger than ``LIMIT`` is passed through np.tanh (integers through np.clip). The
largest magnitude seen (sums count their absolute values) is the program's ``scale``, from which
the oracle derives its absolute tolerance.

What it writes (each with a tunable weight in `Config`): temporaries, several outputs sharing
intermediates, elementwise arithmetic and functions, masks in arithmetic, reductions (several of
one shared value), cumsum, matmul, concatenate, transposes, reshapes, flips, squeezes, new axes,
slices with steps (empty ones too), integer indexing, writes into arguments and into views of
arguments (plain and augmented, tuple swaps), reads of values computed before a write, np.copy,
gathers through index arrays (``x[idx]``, ``x[:, idx]``, ``np.take``, ``np.take_along_axis``,
``x[idx, 1:]``, ``x[rows, cols]``; the indices computed, read from integer data, from argmax or a
stable argsort, some negative), boolean-mask selections, scatters (``x[idx] = v`` with repeated
indices, ``x[idx] += v``, ``np.add.at``, ``x[mask] = v``), Python and NumPy scalars, Python ints
from shapes, shape comparisons in ``if``, ``for`` loops
with slice writes and with the loop index, float32/float64/int32/int64/bool inputs with size-1
and size-0 axes. A few programs (``Config.p_raise``) end in a statement on which NumPy raises,
to compare exception classes.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass, field

import numpy as np

LIMIT = 8.0  # float subexpressions larger than this are squashed with np.tanh
CLAMP = 8  # integer subexpressions are clipped to [-CLAMP, CLAMP]
MARGIN = 1e-2  # operands of comparisons (and sqrt(abs)) stay this far from the edge
HIDDEN = {"np", "i", "t"}  # not operands: the module and the loop variables
ALLOWED = {np.dtype(t) for t in ("bool", "int32", "int64", "float32", "float64")}


@dataclass
class Config:
    """Weights of what the generator writes (relative, per statement or expression)."""

    statements: tuple = (3, 9)  # how many statements (min, max)
    depth: int = 3  # expression depth
    arrays: tuple = (1, 3)  # array arguments
    scalars: tuple = (0, 2)  # scalar arguments
    p_empty: float = 0.06  # an axis of size 0
    p_one: float = 0.25  # an axis of size 1 (broadcasting)
    p_raise: float = 0.06  # end in a statement on which NumPy raises
    p_nan: float = 0.03  # accept a NaN (mean of an empty array)
    p_layout: float = 0.1  # an input given as a non-contiguous view
    p_pure: float = 0.3  # only assignments and a return (the lazy API runs these)
    dtypes: dict = field(
        default_factory=lambda: {"float32": 5, "float64": 4, "int64": 1, "int32": 0.5}
    )
    stmt: dict = field(
        default_factory=lambda: {
            "assign": 6,
            "view": 1.5,
            "copy": 0.5,
            "shape_int": 0.8,
            "write": 3,
            "view_write": 1.5,
            "swap": 0.4,
            "loop": 1.0,
            "if_shape": 0.7,
            "shared_reduce": 1.0,
            "scatter": 1.0,
        }
    )
    ops: dict = field(
        default_factory=lambda: {
            "arith": 6,
            "div": 2,
            "pow": 1,
            "neg": 1,
            "func": 3,
            "extreme": 1.5,
            "where": 1,
            "mask": 1.5,
            "reduce": 2.5,
            "cumsum": 0.7,
            "matmul": 0.8,
            "concat": 0.6,
            "transpose": 1,
            "reshape": 0.7,
            "flip": 0.6,
            "squeeze": 0.4,
            "newaxis": 0.5,
            "slice": 2,
            "index": 1,
            "astype": 0.4,
            "intop": 0.5,
            "boolop": 0.4,
            "gather": 1.0,
            "select": 0.3,
        }
    )


@dataclass
class Input:
    """One argument: an array (``kind`` "array", rebuilt from ``value`` and ``layout`` each
    time) or a scalar ("float", "int", "np.float32", "np.float64")."""

    name: str
    kind: str
    value: object
    layout: str = "c"  # "c", "f" (Fortran order), "step" (every other element), "rev"

    def make(self):
        if self.kind == "array":
            return build_layout(np.array(self.value), self.layout)
        if self.kind == "float":
            return float(self.value)
        if self.kind == "int":
            return int(self.value)
        return getattr(np, self.kind.split(".")[1])(self.value)

    def describe(self) -> str:
        if self.kind != "array":
            return f"{self.name} = {self.kind}({self.value!r})"
        a = np.asarray(self.value)
        lay = "" if self.layout == "c" else f"  # given as layout {self.layout!r}"
        text = np.array2string(a, separator=", ", threshold=10**6, max_line_width=10**6)
        text = " ".join(text.split())
        return f"{self.name} = np.array({text}, dtype=np.{a.dtype}).reshape({a.shape}){lay}"


def build_layout(a: np.ndarray, layout: str) -> np.ndarray:
    """``a``'s values in a fresh array of the given memory layout."""
    if layout == "f":
        return np.asfortranarray(a)
    if layout == "step" and a.ndim:
        big = np.zeros((2 * a.shape[0],) + a.shape[1:], a.dtype)
        big[::2] = a
        return big[::2]
    if layout == "rev" and a.ndim:
        return np.ascontiguousarray(a[::-1])[::-1]
    return a.copy()


@dataclass
class Program:
    seed: int
    source: str
    inputs: list
    scale: float = 1.0  # the largest magnitude of any intermediate value
    f32: bool = False  # float32 arithmetic somewhere: float32 tolerances for every float
    pure: bool = False  # no writes, control flow or shapes: the lazy API can run it
    raises: bool = False  # written to make NumPy raise
    features: frozenset = frozenset()

    def arguments(self) -> list:
        return [i.make() for i in self.inputs]

    def describe(self) -> str:
        lines = [f"# seed {self.seed}", self.source.rstrip(), "", "# inputs"]
        lines += [i.describe() for i in self.inputs]
        lines.append(f"f({', '.join(i.name for i in self.inputs)})")
        return "\n".join(lines)


@dataclass
class Node:
    text: str
    val: object
    mag: float
    atom: bool = False  # a name or literal: needs no parentheses

    @property
    def shape(self):
        return np.shape(self.val)

    @property
    def ndim(self):
        return np.ndim(self.val)

    @property
    def dtype(self):
        return np.result_type(self.val) if not isinstance(self.val, bool) else np.dtype(bool)

    @property
    def is_float(self):
        return self.dtype.kind == "f"

    @property
    def kind(self):
        return self.dtype.kind

    @property
    def p(self):  # the text, parenthesized unless atomic
        return self.text if self.atom else f"({self.text})"


def _max_abs(v) -> float:
    a = np.asarray(v)
    if a.size == 0 or a.dtype.kind not in "biuf":
        return 0.0
    with np.errstate(all="ignore"):
        m = np.abs(a.astype(np.float64))
    m = m[np.isfinite(m)]
    return float(m.max()) if m.size else 0.0


def _broadcastable(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _fits_into(shape, target) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


class Reject(Exception):
    pass


class Gen:
    def __init__(self, seed: int, cfg: Config):
        self.seed = seed
        self.r = random.Random(seed)
        self.cfg = cfg
        self.ns: dict = {"np": np}
        self.body: list[str] = []
        self.args: list[str] = []  # array argument names
        self.scalars: list[str] = []
        self.count = 0
        self.scale = 1.0
        self.f32 = False
        self.features: set[str] = set()
        self.pure = self.r.random() < cfg.p_pure
        self.allow_nan = self.r.random() < cfg.p_nan
        self.loop_var: str | None = None
        self.depth_guard = 0

    # -- helpers ------------------------------------------------------------------------------
    def pick(self, weights: dict):
        keys = [k for k, w in weights.items() if w > 0]
        return self.r.choices(keys, [weights[k] for k in keys])[0]

    def fresh(self, prefix="t"):
        self.count += 1
        return f"{prefix}{self.count}"

    def eval(self, text):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(text, self.ns)

    def node(self, text, children=(), extra=0.0, atom=False, bound=True) -> Node:
        """The node for ``text`` (evaluated now), squashed when large; Reject when it raises or
        has a dtype or value the fuzzer avoids."""
        try:
            val = self.eval(text)
        except Exception as e:
            raise Reject(str(e)) from None
        if isinstance(val, complex) or (
            isinstance(val, (np.ndarray, np.generic)) and val.dtype not in ALLOWED
        ):
            raise Reject("dtype")
        a = np.asarray(val)
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)) and not self.allow_nan:
            raise Reject("non-finite")
        mag = max([_max_abs(val), extra] + [c.mag for c in children])
        n = Node(text, val, mag, atom)
        if bound and _max_abs(val) > LIMIT:
            if n.is_float:
                n = self.node(f"np.tanh({text})", [n], atom=False)
            elif n.kind in "iu":
                n = self.node(f"np.clip({text}, -{CLAMP}, {CLAMP})", [n])
        self.scale = max(self.scale, n.mag)
        return n

    def values(self, fits=None, arrays_only=False):
        """The names in scope whose values can be operands."""
        out = []
        for name, v in self.ns.items():
            if name in HIDDEN or name.startswith("__"):
                continue
            if isinstance(v, (np.ndarray, np.generic)) or (
                type(v) in (int, float) and not arrays_only
            ):
                if isinstance(v, (np.ndarray, np.generic)) and v.dtype not in ALLOWED:
                    continue
                if arrays_only and not isinstance(v, np.ndarray):
                    continue
                if fits is None or fits(np.shape(v)):
                    out.append(name)
        return out

    # -- leaves -------------------------------------------------------------------------------
    def literal(self, int_only=False) -> Node:
        k = self.r.random()
        if int_only or k < 0.3:
            return self.node(str(self.r.randint(1, 3)), atom=True)
        if k < 0.8:
            return self.node(repr(self.r.choice([0.5, 1.5, 2.0, 0.25, 3.0, 1.0])), atom=True)
        t = self.r.choice(["float32", "float64"])
        self.features.add("np_scalar")
        if t == "float32":
            self.f32 = True
        return self.node(f"np.{t}({self.r.choice([0.5, 1.5, 2.0])})", atom=True)

    def shape_int(self) -> Node | None:
        arrays = [a for a in self.values(arrays_only=True) if np.ndim(self.ns[a])]
        if self.pure or not arrays:
            return None
        a = self.r.choice(arrays)
        nd = np.ndim(self.ns[a])
        self.features.add("shape_int")
        k = self.r.random()
        if k < 0.2:
            return self.node(f"len({a})", atom=True)
        if k < 0.3:
            return self.node(f"{a}.ndim", atom=True)
        ax = self.r.randrange(nd)
        if self.r.random() < 0.2:
            ax -= nd
        return self.node(f"{a}.shape[{ax}]", atom=True)

    def leaf(self, fits=None, int_only=False) -> Node:
        names = self.values(fits)
        if int_only:
            names = [n for n in names if np.result_type(self.ns[n]).kind in "biu"]
        k = self.r.random()
        if names and k < 0.75:
            return self.node(self.r.choice(names), atom=True)
        if k < 0.85:
            n = self.shape_int()
            if n is not None:
                return n
        return self.literal(int_only)

    # -- expressions --------------------------------------------------------------------------
    def expr(self, depth, fits=None, int_only=False) -> Node:
        if depth <= 0 or self.r.random() < 0.2:
            return self.leaf(fits, int_only)
        for _ in range(6):
            op = self.pick(self.cfg.ops)
            try:
                n = getattr(self, f"op_{op}")(depth - 1, fits, int_only)
            except Reject:
                continue
            if n is None:
                continue
            if fits is not None and not fits(n.shape):
                continue
            if int_only and n.kind not in "biu":
                continue
            return n
        return self.leaf(fits, int_only)

    def array_expr(self, depth, fits=None, min_ndim=1) -> Node:
        for _ in range(8):
            n = self.expr(depth, fits)
            if np.ndim(n.val) >= min_ndim and isinstance(n.val, np.ndarray):
                return n
        names = [a for a in self.values(fits, arrays_only=True) if np.ndim(self.ns[a]) >= min_ndim]
        if not names:
            raise Reject("no array")
        return self.node(self.r.choice(names), atom=True)

    def pair(self, d, fits, int_only=False):
        a = self.expr(d, fits, int_only)
        b = self.expr(
            d, lambda s: _broadcastable(s, a.shape) and (fits is None or fits(s)), int_only
        )
        return a, b

    def op_arith(self, d, fits, int_only):
        a, b = self.pair(d, fits, int_only)
        sym = self.r.choice("+-*")
        if a.kind == "b" and b.kind == "b" and sym == "-" and not int_only:
            sym = "+"  # bool - bool raises (kept for the raising statements)
        return self.node(f"{a.p} {sym} {b.p}", [a, b])

    def op_div(self, d, fits, int_only):
        if int_only:
            return None
        a = self.expr(d, fits)
        k = self.r.random()
        if k < 0.3:
            return self.node(f"{a.p} / {self.r.choice(['2.0', '4', '0.5', '3'])}", [a])
        b = self.expr(d, lambda s: _broadcastable(s, a.shape) and (fits is None or fits(s)))
        c = self.r.choice(["1.0", "1", "2.0"])
        return self.node(f"{a.p} / ({c} + np.abs({b.text}))", [a, b])

    def op_pow(self, d, fits, int_only):
        a = self.expr(d, fits, int_only)
        k = self.r.random()
        if k < 0.6 or int_only:
            return self.node(f"{a.p} ** {self.r.choice(['2', '3', '2'])}", [a])
        if k < 0.8:
            return self.node(f"(1.0 + np.abs({a.text})) ** 0.5", [a])
        return self.node(f"2.0 ** np.tanh({a.text})", [a])

    def op_neg(self, d, fits, int_only):
        a = self.expr(d, fits, int_only)
        if a.kind == "b":
            return None
        return self.node(f"-{a.p}", [a])

    def op_func(self, d, fits, int_only):
        a = self.expr(d, fits, int_only)
        if a.kind == "b":
            return None
        if int_only:
            return self.node(f"np.abs({a.text})", [a])
        f = self.r.choice(["sin", "cos", "tanh", "exp", "abs", "sqrt", "abs"])
        if f == "exp":
            inner = self.r.choice(["tanh", "sin"])
            return self.node(f"np.exp(np.{inner}({a.text}))", [a])
        if f == "sqrt":
            if np.asarray(a.val).size and np.min(np.abs(a.val)) > MARGIN * max(1.0, a.mag):
                return self.node(f"np.sqrt(np.abs({a.text}))", [a])
            return self.node(f"np.sqrt(1.0 + np.abs({a.text}))", [a])
        if f == "abs" and self.r.random() < 0.3:
            return self.node(f"abs({a.text})", [a])
        return self.node(f"np.{f}({a.text})", [a])

    def op_extreme(self, d, fits, int_only):
        a, b = self.pair(d, fits, int_only)
        names = ["maximum", "minimum"]
        if a.kind == "f" and b.kind == "f":
            names += ["logaddexp", "copysign"]
        return self.node(f"np.{self.r.choice(names)}({a.text}, {b.text})", [a, b])

    def compare(self, d, fits=None):
        """A mask ``a > b`` whose operands are well apart everywhere."""
        for _ in range(4):
            a, b = self.pair(d, fits)
            if a.kind == "b" or b.kind == "b":
                continue
            with np.errstate(all="ignore"):
                gap = np.abs(np.asarray(a.val, np.float64) - np.asarray(b.val, np.float64))
            exact = a.kind in "iu" and b.kind in "iu"
            if not exact and gap.size and np.min(gap) < MARGIN * max(1.0, a.mag, b.mag):
                continue
            sym = self.r.choice([">", "<", ">=", "<=", "==", "!="] if exact else [">", "<"])
            return self.node(f"{a.p} {sym} {b.p}", [a, b])
        raise Reject("no well-separated comparison")

    def op_where(self, d, fits, int_only):
        c = self.compare(d, fits)
        a = self.expr(
            d, lambda s: _broadcastable(s, c.shape) and (fits is None or fits(s)), int_only
        )
        b = self.expr(
            d,
            lambda s: (
                _broadcastable(s, np.broadcast_shapes(c.shape, a.shape))
                and (fits is None or fits(s))
            ),
            int_only,
        )
        self.features.add("where")
        return self.node(f"np.where({c.text}, {a.text}, {b.text})", [a, b, c])

    def op_mask(self, d, fits, int_only):
        a = self.expr(d, fits, int_only)
        c = self.compare(d, lambda s: _broadcastable(s, a.shape) and (fits is None or fits(s)))
        self.features.add("mask")
        if self.r.random() < 0.5:
            return self.node(f"{a.p} * ({c.text})", [a, c])
        return self.node(f"({c.text}) * {a.p}", [a, c])

    def op_boolop(self, d, fits, int_only):
        c = self.compare(d, fits)
        k = self.r.random()
        if k < 0.3:
            return self.node(f"~({c.text})", [c])
        if k < 0.6:
            e = self.compare(d, lambda s: _broadcastable(s, c.shape) and (fits is None or fits(s)))
            return self.node(f"({c.text}) {self.r.choice('&|^')} ({e.text})", [c, e])
        f = self.r.choice(["np.any", "np.all"])
        if self.r.random() < 0.5 and np.ndim(c.val):
            return self.node(f"{f}({c.text}, axis={self.r.randrange(np.ndim(c.val))})", [c])
        return self.node(f"{f}({c.text})", [c])

    def axis_arg(self, nd):
        k = self.r.random()
        if nd == 0 or k < 0.3:
            return None
        if k < 0.85 or nd == 1:
            ax = self.r.randrange(nd)
            return str(ax - nd if self.r.random() < 0.25 else ax)
        axes = sorted(self.r.sample(range(nd), self.r.randint(2, nd)))
        return "(" + ", ".join(map(str, axes)) + ")"

    def op_reduce(self, d, fits, int_only):
        a = self.array_expr(d)
        nd = np.ndim(a.val)
        f = self.r.choice(["sum", "mean", "max", "min", "sum"])
        if int_only and f == "mean":
            f = "sum"
        axis = self.axis_arg(nd)
        kw = [] if axis is None else [f"axis={axis}"]
        if self.r.random() < 0.3:
            kw.append("keepdims=True")
        extra = _max_abs(a.val) * max(1, np.asarray(a.val).size) if f == "sum" else 0.0
        self.features.add("reduce")
        if self.r.random() < 0.5:
            return self.node(f"{a.p}.{f}({', '.join(kw)})", [a], extra)
        name = {"max": "max", "min": "min"}.get(f, f)
        if self.r.random() < 0.3 and f in ("max", "min"):
            name = {"max": "amax", "min": "amin"}[f]
        return self.node(f"np.{name}({', '.join([a.text, *kw])})", [a], extra)

    def op_cumsum(self, d, fits, int_only):
        a = self.array_expr(d)
        nd = np.ndim(a.val)
        extra = _max_abs(a.val) * max(1, np.asarray(a.val).size)
        self.features.add("cumsum")
        if self.r.random() < 0.25:
            return self.node(f"np.cumsum({a.text})", [a], extra)
        ax = self.r.randrange(nd)
        if self.r.random() < 0.5:
            return self.node(f"np.cumsum({a.text}, axis={ax})", [a], extra)
        return self.node(f"{a.p}.cumsum(axis={ax})", [a], extra)

    def op_matmul(self, d, fits, int_only):
        a = self.array_expr(d)
        s = a.shape
        k = s[-1]
        cands = [
            n
            for n in self.values(arrays_only=True)
            if np.ndim(self.ns[n]) >= 1
            and (
                np.shape(self.ns[n])[0] == k
                if np.ndim(self.ns[n]) == 1
                else np.shape(self.ns[n])[-2] == k
            )
            and np.result_type(self.ns[n]).kind != "b"
        ]
        if a.kind == "b":
            return None
        r = self.r.random()
        if len(s) >= 2 and r < 0.4:
            other = f"{a.p}.T" if len(s) == 2 else f"np.swapaxes({a.text}, -1, -2)"
            text = f"{a.p} @ {other}" if self.r.random() < 0.5 else f"{other} @ {a.p}"
        elif cands and r < 0.8:
            text = f"{a.p} @ {self.r.choice(cands)}"
        else:
            text = f"np.matmul({a.text}, {a.text})" if len(s) == 1 else f"{a.p} @ {a.p}.T"
        self.features.add("matmul")
        extra = _max_abs(a.val) ** 2 * max(1, k) * 2 + LIMIT**2 * max(1, k)
        return self.node(text, [a], extra)

    def op_concat(self, d, fits, int_only):
        a = self.array_expr(d)
        nd = np.ndim(a.val)
        ax = self.r.randrange(nd)
        same = [
            n
            for n in self.values(arrays_only=True)
            if np.ndim(self.ns[n]) == nd
            and all(
                x == y for i, (x, y) in enumerate(zip(np.shape(self.ns[n]), a.shape)) if i != ax
            )
        ]
        r = self.r.random()
        if same and r < 0.5:
            b = self.r.choice(same)
        elif r < 0.75:
            b = f"-{a.p}"
        else:
            b = f"np.flip({a.text}, axis={ax})"
        self.features.add("concat")
        kw = "" if ax == 0 and self.r.random() < 0.5 else f", axis={ax}"
        return self.node(f"np.concatenate([{a.text}, {b}]{kw})", [a])

    def op_transpose(self, d, fits, int_only):
        a = self.array_expr(d)
        nd = np.ndim(a.val)
        r = self.r.random()
        self.features.add("transpose")
        if r < 0.4:
            return self.node(f"{a.p}.T", [a])
        if r < 0.6 or nd < 2:
            return self.node(f"np.transpose({a.text})", [a])
        perm = list(range(nd))
        self.r.shuffle(perm)
        if r < 0.75:
            return self.node(f"np.transpose({a.text}, {tuple(perm)})", [a])
        if r < 0.87:
            src, dst = self.r.randrange(-nd, nd), self.r.randrange(-nd, nd)
            return self.node(f"np.moveaxis({a.text}, {src}, {dst})", [a])
        return self.node(f"{a.p}.transpose({', '.join(map(str, perm))})", [a])

    def op_reshape(self, d, fits, int_only):
        a = self.array_expr(d)
        size = np.asarray(a.val).size
        r = self.r.random()
        self.features.add("reshape")
        if r < 0.3:
            return self.node(f"{a.p}.reshape(-1)", [a])
        if r < 0.4:
            return self.node(f"{a.p}.ravel()", [a])
        divs = [p for p in range(1, 7) if size and size % p == 0] or [1]
        p = self.r.choice(divs)
        if size == 0:
            return self.node(f"{a.p}.reshape({p}, 0)", [a])
        if r < 0.7:
            return self.node(f"{a.p}.reshape({p}, -1)", [a])
        return self.node(f"np.reshape({a.text}, (-1, {p}))", [a])

    def op_flip(self, d, fits, int_only):
        a = self.array_expr(d)
        self.features.add("flip")
        if self.r.random() < 0.3:
            return self.node(f"np.flip({a.text})", [a])
        ax = self.r.randrange(np.ndim(a.val))
        return self.node(f"np.flip({a.text}, axis={ax})", [a])

    def op_squeeze(self, d, fits, int_only):
        a = self.array_expr(d)
        ones = [i for i, n in enumerate(a.shape) if n == 1]
        self.features.add("squeeze")
        if ones and self.r.random() < 0.5:
            return self.node(f"np.squeeze({a.text}, axis={self.r.choice(ones)})", [a])
        if self.r.random() < 0.5:
            return self.node(f"{a.p}.squeeze()", [a])
        return self.node(f"np.squeeze({a.text})", [a])

    def op_newaxis(self, d, fits, int_only):
        a = self.expr(d)
        nd = np.ndim(a.val)
        r = self.r.random()
        self.features.add("newaxis")
        if r < 0.3 or nd == 0:
            return (
                self.node(f"{a.p}[None]", [a])
                if nd
                else self.node(f"np.expand_dims({a.text}, 0)", [a])
            )
        if r < 0.6:
            return self.node(f"{a.p}[:, None]", [a])
        if r < 0.8:
            return self.node(f"{a.p}[..., None]", [a])
        return self.node(f"np.expand_dims({a.text}, {self.r.randint(0, nd)})", [a])

    def index_text(self, shape, allow_int=True):
        """A basic index for ``shape``: slices with steps (negative, empty), integers, ...."""
        parts = []
        nd = len(shape)
        k = self.r.randint(1, max(1, nd))
        for n in shape[:k]:
            r = self.r.random()
            if r < 0.15 and allow_int and n > 0:
                i = self.r.randrange(n)
                parts.append(str(i - n if self.r.random() < 0.3 else i))
            elif r < 0.3:
                parts.append(f"{self.r.randint(0, max(0, n - 1))}:")
            elif r < 0.4:
                parts.append(f":{self.r.randint(-2, n)}")
            elif r < 0.55:
                parts.append(f"::{self.r.choice([2, 3, -1, -2])}")
            elif r < 0.65:
                lo = self.r.randint(0, n)
                parts.append(f"{lo}:{lo}")  # empty
                self.features.add("empty_slice")
            elif r < 0.75:
                parts.append(f"{self.r.randint(-n, -1) if n else -1}::-{self.r.choice([1, 2])}")
            elif r < 0.85:
                parts.append(f"1:{self.r.choice(['-1', ''])}")
            else:
                parts.append(":")
        if self.r.random() < 0.1:
            parts = ["..."] + parts[1:] if len(parts) > 1 else ["..."]
        return ", ".join(parts)

    def op_slice(self, d, fits, int_only):
        a = self.array_expr(d)
        self.features.add("slice")
        return self.node(f"{a.p}[{self.index_text(a.shape, allow_int=False)}]", [a])

    def op_index(self, d, fits, int_only):
        a = self.array_expr(d)
        self.features.add("index")
        if self.loop_var is not None and a.shape and self.r.random() < 0.5:
            return self.node(f"{a.p}[{self.loop_var}]", [a])
        return self.node(f"{a.p}[{self.index_text(a.shape)}]", [a])

    def op_astype(self, d, fits, int_only):
        a = self.array_expr(d)
        if a.kind in "biu":
            t = self.r.choice(["float32", "float64", "int64"])
        else:
            t = self.r.choice(["float32", "float64"])
        if t == "float32":
            self.f32 = True
        return self.node(f"{a.p}.astype(np.{t})", [a])

    def op_intop(self, d, fits, int_only):
        a = self.expr(d, fits, True)
        if a.kind not in "iu":
            return None
        return self.node(f"{a.p} {self.r.choice(['//', '%'])} {self.r.choice([2, 3])}", [a])

    def index_array(self, n: int, ndim_max: int = 2) -> Node:
        """An integer array expression whose values index an axis of length ``n`` (repeats
        among them; some programs count them from the end)."""
        if n == 0:
            raise Reject("no index into an empty axis")
        k = self.r.random()
        ints = [
            a
            for a in self.values(arrays_only=True)
            if self.ns[a].dtype.kind in "iu" and 0 < self.ns[a].ndim <= ndim_max
        ]
        exact = [  # arguments: their values are exact, so a tie is a tie on both sides
            a
            for a in self.args
            if isinstance(self.ns.get(a), np.ndarray)
            and self.ns[a].dtype.kind in "fi"
            and 0 < self.ns[a].ndim <= ndim_max + 1
            and self.ns[a].size
        ]
        if ints and k < 0.3:
            text = f"np.abs({self.r.choice(ints)}) % {n}"
        elif exact and k < 0.5:
            a = self.r.choice(exact)
            nd = self.ns[a].ndim
            if self.r.random() < 0.6 and nd > 1:
                f = self.r.choice(["argmax", "argmin"])
                text = f"np.{f}({a}, axis={self.r.randrange(nd)}) % {n}"
            elif nd <= ndim_max:
                text = f"np.argsort({a}, axis={self.r.randrange(nd)}, kind='stable') % {n}"
            else:
                text = f"np.argmax({a}, axis=0) % {n}"
        else:
            m, c, s = self.r.randint(1, 5), self.r.randrange(n), self.r.choice([1, 2, 3])
            rng = f"np.arange({m})"
            if ndim_max > 1 and self.r.random() < 0.2:
                p = self.r.randint(1, 3)
                rng = f"np.arange({m * p}).reshape({m}, {p})"
            text = f"({s} * {rng} + {c}) % {n}" if s != 1 or c else f"{rng} % {n}"
        if self.r.random() < 0.25:
            text = f"{text} - {n}"
        self.features.add("index_array")
        return self.node(text, bound=False)

    def op_gather(self, d, fits, int_only):
        a = self.array_expr(d)
        nd = a.ndim
        axes = [ax for ax in range(nd) if a.shape[ax]]
        if not axes or nd > 3:
            return None
        ax = self.r.choice(axes)
        n = a.shape[ax]
        r = self.r.random()
        self.features.add("gather")
        if r < 0.15 and np.size(a.val):  # of the array flattened
            i = self.index_array(np.size(a.val), 1)
            return self.node(f"np.take({a.text}, {i.text})", [a, i])
        i = self.index_array(n, 2 if nd < 3 else 1)
        pre = ":, " * ax
        if r < 0.45:
            return self.node(f"{a.p}[{pre}{i.text}]", [a, i])
        if r < 0.6:
            axis = ax - nd if self.r.random() < 0.3 else ax
            if self.r.random() < 0.5:
                return self.node(f"np.take({a.text}, {i.text}, axis={axis})", [a, i])
            return self.node(f"{a.p}.take({i.text}, axis={axis})", [a, i])
        if r < 0.75:  # the index matched to the other axes (broadcast)
            shape = [1] * nd
            m = self.r.randint(1, 4)
            shape[ax] = m
            c = self.r.randrange(n)
            idx = f"(np.arange({m}).reshape({tuple(shape)}) * 2 + {c}) % {n}"
            if self.r.random() < 0.5:
                others = [
                    b
                    for b in self.args
                    if isinstance(self.ns.get(b), np.ndarray)
                    and np.shape(self.ns[b]) == a.shape
                    and self.ns[b].dtype.kind in "fi"
                ]
                if others:
                    b = self.r.choice(others)
                    idx = f"np.argsort({b}, axis={ax}, kind='stable')"
            return self.node(f"np.take_along_axis({a.text}, {idx}, axis={ax})", [a])
        if r < 0.9 and nd >= 2:  # beside slices or an integer
            other = self.r.choice([k for k in range(nd) if k != ax])
            items = [":"] * nd
            items[ax] = i.text
            items[other] = self.r.choice(
                [
                    "1:",
                    "::-1",
                    ":2",
                    str(self.r.randrange(a.shape[other])) if a.shape[other] else "1:",
                ]
            )
            while items and items[-1] == ":":
                items.pop()
            return self.node(f"{a.p}[{', '.join(items)}]", [a, i])
        if nd >= 2 and a.shape[ax] and ax + 1 < nd and a.shape[ax + 1]:  # two index arrays
            j = self.index_array(a.shape[ax + 1], 1)
            if not _broadcastable(i.shape, j.shape):
                return None
            return self.node(f"{a.p}[{pre}{i.text}, {j.text}]", [a, i, j])
        return self.node(f"{a.p}[{pre}{i.text}]", [a, i])

    def op_select(self, d, fits, int_only):
        """``a[mask]``: the elements where a mask holds (a length the values decide)."""
        a = self.array_expr(d)
        if not 1 <= a.ndim <= 2:
            return None
        if self.r.random() < 0.6:
            c = self.compare(d, lambda s: tuple(s) == a.shape)
        else:
            c = self.compare(d, lambda s: tuple(s) == a.shape[:1])
        if c.shape not in (a.shape, a.shape[:1]):
            return None
        self.features.add("select")
        return self.node(f"{a.p}[{c.text}]", [a, c])

    # -- statements ---------------------------------------------------------------------------
    def run(self, lines):
        """Execute new statements in the namespace (Reject if NumPy raises)."""
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec("\n".join(lines), self.ns)
        except Exception as e:
            raise Reject(str(e)) from None
        self.check_values()

    def check_values(self):
        for name in self.values():
            v = self.ns[name]
            m = _max_abs(v)
            if m > 64 * LIMIT:
                raise Reject(f"{name} too large")
            a = np.asarray(v)
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)) and not self.allow_nan:
                raise Reject("non-finite")
            self.scale = max(self.scale, m)

    def snapshot(self):
        return len(self.body), self.scale, set(self.features), self.count

    def restore(self, snap):
        """Back to the state after the first ``snap`` statements: the body re-run on fresh
        inputs (a copy of the namespace would lose which arrays are views of which)."""
        n, self.scale, self.features, self.count = snap
        del self.body[n:]
        self.ns = {"np": np, **{i.name: i.make() for i in self.input_list}}
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec("\n".join(self.body), self.ns)

    def targets(self):
        """Writable arrays: arguments and temporaries (views of arguments among them)."""
        return [
            n
            for n in self.values(arrays_only=True)
            if isinstance(self.ns[n], np.ndarray) and self.ns[n].flags.writeable and self.ns[n].ndim
        ]

    def rhs_for(self, target_shape, d):
        return self.expr(d, lambda s: _fits_into(s, target_shape))

    def st_assign(self):
        n = self.expr(self.cfg.depth)
        name = self.fresh()
        return [f"{name} = {n.text}"]

    def st_view(self):
        arrays = list(self.targets())
        if not arrays:
            return None
        a = self.r.choice(arrays)
        v = self.ns[a]
        r = self.r.random()
        name = self.fresh("v")
        self.features.add("view")
        if r < 0.35:
            return [f"{name} = {a}[{self.index_text(v.shape)}]"]
        if r < 0.5:
            return [f"{name} = {a}.T"]
        if r < 0.7:
            return [f"{name} = np.flip({a}, axis={self.r.randrange(v.ndim)})"]
        if r < 0.8:
            return [f"{name} = np.squeeze({a})"]
        if r < 0.9:
            return [f"{name} = {a}[None]"]
        return [f"{name} = {a}.reshape(-1)"]

    def st_copy(self):
        arrays = self.targets()
        if not arrays:
            return None
        a = self.r.choice(arrays)
        name = self.fresh("c")
        self.features.add("copy")
        text = f"np.copy({a})" if self.r.random() < 0.6 else f"{a}.copy()"
        return [f"{name} = {text}"]

    def st_shape_int(self):
        n = self.shape_int()
        if n is None:
            return None
        name = self.fresh("n")
        k = self.r.random()
        if k < 0.3:
            return [f"{name} = {n.text}"]
        if k < 0.6:
            return [f"{name} = {n.text} - 1"]
        return [
            f"{name} = {n.text} * {self.r.choice(['2', '0.5', 's0' if 's0' in self.ns else '3'])}"
        ]

    def write_line(self, target_text, target_shape, d=None):
        d = self.cfg.depth - 1 if d is None else d
        rhs = self.rhs_for(target_shape, d)
        op = self.r.choice(["=", "=", "+=", "-=", "*="])
        self.features.add("write" if op == "=" else "augmented_write")
        return f"{target_text} {op} {rhs.text}"

    def st_write(self):
        targets = [t for t in self.targets() if t in self.args] or self.targets()
        if not targets:
            return None
        t = self.r.choice(targets)
        v = self.ns[t]
        r = self.r.random()
        if r < 0.2:
            return [self.write_line(t, v.shape)]
        idx = self.index_text(v.shape)
        try:
            shape = self.eval(f"{t}[{idx}]").shape
        except Exception:
            return None
        return [self.write_line(f"{t}[{idx}]", shape)]

    def st_view_write(self):
        args = [a for a in self.targets() if a in self.args]
        if not args:
            return None
        a = self.r.choice(args)
        v = self.ns[a]
        name = self.fresh("v")
        kind = self.r.choice(["flip", "T", "slice", "squeeze", "step"])
        self.features.add(f"view_write_{kind}")
        if kind == "flip":
            view = f"np.flip({a}, axis={self.r.randrange(v.ndim)})"
        elif kind == "T":
            view = f"{a}.T"
        elif kind == "slice":
            view = f"{a}[1:]"
        elif kind == "squeeze":
            view = f"np.squeeze({a})"
        else:
            view = f"{a}[::2]"
        try:
            vshape = self.eval(view).shape
        except Exception:
            return None
        first = f"{name} = {view}"
        if len(vshape) and self.r.random() < 0.4:
            try:
                ishape = self.eval(f"({view})[0]").shape
            except Exception:
                return None
            return [first, self.write_line(f"{name}[0]", ishape)]
        if self.r.random() < 0.3:
            return [first, f"{name} *= {self.r.choice(['2', '2.0', '-1', '0.5'])}"]
        return [first, self.write_line(name, vshape)]

    def st_swap(self):
        args = [a for a in self.targets() if a in self.args and self.ns[a].shape[0] >= 2]
        if not args:
            return None
        a = self.r.choice(args)
        n = self.ns[a].shape[0]
        i, j = self.r.sample(range(n), 2)
        self.features.add("swap")
        if self.r.random() < 0.5:
            return [f"{a}[{i}], {a}[{j}] = {a}[{j}], {a}[{i}]"]
        return [f"{a}[{i}], {a}[{j}] = {a}[{j}].copy(), {a}[{i}].copy()"]

    def st_loop(self):
        args = [a for a in self.targets() if a in self.args]
        if not args:
            return None
        a = self.r.choice(args)
        v = self.ns[a]
        n = v.shape[0]
        kind = self.r.choice(["stencil", "index", "index", "accumulate"])
        self.features.add(f"loop_{kind}")
        if kind == "stencil":
            same = [b for b in self.targets() if self.ns[b].shape == v.shape]
            b = self.r.choice(same)
            k = self.r.randint(1, 3)
            c = self.r.choice(["0.5", "0.33333", "0.25"])
            if self.r.random() < 0.5 and v.ndim == 1:
                body = [f"    {a}[1:-1] = {c} * ({b}[:-2] + {b}[2:])"]
            else:
                body = [f"    {a}[1:-1] = {c} * ({b}[:-2] + {b}[1:-1] + {b}[2:])"]
            if self.r.random() < 0.5 and b != a:
                body.append(f"    {b}[1:-1] = {c} * ({a}[:-2] + {a}[1:-1] + {a}[2:])")
            return [f"for t in range({k}):", *body]
        if n == 0:
            return None
        r = self.r.random()
        if r < 0.3:
            rng = f"range({self.r.randint(0, n)})"
        elif r < 0.6:
            rng = f"range({a}.shape[0])"
        elif r < 0.8:
            rng = f"range(1, {a}.shape[0])"
        else:
            ints = [s for s in self.scalars if isinstance(self.ns.get(s), int)]
            rng = f"range({self.r.choice(ints)})" if ints else f"range({n})"
        self.ns["i"] = 0
        self.loop_var = "i"
        try:
            if kind == "index":
                c = self.r.choice(["2.0", "0.5", "-1.0"])
                if self.r.random() < 0.5:
                    body = [f"    {a}[i] = {a}[i] * {c} + 1.0"]
                    if v.dtype.kind in "iu":
                        body = [f"    {a}[i] = {a}[i] * 2 + 1"]
                else:
                    rhs = self.rhs_for(v.shape[1:], 1)
                    body = [f"    {a}[i] {self.r.choice(['=', '+='])} np.tanh({rhs.text})"]
                    if v.dtype.kind in "iu":
                        body = [f"    {a}[i] = {a}[i] - 1"]
            else:
                if v.dtype.kind in "iu":
                    return None
                acc = self.fresh("acc")
                init = [f"{acc} = np.zeros_like({a}[0])"]
                self.ns[acc] = np.zeros_like(v[0])
                rhs = self.rhs_for(v.shape[1:], 1)
                body = [f"    {acc} = np.tanh({acc} + {a}[i] * {rhs.p})"]
                return [*init, f"for i in {rng}:", *body]
        finally:
            self.loop_var = None
            self.ns.pop("i", None)
        return [f"for i in {rng}:", *body]

    def st_if_shape(self):
        arrays = self.targets()
        if not arrays:
            return None
        a = self.r.choice(arrays)
        b = self.r.choice(self.values(arrays_only=True))
        v = self.ns[a]
        r = self.r.random()
        if r < 0.35:
            cond = f"{a}.shape == {b}.shape"
        elif r < 0.55:
            cond = f"{a}.shape[0] > {self.r.randint(0, 4)}"
        elif r < 0.7:
            cond = f"{a}.shape == {v.shape!r}" if self.r.random() < 0.6 else f"{a}.shape == (2,)"
        elif r < 0.85:
            cond = f"len({a}) {self.r.choice(['>=', '<', '=='])} {self.r.randint(1, 4)}"
        else:
            cond = f"{a}.shape != {b}.shape"
        self.features.add("if_shape")
        name = self.fresh()
        e1 = self.expr(self.cfg.depth - 1)
        e2 = None
        for _ in range(6):
            cand = self.expr(self.cfg.depth - 1)
            if cand.shape == e1.shape and cand.dtype == e1.dtype:
                e2 = cand
                break
        if e2 is None:
            e2 = self.node(f"{e1.p} * 0.5" if e1.is_float else f"{e1.p} + 1", [e1])
            if e2.dtype != e1.dtype:
                e2 = self.node(f"-{e1.p}", [e1])
        lines = [f"if {cond}:", f"    {name} = {e1.text}", "else:", f"    {name} = {e2.text}"]
        if self.r.random() < 0.3:
            w = self.st_write()
            if w:
                lines.insert(2, "    " + w[0])
        return lines

    def st_shared_reduce(self):
        src = self.array_expr(self.cfg.depth - 1)
        name = self.fresh("v")
        self.ns[name] = self.eval(src.text)
        v = self.ns[name]
        nd = v.ndim
        outs = []
        for _ in range(2):
            f = self.r.choice(["max", "min", "sum", "mean"])
            if f in ("max", "min") and v.size == 0:
                f = "sum"
            ax = self.axis_arg(nd)
            inner = f"{name}.{f}()" if ax is None else f"{name}.{f}(axis={ax})"
            if ax is not None and self.r.random() < 0.5:
                g = self.r.choice(["max", "min", "sum"])
                try:
                    if self.eval(inner).size == 0 and g != "sum":
                        g = "sum"
                except Exception:
                    pass
                inner = f"{inner}.{g}()"
            outs.append(inner)
        del self.ns[name]
        self.features.add("shared_reduce")
        r1, r2 = self.fresh("r"), self.fresh("r")
        return [f"{name} = {src.text}", f"{r1} = {outs[0]}", f"{r2} = {outs[1]}"]

    def st_scatter(self):
        """Writes at index arrays (repeats: NumPy's rules) or where a mask holds."""
        targets = [t for t in self.targets() if t in self.args] or self.targets()
        if not targets:
            return None
        t = self.r.choice(targets)
        v = self.ns[t]
        if v.ndim > 3:
            return None
        self.features.add("write_scatter")
        r = self.r.random()
        if r < 0.2:  # where a mask holds
            c = self.compare(1, lambda s: tuple(s) == v.shape)
            if c.shape != v.shape:
                return None
            lhs = f"{t}[{c.text}]"
            if self.r.random() < 0.5:
                return [f"{lhs} = {self.literal().text}"]
            rhs = self.rhs_for(v.shape, 1)
            return [
                f"{lhs} {self.r.choice(['=', '+='])} ({rhs.text})[{c.text}]"
                if _fits_into(rhs.shape, v.shape) and rhs.shape == v.shape
                else f"{lhs} = {self.literal().text}"
            ]
        axes = [ax for ax in range(v.ndim) if v.shape[ax]]
        if not axes:
            return None
        ax = self.r.choice(axes) if self.r.random() < 0.3 else axes[0]
        i = self.index_array(v.shape[ax], 1 if v.ndim > 2 else 2)
        pre = ":, " * ax
        try:
            shape = self.eval(f"{t}[{pre}{i.text}]").shape
        except Exception:
            return None
        rhs = self.rhs_for(shape, self.cfg.depth - 2)
        if r < 0.35 and ax == 0 and v.dtype.kind != "b":
            f = self.r.choice(["add", "add", "subtract", "maximum", "multiply"])
            return [f"np.{f}.at({t}, {i.text}, {rhs.text})"]
        op = self.r.choice(["=", "=", "+=", "-="]) if v.dtype.kind != "b" else "="
        return [f"{t}[{pre}{i.text}] {op} {rhs.text}"]

    def st_raise(self):
        """A statement on which NumPy raises."""
        arrays = self.values(arrays_only=True)
        if not arrays:  # (every name holds a scalar: nothing to raise on)
            raise Reject("no array to raise on")
        a = self.r.choice(arrays)
        v = self.ns[a]
        opts = ["empty_max", "add_big_int", "reshape"]
        if v.ndim:
            opts += ["index", "axis", "gather"]
        if v.dtype.kind in "iu":
            opts += ["neg_pow", "true_div_inplace"]
        if v.dtype.kind == "f":
            opts += ["bool_sub"]
        if not self.pure:
            opts += ["zero_div"]
        other = [b for b in arrays if not _broadcastable(np.shape(self.ns[b]), v.shape)]
        if other:
            opts += ["broadcast"]
        k = self.r.choice(opts)
        self.features.add(f"raise_{k}")
        name = self.fresh("e")
        if k == "empty_max":
            return [f"{name} = {a}[0:0].max()"] if v.ndim else [f"{name} = np.max({a}[None][0:0])"]
        if k == "add_big_int":
            return [f"{name} = {a}.astype(np.int8) + 300"]
        if k == "reshape":
            return [f"{name} = {a}.reshape({v.size + 1})"]
        if k == "index":
            return [f"{name} = {a}[{v.shape[0]}]"]
        if k == "gather":
            n = v.shape[0]
            i = self.r.choice([f"np.arange({n + 1})", f"np.arange(2) - {n + 1}", f"[{n}]"])
            return [f"{name} = {a}[{i}]"]
        if k == "axis":
            return [f"{name} = {a}.sum(axis={v.ndim})"]
        if k == "neg_pow":
            return [f"{name} = {a} ** -1"]
        if k == "true_div_inplace":
            return [f"{a} /= 2"] if a in self.args else [f"{name} = {a}.copy()", f"{name} /= 2"]
        if k == "bool_sub":
            return [f"{name} = ({a} > 0) - ({a} < 0)"]
        if k == "zero_div":
            s = self.r.choice([s for s in self.scalars if type(self.ns[s]) is float] or ["1.5"])
            z = f"({a}.ndim - {v.ndim})" if self.r.random() < 0.5 else "0.0"
            return [f"{name} = {s} / {z}"]
        return [f"{name} = {a} + {self.r.choice(other)}"]

    def statement(self):
        kinds = dict(self.cfg.stmt)
        if self.pure:
            kinds = {k: w for k, w in kinds.items() if k in ("assign", "shared_reduce")}
            kinds["view"] = 1.0
        k = self.pick(kinds)
        return getattr(self, f"st_{k}")()

    # -- the program --------------------------------------------------------------------------
    def inputs(self) -> list[Input]:
        r = self.r
        main = self.pick(self.cfg.dtypes)
        rank = r.choices([0, 1, 2, 3], [0.5, 3, 4, 1.5])[0]

        def side():
            x = r.random()
            if x < self.cfg.p_empty:
                return 0
            if x < self.cfg.p_empty + self.cfg.p_one:
                return 1
            return r.randint(2, 5)

        base = [side() for _ in range(rank)]
        out = []
        for i in range(r.randint(*self.cfg.arrays)):
            nd = r.randint(max(0, rank - 1), rank) if i else rank
            shape = [1 if r.random() < self.cfg.p_one * 0.5 else n for n in base[rank - nd :]]
            if i == 0 and 0 in base and r.random() < 0.5:
                shape = [n if n else 1 for n in shape]  # most programs keep some elements
            dtype = main
            x = r.random()
            if x < 0.15:
                dtype = r.choice(["float32", "float64"])
            elif x < 0.2:
                dtype = r.choice(["int64", "int32", "bool"])
            rng = np.random.default_rng([self.seed, i])
            if dtype == "bool":
                val = rng.random(shape) < 0.5
            elif dtype.startswith("int"):
                val = rng.integers(-3, 4, shape).astype(dtype)
            else:
                val = np.round(rng.uniform(-2, 2, shape), 3).astype(dtype)
            if dtype == "float32":
                self.f32 = True
            layout = "c"
            if len(shape) and r.random() < self.cfg.p_layout:
                layout = r.choice(["f", "step", "rev"])
            out.append(Input(f"x{i}", "array", val, layout))
        for j in range(r.randint(*self.cfg.scalars)):
            x = r.random()
            if x < 0.45:
                out.append(Input(f"s{j}", "float", round(r.uniform(-2, 2), 2)))
            elif x < 0.8:
                out.append(Input(f"s{j}", "int", r.randint(0, 3)))
            else:
                kind = r.choice(["np.float32", "np.float64"])
                if kind == "np.float32":
                    self.f32 = True
                out.append(Input(f"s{j}", kind, round(r.uniform(-2, 2), 2)))
        return out

    def output(self) -> str:
        temps = [n for n in self.values() if n not in self.args and n not in self.scalars]
        r = self.r.random()
        k = self.r.choice([1, 1, 2, 2, 3])
        if r < 0.1 and any(
            f.startswith(("write", "augmented", "view_write", "loop", "swap"))
            for f in self.features
        ):
            return ""  # no return: None
        outs = []
        for _ in range(k):
            x = self.r.random()
            if temps and x < 0.45:
                outs.append(self.r.choice(temps))
                continue
            try:
                if x < 0.6 and temps:
                    t = self.r.choice(temps)
                    lit = self.r.choice(["1.0", "2", "s0" if "s0" in self.ns else "0.5"])
                    n = self.node(f"{t} + {lit}", [])
                else:
                    n = self.expr(self.cfg.depth - 1)
                outs.append(n.text)
            except Reject:
                outs.append(self.r.choice(self.args))
        if k == 1 and self.r.random() < 0.7:
            return f"return {outs[0]}"
        return "return " + ", ".join(outs)


def generate(seed: int, cfg: Config | None = None) -> Program:
    cfg = cfg or Config()
    g = Gen(seed, cfg)
    inputs = g.inputs()
    g.input_list = inputs
    for i in inputs:
        g.ns[i.name] = i.make()
        (g.args if i.kind == "array" else g.scalars).append(i.name)
    raises = False
    n = g.r.randint(*cfg.statements)
    for _ in range(n):
        for _attempt in range(4):
            snap = g.snapshot()
            try:
                lines = g.statement()
                if not lines:
                    continue
                g.run(lines)
            except Reject:
                g.restore(snap)
                continue
            g.body.extend(lines)
            break
        else:
            continue
    if g.r.random() < cfg.p_raise:
        for _attempt in range(4):
            snap = g.snapshot()
            try:
                lines = g.st_raise()
            except Reject:
                continue
            try:
                g.run(lines)
            except Reject:
                kind = {f for f in g.features if f.startswith("raise_")}
                g.restore(snap)
                g.features |= kind
                g.body.extend(lines)
                raises = True
                break
            g.restore(snap)
    ret = "" if raises else g.output()
    if raises and " = " in g.body[-1]:  # the raising value is used: not dead code
        ret = f"return {g.body[-1].split(' = ')[0]}"
    body = g.body + ([ret] if ret else [])
    if not body:
        body = ["return x0"]
    pure = g.pure and not any(
        f.startswith(("write", "augmented", "view_write", "loop", "if", "swap", "shape"))
        or f == "augmented_write"
        for f in g.features
    )
    params = ", ".join(i.name for i in inputs)
    src = "import numpy as np\n\n\ndef f(" + params + "):\n"
    src += "".join(f"    {line}\n" for line in body)
    return Program(
        seed=seed,
        source=src,
        inputs=inputs,
        scale=g.scale,
        f32=g.f32,
        pure=pure and not raises,
        raises=raises,
        features=frozenset(g.features),
    )
