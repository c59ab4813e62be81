"""Random NumPy functions, generated as source text, compile to what NumPy computes.

Hypothesis draws the input dtypes (float32, float64, sometimes int64) and broadcast-compatible
shapes, then a function body: a few assignments to temporaries, one augmented assignment
``t += ...`` and a ``return``, over the operands x, y (arrays) and z (a Python float), integer
and float literals, + - * /, ** 2 and ** 3, unary -, np.sin/cos/tanh/abs, np.exp of a bounded
argument, np.sqrt(np.abs(.)), np.maximum/minimum, np.where(a > b, c, d) and keepdims
reductions (.sum, np.mean, np.max). The module is written under tmp_path with one of three
import styles (``import numpy as np``, ``import numpy``, ``from numpy import ...``), imported,
compiled with ppto.compile, and run on random inputs next to the original.

Every value stays bounded: the leaves lie in [-2, 2] (integers in [-3, 3]), divisions are by
(c + |b|) with c >= 1, exp takes a tanh or sin, and any subexpression that could exceed
``LIMIT`` is passed through np.tanh (floats) or clamped with np.maximum/np.minimum
(integers). The generator also carries, for each subexpression, a bound on the rounding
error any correct evaluation order may make, in units of the unit roundoff u; results are
compared with the dtype's rtol plus an absolute tolerance of twice that bound (two correct
evaluations can differ by the sum of their errors). Integer results must be equal.
"""

import importlib.util
import itertools
import math
import sys
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

LIMIT = 8.0  # the largest magnitude a subexpression may have before it is squashed
CLAMP = 8  # integer subexpressions are clamped to [-CLAMP, CLAMP]
MAX_DEPTH = 3
MAX_SIDE = 5
FLOAT_LEAF, INT_LEAF = 2.0, 3
UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
RTOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-10}
INPUT_DTYPES = [np.dtype(t) for t in ("float32", "float32", "float64", "float64", "int64")]
STYLES = ["np", "numpy", "from"]
_module_ids = itertools.count()

RANDOM_SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Node:
    """A generated subexpression: its text (NumPy functions spelled ``NP.name``), its shape
    for the drawn inputs (() for Python scalars), whether it is floating point, a bound on its
    magnitude, and a bound on its rounding error in units of u."""

    text: str
    shape: tuple
    is_float: bool
    bound: float
    err: float


@dataclass
class Case:
    body: list  # lines of the function body
    used: set  # NumPy names the body uses
    x_dtype: np.dtype
    y_dtype: np.dtype
    shapes: tuple  # (x shape, y shape)
    other_shapes: tuple  # the same ranks and broadcasting pattern, other sizes
    err: float  # rounding-error bound of the returned value, in units of u
    u: float  # the unit roundoff of the least precise float input
    rtol: float  # the relative tolerance of that dtype

    def render(self, style: str) -> str:
        if style == "np":
            header, prefix = "import numpy as np\n", "np."
        elif style == "numpy":
            header, prefix = "import numpy\n", "numpy."
        else:
            names = ", ".join(sorted(self.used))
            header, prefix = (f"from numpy import {names}\n" if names else ""), ""
        lines = "".join(f"    {line.replace('NP.', prefix)}\n" for line in self.body)
        return f"{header}\n\ndef generated(x, y, z):\n{lines}"


def broadcast(*nodes):
    return tuple(np.broadcast_shapes(*(n.shape for n in nodes)))


class Builder:
    """Draws expressions over the current leaves (x, y, z and earlier temporaries)."""

    def __init__(self, draw, leaves, u):
        self.draw = draw
        self.leaves = leaves
        self.u = u
        self.used = set()

    def np(self, name):
        self.used.add(name)
        return f"NP.{name}"

    def literal(self, int_only):
        if int_only or self.draw(st.booleans()):
            k = self.draw(st.integers(1, 3))
            return Node(str(k), (), False, float(k), 0.0)
        v = self.draw(st.sampled_from([0.25, 0.5, 1.5, 2.0, 2.5]))
        return Node(repr(v), (), True, v, 0.0)

    def leaf(self, int_only):
        choices = [n for n in self.leaves if not (int_only and n.is_float)]
        k = self.draw(st.integers(0, len(choices)))
        return self.literal(int_only) if k == len(choices) else choices[k]

    def expr(self, depth, int_only=False):
        if depth == 0 or self.draw(st.integers(0, 4)) == 0:
            return self.leaf(int_only)
        ops = ["arith", "arith", "pow", "neg", "abs", "extreme", "where", "reduce"]
        if not int_only:
            ops += ["div", "div", "trig", "trig", "exp", "sqrt"]
        op = self.draw(st.sampled_from(ops))
        return self.squash(getattr(self, f"op_{op}")(depth - 1, int_only), int_only)

    def squash(self, node, int_only):
        if node.bound <= LIMIT:
            return node
        if node.is_float and not int_only:
            return Node(f"{self.np('tanh')}({node.text})", node.shape, True, 1.0, node.err + 1)
        text = f"{self.np('minimum')}({self.np('maximum')}({node.text}, -{CLAMP}), {CLAMP})"
        return Node(text, node.shape, node.is_float, float(CLAMP), node.err)

    def op_arith(self, d, int_only):
        a, b = self.expr(d, int_only), self.expr(d, int_only)
        sym = self.draw(st.sampled_from("+-*"))
        if sym == "*":
            bound = a.bound * b.bound
            err = a.err * b.bound + b.err * a.bound + bound
        else:
            bound = a.bound + b.bound
            err = a.err + b.err + bound
        text = f"({a.text} {sym} {b.text})"
        return Node(text, broadcast(a, b), a.is_float or b.is_float, bound, err)

    def op_div(self, d, _):
        a = self.expr(d)
        if self.draw(st.booleans()):
            k = self.draw(st.sampled_from([2, 4]))
            return Node(f"({a.text} / {k})", a.shape, True, a.bound / k, a.err / k + a.bound)
        b = self.expr(d)
        c = self.draw(st.sampled_from([1, 1.5, 2]))
        bound = a.bound / c
        err = (a.err + bound * b.err) / c + 3 * bound
        text = f"({a.text} / ({c} + {self.np('abs')}({b.text})))"
        return Node(text, broadcast(a, b), True, bound, err)

    def op_pow(self, d, int_only):
        a = self.expr(d, int_only)
        k = self.draw(st.sampled_from([2, 3]))
        bound = a.bound**k
        err = k * a.bound ** (k - 1) * a.err + k * bound
        return Node(f"({a.text} ** {k})", a.shape, a.is_float, bound, err)

    def op_neg(self, d, int_only):
        a = self.expr(d, int_only)
        return replace(a, text=f"(-{a.text})")

    def op_abs(self, d, int_only):
        a = self.expr(d, int_only)
        return replace(a, text=f"{self.np('abs')}({a.text})")

    def op_extreme(self, d, int_only):
        a, b = self.expr(d, int_only), self.expr(d, int_only)
        name = self.np(self.draw(st.sampled_from(["maximum", "minimum"])))
        return Node(
            f"{name}({a.text}, {b.text})",
            broadcast(a, b),
            a.is_float or b.is_float,
            max(a.bound, b.bound),
            max(a.err, b.err),
        )

    def op_where(self, d, int_only):
        a, b = self.expr(d), self.expr(d)
        c, e = self.expr(d, int_only), self.expr(d, int_only)
        text = f"{self.np('where')}({a.text} > {b.text}, {c.text}, {e.text})"
        return Node(
            text,
            broadcast(a, b, c, e),
            c.is_float or e.is_float,
            max(c.bound, e.bound),
            max(c.err, e.err),
        )

    def op_trig(self, d, _):
        a = self.expr(d)
        name = self.np(self.draw(st.sampled_from(["sin", "cos", "tanh"])))
        return Node(f"{name}({a.text})", a.shape, True, 1.0, a.err + 1)

    def op_exp(self, d, _):
        a = self.expr(d)
        inner = self.np(self.draw(st.sampled_from(["tanh", "sin"])))
        return Node(f"{self.np('exp')}({inner}({a.text}))", a.shape, True, math.e, 3 * (a.err + 2))

    def op_sqrt(self, d, _):
        a = self.expr(d)
        bound = math.sqrt(a.bound)
        # |sqrt(p) - sqrt(q)| <= sqrt(|p - q|): an error e*u in a is at most sqrt(e/u)*u after
        err = math.sqrt(a.err / self.u) + bound
        return Node(f"{self.np('sqrt')}({self.np('abs')}({a.text}))", a.shape, True, bound, err)

    def op_reduce(self, d, int_only):
        a = self.expr(d, int_only)
        if not a.shape:
            return a
        axis = self.draw(st.integers(-len(a.shape), len(a.shape) - 1))
        shape = list(a.shape)
        shape[axis] = 1
        kinds = ["sum", "max"] if int_only else ["sum", "mean", "max"]
        kind = self.draw(st.sampled_from(kinds))
        args = f"axis={axis}, keepdims=True"
        n = MAX_SIDE  # the error bounds hold for any size up to MAX_SIDE
        if kind == "sum":
            return Node(
                f"{a.text}.sum({args})",
                tuple(shape),
                a.is_float,
                a.bound * a.shape[axis],
                n * a.err + n * n * a.bound,
            )
        if kind == "mean":
            text = f"{self.np('mean')}({a.text}, {args})"
            return Node(text, tuple(shape), True, a.bound, a.err + (n + 1) * a.bound)
        return Node(f"{self.np('max')}({a.text}, {args})", tuple(shape), a.is_float, a.bound, a.err)

    def statement(self):
        """An array-valued expression that is never a bare name (no temporary aliases an
        argument or another temporary)."""
        e = self.expr(MAX_DEPTH)
        arrays = [n for n in self.leaves if n.shape]
        if not e.shape:
            a = arrays[self.draw(st.integers(0, len(arrays) - 1))]
            bound = e.bound + a.bound
            e = Node(
                f"({e.text} + {a.text})", a.shape, e.is_float or a.is_float, bound, e.err + bound
            )
        if any(e.text == n.text for n in self.leaves):
            e = replace(e, text=f"({e.text} * 2)", bound=2 * e.bound, err=2 * e.err)
        return self.squash(e, int_only=False)

    def fit(self, e, target):
        """Reduce e until ``target += e`` is valid: no more axes than the target, and size 1
        wherever the target has size 1."""
        while len(e.shape) > len(target.shape):
            text = f"{self.np('max')}({e.text}, axis=0)"
            e = replace(e, text=text, shape=e.shape[1:])
        offset = len(target.shape) - len(e.shape)
        for axis, size in enumerate(e.shape):
            if size > 1 and target.shape[axis + offset] == 1:
                shape = list(e.shape)
                shape[axis] = 1
                bound = e.bound * MAX_SIDE
                err = MAX_SIDE * e.err + MAX_SIDE * bound
                e = Node(
                    f"{e.text}.sum(axis={axis}, keepdims=True)",
                    tuple(shape),
                    e.is_float,
                    bound,
                    err,
                )
        return e


def other_sizes(shapes, draw):
    """The same ranks and pattern of size-1 axes, with other sizes for the other axes."""
    ndim = max(len(s) for s in shapes)
    full = np.broadcast_shapes(*shapes)
    new = [draw(st.integers(2, MAX_SIDE)) if full[i] > 1 else 1 for i in range(ndim)]
    return tuple(
        tuple(1 if side == 1 else new[ndim - len(s) + i] for i, side in enumerate(s))
        for s in shapes
    )


@st.composite
def cases(draw):
    x_dtype, y_dtype = draw(st.sampled_from(INPUT_DTYPES)), draw(st.sampled_from(INPUT_DTYPES))
    drawn = draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=2, min_dims=1, max_dims=3, min_side=1, max_side=MAX_SIDE
        )
    )
    shapes = tuple(s if s else (1,) for s in drawn.input_shapes)
    # Integer inputs compute in float64 wherever floats appear (z is a Python float).
    floats = [t for t in (x_dtype, y_dtype) if t.kind == "f"] or [np.dtype(np.float64)]
    least = min(floats, key=lambda t: t.itemsize)
    u = UNIT_ROUNDOFF[least]

    def operand(name, dtype, shape):
        is_float = dtype.kind == "f"
        return Node(name, shape, is_float, FLOAT_LEAF if is_float else float(INT_LEAF), 0.0)

    leaves = [
        operand("x", x_dtype, shapes[0]),
        operand("y", y_dtype, shapes[1]),
        Node("z", (), True, FLOAT_LEAF, 0.0),
    ]
    builder = Builder(draw, leaves, u)
    body = []
    for i in range(draw(st.integers(1, 3))):
        node = builder.statement()
        body.append(f"t{i} = {node.text}")
        leaves.append(replace(node, text=f"t{i}"))
    temps = leaves[3:]
    k = draw(st.integers(0, len(temps) - 1))
    target = temps[k]
    value = builder.fit(builder.expr(MAX_DEPTH - 1, int_only=not target.is_float), target)
    body.append(f"{target.text} += {value.text}")
    bound = target.bound + value.bound
    leaves[3 + k] = replace(target, bound=bound, err=target.err + value.err + bound)
    result = builder.statement()
    body.append(f"return {result.text}")
    other = other_sizes(shapes, draw)
    return Case(body, builder.used, x_dtype, y_dtype, shapes, other, result.err, u, RTOL[least])


def make_array(rng, dtype, shape, layout):
    """Random values (generic, so comparisons in np.where do not tie) in a drawn layout."""
    if dtype.kind == "f":
        a = rng.uniform(-FLOAT_LEAF, FLOAT_LEAF, shape).astype(dtype)
    else:
        a = rng.integers(-INT_LEAF, INT_LEAF + 1, shape).astype(dtype)
    if layout == "strided":
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if layout == "fortran":
        return np.asfortranarray(a)
    if layout == "reversed":
        return np.flip(np.flip(a).copy())
    return a


layouts = st.sampled_from(["c", "c", "strided", "fortran", "reversed"])


def load(source, tmp_path):
    """Write ``source`` to a fresh module file under tmp_path and import it."""
    name = f"pypto_random_fn_{next(_module_ids)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def unload(module):
    sys.modules.pop(module.__name__, None)


def assert_matches(got, want, case, what):
    """Same kind, dtype and shape; values within rtol plus the error bound of the case."""
    assert isinstance(want, np.ndarray)
    assert isinstance(got, np.ndarray), f"{what}: {type(got)} where NumPy gives an ndarray"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != NumPy's {want.shape}"
    if want.dtype.kind == "f":
        atol = 2 * case.err * case.u
        np.testing.assert_allclose(
            got, want, rtol=case.rtol, atol=atol, equal_nan=True, err_msg=what
        )
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def run_both(fn, compiled, case, shapes, seed, draw_layout):
    rng = np.random.default_rng(seed)
    x = make_array(rng, case.x_dtype, shapes[0], draw_layout())
    y = make_array(rng, case.y_dtype, shapes[1], draw_layout())
    z = float(rng.uniform(-FLOAT_LEAF, FLOAT_LEAF))
    want_x, want_y, got_x, got_y = x.copy(), y.copy(), x.copy(), y.copy()
    want = fn(want_x, y=want_y, z=z)
    got = compiled(got_x, y=got_y, z=z)
    note(f"x={x!r}\ny={y!r}\nz={z!r}")
    assert_matches(got, want, case, f"shapes {shapes}")
    # The body only assigns temporaries: the arguments are left as they were.
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(got_y, y)


@RANDOM_SETTINGS
@given(case=cases(), style=st.sampled_from(STYLES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_random_functions_match_numpy(tmp_path, case, style, seed, data):
    source = case.render(style)
    note(source)
    module = load(source, tmp_path)
    try:
        compiled = ppto.compile(module.generated)

        def draw_layout():
            return data.draw(layouts)

        run_both(module.generated, compiled, case, case.shapes, seed, draw_layout)
        # The same compiled function again, on other sizes of the same ranks.
        run_both(module.generated, compiled, case, case.other_shapes, seed + 1, draw_layout)
    finally:
        unload(module)


@settings(RANDOM_SETTINGS, max_examples=40)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_the_import_styles_compile_alike(tmp_path, case, seed):
    """One body in the three import styles: each compiles to what the original computes."""
    modules = [load(case.render(style), tmp_path) for style in STYLES]
    note(case.render("from"))
    try:
        for module in modules:
            run_both(
                module.generated,
                ppto.compile(module.generated),
                case,
                case.shapes,
                seed,
                lambda: "c",
            )
    finally:
        for module in modules:
            unload(module)
