"""CuPy chunks on the Dask target: dask arrays whose chunks are GPU arrays run each kernel's
tasks as the CUDA target's code (emit/dask_cuda.py), shipped as source and compiled on the
worker that runs it.

Without a GPU the chunks are the CUDA emulator's device arrays: the stand-in module pickles by
its settings, so each worker process makes its own and runs the kernels as emulated CUDA
threads (``shared_launches`` reads what a worker launched). Every result is compared with NumPy
on the same inputs, on a ``distributed.LocalCluster`` with 2 worker processes.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers import cuda_emulator

import pypto as ppto
from pypto.emit.dask_blocks import Program
from pypto.testing.cuda_emu import fakecupy

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

_emu = cuda_emulator("dask_cuda_emu_conftest")
gxx, nvrtc_ok = _emu.gxx, _emu.nvrtc_ok
pytestmark = pytest.mark.usefixtures("gxx")


def elementwise(x, y):
    return np.sin(x) + np.cos(y) * 2.0


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def smooth(a):
    b = a.copy()
    b[1:-1] = 0.25 * a[:-2] + 0.5 * a[1:-1] + 0.25 * a[2:]
    return b


def row_stats(x):
    return x.mean(axis=1), x.std(axis=1)


def cumsum_rows(x):
    return np.cumsum(x, axis=1) * 0.5


def dense_relu(x, W, b):
    return np.maximum(x @ W + b, 0.0)


def column_sums(x):
    return (x * x).sum(axis=0)


def diffusion(A, B, T):
    for _ in range(T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A


CORPUS = {
    f.__name__: f
    for f in (elementwise, softmax, smooth, row_stats, cumsum_rows, dense_relu, column_sums)
}
COMPILED = {name: ppto.compile(fn) for name, fn in CORPUS.items()}
DIFFUSION = ppto.compile(diffusion)


def _inputs(name, dtype, rng, n=96, m=40):
    def r(*shape):
        return rng.standard_normal(shape).astype(dtype)

    if name == "elementwise":
        return [r(n, m), r(n, m)]
    if name == "dense_relu":
        return [r(n, m), r(m, 24), r(24)]
    return [r(n, m)]


def _on_gpu(cp, a, chunks):
    """``a`` as a dask array of the stand-in's device arrays."""
    return da.from_array(cp.device(a), chunks=chunks[: a.ndim])


def _check(got, want, dtype):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w, dtype)
        return
    assert isinstance(got, da.Array)
    assert isinstance(got._meta, fakecupy.DeviceArray)  # the result's chunks: on the GPU
    value = np.asarray(got.compute())
    assert value.dtype == want.dtype and value.shape == want.shape
    tol = 2e-5 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(value, want, rtol=tol, atol=tol)


def _programs(array) -> list[Program]:
    return [v for v in dict(array.__dask_graph__()).values() if isinstance(v, Program)]


def _pypto_tasks(array) -> dict:
    (opt,) = dask.optimize(array)
    found: dict[str, int] = {}
    for key in dict(opt.__dask_graph__()):
        name = key[0] if isinstance(key, tuple) else key
        if isinstance(name, str) and name.startswith("pypto-k"):
            found[name.split("-")[1]] = found.get(name.split("-")[1], 0) + 1
    return found


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_on_cupy_chunks_matches_numpy(client, name, dtype):
    cp = fakecupy.FakeCupy(order="reverse")  # (a missing barrier shows in reverse order)
    arrays = _inputs(name, dtype, np.random.default_rng(len(name)))
    want = CORPUS[name](*arrays)
    before = sum(len(v) for v in client.run(fakecupy.shared_launches).values())
    got = COMPILED[name](*[_on_gpu(cp, a, (24, -1)) for a in arrays])
    programs = [p for r in (got if isinstance(got, tuple) else (got,)) for p in _programs(r)]
    assert programs and all(p.runtime == "cuda_helpers" for p in programs)
    _check(got, want, dtype)
    after = client.run(fakecupy.shared_launches)
    assert sum(len(v) for v in after.values()) > before  # the workers launched the kernels
    assert not cp.launches  # (none on the client)


def test_blocked_kernels_run_the_cuda_target_per_block(client):
    """One task per block, each the CUDA target's kernel for the block's rows; the program is
    source (no compiled module crosses the wire) and NVRTC compiles its kernels."""
    cp = fakecupy.FakeCupy()
    x = np.random.default_rng(2).standard_normal((200, 50))
    got = COMPILED["softmax"](_on_gpu(cp, x, (50, -1)))
    assert _pypto_tasks(got) == {"k0": 4}
    (program,) = _programs(got)
    assert "__global__" in program.source and "_cuda_block" in program.entry
    assert len(pickle.dumps(program)) < 64 * 1024
    _check(got, softmax(x), "float64")
    names = [n for v in client.run(fakecupy.shared_launches).values() for n in v]
    assert any("_cuda_block" in n for n in names)


@pytest.mark.usefixtures("nvrtc_ok")
def test_nvrtc_compiles_the_block_programs():
    from pypto.emit import runtime
    from pypto.testing import nvrtc

    cp = fakecupy.FakeCupy()
    rng = np.random.default_rng(3)
    for name in ("softmax", "smooth", "row_stats", "cumsum_rows", "dense_relu"):
        arrays = [_on_gpu(cp, a, (24, -1)) for a in _inputs(name, "float32", rng)]
        got = COMPILED[name](*arrays)
        for result in got if isinstance(got, tuple) else (got,):
            for program in _programs(result):
                namespace = dict(runtime.namespace("cuda_helpers"))
                exec(program.source, namespace)
                nvrtc.compile_cuda(namespace[f"{program.entry}_module"]["source"])


def test_a_product_runs_cupys_matmul_then_the_epilogue_per_block(client):
    cp = fakecupy.FakeCupy()
    x, W, b = _inputs("dense_relu", "float32", np.random.default_rng(4))
    # NumPy weights beside CuPy chunks: moved to the GPU by the tasks
    got = COMPILED["dense_relu"](_on_gpu(cp, x, (24, -1)), W, b)
    keys = [str(k[0] if isinstance(k, tuple) else k) for k in dict(got.__dask_graph__())]
    assert any(k.startswith("matmul") for k in keys)
    _check(got, dense_relu(x, W, b), "float32")


def test_time_loop_on_cupy_chunks_runs_step_by_step_without_setitem(client):
    cp = fakecupy.FakeCupy()
    a = np.random.default_rng(5).standard_normal(400)
    A, B = _on_gpu(cp, a.copy(), (100,)), _on_gpu(cp, a.copy(), (100,))
    got = DIFFUSION(A, B, 6)
    keys = [str(k[0] if isinstance(k, tuple) else k) for k in dict(got.__dask_graph__())]
    assert not any("setitem" in k for k in keys)
    assert got.chunks == ((100,) * 4,)
    want_a, want_b = a.copy(), a.copy()
    diffusion(want_a, want_b, 6)
    _check(got, want_a, "float64")
    np.testing.assert_allclose(np.asarray(B.compute()), want_b, rtol=1e-12)


def test_explain_says_cuda_per_block():
    cp = fakecupy.FakeCupy()
    x = _on_gpu(cp, np.ones((64, 8)), (16, -1))
    text = str(ppto.explain(COMPILED["softmax"], x))
    assert "CuPy" in text


def scalar_minus_sizes(x0):
    """Fuzzer seed 60000157 (dask-cuda): a Python-number astype the CUDA target's whole
    program calls through its table of host ops, which the task's module must be given."""
    v1 = np.squeeze(x0)
    v1 -= np.float64(1.5) + (len(x0) + x0.shape[0])
    return v1


def sorted_then_scaled(x):
    return np.sort(x, axis=1) * 2.0 + np.linalg.norm(x)


@pytest.mark.parametrize("fn", [scalar_minus_sizes, sorted_then_scaled])
def test_host_ops_of_the_cuda_whole_program_reach_the_workers(client, fn):
    cp = fakecupy.FakeCupy(order="reverse")
    shape = (1,) if fn is scalar_minus_sizes else (12, 5)
    a = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    got = ppto.compile(fn)(_on_gpu(cp, a, (4, 5)))
    _check(got, fn(a.copy()), np.float32)
