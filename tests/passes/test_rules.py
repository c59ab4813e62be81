"""One small case per fusion, chunking and memory rule: the decision and the reason the Plan
records for it (``plan.decisions``, ``Chunking.reason``, ``plan.notes``), beside the structure
and differential tests that check the whole."""

from __future__ import annotations

import numpy as np

import pypto as ppto
from pypto.passes.chunk import candidate_axes, choose
from pypto.passes.memory import read_bytes
from pypto.passes.pipeline import plan_graph
from pypto.symbolic import evaluate


def plan_of(chain, **data):
    return plan_graph(ppto.trace(chain, **data))


def decision(plan, rule):
    """The one decision of ``rule`` (its verdict and reason)."""
    found = [d for d in plan.decisions if d.rule == rule]
    assert found, [str(d) for d in plan.decisions]
    return found[0]


def t(name):
    return ppto.tensor(name)


X = np.ones((8, 6))


# -- fusion ----------------------------------------------------------------------------------------
def test_a_map_of_a_map_fuses_through_its_index_map():
    plan = plan_of(ppto.exp(ppto.sin(t("x")).T) + 1.0, x=X)
    d = decision(plan, "map-chain")
    assert d.fused and "index map" in d.reason
    assert len(plan.kernels) == 1


def test_a_reduction_fuses_into_the_maps_after_it_at_its_reduced_shape():
    x = t("x")
    plan = plan_of(ppto.exp(ppto.reduce_max(x, axis=1)), x=X)
    d = decision(plan, "reduction")
    assert d.fused and "the maps after it run at its reduced shape" in d.reason
    assert len(plan.kernels) == 1


def test_a_map_at_the_rows_full_shape_fuses_into_their_reduction():
    x = t("x")
    plan = plan_of(ppto.reduce_sum(ppto.sin(x), axis=1), x=X)
    d = decision(plan, "reduction")
    assert d.fused and "a map at the full shape of the rows" in d.reason
    assert len(plan.kernels) == 1


def test_a_full_shape_value_read_at_the_reduced_shape_is_kept_apart():
    x = t("x")
    # the sum's input is read whole, and also (broadcast) at the rows' reduced shape
    plan = plan_of(ppto.reduce_sum(x, axis=1) + ppto.sin(x)[:, 0], x=X)
    reasons = [d.reason for d in plan.decisions if d.rule == "reduction" and not d.fused]
    assert reasons, [str(d) for d in plan.decisions]


def test_a_reduction_reads_through_a_reorder_that_moves_data_kept_apart():
    x = t("x")
    plan = plan_of(ppto.reduce_sum(ppto.flip(ppto.sin(x), 1), axis=1), x=X)
    d = decision(plan, "reduction")
    assert not d.fused and "reorder that moves data" in d.reason


def test_a_slice_assignment_is_materialized():
    def f(a, b):
        a[1:] = b[1:] * 2.0
        return a + 1.0

    e = ppto.explain(f, np.ones(5), np.ones(5))
    decisions = [d for _, p in e.plans for d in p.decisions]
    found = [d for d in decisions if d.rule == "store"]
    assert found and not found[0].fused and "slice assignment" in found[0].reason


def test_the_operands_of_a_matrix_product_are_read_from_memory():
    a, b = t("a"), t("b")
    plan = plan_of(ppto.sin(a) @ b, a=np.ones((4, 5)), b=np.ones((5, 3)))
    d = decision(plan, "contraction")
    assert not d.fused and "read from memory" in d.reason


def test_a_matmul_epilogue_runs_at_the_products_shape():
    a, b = t("a"), t("b")
    c = t("c")  # sin(c) is at another shape than the product: read through a transpose
    data = {"a": np.ones((4, 5)), "b": np.ones((5, 3)), "c": np.ones((3, 4))}
    plan = plan_of(ppto.sin(c).T + (a @ b), **data)  # the product joins first
    found = [d for d in plan.decisions if d.rule == "contraction" and not d.fused]
    assert found and "the epilogue runs at the product's shape" in found[0].reason


def test_a_user_operator_that_is_not_elementwise_runs_alone():
    name = "rules_test_rowsum"

    @ppto.register_operator(name=name, shape=lambda s: s[:1])
    def rowsum(x):
        return np.sum(x, axis=1)

    try:
        plan = plan_of(rowsum(ppto.sin(t("x"))), x=X)
        d = decision(plan, "custom")
        assert not d.fused and "user operator" in d.reason
    finally:
        ppto.unregister_operator(name)


# -- chunking --------------------------------------------------------------------------------------
def test_reductions_are_chunked_only_before_their_first_reduced_axis():
    x = t("x")
    plan = plan_of(ppto.reduce_sum(ppto.sin(x), axis=1), x=np.ones((4, 5, 6)))
    (k,) = plan.kernels
    assert candidate_axes(k) == [0]


def test_a_scan_axis_is_never_a_chunk_axis():
    x = t("x")
    plan = plan_of(ppto.cumsum(ppto.sin(x), axis=0), x=X)
    k = next(k for k in plan.kernels if k.scan_axis is not None)
    assert k.scan_axis not in candidate_axes(k)


def test_a_flip_along_an_axis_cannot_be_followed_along_it():
    x = t("x")
    plan = plan_of(ppto.sin(ppto.flip(x, 0)) + 1.0, x=X)
    (k,) = plan.kernels
    c = choose(k, 64, {}, plan.same)
    assert c is not None and c.axis == 1
    assert "axis 0 cannot be followed" in c.reason
    assert c.follows  # the tags the emitter reads


def test_products_are_never_chunked_along_their_columns():
    a, b = t("a"), t("b")
    plan = plan_of(a @ b, a=np.ones((4, 5)), b=np.ones((5, 3)))
    k = next(k for k in plan.kernels if k.kind == "contraction")
    assert candidate_axes(k) == [0]


# -- memory ----------------------------------------------------------------------------------------
def test_a_kernel_reading_slices_counts_the_box_around_them():
    x = t("x")
    plan = plan_of(x[2:4] + x[3:5], x=np.ones(100))
    (k,) = plan.kernels
    (v,) = k.inputs
    assert evaluate(read_bytes(k, v), plan.env if hasattr(plan, "env") else {}) == 3 * 8


def test_a_dead_temporary_lends_its_memory_to_a_later_one():
    a, b = t("a"), t("b")
    chain = a
    for _ in range(4):  # four products: the first result is dead when the third is made
        chain = chain @ b
    plan = plan_of(chain, a=np.ones((4, 4)), b=np.ones((4, 4)))
    assert any(buf.reuses for buf in plan.buffers), [vars(b) for b in plan.buffers]
    assert any("take over the memory of dead ones" in note for note in plan.notes), plan.notes


def test_a_product_plus_a_dead_temporary_accumulates_into_it():
    a, b, c, d = t("a"), t("b"), t("c"), t("d")
    m = np.ones((4, 4))
    plan = plan_of((a @ b) + (c @ d), a=m, b=m, c=m, d=m)
    assert any(k.accumulate is not None for k in plan.kernels)


def test_a_slice_assignment_into_an_argument_is_written_in_place():
    def f(a, b):
        a[1:] = b[1:] * 2.0
        return a

    e = ppto.explain(f, np.ones(5), np.ones(5))
    buffers = [buf for _, p in e.plans for buf in p.buffers]
    assert any(buf.donor is not None for buf in buffers)
