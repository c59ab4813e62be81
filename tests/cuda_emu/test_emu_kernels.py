"""Hand-written CUDA kernels run by the CPU emulator, against NumPy, in every thread order."""

import functools
import time

import numpy as np
import pytest
from cuda_kernels import ALL

from pypto.testing.cuda_emu import EmulationError, EmuModule

ORDERS = ["forward", "reverse", "random"]
pytestmark = pytest.mark.usefixtures("gxx")  # conftest.py: skip or fail without g++


@functools.cache
def module(key: str) -> EmuModule:
    source, names = ALL[key]
    return EmuModule(source, names)


def kernel(key: str, name: str):
    return module(key).get_function(name)


@pytest.mark.parametrize("order", ORDERS)
def test_map_grid_stride(order):
    rng = np.random.default_rng(0)
    n = 100_003
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    kernel("basic", "map_fma")((40,), (128,), (a, b, out, np.int64(n)), order=order, seed=7)
    np.testing.assert_allclose(out, a * b + np.sin(a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_block_reduction_in_shared_memory(order):
    rng = np.random.default_rng(1)
    n, grid, block = 50_000, 16, 256
    x = rng.random(n, dtype=np.float32)
    partial = np.zeros(grid, np.float32)
    kernel("basic", "block_sum")((grid,), (block,), (x, partial, np.int64(n)), order=order)
    owner = (np.arange(n) % (grid * block)) // block  # the block whose grid-stride loop reads x[i]
    expect = np.array([x[owner == b].sum(dtype=np.float64) for b in range(grid)])
    np.testing.assert_allclose(partial, expect, rtol=1e-5)


@pytest.mark.parametrize("order", ORDERS)
def test_warp_shuffle_reductions(order):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(512)
    xor_out, down_out = np.zeros(512), np.zeros(16)
    kernel("basic", "warp_sums")((2,), (256,), (x, xor_out, down_out), order=order, seed=3)
    sums = x.reshape(16, 32).sum(axis=1)
    np.testing.assert_allclose(down_out, sums, rtol=1e-12)
    np.testing.assert_allclose(xor_out, np.repeat(sums, 32), rtol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
def test_shuffle_broadcast_ballot_and_width(order):
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 6, 256).astype(np.int32)
    bcast, seg_max = np.zeros(256, np.int32), np.zeros(256, np.int32)
    ballot = np.zeros(8, np.uint32)
    kernel("basic", "warp_misc")((2,), (128,), (x, bcast, ballot, seg_max), order=order)
    warps = x.reshape(8, 32)
    np.testing.assert_array_equal(bcast, np.repeat(warps[:, 3], 32))
    bits = (warps > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    np.testing.assert_array_equal(ballot, bits.sum(axis=1).astype(np.uint32))
    np.testing.assert_array_equal(seg_max, np.repeat(x.reshape(32, 8).max(axis=1), 8))


@pytest.mark.parametrize("order", ORDERS)
def test_votes_and_warp_reductions(order):
    rng = np.random.default_rng(13)
    x = rng.integers(-5, 6, 2 * 64).astype(np.int32)
    out = np.zeros((2, 64, 8), np.int32)
    kernel("basic", "votes")((2,), (64,), (x, out), order=order)
    blocks, warps = x.reshape(2, 64), x.reshape(2, 2, 32)
    lane = np.arange(16)
    segs = x.reshape(2, 64 // 16, 16)
    up = np.where(lane >= 3, np.roll(segs, 3, axis=-1), segs).reshape(2, 64)
    down = np.where(lane < 13, np.roll(segs, -3, axis=-1), segs).reshape(2, 64)
    columns = [
        np.repeat((blocks > 0).sum(axis=1), 64),
        np.repeat((blocks > -5).all(axis=1), 64),
        np.repeat((blocks == 5).any(axis=1), 64),
        np.repeat((warps == 5).any(axis=2), 32),
        np.repeat((warps > -5).all(axis=2), 32),
        np.repeat(warps.sum(axis=2), 32),
        up.ravel(),
        down.ravel(),
    ]
    for i, expect in enumerate(columns):
        np.testing.assert_array_equal(out[..., i].ravel(), np.ravel(expect), err_msg=f"o[{i}]")


def test_float4_loads():
    rng = np.random.default_rng(4)
    n4 = 1000
    x = rng.standard_normal(4 * n4, dtype=np.float32)
    y = np.zeros_like(x)
    kernel("basic", "scale4")((8,), (128,), (x, y, np.float32(3), np.int64(n4)))
    expect = (x * 3).reshape(-1, 4)
    expect[:, 3] += 1
    np.testing.assert_allclose(y, expect.ravel(), rtol=1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_dynamic_shared_memory(order):
    x = np.arange(3 * 64, dtype=np.float32)
    y, stale = np.zeros_like(x), np.zeros_like(x)
    k = kernel("basic", "dyn_reverse")
    k((3,), (64,), (x, y, stale), shared_mem=64 * 4, order=order)
    np.testing.assert_array_equal(y, x.reshape(3, 64)[:, ::-1].ravel())
    assert np.isnan(stale).all()  # refilled with 0xFF bytes at each block start


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_template_instantiations(dtype):
    rng = np.random.default_rng(5)
    n = 1000
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    expect = dtype(1.5) * x + 2 * y
    name = "axpy<float>" if dtype == np.float32 else "axpy<double>"
    kernel("templates", name)((4,), (256,), (dtype(1.5), x, y, np.int32(n)), order="random")
    np.testing.assert_allclose(y, expect, rtol=1e-6 if dtype == np.float32 else 1e-14)


def softmax_reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("block", [256, 1024])
def test_row_softmax(order, block):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((64, 1024), dtype=np.float32) * 4
    y = np.zeros_like(x)
    kernel("softmax", "softmax_rows")((64,), (block,), (x, y, np.int64(1024)), order=order)
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-9)


def test_row_softmax_is_fast():
    x = np.random.default_rng(7).standard_normal((64, 1024), dtype=np.float32)
    y = np.zeros_like(x)
    k = kernel("softmax", "softmax_rows")
    for isolate in (False, True):
        start = time.perf_counter()
        k((64,), (256,), (x, y, np.int64(1024)), isolate=isolate)
        assert time.perf_counter() - start < 1.0
    np.testing.assert_allclose(y, softmax_reference(x), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("order", ORDERS)
def test_scan_with_carry_across_blocks(order):
    rng = np.random.default_rng(8)
    n, block = 100_000, 512
    nblocks = -(-n // block)
    x = rng.integers(0, 4, n).astype(np.float32)  # integer sums stay exact in float32
    y = np.zeros(n, np.float32)
    totals, scanned, unused = (np.zeros(nblocks, np.float32) for _ in range(3))
    scan = kernel("scan", "scan_blocks")
    scan((nblocks,), (block,), (x, y, totals, np.int64(n)), order=order, seed=1)
    scan((1,), (block,), (totals, scanned, unused, np.int64(nblocks)), order=order, seed=2)
    kernel("scan", "add_carry")((nblocks,), (block,), (y, scanned, np.int64(n)), order=order)
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.float64))


def special_floats():
    rng = np.random.default_rng(9)
    f32 = np.float32
    special = [0.0, -0.0, 1.0, -2.5, 65504.0, 65519.0, 65520.0, 1e6, np.inf, -np.inf, np.nan]
    special += [2.0**-24, 2.0**-25, 1.5 * 2.0**-24, 2.0**-14, 2.0**-14 * (1 - 2.0**-11), 1e-30]
    special += [1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8]  # half/bf16 ties
    values = np.concatenate(
        [
            np.array(special, f32),
            -np.array(special, f32),
            (rng.standard_normal(300) * 10.0 ** rng.integers(-9, 9, 300)).astype(f32),
            rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32).view(f32),  # any bits
        ]
    )
    assert values.dtype == f32  # (converting signaling NaNs would raise)
    return values


def bf16_reference(x):
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), rounded)


@pytest.mark.parametrize("kind", ["half", "bf16"])
def test_half_and_bfloat16_conversions(kind):
    x = special_floats()
    n = len(x)
    out, back = np.zeros(n, np.uint16), np.zeros(n, np.float32)
    grid = (-(-n // 128),)
    if kind == "half":
        kernel("half", "to_half")(grid, (128,), (x, out.view(np.float16), back, np.int32(n)))
        nan = np.isnan(x)
        with np.errstate(over="ignore"):
            expect = x[~nan].astype(np.float16).view(np.uint16)
        np.testing.assert_array_equal(out[~nan], expect)
        assert (out[nan] == 0x7FFF).all()  # CUDA's canonical NaN
        np.testing.assert_array_equal(back, out.view(np.float16).astype(np.float32))
    else:
        kernel("half", "to_bf16")(grid, (128,), (x, out, back, np.int32(n)))
        np.testing.assert_array_equal(out, bf16_reference(x))
        np.testing.assert_array_equal(back, (out.astype(np.uint32) << 16).view(np.float32))


def test_half_arithmetic():
    rng = np.random.default_rng(10)
    x = rng.standard_normal(500).astype(np.float16)
    y = rng.standard_normal(500).astype(np.float16)
    expect = (np.float32(0.5) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    kernel("half", "half_axpy")((4,), (128,), (np.float32(0.5), x, y, np.int32(500)))
    np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("order", ORDERS)
def test_atomics(order):
    rng = np.random.default_rng(11)
    n, nbins = 10_000, 37
    bins = rng.integers(0, nbins, n).astype(np.int32)
    w = rng.random(n, dtype=np.float32)
    hist, counts = np.zeros(nbins, np.float32), np.zeros(nbins, np.uint32)
    max_bin, max_w = np.full(1, -1, np.int32), np.full(1, -1, np.float32)
    args = (bins, w, hist, counts, max_bin, max_w, np.int64(n), np.int32(nbins))
    kernel("atomics", "histogram")((4,), (128,), args, order=order, seed=5)
    np.testing.assert_allclose(hist, np.bincount(bins, w, nbins), rtol=1e-4)
    np.testing.assert_array_equal(counts, np.bincount(bins, minlength=nbins))
    assert max_bin[0] == bins.max() and max_w[0] == w.max()


def test_missing_syncthreads_gives_a_wrong_answer_in_reverse_order():
    x = np.random.default_rng(12).standard_normal(4 * 256).astype(np.float32)
    expect = (x.reshape(4, 256) - x.reshape(4, 256).mean(axis=1, keepdims=True)).ravel()
    for order in ORDERS:
        y = np.zeros_like(x)
        kernel("center", "center<true>")((4,), (256,), (x, y), order=order)
        np.testing.assert_allclose(y, expect, rtol=1e-5, atol=1e-5)
    y = np.zeros_like(x)
    kernel("center", "center<false>")((4,), (256,), (x, y), order="reverse")
    assert not np.allclose(y, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("isolate", [True, False])
@pytest.mark.parametrize(("order", "block"), [("forward", "(0,0,0)"), ("reverse", "(3,0,0)")])
def test_barrier_divergence_is_reported(order, block, isolate):
    k = kernel("faults", "early_exit")
    start = time.perf_counter()
    with pytest.raises(EmulationError) as info:
        k((4,), (256,), (np.zeros(256, np.float32),), order=order, isolate=isolate)
    assert str(info.value) == (
        f"barrier divergence in kernel 'early_exit' block {block}: 192 of 256 threads reached "
        "__syncthreads(); the others exited"
    )
    assert time.perf_counter() - start < 5


def test_warp_divergence_is_reported():
    k = kernel("faults", "half_warp_shuffle")
    with pytest.raises(EmulationError, match=r"warp divergence in kernel 'half_warp_shuffle'") as e:
        k((1,), (64,), (np.zeros(64, np.float32),))
    assert "16 lanes (0x0000ffff) wait at __shfl_xor_sync with mask 0xffffffff" in str(e.value)


def test_crash_fails_the_launch_not_the_process():
    k = kernel("faults", "store_to")
    with pytest.raises(EmulationError, match=r"kernel crashed: signal SIGSEGV.*'store_to'"):
        k((1,), (32,), (None,))
    y = np.zeros(32, np.float32)
    k((1,), (32,), (y,))  # this process lives on, and the next launch works
    assert (y == 1).all()


def test_dynamic_shared_memory_overrun_crashes():
    x = np.arange(64, dtype=np.float32)
    args = (x, np.zeros_like(x), np.zeros_like(x))
    with pytest.raises(EmulationError, match="SIGSEGV"):  # 32 floats given, 64 used
        kernel("basic", "dyn_reverse")((1,), (64,), args, shared_mem=32 * 4)


def test_endless_kernel_times_out():
    with pytest.raises(EmulationError, match=r"did not finish within 0.3 s"):
        kernel("faults", "spin")((1,), (32,), (np.zeros(1, np.int32),), timeout=0.3)
