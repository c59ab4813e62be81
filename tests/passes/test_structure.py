"""Structure tests (like tinygrad's schedule tests): how many kernels, of which kind, in which
parallel levels, which buffers, how many bytes, for the design document's cases.

Each case is also run (through the Plan, its memory checked, see tests/conftest.py) and compared
with NumPy running the original code, in float32 and float64. Bytes are the Plan's counts
evaluated at the test's sizes and compared with the ideal computed here from the arrays
themselves: every input read once, every output written once, every intermediate written once
and read once per kernel that reads it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto
from pypto.passes.memory import peak_bytes
from pypto.symbolic import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "lazy_api"))

FLOATS = [np.float32, np.float64]


def rtol(dtype):
    return 2e-5 if np.dtype(dtype) == np.float32 else 1e-12


def only_plan(explanation):
    assert len(explanation.plans) == 1, [w for w, _ in explanation.plans]
    return explanation.plans[0][1]


def moved(kernel, env):
    return evaluate(kernel.bytes_read, env) + evaluate(kernel.bytes_written, env)


def check_function(fn, *args, rtol_=None):
    """ppto.compile(fn) matches fn run by NumPy; returns (plan, env)."""
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = ppto.compile(fn)(*args)
    dtype = np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=rtol_ or rtol(dtype), atol=1e-12)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    e = ppto.explain(fn, *args)
    return only_plan(e), e.env


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# -- maps -----------------------------------------------------------------------------------------
def sin_cos(x, y):
    return np.sin(x) + np.cos(y)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sin_plus_cos_is_one_kernel_moving_each_array_once(dtype):
    rng = np.random.default_rng(0)
    x, y = rand(rng, (37, 23), dtype), rand(rng, (37, 23), dtype)
    plan, env = check_function(sin_cos, x, y)
    (k,) = plan.kernels
    assert k.kind == "elementwise" and sorted(k.ops) == ["add", "cos", "sin"]
    assert moved(k, env) == x.nbytes + y.nbytes + x.nbytes  # two inputs read, one output
    assert evaluate(k.unfused_bytes, env) == 7 * x.nbytes  # sin, cos, add one call each
    assert plan.buffers[0].role == "output" and len(plan.buffers) == 1


# -- row-wise -------------------------------------------------------------------------------------
def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def log_softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def variance_rows(x):
    return np.var(x, axis=1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 40), (3, 4, 33)])
def test_softmax_is_one_rowwise_kernel(dtype, shape):
    x = rand(np.random.default_rng(1), shape, dtype)
    plan, env = check_function(softmax, x)
    (k,) = plan.kernels
    assert k.kind == "rowwise" and k.reduced == (len(shape) - 1,)
    assert sorted(k.ops) == sorted(["max", "subtract", "exp", "sum", "divide"])
    assert moved(k, env) == 2 * x.nbytes
    assert k.chunking is not None and k.chunking.axis != len(shape) - 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_is_one_kernel(dtype):
    rng = np.random.default_rng(2)
    x, gamma, beta = rand(rng, (6, 48), dtype), rand(rng, 48, dtype), rand(rng, 48, dtype)
    plan, env = check_function(layer_norm, x, gamma, beta)
    (k,) = plan.kernels
    assert k.kind == "rowwise"
    assert moved(k, env) == x.nbytes * 2 + gamma.nbytes + beta.nbytes


@pytest.mark.parametrize("fn", [log_softmax, variance_rows], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", FLOATS)
def test_log_softmax_and_variance_are_one_kernel(fn, dtype):
    x = rand(np.random.default_rng(3), (7, 30), dtype)
    plan, env = check_function(fn, x)
    (k,) = plan.kernels
    assert k.kind in ("rowwise", "reduction")
    out = fn(x)
    assert moved(k, env) == x.nbytes + out.nbytes


# -- design document 3.2: reduce, then a map against a transposed input ---------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_seed_3_2_chain_is_two_kernels_without_a_transpose_copy(dtype):
    import seed_3_2_composition as seed

    rng = np.random.default_rng(4)
    x, y = rand(rng, (24, 16), dtype), rand(rng, (24, 11), dtype)
    got = seed.op_chain.run(x=x, y=y)
    np.testing.assert_allclose(got, seed.numpy_version(x, y), rtol=rtol(dtype))
    e = ppto.explain(seed.op_chain, x=x, y=y)
    plan, env = only_plan(e), e.env
    kinds = [k.kind for k in plan.kernels]
    assert kinds == ["reduction", "elementwise"]
    reduce_k, map_k = plan.kernels
    assert "transpose" in map_k.index_maps and "transpose" not in map_k.ops
    assert not any(k.kind == "copy" for k in plan.kernels)
    # no buffer of y's size other than the result: the transpose is read through, not copied
    (temp,) = [b for b in plan.buffers if b.role == "temp"]
    assert evaluate(temp.nbytes, env) == x.shape[0] * x.itemsize
    assert moved(reduce_k, env) == x.nbytes + temp.value.type.dtype.itemsize * x.shape[0]
    assert moved(map_k, env) == x.shape[0] * x.itemsize + y.nbytes + got.nbytes


# -- design document 4.1: two independent products, then their sum ------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_seed_4_1_products_share_a_level_and_the_add_is_an_epilogue(dtype):
    import seed_4_1_parallel_products as seed

    rng = np.random.default_rng(5)
    data = {n: rand(rng, (9, 13) if n in "AC" else (13, 7), dtype) for n in "ABCD"}
    got = seed.final_op.run(**data)
    want = data["A"] @ data["B"] + data["C"] @ data["D"]
    np.testing.assert_allclose(got, want, rtol=rtol(dtype), atol=1e-12)
    plan = only_plan(ppto.explain(seed.final_op, **data))
    assert [k.kind for k in plan.kernels] == ["contraction", "contraction"]
    assert len(plan.levels) == 1 and sorted(plan.levels[0]) == [0, 1]
    (epilogue,) = [k for k in plan.kernels if "add" in k.ops]
    other = next(k for k in plan.kernels if k is not epilogue)
    assert epilogue.late_inputs == other.outputs  # only the add waits for the other product


# -- design document 5.2 attention, and the transformer block ------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_seed_5_2_attention_is_one_kernel_without_the_score_matrix(dtype):
    import seed_5_2_attention as seed

    rng = np.random.default_rng(6)
    q, k, v = (rand(rng, (2, 96, seed.head_dim), dtype) for _ in range(3))
    got = seed.attention_op.run(Q=q, K=k, V=v)
    # values near zero: an absolute tolerance too (the weights sum to 1 and |v| is about 1, so
    # rounding errors scale with max|v|, not with each result)
    atol = rtol(dtype) * 10 * float(np.abs(v).max())
    np.testing.assert_allclose(got, seed.numpy_version(q, k, v), rtol=rtol(dtype) * 10, atol=atol)
    e = ppto.explain(seed.attention_op, Q=q, K=k, V=v)
    plan = only_plan(e)
    (kern,) = plan.kernels
    assert kern.kind == "attention"
    score_bytes = 2 * 96 * 96 * np.dtype(dtype).itemsize
    assert all(evaluate(b.nbytes, e.env) < score_bytes for b in plan.buffers)
    assert peak_bytes(plan, e.env) == q.nbytes * 4  # q, k, v and the result


def transformer_block(x, Q, K, V, mask, gamma, beta):
    s = (Q @ K.transpose(0, 2, 1)) * (1 / math.sqrt(Q.shape[-1])) + mask
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    r = x + (e / e.sum(axis=-1, keepdims=True)) @ V
    mu = r.mean(axis=-1, keepdims=True)
    var = ((r - mu) ** 2).mean(axis=-1, keepdims=True)
    return (r - mu) / np.sqrt(var + 1e-5) * gamma + beta


@pytest.mark.parametrize("dtype", FLOATS)
def test_transformer_block_is_an_attention_and_a_layer_norm_kernel(dtype):
    rng = np.random.default_rng(7)
    b, n, d = 2, 24, 16
    x, q, k, v = (rand(rng, (b, n, d), dtype) for _ in range(4))
    mask = np.triu(np.full((n, n), -1e4), 1).astype(dtype)
    gamma, beta = rand(rng, d, dtype), rand(rng, d, dtype)
    plan, env = check_function(
        transformer_block, x, q, k, v, mask, gamma, beta, rtol_=rtol(dtype) * 10
    )
    assert [k.kind for k in plan.kernels] == ["attention", "rowwise"]
    _, norm = plan.kernels
    assert "add" in norm.ops and norm.ops.count("mean") == 2  # the residual add joined the norm
    score = b * n * n * np.dtype(dtype).itemsize
    assert all(evaluate(buf.nbytes, env) < score for buf in plan.buffers)
    assert moved(norm, env) == x.nbytes * 3 + gamma.nbytes + beta.nbytes  # x, attention, out


# -- design document 5.1 diffusion with gradient, stencils ----------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_seed_5_1_diffusion_is_one_kernel(dtype):
    import seed_5_1_diffusion as seed

    rng = np.random.default_rng(8)
    u, kappa = rand(rng, (19, 23), dtype), rand(rng, (19, 23), dtype)
    got = seed.diffusion_op.run(u=u, kappa=kappa)
    np.testing.assert_allclose(got, seed.numpy_version(u, kappa), rtol=rtol(dtype), atol=1e-12)
    e = ppto.explain(seed.diffusion_op, u=u, kappa=kappa)
    (k,) = only_plan(e).kernels
    assert k.kind == "elementwise" and "concatenate" in k.index_maps
    assert moved(k, e.env) == u.nbytes * 3  # u and kappa read once, the result written once
    assert k.chunking is not None and k.chunking.axis == 0


def five_point(u):
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]


@pytest.mark.parametrize("dtype", FLOATS)
def test_stencil_is_one_kernel_reading_its_input_once_with_a_halo(dtype):
    u = rand(np.random.default_rng(9), (17, 21), dtype)
    plan, env = check_function(five_point, u)
    (k,) = plan.kernels
    assert k.kind == "elementwise" and k.index_maps.count("getitem") == 5
    assert moved(k, env) == u.nbytes + five_point(u).nbytes
    assert k.chunking.axis == 0 and k.chunking.halo == (("u", 0, 2),)


# -- scans ----------------------------------------------------------------------------------------
def cumsum_map(x):
    return np.cumsum(np.abs(x), axis=0) * 0.5 + 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_scan_fuses_prologue_and_epilogue_and_chunks_across(dtype):
    x = rand(np.random.default_rng(10), (12, 9), dtype)
    plan, env = check_function(cumsum_map, x)
    (k,) = plan.kernels
    assert k.kind == "scan" and k.scan_axis == 0
    assert moved(k, env) == 2 * x.nbytes
    assert k.chunking.axis == 1  # never along the scanned axis


# -- memory planning ------------------------------------------------------------------------------
def twelve_ops(x, y):
    """12 NumPy ops; ``h`` is read broadcast, so it is materialized (the forced middle)."""
    h = np.tanh(np.sin(x) * 2.0 + 1.0) - 0.5  # 5 ops on x (n, 1)
    return np.sqrt(np.abs(np.exp(h * y) - y) + 1.0) * 3.0  # 7 ops on (n, m)


@pytest.mark.parametrize("dtype", FLOATS)
def test_twelve_op_chain_peak_is_inputs_outputs_and_one_intermediate(dtype):
    rng = np.random.default_rng(11)
    x, y = rand(rng, (64, 1), dtype), rand(rng, (64, 50), dtype)
    plan, env = check_function(twelve_ops, x, y)
    assert len(plan.kernels) == 2
    temps = [b for b in plan.buffers if b.role == "temp"]
    assert len(temps) == 1 and evaluate(temps[0].nbytes, env) == x.nbytes
    out = twelve_ops(x, y)
    assert peak_bytes(plan, env) <= x.nbytes + y.nbytes + out.nbytes + x.nbytes


def alternating(x):
    """Reductions along alternating axes: each stage is a kernel of its own."""
    a = np.exp(x)
    b = a - a.sum(axis=0)  # column sums
    c = b * b.max(axis=1, keepdims=True)  # row maxima
    d = c - c.mean(axis=0)  # column means
    return d / d.sum(axis=1, keepdims=True)  # row sums


@pytest.mark.parametrize("dtype", FLOATS)
def test_dead_buffers_give_their_memory_to_later_ones(dtype):
    x = rand(np.random.default_rng(12), (30, 20), dtype) * 0.1
    plan, env = check_function(alternating, x)
    assert len(plan.kernels) >= 4
    temps = [b for b in plan.buffers if b.role == "temp"]
    memories = {plan.memory[b.name] for b in temps}
    assert len(temps) > len(memories)  # some buffer lives in a dead one's memory
    by_name = {b.name: b for b in plan.buffers}
    for b in temps:
        if b.reuses:  # same size, and the previous holder's last reader ran before
            prior = by_name[b.reuses]
            assert evaluate(prior.nbytes, env) == evaluate(b.nbytes, env)
            assert plan.kernels[prior.last].level < plan.kernels[b.first].level
    no_reuse = sum(evaluate(b.nbytes, env) for b in plan.buffers) + x.nbytes
    assert peak_bytes(plan, env) < no_reuse


# -- slice assignment: NumPy semantics, in place when safe ----------------------------------------
def shift_in_place(x):
    a = x + 1.0
    a[1:] = a[:-1] * 2.0  # reads what it overwrites, at another offset
    return a


def same_region(x):
    a = x + 1.0
    a[1:-1] = a[1:-1] * 2.0  # reads exactly what it overwrites
    return a


def other_source(x, y):
    a = x + 1.0
    a[1:] = y[1:] * 2.0
    return a


@pytest.mark.parametrize("dtype", FLOATS)
def test_store_reading_what_it_overwrites_elsewhere_is_not_in_place(dtype):
    x = rand(np.random.default_rng(13), 25, dtype)
    plan, _ = check_function(shift_in_place, x)
    (store_k,) = [k for k in plan.kernels if k.stores]
    (s,) = store_k.stores
    assert not s.inplace and "other positions" in store_k.hazards[id(s.out)]


@pytest.mark.parametrize("fn", [same_region, other_source], ids=lambda f: f.__name__)
def test_store_in_place_when_it_is_safe(fn):
    rng = np.random.default_rng(14)
    args = [rand(rng, 25, np.float64) for _ in range(fn.__code__.co_argcount)]
    plan, env = check_function(fn, *args)
    (store_k,) = [k for k in plan.kernels if k.stores]
    (s,) = store_k.stores
    assert s.inplace and not store_k.hazards
    # in place: the region is written, the rest of the array is neither read nor copied
    region_bytes = (23 if fn is same_region else 24) * 8
    assert evaluate(store_k.bytes_written, env) == region_bytes


# -- chunking decisions ---------------------------------------------------------------------------
def total(x):
    return np.sum(np.exp(x))


def product_epilogue(a, b, bias):
    return np.maximum(a @ b + bias, 0.0)


def test_chunking_never_splits_reduced_axes_or_product_columns():
    rng = np.random.default_rng(15)
    plan, _ = check_function(total, rand(rng, (8, 8), np.float64))
    assert plan.kernels[0].chunking is None  # every axis is reduced
    plan, _ = check_function(
        product_epilogue,
        rand(rng, (6, 5), np.float64),
        rand(rng, (5, 4), np.float64),
        rand(rng, 4, np.float64),
    )
    (k,) = plan.kernels
    assert k.kind == "contraction" and {"add", "maximum"} <= set(k.ops)
    assert k.chunking.axis == 0


def test_block_size_follows_the_cache_budget():
    from pypto.passes.chunk import choose

    x = rand(np.random.default_rng(16), (4096, 512), np.float32)
    plan, env = check_function(softmax, x)
    (k,) = plan.kernels
    c = choose(k, 1 << 20, plan.names, plan.same)  # the default budget (the tests use less)
    rows = evaluate(c.block, env)
    # about 1 MiB of the kernel's full-shape values per block: whole rows, more than one block
    assert 1 <= rows < 4096 and rows * 512 * 4 <= c.budget
