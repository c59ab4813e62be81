"""vstack / hstack / dstack / column_stack, diff, isclose, roll and round against NumPy
(composites of concatenate, expand_dims, reshape, slices, subtract / not_equal, comparisons,
rint): every dtype,
random shapes (mismatched ones too: NumPy's error is PyPTO's error), non-contiguous inputs,
NaN and infinities, NumPy's own function or PyPTO's called."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import arrays, check, checked_cupy, cuda_emulator, dtypes, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as ppto

COVERED = {"vstack", "hstack", "dstack", "column_stack", "diff", "isclose", "roll", "round"}
STACKS = {"vstack": np.vstack, "hstack": np.hstack, "dstack": np.dstack}
STACKS["column_stack"] = np.column_stack


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_stacking(data):
    name = data.draw(st.sampled_from(sorted(STACKS)), label="fn")
    shape = data.draw(shapes(max_dims=3, max_side=4))
    n = data.draw(st.integers(1, 3))
    arrs = []
    for _ in range(n):
        s = list(shape)
        if s and data.draw(st.integers(0, 6)) == 0:  # a mismatch (NumPy refuses some)
            s[data.draw(st.integers(0, len(s) - 1))] = data.draw(st.integers(0, 4))
        arrs.append(data.draw(arrays(data.draw(dtypes()), tuple(s))))
    names = [f"a{i}" for i in range(n)]
    form = data.draw(st.sampled_from(["ppto", "np"]))

    def build(**kw):
        ts = [kw[k] for k in names]
        return (getattr(ppto, name) if form == "ppto" else STACKS[name])(ts)

    check(build, lambda **kw: STACKS[name]([kw[k] for k in names]), **dict(zip(names, arrs)))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_diff(data):
    shape = data.draw(shapes(min_dims=0, max_dims=3, max_side=5))
    dtype = data.draw(dtypes())
    a = data.draw(arrays(dtype, shape))
    n = data.draw(st.integers(-1, 3), label="n")
    nd = len(shape)
    axis = data.draw(st.integers(-nd - 1, nd) if nd else st.just(-1), label="axis")
    kwargs = {"n": n, "axis": axis}
    inputs = {"a": a}
    for end in ("prepend", "append"):
        kind = data.draw(st.sampled_from(["none", "none", "scalar", "array"]), label=end)
        if kind == "scalar":
            kwargs[end] = data.draw(st.sampled_from([0, 1.5, True]))
        elif kind == "array" and nd:
            s = list(shape)
            s[axis % nd if -nd <= axis < nd else 0] = data.draw(st.integers(0, 3))
            inputs[end] = data.draw(arrays(data.draw(dtypes()), tuple(s)))

    def call(module, kw):
        extra = {k: kw[k] for k in ("prepend", "append") if k in kw}
        fixed = {k: v for k, v in kwargs.items() if k not in extra}
        return module.diff(kw["a"], **fixed, **extra)

    check(lambda **kw: call(ppto, kw), lambda **kw: call(np, kw), **inputs)


def test_diff_errors_are_numpys():
    x = ppto.tensor("x")
    with pytest.raises(ValueError):
        np.diff(np.ones(3), n=-1)
    with pytest.raises(ValueError, match="order must be non-negative"):
        ppto.diff(x, n=-1).run(x=np.ones(3))
    with pytest.raises(ValueError, match="at least one dimensional"):
        ppto.diff(x).run(x=np.float64(2.0))
    with pytest.raises(TypeError):
        ppto.diff(x, n=1.5)
    with pytest.raises(ValueError):
        np.vstack([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError):
        ppto.vstack([x, ppto.tensor("y")]).run(x=np.ones((2, 3)), y=np.ones((2, 4)))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_isclose(data):
    shape = data.draw(shapes(max_dims=3, max_side=4))
    a = data.draw(arrays(data.draw(dtypes()), shape))
    other = data.draw(st.sampled_from(["same", "near", "scalar", "broadcast"]), label="b")
    if other == "scalar":
        b = data.draw(st.sampled_from([0, 1, 1.0, np.inf, np.nan, -2.5]))
    elif other == "broadcast" and shape:
        b = data.draw(arrays(data.draw(dtypes()), shape[-1:]))
    elif other == "near" and a.dtype.kind == "f":
        b = a * (1 + data.draw(st.sampled_from([1e-9, 1e-6, 1e-4])))
    else:
        b = data.draw(arrays(data.draw(dtypes()), shape))
    kw = {"rtol": data.draw(st.sampled_from([1e-5, 0.0, 0.1]))}
    kw["atol"] = data.draw(st.sampled_from([1e-8, 0.0, 1.0]))
    kw["equal_nan"] = data.draw(st.booleans())
    form = data.draw(st.sampled_from(["ppto", "np"]))
    inputs = {"a": a} if other == "scalar" else {"a": a, "b": b}

    def call(module, k):
        return module.isclose(k["a"], k.get("b", b), **kw)

    check(lambda **k: call(ppto if form == "ppto" else np, k), lambda **k: call(np, k), **inputs)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_roll(data):
    shape = data.draw(shapes(min_dims=0, max_dims=3, max_side=5))
    a = data.draw(arrays(data.draw(dtypes()), shape))
    nd = len(shape)
    shift = data.draw(st.one_of(st.integers(-7, 7), st.tuples(st.integers(-7, 7))), label="shift")
    kind = data.draw(st.sampled_from(["none", "int", "tuple"]), label="axis kind")
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = data.draw(st.integers(-nd - 1, nd), label="axis")
    else:
        axis = tuple(data.draw(st.lists(st.integers(-nd - 1, nd), min_size=1, max_size=3)))
        if isinstance(shift, int) and data.draw(st.booleans()):
            shift = tuple(data.draw(st.integers(-7, 7)) for _ in axis)
    form = data.draw(st.sampled_from([ppto, np]))
    check(lambda a: form.roll(a, shift, axis), lambda a: np.roll(a, shift, axis), a=a)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_round(data):
    """NumPy's algorithm (rint of a scaled value), so halves and representation error round as
    NumPy rounds them: every real dtype, decimals from -3 to 4 (bools: float16 for 0 decimals,
    else NumPy's TypeError)."""
    dtype = data.draw(dtypes().filter(lambda d: np.dtype(d).kind != "c"))
    shape = data.draw(shapes(min_dims=0, max_dims=2, max_side=5))
    a = data.draw(arrays(dtype, shape))
    if np.dtype(dtype).kind == "f" and data.draw(st.booleans()):
        a = (np.round(a * 8) / 8).astype(dtype)  # halves and quarters: the ties
    decimals = data.draw(st.integers(-3, 4), label="decimals")
    form = data.draw(st.sampled_from(["round", "around"]))
    mod = data.draw(st.sampled_from([ppto, np]))
    check(lambda a: getattr(mod, form)(a, decimals), lambda a: np.round(a, decimals), a=a)


def test_round_refuses_complex_and_non_int_decimals():
    x = ppto.tensor("x")
    with pytest.raises(ppto.PyptoError, match="complex"):
        ppto.round(x).run(x=np.array([1.5 + 0.5j]))
    with pytest.raises(TypeError):
        ppto.round(x, 1.5)


def _roll_rows(u, s):
    r = np.roll(u, s, axis=0)
    r[:1] = 0  # a new array: the write does not reach u
    return r - u


@pytest.mark.parametrize("shape", [(5, 3), (1, 4), (0, 2)])
@pytest.mark.parametrize("s", [0, 1, -2, 9])
def test_roll_by_a_run_time_shift(shape, s):
    u = np.arange(float(np.prod(shape))).reshape(shape)
    got = ppto.compile(_roll_rows)(u.copy(), s)
    np.testing.assert_array_equal(got, _roll_rows(u.copy(), s))


def test_roll_errors():
    with pytest.raises(TypeError):
        ppto.roll(ppto.tensor("x"), 1.5)
    with pytest.raises(ValueError):
        ppto.roll(ppto.tensor("x"), (1, 2, 3), (0, 1))
    with pytest.raises(ValueError):
        np.roll(np.ones(3), (1, 2, 3), (0, 1))


# -- the CUDA target on the CPU emulator -----------------------------------------------------------
_emu = cuda_emulator("numpy_functions_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


def _on_gpu(u, v):
    return (
        np.roll(u, 2, axis=1)
        + np.diff(v, axis=0)[:1].sum()
        + np.isclose(u, v).sum()
        + np.round(u * 10, 1)
        + np.around(v, -1)
    )


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_roll_diff_isclose_round_on_the_cuda_target(dtype):
    from cupy_backend import to_host

    rng = np.random.default_rng(19)
    u = rng.standard_normal((6, 5)).astype(dtype)
    v = u + rng.standard_normal((6, 5)).astype(dtype) * 1e-6
    cp = checked_cupy(_emu)
    got = to_host(ppto.compile(_on_gpu)(cp.device(u), cp.device(v)))
    assert cp.launches
    want = _on_gpu(u, v)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5 if dtype == "float32" else 1e-12)
