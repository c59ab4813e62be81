"""``attention``: ``softmax(scale(q @ swapaxes(k)) + mask) @ v`` as one op.

The passes rewrite the pattern written with primitives (matmul, transpose, multiply or divide by
a scalar, add a mask, the stable softmax's max/subtract/exp/sum/divide, matmul) into this op, so
that emitters can compute it block by block without storing the score matrix; it is also public
(``ppto.attention``). Its rules are those of the primitives it stands for, composed: the same
result dtype and shape, and its NumPy implementation runs the primitives in the same order.

Operands: ``q (..., Lq, d)``, ``k (..., Lk, d)``, ``v (..., Lk, dv)``, then the scale (a scalar)
when ``scale_op`` is ``"multiply"`` or ``"divide"``, then the mask (broadcastable to the score
shape ``(..., Lq, Lk)``) when ``masked``.
"""

from __future__ import annotations

import numpy as np

from ..api import apply
from ..errors import ShapeError
from ..registry import REGISTRY, OpDef, register
from ..shapes import fits


def attention(q, k, v, mask=None, scale=None):
    """``softmax(q @ swapaxes(k, -1, -2) * scale + mask, axis=-1) @ v`` (scale and mask
    optional: pass ``scale=1 / math.sqrt(d)`` for scaled dot-product attention)."""
    operands = (q, k, v) + ((scale,) if scale is not None else ())
    operands += (mask,) if mask is not None else ()
    attrs = {"scale_op": "multiply" if scale is not None else None, "masked": mask is not None}
    return apply("attention", operands, attrs)


def _split(operands, scale_op, masked):
    q, k, v, *rest = operands
    scale = rest.pop(0) if scale_op else None
    mask = rest.pop(0) if masked else None
    return q, k, v, scale, mask


def _normalize(ctx, *types, scale_op, masked):
    if scale_op not in (None, "multiply", "divide"):
        raise ShapeError(f"attention: unknown scale_op {scale_op!r}")
    want = 3 + (scale_op is not None) + bool(masked)
    if len(types) != want:
        raise ShapeError(f"attention takes {want} operands here, got {len(types)}")
    q, k, v, scale, _ = _split(types, scale_op, masked)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.rank < 2:
            raise ShapeError(f"attention: {name} must have at least 2 dimensions")
    if scale is not None and scale.rank:
        raise ShapeError("attention: the scale must be a scalar")
    return {"scale_op": scale_op, "masked": bool(masked)}


def _swap(shape):
    return shape[:-2] + (shape[-1], shape[-2])


def _shape(ctx, *shapes, scale_op, masked):
    matmul = REGISTRY["matmul"].shape_rule
    q, k, v, _, mask = _split(shapes, scale_op, masked)
    scores = matmul(ctx, q, _swap(k))
    if mask is not None and (
        len(mask) > len(scores)
        or not all(fits(ctx, m, d) for m, d in zip(reversed(mask), reversed(scores)))
    ):
        raise ShapeError(
            f"attention: the mask {ctx.show(mask)} must broadcast to the score shape "
            f"{ctx.show(scores)}"
        )
    return matmul(ctx, scores, v)


def _dtype(*keys, scale_op, masked):
    rule = lambda name, *k: REGISTRY[name].dtype_rule(*k)  # noqa: E731
    q, k, v, scale, mask = _split(keys, scale_op, masked)
    s = rule("matmul", q, k)
    if scale is not None:
        s = rule(scale_op, s, scale)
    if mask is not None:
        s = rule("add", s, mask)
    e = rule("exp", rule("subtract", s, s))
    return rule("matmul", rule("divide", e, e), v)


def _impl(*operands, scale_op, masked):
    q, k, v, scale, mask = _split(operands, scale_op, masked)
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    if scale_op == "multiply":
        s = s * scale
    elif scale_op == "divide":
        s = s / scale
    if masked:
        s = s + mask
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return np.matmul(e / np.sum(e, axis=-1, keepdims=True), v)


def _unfused_bytes(eqn):
    """Bytes the primitives this op stands for move, one NumPy call each: the score matrix is
    written by the first product, read and written by the scale and the mask, read by max,
    subtract (written), exp (read, written), sum and divide (written), and read by the second
    product."""
    from ..passes.fuse import nbytes
    from ..shapes import size_of

    q, k, v, scale, mask = _split(eqn.inputs, eqn.params["scale_op"], eqn.params["masked"])
    out = eqn.out.type
    rows = size_of(out.shape[:-1])
    score = rows * k.type.shape[-2] * out.dtype.itemsize
    row = rows * out.dtype.itemsize
    total = nbytes(q.type) + nbytes(k.type) + score  # q @ k^T
    if scale is not None:
        total = total + 2 * score
    if mask is not None:
        total = total + 2 * score + nbytes(mask.type)
    total = total + (score + row) + (2 * score + row) + 2 * score + (score + row)  # max sub exp sum
    total = total + (2 * score + row)  # divide
    return total + score + nbytes(v.type) + nbytes(out)  # @ v


register(
    OpDef(
        "attention",
        "contract",
        attention,
        impl=_impl,
        shape_rule=_shape,
        dtype_rule=_dtype,
        normalize=_normalize,
        kernel="attention",
        unfused_bytes=lambda eqn: _unfused_bytes(eqn),
    )
)
