"""Size questions and guards (ShapeContext), broadcasting and axis normalization."""

import pytest

from pypto.errors import AxisError, ShapeError
from pypto.shapes import (
    ShapeContext,
    broadcast_shapes,
    input_facts,
    make_guard,
    normalize_axes,
    normalize_axis,
)
from pypto.symbolic import Sym
from pypto.types import TensorType

n, m = Sym("n"), Sym("m")


def test_proofs_need_no_guard():
    ctx = ShapeContext()
    assert ctx.ge(n + 2, 1) and ctx.eq(n + 1 - 1, n) and not ctx.ge(-n - 1, 0)
    assert ctx.guards == []


def test_concrete_values_decide_and_are_guarded():
    ctx = ShapeContext(env={"n": 5, "m": 5})
    assert ctx.eq(n, m)
    assert not ctx.ge(n, 7)
    assert [str(g) for g in ctx.guards] == ["n == m", "7 >= n + 1"]
    assert all(g.holds({"n": 5, "m": 5}) for g in ctx.guards)
    assert not all(g.holds({"n": 8, "m": 5}) for g in ctx.guards)


def test_facts_answer_without_new_guards():
    facts = [make_guard(n, "==", m), make_guard(n, ">=", 3)]
    ctx = ShapeContext(facts=facts)
    assert ctx.eq(m, n)  # mirror image of the fact
    assert ctx.ge(n, 2)  # implied by n >= 3
    assert not ctx.eq(n - m, 1)  # n - m == 0 proves it
    assert ctx.guards == []


def test_without_values_the_stated_assumption_is_taken_and_guarded():
    ctx = ShapeContext()
    assert ctx.eq(n, m) is True
    assert ctx.eq(n, 1, assume=False) is False
    assert len(ctx.guards) == 2


def test_guard_negation():
    g = make_guard(n, ">=", 3)
    assert g.holds({"n": 3}) and not g.negated().holds({"n": 3})
    assert g.negated().holds({"n": 2})


def test_input_facts_say_size_symbols_are_not_one():
    facts = input_facts([TensorType(__import__("numpy").dtype("f4"), (n, 1, 4))])
    assert [str(f) for f in facts] == ["n != 1"]


def test_broadcast_shapes():
    ctx = ShapeContext(env={"n": 4, "m": 4})
    assert broadcast_shapes(ctx, (n, 1), (1, m)) == (n, m)
    assert broadcast_shapes(ctx, (3, 1), (4,)) == (3, 4)
    assert broadcast_shapes(ctx, (n,), (m,)) == (n,)
    assert broadcast_shapes(ctx, (n,), (4,)) == (4,)  # the static size is kept
    assert broadcast_shapes(ctx) == ()
    with pytest.raises(ShapeError, match=r"\(3,\) and \(4,\)"):
        broadcast_shapes(ctx, (3,), (4,))
    with pytest.raises(ShapeError):
        broadcast_shapes(ShapeContext(env={"n": 3}), (n,), (4,))


def test_derived_size_that_is_one_at_run_time_broadcasts():
    ctx = ShapeContext(env={"n": 3})
    assert broadcast_shapes(ctx, (n - 2,), (5,)) == (5,)
    assert [str(g) for g in ctx.guards] == ["n - 2 != 5", "n - 2 == 1"]


def test_axes():
    assert normalize_axis(-1, 3) == 2
    assert normalize_axes(None, 3) == (0, 1, 2)
    assert normalize_axes((2, -3), 3) == (0, 2)
    with pytest.raises(AxisError, match="out of bounds"):
        normalize_axis(3, 3)
    with pytest.raises(AxisError, match="duplicate"):
        normalize_axes((0, -3), 3)
    with pytest.raises(AxisError):
        normalize_axis(0, 0)
    with pytest.raises(AxisError, match="integer"):
        normalize_axis(1.5, 3)
