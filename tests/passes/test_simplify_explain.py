"""Simplification (each rewrite keeps NumPy's answer and types) and ppto.explain's report."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as ppto
from pypto.passes.pipeline import plan_graph


def plan_of_chain(chain, **bindings):
    return plan_graph(ppto.trace(chain, **bindings))


def ops_of(plan):
    return [e.op for e in plan.graph.eqns]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transpose_of_transpose_and_unit_arithmetic_disappear(dtype):
    x = ppto.tensor("x")
    chain = ppto.sin(ppto.transpose(ppto.transpose(x, (1, 0)), (1, 0)) * 1 / 1 - 0)
    data = np.random.default_rng(0).standard_normal((4, 3)).astype(dtype)
    plan = plan_of_chain(chain, x=data)
    assert ops_of(plan) == ["sin"]
    got = chain.run(x=data)
    np.testing.assert_array_equal(got, np.sin(data.T.T * 1 / 1 - 0))
    assert got.dtype == dtype
    assert any("transpose(transpose(x)) -> x" in n for n in plan.simplified)


def test_identities_never_change_a_dtype_or_a_signed_zero():
    x = ppto.tensor("x")
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    chain = x * 1.0  # int32 * 1.0 is float64: not an identity
    assert ops_of(plan_of_chain(chain, x=ints)) == ["multiply"]
    assert chain.run(x=ints).dtype == np.float64
    zeros = np.array([-0.0, 0.0])
    chain = x + 0.0  # -0.0 + 0.0 == +0.0: not an identity
    assert ops_of(plan_of_chain(chain, x=zeros)) == ["add"]
    np.testing.assert_array_equal(np.signbit(chain.run(x=zeros)), [False, False])


def _specials(dtype):
    """Every kind of float: zeros of both signs, subnormals, the extremes, infinities, NaN,
    powers of two and random values over the whole exponent range."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(7)
    values = [0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal, info.tiny,
              info.tiny * 3, info.max, -info.max, np.inf, -np.inf, np.nan, 1.0, 0.5]  # fmt: skip
    mantissa = rng.uniform(-2, 2, 400)
    exponent = rng.integers(info.minexp - info.nmant, info.maxexp, 400)
    spread = np.ldexp(mantissa, exponent)
    return np.concatenate([np.array(values, np.float64), spread]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_division_by_a_power_of_two_becomes_an_exact_multiplication(dtype):
    """x / 2^k runs as x * 2^-k only where 2^-k is exact in x's type: bit for bit NumPy's
    division on every kind of value; 3.0 and powers whose reciprocal overflows stay divisions."""
    x = ppto.tensor("x")
    info = np.finfo(dtype)
    data = _specials(dtype)
    big = float(2.0 ** (info.maxexp - 1))  # 2^-k is subnormal: still exact
    tiny = float(info.smallest_subnormal)  # 1 / tiny overflows
    cases = [(2.0, True), (-0.25, True), (big, True), (3.0, False), (tiny, False), (2, True),
             (-8, True), (6, False)]  # fmt: skip
    assert ops_of(plan_of_chain(x / 2**2000, x=data)) == ["divide"]  # beyond every float
    for c, rewritten in cases:
        chain = x / c
        assert ops_of(plan_of_chain(chain, x=data)) == ["multiply" if rewritten else "divide"]
        with np.errstate(all="ignore"):
            want = data / c
            got = chain.run(x=data)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{got.itemsize}"))
    ints = np.arange(-5, 6)
    assert ops_of(plan_of_chain(x / 2, x=ints)) == ["divide"]  # int / int: float64 division
    np.testing.assert_array_equal((x / 2).run(x=ints), ints / 2)
    strong = x / np.float64(2)  # float32 / float64: computed in float64, still exact
    data32 = _specials(np.float32)
    np.testing.assert_array_equal(strong.run(x=data32), data32 / np.float64(2))


def test_an_output_is_never_replaced_by_an_alias_of_an_input():
    x = ppto.tensor("x")
    data = np.arange(4.0)
    got = (x * 1).run(x=data)
    assert got is not data and not np.shares_memory(got, data)


def test_cse_merges_duplicates_but_two_outputs_stay_two_arrays():
    x = ppto.tensor("x")
    data = np.arange(5.0)
    a, b = ppto.exp(x) + ppto.exp(x), ppto.exp(x)
    plan = plan_graph(ppto.trace([a, b], x=data))
    assert ops_of(plan).count("exp") == 1
    got_a, _ = ppto.run([a, b], x=data)
    np.testing.assert_array_equal(got_a, 2 * np.exp(data))
    twins = ppto.run([ppto.sin(x), ppto.sin(x)], x=data)
    assert twins[0] is not twins[1]


def test_scalar_ops_of_literals_fold_with_numpy_types():
    from pypto.builder import GraphBuilder, literal
    from pypto.executor import execute
    from pypto.passes.simplify import fold_constants
    from pypto.registry import REGISTRY
    from pypto.shapes import ShapeContext
    from pypto.types import TensorType

    b = GraphBuilder(ShapeContext())
    x = b.add_input("x", TensorType(np.dtype(np.float32), (3,)))
    third = b.apply(REGISTRY["divide"], (literal(np.float32(1)), literal(np.float32(3))), {})
    weak = b.apply(REGISTRY["multiply"], (literal(2.0), literal(3.0)), {"weak": True})
    out = b.apply(REGISTRY["multiply"], (b.apply(REGISTRY["add"], (x, third), {}), weak), {})
    graph = b.finish([out])
    notes = []
    folded = fold_constants(graph, notes)
    assert [e.op for e in folded.eqns] == ["add", "multiply"]
    assert notes == ["constant folding: 2 scalar op(s) computed at compile time"]
    (lit,) = [a for a in folded.eqns[0].inputs if not hasattr(a, "name")]
    assert lit.value == np.float32(1) / np.float32(3) and lit.value.dtype == np.float32
    data = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(execute(folded, [data])[0], execute(graph, [data])[0])


def test_explain_report_sections():
    def f(x, y):
        return np.exp(x) @ y + 1.0

    rng = np.random.default_rng(1)
    text = str(ppto.explain(f, rng.random((8, 4)), rng.random((4, 5))))
    for part in (
        "IR:",
        "kernels:",
        "contraction",
        "buffers:",
        "parallel levels:",
        "planned peak memory:",
        "fusion decisions:",
        "kept apart [contraction]",
    ):
        assert part in text, part  # fmt: skip


def test_explain_accepts_compiled_functions_and_chains_and_refuses_mixtures():
    @ppto.compile
    def g(x):
        return np.sin(x)

    assert len(ppto.explain(g, np.ones(3)).kernels) == 1
    x = ppto.tensor("x")
    assert len(ppto.explain(ppto.sin(x), x=np.ones(3)).kernels) == 1
    with pytest.raises(ppto.ArgumentError, match="keywords"):
        ppto.explain(ppto.sin(x), np.ones(3))
    with pytest.raises(ppto.BindingError):
        ppto.explain(ppto.sin(x), y=np.ones(3))


def test_explain_of_a_function_with_a_loop_names_each_block():
    def f(a, steps):
        for _ in range(steps):
            a[1:-1] = 0.5 * (a[:-2] + a[2:])
        return a

    e = ppto.explain(f, np.arange(10.0), 3)
    assert len(e.plans) == 1 and "in loop over" in e.plans[0][0]
    (k,) = e.kernels
    assert k.stores and not k.stores[0].inplace  # a is the caller's array
    assert "depends on a loop variable" in str(e) or "planned peak memory" in str(e)
