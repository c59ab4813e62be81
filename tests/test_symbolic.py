"""Symbolic sizes: canonical polynomials, exact division, min/max, evaluation."""

import operator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto.symbolic import (
    Sym,
    as_symbol,
    evaluate,
    floordiv,
    free_symbols,
    is_nonneg,
    mod,
    smax,
    smin,
)

n, m, k = Sym("n"), Sym("m"), Sym("k")


def test_canonical_form_makes_algebraic_equality_structural():
    assert (n + 1) - 1 == n
    assert n * m == m * n
    assert (n + m) * (n - m) == n * n - m * m
    assert 2 * (n + 3) == 2 * n + 6
    assert hash(n * m + 1) == hash(1 + m * n)
    assert n != m and n + 1 != n


def test_constants_collapse_to_int():
    assert (n + 2) - n == 2 and isinstance((n + 2) - n, int)
    assert n * 0 == 0 and isinstance(n * 0, int)
    assert floordiv(7, 2) == 3 and mod(7, 2) == 1


def test_exact_division_simplifies():
    assert floordiv(2 * n + 4, 2) == n + 2
    assert floordiv(n * m, m) == n
    assert floordiv(n * m * 6, 3 * m) == 2 * n
    assert mod(n * m, m) == 0
    assert floordiv(n + 1, 2) != n  # not exact: kept as an opaque atom
    assert str(floordiv(n + 1, 2)) == "(n + 1) // 2"


def test_min_max_simplify_when_the_order_is_provable():
    assert smax(n, n - 2) == n and smin(n, n - 2) == n - 2
    assert smax(n, 0) == n  # sizes are non-negative
    assert smin(n * m, 0) == 0
    assert str(smax(n - 2, 0)) == "max(n - 2, 0)"
    assert smax(n, m) == smax(m, n)  # canonical argument order


def test_nonneg_and_symbols():
    assert is_nonneg(n * m + 3) and not is_nonneg(n - 1)
    assert not is_nonneg(Sym("i", nonneg=False))
    assert free_symbols(smax(n, m) + k) == {"n", "m", "k"}
    assert as_symbol(n) == "n" and as_symbol(n + 1) is None and as_symbol(3) is None


def test_printing_reads_like_code():
    x0, k0 = Sym("x.0"), Sym("k.0")
    assert str(x0 - k0 + 1) == "x.0 - k.0 + 1"
    assert str(-n) == "-n"
    assert str(2 * n * m - 3) == "2*m*n - 3"


def test_symbolic_size_is_not_an_index():
    with pytest.raises(TypeError, match="only known at run time"):
        range(n)


def test_evaluate_needs_every_symbol():
    with pytest.raises(KeyError, match="n"):
        evaluate(n + 1, {})


_OPS = [operator.add, operator.sub, operator.mul]


@st.composite
def expressions(draw, depth=3):
    """A random expression built both symbolically and as a Python function of (n, m)."""
    if depth == 0 or draw(st.booleans()):
        leaf = draw(st.sampled_from(["n", "m", "const"]))
        if leaf == "const":
            c = draw(st.integers(-5, 5))
            return c, lambda env, c=c: c
        return Sym(leaf), lambda env, leaf=leaf: env[leaf]
    kind = draw(st.sampled_from(["arith", "floordiv", "mod", "max", "min"]))
    a, fa = draw(expressions(depth - 1))
    if kind == "arith":
        op = draw(st.sampled_from(_OPS))
        b, fb = draw(expressions(depth - 1))
        return op(a, b), lambda env: op(fa(env), fb(env))
    if kind in ("floordiv", "mod"):
        d = draw(st.integers(1, 4))
        sym, py = (floordiv, operator.floordiv) if kind == "floordiv" else (mod, operator.mod)
        return sym(a, d), lambda env: py(fa(env), d)
    b, fb = draw(expressions(depth - 1))
    sym, py = (smax, max) if kind == "max" else (smin, min)
    return sym(a, b), lambda env: py(fa(env), fb(env))


@given(expressions(), st.integers(0, 50), st.integers(0, 50))
def test_evaluation_agrees_with_python(expr_fn, nv, mv):
    expr, fn = expr_fn
    env = {"n": nv, "m": mv}
    assert evaluate(expr, env) == fn(env)


@given(expressions(), expressions(), st.integers(0, 30), st.integers(0, 30))
def test_structural_equality_implies_equal_values(e1, e2, nv, mv):
    (a, _), (b, _) = e1, e2
    if a == b:
        env = {"n": nv, "m": mv}
        assert evaluate(a, env) == evaluate(b, env)
