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
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers import checked_cupy, cuda_emulator
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


def assert_same(got, want, rtol, atol, what, cuda=False):
    """``cuda``: a NumPy scalar comes back from the CUDA target as a 0-d array (as from CuPy;
    tests/fuzz/oracle.py's compare_value allows the same)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (
            f"{what}: {type(got)} vs {len(want)}-tuple"
        )
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, atol, f"{what}[{k}]", cuda)
        return
    on_device = (
        cuda and isinstance(want, np.generic) and isinstance(got, np.ndarray) and got.ndim == 0
    )
    if not on_device:
        assert type(got) is type(want), (
            f"{what}: {type(got).__name__} where NumPy gives {type(want).__name__}"
        )
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
            found.setdefault(re.sub(r"_\d+$", "", s.var), []).append(s)  # j0_1: a renamed j0
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
                assert loop.vector is not None, (
                    f"{var}: an independent loop stayed a host loop: {d}"
                )
                assert "independent" in d or "accumulation" in d, (var, d)
            elif kind == "host":
                assert loop.vector is None, f"{var}: a carried dependence was vectorized: {d}"
                assert d.startswith("host loop:"), (var, d)
            elif kind == "accum":
                assert "accumulation" in d, f"{var}: an accumulation loop was not a reduction: {d}"
                assert loop.vector is not None, (var, d)
            elif kind == "legal" and loop.vector is None:
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
    max_examples=100,
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


# -- fixed regression cases, one group per shape ---------------------------------------------
LOOP_VAR_2D = """
def f(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * (i - j)
    return out
"""
SYRK = """
def f(C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= 1.5
        for k in range(A.shape[1]):
            C[i, :i + 1] += 0.5 * A[i, k] * A[:i + 1, k]
    return C
"""


def _case(id_, source, arrays, expect, dtype="float64", marks=()):
    src = "import numpy as np\n\n\n" + source.strip("\n") + "\n"
    return pytest.param(Nest(src, list(arrays), dtype, 7, dict(expect)), id=id_, marks=marks)


CASES = [
    # independent element loops
    _case(
        "elem1d",
        """
def f(a, c):
    b = np.zeros_like(a)
    for i in range(a.shape[0]):
        b[i] = a[i] * 2.0 + c[i]
    return b
""",
        [("a", (9,)), ("c", (9,))],
        {"i": "vector"},
        "float32",
    ),
    _case(
        "elem1d-neighbour",
        """
def f(a):
    b = np.zeros_like(a)
    for i in range(a.shape[0] - 1):
        b[i] = np.tanh(a[i] - a[i + 1])
    return b
""",
        [("a", (7,))],
        {"i": "vector"},
    ),
    _case(
        "elem2d",
        """
def f(a):
    b = np.zeros_like(a)
    for i in range(a.shape[0]):
        for j in range(a.shape[1] - 1):
            b[i, j] = a[i, j] * 0.5 + a[i, j + 1]
    return b
""",
        [("a", (5, 8))],
        {"i": "vector", "j": "vector"},
        "float32",
    ),
    _case(
        "elem2d-rows-inside",
        """
def f(a):
    b = np.zeros_like(a)
    for j in range(a.shape[1] - 1):
        for i in range(a.shape[0]):
            b[i, j] = np.maximum(a[i, j], a[i, j + 1])
    return b
""",
        [("a", (6, 4))],
        {"i": "vector", "j": "vector"},
    ),
    # reversed ranges, ranges with a start and a step
    _case(
        "reversed",
        """
def f(a):
    n = a.shape[0]
    b = np.zeros_like(a)
    for i in range(n - 1, -1, -1):
        b[i] = a[i] - a[n - 1 - i] * 1.5
    return b
""",
        [("a", (8,))],
        {"i": "vector"},
        "float32",
    ),
    _case(
        "stepped-1-2",
        """
def f(a):
    b = np.zeros_like(a)
    for i in range(1, a.shape[0], 2):
        b[i] = a[i] * a[i - 1]
    return b
""",
        [("a", (9,))],
        {"i": "vector"},
    ),
    _case(
        "stepped-2-3",
        """
def f(a):
    b = np.zeros_like(a)
    for i in range(2, a.shape[0], 3):
        b[i] = np.sin(a[i]) + a[i - 1]
    return b
""",
        [("a", (11,))],
        {"i": "vector"},
        "float32",
    ),
    # flow dependences: host loops
    _case(
        "flow-distance-1",
        """
def f(x, a):
    for i in range(1, x.shape[0]):
        x[i] = x[i - 1] * 0.9 + a[i]
""",
        [("x", (10,)), ("a", (10,))],
        {"i": "host"},
        "float32",
    ),
    _case(
        "flow-distance-2",
        """
def f(x, a):
    for i in range(2, x.shape[0]):
        x[i] = x[i - 2] * 0.5 + a[i]
    return x
""",
        [("x", (9,)), ("a", (9,))],
        {"i": "host"},
    ),
    _case(
        "flow-reversed",
        """
def f(x, a):
    for i in range(x.shape[0] - 2, -1, -1):
        x[i] = x[i + 1] * -0.6 + a[i]
""",
        [("x", (8,)), ("a", (8,))],
        {"i": "host"},
    ),
    # anti-dependences: legal to vectorize (reads only values no earlier iteration wrote)
    _case(
        "anti",
        """
def f(x, a):
    for i in range(x.shape[0] - 1):
        x[i] = x[i + 1] * 0.5 + a[i]
""",
        [("x", (9,)), ("a", (9,))],
        {"i": "vector"},
        "float32",
    ),
    _case(
        "anti-2d",
        """
def f(x):
    for i in range(x.shape[0]):
        for j in range(x.shape[1] - 1):
            x[i, j] = x[i, j + 1] - x[i, j] * 0.25
""",
        [("x", (4, 6))],
        {"i": "vector", "j": "vector"},
    ),
    # accumulations: reductions
    _case(
        "acc-scalar-dot",
        """
def f(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s
""",
        [("a", (12,)), ("b", (12,))],
        {"i": "accum"},
        "float32",
    ),
    _case(
        "acc-scalar-minus",
        """
def f(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s -= np.sin(a[i]) + b[i]
    return s
""",
        [("a", (7,)), ("b", (7,))],
        {"i": "accum"},
    ),
    _case(
        "acc-scalar-s-plus-paren",
        """
def f(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + (a[i] * 2.0 + b[i])
    return s
""",
        [("a", (6,)), ("b", (6,))],
        {"i": "accum"},
    ),
    # `s = s + x + y` is `(s + x) + y`: a chain of adds with s once, an accumulation too
    _case(
        "acc-scalar-s-plus-unparenthesized",
        """
def f(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s = s + a[i] * 2.0 + b[i]
    return s
""",
        [("a", (6,)), ("b", (6,))],
        {"i": "accum"},
        "float32",
    ),
    _case(
        "acc-row",
        """
def f(a, b):
    c = np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
    for i in range(a.shape[0]):
        for k in range(a.shape[1]):
            c[i, :] += a[i, k] * b[k, :]
    return c
""",
        [("a", (5, 7)), ("b", (7, 4))],
        {"i": "vector", "k": "accum"},
        "float32",
    ),
    _case(
        "acc-row-k-outside",
        """
def f(a, b, c):
    for k in range(a.shape[1]):
        for i in range(a.shape[0]):
            c[i, :] += a[i, k] * b[k, :]
""",
        [("a", (3, 6)), ("b", (6, 5)), ("c", (3, 5))],
        {"i": "vector", "k": "accum"},
    ),
    # triangular loops (the outer loop is ragged: its decision is not asserted)
    _case(
        "triangular-lower",
        """
def f(a):
    b = np.zeros_like(a)
    for i in range(a.shape[0]):
        for j in range(i):
            b[i, j] = a[i, j] * 2.0 + a[j, i]
    return b
""",
        [("a", (6, 6))],
        {"j": "vector"},
    ),
    _case(
        "triangular-slice",
        """
def f(a):
    c = np.zeros_like(a)
    for i in range(a.shape[0]):
        c[i, :i + 1] = a[i, :i + 1] * 1.5
    return c
""",
        [("a", (5, 5))],
        {},
        "float32",
    ),
    _case(
        "triangular-sum",
        """
def f(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(i + 1):
            s += a[i, j]
    return s
""",
        [("a", (7, 7))],
        {"j": "accum"},
    ),
    # a time loop around independent loops
    _case(
        "time-loop",
        """
def f(x, a):
    for t in range(3):
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.9 + a[i]
    return x
""",
        [("x", (8,)), ("a", (8,))],
        {"t": "host", "i": "vector"},
        "float32",
    ),
    _case(
        "time-loop-stencil",
        """
def f(x, a):
    y = np.zeros_like(x)
    for t in range(4):
        for i in range(1, x.shape[0] - 1):
            y[i] = (x[i - 1] + x[i] + x[i + 1]) * 0.3 + a[i]
        for q in range(1, x.shape[0] - 1):
            x[q] = y[q]
    return y
""",
        [("x", (10,)), ("a", (10,))],
        {"t": "host", "i": "vector", "q": "vector"},
    ),
    # scalar state carried between iterations: a host loop
    _case(
        "scalar-state",
        """
def f(a):
    t = 0.0
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        t = t * 0.5 + a[i]
        out[i] = t
    return out, t
""",
        [("a", (9,))],
        {"i": "host"},
        "float32",
    ),
    _case(
        "scalar-state-f64",
        """
def f(a):
    t = 0.0
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        t = t * -0.6 + a[i]
        out[i] = t
    return out, t
""",
        [("a", (5,))],
        {"i": "host"},
    ),
    # the loop variable as a value
    _case(
        "loop-var-times",
        """
def f(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * i
    return out
""",
        [("a", (8,))],
        {"i": "vector"},
        "float32",
    ),
    _case(
        "loop-var-plus-int",
        """
def f(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] - (i + 1)
    return out
""",
        [("a", (6,))],
        {"i": "vector"},
    ),
    # the loop variable times a float (a SymFloat literal: once a crash of the pass)
    _case(
        "loop-var-times-float",
        """
def f(a):
    out = np.zeros_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] + i * 0.5
    return out
""",
        [("a", (7,))],
        {"i": "vector"},
        "float32",
    ),
    _case(
        "loop-var-2d-inner",
        LOOP_VAR_2D,
        [("a", (4, 5))],
        {"j": "vector"},
    ),
    # the outer loop of `out[i, j] = a[i, j] * (i - j)`: the inner loop's arange moves with i
    _case(
        "loop-var-2d-outer",
        LOOP_VAR_2D,
        [("a", (4, 5))],
        {"i": "vector", "j": "vector"},
    ),
    # several statements per body: a write read back at the same index
    _case(
        "multi-stmt",
        """
def f(a, c):
    b = np.zeros_like(a)
    d = np.zeros_like(a)
    for i in range(a.shape[0]):
        b[i] = a[i] * c[i]
        d[i] = b[i] * 2.0 + a[i]
    return b, d
""",
        [("a", (8,)), ("c", (8,))],
        {"i": "vector"},
        "float32",
    ),
    _case(
        "multi-stmt-temporary",
        """
def f(a, c):
    b = np.zeros_like(a)
    d = np.zeros_like(a)
    for i in range(a.shape[0]):
        u = a[i] * 0.25
        b[i] = u * u + c[i]
        d[i] = np.tanh(b[i] - u)
    return b, d
""",
        [("a", (6,)), ("c", (6,))],
        {"i": "vector"},
    ),
]


@pytest.mark.parametrize("nest", CASES)
def test_fixed_loop_nests_match_numpy_and_decide_as_built(nest):
    try:
        run_and_compare(nest, strict_legal=True)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{nest.describe()}") from None


def test_every_shape_of_the_generator_is_drawn():
    from .nests import SHAPES

    drawn = {s for seed in range(60) for s in generate(SeedChooser(seed)).shapes}
    assert drawn == set(SHAPES)


# -- the CUDA target on the CPU emulator -----------------------------------------------------
_emu = cuda_emulator("loops_cuda_emu_conftest")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools

CUDA_CASES = [c for c in CASES if c.id in ("elem2d", "acc-scalar-dot", "acc-row", "time-loop")]


def _host(x):
    from cupy_backend import to_host

    if isinstance(x, tuple):
        return tuple(_host(v) for v in x)
    x = to_host(x)
    return x.view(np.ndarray) if isinstance(x, np.ndarray) and type(x) is not np.ndarray else x


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("order", ["reverse", "random"])
@pytest.mark.parametrize("nest", CUDA_CASES)
def test_vectorized_nests_on_the_cuda_target(nest, order):
    """The compiled function given GPU arrays (the emulator's CuPy stand-in, NVRTC checking
    each kernel, as tests/fuzz/oracle.py's CUDA path does): its blocks run as CUDA kernels."""
    fn = load(nest.source)
    args = nest.arguments()
    mine = copy.deepcopy(args)
    with np.errstate(all="ignore"):
        want = fn(*mine)
    cp = checked_cupy(_emu, order=order, seed=3)
    theirs = [cp.device(a) for a in copy.deepcopy(args)]
    compiled = ppto.compile(fn)
    with np.errstate(all="ignore"):
        got = _host(compiled(*theirs))
    assert cp.launches, "no kernel ran on the CUDA target"
    rtol = RTOL[nest.dtype] * (10 if nest.dtype == "float64" else 1)
    atol = 4 * rtol * max(1.0, _scale(want), _scale(tuple(mine)))
    assert_same(got, want, rtol, atol, "result", cuda=True)
    for (name, _), g, w in zip(nest.arrays, theirs, mine):
        assert_same(_host(g), w, rtol, atol, f"argument {name} afterwards", cuda=True)
    check_decisions(compiled.ir(*copy.deepcopy(args)), nest.expect, strict_legal=True)


# -- triangular loops, products and contractions over a new axis; where the vector form must
# not run; launches on the CUDA stand-in
RAGGED = [
    _case(
        "syrk",
        SYRK,
        [("C", (9, 9)), ("A", (9, 6))],
        {"i": "vector", "k": "accum"},
    ),
    _case(
        "syrk-f32",
        SYRK,
        [("C", (7, 7)), ("A", (7, 11))],
        {"i": "vector", "k": "accum"},
        "float32",
    ),
    _case(
        "syr2k",
        """
def f(C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= 0.8
        for k in range(A.shape[1]):
            C[i, :i + 1] += A[:i + 1, k] * 1.2 * B[i, k] + B[:i + 1, k] * 1.2 * A[i, k]
    return C
""",
        [("C", (8, 8)), ("A", (8, 5)), ("B", (8, 5))],
        {"i": "vector", "k": "accum"},
    ),
    _case(
        "gemm-rows",
        """
def f(C, A, B):
    for i in range(A.shape[0]):
        C[i, :] *= 0.5
        for k in range(A.shape[1]):
            C[i, :] += 1.5 * A[i, k] * B[k, :]
    return C
""",
        [("C", (6, 7)), ("A", (6, 5)), ("B", (5, 7))],
        {"i": "vector", "k": "accum"},
    ),
    _case(
        "lower-fill",
        """
def f(L, a):
    for i in range(L.shape[0]):
        L[i, :i] = 0.0
        L[i, i + 1:] *= a[i]
    return L
""",
        [("L", (8, 8)), ("a", (8,))],
        {"i": "host"},  # a slice whose start moves with i: not a rectangle, not yet
    ),
    _case(
        "lower-zero",
        """
def f(L, a):
    for i in range(L.shape[0]):
        L[i, :i] = 0.0
        a[i] = a[i] * 2.0
    return L, a
""",
        [("L", (8, 8)), ("a", (8,))],
        {"i": "vector"},
    ),
    _case(
        "diagonal",
        """
def f(L, a):
    for i in range(L.shape[0]):
        L[i, i] = a[i]
    return L
""",
        [("L", (6, 6)), ("a", (6,))],
        {"i": "host"},  # two indices on i
    ),
    _case(
        "ragged-sum-max",
        """
def f(A):
    s = np.zeros(A.shape[0], dtype=A.dtype)
    m = np.zeros(A.shape[0], dtype=A.dtype)
    for i in range(A.shape[0]):
        s[i] = np.sum(A[i, :i + 1])
        m[i] = A[i, :i + 1].max()
    return s, m
""",
        [("A", (9, 9))],
        {"i": "vector"},
    ),
    _case(
        "ragged-reversed",
        """
def f(C, a):
    n = C.shape[0]
    for i in range(n - 1, -1, -1):
        C[i, :i + 1] = C[i, :i + 1] * 2.0 + a[:i + 1]
    return C
""",
        [("C", (7, 7)), ("a", (7,))],
        {"i": "vector"},
    ),
    _case(
        "ragged-matvec",
        """
def f(y, A, x):
    for i in range(A.shape[0]):
        y[i] = A[i, :i + 1] @ x[:i + 1]
    return y
""",
        [("y", (8,)), ("A", (8, 8)), ("x", (8,))],
        {"i": "vector"},
    ),
    _case(
        "row-scale-columns",
        """
def f(A, d):
    for j in range(A.shape[1]):
        A[:, j] = A[:, j] / d[j]
    return A
""",
        [("A", (5, 6)), ("d", (6,))],
        {"j": "vector"},
    ),
    _case(
        "column-recurrence",
        """
def f(y, x):
    for j in range(1, y.shape[1]):
        y[:, j] = 0.5 * y[:, j - 1] + x[:, j]
    return y
""",
        [("y", (5, 8)), ("x", (5, 8))],
        {"j": "host"},
    ),
]


@pytest.mark.parametrize("nest", RAGGED)
def test_triangular_and_product_loops(nest):
    try:
        run_and_compare(nest, strict_legal=True)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{nest.describe()}") from None


CUDA_RAGGED = [c for c in RAGGED if c.id in ("syrk", "ragged-sum-max", "gemm-rows")]


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("nest", CUDA_RAGGED)
def test_triangular_loops_on_the_cuda_target(nest):
    test_vectorized_nests_on_the_cuda_target(nest, "random")


def _launches(source: str, args, rtol=1e-10):
    """Kernel launches of the compiled function on the CUDA stand-in (its result NumPy's)."""
    from cupy_backend import make_cupy

    fn = load(source)
    cp = make_cupy(order="random", seed=5)
    theirs = [cp.device(a) if isinstance(a, np.ndarray) else a for a in copy.deepcopy(args)]
    with np.errstate(all="ignore"):
        got = _host(ppto.compile(fn)(*theirs))
    with np.errstate(all="ignore"):
        want = fn(*copy.deepcopy(args))
    assert_same(got, want, rtol, 4 * rtol * max(1.0, _scale(want)), "result", cuda=True)
    return len(cp.launches)


ELEMENT = """
import numpy as np


def f(a, b):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            b[i, j] = a[i, j] * 2.0 + 1.0
    return b
"""

TIME = """
import numpy as np


def f(a, b, T):
    for t in range(T):
        for i in range(1, a.shape[0] - 1):
            b[i] = 0.25 * (a[i - 1] + 2.0 * a[i] + a[i + 1])
        for i in range(1, a.shape[0] - 1):
            a[i] = b[i]
    return a
"""


@pytest.mark.usefixtures("tools")
def test_launches_per_loop_on_the_cuda_target():
    """An element loop nest is O(1) launches whatever its size; a time loop of T steps over
    an independent loop O(T)."""
    rng = np.random.default_rng(0)
    small = _launches(ELEMENT, [rng.random((4, 5)), rng.random((4, 5))])
    big = _launches(ELEMENT, [rng.random((12, 30)), rng.random((12, 30))])
    assert small == big <= 2
    t0 = _launches(TIME, [rng.random(20), rng.random(20), 0])
    t4 = _launches(TIME, [rng.random(20), rng.random(20), 4])
    t8 = _launches(TIME, [rng.random(20), rng.random(20), 8])
    assert t8 - t4 == t4 - t0 > 0
    assert (t8 - t4) // 4 <= 2  # at most two kernels per step: no launch per element


def test_a_bound_broken_at_the_end_raises_where_numpy_does():
    """The vector form runs only where the loop's guards hold at both ends; here the last
    iteration indexes past the end: the iterations run, as NumPy's, and raise its error after
    the earlier writes."""
    fn = load(
        """
import numpy as np


def f(x, n):
    for i in range(n):
        x[i] = x[i] * 2.0 + 1.0
    return x
"""
    )
    compiled = ppto.compile(fn)
    x0 = np.arange(6.0)
    want = x0.copy()
    with pytest.raises(IndexError) as numpy_error:
        fn(want, 8)
    got = x0.copy()
    with pytest.raises(IndexError) as pypto_error:
        compiled(got, 8)
    np.testing.assert_array_equal(got, want)
    assert str(numpy_error.value) in str(pypto_error.value)
    ok = x0.copy()  # in bounds: the vector form
    np.testing.assert_array_equal(compiled(ok, 6), fn(x0.copy(), 6))
    loop = compiled.ir(x0.copy(), 6).body[0]
    assert loop.vector is not None and loop.when


def test_a_host_loop_checks_its_bounds_once_and_each_iteration_only_on_a_breach():
    """A host loop (a recurrence) checks its guards at both ends before it runs; where an end
    breaks one, each iteration checks, so NumPy's error comes at NumPy's iteration."""
    fn = load(
        """
import numpy as np


def f(x, n):
    for i in range(1, n):
        x[i] = x[i - 1] * 0.5 + x[i]
    return x
"""
    )
    compiled = ppto.compile(fn)
    x0 = np.arange(6.0)
    np.testing.assert_array_equal(compiled(x0.copy(), 6), fn(x0.copy(), 6))
    want, got = x0.copy(), x0.copy()
    with pytest.raises(IndexError) as numpy_error:
        fn(want, 9)
    with pytest.raises(IndexError) as pypto_error:
        compiled(got, 9)
    np.testing.assert_array_equal(got, want)
    assert str(numpy_error.value) in str(pypto_error.value)
    module = compiled._runner(compiled.ir(x0.copy(), 6)).module
    assert "_ends1 = " in module and "if not _ends1 and not (" in module


def test_an_empty_range_runs_nothing():
    fn = load(
        """
import numpy as np


def f(x, lo, hi):
    for i in range(lo, hi):
        x[i] = -x[i]
    return x
"""
    )
    compiled = ppto.compile(fn)
    for lo, hi in ((2, 5), (3, 3), (4, 2)):
        np.testing.assert_array_equal(compiled(np.arange(6.0), lo, hi), fn(np.arange(6.0), lo, hi))


PREFIX = [
    _case(
        "prefix-sum-scalar",
        """
def f(x):
    out = np.zeros_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out, s
""",
        [("x", (9,))],
        {"i": "host"},  # the running value is read: a prefix sum, not a sum
    ),
    _case(
        "prefix-before-update",
        """
def f(x):
    out = np.zeros_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = s
        s += x[i]
    return out, s
""",
        [("x", (9,))],
        {"i": "host"},
    ),
    _case(
        "row-accumulation-read",
        """
def f(C, A, D):
    for k in range(A.shape[0]):
        C[0, :] += A[k, :]
        D[k, :] = C[0, :]
    return C, D
""",
        [("C", (2, 5)), ("A", (6, 5)), ("D", (6, 5))],
        {"k": "host"},
    ),
    _case(
        "row-accumulation-old-value",
        """
def f(C, A, D):
    for k in range(A.shape[0]):
        old = C[0, :]
        C[0, :] = old + A[k, :]
        D[k, :] = old * 2.0
    return C, D
""",
        [("C", (2, 5)), ("A", (6, 5)), ("D", (6, 5))],
        {"k": "host"},
    ),
]


@pytest.mark.parametrize("nest", PREFIX)
def test_a_running_value_read_in_the_loop_is_no_reduction(nest):
    try:
        run_and_compare(nest, strict_legal=True)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{nest.describe()}") from None


# -- dtypes the vector form must keep: each step's promotion (NEP 50), casts, overflow -------
def _f(body: str, params: str) -> str:
    return f"import numpy as np\n\n\ndef f({params}):\n{body}"


DTYPES = [
    (  # int8 increments into a float: each step adds in float
        "acc-int8-into-float",
        _f("    s = 0.0\n    for i in range(x.shape[0]):\n        s += x[i]\n    return s\n", "x"),
        lambda: [np.full(100, 100, np.int8)],
    ),
    (
        "acc-uint8-into-array",
        _f(
            "    acc = np.zeros(imgs.shape[1:])\n    for k in range(imgs.shape[0]):\n"
            "        acc = acc + imgs[k]\n    return acc\n",
            "imgs",
        ),
        lambda: [np.full((10, 2, 3), 200, np.uint8)],
    ),
    (  # the store casts at every step: no reduction
        "acc-cast-by-store",
        _f("    for k in range(w.shape[0]):\n        C[0] += w[k]\n    return C\n", "C, w"),
        lambda: [np.zeros(2, np.int64), np.full(10, 0.5)],
    ),
    (
        "int-times-half-i",
        _f(
            "    for i in range(x.shape[0]):\n        y[i] = x[i] * (i / 2)\n    return y\n", "x, y"
        ),
        lambda: [np.ones(5, np.int64), np.zeros(5)],
    ),
    (
        "bool-plus-i",
        _f("    for i in range(m.shape[0]):\n        y[i] = m[i] + i\n    return y\n", "m, y"),
        lambda: [np.array([True, False, True, True]), np.zeros(4, np.int64)],
    ),
    (
        "int8-compare-i",
        _f("    for i in range(x.shape[0]):\n        y[i] = x[i] < i\n    return y\n", "x, y"),
        lambda: [np.full(300, 100, np.int8), np.zeros(300, bool)],
    ),
    (  # NumPy raises OverflowError at i = 128, after the writes before
        "int8-plus-i-overflows",
        _f("    for i in range(x.shape[0]):\n        x[i] = x[i] + i\n    return x\n", "x"),
        lambda: [np.zeros(300, np.int8)],
    ),
    (
        "int8-store-i-overflows",
        _f("    for i in range(y.shape[0]):\n        y[i] = i\n    return y\n", "y"),
        lambda: [np.zeros(300, np.int8)],
    ),
    (
        "dot-int8-rows",
        _f(
            "    for i in range(a.shape[0]):\n        y[i] = (a[i] @ b[i]) * 1.0\n    return y\n",
            "a, b, y",
        ),
        lambda: [np.full((4, 5), 100, np.int8), np.full((4, 5), 3, np.int8), np.zeros(4)],
    ),
    (
        "dot-bool-rows",
        _f(
            "    for i in range(a.shape[0]):\n        y[i] = a[i] @ b[i]\n    return y\n", "a, b, y"
        ),
        lambda: [np.ones((4, 5), bool), np.ones((4, 5), bool), np.zeros(4)],
    ),
    (  # the hull's other elements have negative exponents: no vector form
        "ragged-int-power",
        _f(
            "    for i in range(A.shape[0]):\n"
            "        y[i] = (A[i, :i + 1] ** B[i, :i + 1]).sum()\n    return y\n",
            "A, B, y",
        ),
        lambda: [
            np.ones((4, 4), np.int64),
            np.where(np.triu(np.ones((4, 4)), 1) > 0, -1, 2),
            np.zeros(4, np.int64),
        ],
    ),
]


@pytest.mark.parametrize("source, make", [pytest.param(s, m, id=i) for i, s, m in DTYPES])
def test_the_vector_form_keeps_numpy_dtypes(source, make):
    fn = load(source)
    want_args, got_args = make(), make()
    try:
        want, error = fn(*want_args), None
    except Exception as e:
        want, error = None, e
    compiled = ppto.compile(fn)
    if error is not None:
        with pytest.raises(type(error)):
            compiled(*got_args)
    else:
        assert_same(compiled(*got_args), want, 0, 0, "result")
    for g, w in zip(got_args, want_args):
        assert_same(g, w, 0, 0, "argument afterwards")


# -- recurrences along independent lines: one kernel that loops inside (CUDA) ---------------------
COLUMNS = """
import numpy as np


def f(x, y, n):
    for j in range(2, n):
        y[:, j] = 0.5 * x[:, j] + 0.25 * y[:, j - 1] - 0.125 * y[:, j - 2]
    for j in range(n - 3, -1, -1):
        y[:, j] = y[:, j] + 0.5 * y[:, j + 1] + 0.25 * y[:, j + 2]
    return y
"""

ROWS = """
import numpy as np


def f(a, b):
    for i in range(1, a.shape[0]):
        b[i, 1:] = np.maximum(b[i - 1, 1:] * 0.9, a[i, 1:]) + i
    return b
"""

SCALAR = """
import numpy as np


def f(a):
    for j in range(1, a.shape[0]):
        a[j] = (a[j] + a[j - 1]) / 3.0
    return a
"""

CROSSED = """
import numpy as np


def f(y):
    for j in range(1, y.shape[1]):
        y[:, j] = y[::-1, j - 1] * 0.5 + 1.0
    return y
"""


def _loop(source, args):
    loop = next(s for s in ppto.compile(load(source)).ir(*args).body if isinstance(s, Loop))
    return loop


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_recurrence_along_lines_is_one_launch_on_the_cuda_target(dtype):
    """A loop carried along each line (a column recurrence, forwards and backwards; a row
    recurrence; a scalar one) is one kernel whose threads each run every iteration over their
    line: the launches do not grow with the loop's length, and the result is NumPy's."""
    rng = np.random.default_rng(7)
    for source, make in [
        (
            COLUMNS,
            lambda n: [rng.random((9, n)).astype(dtype), rng.random((9, n)).astype(dtype), n],
        ),
        (ROWS, lambda n: [rng.random((n, 7)).astype(dtype), rng.random((n, 7)).astype(dtype)]),
        (SCALAR, lambda n: [rng.random(n).astype(dtype)]),
    ]:
        rtol = 1e-5 if dtype == np.float32 else 1e-10
        short, long_ = _launches(source, make(6), rtol), _launches(source, make(40), rtol)
        assert short == long_, source
        loop = _loop(source, make(6))
        assert loop.vector is None and loop.lines is not None, loop.decision
        assert "one kernel that loops inside" in loop.decision


@pytest.mark.usefixtures("tools")
def test_a_recurrence_that_crosses_lines_keeps_a_launch_per_step():
    """``y[:, j]`` from ``y[::-1, j - 1]``: each line reads another's last value, so the
    iterations need the whole previous step: a launch per step (and NumPy's result)."""
    rng = np.random.default_rng(8)
    short = _launches(CROSSED, [rng.random((5, 6))])
    long_ = _launches(CROSSED, [rng.random((5, 16))])
    assert long_ - short == 10
    loop = _loop(CROSSED, [rng.random((5, 6))])
    assert loop.lines is None and "different slices" in loop.decision


def test_a_recurrence_along_lines_runs_as_numpy_on_the_cpu():
    rng = np.random.default_rng(9)
    for source, args in [
        (COLUMNS, [rng.random((9, 30)), rng.random((9, 30)), 30]),
        (ROWS, [rng.random((30, 7)), rng.random((30, 7))]),
        (SCALAR, [rng.random(30)]),
        (CROSSED, [rng.random((5, 12))]),
    ]:
        fn = load(source)
        want = fn(*copy.deepcopy(args))
        got = ppto.compile(fn)(*copy.deepcopy(args))
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _recurrence(seed: int) -> tuple[str, bool]:
    """A random recurrence along the lines of one axis (rows or columns, forwards or
    backwards, distance 1 or 2, ufuncs, the loop variable, another array nearby), and whether
    it is one statement (one kernel)."""
    r = np.random.default_rng(seed)
    axis, back, d = int(r.integers(2)), bool(r.integers(2)), int(r.integers(1, 3))
    sign = 1 if back else -1  # the side of the earlier iterations

    def at(name, shift):
        j = "j" if shift == 0 else (f"j + {shift}" if shift > 0 else f"j - {-shift}")
        return f"{name}[:, {j}]" if axis == 1 else f"{name}[{j}, :]"

    terms = [f"{r.choice([0.5, -0.25, 0.125])} * {at('y', sign * k)}" for k in range(1, d + 1)]
    terms.append(f"{r.choice(['', 'np.sin', 'np.abs'])}({at('x', sign * int(r.integers(2)))})")
    if r.integers(2):
        terms.append("0.01 * j")
    if r.integers(2):
        terms.append(f"{at('y', 0)} * 0.5")
    value = " + ".join(terms)
    if r.integers(2):
        value = f"np.maximum({value}, {at('x', 0)})"
    n = "y.shape[1]" if axis == 1 else "y.shape[0]"
    loop = f"range({n} - 1 - {d}, -1, -1)" if back else f"range({d}, {n})"
    body = [f"        {at('y', 0)} = {value}"]
    one = bool(r.integers(2))
    if not one:
        body.append(f"        {at('z', 0)} = {at('y', 0)} * 2.0 + {at('z', sign)}")
    source = f"import numpy as np\n\n\ndef f(x, y, z):\n    for j in {loop}:\n"
    return source + "\n".join(body) + "\n    return y, z\n", one


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("seed", range(32))
def test_random_recurrences_along_lines_on_the_cuda_target(seed):
    """Random recurrences match NumPy on the CUDA stand-in in float32 and float64, in one
    launch whatever the loop's length (one statement or two over the same lines)."""
    source, _ = _recurrence(seed)
    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[seed % 2]

    def make(n):
        return [rng.random((n, n)).astype(dtype) for _ in range(3)]

    rtol = 1e-5 if dtype == np.float32 else 1e-10  # (C contracts a * b + c into one FMA)
    short, long_ = _launches(source, make(5), rtol), _launches(source, make(12), rtol)
    assert short == long_, source
    assert _loop(source, make(5)).lines is not None, source


# -- interchange: an element loop nest carried along its inner loop ------------------------------
def _nest(seed: int) -> tuple[str, bool]:
    """A random element nest ``for i: for j: y[i, j] = f(y[i, j -+ d], x[...])``, forwards or
    backwards, with the row index sometimes shifted (``y[i - 1, j]``: rows depend on each
    other, no interchange), a temporary, the loop variables as values; and whether its rows
    touch only their own elements."""
    r = np.random.default_rng(seed)
    back, d = bool(r.integers(2)), int(r.integers(1, 3))
    sign = 1 if back else -1
    own = bool(r.integers(3))
    row = "i" if own else "i - 1"
    j = f"j + {d}" if back else f"j - {d}"
    terms = [f"{r.choice([0.5, -0.25, 0.75])} * y[{row}, {j}]", f"t * {r.choice([1.0, 0.5])}"]
    if r.integers(2):
        terms.append("0.01 * i - 0.02 * j")
    if r.integers(2):
        terms.append(f"np.sin(x[i, j + {sign}])" if not back else "np.sin(x[i, j - 1])")
    value = " + ".join(terms)
    if r.integers(2):
        value = f"np.minimum({value}, 3.0)"
    inner = "range(x.shape[1] - 1 - d, 0, -1)" if back else "range(d, x.shape[1] - 1)"
    inner = inner.replace("d", str(d))
    first = "0" if own else "1"
    source = (
        "import numpy as np\n\n\ndef f(x, y):\n"
        f"    for i in range({first}, x.shape[0]):\n"
        f"        for j in {inner}:\n"
        "            t = x[i, j] * 2.0\n"
        f"            y[i, j] = {value}\n"
        "    return y\n"
    )
    return source, own


@pytest.mark.parametrize("seed", range(24))
def test_random_element_nests_interchange_where_rows_are_their_own(seed):
    """A nest whose rows touch only their own elements is interchanged (the row loop inside,
    as array operations over the rows), and matches NumPy in float32 and float64; one whose
    rows read each other keeps its order."""
    source, own = _nest(seed)
    fn = load(source)
    rng = np.random.default_rng(seed)
    for dtype in (np.float32, np.float64):
        args = [rng.random((7, 9)).astype(dtype), rng.random((7, 9)).astype(dtype)]
        with np.errstate(all="ignore"):
            want = fn(*copy.deepcopy(args))
            got = ppto.compile(fn)(*copy.deepcopy(args))
        rtol = 1e-5 if dtype == np.float32 else 1e-12
        assert_same(got, want, rtol, rtol, source)
    loop = _loop(source, args)
    assert (isinstance(loop.vector, Loop) and "interchanged" in loop.decision) == own, source


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("seed", [s for s in range(24) if _nest(s)[1]][:8])
def test_interchanged_nests_are_one_launch_on_the_cuda_target(seed):
    """On the CUDA stand-in the interchanged nest is a recurrence along independent rows: one
    kernel whose threads each run the inner loop over their row."""
    source, _ = _nest(seed)
    rng = np.random.default_rng(seed)

    def make(n, m):
        return [rng.random((n, m)), rng.random((n, m))]

    assert _launches(source, make(5, 8)) == _launches(source, make(9, 20))


def test_an_interchange_keeps_numpy_errors():
    """A bound broken inside the nest: no interchange runs (its guards fail at a corner);
    the nest runs in its own order and raises NumPy's error after the same writes."""
    fn = load(
        """
import numpy as np


def f(x, y, m):
    for i in range(x.shape[0]):
        for j in range(1, m):
            y[i, j] = 0.5 * y[i, j - 1] + x[i, j]
    return y
"""
    )
    x, y = np.random.default_rng(0).random((4, 6)), np.zeros((4, 6))
    want, got = y.copy(), y.copy()
    with pytest.raises(IndexError) as numpy_error:
        fn(x, want, 8)
    with pytest.raises(IndexError) as pypto_error:
        ppto.compile(fn)(x, got, 8)
    np.testing.assert_array_equal(got, want)
    assert str(numpy_error.value) in str(pypto_error.value)
    np.testing.assert_array_equal(ppto.compile(fn)(x, y.copy(), 6), fn(x, y.copy(), 6))


# -- accumulations with maximum and minimum: exact in any order ------------------------------------
EXTREMES = """
import numpy as np


def f(x, lo, hi, m):
    for i in range(x.shape[0]):
        hi[1:] = np.maximum(hi[1:], x[i, 1:])
        lo = np.minimum(np.minimum(lo, x[i, :]), 2 * x[i, :])
        m = np.maximum(m, x[i, 0] * 3)
    return lo, hi, m
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_maximum_and_minimum_accumulations_are_reductions(dtype):
    """``hi = np.maximum(hi, x[i, :])`` over ``i`` is one max over the new axis (a NaN
    propagates as in the loop); values, dtypes and the decision as NumPy's loop."""
    fn = load(EXTREMES)
    rng = np.random.default_rng(3)
    x = (rng.random((9, 5)) * 100).astype(dtype)
    if dtype != np.int64:
        x[4, 2] = np.nan
    args = [x, np.full(5, 50, dtype), np.full(5, 50, dtype), dtype(7)]
    with np.errstate(all="ignore"):
        want = fn(*copy.deepcopy(args))
        got = ppto.compile(fn)(*copy.deepcopy(args))
    assert_same(got, want, 0, 0, "extremes")
    loop = _loop(EXTREMES, args)
    assert loop.vector is not None and "reduction" in loop.decision, loop.decision


@pytest.mark.usefixtures("tools")
def test_maximum_accumulations_on_the_cuda_target():
    rng = np.random.default_rng(4)
    args = [rng.random((9, 5)), np.zeros(5), np.ones(5), np.float64(0.5)]
    short = _launches(EXTREMES, args)
    args = [rng.random((40, 5)), np.zeros(5), np.ones(5), np.float64(0.5)]
    assert _launches(EXTREMES, args) == short


INNER_FORM = """
import numpy as np


def f(y, k):
    for j in range(1, y.shape[1]):
        for i in range(k):
            y[i, j] = y[i, j - 1] * 0.5 + 1.0
    return y
"""


@pytest.mark.usefixtures("tools")
def test_the_transpiled_cuda_path_checks_the_inner_loops_form_before_one_kernel(tmp_path):
    """A loop without guards of its own whose inner loop runs as array operations: the one
    kernel runs only where the inner loop's form holds at both ends (here ``k`` rows of 5:
    NumPy's IndexError after the same writes, not a kernel past the end of ``y``)."""
    import subprocess

    from cupy_backend import make_cupy

    src = tmp_path / "inner_form.py"
    src.write_text(INNER_FORM)
    command = [str(Path(sys.executable).parent / "pypto"), "transpile", str(src)]
    command += ["-o", str(tmp_path / "out"), "-s", "f(f64[n,m], int)", "-q"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(tmp_path / "out"))
    try:
        spec = importlib.util.spec_from_file_location("inner_form_gen", tmp_path / "out" / src.name)
        gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen)
    finally:
        sys.path.remove(str(tmp_path / "out"))
    gen._ORIGINAL[0] = False
    fn = load(INNER_FORM)
    for k in (3, 5, 6):
        y = np.arange(35.0).reshape(5, 7)
        want, error = y.copy(), None
        try:
            fn(want, k)
        except IndexError as e:
            error = e
        cp = make_cupy(order="random", seed=5)
        device = cp.device(y.copy())
        if error is None:
            gen.f(device, k)
        else:
            with pytest.raises(IndexError):
                gen.f(device, k)
        np.testing.assert_array_equal(_host(device), want)
