"""``np.cov`` and ``np.corrcoef``, following NumPy's code step for step: the rows (variables)
centred on their means, ``X @ X.T`` over ``n - ddof``, squeezed; the correlation divides by
the outer product of the standard deviations and clips to [-1, 1].

Weights (``fweights``, ``aweights``) and complex values run as NumPy's call (a graph break).
"""

from __future__ import annotations

import numpy as np

from ..api import apply, current_builder, lift
from ..errors import HostOnly, ShapeError
from ..symbolic import smax
from .composites import _composite, _op
from .creation import eye
from .maps import where
from .reorders import reshape, transpose


# -- cov ------------------------------------------------------------------------------------------
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """The covariance matrix of the rows of ``m`` (``rowvar=False``: of its columns), and of
    ``y``'s joined below; normalized by ``n - 1`` (``bias``: ``n``; or ``n - ddof``)."""
    if fweights is not None or aweights is not None:
        raise HostOnly("np.cov with weights")
    if ddof is not None and (isinstance(ddof, float) and ddof != int(ddof)):
        raise ShapeError("ddof must be integer")
    if ddof is None:
        ddof = 0 if bias else 1
    operands = (m,) if y is None else (m, y)
    attrs = {"rowvar": bool(rowvar), "ddof": int(ddof), "dtype": dtype}
    return apply("cov", operands, attrs)


def _variables(a, rowvar, dtype, what):
    """``a`` as a 2-D array of variables in rows (NumPy's ``array(a, ndmin=2, dtype)``)."""
    x = lift(a)
    if x.dtype.kind == "c":
        raise HostOnly(f"np.cov of complex values ({what})")
    if x.ndim > 2:
        raise ShapeError(f"{what} has more than 2 dimensions")
    one_d = x.ndim < 2
    x = reshape(x, (1, -1)) if one_d else x
    if x.dtype != dtype:
        x = x.astype(dtype)
    return x, one_d


def _covariance(m, y, rowvar, ddof, dtype):
    ms = (m,) if y is None else (m, y)
    if dtype is None:
        dtype = np.result_type(*(lift(v).dtype for v in ms), np.float64)
    dtype = np.dtype(dtype)
    x, one_d = _variables(m, rowvar, dtype, "m")
    if not rowvar and not one_d:
        x = transpose(x)
    if y is not None:
        yy, _ = _variables(y, rowvar, dtype, "y")
        if not rowvar and not current_builder().ctx.eq(yy.shape[0], 1):
            yy = transpose(yy)
        x = _op("concatenate")([x, yy], axis=0)
    avg = x.mean(axis=1, keepdims=True)
    fact = x.shape[1] - ddof  # (NumPy warns for fact <= 0 and divides by 0: inf and NaN)
    xc = x - avg
    c = _op("matmul")(xc, transpose(xc))
    return c / smax(fact, 0) if not isinstance(fact, int) else c / max(fact, 0)


def _cov(*operands, rowvar, ddof, dtype):
    m, y = operands[0], operands[1] if len(operands) > 1 else None
    return _op("squeeze")(_covariance(m, y, rowvar, ddof, dtype))


def _cov_ref(m, y=None, rowvar=True, ddof=None, dtype=None):
    return np.cov(m, y, rowvar, ddof=ddof, dtype=dtype)


_composite("cov", cov, _cov, _cov_ref, (np.cov,))


# -- corrcoef -------------------------------------------------------------------------------------
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients: ``cov`` divided by the outer product of the standard
    deviations, clipped to [-1, 1]."""
    operands = (x,) if y is None else (x, y)
    return apply("corrcoef", operands, {"rowvar": bool(rowvar), "dtype": dtype})


def _corrcoef(*operands, rowvar, dtype):
    c = _cov(*operands, rowvar=rowvar, ddof=1, dtype=dtype)
    if c.ndim == 0:  # one variable: NaN for a variance of 0, inf or NaN, else 1
        return c / c
    n = c.shape[0]
    d = where(eye(n, dtype=bool), c, 0).sum(axis=1)  # the diagonal (exact: the rest is zeros)
    stddev = _op("sqrt")(d)
    c = c / reshape(stddev, (n, 1))
    c = c / reshape(stddev, (1, n))
    return _op("clip")(c, -1, 1)


def _corrcoef_ref(*operands, rowvar, dtype):
    return np.corrcoef(*operands, rowvar=rowvar, dtype=dtype)


_composite("corrcoef", corrcoef, _corrcoef, _corrcoef_ref, (np.corrcoef,))

__all__ = ["corrcoef", "cov"]
