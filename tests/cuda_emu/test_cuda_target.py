"""The CUDA target, proven without a GPU: every kernel it emits compiles with NVRTC for sm_90 and
runs under the emulation harness (threads in reverse, forward and random order, each launch in a
forked child), through its generated host code on the CuPy stand-in, and matches NumPy.

Cases: every function of the NumPy-style corpus (each block of its host program on the CUDA
target, float32 and float64), the structure cases of the passes (softmax, layer norm, the seed
chains, attention, the transformer block, diffusion, a stencil, a scan), NumPy's integer, bool
and float16 semantics op by op, and GPU arrays given to ``@ppto.compile`` and ``chain.run``.

Tolerances: float32 rtol 1e-5 and float64 1e-10 against NumPy, relative to the largest magnitude
of the result (reductions add in another order than NumPy's pairwise sums); attention and the
transformer block 1e-4 / 1e-9 (the online softmax rescales as it goes); integers and bools
exactly.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import importlib.util
import re
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from cupy_backend import ON_DEVICE, compile_graph, make_cupy, to_host
from helpers import load_seed

import pypto as ppto
from pypto.compile import _specialize
from pypto.function import run_function
from pypto.passes.pipeline import plan_function, plan_graph
from pypto.testing import nvrtc

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "examples" / "numpy_style"
CORPUS_CASES = [
    (f"{name}.{fn.__name__}", fn, make)
    for name in sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")
    for fn, make in importlib.import_module(f"examples.numpy_style.{name}").CASES
]
_compiled: set[str] = set()  # sources NVRTC already compiled in this session


def nvrtc_check(run) -> None:
    if ON_DEVICE:  # CuPy compiled it
        return
    digest = hashlib.sha256(run.cuda_source.encode()).hexdigest()
    if digest not in _compiled:
        nvrtc.compile_cuda(run.cuda_source)
        _compiled.add(digest)


def assert_close(got, want, rtol):
    got = to_host(got)
    if want is None or type(want) in (int, bool):
        assert got == want, (got, want)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    finite = np.isfinite(want)
    scale = float(np.max(np.abs(want[finite]), initial=1.0))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def run_blocks_on_cuda(fn, args, cp):
    """``fn``'s host program on the interpreter, every block on the CUDA target; also the
    launches the blocks' plans call for (their kernel counts)."""
    compiled = ppto.compile(fn)
    fn_ir = compiled.ir(*args)
    plans = plan_function(fn_ir)
    arguments = compiled._bind(copy.deepcopy(args), {})
    _, env, _ = _specialize(arguments)
    planned = []

    def block(b, values, env):
        run = compile_graph(plans[id(b)], cp)
        nvrtc_check(run)
        planned.append(len(plans[id(b)].kernels))
        return run(values, env)

    result = run_function(fn_ir, arguments, env, block)
    written = tuple(arguments[name] for name, _ in fn_ir.writebacks)
    return result, planned, written


@pytest.mark.parametrize(
    ("case_id", "fn", "make"), [pytest.param(*c, id=c[0]) for c in CORPUS_CASES]
)
def test_corpus_functions_run_on_the_cuda_target(tools, case_id, fn, make):
    for dtype, order in ((np.float32, "reverse"), (np.float64, "random")):
        label = f"{case_id}-{np.dtype(dtype).name}"
        args = make("small", dtype, np.random.default_rng(zlib.crc32(label.encode())))
        mine = copy.deepcopy(args)
        with np.errstate(all="ignore"):
            want = fn(*mine)
        cp = make_cupy(order=order, seed=zlib.crc32(label.encode()))
        with np.errstate(all="ignore"):
            got, _, written = run_blocks_on_cuda(fn, args, cp)
        compiled = ppto.compile(fn)
        names = [n for n, _ in compiled.ir(*args).writebacks]
        params = list(compiled._bind(args, {}))
        want = (want if isinstance(want, tuple) else (want,)) + tuple(
            mine[params.index(n)] for n in names
        )
        got = (got if isinstance(got, tuple) else (got,)) + written
        rtol = 1e-4 if "attention" in case_id else 1e-5
        for g, w in zip(got, want):
            assert_close(g, w, rtol if dtype == np.float32 else rtol * 1e-5)


def test_the_corpus_is_all_here():
    assert len(CORPUS_CASES) >= 60


# -- the structure cases of the passes: values and launches (one per Plan kernel) ----------------
def _structure():
    path = ROOT / "tests" / "passes" / "test_structure.py"
    spec = importlib.util.spec_from_file_location("structure_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


S = _structure()


def _rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _structure_cases(dtype):
    rng = np.random.default_rng(11)

    def r(*shape):
        return _rand(rng, shape, dtype)

    b, n, d = 2, 24, 16
    mask = np.triu(np.full((n, n), -1e4), 1).astype(dtype)
    block = (r(b, n, d), r(b, n, d), r(b, n, d), r(b, n, d), mask, r(d), r(d))
    return [  # (name, function, arguments, Plan kernels)
        ("sin_cos", S.sin_cos, (r(37), r(37)), 1),
        ("softmax", S.softmax, (r(5, 40),), 1),
        ("softmax3d", S.softmax, (r(3, 4, 33),), 1),
        ("layer_norm", S.layer_norm, (r(6, 20), r(20), r(20)), 1),
        ("log_softmax", S.log_softmax, (r(7, 30),), 1),
        ("variance_rows", S.variance_rows, (r(7, 30),), 1),
        ("transformer_block", S.transformer_block, block, 2),
        ("five_point", S.five_point, (r(17, 23),), 1),
        ("cumsum_map", S.cumsum_map, (r(33, 9),), 1),
        ("twelve_ops", S.twelve_ops, (r(12, 10), r(12, 10)), None),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_structure_cases_match_numpy_with_one_launch_per_kernel(tools, dtype):
    for name, fn, args, kernels in _structure_cases(dtype):
        cp = make_cupy(order="reverse")
        with np.errstate(all="ignore"):
            want = fn(*copy.deepcopy(args))
            got, planned, _ = run_blocks_on_cuda(fn, args, cp)
        rtol = 1e-4 if name == "transformer_block" else 1e-5
        assert_close(got, want, rtol if dtype == np.float32 else rtol * 1e-5)
        # attention by library products: two products around the row-softmax kernel
        attention = sum(1 for launch in cp.launches if launch.startswith("ppto_softmax_rows"))
        assert len(cp.launches) - 2 * attention == sum(planned), (name, cp.launches, planned)
        if kernels is not None:
            assert sum(planned) == kernels, name


# -- the design document's chains, given GPU arrays: chain.run takes the CUDA target -------------
def _seed_chains(dtype):
    rng = np.random.default_rng(12)
    s31, s32, s41 = load_seed("3_1"), load_seed("3_2"), load_seed("4_1")
    s51, s52, s71 = load_seed("5_1"), load_seed("5_2"), load_seed("7_1")
    x3, y3 = _rand(rng, (6, 5, 4), dtype), _rand(rng, (6, 5, 4), dtype)
    q, k, v = (_rand(rng, (2, 40, s52.head_dim), dtype) for _ in range(3))
    conv = s71.inputs(3, dtype)
    return [
        ("3.1 map", s31.map_chain, {"x": x3, "y": y3}),
        ("3.1 reduce", s31.reduce_chain, {"x": x3}),
        ("3.1 scan", s31.scan_chain, {"x": x3}),
        ("3.1 reorder", s31.reorder_chain, {"x": x3}),
        ("3.2", s32.op_chain, {k: a[:16] for k, a in s32.inputs(4, dtype).items()}),
        (
            "4.1",
            s41.final_op,
            {n: _rand(rng, (9, 13) if n in "AC" else (13, 7), dtype) for n in "ABCD"},
        ),
        (
            "5.1",
            s51.diffusion_op,
            {"u": _rand(rng, (19, 23), dtype), "kappa": _rand(rng, (19, 23), dtype)},
        ),
        ("5.2", s52.attention_op, {"Q": q, "K": k, "V": v}),
        ("7.1", s71.activated, conv),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_seed_chains_given_gpu_arrays_run_on_the_cuda_target(tools, dtype):
    for name, chain, data in _seed_chains(dtype):
        cp = make_cupy(order="random", seed=5)
        want = chain.run(**data)
        got = chain.run(**{n: cp.device(a) for n, a in data.items()})
        rtol = 1e-4 if name == "5.2" else 1e-5
        assert_close(got, want, rtol if dtype == np.float32 else rtol * 1e-5)
        assert cp.launches, name  # it ran on the CUDA target, not NumPy


def test_compiled_functions_given_gpu_arrays_run_on_the_cuda_target(tools):
    cp = make_cupy(order="reverse")
    x = np.random.default_rng(1).standard_normal((6, 50)).astype(np.float32)
    softmax = ppto.compile(S.softmax)
    got = softmax(cp.device(x))
    assert_close(got, S.softmax(x), 1e-5)
    assert cp.launches == ["graph_k0"]
    assert_close(softmax(x), S.softmax(x), 1e-6)  # NumPy arrays keep the CPU path
    assert cp.launches == ["graph_k0"]


def _python_numbers(u):
    total = u.sum().item()
    top = float(np.max(u))
    positive = bool(np.all(u > 0))
    return total + top, positive, int(np.argmax(u))


def test_python_numbers_read_from_device_reductions(tools):
    """float(x.max()), x.sum().item(), bool(np.all(...)): the reduction runs on the device,
    its 0-d result is read into a Python number (they were fused into one kernel, which the
    host could not read from)."""
    cp = make_cupy(order="random", seed=2)
    u = np.random.default_rng(3).standard_normal((7, 9))
    got = ppto.compile(_python_numbers)(cp.device(u))
    want = _python_numbers(u)
    assert [type(g) for g in got] == [type(w) for w in want]
    assert got[1:] == want[1:] and abs(got[0] - want[0]) <= 1e-12 * abs(want[0]) + 1e-12
    assert cp.launches


# -- NumPy's scalar semantics, op by op ----------------------------------------------------------
INT_BINARY = ["add", "subtract", "multiply", "floor_divide", "mod", "maximum", "minimum",
              "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "equal",
              "less", "greater_equal", "logical_and", "logical_xor"]  # fmt: skip
FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "mod", "power",
                "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp",
                "logaddexp2", "heaviside", "copysign", "not_equal",
                "less_equal"]  # fmt: skip
FLOAT_UNARY = ["neg", "abs", "sign", "sqrt", "cbrt", "square", "reciprocal", "exp", "exp2",
               "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin",
               "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
               "floor", "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit",
               "logical_not"]  # fmt: skip


def _run_chain(chain, data, order="reverse", launches=None):
    """A chain (or a list of chains, as one graph) on the CUDA target; ``launches``, a list,
    gets the kernels it launched (each launch in the same process: the emulator is faster)."""
    cp = make_cupy(order=order, isolate=launches is None)
    g = ppto.trace(chain, **data)
    run = compile_graph(plan_graph(g), cp)
    nvrtc_check(run)
    names = [v.name for v in g.inputs]
    outs = run([data[n] for n in names], {})
    if launches is not None:
        launches += cp.launches
    return outs if isinstance(chain, list) else outs[0]


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_integer_ops_are_numpys_exactly(tools, dtype):
    """Floor division and modulo by zero and by negatives, shifts past the width, wrapping."""
    info = np.iinfo(dtype)
    a = np.array([0, 1, -1, 7, -7, 5, int(info.max), int(info.min), 3, 100], np.int64)
    b = np.array([0, 3, -3, 2, 2, -5, 1, -1, 70, 0], np.int64)
    if info.min == 0:  # unsigned: wrapped values, non-negative shifts
        b = np.abs(b)
    a, b = a.astype(dtype), b.astype(dtype)
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chains = [getattr(ppto, name)(x, y) for name in INT_BINARY]
    with np.errstate(all="ignore"):
        wants = ppto.run(chains, x=a, y=b)
        gots = _run_chain(chains, {"x": a, "y": b})
    for name, got, want in zip(INT_BINARY, gots, wants):
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.dtype == want.dtype, name


def test_int32_sums_accumulate_in_int64_as_numpy_does(tools):
    a = np.full((3, 1000), 2**30, np.int32)
    x = ppto.tensor("x")
    got = _run_chain(ppto.reduce_sum(x, axis=1), {"x": a})
    np.testing.assert_array_equal(got, a.sum(axis=1))
    assert got.dtype == np.int64


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_ops_with_nan_inf_and_signed_zeros(tools, dtype):
    vals = [0.0, -0.0, 1.5, -2.5, 3.0, -7.0, np.inf, -np.inf, np.nan, 0.25, 1e-3, 100.0]
    a = np.array(vals, dtype)
    b = np.array(list(reversed(vals)), dtype)
    x, y = ppto.tensor("x"), ppto.tensor("y")
    rtol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-13}[dtype]
    names = FLOAT_BINARY + FLOAT_UNARY
    chains = [getattr(ppto, n)(x, y) if n in FLOAT_BINARY else getattr(ppto, n)(x) for n in names]
    with np.errstate(all="ignore"):
        wants = ppto.run(chains, x=a, y=b)
        gots = _run_chain(chains, {"x": a, "y": b})
    for name, got, want in zip(names, gots, wants):
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True, err_msg=name)
        same_nan = np.isnan(got.astype(np.float64)) == np.isnan(want.astype(np.float64))
        assert same_nan.all(), name


def test_reductions_propagate_nan_and_refuse_empty_maximum(tools):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], np.float32)
    x = ppto.tensor("x")
    for name in ("reduce_max", "reduce_min", "reduce_sum", "reduce_mean"):
        got = _run_chain(getattr(ppto, name)(x, axis=1), {"x": a})
        want = getattr(ppto, name)(x, axis=1).run(x=a)
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True, err_msg=name)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        _run_chain(ppto.reduce_max(x, axis=1), {"x": np.zeros((3, 0), np.float32)})


def test_casts_bools_and_where(tools):
    a = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 300.0], np.float64)
    x = ppto.tensor("x")
    for chain in (
        ppto.astype(x, np.int32),
        ppto.astype(x, np.bool_),
        ppto.astype(x, np.float16),
        ppto.where(x > 0, x, -x * 2),
        ppto.logical_not(x > 0.1),
    ):
        np.testing.assert_array_equal(_run_chain(chain, {"x": a}), chain.run(x=a))


def test_reverse_and_forward_order_agree_on_every_family(tools):
    """Row-wise (shared memory, shuffles), reductions of either layout, scans, stencils."""
    rng = np.random.default_rng(4)
    data = {"x": rng.standard_normal((9, 70)).astype(np.float32)}
    x = ppto.tensor("x")
    chains = [
        ppto.softmax(x, axis=-1),
        ppto.reduce_sum(x, axis=0),
        ppto.reduce_max(x, axis=1) + ppto.reduce_min(x, axis=1),
        ppto.cumsum(x, axis=0) * 0.5 + 1,
        ppto.cumsum(x, axis=1),
        x[1:, 2:] - x[:-1, :-2],
    ]
    for chain in chains:
        want = chain.run(**data)
        for order in ("forward", "reverse", "random"):
            assert_close(_run_chain(chain, data, order), want, 1e-5)


def test_emitted_source_is_one_module_with_one_kernel_per_plan_kernel(tools):
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(ppto.reduce_sum(x, axis=1))[:, None] * ppto.exp(ppto.transpose(y, (1, 0)))
    data = {"x": np.ones((4, 3), np.float32), "y": np.ones((5, 4), np.float32)}
    plan = plan_graph(ppto.trace(chain, **data))
    run = compile_graph(plan, make_cupy())
    names = re.findall(r'extern "C" __global__ void (\w+)\(', run.cuda_source)
    assert len(plan.kernels) == 2
    assert {n for n in names if not n.endswith(("_part", "_final"))} == {"graph_k0", "graph_k1"}
    assert set(names) - {"graph_k0", "graph_k1"} <= {"graph_k0_part", "graph_k0_final"}
    assert "transpose" not in run.cuda_source  # an index map, never a copy
    assert_close(_run_chain(chain, data), chain.run(**data), 1e-5)


@pytest.mark.skipif(ON_DEVICE, reason="stream numbers are the CuPy stand-in's record")
def test_independent_kernels_run_on_their_own_streams(tools):
    """Design document 4.1: the two products share a level, so each runs on a stream of its own;
    the add (the epilogue of one) waits for the other product's event."""
    seed = load_seed("4_1")
    rng = np.random.default_rng(2)
    data = {n: _rand(rng, (9, 13) if n in "AC" else (13, 7), np.float32) for n in "ABCD"}
    cp = make_cupy()
    plan = plan_graph(ppto.trace(seed.final_op, **data))
    assert [len(level) for level in plan.levels] == [2]
    run = compile_graph(plan, cp)
    (got,) = run([data[n] for n in "ABCD"], {})
    assert_close(got, seed.final_op.run(**data), 1e-5)
    products = [s for name, s in zip(cp.launches, cp.streams) if name == "matmul"]
    assert len(products) == 2 and len(set(products)) == 2 and 0 not in products
    assert "wait_event(_e" in run.host_source  # the epilogue waits for the other product


def test_buffers_reuse_dead_memory_as_the_plan_says(tools):
    x = ppto.tensor("x")
    chain = x
    for axis in (1, 0, 1, 0):  # alternating reductions: the memory plan reuses dead buffers
        chain = ppto.softmax(chain, axis=axis) * 2
    data = {"x": np.random.default_rng(3).standard_normal((12, 9)).astype(np.float32)}
    plan = plan_graph(ppto.trace(chain, **data))
    run = compile_graph(plan, make_cupy())
    assert any(b.reuses for b in plan.buffers) == ("_reuse(" in run.host_source)
    assert_close(_run_chain(chain, data), chain.run(**data), 1e-5)


def test_user_operators_with_a_cuda_expression_are_inlined_in_fused_kernels(tools):
    @ppto.register_operator(elementwise=True, cuda="({0} > 0 ? {0} : {0} * 0.01f)")
    def cuda_leaky_relu(x):
        return np.where(x > 0, x, x * np.float32(0.01))

    try:
        x = ppto.tensor("x")
        chain = ppto.cuda_leaky_relu(ppto.sin(x) * 3) + 1
        data = {"x": np.random.default_rng(8).standard_normal((7, 45)).astype(np.float32)}
        plan = plan_graph(ppto.trace(chain, **data))
        assert len(plan.kernels) == 1
        run = compile_graph(plan, make_cupy())
        assert "0.01f" in run.cuda_source  # the user's expression, inside the fused kernel
        assert_close(_run_chain(chain, data), chain.run(**data), 1e-6)
    finally:
        ppto.unregister_operator("cuda_leaky_relu")


@pytest.mark.parametrize("path", ["products", "tiled"])
def test_attention_paths_match_numpy(tools, monkeypatch, path):
    """Both attention paths: library products around the row-softmax kernel, in steps of
    bounded scores (budgets here force steps of query rows, steps of whole batches, and one
    step), and the tiled online-softmax kernel (PYPTO_CUDA_ATTENTION=tiled). Masks: none,
    (Lq, Lk) with rows of -inf (NaN, as NumPy) and a NaN, and one per batch."""
    from pypto.emit import cuda_attention

    monkeypatch.setenv("PYPTO_CUDA_ATTENTION", path)
    rng = np.random.default_rng(14)
    b, lq, lk, d = 3, 7, 150, 8
    rows = np.zeros((lq, lk))
    rows[0] = -np.inf
    rows[1, ::2] = -np.inf
    rows[2, 5] = np.nan
    q, k, v, m = ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v"), ppto.tensor("m")
    for budget in (3 * lk * 4, 2 * lq * lk * 8, 1 << 28):
        monkeypatch.setattr(cuda_attention, "SCORES_BUDGET", budget)
        for dtype in (np.float32, np.float64):
            data = {n: _rand(rng, (b, lq if n == "q" else lk, d), dtype) for n in "qkv"}
            cases = [
                (ppto.attention(q, k, v), {}),
                (ppto.attention(q, k, v, mask=m, scale=0.3), {"m": rows.astype(dtype)}),
                (ppto.attention(q, k, v, mask=m), {"m": _rand(rng, (b, lq, lk), dtype)}),
            ]
            for chain, extra in cases:
                both = {**data, **extra}
                with np.errstate(all="ignore"):
                    want = chain.run(**both)
                got = _run_chain(chain, both, "random")
                assert_close(got, want, 1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_few_long_rows_reduce_in_two_stages(tools, order):
    """Rows of 65536 elements or more, fewer than 64 of them: each row is split over many
    blocks (partial results, then one block per row combines them and runs the epilogue)."""
    rng = np.random.default_rng(9)
    x = ppto.tensor("x")
    cases = [
        (ppto.reduce_sum(x, axis=1), rng.standard_normal((3, 70000)).astype(np.float32)),
        (
            ppto.sqrt(ppto.reduce_mean(x * x, axis=-1)) + ppto.reduce_max(x, axis=-1),
            rng.standard_normal((2, 100003)),
        ),
        (ppto.reduce_sum(x), rng.standard_normal(200000).astype(np.float32)),
        (ppto.reduce_any(x > 3.5, axis=1), rng.standard_normal((2, 80000))),
    ]
    for chain, data in cases:
        launches = []
        got = _run_chain(chain, {"x": data}, order, launches)
        assert launches == ["graph_k0_part", "graph_k0_final"]
        assert_close(got, chain.run(x=data), 1e-5 if data.dtype == np.float32 else 1e-10)
    small = rng.standard_normal((3, 100)).astype(np.float32)  # short rows: one block per row
    launches = []
    got = _run_chain(cases[0][0], {"x": small}, order, launches)
    assert launches == ["graph_k0"]
    assert_close(got, small.sum(axis=1), 1e-5)


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_few_long_lines_scan_in_blocks_with_carries(tools, order):
    """Lines of 65536 elements or more, fewer than 64: block totals first, then each block
    scans its chunk from the carry of the chunks before it. The additions run in another order
    than NumPy's sequential ones; the bound: no further from the exact (float64) scan than
    twice NumPy's own float32 error, plus one ulp of the largest value."""
    rng = np.random.default_rng(10)
    x = ppto.tensor("x")
    cases = [
        (ppto.cumsum(x, axis=0) * 0.5 + 1, rng.standard_normal(100000).astype(np.float32)),
        (ppto.cumsum(ppto.abs(x), axis=1), rng.standard_normal((2, 70001))),
        (ppto.cumprod(1 + x * 1e-5, axis=0), rng.standard_normal((66000, 3))),
    ]
    for chain, data in cases:
        launches = []
        got = _run_chain(chain, {"x": data}, order, launches)
        assert launches == ["graph_k0_sums", "graph_k0_scan"]
        want = chain.run(x=data)
        assert got.dtype == want.dtype
        if data.dtype == np.float64:
            assert_close(got, want, 1e-10)
            continue
        exact = chain.run(x=data.astype(np.float64))
        numpy_error = np.max(np.abs(want - exact))
        ulp = np.spacing(np.float32(np.max(np.abs(exact))))
        assert np.max(np.abs(got - exact)) <= 2 * numpy_error + ulp


def test_plain_maps_load_16_bytes_at_a_time_where_alignment_allows(tools):
    """A map kernel over same-shape arrays has a vectorized variant (float4 / double2 loads),
    launched when the arrays are C-contiguous, aligned and whole vectors; else the scalar one."""
    rng = np.random.default_rng(13)
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(x) * 2.5 - y
    for dtype in (np.float32, np.float64):
        for shape, view, vectorized in (
            ((8, 40), False, True),
            ((7, 3), False, False),  # 21 elements: not whole vectors
            ((8, 40), True, False),  # a strided view
        ):
            data = {"x": rng.standard_normal(shape).astype(dtype)}
            data["y"] = rng.standard_normal(shape).astype(dtype)
            if view:
                data = {
                    n: np.ascontiguousarray(np.repeat(a, 2, axis=1))[:, ::2]
                    for n, a in data.items()
                }
            cp = make_cupy(order="reverse", isolate=False)
            run = compile_graph(plan_graph(ppto.trace(chain, **data)), cp)
            nvrtc_check(run)
            (got,) = run([data["x"], data["y"]], {})
            assert cp.launches == (["graph_k0_vec"] if vectorized else ["graph_k0"]), shape
            assert_close(got, chain.run(**data), 1e-6 if dtype == np.float32 else 1e-13)


def scan_read_reversed(x0, s0):
    t1 = (x0[-1::-1] * (s0 < 2)).cumsum(axis=0)
    t8 = (np.maximum(t1, s0) / 3 + x0)[::-1]
    return t8, t1


@pytest.mark.parametrize("n", [1, 5])
def test_a_scan_output_also_read_reversed(tools, n, monkeypatch):
    """Fuzz seed 3003042: the scan's values are an output and are read reversed (on one
    element, a reversed read is the same read)."""
    monkeypatch.setenv("PYPTO_CHUNK_BUDGET", "256")
    cp = make_cupy(order="random", seed=3003042)
    x0 = np.linspace(-1.0, 1.0, n)
    got = ppto.compile(scan_read_reversed)(cp.device(x0), 2)
    for g, w in zip(got, scan_read_reversed(x0, 2)):
        np.testing.assert_array_equal(to_host(g), w)
