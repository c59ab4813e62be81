"""The loop pass (pypto/passes/loops.py) against plain NumPy, on random and fixed loop nests.

Each function runs uncompiled (the oracle) on copies of its inputs and through
``ppto.compile`` on other copies; every returned value and every argument array afterwards must
match: kind (tuple, array, NumPy scalar, Python float), dtype, shape, values (float32 rtol 1e-5,
float64 1e-11; accumulations are summed in another order, so an absolute tolerance of a few
rtol times the largest magnitude of the reference, at least 1). The decisions known by
construction are checked on ``compiled.ir(*args)``: an independent element loop is one block
(``Loop.vector``), a carried flow dependence or scalar state keeps a host loop, an accumulation
loop is a reduction. The CUDA-target cases run a few vectorized nests on the CPU emulator
(tests/cuda_emu: the CuPy stand-in, NVRTC), skipped where tests/cuda_emu's tests skip.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto as ppto
from pypto.function import Branch, Loop

from .nests import DrawChooser, Nest, SeedChooser, generate

_DIR = Path(tempfile.mkdtemp(prefix="pypto-loop-nests-"))
RTOL = {"float32": 1e-5, "float64": 1e-11}


# -- loading and comparing -------------------------------------------------------------------
def load(source: str):
    """``f`` of ``source``, from a real module file (PyPTO reads the source with inspect)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"pypto_loop_nest_{digest}"
    if name in sys.modules:
        return sys.modules[name].f
    path = _DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def _scale(x) -> float:
    if isinstance(x, tuple):
        return max((_scale(v) for v in x), default=0.0)
    if x is None:
        return 0.0
    a = np.abs(np.asarray(x, dtype=np.float64))
    return float(a.max()) if a.size else 0.0


def assert_same(got, want, rtol, atol, what):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: {type(got)} vs {len(want)}-tuple"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, atol, f"{what}[{k}]")
        return
    assert type(got) is type(want), f"{what}: {type(got).__name__} where NumPy gives {type(want).__name__}"
    if want is None:
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} where NumPy gives {w.dtype}"
    assert g.shape == w.shape, f"{what}: shape {g.shape} where NumPy gives {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)


def loops_by_var(steps, found=None) -> dict:
    found = {} if found is None else found
    for s in steps:
        if isinstance(s, Loop):
            found.setdefault(s.var, []).append(s)
            loops_by_var(s.body, found)
        elif isinstance(s, Branch):
            loops_by_var(s.then, found)
            loops_by_var(s.orelse, found)
    return found


def check_decisions(fn_ir, expect: dict, strict_legal: bool = False) -> list[str]:
    """Assert the decisions known by construction; return the conservative ones ("legal"
    loops that stayed host loops) instead of failing on them unless ``strict_legal``."""
    found = loops_by_var(fn_ir.body)
    conservative = []
    for var, kind in expect.items():
        assert var in found, f"no loop over {var} in the IR ({sorted(found)})"
        for loop in found[var]:
            d = loop.decision
            if kind == "vector":
                assert loop.vector is not None, f"{var}: an independent loop stayed a host loop: {d}"
                assert "independent" in d or "accumulation" in d, (var, d)
            elif kind == "host":
                assert loop.vector is None, f"{var}: a carried dependence was vectorized: {d}"
                assert d.startswith("host loop:"), (var, d)
            elif kind == "accum":
                assert "accumulation" in d, f"{var}: an accumulation loop was not a reduction: {d}"
                assert loop.vector is not None, (var, d)
            elif kind == "legal":
                if loop.vector is None:
                    conservative.append(f"{var}: {d}")
    if strict_legal:
        assert not conservative, conservative
    return conservative


def run_and_compare(nest: Nest, strict_legal: bool = False):
    fn = load(nest.source)
    args = nest.arguments()
    mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
    with np.errstate(all="ignore"):
        want = fn(*mine)
    compiled = ppto.compile(fn)
    with np.errstate(all="ignore"):
        got = compiled(*theirs)
    rtol = RTOL[nest.dtype]
    atol = 4 * rtol * max(1.0, _scale(want), _scale(tuple(mine)))
    assert_same(got, want, rtol, atol, "result")
    for (name, _), g, w in zip(nest.arrays, theirs, mine):
        assert_same(g, w, rtol, atol, f"argument {name} afterwards")
    return check_decisions(compiled.ir(*copy.deepcopy(args)), nest.expect, strict_legal)


# -- the random nests ------------------------------------------------------------------------
@st.composite
def nests(draw):
    return generate(DrawChooser(draw))


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(nests())
def test_random_loop_nests_match_numpy(nest):
    try:
        run_and_compare(nest)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{nest.describe()}") from None


@pytest.mark.parametrize("seed", range(40))
def test_seeded_loop_nests_match_numpy(seed):
    """The same generator from fixed seeds (``generate(SeedChooser(seed))`` rebuilds one)."""
    nest = generate(SeedChooser(seed))
    try:
        run_and_compare(nest)
    except AssertionError as e:
        raise AssertionError(f"seed {seed}: {e}\n\n{nest.describe()}") from None
