"""Contractions: ``matmul`` (the ``@`` operator, batched, with NumPy's 1-d rules) and ``dot``."""

from __future__ import annotations

import numpy as np

from ..api import apply
from ..dtypes import ufunc_out_dtype
from ..errors import ShapeError
from ..registry import OpDef, register
from ..shapes import broadcast_shapes
from ..symbolic import Dim
from .rules import as_dtype, broadcast_rule, promoted_dtype


def _core_dims_match(ctx, k1: Dim, k2: Dim, message: str) -> Dim:
    if k1 == k2:
        return k1
    if not ctx.eq(k1, k2):
        raise ShapeError(message.format(ctx.show_dim(k1), ctx.show_dim(k2)))
    return k1 if isinstance(k1, int) else k2


def matmul(x1, x2):
    """Matrix product with NumPy's rules: batch axes broadcast; a 1-d operand is a vector."""
    return apply("matmul", (x1, x2))


def _matmul_shape(ctx, a, b):
    for i, s in enumerate((a, b)):
        if len(s) == 0:
            raise ShapeError(
                f"matmul: input operand {i} does not have enough dimensions "
                "(a scalar is not a matrix; use * to scale)"
            )
    a2 = ((1,) + a) if len(a) == 1 else a
    b2 = (b + (1,)) if len(b) == 1 else b
    _core_dims_match(
        ctx,
        a2[-1],
        b2[-2],
        "matmul: the operands' core dimensions differ (size {0} is different from {1})",
    )
    batch = broadcast_shapes(ctx, a2[:-2], b2[:-2])
    core = (() if len(a) == 1 else (a2[-2],)) + (() if len(b) == 1 else (b2[-1],))
    return batch + core


register(
    OpDef(
        "matmul",
        "contract",
        matmul,
        impl=np.matmul,
        shape_rule=_matmul_shape,
        dtype_rule=lambda k1, k2: ufunc_out_dtype(np.matmul, (k1, k2), "matmul"),
        numpy=(np.matmul,),
        ufunc=np.matmul,
    )
)


def dot(a, b):
    """``np.dot``: products of scalars, inner product of vectors, matrix product of matrices,
    and for N-d operands a sum over the last axis of ``a`` and the second-to-last of ``b``."""
    return apply("dot", (a, b))


def _dot_shape(ctx, a, b):
    if not a or not b:
        return broadcast_rule(ctx, a, b)  # a scalar operand: elementwise multiply
    kb = b[-1] if len(b) == 1 else b[-2]
    _core_dims_match(ctx, a[-1], kb, "dot: shapes not aligned: {0} (last axis of a) != {1}")
    return a[:-1] + (b[:-2] + b[-1:] if len(b) > 1 else ())


register(
    OpDef(
        "dot",
        "contract",
        dot,
        impl=np.dot,
        shape_rule=_dot_shape,
        # np.dot makes Python scalars arrays first, so they promote as strong types
        dtype_rule=lambda k1, k2: promoted_dtype(as_dtype(k1), as_dtype(k2)),
        numpy=(np.dot,),
    )
)
