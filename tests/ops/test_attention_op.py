"""``ppto.attention`` against NumPy: ``softmax(q @ swapaxes(k, -1, -2) * scale + mask) @ v``.

The oracle is the NumPy code the op stands for (matmul, multiply by the scale, add the mask, the
stable softmax along the last axis, matmul), run on the same inputs: same dtype, same shape, and
values within a float tolerance (an emitter may compute the op block by block, re-expressing the
softmax). Inputs stay in [-2, 2] so the scores stay far from exp's overflow and a rounding
difference in a score moves its weight by a few ulps only.

(This module is named ``test_attention_op`` rather than ``test_attention``: the test folders
have no ``__init__.py``, so two test modules with one basename cannot both be collected, and
``tests/passes/test_attention.py`` tests the pattern rewrite into this op.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_same, check, mask_shapes
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

COVERED = {"attention"}

RTOL = {np.dtype("float16"): 5e-3, np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-12}
# weights @ v sums terms of both signs: an entry near 0 keeps the rounding of its largest terms
ATOL = {np.dtype("float16"): 5e-3, np.dtype("float32"): 1e-6, np.dtype("float64"): 1e-14}


def reference(q, k, v, mask=None, scale=None):
    """The NumPy code ``ppto.attention`` stands for."""
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    if scale is not None:
        s = s * scale
    if mask is not None:
        s = s + mask
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return np.matmul(e / np.sum(e, axis=-1, keepdims=True), v)


def values(dtype, shape, lo=-2.0, hi=2.0, masked=False):
    """Finite values in [lo, hi] (a mask sometimes has -inf entries: masked-out positions),
    sometimes in a non-contiguous layout."""
    dtype = np.dtype(dtype)
    elements = st.floats(lo, hi, width=dtype.itemsize * 8)
    if masked:
        elements = st.one_of(elements, st.just(-np.inf))
    return hnp.arrays(dtype, shape, elements=elements).flatmap(_layouts)


def _layouts(a):
    if a.ndim == 0:
        return st.just(a)
    return st.sampled_from(
        [
            a,
            np.asfortranarray(a),
            np.flip(np.flip(a).copy()),
            np.repeat(a, 2, axis=-1)[..., ::2],
        ]
    )


def tolerances(*arrays):
    dtype = np.result_type(*arrays)
    return {"rtol": RTOL.get(dtype, 1e-12), "atol": ATOL.get(dtype, 0.0)}


@st.composite
def attention_inputs(draw, dtypes=("float32", "float64"), min_side=1):
    """q, k, v of rank 2, 3 or 4 whose batch axes broadcast (sizes 1 included), and the
    score shape ``(*batch, Lq, Lk)``."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    rank = draw(st.integers(2, 4))
    batch = draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=3, min_dims=rank - 2, max_dims=rank - 2, min_side=1, max_side=3
        )
    )
    bq, bk, bv = batch.input_shapes
    lq, lk, d, dv = (draw(st.integers(min_side, 5)) for _ in range(4))
    q = draw(values(dtype, (*bq, lq, d)), label="q")
    k = draw(values(dtype, (*bk, lk, d)), label="k")
    v = draw(values(dtype, (*bv, lk, dv)), label="v")
    scores = (*np.broadcast_shapes(bq, bk), lq, lk)
    return q, k, v, scores


def scale_of(draw, dtype):
    """None, a Python float, or a NumPy scalar of the inputs' dtype."""
    kind = draw(st.sampled_from(["none", "python", "numpy"]))
    if kind == "none":
        return None
    x = draw(st.floats(0.125, 2.0))
    return x if kind == "python" else np.dtype(dtype).type(x)


@given(st.data())
def test_attention(data):
    q, k, v, scores = data.draw(attention_inputs(), label="inputs")
    scale = scale_of(data.draw, q.dtype)
    if data.draw(st.booleans(), label="masked"):
        mask = data.draw(values(q.dtype, data.draw(mask_shapes(scores)), masked=True))
        if scale is not None and data.draw(st.booleans(), label="scale bound as an input"):
            check(
                lambda q, k, v, m, s: ppto.attention(q, k, v, mask=m, scale=s),
                lambda q, k, v, m, s: reference(q, k, v, mask=m, scale=s),
                q=q,
                k=k,
                v=v,
                m=mask,
                s=scale,
                **tolerances(q),
            )
        else:
            check(
                lambda q, k, v, m: ppto.attention(q, k, v, mask=m, scale=scale),
                lambda q, k, v, m: reference(q, k, v, mask=m, scale=scale),
                q=q,
                k=k,
                v=v,
                m=mask,
                **tolerances(q),
            )
    else:
        check(
            lambda q, k, v: ppto.attention(q, k, v, scale=scale),
            lambda q, k, v: reference(q, k, v, scale=scale),
            q=q,
            k=k,
            v=v,
            **tolerances(q),
        )


@given(st.data())
def test_attention_sizes_0_and_1(data):
    """Every size 0 or 1 somewhere: NumPy raises for Lk == 0 (the max of an empty row), and
    PyPTO must raise a PyptoError there too."""
    q, k, v, _ = data.draw(attention_inputs(min_side=0), label="inputs")
    check(lambda q, k, v: ppto.attention(q, k, v), reference, q=q, k=k, v=v, **tolerances(q))


@given(st.data())
def test_attention_float16(data):
    q, k, v, _ = data.draw(attention_inputs(dtypes=("float16",)), label="inputs")
    scale = scale_of(data.draw, q.dtype)
    check(
        lambda q, k, v: ppto.attention(q, k, v, scale=scale),
        lambda q, k, v: reference(q, k, v, scale=scale),
        q=q,
        k=k,
        v=v,
        **tolerances(q),
    )


@pytest.mark.parametrize(
    "qd, kd, vd, md, scale",
    [
        ("float32", "float32", "float64", None, None),
        ("float32", "float32", "float32", "float64", None),
        ("float64", "float32", "float32", None, None),
        ("float32", "float32", "float32", None, np.float64(0.5)),  # a strong float64 scalar
        ("float32", "float32", "float32", None, 0.5),  # a weak Python float keeps float32
        ("float32", "float32", "float32", None, 2),  # a Python int, too
        ("int32", "int32", "float32", None, None),
        ("int64", "int64", "int64", None, 0.25),
        ("float16", "float32", "float16", "float16", None),
    ],
)
def test_attention_dtypes(qd, kd, vd, md, scale):
    rng = np.random.default_rng(0)
    q = rng.uniform(-2, 2, (2, 3, 4)).astype(qd)
    k = rng.uniform(-2, 2, (2, 5, 4)).astype(kd)
    v = rng.uniform(-2, 2, (2, 5, 6)).astype(vd)
    want_dtype = reference(q, k, v, scale=scale).dtype
    if md is None:
        got = check(
            lambda q, k, v: ppto.attention(q, k, v, scale=scale),
            lambda q, k, v: reference(q, k, v, scale=scale),
            q=q,
            k=k,
            v=v,
            rtol=1e-5,
            atol=1e-6,
        )
    else:
        m = rng.uniform(-2, 2, (3, 5)).astype(md)
        want_dtype = reference(q, k, v, m, scale).dtype
        got = check(
            lambda q, k, v, m: ppto.attention(q, k, v, mask=m, scale=scale),
            lambda q, k, v, m: reference(q, k, v, m, scale),
            q=q,
            k=k,
            v=v,
            m=m,
            rtol=5e-3 if "float16" in (qd, vd) else 1e-5,
            atol=5e-3 if "float16" in (qd, vd) else 1e-6,
        )
    assert got.dtype == want_dtype


def test_attention_scaled_dot_product():
    """The documented use: ``scale=1 / math.sqrt(d)``, a causal mask of -inf above the
    diagonal, batch and heads axes."""
    rng = np.random.default_rng(1)
    b, h, n, d = 2, 3, 6, 8
    q, k, v = (rng.standard_normal((b, h, n, d)) for _ in range(3))
    causal = np.triu(np.full((n, n), -np.inf), 1)
    check(
        lambda q, k, v, m: ppto.attention(q, k, v, mask=m, scale=1 / math.sqrt(d)),
        lambda q, k, v, m: reference(q, k, v, mask=m, scale=1 / math.sqrt(d)),
        q=q,
        k=k,
        v=v,
        m=causal,
        rtol=1e-12,
        atol=1e-14,
    )


def test_attention_on_arrays():
    """Called on NumPy arrays, the op is a chain with nothing to bind."""
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    got = ppto.attention(q, k, v, scale=0.5).run()
    np.testing.assert_allclose(got, reference(q, k, v, scale=0.5), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mask_shape", [(2, 3, 5), (3, 5), (1, 5), (5,)])
def test_attention_with_a_constant_mask(mask_shape):
    """A NumPy array as the mask (not a placeholder), e.g. a causal mask built once: it
    broadcasts to the score shape (2, 3, 5), so the op must accept it as it accepts the same
    array bound to a placeholder."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 6)))
    mask = rng.standard_normal(mask_shape)
    check(
        lambda q, k, v: ppto.attention(q, k, v, mask=mask),
        lambda q, k, v: reference(q, k, v, mask=mask),
        q=q,
        k=k,
        v=v,
        rtol=1e-12,
        atol=1e-14,
    )


def test_attention_chain_reused_across_shapes():
    chain = ppto.attention(
        ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v"), mask=ppto.tensor("m"), scale=0.5
    )
    rng = np.random.default_rng(4)
    shapes = [
        ((2, 3, 4), (2, 5, 4), (2, 5, 6), (3, 5)),
        ((4, 2, 3), (4, 6, 3), (4, 6, 2), (2, 6)),
        ((2, 3, 4), (2, 5, 4), (2, 5, 6), (4, 5)),  # a mask that does not broadcast
        ((3, 1, 2), (3, 4, 2), (3, 4, 5), (1, 4)),
        ((2, 3, 4), (2, 5, 3), (2, 5, 6), (3, 5)),  # q and k differ in d: NumPy raises
        ((5, 5, 5), (5, 5, 5), (5, 5, 5), (5, 5)),
    ]
    bindings = [{n: rng.uniform(-2, 2, s) for n, s in zip("qkvm", shape)} for shape in shapes]

    def oracle(q, k, v, m):
        scores = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
        if np.broadcast_shapes(scores, m.shape) != scores:
            raise ValueError("the mask does not broadcast to the score shape")
        return reference(q, k, v, mask=m, scale=0.5)

    for inputs in bindings:  # one chain, several shapes: its guards decide what it reuses
        try:
            want = oracle(**inputs)
        except ValueError:
            with pytest.raises(ppto.PyptoError):
                chain.run(**inputs)
            continue
        assert_same(chain.run(**inputs), want, rtol=1e-12, atol=1e-14)


# -- errors -------------------------------------------------------------------------------------
def _data(*shapes):
    rng = np.random.default_rng(5)
    return [rng.uniform(-2, 2, s) for s in shapes]


@pytest.mark.parametrize(
    "mask_shape, scores",
    [
        ((4, 5), ((2, 3, 4), (2, 5, 4), (2, 5, 6))),  # Lq differs
        ((3, 4), ((2, 3, 4), (2, 5, 4), (2, 5, 6))),  # Lk differs
        ((3, 3, 5), ((2, 3, 4), (2, 5, 4), (2, 5, 6))),  # batch differs
        ((2, 1, 3, 5), ((2, 3, 4), (2, 5, 4), (2, 5, 6))),  # more axes than the scores
        ((3, 5), ((2, 1, 4), (2, 5, 4), (2, 5, 6))),  # NumPy would broadcast the scores up
        ((2, 3, 5), ((1, 3, 4), (1, 5, 4), (1, 5, 6))),  # ... and along a batch axis
    ],
)
def test_attention_mask_must_broadcast_to_the_scores(mask_shape, scores):
    q, k, v, m = _data(*scores, mask_shape)
    with pytest.raises(ppto.PyptoError):
        ppto.attention(
            ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v"), mask=ppto.tensor("m")
        ).run(q=q, k=k, v=v, m=m)


@pytest.mark.parametrize(
    "shapes",
    [
        ((4,), (5, 4), (5, 6)),  # q of rank 1
        ((3, 4), (4,), (1, 6)),  # k of rank 1
        ((3, 4), (5, 4), (5,)),  # v of rank 1
        ((), (5, 4), (5, 6)),  # q of rank 0
        ((3, 4), (5, 3), (5, 6)),  # d differs
        ((3, 4), (5, 4), (4, 6)),  # Lk differs
        ((2, 3, 4), (3, 5, 4), (3, 5, 6)),  # batch axes do not broadcast
    ],
)
def test_attention_shape_errors(shapes):
    q, k, v = _data(*shapes)
    with pytest.raises(ppto.PyptoError):
        ppto.attention(ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v")).run(q=q, k=k, v=v)


@pytest.mark.parametrize(
    "scale", [np.ones(2), np.ones(1), np.ones((1, 1)), [0.5, 0.5], "scale as an input"]
)
def test_attention_scale_must_be_a_scalar(scale):
    q, k, v = _data((2, 3, 4), (2, 5, 4), (2, 5, 6))
    Q, K, V = ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v")
    with pytest.raises(ppto.PyptoError):
        if isinstance(scale, str):
            ppto.attention(Q, K, V, scale=ppto.tensor("s")).run(q=q, k=k, v=v, s=np.ones(5))
        else:
            ppto.attention(Q, K, V, scale=scale).run(q=q, k=k, v=v)
