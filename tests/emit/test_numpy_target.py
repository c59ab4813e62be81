"""The NumPy target: generated code for the cases the rest of the suite does not reach.

The whole suite already runs every chain and compiled function through the generated code with
a tiny block budget (tests/conftest.py), so chunk boundaries, empty and 1-element axes and
non-contiguous inputs are covered there; here: row sweeps of scans (used only for long rows),
determinism of the generated source, errors raised inside the generated code, NumPy's error
state in worker threads, and in-place writes into arguments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import pypto as ppto
from pypto.emit.numpy_target import compile_graph, debug_source
from pypto.passes.pipeline import plan_graph


@pytest.fixture
def big_blocks(monkeypatch):
    """Plans made inside use a realistic budget (rows long enough for a sweep)."""
    monkeypatch.setenv("PYPTO_CHUNK_BUDGET", str(1 << 20))


@given(
    st.sampled_from(["cumsum", "cumprod"]),
    st.sampled_from([np.float32, np.float64, np.int32, np.bool_]),
    st.integers(0, 2),
    st.tuples(st.integers(0, 120), st.integers(256, 700)),
    st.booleans(),
)
def test_scans_along_an_outer_axis_sweep_rows_exactly_as_numpy(name, dtype, axis, sizes, epilogue):
    """Sweeps run in batches of rows (several batches here, the carry crossing them), into
    scratch when an epilogue follows, else straight into the output."""
    import os

    old = os.environ.get("PYPTO_CHUNK_BUDGET")
    os.environ["PYPTO_CHUNK_BUDGET"] = str(1 << 20)
    try:
        rng = np.random.default_rng(sizes[0])
        shape = (sizes[0], 3, sizes[1]) if axis != 2 else (3, sizes[0], sizes[1])
        data = (rng.standard_normal(shape) * 2).astype(dtype)
        x = ppto.tensor("x")
        scan = getattr(ppto, name)
        chain = scan(ppto.abs(x) if dtype != np.bool_ else x, axis=axis)
        chain = chain * 2 + 1 if epilogue else chain
        base = np.abs(data) if dtype != np.bool_ else data
        with np.errstate(over="ignore"):  # long float32 products overflow, in NumPy too
            got = chain.run(x=data)
            want = getattr(np, name)(base, axis=axis)
            want = want * 2 + 1 if epilogue else want
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
        source = debug_source(plan_graph(ppto.trace(chain, x=data)))
        assert ("for _i0 in range(" in source) == (axis != 2)  # a sweep along outer axes only
    finally:
        if old is None:
            del os.environ["PYPTO_CHUNK_BUDGET"]
        else:
            os.environ["PYPTO_CHUNK_BUDGET"] = old


def test_generated_source_is_deterministic_and_imports_numpy_only(big_blocks):
    x, y = ppto.tensor("x"), ppto.tensor("y")
    data = {"x": np.ones((64, 32)), "y": np.ones((32, 64))}

    def text():
        chain = ppto.softmax(x) @ y + ppto.sin(ppto.transpose(y, (1, 0))[:, :1])
        return debug_source(plan_graph(ppto.trace(chain, **data)))

    first = text()
    assert text() == first
    imports = {
        line.split()[1] for line in first.splitlines() if line.startswith(("import", "from"))
    }
    assert imports <= {
        "__future__",
        "base64",
        "contextvars",
        "ctypes",
        "math",
        "os",
        "threading",
        "weakref",
        "concurrent.futures",
        "numpy",
    }
    compile(first, "<generated>", "exec")


def test_a_numpy_error_inside_generated_code_is_the_coded_error_with_the_users_line():
    x, p = ppto.tensor("x"), ppto.tensor("p")
    chain = x**p  # an integer to a negative power: NumPy's ValueError, found by the values
    with pytest.raises(ValueError, match="running `power`") as info:
        chain.run(x=np.arange(3), p=np.array([-1, 1, 2]))
    assert isinstance(info.value, ppto.ExecutionError)
    assert "test_numpy_target.py" in str(info.value)


def test_numpy_error_state_applies_in_worker_threads():
    x = ppto.tensor("x")
    chain = ppto.log(x) * 2.0
    data = np.zeros(100_000)  # many blocks, so workers compute them
    with np.errstate(divide="ignore"):
        got = chain.run(x=data)
    assert np.all(np.isneginf(got))
    with np.errstate(divide="raise"), pytest.raises(ppto.PyptoError):
        chain.run(x=data)


def test_in_place_writes_go_straight_into_the_argument():
    @ppto.compile
    def relax(a, steps):
        for _ in range(steps):
            a[1:-1] = 0.5 * (a[:-2] + a[2:])  # reads a elsewhere: computed before it is written
        return a

    data = np.linspace(0.0, 1.0, 50) ** 2
    want = data.copy()
    for _ in range(5):
        want[1:-1] = 0.5 * (want[:-2] + want[2:])
    got = relax(data, 5)
    np.testing.assert_array_equal(data, want)
    assert got is data


def test_plans_compile_once_and_run_with_any_sizes_their_guards_allow():
    x = ppto.tensor("x")
    chain = ppto.exp(x - ppto.max(x, axis=-1, keepdims=True))
    g = ppto.trace(chain, x=np.ones((4, 5)))
    run = compile_graph(plan_graph(g))
    assert compile_graph(plan_graph(g)) is run
    for shape in [(4, 5), (9, 2), (0, 3), (7, 300)]:
        data = np.random.default_rng(1).standard_normal(shape)
        np.testing.assert_allclose(
            chain.run(x=data), np.exp(data - data.max(axis=-1, keepdims=True)), rtol=1e-15
        )


def test_the_reference_backend_runs_the_same_plans(monkeypatch):
    monkeypatch.setenv("PYPTO_BACKEND", "reference")

    @ppto.compile
    def f(a, b):
        c = np.exp(a - a.max(axis=1, keepdims=True))
        b[1:] = c[:-1].sum(axis=1)
        return c / c.sum(axis=1, keepdims=True)

    a, b = np.random.default_rng(3).standard_normal((6, 5)), np.zeros(6)
    want_b = np.zeros(6)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    want_b[1:] = e[:-1].sum(axis=1)
    np.testing.assert_allclose(f(a, b), e / e.sum(axis=1, keepdims=True), rtol=1e-15)
    np.testing.assert_allclose(b, want_b, rtol=1e-15)


def test_a_code_generator_failure_falls_back_to_the_plans(monkeypatch):
    import pypto.backends as backends

    def broken(*args):
        raise RuntimeError("a renderer bug")

    monkeypatch.setattr(backends, "compile_function", broken)
    monkeypatch.setattr(backends, "compile_graph", broken)

    def g(x):
        return np.sin(x) * 2

    data = np.arange(5.0)
    monkeypatch.setenv("PYPTO_STRICT_EMIT", "0")
    np.testing.assert_array_equal(ppto.compile(g)(data), g(data))
    np.testing.assert_array_equal((ppto.sin(ppto.tensor("x")) * 2).run(x=data), g(data))
    monkeypatch.setenv("PYPTO_STRICT_EMIT", "1")
    with pytest.raises(RuntimeError, match="renderer bug"):
        ppto.compile(g)(data)


def test_repeated_calls_reuse_their_specialization_until_something_changes():
    @ppto.compile
    def f(x, n, flag=True):
        return x[:n] * 2 if flag else x[:n]

    x = np.arange(6.0)
    for _ in range(3):  # the same kinds of arguments: one compilation
        np.testing.assert_array_equal(f(x, 4), x[:4] * 2)
    assert len(f.history) == 1
    np.testing.assert_array_equal(f(x, 2), x[:2] * 2)  # another int: its own guards checked
    np.testing.assert_array_equal(f(x, 3, False), x[:3])  # another constant: recompiled
    np.testing.assert_array_equal(f(x.astype(np.float32), 4), x[:4] * 2)
    assert f(x.astype(np.float32), 4).dtype == np.float32


@given(
    st.tuples(st.integers(2, 40), st.integers(2, 40)),
    st.sampled_from([np.float32, np.float64]),
    st.sampled_from([256, 4096, 1 << 20]),
)
def test_maps_over_concatenations_split_at_the_pieces_and_never_copy(shape, dtype, budget):
    """np.gradient's edges and interior are concatenated; a map over them is computed piece by
    piece (the diffusion workload), exactly as NumPy, with no concatenation in the code."""
    import os

    def diffusion(u, kappa):
        return np.gradient(u, axis=0) * np.gradient(kappa, axis=0) + np.gradient(
            u, axis=1
        ) * np.gradient(kappa, axis=1)

    old = os.environ.get("PYPTO_CHUNK_BUDGET")
    os.environ["PYPTO_CHUNK_BUDGET"] = str(budget)
    try:
        rng = np.random.default_rng(shape[0] * 100 + shape[1])
        u, kappa = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
        f = ppto.compile(diffusion)
        got = f(u, kappa)
        np.testing.assert_array_equal(got, diffusion(u, kappa))
        assert got.dtype == dtype
        source = f._runner(f.ir(u, kappa)).source
        assert "concatenate" not in source and "_cat(" not in source
    finally:
        if old is None:
            del os.environ["PYPTO_CHUNK_BUDGET"]
        else:
            os.environ["PYPTO_CHUNK_BUDGET"] = old


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_maps_over_concatenations_with_different_pieces(axis):
    """Two concatenations along one axis at different places: the map splits at the first's
    pieces and reads the other's through its pieces (still NumPy's values)."""
    rng = np.random.default_rng(axis + 5)
    a, b = rng.standard_normal((7, 3)), rng.standard_normal((7, 5))
    c, d = rng.standard_normal((7, 6)), rng.standard_normal((7, 2))
    if axis == 0:
        a, b, c, d = (np.ascontiguousarray(t.T) for t in (a, b, c, d))
    names = {"a": a, "b": b, "c": c, "d": d}
    ta, tb, tc, td = (ppto.tensor(n) for n in names)
    chain = ppto.exp(ppto.concatenate([ta, tb], axis=axis)) * ppto.concatenate([tc, td], axis)
    want = np.exp(np.concatenate([a, b], axis)) * np.concatenate([c, d], axis)
    np.testing.assert_array_equal(chain.run(**names), want)


@pytest.mark.parametrize("blas_found", [True, False])
def test_attention_blocks_run_in_parallel_with_one_blas_thread_each(blas_found):
    """Query blocks run on the pool with OpenBLAS on one thread per worker (restored after);
    where the per-thread setting is not found, one block after another. Same values both ways,
    and the BLAS thread count is left as it was."""
    from pypto.emit import runtime

    prelude = runtime.namespace("numpy_helpers")  # what generated code runs in
    setter = prelude["_blas_threads"]()
    if blas_found and setter is None:
        pytest.fail("numpy's OpenBLAS exposes openblas_set_num_threads_local on this platform")
    saved = list(prelude["_BLAS"])
    if not blas_found:
        prelude["_BLAS"][:] = [None]
    try:
        rng = np.random.default_rng(3)
        q, k, v = (rng.standard_normal((3, 600, 16)).astype(np.float32) for _ in range(3))
        chain = ppto.attention(ppto.tensor("q"), ppto.tensor("k"), ppto.tensor("v"), scale=0.25)
        got = chain.run(q=q, k=k, v=v)
        s = q @ np.swapaxes(k, -1, -2) * 0.25
        e = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(got, (e / e.sum(-1, keepdims=True)) @ v, rtol=2e-5, atol=2e-6)
        if setter is not None:
            before = setter(3)
            assert setter(before) == 3  # the setter really sets (and returns the old value)
    finally:
        prelude["_BLAS"][:] = saved


def test_a_user_operator_over_a_computed_operand_in_a_chunked_kernel():
    """The operand of a user operator is computed whole before the blocks (not in a block's
    scratch, which exists only inside the blocks)."""

    @ppto.register_operator(elementwise=True)
    def leaky_for_numpy_target(x):
        return np.where(x > 0, x, x * np.float32(0.01))

    try:
        x = ppto.tensor("x")
        chain = ppto.leaky_for_numpy_target(ppto.sin(x) * 3) + 1
        data = np.random.default_rng(8).standard_normal((7, 45)).astype(np.float32)
        want = np.where(np.sin(data) * 3 > 0, np.sin(data) * 3, np.sin(data) * 3 * 0.01) + 1
        np.testing.assert_allclose(chain.run(x=data), want, rtol=1e-6)
    finally:
        ppto.unregister_operator("leaky_for_numpy_target")


def test_generated_modules_run_on_their_own_without_pypto(tmp_path):
    """Every corpus function's generated module (prelude, constants, error tables, blocks, host
    function) runs in a fresh interpreter where PyPTO cannot be imported, and gives what the
    original function gives."""
    import copy
    import importlib
    import pickle
    import subprocess
    import sys
    import zlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    corpus = root / "examples" / "numpy_style"
    jobs = []
    for name in sorted(p.stem for p in corpus.glob("*.py") if p.stem != "__init__"):
        for fn, make in importlib.import_module(f"examples.numpy_style.{name}").CASES:
            label = f"{name}.{fn.__name__}"
            args = make("small", np.float64, np.random.default_rng(zlib.crc32(label.encode())))
            compiled = ppto.compile(fn)
            compiled(*copy.deepcopy(args))
            module = compiled._runner(compiled.ir(*args)).module
            assert "pypto" not in module.split("def ", 1)[0]  # imports: numpy and the stdlib
            mine = copy.deepcopy(args)
            with np.errstate(all="ignore"):
                want = fn(*mine)
            bound = tuple(compiled._bind(copy.deepcopy(args), {}).values())  # with defaults
            jobs.append((label, module, fn.__name__, bound, (want, *mine)))
    (tmp_path / "jobs.pkl").write_bytes(pickle.dumps([j[:4] for j in jobs]))
    script = (
        "import pickle, sys\n"
        "sys.modules['pypto'] = None  # importing pypto fails from here on\n"
        "import numpy as np\n"
        "out = {}\n"
        f"jobs = pickle.load(open({str(tmp_path / 'jobs.pkl')!r}, 'rb'))\n"
        "for label, module, name, args in jobs:\n"
        "    namespace = {'__name__': 'generated'}\n"
        "    exec(compile(module, label, 'exec'), namespace)\n"
        "    with np.errstate(all='ignore'):\n"
        "        out[label] = (namespace[name](*args), *args)\n"
        f"pickle.dump(out, open({str(tmp_path / 'out.pkl')!r}, 'wb'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    got = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert len(got) == len(jobs) >= 60

    def same(a, b, label):
        if isinstance(b, (tuple, list)):
            assert len(a) == len(b), label
            for x, y in zip(a, b):
                same(x, y, label)
        elif b is None or isinstance(b, (str, bool)):
            assert a == b, label
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=label)

    for label, _, _, _, want in jobs:  # the result, then the arguments (written in place)
        same(got[label][: len(want)], want, label)  # (the module's call also had defaults)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_plus_a_dead_temp_accumulates_into_its_memory(dtype):
    """a @ b + c @ d: the second product's output takes the first's memory (nothing else reads
    it) and BLAS adds the product into it (gemm with beta = 1): no add pass, no new array.
    Operands may be transposed or strided views; the sum in either order."""
    rng = np.random.default_rng(5)
    a, b, c, d = (ppto.tensor(n) for n in "abcd")
    m, k, n = 37, 23, 29
    data = {
        "a": rng.standard_normal((m, k)).astype(dtype),
        "b": rng.standard_normal((k, n)).astype(dtype),
        "c": rng.standard_normal((k, m)).astype(dtype).T,  # column-major
        "d": rng.standard_normal((n, 2 * k)).astype(dtype)[:, ::2].T,  # strided: NumPy's add
    }
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for chain in (a @ b + c @ d, c @ d + a @ b):
        plan = plan_graph(ppto.trace(chain, **data))
        last = plan.kernels[-1]
        assert last.accumulate is not None and plan.buffer_of(last.outputs[0]).reuses
        assert "_gemm_acc(" in compile_graph(plan).source
        want = data["a"] @ data["b"] + data["c"] @ data["d"]
        np.testing.assert_allclose(chain.run(**data), want, rtol=rtol, atol=rtol * 10)


def test_no_accumulation_where_the_addend_lives_on_or_is_an_operand():
    """The addend is also returned, is an operand of the product, or is an integer array: the
    product gets memory of its own and the add stays an add."""
    rng = np.random.default_rng(6)
    a, b = ppto.tensor("a"), ppto.tensor("b")
    data = {"a": rng.standard_normal((6, 6)), "b": rng.standard_normal((6, 6))}
    e = a @ b
    for roots in ([e @ b + e], [e, e + a @ a]):
        plan = plan_graph(ppto.trace(roots, **data))
        assert all(k.accumulate is None for k in plan.kernels)
        got = ppto.run(roots, **data)
        want = [data["a"] @ data["b"] @ data["b"] + data["a"] @ data["b"]]
        if len(roots) == 2:
            want = [data["a"] @ data["b"], data["a"] @ data["b"] + data["a"] @ data["a"]]
        for g, w in zip(got if isinstance(got, list) else [got], want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    ints = {"a": np.arange(9).reshape(3, 3), "b": np.ones((3, 3), np.int64)}
    chain = a @ b + b @ a
    plan = plan_graph(ppto.trace(chain, **ints))
    assert all(k.accumulate is None for k in plan.kernels)
    np.testing.assert_array_equal(chain.run(**ints), ints["a"] @ ints["b"] + ints["b"] @ ints["a"])


def test_outputs_reuse_the_memory_of_dropped_results_and_never_of_live_ones():
    """Buffers of 1 MiB or more come from a pool: a result dropped gives its memory to the
    next call's (no fresh pages to fault in); one still alive, or alive through a view only,
    keeps its memory and its values."""
    x = ppto.tensor("x")
    chain = ppto.sin(x) * 2
    data = np.random.default_rng(8).standard_normal((512, 512))  # 2 MiB
    want = np.sin(data) * 2
    first = chain.run(x=data)
    address = first.ctypes.data
    view = first[10:20]
    del first  # the view keeps the memory
    second = chain.run(x=data + 1)
    assert second.ctypes.data != address
    np.testing.assert_array_equal(view, want[10:20])
    del view, second
    third = chain.run(x=data)
    fourth = chain.run(x=data)  # the pool's memory went to third; fourth gets other memory
    assert address in (third.ctypes.data, fourth.ctypes.data)
    assert third.ctypes.data != fourth.ctypes.data
    np.testing.assert_array_equal(third, want)
    np.testing.assert_array_equal(fourth, want)
