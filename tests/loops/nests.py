"""Random loop nests over arrays, as source text, for the loop pass's differential test.

``generate(chooser)`` returns a `Nest`: the text of a module (``import numpy as np`` and one
``def f(...)``) built from one to three *pieces*, each a loop nest of one of the shapes below
with its own arrays, and the recipe of its inputs (shapes, one float dtype, a data seed). The
chooser is either `SeedChooser(seed)` (``random.Random``) or `DrawChooser(draw)` (a Hypothesis
``draw``, so Hypothesis shrinks the choices). Every index stays in bounds by construction (the
ranges are written from the arrays' shapes), and every recurrence multiplies by a constant of
magnitude below one, so values stay small.

Each piece also says what the loop pass must decide for each of its loops (by the loop
variable, unique in the function): ``"vector"`` (``Loop.vector is not None``), ``"host"``
(``Loop.vector is None``: a carried flow dependence or scalar state), ``"accum"``
("accumulation" in ``Loop.decision``); loops whose decision is not known by construction
(ragged triangular outer loops, ...) are not listed. ``"legal"`` marks loops that may be
vectorized (anti-dependences) but where staying a host loop would only be conservative.

Shapes: independent element loops (1-D and 2-D nests, neighbour reads), reversed ranges,
ranges with a start and a step, flow dependences at distance 1 and 2 (forward and reversed),
anti-dependences, accumulations into a scalar and into a row, triangular loops, a time loop
around independent loops, scalar state carried between iterations, the loop variable as a
value, several statements per body (a write read back at the same index).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

MIN, MAX = 3, 12  # axis sizes
CONSTS = ("0.5", "2.0", "0.25", "1.5", "-0.75")
DAMP = ("0.5", "0.9", "-0.6", "0.3")  # recurrence factors: |c| < 1 keeps values bounded
FORMS = (
    "{u} * {c} + {v}",
    "{u} - {v} * {c}",
    "np.sin({u}) + {v}",
    "{u} * {v}",
    "np.maximum({u}, {v})",
    "np.tanh({u} - {v})",
    "({u} + {v}) * {c}",
)


# Known bugs of the pass the random nests stay clear of (each has a strict xfail regression case
# in tests/loops/test_loop_nests.py; delete the entry when that case passes)
KNOWN_BUGS: dict[str, str] = {}


class SeedChooser:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def choice(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class DrawChooser:
    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def choice(self, seq):
        return self.draw(self.st.sampled_from(list(seq)))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))


@dataclass
class Nest:
    source: str
    arrays: list  # [(name, shape)], in parameter order
    dtype: str  # "float32" or "float64"
    data_seed: int
    expect: dict = field(default_factory=dict)  # loop var -> "vector" / "host" / "accum" / "legal"
    shapes: tuple = ()  # the names of the pieces' shapes

    def arguments(self) -> list:
        rng = np.random.default_rng(self.data_seed)
        return [rng.standard_normal(shape).astype(self.dtype) for _, shape in self.arrays]

    def describe(self) -> str:
        lines = [self.source.rstrip(), "", "# inputs"]
        for (name, _), a in zip(self.arrays, self.arguments()):
            text = " ".join(np.array2string(a, separator=", ", threshold=10**6).split())
            lines.append(f"{name} = np.array({text}, dtype=np.{a.dtype})")
        lines.append(f"f({', '.join(n for n, _ in self.arrays)})")
        lines.append(f"# expected decisions: {self.expect}")
        return "\n".join(lines)


class _Piece:
    """One loop nest: its lines (indented once), arrays, returned names, expectations."""

    def __init__(self, ch, p: int):
        self.ch, self.p = ch, p
        self.lines: list[str] = []
        self.arrays: list = []
        self.returns: list[str] = []
        self.expect: dict = {}

    def arr(self, base: str, shape) -> str:
        name = f"{base}{self.p}"
        self.arrays.append((name, tuple(shape)))
        return name

    def v(self, base: str) -> str:  # a loop variable or local, unique in the function
        return f"{base}{self.p}"

    def size(self) -> int:
        return self.ch.integer(MIN, MAX)

    def f(self, u: str, w: str) -> str:
        return self.ch.choice(FORMS).format(u=u, v=w, c=self.ch.choice(CONSTS))

    def emit(self, *lines):
        self.lines.extend(lines)


# -- the shapes -------------------------------------------------------------------------------
def elem1d(P: _Piece):
    n = P.size()
    a, c = P.arr("a", (n,)), P.arr("c", (n,))
    b, i = P.v("b"), P.v("i")
    P.emit(f"{b} = np.zeros_like({a})")
    if P.ch.choice((0, 1)):
        P.emit(
            f"for {i} in range({a}.shape[0]):", f"    {b}[{i}] = {P.f(f'{a}[{i}]', f'{c}[{i}]')}"
        )
    else:
        P.emit(
            f"for {i} in range({a}.shape[0] - 1):",
            f"    {b}[{i}] = {P.f(f'{a}[{i}]', f'{a}[{i} + 1]')}",
        )
    P.returns.append(b)
    P.expect[i] = "vector"


def elem2d(P: _Piece):
    n, m = P.size(), P.size()
    a = P.arr("a", (n, m))
    b, i, j = P.v("b"), P.v("i"), P.v("j")
    P.emit(f"{b} = np.zeros_like({a})")
    body = f"{b}[{i}, {j}] = {P.f(f'{a}[{i}, {j}]', f'{a}[{i}, {j} + 1]')}"
    if P.ch.choice((0, 1)):
        P.emit(
            f"for {i} in range({a}.shape[0]):",
            f"    for {j} in range({a}.shape[1] - 1):",
            f"        {body}",
        )
    else:  # the inner loop over rows
        P.emit(
            f"for {j} in range({a}.shape[1] - 1):",
            f"    for {i} in range({a}.shape[0]):",
            f"        {body}",
        )
    P.returns.append(b)
    P.expect[i] = P.expect[j] = "vector"


def reversed_range(P: _Piece):
    n = P.size()
    a = P.arr("a", (n,))
    b, i, nn = P.v("b"), P.v("i"), P.v("n")
    P.emit(
        f"{nn} = {a}.shape[0]",
        f"{b} = np.zeros_like({a})",
        f"for {i} in range({nn} - 1, -1, -1):",
        f"    {b}[{i}] = {P.f(f'{a}[{i}]', f'{a}[{nn} - 1 - {i}]')}",
    )
    P.returns.append(b)
    P.expect[i] = "vector"


def stepped_range(P: _Piece):
    n = P.size()
    a = P.arr("a", (n,))
    b, i = P.v("b"), P.v("i")
    start, step = P.ch.choice((1, 2)), P.ch.choice((2, 3))
    P.emit(
        f"{b} = np.zeros_like({a})",
        f"for {i} in range({start}, {a}.shape[0], {step}):",
        f"    {b}[{i}] = {P.f(f'{a}[{i}]', f'{a}[{i} - 1]')}",
    )
    P.returns.append(b)
    P.expect[i] = "vector"


def flow(P: _Piece):
    n = P.size()
    x, a = P.arr("x", (n,)), P.arr("a", (n,))
    i, c = P.v("i"), P.ch.choice(DAMP)
    kind = P.ch.choice(("d1", "d2", "rev"))
    if kind == "d1":
        P.emit(
            f"for {i} in range(1, {x}.shape[0]):", f"    {x}[{i}] = {x}[{i} - 1] * {c} + {a}[{i}]"
        )
    elif kind == "d2":
        P.emit(
            f"for {i} in range(2, {x}.shape[0]):", f"    {x}[{i}] = {x}[{i} - 2] * {c} + {a}[{i}]"
        )
    else:  # a reversed range: iteration i reads what iteration i + 1 wrote
        P.emit(
            f"for {i} in range({x}.shape[0] - 2, -1, -1):",
            f"    {x}[{i}] = {x}[{i} + 1] * {c} + {a}[{i}]",
        )
    P.expect[i] = "host"


def anti(P: _Piece):
    n = P.size()
    x, a = P.arr("x", (n,)), P.arr("a", (n,))
    i, c = P.v("i"), P.ch.choice(DAMP)
    P.emit(f"for {i} in range({x}.shape[0] - 1):", f"    {x}[{i}] = {x}[{i} + 1] * {c} + {a}[{i}]")
    P.expect[i] = "legal"  # reads only values no iteration before it wrote


def acc_scalar(P: _Piece):
    n = P.size()
    a, b = P.arr("a", (n,)), P.arr("b", (n,))
    s, i = P.v("s"), P.v("i")
    op = P.ch.choice(("+=", "-=", "= s +", "= s + -"))
    term = P.ch.choice((f"{a}[{i}] * {b}[{i}]", P.f(f"{a}[{i}]", f"{b}[{i}]")))
    if op == "= s +":
        upd = f"{s} = {s} + ({term})"
    elif op == "= s + -":  # a chain: ``(s + x) - y``
        upd = f"{s} = {s} + {a}[{i}] - {term}"
    else:
        upd = f"{s} {op} {term}"
    P.emit(f"{s} = 0.0", f"for {i} in range({a}.shape[0]):", f"    {upd}")
    P.returns.append(s)
    P.expect[i] = "accum"


def acc_row(P: _Piece):
    n, k, m = P.size(), P.size(), P.size()
    a, b = P.arr("a", (n, k)), P.arr("b", (k, m))
    c, i, kk = P.v("c"), P.v("i"), P.v("k")
    P.emit(f"{c} = np.zeros(({a}.shape[0], {b}.shape[1]), dtype={a}.dtype)")
    body = f"{c}[{i}, :] += {a}[{i}, {kk}] * {b}[{kk}, :]"
    if P.ch.choice((0, 1)):
        P.emit(
            f"for {i} in range({a}.shape[0]):",
            f"    for {kk} in range({a}.shape[1]):",
            f"        {body}",
        )
        P.expect[i] = "vector"
    else:  # the accumulation loop outside, the independent one inside
        P.emit(
            f"for {kk} in range({a}.shape[1]):",
            f"    for {i} in range({a}.shape[0]):",
            f"        {body}",
        )
        P.expect[i] = "vector"
    P.expect[kk] = "accum"
    P.returns.append(c)


def triangular(P: _Piece):
    n = P.size()
    a = P.arr("a", (n, n))
    i, j = P.v("i"), P.v("j")
    kind = P.ch.choice(("lower", "slice", "sum"))
    if kind == "lower":
        b = P.v("b")
        P.emit(
            f"{b} = np.zeros_like({a})",
            f"for {i} in range({a}.shape[0]):",
            f"    for {j} in range({i}):",
            f"        {b}[{i}, {j}] = {P.f(f'{a}[{i}, {j}]', f'{a}[{j}, {i}]')}",
        )
        P.returns.append(b)
        P.expect[j] = "vector"
    elif kind == "slice":
        b = P.v("b")
        P.emit(
            f"{b} = np.zeros_like({a})",
            f"for {i} in range({a}.shape[0]):",
            f"    {b}[{i}, :{i} + 1] = {a}[{i}, :{i} + 1] * {P.ch.choice(CONSTS)}",
        )
        P.returns.append(b)
    else:
        s = P.v("s")
        P.emit(
            f"{s} = 0.0",
            f"for {i} in range({a}.shape[0]):",
            f"    for {j} in range({i} + 1):",
            f"        {s} += {a}[{i}, {j}]",
        )
        P.returns.append(s)
        P.expect[j] = "accum"


def time_loop(P: _Piece):
    n = P.size()
    x, a = P.arr("x", (n,)), P.arr("a", (n,))
    t, i, steps, c = P.v("t"), P.v("i"), P.ch.integer(2, 4), P.ch.choice(DAMP)
    if P.ch.choice((0, 1)):
        P.emit(
            f"for {t} in range({steps}):",
            f"    for {i} in range({x}.shape[0]):",
            f"        {x}[{i}] = {x}[{i}] * {c} + {a}[{i}]",
        )
        P.expect[i] = "vector"
    else:  # a stencil: read the neighbours into y, copy back
        y, i2 = P.v("y"), P.v("q")
        P.emit(
            f"{y} = np.zeros_like({x})",
            f"for {t} in range({steps}):",
            f"    for {i} in range(1, {x}.shape[0] - 1):",
            f"        {y}[{i}] = ({x}[{i} - 1] + {x}[{i}] + {x}[{i} + 1]) * {c} + {a}[{i}]",
            f"    for {i2} in range(1, {x}.shape[0] - 1):",
            f"        {x}[{i2}] = {y}[{i2}]",
        )
        P.returns.append(y)
        P.expect[i] = P.expect[i2] = "vector"
    P.expect[t] = "host"


def scalar_state(P: _Piece):
    n = P.size()
    a = P.arr("a", (n,))
    t, i, out, c = P.v("t"), P.v("i"), P.v("out"), P.ch.choice(DAMP)
    P.emit(
        f"{t} = 0.0",
        f"{out} = np.zeros_like({a})",
        f"for {i} in range({a}.shape[0]):",
        f"    {t} = {t} * {c} + {a}[{i}]",
        f"    {out}[{i}] = {t}",
    )
    P.returns += [out, t]
    P.expect[i] = "host"


def running_sum(P: _Piece):
    """An accumulation whose running value is read (a prefix sum): not a reduction."""
    n = P.size()
    a = P.arr("a", (n,))
    t, i, out = P.v("t"), P.v("i"), P.v("out")
    update, read = f"    {t} += {a}[{i}]", f"    {out}[{i}] = {t} * 2.0"
    body = (update, read) if P.ch.choice((0, 1)) else (read, update)
    P.emit(f"{t} = 0.0", f"{out} = np.zeros_like({a})", f"for {i} in range({a}.shape[0]):", *body)
    P.returns += [out, t]
    P.expect[i] = "host"


def loop_var_value(P: _Piece):
    i, j, out = P.v("i"), P.v("j"), P.v("out")
    if P.ch.choice((0, 1)):
        a = P.arr("a", (P.size(),))
        forms = [f"{a}[{i}] * {i}", f"{a}[{i}] - ({i} + 1)"]
        if "loop_var_times_float" not in KNOWN_BUGS:
            forms.append(f"{a}[{i}] + {i} * 0.5")
        e = P.ch.choice(forms)
        P.emit(
            f"{out} = np.zeros_like({a})",
            f"for {i} in range({a}.shape[0]):",
            f"    {out}[{i}] = {e}",
        )
    else:
        a = P.arr("a", (P.size(), P.size()))
        P.emit(
            f"{out} = np.zeros_like({a})",
            f"for {i} in range({a}.shape[0]):",
            f"    for {j} in range({a}.shape[1]):",
            f"        {out}[{i}, {j}] = {a}[{i}, {j}] * ({i} - {j})",
        )
        P.expect[j] = "vector"
        P.expect[i] = "vector"
    P.returns.append(out)
    P.expect.setdefault(i, "vector")


def multi_stmt(P: _Piece):
    n = P.size()
    a, c = P.arr("a", (n,)), P.arr("c", (n,))
    b, d, i, u = P.v("b"), P.v("d"), P.v("i"), P.v("u")
    P.emit(
        f"{b} = np.zeros_like({a})", f"{d} = np.zeros_like({a})", f"for {i} in range({a}.shape[0]):"
    )
    if P.ch.choice((0, 1)):
        P.emit(
            f"    {b}[{i}] = {P.f(f'{a}[{i}]', f'{c}[{i}]')}",
            f"    {d}[{i}] = {b}[{i}] * {P.ch.choice(CONSTS)} + {a}[{i}]",
        )
    else:  # a local temporary, then a write read back
        P.emit(
            f"    {u} = {a}[{i}] * {P.ch.choice(CONSTS)}",
            f"    {b}[{i}] = {u} * {u} + {c}[{i}]",
            f"    {d}[{i}] = {P.f(f'{b}[{i}]', u)}",
        )
    P.returns += [b, d]
    P.expect[i] = "vector"


SHAPES = {
    "elem1d": elem1d,
    "elem2d": elem2d,
    "reversed": reversed_range,
    "stepped": stepped_range,
    "flow": flow,
    "anti": anti,
    "acc_scalar": acc_scalar,
    "acc_row": acc_row,
    "triangular": triangular,
    "time_loop": time_loop,
    "scalar_state": scalar_state,
    "running_sum": running_sum,
    "loop_var": loop_var_value,
    "multi_stmt": multi_stmt,
}


def generate(ch, pieces: tuple = (1, 3), shapes=None) -> Nest:
    """A function of ``pieces`` loop nests, each of a shape drawn from ``shapes`` (all)."""
    names = list(shapes or SHAPES)
    dtype = ch.choice(("float32", "float64"))
    arrays, lines, returns, expect, used = [], [], [], {}, []
    for p in range(ch.integer(*pieces)):
        shape = ch.choice(names)
        P = _Piece(ch, p)
        SHAPES[shape](P)
        used.append(shape)
        arrays += P.arrays
        lines += P.lines
        returns += P.returns
        expect.update(P.expect)
    params = ", ".join(n for n, _ in arrays)
    body = [f"    {line}" for line in lines]
    if returns:
        body.append(f"    return {', '.join(returns)}")
    source = "import numpy as np\n\n\ndef f(" + params + "):\n" + "\n".join(body) + "\n"
    return Nest(source, arrays, dtype, ch.integer(0, 2**31 - 1), expect, tuple(used))
