"""The PolyBench-style kernels of benchmarks/loop_kernels.py at tiny sizes: compiled, they
match NumPy on the NumPy target and on the CUDA stand-in (where their recurrences run inside
one kernel, their independent loops as kernel axes)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto

from .test_loop_nests import _host, gxx, nvrtc_ok, tools  # noqa: F401  (the emulator's fixtures)

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks.loop_kernels import KERNELS  # noqa: E402


def _compare(got, want, what):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, what
        scale = float(np.max(np.abs(w))) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9 * max(scale, 1.0), err_msg=what)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_bench_kernels_match_numpy(name):
    fn, make = KERNELS[name]
    args = make("tiny", np.random.default_rng(11))
    _compare(ppto.compile(fn)(*copy.deepcopy(args)), fn(*copy.deepcopy(args)), name)


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_bench_kernels_on_the_cuda_target(name):
    from cupy_backend import make_cupy

    fn, make = KERNELS[name]
    args = make("tiny", np.random.default_rng(12))
    cp = make_cupy(order="random", seed=3)
    device = [cp.device(a) if isinstance(a, np.ndarray) else a for a in copy.deepcopy(args)]
    _compare(_host(ppto.compile(fn)(*device)), fn(*copy.deepcopy(args)), name)
