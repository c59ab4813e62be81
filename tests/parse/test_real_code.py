"""examples/real_code/programs.py: programs in the style of real NumPy code, each compiled
unchanged, against NumPy (float32 and float64 where the program takes floats): values,
dtypes, result types; ``explain`` names each graph break with its line."""

import zlib

import numpy as np
import pytest
from helpers import (
    REAL_CODE,
    assert_same,
    assert_same_result,
    csr_of,
    cuda_emulator,
    float_tol,
    real_code,
    spd,
)

import pypto as ppto

PATH = REAL_CODE
programs = real_code()

# the calls each program runs as graph breaks (ops/host_calls.py), as its source writes them
# (np.linalg.norm, np.argmax / np.argmin and np.cov are native ops now)
BREAKS = {
    "jacobi": set(),
    "power_iteration": set(),
    "mandelbrot": set(),
    "equalize": {"np.histogram", "np.interp"},
    "csr_matvec": set(),  # (its gather is native: ops/gathers.py)
    "dft": set(),
    "spectrum_peak": {"np.fft.rfft"},
    "nbody_accelerations": set(),
    "crc32": set(),
    "cholesky_solve": {"np.linalg.cholesky", "np.linalg.solve"},
    "whiten": {"np.linalg.eigh"},
    "kmeans_step": set(),
    "cross_entropy": set(),
    "sinkhorn": set(),
    "logistic_fit": set(),
    "smooth": {"np.convolve"},
    "rank_gauss": {"np.argsort"},
    "winsorize": {"np.percentile"},
    "top3_softmax": {"np.sort"},
    "bisect_root": set(),
    "safe_log_ratio": set(),
    "logdet_ratio": {"np.linalg.slogdet"},
    "csr_matvec_slices": {"x[a:b] (run-time bounds)"},
    "weighted_histogram": {"np.add.at"},
    "nearest_centroid": {"x[mask]"},
}


def _csr(rng, dtype):
    dense = (rng.standard_normal((7, 6)) * (rng.uniform(size=(7, 6)) > 0.5)).astype(dtype)
    dense[3] = 0
    return (*csr_of(dense), rng.standard_normal(6))


def inputs(name, dtype, rng):
    def a(*shape):
        return rng.standard_normal(shape).astype(dtype)

    n = 6
    K = rng.uniform(0.5, 1.5, (5, 4)).astype(dtype)
    re, im = np.meshgrid(np.linspace(-2, 1, 11), np.linspace(-1.2, 1.2, 9))
    X = a(20, 3)
    return {
        "jacobi": lambda: (spd(n, dtype, rng), a(n), 1e-5),
        "power_iteration": lambda: (spd(n, dtype, rng), 1e-5),
        "mandelbrot": lambda: ((re + 1j * im).astype(np.complex128), 30),
        "equalize": lambda: (rng.uniform(size=(8, 9)).astype(dtype),),
        "csr_matvec": lambda: tuple(
            v.astype(dtype) if v.dtype.kind == "f" else v for v in _csr(rng, dtype)
        ),
        "dft": lambda: (a(8),),
        "spectrum_peak": lambda: (np.sin(np.arange(64) * 0.7).astype(dtype) + a(64) * 0.1, 0.01),
        "nbody_accelerations": lambda: (a(7, 3), rng.uniform(1, 2, 7).astype(dtype), 0.3),
        "crc32": lambda: (rng.integers(0, 256, 24).astype(np.uint8),),
        "cholesky_solve": lambda: (a(n, n), a(n)),
        "whiten": lambda: (X,),
        "kmeans_step": lambda: (X, X[:3].copy()),
        "cross_entropy": lambda: (a(9, 4), rng.integers(0, 4, 9)),
        "sinkhorn": lambda: (K, np.full(5, 0.2, dtype), np.full(4, 0.25, dtype), 1e-4),
        "logistic_fit": lambda: (X, (X[:, 0] > 0).astype(dtype), 0.5, 200),
        "smooth": lambda: (a(30), 5),
        "rank_gauss": lambda: (a(10, 3),),
        "winsorize": lambda: (a(50),),
        "top3_softmax": lambda: (a(4, 7),),
        "bisect_root": lambda: (float(rng.uniform(1, 20)), 0.0, 30.0),
        "safe_log_ratio": lambda: (
            rng.uniform(0.5, 2, 5).astype(dtype),
            rng.uniform(-0.1, 2, 5).astype(dtype),
        ),
        "logdet_ratio": lambda: (a(n, n), a(n, n)),
        "csr_matvec_slices": lambda: tuple(
            v.astype(dtype) if v.dtype.kind == "f" else v for v in _csr(rng, dtype)
        ),
        "weighted_histogram": lambda: (a(40), rng.uniform(size=40).astype(dtype), 6),
        "nearest_centroid": lambda: (X, X[:3].copy()),
    }[name]()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BREAKS))
def test_each_program_matches_numpy(name, dtype):
    fn = getattr(programs, name)
    compiled = ppto.compile(fn)
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # (the same inputs every run)
    for _ in range(2):
        args = inputs(name, dtype, rng)
        with np.errstate(all="ignore"):
            want = fn(*_copies(args))
            mine = _copies(args)
            got = compiled(*mine)
        _same(got, want)


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_explain_names_each_break(name):
    fn = getattr(programs, name)
    args = inputs(name, "float64", np.random.default_rng(0))
    with np.errstate(all="ignore"):
        text = str(ppto.explain(fn, *args))
    lines = PATH.read_text().splitlines()
    found = set()
    for line in text.splitlines():
        if line.startswith("graph break at"):
            where = line.split()[3]
            called = line.split("`")[1]
            found.add(called)
            source = lines[int(where.split(":")[1]) - 1]
            indexing = called.startswith("x[")  # (an index: its brackets)
            shown = "[" if indexing else called.split(" ")[0]
            assert shown in source, (line, source)
    assert found == BREAKS[name]


def test_the_corpus_is_at_least_twenty_programs():
    assert len(BREAKS) >= 20
    assert sorted(BREAKS) == sorted(
        n
        for n in dir(programs)
        if not n.startswith("_") and callable(getattr(programs, n)) and n != "np"
    )


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _same(got, want):
    assert_same_result(got, want, float_tol(2e-3, 1e-9))


_emu = cuda_emulator("real_code_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools
COMPLEX = {"dft", "mandelbrot", "spectrum_peak"}  # the CUDA target has no complex kernels


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("name", sorted(BREAKS))
def test_each_program_on_the_cuda_target(name):
    from cupy_backend import make_cupy, to_host

    fn = getattr(programs, name)
    args = inputs(name, "float64", np.random.default_rng(1))
    cp = make_cupy(order="random", seed=1)
    dev = [cp.device(a) if isinstance(a, np.ndarray) else a for a in args]
    if name in COMPLEX:
        with pytest.raises(ppto.UnsupportedError, match="no kernels for complex128"):
            ppto.compile(fn)(*dev)
        return
    with np.errstate(all="ignore"):
        got, want = ppto.compile(fn)(*dev), fn(*_copies(args))
    got = tuple(to_host(g) for g in got) if isinstance(want, tuple) else to_host(got)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert_same(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-9)
