"""Memory layouts (passes/layout.py): the order of axes in memory NumPy gives each result.

Random chains of views (transposes, slices with steps, integer indices, new axes, flips),
elementwise maps with broadcasting, reductions and scans, over C-ordered inputs: the layout the
pass infers for the result is the order of NumPy's result's strides (axes of size 1 aside), and
the array PyPTO returns has NumPy's values and that order. An elementwise kernel whose result is
not C-ordered is cut into blocks along its outermost axis in memory."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import pypto as ppto
from pypto.errors import BindingError
from pypto.passes.pipeline import plan_graph


def order_of(a: np.ndarray) -> tuple:
    """The axes of size > 1 from the largest stride to the smallest."""
    axes = [i for i, d in enumerate(a.shape) if d > 1]
    return tuple(sorted(axes, key=lambda i: -abs(a.strides[i])))


def predicted(plan, value, shape) -> tuple:
    order = plan.layouts.get(id(value), tuple(range(len(shape))))
    return tuple(a for a in order if shape[a] > 1)


KINDS = ["transpose", "slice", "flip", "newaxis", "unary", "binary", "reduce", "cumsum", "where",
         "astype"]  # fmt: skip
UNARY = [("sin", np.sin, ppto.sin), ("exp", np.exp, ppto.exp), ("neg", np.negative, lambda t: -t)]


def _step(draw, pool):
    a, t = draw(st.sampled_from(pool))
    kind = draw(st.sampled_from(KINDS))
    rank = a.ndim
    if kind == "transpose" and rank >= 2:
        perm = tuple(draw(st.permutations(range(rank))))
        return np.transpose(a, perm), ppto.transpose(t, perm)
    if kind == "slice" and rank >= 2:
        index = []
        for d in a.shape:
            how = draw(st.sampled_from(["all", "range", "step", "reverse", "int"]))
            if how == "int" and rank - sum(isinstance(i, int) for i in index) > 2:
                index.append(draw(st.integers(0, d - 1)))
            elif how == "range" and d > 1:
                index.append(slice(1, None))
            elif how == "step":
                index.append(slice(None, None, 2))
            elif how == "reverse":
                index.append(slice(None, None, -1))
            else:
                index.append(slice(None))
        index = tuple(index)
        return a[index], t[index]
    if kind == "flip" and rank >= 1:
        axis = draw(st.integers(0, rank - 1))
        return np.flip(a, axis), ppto.flip(t, axis)
    if kind == "newaxis" and 1 <= rank <= 3:
        at = draw(st.integers(0, rank))
        index = (slice(None),) * at + (None,)
        return a[index], t[index]
    if kind == "unary":
        _, f, g = draw(st.sampled_from(UNARY))
        return f(a), g(t)
    if kind == "binary":
        b, u = draw(st.sampled_from(pool))
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            return a * 2.0, t * 2.0
        return a + b, t + u
    if kind == "reduce" and rank >= 3:
        axis = draw(st.integers(0, rank - 1))
        keep = draw(st.booleans())
        return np.sum(a, axis=axis, keepdims=keep), ppto.reduce_sum(t, axis=axis, keepdims=keep)
    if kind == "cumsum" and rank >= 1:
        axis = draw(st.integers(0, rank - 1))
        return np.cumsum(a, axis=axis), ppto.cumsum(t, axis=axis)
    if kind == "where":
        return np.where(a > 0, a, 0.5), ppto.where(t > 0, t, 0.5)
    if kind == "astype":
        return a.astype(np.float32), t.astype(np.float32)
    return None


@st.composite
def chains(draw):
    shape = tuple(draw(st.lists(st.sampled_from([3, 4, 5, 6]), min_size=2, max_size=4)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape)
    y = rng.standard_normal(shape[draw(st.integers(0, len(shape) - 1)) :])
    pool = [(x, ppto.tensor("x")), (y, ppto.tensor("y"))]
    for _ in range(draw(st.integers(1, 6))):
        step = _step(draw, pool)
        if step is not None:
            pool.append(step)
    want, chain = pool[-1] if len(pool) > 2 else (np.sin(x.T), ppto.sin(ppto.tensor("x").T))
    return chain, {"x": x, "y": y}, want


def _traced(chain, data):
    """The chain's graph and the bindings of the inputs it reads."""
    for names in (("x", "y"), ("x",), ("y",)):
        bound = {n: data[n] for n in names}
        try:
            return ppto.trace(chain, **bound), bound
        except BindingError:
            continue
    raise AssertionError("the chain reads neither x nor y")


@given(case=chains())
def test_results_have_numpys_order_of_axes_in_memory(case):
    chain, data, want = case
    want = np.asarray(want)
    if want.ndim < 2:
        return
    g, data = _traced(chain, data)
    plan = plan_graph(g)
    assert predicted(plan, plan.graph.outputs[0], want.shape) == order_of(want)
    got = chain.run(**data)
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-12)
    assert order_of(got) == order_of(want), (got.strides, want.strides)


def test_a_transposed_elementwise_result_streams_along_its_outer_axis_in_memory():
    """sin(s)[:, None] * exp(y.T): NumPy's result is F-ordered; so is PyPTO's, computed in
    blocks of its columns (rows of y), so y and the result are both read and written in order."""
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(ppto.reduce_sum(x, axis=1))[:, None] * ppto.exp(ppto.transpose(y, (1, 0)))
    rng = np.random.default_rng(3)
    data = {"x": rng.standard_normal((60, 50)), "y": rng.standard_normal((60, 60))}
    plan = plan_graph(ppto.trace(chain, **data))
    product = plan.kernels[-1]
    assert product.chunking is not None and product.chunking.axis == 1
    got = chain.run(**data)
    want = np.sin(np.sum(data["x"], 1))[:, None] * np.exp(data["y"].T)
    assert want.flags.f_contiguous and got.flags.f_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-12)
