"""``while`` loops on conditions computed from array values (a ``While`` step: the test
computed before each iteration and read on the host), against NumPy on the NumPy target, in
pypto transpile's module and on the CUDA target (emulator)."""

import numpy as np
import pytest
from helpers import assert_same, assert_same_result, cuda_emulator, float_tol, real_code, spd

import pypto as ppto

jacobi = real_code().jacobi  # Jacobi iterations to a tolerance (examples/real_code)


def newton_sqrt(a):
    x = a.copy()
    while np.max(np.abs(x * x - a)) > 1e-6 * np.max(a):
        x = 0.5 * (x + a / x)
    return x


def halve_until_small(x, limit):
    s = x.sum()
    while s > limit:
        x = x * 0.5
        s = x.sum()
    return x, s


def power_iteration(A, tol):
    """The dominant eigenvector, normalized, until the change is below tol."""
    v = np.ones(A.shape[0], dtype=A.dtype)
    v = v / np.linalg.norm(v)
    delta = 1.0
    while delta > tol:
        w = A @ v
        w = w / np.sqrt(np.sum(w * w))
        delta = np.abs(w - v).max()
        v = w
    return v


def _cases(dtype, rng):
    n = 6
    A = spd(n, dtype, rng)
    b = rng.standard_normal(n).astype(dtype)
    return [
        (jacobi, (A, b, 1e-5)),
        (newton_sqrt, (rng.uniform(1, 4, 5).astype(dtype),)),
        (halve_until_small, (rng.uniform(size=7).astype(dtype), 0.3)),
        (halve_until_small, (rng.uniform(size=7).astype(dtype), 100.0)),  # zero iterations
        (power_iteration, (A, 1e-4)),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_while_loops_match_numpy(dtype):
    rng = np.random.default_rng(1)
    for fn, args in _cases(dtype, rng):
        want = fn(*args)
        got = ppto.compile(fn)(*args)
        _same(got, want)


def test_explain_says_the_test_is_read_on_the_host():
    x = np.ones(5)
    text = str(ppto.explain(halve_until_small, x, 0.3))
    assert "while True:" in text and "read on the host" in text


def test_while_conditions_that_cannot_compile_are_refused():
    def forever(x):
        while True:
            x = x + 1
        return x

    def of_an_array(x):
        while x > 0:
            x = x - 1
        return x

    for fn in (forever, of_an_array):
        with pytest.raises(ppto.UnsupportedError) as info:
            ppto.compile(fn)(np.ones(3))
        assert info.value.code == "PPT106"


def test_transpiled_while_runs_without_pypto(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    src = tmp_path / "loops_src.py"
    src.write_text(
        "import numpy as np\n\n\n"
        "def halve_until_small(x, limit):\n"
        "    s = x.sum()\n"
        "    while s > limit:\n"
        "        x = x * 0.5\n"
        "        s = x.sum()\n"
        "    return x, s\n"
    )
    out = tmp_path / "out"
    pypto = Path(sys.executable).parent / "pypto"
    sig = "halve_until_small(f64[n], float)"
    cmd = [pypto, "transpile", "--target", "all", str(src), "--signature", sig, "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    code = (
        f"import sys; sys.path.insert(0, {str(out)!r})\n"
        "import numpy as np, loops_src as m\n"
        "x, s = m.halve_until_small(np.linspace(0.1, 1.0, 9), 0.3)\n"
        "assert 'pypto' not in sys.modules\n"
        "print(repr(float(s)))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert float(run.stdout) == float(halve_until_small(np.linspace(0.1, 1.0, 9), 0.3)[1])


_emu = cuda_emulator("while_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_while_loops_on_the_cuda_target(dtype):
    from cupy_backend import make_cupy, to_host

    rng = np.random.default_rng(2)
    cp = make_cupy(order="random", seed=3)
    for fn, args in _cases(dtype, rng):
        dev = [cp.device(a) if isinstance(a, np.ndarray) else a for a in args]
        got = ppto.compile(fn)(*dev)
        want = fn(*args)
        if isinstance(want, tuple):
            got = tuple(to_host(g) for g in got)
        else:
            got = to_host(got)
        tol = 1e-5 if dtype == "float32" else 1e-12
        for g, w in zip(
            got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)
        ):
            assert_same(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
    assert cp.launches


def _same(got, want):
    assert_same_result(got, want, float_tol(1e-5, 1e-12))
