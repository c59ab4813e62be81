"""The attention pattern: NumPy-style attention written with primitives becomes one kernel.

``pypto/passes/patterns.py`` rewrites ``softmax(scale(Q @ K^T) [+ mask]) @ V`` (the stable
softmax along the last axis, written out or with ``ppto.softmax``) into the ``attention`` op,
whose kernel never stores the score matrix. Each spelling here runs through ``ppto.compile``
(or the lazy API) and must match the same function run by NumPy, in float32 and float64 and
for random shapes; ``ppto.explain`` must then show exactly one kernel of kind "attention" and
no buffer the size of the score matrix. Spellings that are not the pattern (the mask added
before the scale, a softmax along another axis, ...) and functions that need the scores, the
weights or the row maxima elsewhere must not be rewritten, and must still match NumPy.

The direct tests of ``ppto.attention`` are in ``tests/ops/test_attention_op.py``.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np
import pytest
from helpers import assert_same, mask_shapes, quiet
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto
from pypto.symbolic import evaluate

FLOATS = [np.dtype("float32"), np.dtype("float64")]
RTOL = {np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-12}
# weights @ V sums terms of both signs: an entry near 0 keeps the rounding of its largest terms
ATOL = {np.dtype("float32"): 1e-6, np.dtype("float64"): 1e-14}


# -- the spellings ------------------------------------------------------------------------------
def softmax_np(s, axis=-1):
    e = np.exp(s - np.max(s, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def transpose_divide_sqrt(Q, K, V):
    s = Q @ K.transpose(0, 2, 1) / math.sqrt(Q.shape[-1])
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def swapaxes_times_scale(Q, K, V, scale):
    s = np.matmul(Q, np.swapaxes(K, -1, -2)) * scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.matmul(e / e.sum(axis=-1, keepdims=True), V)


def scale_times_scores(Q, K, V, scale):
    s = scale * np.matmul(Q, np.swapaxes(K, -1, -2))
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V


def dot_T_2d(Q, K, V):
    s = Q @ K.T
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def scale_then_mask(Q, K, V, mask, scale):
    s = Q @ np.swapaxes(K, -1, -2) * scale + mask
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def mask_plus_scores(Q, K, V, mask):
    s = mask + Q @ np.swapaxes(K, -1, -2)  # add matches its operands in either order
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def k_given_transposed(Q, Kt, V):
    s = Q @ Kt / 2.0
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def ppto_softmax(Q, K, V, mask, scale):
    return ppto.softmax(Q @ np.swapaxes(K, -1, -2) * scale + mask, axis=-1) @ V


def ppto_softmax_numpy(Q, K, V, mask, scale):
    return softmax_np(Q @ np.swapaxes(K, -1, -2) * scale + mask) @ V


def in_place_steps(Q, K, V):
    d = Q.shape[-1]
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d)  # a float64 NumPy scalar: float64 result
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ V


@ppto.compile
def decorated(Q, K, V):
    s = np.matmul(Q, K.swapaxes(-1, -2)) / math.sqrt(K.shape[-1])
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return np.matmul(e / np.sum(e, axis=-1, keepdims=True), V)


# not the pattern ...
def mask_then_scale(Q, K, V, mask, scale):
    s = (Q @ np.swapaxes(K, -1, -2) + mask) * scale
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def softmax_over_queries(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - np.max(s, axis=-2, keepdims=True))
    return (e / np.sum(e, axis=-2, keepdims=True)) @ V


def unstable_softmax(Q, K, V):
    e = np.exp(Q @ np.swapaxes(K, -1, -2) / 2.0)
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


def scaled_by_a_vector(Q, K, V, w):
    s = Q @ np.swapaxes(K, -1, -2) * w  # w: (Lk,), not a scalar
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


# ... or the pattern, with a value inside needed elsewhere
def returns_weights(Q, K, V):
    w = softmax_np(Q @ np.swapaxes(K, -1, -2) / 2.0)
    return w @ V, w


def returns_scores(Q, K, V, mask):
    s = Q @ np.swapaxes(K, -1, -2) + mask
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V, s


def returns_row_max(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V, m


def reuses_weights(Q, K, V):
    w = softmax_np(Q @ np.swapaxes(K, -1, -2))
    return w @ V + w.max(axis=-1, keepdims=True)


def reuses_scores(Q, K, V, scale):
    s = Q @ np.swapaxes(K, -1, -2) * scale
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V - np.mean(s)


# -- inputs -------------------------------------------------------------------------------------
def values(dtype, shape, masked=False):
    """Finite values in [-2, 2] (a mask sometimes -inf: masked out), sometimes in a
    non-contiguous layout."""
    elements = st.floats(-2.0, 2.0, width=np.dtype(dtype).itemsize * 8)
    if masked:
        elements = st.one_of(elements, st.just(-np.inf))
    return hnp.arrays(dtype, shape, elements=elements).flatmap(
        lambda a: st.sampled_from([a, np.asfortranarray(a), np.repeat(a, 2, axis=-1)[..., ::2]])
    )


@dataclass
class Inputs:
    args: tuple
    scores: tuple  # the score matrix's shape


@st.composite
def inputs(draw, dtype, ranks, extra=(), kt=False):
    """Q (..., Lq, d), K (..., Lk, d) (or Kt (..., d, Lk)), V (..., Lk, dv) of one of
    ``ranks``, whose batch axes broadcast, then the ``extra`` arguments: "mask" (broadcastable
    to the scores), "scale" (a Python float or a NumPy scalar of the dtype), "vector" (Lk,)."""
    rank = draw(st.sampled_from(ranks), label="rank")
    batch = draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=3, min_dims=rank - 2, max_dims=rank - 2, min_side=1, max_side=3
        )
    )
    bq, bk, bv = batch.input_shapes
    lq, lk, d, dv = (draw(st.integers(1, 5)) for _ in range(4))
    q = draw(values(dtype, (*bq, lq, d)), label="Q")
    k = draw(values(dtype, (*bk, d, lk) if kt else (*bk, lk, d)), label="K")
    v = draw(values(dtype, (*bv, lk, dv)), label="V")
    scores = (*np.broadcast_shapes(bq, bk), lq, lk)
    args = [q, k, v]
    for name in extra:
        if name == "mask":
            shape = draw(mask_shapes(scores))
            args.append(draw(values(dtype, shape, masked=True), label="mask"))
        elif name == "scale":
            x = draw(st.floats(0.125, 2.0), label="scale")
            args.append(draw(st.sampled_from([x, dtype.type(x)])))
        elif name == "vector":
            args.append(draw(values(dtype, (lk,)), label="w"))
    return Inputs(tuple(args), scores)


# -- the cases ----------------------------------------------------------------------------------
@dataclass
class Case:
    fn: object  # a NumPy-style function (or a compiled one)
    ranks: tuple
    extra: tuple = ()
    kt: bool = False
    attention: bool = True  # the pattern: rewritten into one attention kernel
    numpy: object = None  # the NumPy version, where fn calls ppto itself
    # NumPy widens float32 scores after the product (a float64 scale or mask): the steps run
    # at two precisions, which one fused op cannot, so float32 inputs are not rewritten
    widens: bool = False

    @property
    def name(self):
        return getattr(self.fn, "__name__", str(self.fn))


PATTERN = [
    Case(transpose_divide_sqrt, (3,)),
    Case(swapaxes_times_scale, (2, 3, 4), ("scale",)),
    Case(scale_times_scores, (2, 3, 4), ("scale",)),
    Case(dot_T_2d, (2,)),
    Case(scale_then_mask, (2, 3, 4), ("mask", "scale")),
    Case(mask_plus_scores, (2, 3, 4), ("mask",)),
    Case(k_given_transposed, (2, 3, 4), kt=True),
    Case(ppto_softmax, (2, 3, 4), ("mask", "scale"), numpy=ppto_softmax_numpy),
    Case(in_place_steps, (3,), widens=True),
    Case(decorated, (2, 3, 4), numpy=decorated.__wrapped__),
]
NOT_PATTERN = [
    Case(mask_then_scale, (2, 3, 4), ("mask", "scale"), attention=False),
    Case(softmax_over_queries, (2, 3), attention=False),
    Case(unstable_softmax, (2, 3), attention=False),
    Case(scaled_by_a_vector, (2, 3), ("vector",), attention=False),
    Case(returns_weights, (2, 3, 4), attention=False),
    Case(returns_scores, (2, 3), ("mask",), attention=False),
    Case(returns_row_max, (2, 3), attention=False),
    Case(reuses_weights, (2, 3), attention=False),
    Case(reuses_scores, (3,), ("scale",), attention=False),
]
COMPILED = {
    case.name: case.fn if isinstance(case.fn, ppto.CompiledFunction) else ppto.compile(case.fn)
    for case in PATTERN + NOT_PATTERN
}


def compare(got, want, dtype):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
    else:
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        assert_same(g, w, rtol=RTOL[dtype], atol=ATOL[dtype])


def attention_kernels(explanation):
    return [k for k in explanation.kernels if k.kind == "attention"]


def described(explanation):
    """What to show when an assertion on the kernels fails."""
    kinds = [k.kind for k in explanation.kernels]
    return f"kernels {kinds}; simplified: {[p.simplified for _, p in explanation.plans]}"


def buffer_bytes(explanation):
    """(buffer, its bytes at these sizes) for every buffer of every block."""
    return [
        (b, evaluate(b.nbytes, explanation.env))
        for _, plan in explanation.plans
        for b in plan.buffers
    ]


def score_bytes(scores, *dtypes):
    """The sizes the score matrix could have: its dtype is one of the inputs' or the result's."""
    n = math.prod(scores)
    return {n * np.dtype(t).itemsize for t in dtypes}


def assert_no_score_buffer(explanation, scores, dtype, want):
    """No buffer has the score matrix's size (an output that happens to have it aside)."""
    outs = want if isinstance(want, tuple) else (want,)
    out_bytes = {np.asarray(w).nbytes for w in outs}
    sizes = score_bytes(scores, dtype, *(np.asarray(w).dtype for w in outs))
    for b, n in buffer_bytes(explanation):
        if b.role == "output" and n in out_bytes:
            continue
        assert n not in sizes, f"buffer {b.name} of {n} bytes: the score matrix {scores}"


@pytest.mark.parametrize("case", PATTERN + NOT_PATTERN, ids=lambda c: c.name)
@given(st.data())
def test_spelling(case, data):
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    x = data.draw(inputs(dtype, case.ranks, case.extra, case.kt), label="inputs")
    numpy_fn = case.numpy or case.fn
    want = quiet(numpy_fn, *[a.copy() if isinstance(a, np.ndarray) else a for a in x.args])
    compiled = COMPILED[case.name]
    compare(quiet(compiled, *x.args), want, dtype)
    explanation = ppto.explain(compiled, *x.args)
    found = attention_kernels(explanation)
    if case.attention and not (case.widens and np.dtype(dtype) == np.float32):
        assert len(found) == 1, described(explanation)
        assert_no_score_buffer(explanation, x.scores, dtype, want)
    else:
        assert found == [], described(explanation)


@pytest.mark.parametrize(
    "fn",
    [returns_weights, returns_scores, returns_row_max, reuses_weights],
    ids=lambda f: f.__name__,
)
def test_values_needed_elsewhere_are_said_to_be(fn):
    """The pass says why it did not rewrite; the scores (or weights) stay in a buffer."""
    rng = np.random.default_rng(0)
    q, k, v = (
        rng.standard_normal((2, 3, 4)),
        rng.standard_normal((2, 5, 4)),
        rng.standard_normal((2, 5, 6)),
    )
    args = (q, k, v, rng.standard_normal((3, 5))) if fn is returns_scores else (q, k, v)
    explanation = ppto.explain(fn, *args)
    (simplified,) = [plan.simplified for _, plan in explanation.plans]
    assert any("not applied (a value inside is used elsewhere)" in n for n in simplified)
    if fn is not returns_row_max:
        sizes = [n for _, n in buffer_bytes(explanation)]
        assert 2 * 3 * 5 * 8 in sizes  # the check of the spelling tests would see it


# -- a constant mask ----------------------------------------------------------------------------
CAUSAL = np.triu(np.full((4, 6), -np.inf), 3)


def constant_causal_mask(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / 2.0 + CAUSAL
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)) @ V


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_a_constant_mask_is_the_pattern_too(dtype):
    """A mask the function reads from a global (a causal mask built once) broadcasts to the
    scores as a mask argument does, so it is rewritten as well (for float64: the float64 mask
    widens float32 scores after the product, which then stays a float32 product)."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.uniform(-2, 2, s).astype(dtype) for s in ((2, 4, 3), (2, 6, 3), (2, 6, 5)))
    want = constant_causal_mask(q, k, v)
    compare(ppto.compile(constant_causal_mask)(q, k, v), want, np.dtype(dtype))
    explanation = ppto.explain(constant_causal_mask, q, k, v)
    if np.dtype(dtype) == np.float32:
        assert attention_kernels(explanation) == [], described(explanation)
        return
    assert len(attention_kernels(explanation)) == 1, described(explanation)
    assert_no_score_buffer(explanation, (2, 4, 6), np.dtype(dtype), want)


# -- the lazy API -------------------------------------------------------------------------------
def _t(a):
    return ppto.swapaxes(a, -1, -2)


def lazy_divide(Q, K, V):
    return ppto.softmax(Q @ _t(K) / 2.0) @ V


def lazy_mask(Q, K, V, M):
    return ppto.matmul(ppto.softmax(Q @ _t(K) + M, axis=-1), V)


def lazy_written_out(Q, K, V, M):
    s = ppto.matmul(Q, ppto.transpose(K, (0, 2, 1))) * 0.5 + M
    e = ppto.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def lazy_mask_then_scale(Q, K, V, M):
    return ppto.softmax((Q @ _t(K) + M) * 0.5) @ V


def lazy_softmax_over_queries(Q, K, V):
    return ppto.softmax(Q @ _t(K), axis=-2) @ V


def lazy_T_2d(Q, K, V):
    return ppto.softmax(Q @ K.T) @ V


LAZY = [  # (build, its NumPy version, the pattern?, ranks)
    (lazy_divide, lambda Q, K, V: softmax_np(Q @ np.swapaxes(K, -1, -2) / 2.0) @ V, True),
    (lazy_mask, lambda Q, K, V, M: softmax_np(Q @ np.swapaxes(K, -1, -2) + M) @ V, True),
    (lazy_T_2d, lambda Q, K, V: softmax_np(Q @ K.T) @ V, True, (2,)),
    (
        lazy_written_out,
        lambda Q, K, V, M: softmax_np(Q @ K.transpose(0, 2, 1) * 0.5 + M) @ V,
        True,
        (3,),
    ),
    (
        lazy_mask_then_scale,
        lambda Q, K, V, M: softmax_np((Q @ np.swapaxes(K, -1, -2) + M) * 0.5) @ V,
        False,
    ),
    (
        lazy_softmax_over_queries,
        lambda Q, K, V: softmax_np(Q @ np.swapaxes(K, -1, -2), axis=-2) @ V,
        False,
    ),
]


@pytest.mark.parametrize("case", LAZY, ids=lambda c: c[0].__name__)
@given(st.data())
def test_lazy_spelling(case, data):
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    build, numpy_fn, pattern, *ranks = case
    names = list(inspect.signature(build).parameters)
    extra = ("mask",) if "M" in names else ()
    x = data.draw(inputs(dtype, ranks[0] if ranks else (2, 3, 4), extra), label="inputs")
    bindings = dict(zip(names, x.args))
    chain = build(*(ppto.tensor(n) for n in names))
    want = quiet(numpy_fn, **bindings)
    compare(quiet(chain.run, **bindings), want, dtype)
    explanation = ppto.explain(chain, **bindings)
    found = attention_kernels(explanation)
    if pattern:
        assert len(found) == 1, described(explanation)
        assert_no_score_buffer(explanation, x.scores, dtype, want)
    else:
        assert found == [], described(explanation)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lazy_chain_also_returning_the_weights_is_not_rewritten(dtype):
    rng = np.random.default_rng(2)
    q, k, v = (rng.uniform(-2, 2, s).astype(dtype) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 6)))
    Q, K, V = ppto.tensor("Q"), ppto.tensor("K"), ppto.tensor("V")
    w = ppto.softmax(Q @ ppto.swapaxes(K, -1, -2) / 2.0)
    out = w @ V
    w_np = softmax_np(q @ np.swapaxes(k, -1, -2) / 2.0)
    compare(tuple(ppto.run([out, w], Q=q, K=k, V=v)), (w_np @ v, w_np), np.dtype(dtype))
    assert attention_kernels(ppto.explain([out, w], Q=q, K=k, V=v)) == []
    # the same chain alone is rewritten
    assert len(attention_kernels(ppto.explain(out, Q=q, K=k, V=v))) == 1
