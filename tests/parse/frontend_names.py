"""Functions for tests/parse/test_supported_python.py, sections "Modules and names" and
"Parameters and arguments" of docs/supported-python.md. ppto.compile reads them from this file;
helpers are functions of this module (inlined)."""

import math

import numpy as np

import pypto as ppto

EPS = 1e-6
OFFSETS = (1, 2)


# -- Modules and names ---------------------------------------------------------------------------
def numpy_as_np(x):
    return np.tanh(x) * 2 + np.abs(x).max(axis=0)


def make_closure(scale, xp):
    def closure_scaled(x):
        return xp.sin(x) * scale

    return closure_scaled


def math_on_scalars(x, t):
    d = x.shape[-1]
    r = math.sqrt(d)
    e = math.exp(t)
    f = math.floor(t * 3.0)
    c = math.cos(r) + math.log(d)
    return x / r * e, r, e, f, c, math.ceil(t), math.floor(2.5)


def math_floor_of_a_size_ratio(x):
    n = x.shape[0]
    return x[: math.floor(n / 2)], math.floor(n / 2), math.ceil(n / 3)


def constants(x):
    a = x * np.pi + math.pi
    b = np.e * x[:, np.newaxis]
    c = np.minimum(x, np.inf) - math.e
    return a, b, c, np.pi, np.e, math.inf, np.newaxis is None


def dtype_objects(x):
    zeros = np.zeros(x.shape, dtype=x.dtype)
    ints = (x * 10.0).astype(np.int32)
    cast = np.float32(x + 1.0)
    wide = np.float64(x.sum())
    scalar = np.float32(2.5)
    size = np.float64(x.shape[0])
    ones = np.ones(3, dtype=np.int64)
    return zeros + x, ints, cast, wide, scalar, scalar * x, size, ones, x.dtype == np.float64


def cast_to_float32(x):
    return np.float32(x)


def module_constants(x):
    return x / (np.abs(x).sum() + EPS) + OFFSETS[0], x[OFFSETS[1] :] * EPS


def _sumsq(v):
    return (v * v).sum(axis=-1, keepdims=True)


def _norm(v, eps=EPS):
    return np.sqrt(_sumsq(v) + eps)


def scale_into(a, s):
    a *= s


def _normalize_into(out, v):
    out[...] = v / _norm(v)
    scale_into(out, 2.0)


def extremes(x):
    return x.min(), x.max()


def _power(x, k):
    return x if k == 1 else x * _power(x, k - 1)


def helpers(x, out):
    _normalize_into(out, x)
    lo, hi = extremes(x)
    return _norm(x, eps=0.5), out.sum(axis=0), hi - lo, _power(x, 3)


def ppto_softmax(x):
    return ppto.softmax(x * 2.0) + 1.0


def softmax_in_numpy(x):
    y = x * 2.0
    e = np.exp(y - np.max(y, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) + 1.0


def sorted_rows(a):
    return np.sort(a, axis=-1)


def calls_user_operator(x):
    return ppto.fe_sorted_rows(x) + 1.0


def calls_user_operator_by_its_name(x):
    return ppto.sorted_rows(x) * 2.0


# -- Parameters and arguments ---------------------------------------------------------------------
def keyword_defaults(x, y, alpha=0.5, beta=2):
    return x * alpha + y * beta


def array_arguments(x, y):
    return x + y, x.shape, y[0] * 2


def int_argument(x, n):
    out = np.zeros(n, dtype=x.dtype)
    for i in range(n):
        out[i] = x[i] * (n - i)
    return out, x[:n].sum(), n * 2 + 1, x[n - 1], x[n:].shape


def float_argument(x, alpha):
    return x * alpha, alpha * 2.0, alpha + 1, -alpha, x.sum() * alpha


def numpy_scalar_argument(x, s):
    return x * s, s * 2.0, s + 1, x.sum() + s


def constant_arguments(x, normalize=False, mode="same", shift=0.0):
    if mode is None:
        mode = "diff"
    if normalize:
        x = x / x.sum()
    if mode == "same":
        y = x * 2.0
    else:
        y = x[1:] - x[:-1]
    return y + shift, mode, normalize


def optional_argument(x, bias=None):
    if bias is not None:
        x = x + bias
    return x * 2.0


def documented(x: np.ndarray, k: int = 2) -> np.ndarray:
    """A docstring, and annotations everywhere."""
    y: np.ndarray = x * k
    return y
