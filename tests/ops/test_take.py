"""The native gather ``take`` (ops/gathers.py): ``np.take``, ``x[idx]``, ``x[:, idx]`` and ``x[k]``
with an integer known only at run time, against NumPy: every dtype, random shapes, negative
indices, index arrays of rank 0 to 2, NumPy's IndexError (before any write into an argument);
fused with what reads it (one kernel); the NumPy target's blocks along the indices and along
the other axes; the transpiled module; the CUDA target on the emulator (one launch, NumPy's
IndexError where CuPy would wrap the index around)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    arrays,
    assert_same_result,
    check,
    checked_cupy,
    cuda_emulator,
    dtypes,
    float_tol,
    import_file,
    run_transpiled,
    shapes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as ppto

programs = import_file("take_programs", Path(__file__).with_name("take_programs.py"))
COVERED = {"take", "take_along_axis"}
TOL = float_tol(1e-5, 1e-12)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_take(data):
    dtype = data.draw(dtypes())
    a = data.draw(arrays(dtype, data.draw(shapes(min_dims=1, max_dims=3, max_side=5))))
    axis = data.draw(st.sampled_from([None, *range(-a.ndim - 1, a.ndim)]), label="axis")
    n = a.size if axis is None or not -a.ndim <= axis < a.ndim else a.shape[axis]
    ishape = data.draw(shapes(min_dims=0, max_dims=2, max_side=4), label="index shape")
    wide = data.draw(st.booleans(), label="some out of bounds") or n == 0
    lo, hi = (-n - 2, n + 1) if wide else (-n, n - 1)
    kind = data.draw(st.sampled_from(["int64", "int32", "uint8"]), label="index dtype")
    lo = max(lo, 0) if kind == "uint8" else lo
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    idx = rng.integers(lo, hi + 1, ishape).astype(kind)
    form = data.draw(st.sampled_from([ppto, np]), label="form")
    check(
        lambda a, i: form.take(a, i, axis=axis), lambda a, i: np.take(a, i, axis=axis), a=a, i=idx
    )


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_take_along_axis(data):
    dtype = data.draw(dtypes())
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    a = data.draw(arrays(dtype, shape))
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]), label="axis")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    if axis is None:
        ishape, n = (data.draw(st.integers(0, 5), label="length"),), a.size
    else:  # each other axis as long as a's, or 1 (broadcast), or another length (an error)
        ishape = tuple(
            data.draw(st.integers(0, 4), label="length")
            if k == axis % a.ndim
            else data.draw(st.sampled_from([d, 1, d, 2]), label="other")
            for k, d in enumerate(shape)
        )
        n = a.shape[axis]
    wide = data.draw(st.booleans(), label="some out of bounds")
    lo, hi = (-n - 1, n) if wide else (-n, n - 1)
    idx = rng.integers(lo, hi + 1, ishape) if n or wide else np.zeros(ishape, np.int64)
    form = data.draw(st.sampled_from([ppto, np]), label="form")
    check(
        lambda a, i: form.take_along_axis(a, i, axis=axis),
        lambda a, i: np.take_along_axis(a, i, axis=axis),
        a=a,
        i=idx,
    )


# -- compiled functions ---------------------------------------------------------------------------
def _inputs(name, dtype, rng, n):
    def a(*shape):
        return (rng.standard_normal(shape) * 4).astype(dtype)

    def ints(m, k):
        return rng.integers(-m, m, k)

    return {
        "fused": lambda: (a(n), ints(n, 3 * n), a(3 * n)),
        "columns": lambda: (a(n, n + 2), rng.integers(-n, n, 5)),
        "into_argument": lambda: (a(n), ints(n, 2 * n), a(2 * n + 1)),
        "self_gather": lambda: (a(2 * n), ints(2 * n, n)),
        "loop": lambda: (a(n), ints(n, n), a(n)),
        "picked": lambda: (a(n, 4), rng.integers(-4, 4, n)),
    }[name]()


NAMES = ["fused", "columns", "into_argument", "self_gather", "loop", "picked"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 7, 40])
def test_compiled_gathers_match_numpy(name, dtype, n):
    fn = getattr(programs, name)
    args = _inputs(name, dtype, np.random.default_rng(n), n)
    mine, ref = ([a.copy() if isinstance(a, np.ndarray) else a for a in args] for _ in "ab")
    assert_same_result(ppto.compile(fn)(*mine), fn(*ref), TOL)
    for m, r in zip(mine, ref):  # every write into an argument
        np.testing.assert_array_equal(m, r)


def test_a_gather_fuses_with_what_reads_it():
    args = _inputs("fused", "float64", np.random.default_rng(0), 20)
    text = str(ppto.explain(programs.fused, *args))
    assert "kernels: 1 " in text
    assert re.search(r"take \w+ -> k0: fused \[gather\]", text), text
    assert "graph break" not in text


def test_an_index_out_of_bounds_raises_before_any_write():
    rng = np.random.default_rng(2)
    for n in (10, 300_000):  # one block; blocks run by the pool
        x, idx, y = _inputs("into_argument", "float64", rng, n)
        idx[-1] = n
        with pytest.raises(IndexError):
            programs.into_argument(x, idx, y.copy())
        before = y.copy()
        with pytest.raises(IndexError) as got:
            ppto.compile(programs.into_argument)(x, idx, y)
        assert isinstance(got.value, ppto.PyptoError)
        assert f"index {n} is out of bounds for axis 0 with size {n}" in str(got.value)
        np.testing.assert_array_equal(y, before)


def _chunks(text) -> list[int]:
    return [int(c) for c in re.findall(r"-> (\d+) chunk", text)]


def test_blocks_along_the_indices_and_along_other_axes():
    rng = np.random.default_rng(5)
    x, idx = rng.standard_normal(1000), rng.integers(-1000, 1000, 400_000)
    w = rng.standard_normal(400_000)
    assert max(_chunks(str(ppto.explain(programs.fused, x, idx, w)))) > 1
    assert_same_result(ppto.compile(programs.fused)(x, idx, w), programs.fused(x, idx, w), TOL)
    A = rng.standard_normal((100_000, 6))
    cols = np.array([5, 0, -1, 2])
    rows = (A[:, cols] * 2).sum(axis=1)
    got = ppto.compile(programs.rows)(A, cols)
    assert max(_chunks(str(ppto.explain(programs.rows, A, cols)))) > 1
    np.testing.assert_allclose(got, rows, rtol=1e-12)


def test_the_transpiled_module_runs_without_pypto(tmp_path):
    rng = np.random.default_rng(8)
    args = _inputs("fused", "float64", rng, 9)
    got, text = run_transpiled(
        tmp_path,
        Path(__file__).with_name("take_programs.py"),
        ["fused(f64[n],i64[m],f64[m])"],
        "m.fused(*args)",
        args,
    )
    assert "np.take(" in text
    np.testing.assert_allclose(got, programs.fused(*args), rtol=1e-12)


# -- the CUDA target on the CPU emulator ---------------------------------------------------------
_emu = cuda_emulator("take_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["fused", "columns", "into_argument", "self_gather", "picked"])
def test_on_the_cuda_target(name, dtype):
    from cupy_backend import to_host

    fn = getattr(programs, name)
    args = _inputs(name, dtype, np.random.default_rng(3), 9)
    cp = checked_cupy(_emu)
    dev = [cp.device(a) for a in args]
    got = ppto.compile(fn)(*dev)
    ref = [a.copy() for a in args]
    want = fn(*ref)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        np.testing.assert_allclose(to_host(g), w, rtol=TOL(np.dtype(dtype)))
    for d, r in zip(dev, ref):
        np.testing.assert_array_equal(to_host(d), r)
    if name == "fused":
        assert len(cp.launches) == 1  # the gather, the maps after it: one kernel


@pytest.mark.usefixtures("tools")
def test_the_cuda_target_raises_numpys_index_error_before_any_write():
    """CuPy wraps an index outside its axis around; the host checks the indices before the
    launch (the stand-in wraps as CuPy does)."""
    from cupy_backend import to_host

    x, idx, y = _inputs("into_argument", "float64", np.random.default_rng(4), 8)
    for bad in (8, -9):
        idx[3] = bad
        cp = checked_cupy(_emu)
        dy = cp.device(y)
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            ppto.compile(programs.into_argument)(cp.device(x), cp.device(idx), dy)
        np.testing.assert_array_equal(to_host(dy), y)


@pytest.mark.usefixtures("tools")
def test_take_along_axis_and_take_keep_numpys_bounds_on_the_device():
    """CuPy's take / take_along_axis would wrap an index outside the axis: the native ops check
    the indices before the launch; np.take(mode="clip") runs NumPy's call (CuPy's has no mode)."""
    from cupy_backend import to_host

    rng = np.random.default_rng(6)
    logp, labels = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    cp = checked_cupy(_emu)
    got = ppto.compile(programs.picked)(cp.device(logp), cp.device(labels))
    np.testing.assert_allclose(to_host(got), programs.picked(logp, labels), rtol=1e-12)
    labels[2] = 4
    with pytest.raises(IndexError):
        programs.picked(logp, labels)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        ppto.compile(programs.picked)(cp.device(logp), cp.device(labels))
    idx = np.array([-7, 2, 9])
    got = ppto.compile(programs.clipped)(cp.device(logp[0]), cp.device(idx))
    np.testing.assert_array_equal(to_host(got), programs.clipped(logp[0], idx))
