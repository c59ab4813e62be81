"""The Dask target on a real cluster: ``distributed.LocalCluster`` with 2 worker processes.

Every result is compared with NumPy running the same function on the same (computed) inputs;
the graphs are checked for what the target promises: one PyPTO task per kernel per block, no
``setitem``, chunks kept through time loops, both workers used, nothing computed before the
user computes, and a task function that pickles by reference.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import pypto as ppto

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


# -- the corpus: ordinary NumPy functions ------------------------------------------------------
def elementwise(x, y):
    return np.sin(x) + np.cos(y) * 2.0


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V):
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ V


def diffusion(A, B, T):
    for _ in range(T):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A


def heat_2d(u, T):
    for _ in range(T):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.1 * (
            u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
        )
    return u


def cumsum_rows(x):
    return np.cumsum(x, axis=1) * 0.5


def cumsum_cols(x):
    return np.cumsum(x, axis=0) + 1.0


def dense_relu(x, W, b):
    return np.maximum(x @ W + b, 0.0)


def column_sums(x):
    return (x * x).sum(axis=0)


def total(x):
    return np.abs(x).sum() + x.max()


def row_stats(x):
    return x.mean(axis=1), x.std(axis=1)


def column_means(x):
    return x.mean(axis=0)


def spread(x):
    return x.max(axis=0) - x.min(axis=0)


def any_below(x):
    return (x < -2).any(axis=0)


def column_norms(x, b):
    return np.sqrt((x * x).sum(axis=0, keepdims=True)) + b


CORPUS = {
    "elementwise": elementwise,
    "softmax": softmax,
    "attention": attention,
    "cumsum_rows": cumsum_rows,
    "cumsum_cols": cumsum_cols,
    "dense_relu": dense_relu,
    "column_sums": column_sums,
    "total": total,
    "row_stats": row_stats,
    "column_means": column_means,
    "spread": spread,
    "any_below": any_below,
    "column_norms": column_norms,
}
COMPILED = {name: ppto.compile(fn) for name, fn in CORPUS.items()}
DIFFUSION = ppto.compile(diffusion)
HEAT = ppto.compile(heat_2d)


def _inputs(name, dtype, rng, n=120, m=90):
    def r(*shape):
        return rng.standard_normal(shape).astype(dtype)

    if name == "elementwise":
        return [r(n, m), r(n, m)]
    if name == "attention":
        return [r(n, 16), r(m, 16), r(m, 24)]
    if name == "dense_relu":
        return [r(n, m), r(m, 32), r(32)]
    if name == "column_norms":
        return [r(n, m), r(m)]
    return [r(n, m)]


def _tolerance(dtype):
    return 2e-4 if np.dtype(dtype) == np.float32 else 1e-10


def _same(got, want, dtype):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, dtype)
        return
    assert isinstance(got, da.Array), type(got)
    value = got.compute()
    assert np.asarray(value).dtype == np.asarray(want).dtype
    assert np.shape(value) == np.shape(want)
    np.testing.assert_allclose(value, want, rtol=_tolerance(dtype), atol=_tolerance(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_matches_numpy_on_the_cluster(client, name, dtype):
    rng = np.random.default_rng(len(name))
    arrays = _inputs(name, dtype, rng)
    want = CORPUS[name](*arrays)
    # row blocks, and square blocks (rechunked once on entry to the Plan's chunk axis)
    for chunks in ((40, -1), (40, 30)):
        lazy = [da.from_array(a, chunks=chunks[: a.ndim]) for a in arrays]
        _same(COMPILED[name](*lazy), want, dtype)


REDUCTIONS = ("column_sums", "total", "column_means", "spread", "any_below", "column_norms")


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_along_the_chunk_axis_are_trees(client, name):
    """Partial reductions per block, combined 8 at a time, the maps after them last: no task
    reads the whole input."""
    rng = np.random.default_rng(7)
    arrays = _inputs(name, "float64", rng, n=400, m=30)
    lazy = [da.from_array(arrays[0], chunks=(25, -1)), *arrays[1:]]
    got = COMPILED[name](*lazy)
    assert _pypto_tasks(got)["k0"] == 16  # one partial per block
    keys = _keys(got)
    assert sum("pypto-combine" in k for k in keys) == 3  # 16 -> 2 -> 1
    _same(got, CORPUS[name](*arrays), "float64")


def _scan_after(x):
    return np.exp(np.cumsum(x * 0.01, axis=0)) * x


def _cumprod(x):
    return np.cumprod(1 + 0.001 * x, axis=0)


@pytest.mark.parametrize("fn", [cumsum_cols, _scan_after, _cumprod, "flat"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_scans_along_the_chunk_axis_carry_between_blocks(client, fn, dtype):
    """No rechunk: a scan per block, carries chained block to block (cumreduction's job)."""
    rng = np.random.default_rng(17)
    x = (rng.standard_normal((120, 6)) * 4).astype(dtype)
    if fn == "flat":
        fn, x = _flat_cumsum, x[:, 0].copy()
    got = ppto.compile(fn)(da.from_array(x, chunks=(25,) + x.shape[1:]))
    keys = _keys(got)
    assert sum("pypto-carry" in k for k in keys) == 4 and not any("rechunk" in k for k in keys)
    want = fn(x)
    value = got.compute()
    assert value.dtype == want.dtype
    # (a blocked float32 sum rounds differently near 0: an absolute tolerance at its scale)
    atol = 1e-5 * float(np.abs(want).max()) if dtype == "float32" else 0
    np.testing.assert_allclose(value, want, rtol=2e-5 if dtype == "float32" else 1e-12, atol=atol)


def _flat_cumsum(x):
    return np.cumsum(x)


def test_integer_and_boolean_reductions(client):
    x = np.random.default_rng(8).integers(-50, 50, (300, 7)).astype(np.int32)
    for name in ("column_sums", "spread", "any_below", "column_means"):
        got = COMPILED[name](da.from_array(x, chunks=(40, 7)))
        want = CORPUS[name](x)
        value = got.compute()
        assert value.dtype == want.dtype
        np.testing.assert_allclose(value, want, rtol=1e-12)


def test_mixing_dask_and_numpy_inputs(client):
    rng = np.random.default_rng(1)
    x, W, b = _inputs("dense_relu", "float64", rng)
    got = COMPILED["dense_relu"](da.from_array(x, chunks=(30, -1)), W, b)
    _same(got, dense_relu(x, W, b), "float64")


def _pypto_tasks(array) -> dict:
    """Keys of PyPTO's kernel tasks (per kernel name) in the optimized graph."""
    (opt,) = dask.optimize(array)
    found: dict[str, int] = {}
    for key in dict(opt.__dask_graph__()):
        name = key[0] if isinstance(key, tuple) else key
        if isinstance(name, str) and (name.startswith("pypto-k") or "pypto-loop-" in name):
            kernel = name.split("-")[1]
            found[kernel] = found.get(kernel, 0) + 1
    return found


def _keys(array) -> list[str]:
    return [str(k[0] if isinstance(k, tuple) else k) for k in dict(array.__dask_graph__())]


def test_tasks_are_kernels_times_blocks(client):
    x = da.from_array(np.random.default_rng(2).standard_normal((200, 50)), chunks=(50, 50))
    got = COMPILED["softmax"](x)
    plan_kernels = len(ppto.explain(COMPILED["softmax"], np.zeros((200, 50))).kernels)
    assert _pypto_tasks(got) == {"k0": 4} and plan_kernels == 1
    # plain Dask runs the same NumPy function in more tasks (a reduction, a map, a reduction)
    (plain,) = dask.optimize(softmax(x))
    assert len(dict(plain.__dask_graph__())) > 4


def test_time_loop_keeps_chunks_and_never_sets_items(client):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(1000)
    A, B = da.from_array(a.copy(), chunks=250), da.from_array(a.copy(), chunks=250)
    got = DIFFUSION(A, B, 20)
    assert got.chunks == ((250,) * 4,) and B.chunks == ((250,) * 4,)
    keys = _keys(got)
    assert not any("setitem" in k for k in keys)
    # temporal blocking: the 20 steps run inside one task per block (a halo of 20 * 2 rows)
    assert _pypto_tasks(got) == {"loop": 4}
    want_a, want_b = a.copy(), a.copy()
    diffusion(want_a, want_b, 20)
    np.testing.assert_allclose(got.compute(), want_a, rtol=1e-12)
    np.testing.assert_allclose(A.compute(), want_a, rtol=1e-12)  # written, as NumPy writes
    np.testing.assert_allclose(B.compute(), want_b, rtol=1e-12)


def test_two_dimensional_stencil_time_loop(client):
    rng = np.random.default_rng(4)
    u = rng.standard_normal((64, 48))
    U = da.from_array(u.copy(), chunks=(16, 48))
    got = HEAT(U, 10)
    want = heat_2d(u.copy(), 10)
    assert not any("setitem" in k for k in _keys(got))
    np.testing.assert_allclose(got.compute(), want, rtol=1e-12, atol=1e-12)


def test_both_workers_run_kernels(client):
    x = da.from_array(np.random.default_rng(5).standard_normal((800, 64)), chunks=(25, 64))
    got = COMPILED["elementwise"](x, x)
    with distributed.get_task_stream(client) as ts:
        got.compute()
    workers = {t["worker"] for t in ts.data if str(t["key"]).find("pypto-k") >= 0}
    assert len(workers) == 2


def test_nothing_is_computed_before_the_user_computes(client):
    calls = []

    def source(block):
        calls.append(block.shape)
        return block

    with dask.config.set(scheduler="sync"):
        x = da.from_array(np.ones((40, 10)), chunks=(10, 10)).map_blocks(
            source, meta=np.empty((0, 0))
        )
        got = COMPILED["softmax"](x)
        assert calls == [] and isinstance(got, da.Array)
        got.compute()
        assert len(calls) == 4


def test_lazy_chain_runs_on_dask_arrays(client):
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(ppto.reduce_sum(x, axis=1)) * ppto.exp(ppto.transpose(y, (1, 0)))
    rng = np.random.default_rng(6)
    xv, yv = rng.standard_normal((30, 40)), rng.standard_normal((30, 20))
    got = chain.run(x=da.from_array(xv, chunks=(10, 40)), y=da.from_array(yv, chunks=(5, 20)))
    want = np.sin(xv.sum(axis=1)) * np.exp(yv.T)
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), want, rtol=1e-12)


def test_explain_says_how_each_kernel_runs_and_its_tasks(client):
    a = np.random.default_rng(9).standard_normal(1000)
    A, B = da.from_array(a, chunks=250), da.from_array(a.copy(), chunks=250)
    text = str(ppto.explain(DIFFUSION, A, B, 20))
    assert "dask: one task per block of axis 0; slabs of B (axis 0, offsets +1..+1)" in text
    assert "dask: the loop over _ runs k steps per task per block of axis 0" in text
    assert "dask tasks for these arguments (per kernel name): loop: 4" in text
    assert B.name == da.from_array(a.copy(), chunks=250).name  # explain wrote nothing
    tree = str(ppto.explain(COMPILED["total"], da.from_array(a, chunks=100)))
    assert "dask: a tree: partial reductions per block of axis 0" in tree


def test_compile_with_chunks_distributes_numpy_arguments(client):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((300, 20))
    got = ppto.compile(softmax, chunks=100)(x)
    assert isinstance(got, da.Array) and got.chunks == ((100, 100, 100), (20,))
    np.testing.assert_allclose(got.compute(), softmax(x), rtol=1e-12)
    a = rng.standard_normal(500)
    A, B = a.copy(), a.copy()
    got = ppto.compile(diffusion, chunks=125)(A, B, 5)  # the NumPy arguments are written
    want_a, want_b = a.copy(), a.copy()
    diffusion(want_a, want_b, 5)
    np.testing.assert_allclose(A, want_a, rtol=1e-12)
    np.testing.assert_allclose(B, want_b, rtol=1e-12)
    np.testing.assert_allclose(got.compute(), want_a, rtol=1e-12)


def test_lazy_ops_on_dask_arrays_are_inputs_bound_to_them(client):
    """``ppto.sin(x)`` on a dask array (PPT206 before): the array is an input of the chain,
    bound to itself; the chain runs on the Dask target."""
    rng = np.random.default_rng(16)
    xv = rng.standard_normal((40, 30))
    x = da.from_array(xv, chunks=(10, 30))
    chain = ppto.sin(x) * ppto.tensor("s") + ppto.reduce_sum(x, axis=1, keepdims=True)
    got = chain.run(s=3.0)
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), np.sin(xv) * 3.0 + xv.sum(1, keepdims=True))


def test_the_task_function_pickles_by_reference():
    from pypto.emit import dask_runtime

    assert len(pickle.dumps(dask_runtime.run)) < 100
    assert len(pickle.dumps(dask_runtime.Args({"_s": 0, "_e": 10}))) < 200


def test_unknown_chunk_sizes_are_refused_by_name():
    x = da.from_array(np.arange(10.0), chunks=5)
    ragged = x[x > 3]  # chunk sizes unknown until computed
    with pytest.raises(ppto.PyptoError, match="'x'.*unknown chunk sizes") as e:
        COMPILED["softmax"](ragged)
    assert e.value.code == "PPT406"


# -- what the fuzzer's dask path found (benchmarks/fuzz_long.py --target dask) ------------------
def _twice(x):
    return np.concatenate([x, x])


def _gram(x):
    return x.T @ x


def _square(x):
    return x @ x


def _fixed_column(x):
    return x * x[:, -2, 0]


def _broadcast_row(x):
    return np.where(x > 0, x, x[1:-1][:1]).sum()


def _outer_sum(x):
    return (x * (x + x[:, None])).sum()


FOUND = [
    (_twice, (1,), (1,)),  # a concatenation along the chunk axis reads the input twice
    (_twice, (7,), (3,)),
    (_gram, (1, 2), (1, 1)),  # the product's second operand is the first one whole
    (_gram, (9, 5), (4, 2)),
    (_square, (4, 4), (2, 3)),
    (_fixed_column, (2, 5, 1), (1, 2, 1)),  # a fixed index along the chunk axis
    (_broadcast_row, (5, 1), (2, 1)),  # a broadcast row of a slice (a tree's prologue)
    (_outer_sum, (5,), (2,)),  # one input along two axes of the domain
]


@pytest.mark.parametrize("fn, shape, chunks", FOUND, ids=lambda p: getattr(p, "__name__", ""))
def test_fuzzer_findings(fn, shape, chunks):
    x = np.random.default_rng(11).standard_normal(shape)
    with dask.config.set(scheduler="sync"):
        got = ppto.compile(fn)(da.from_array(x, chunks=chunks)).compute()
    np.testing.assert_allclose(got, fn(x), rtol=1e-12)


# -- time loops: k steps per task where the body runs on slabs as on the whole array ------------
def _relax_t(u, T):  # the loop variable in the body
    for t in range(T):
        u[1:-1] = 0.5 * (u[:-2] + u[2:]) + 0.001 * t
    return u


def _pinned(u, T):  # a fixed row read every step: global information (step by step)
    for _ in range(T):
        u[1:] = 0.5 * (u[1:] + u[:-1]) + u[0]
    return u


def _by_length(u, T):  # the length used as a value (a slab's length would differ)
    for _ in range(T):
        u[1:-1] = (u[:-2] + u[2:]) / u.shape[0]
    return u


def _half(u, T):  # a statement over the first half (not relative to the ends)
    for _ in range(T):
        u[1 : u.shape[0] // 2] = 0.5 * (u[: u.shape[0] // 2 - 1] + u[2 : u.shape[0] // 2 + 1])
    return u


def _with_sum(u, T):  # a scalar written by the loop
    s = 0.0
    for _ in range(T):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
        s = s + u.sum()
    return u, s


def _wave(u_prev, u, c2, T):  # two carried arrays swapped each step, a whole coefficient
    for _ in range(T):
        u_next = 2.0 * u - u_prev
        u_next[1:-1] += c2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u_prev, u = u, u_next
    return u


TIME_LOOPS = [
    (_relax_t, True),
    (_pinned, False),
    (_by_length, False),
    (_half, False),
    (_with_sum, False),
]


@pytest.mark.parametrize("fn, blocked", TIME_LOOPS, ids=lambda p: getattr(p, "__name__", ""))
@pytest.mark.parametrize("chunk", [8, 50])
def test_time_loops_match_numpy_blocked_or_not(fn, blocked, chunk):
    u = np.random.default_rng(12).standard_normal(200)
    want = fn(u.copy(), 20)
    compiled = ppto.compile(fn)
    text = str(ppto.explain(compiled, da.from_array(u.copy(), chunks=chunk), 20))
    assert ("runs k steps per task" in text) is blocked, text
    with dask.config.set(scheduler="sync"):
        got = compiled(da.from_array(u.copy(), chunks=chunk), 20)
        got = dask.compute(got)[0]
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_time_loop_rounds_when_the_halo_outgrows_a_block():
    """Blocks of 8 rows, 2 rows of halo a step: 2 steps per round, 10 rounds of 25 tasks."""
    u = np.random.default_rng(13).standard_normal(200)
    a, b = u.copy(), u.copy()
    A, B = da.from_array(a.copy(), chunks=8), da.from_array(b.copy(), chunks=8)
    got = DIFFUSION(A, B, 20)
    assert _pypto_tasks(got) == {"loop": 250}
    diffusion(a, b, 20)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_array_equal(got.compute(), a)  # the same operations: the same bits
        np.testing.assert_array_equal(B.compute(), b)


def test_wave_equation_swapping_arrays():
    rng = np.random.default_rng(14)
    u0, u1 = rng.standard_normal(300), rng.standard_normal(300)
    compiled = ppto.compile(_wave)
    text = str(ppto.explain(compiled, da.from_array(u0, chunks=75), u1, 0.25, 30))
    assert "runs k steps per task" in text, text
    with dask.config.set(scheduler="sync"):
        got = compiled(da.from_array(u0, chunks=75), da.from_array(u1, chunks=75), 0.25, 30)
        np.testing.assert_allclose(got.compute(), _wave(u0, u1, 0.25, 30), rtol=1e-12)


def test_transpile_target_dask(tmp_path, client):
    """A module from ``pypto transpile --target dask`` runs NumPy arrays on its NumPy program
    and hands dask arrays to PyPTO's Dask target (the workers have pypto)."""
    from click.testing import CliRunner
    from helpers import import_file

    from pypto_cli.main import main

    src = tmp_path / "stencil.py"
    src.write_text(
        "import numpy as np\n\n\n"
        "# pypto: export jacobi(f64[n], f64[n], int)\n"
        "def jacobi(A, B, steps):\n"
        "    for _ in range(steps):\n"
        "        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])\n"
        "        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])\n"
        "    return A\n"
    )
    out = tmp_path / "out"
    done = CliRunner().invoke(main, ["transpile", str(src), "-o", str(out), "--target", "dask"])
    assert done.exit_code == 0, done.output
    text = (out / "stencil.py").read_text()
    assert "if _on_dask(A, B, steps):" in text
    module = import_file("stencil_dask", out / "stencil.py", out)
    a = np.random.default_rng(15).standard_normal(400)
    A, B = da.from_array(a.copy(), chunks=100), da.from_array(a.copy(), chunks=100)
    got = module.jacobi(A, B, 10)
    assert isinstance(got, da.Array)
    want_a, want_b = a.copy(), a.copy()
    module._jacobi_python(want_a, want_b, 10)
    np.testing.assert_array_equal(got.compute(), want_a)
    x, y = a.copy(), a.copy()
    module.jacobi(x, y, 10)  # NumPy arrays: the module's own NumPy program
    np.testing.assert_allclose(x, want_a, rtol=1e-12)


# -- what a review found ---------------------------------------------------------------------------
def _wide_stencil(u, T):  # a halo of 2 rows a step
    for _ in range(T):
        u[2:-2] = u[:-4] + u[4:] - u[2:-2]
    return u


@pytest.mark.parametrize("chunks", [1, 2, 3, ((1, 11, 11),), ((11, 11, 1),), ((10, 10, 3),)])
def test_time_loop_slabs_are_as_long_as_the_statements_need(chunks):
    """Blocks shorter than the statements' extents (u[:-4] on a 3-row slab wraps): the end
    slabs are widened into their neighbours."""
    u = np.arange(23.0) % 7
    want = _wide_stencil(u.copy(), 6)
    with dask.config.set(scheduler="sync"):
        got = ppto.compile(_wide_stencil)(da.from_array(u.copy(), chunks=chunks), 6).compute()
    np.testing.assert_array_equal(got, want)


def _written_twice(A, B):
    B[1:-1] = A[2:] + A[:-2]
    A[1:-1] = B[2:] + B[:-2]
    return A


def test_one_dask_array_as_two_written_arguments_is_refused():
    """As for NumPy arrays sharing memory (PPT110): one object passed twice; equal data in
    two objects (one dask name) are two arrays."""
    x = np.arange(10.0)
    X = da.from_array(x, chunks=3)
    with pytest.raises(ppto.PyptoError) as e:
        ppto.compile(_written_twice)(X, X)
    assert e.value.code == "PPT110"
    with pytest.raises(ppto.PyptoError) as e:
        ppto.compile(_written_twice, chunks=3)(x, x)
    assert e.value.code == "PPT110"
    A, B = da.from_array(x.copy(), chunks=3), da.from_array(x.copy(), chunks=3)
    assert A.name == B.name
    with dask.config.set(scheduler="sync"):
        got = ppto.compile(_written_twice)(A, B).compute()
    want_a, want_b = x.copy(), x.copy()
    np.testing.assert_array_equal(got, _written_twice(want_a, want_b))


def _tanh_epilogue(x, W):
    return np.tanh(x @ W) * 2.0 + x[:, :1]


@pytest.mark.parametrize("fn", [dense_relu, _tanh_epilogue, "product"])
def test_a_product_too_large_for_every_task_is_dask_matmul_then_the_epilogue(
    fn, monkeypatch, client
):
    """Over PANEL_BYTES (here: any), the second operand is not read whole by every task."""
    from pypto.emit import dask_blocks

    if fn == "product":
        fn = _product_only
    monkeypatch.setattr(dask_blocks, "PANEL_BYTES", 0)
    rng = np.random.default_rng(18)
    x, W, b = rng.standard_normal((60, 40)), rng.standard_normal((40, 30)), rng.standard_normal(30)
    args = (x, W, b) if fn is dense_relu else (x, W)
    lazy = [da.from_array(x, chunks=(15, 20)), da.from_array(W, chunks=(20, 15)), *args[2:]]
    got = ppto.compile(fn)(*lazy)
    assert any(k.startswith("matmul") for k in _keys(got))
    np.testing.assert_allclose(got.compute(), fn(*args), rtol=1e-10, atol=1e-12)


def _product_only(x, W):
    return x @ W


def test_sizes_the_values_decide_on_the_cluster(client):
    """``x[mask]`` and ``np.nonzero`` (tests/parse/data_sized_programs.py): what the selection
    reads is computed where its size is bound, the code after it tasks on the workers."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "parse"))
    try:
        import data_sized_programs as programs
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(2)
    for dtype in ("float32", "float64"):
        x = rng.standard_normal(60).astype(dtype)
        A = rng.standard_normal((12, 5)).astype(dtype)
        for fn, args, chunked in (
            (programs.sigma_clip, (x,), (da.from_array(x, chunks=15),)),
            (programs.active_rows, (A,), (da.from_array(A, chunks=(4, -1)),)),
            (programs.sparse_pairs, (A,), (da.from_array(A, chunks=(4, -1)),)),
        ):
            got = ppto.compile(fn)(*chunked)
            got = dask.compute(*got) if isinstance(got, tuple) else got
            for g, w in zip(got, fn(*args)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)
                assert np.shape(g) == np.shape(w)


def _library_on_chunks(A, rows, cols):
    best = np.argmax(A, axis=1)
    norms = np.linalg.norm(A, axis=0)
    c = np.cov(A, rowvar=False)
    vals = A[rows, cols]
    B = A.copy()
    B[rows, cols] = 0.0
    return best, norms, c, vals, B


def test_library_functions_and_index_arrays_on_the_cluster(client):
    """argmax, linalg.norm, cov (native composites) and a gather / scatter through index
    arrays (graph breaks) on chunked dask arrays, against NumPy."""
    rng = np.random.default_rng(4)
    for dtype in ("float32", "float64"):
        A = rng.standard_normal((12, 5)).astype(dtype)
        rows, cols = rng.integers(0, 12, 7), rng.integers(0, 5, 7)
        got = ppto.compile(_library_on_chunks)(da.from_array(A, chunks=(4, -1)), rows, cols)
        got = dask.compute(*got)
        for g, w in zip(got, _library_on_chunks(A, rows, cols)):
            assert np.asarray(g).dtype == w.dtype and np.shape(g) == np.shape(w)
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5 if dtype == "float32" else 1e-12)


def _gathers_on_chunks(x, idx, A, cols, labels):
    picked = np.take_along_axis(A, labels[:, None], axis=1)[:, 0]
    return np.exp(x[idx]) * 2.0, (A[:, cols] * 3.0).sum(axis=1) + picked


def test_a_gather_is_blocked_on_the_cluster(client):
    """The native gathers (ops/gathers.py) task per block: along the index array (the array
    they read whole in each task), and along rows of ``A[:, cols]`` and of a take_along_axis;
    NumPy's IndexError."""
    rng = np.random.default_rng(6)
    for dtype in ("float32", "float64"):
        x = rng.standard_normal(30).astype(dtype)
        idx = rng.integers(-30, 30, 64)
        A = rng.standard_normal((40, 6)).astype(dtype)
        cols, labels = np.array([5, -1, 0, 2]), rng.integers(-6, 6, 40)
        args = (x, da.from_array(idx, chunks=16), da.from_array(A, chunks=(10, -1)), cols)
        g, r = ppto.compile(_gathers_on_chunks)(*args, da.from_array(labels, chunks=10))
        assert _pypto_tasks(g) == {"k0": 4} and set(_pypto_tasks(r).values()) == {4}
        want = _gathers_on_chunks(x, idx, A, cols, labels)
        for got, w in zip(dask.compute(g, r), want):
            assert got.dtype == w.dtype and got.shape == w.shape
            np.testing.assert_allclose(got, w, rtol=1e-5 if dtype == "float32" else 1e-12)
    bad = idx.copy()
    bad[40] = 30
    with pytest.raises(IndexError):
        chunked = da.from_array(bad, chunks=16)
        dask.compute(*ppto.compile(_gathers_on_chunks)(x, chunked, A, cols, labels))
