"""``break`` and ``continue`` under run-time conditions in ``for`` and ``while`` loops
(parse/returns.py: the rest of the body runs on the paths that do not leave; a ``break`` sets
the loop's ``until`` flag, checked after each iteration), against Python + NumPy."""

import numpy as np
import pytest
from helpers import assert_same_result, cuda_emulator, float_tol

import pypto as ppto


def prefix_before_negative(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        total = total + x[i]
    return total


def skip_negatives(x):
    total = x[0] * 0
    count = 0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        total = total + x[i]
        count += 1
    return total, count


def newton_until_converged(x, tol):
    for _ in range(100):
        x_new = 0.5 * (x + 2.0 / x)
        if np.max(np.abs(x_new - x)) < tol:
            x = x_new
            break
        x = x_new
    return x


def while_with_break(x):
    s = x.sum() * 0
    while s < 100.0:
        s = s + np.abs(x).sum()
        if s > 50.0:
            break
        s = s * 1.5
    return s


def inner_break(A):
    out = A[0, 0] * 0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > 1.0:
                break
            out = out + A[i, j]
    return out


def unconditional(x):
    y = x.copy()
    for i in range(x.shape[0]):
        y[i] = x[i] * 2
        if x.ndim == 1:  # known when compiling
            continue
    for i in range(x.shape[0]):
        y[i] = y[i] + 1
        break
    return y


def elif_exits(x):
    total = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            break
        elif x[i] < 0:
            continue
        else:
            total = total + x[i]
    return total


def while_true(x):
    k = 0
    while True:
        x = x * 0.5
        k += 1
        if np.abs(x).max() < 0.01:
            break
    return x, k


CASES = [
    while_true,
    prefix_before_negative,
    skip_negatives,
    while_with_break,
    inner_break,
    unconditional,
    elif_exits,
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_break_and_continue_match_numpy(fn, dtype):
    rng = np.random.default_rng(4)
    compiled = ppto.compile(fn)
    for shape in ((6,), (7,), (3, 4)):
        if fn is not inner_break and len(shape) == 2:
            continue
        if fn is inner_break and len(shape) == 1:
            shape = (4, 5)
        x = (rng.standard_normal(shape) * 1.5).astype(dtype)
        _same(compiled(x), fn(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_loop_that_breaks_when_converged(dtype):
    x = np.random.default_rng(5).uniform(1, 3, 4).astype(dtype)
    _same(ppto.compile(newton_until_converged)(x, 1e-4), newton_until_converged(x, 1e-4))


def test_a_loop_that_may_break_stays_a_host_loop():
    text = str(ppto.explain(prefix_before_negative, np.ones(5)))
    assert "host loop: its body can `break`" in text


_emu = cuda_emulator("break_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
def test_break_and_continue_on_the_cuda_target():
    from cupy_backend import make_cupy, to_host

    x = np.random.default_rng(6).standard_normal(7)
    cp = make_cupy(order="random", seed=5)
    for fn in (prefix_before_negative, skip_negatives, elif_exits):
        got, want = ppto.compile(fn)(cp.device(x)), fn(x)
        got = tuple(to_host(g) for g in got) if isinstance(want, tuple) else to_host(got)
        _same(got, want, exact_types=False)


def _same(got, want, exact_types=True):
    assert_same_result(got, want, float_tol(1e-5, 1e-12), exact_types)
