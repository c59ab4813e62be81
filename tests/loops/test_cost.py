"""passes/cost.py: where the original statements cost less, the compiled function runs them."""

import numpy as np
import pytest

import pypto as ppto
from pypto.emit import runtime
from pypto.passes.cost import original_cheaper
from pypto.passes.pipeline import plan_function

from . import cost_cases


@pytest.fixture
def cheaper(monkeypatch):
    """The runtime's switch on (the test session runs with PYPTO_ORIGINAL=never)."""
    monkeypatch.setitem(runtime.namespace("numpy_helpers"), "_ORIGINAL", [True])


def _guards(fn, *args):
    ir = ppto.compile(fn, cache=False).ir(*args)
    return ir, original_cheaper(ir, plan_function(ir))


def test_small_time_loop_prefers_the_original():
    rng = np.random.default_rng(0)
    small = (rng.random(100), rng.random(100), 50)
    _, guards = _guards(cost_cases.jacobi, *small)
    env = {"A.0": 100, "B.0": 100, "T": 50}
    assert guards and all(g.holds(env) for g in guards)
    big = {"A.0": 10**6, "B.0": 10**6, "T": 50}  # large kernels: the fused Plan
    assert not all(g.holds(big) for g in guards)


def test_a_large_kernel_run_once_does_not_outweigh_a_loop_of_small_ones():
    """What fusion saves counts by elements beyond the cache: a recurrence of 300 column
    steps pays more per trip than fusing one 120,000-element sum saves; a taller matrix does
    not (the per-trip calls stay, the savings grow)."""
    rng = np.random.default_rng(4)
    _, guards = _guards(cost_cases.columns, rng.random((40, 30)), rng.random((40, 30)))
    assert guards
    assert all(g.holds({"x.0": 400, "x.1": 300, "y.0": 400, "y.1": 300}) for g in guards)
    tall = {"x.0": 10**6, "x.1": 300, "y.0": 10**6, "y.1": 300}
    assert not all(g.holds(tall) for g in guards)


def test_vectorized_loops_keep_the_plan():
    rng = np.random.default_rng(1)
    for fn, args in [
        (cost_cases.scale, (rng.random(500), 400)),
        (cost_cases.dot_loop, (rng.random(300), rng.random(300))),
        (cost_cases.rows, (rng.random((30, 20)), rng.random((30, 40)), rng.random((40, 20)))),
    ]:
        ir, guards = _guards(fn, *args)
        loops = [s for s in ir.body if hasattr(s, "vector")]
        assert loops and loops[0].vector is not None, fn.__name__
        env = {}
        compiled = ppto.compile(fn, cache=False)
        from pypto.compile import _specialize

        _, env, _ = _specialize(compiled._bind(list(args), {}))
        assert not (guards and all(g.holds(env) for g in guards)), fn.__name__


def test_straight_line_code_never_runs_the_original():
    _, guards = _guards(cost_cases.softmax, np.random.default_rng(2).random(8))
    assert guards == ()


def test_the_original_runs_and_matches(cheaper):
    rng = np.random.default_rng(3)
    A, B = rng.random(64), rng.random(64)
    ref = cost_cases.jacobi(A.copy(), B.copy(), 20)
    compiled = ppto.compile(cost_cases.jacobi, cache=False)
    a, b = A.copy(), B.copy()
    got = compiled(a, b, 20)
    assert got[0] is a and got[1] is b  # written in place and returned, as NumPy does
    np.testing.assert_array_equal(a, ref[0])
    np.testing.assert_array_equal(b, ref[1])
    source = compiled._runners[next(iter(compiled._runners))].source
    assert "_original(A, B, T)" in source


def test_explain_says_which_runs():
    rng = np.random.default_rng(4)
    text = str(ppto.explain(cost_cases.jacobi, rng.random(100), rng.random(100), 30))
    assert "the original statements run instead where they cost less" in text
    assert "for these arguments: the original" in text
    assert "host loop: `A` is written at" in text


def test_transpiled_module_calls_the_original(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    src = Path(cost_cases.__file__)
    out = tmp_path / "out"
    cmd = [str(Path(sys.executable).parent / "pypto"), "transpile", str(src), "-o", str(out)]
    cmd += ["--target", "numpy", "-s", "jacobi(f64[n], f64[n], int=8)"]
    subprocess.run(cmd, check=True, capture_output=True)
    text = (out / "cost_cases.py").read_text()
    assert "_jacobi_0_original = _jacobi_python" in text
    check = (
        "import numpy as np, cost_cases as m\n"
        "a = np.linspace(0, 1, 50); b = a.copy()\n"
        "r = m._jacobi_python(a.copy(), b.copy(), 7)\n"
        "g = m.jacobi(a, b, 7)\n"
        "assert np.array_equal(g[0], r[0]) and np.array_equal(g[1], r[1])\n"
    )
    env = {"PYTHONPATH": str(out), "PATH": "/usr/bin:/bin", "PYPTO_ORIGINAL": "cheaper"}
    subprocess.run([sys.executable, "-c", check], check=True, cwd=out, env=env)


def test_the_original_takes_positional_only_and_keyword_only_parameters(cheaper):
    compiled = ppto.compile(cost_cases.positional_only, cache=False)
    for n in (8, 200):
        x = np.arange(float(n))
        want = cost_cases.positional_only(x.copy(), n // 2, scale=3.0)
        np.testing.assert_array_equal(compiled(x, n // 2, scale=3.0), want)
