"""The fused attention kernel (pypto/emit/cuda_attention.py) run by the CPU emulator against a
float64 NumPy reference, in several thread orders, and compiled by NVRTC for sm_90.

Errors are measured against the output's scale: |out - ref| <= tol * (|ref| + max|v|) (the output
is a convex combination of v's rows). Bounds: float32 1e-5, float64 1e-10, __half / bf16 inputs
(float accumulation, float32 output) 1e-5 — the reference is computed from the same rounded
inputs, so only the float accumulation errs (measured: at most about 4e-6 for float and 5e-15 for
double); with a __half / bf16 output, its rounding: 2^-11 / 2^-8.
"""

import functools

import numpy as np
import pytest

from pypto.emit import cuda_attention as ca
from pypto.testing.cuda_emu import EmuModule
from pypto.testing.nvrtc import compile_cuda

ORDERS = ["forward", "reverse"]
NEG_INF = -np.inf

# (T, M, A, O) instantiation families: name -> C types
FAMILIES = {
    "float": ("float", "float", "float", "float"),
    "double": ("double", "double", "double", "double"),
    "half": ("__half", "__half", "float", "float"),
    "bf16": ("__nv_bfloat16", "__nv_bfloat16", "float", "float"),
    "half_out": ("__half", "float", "float", "__half"),
    "bf16_out": ("__nv_bfloat16", "float", "float", "__nv_bfloat16"),
}
EXTRA = {"double_to_float": ("double", "double", "double", "float")}  # NVRTC only
# bounds on |out - ref| / (|ref| + max|v|); a half / bf16 output adds its rounding
TOL = {"float": 1e-5, "double": 1e-10, "half": 1e-5, "bf16": 1e-5}
TOL |= {"half_out": 2.0**-11, "bf16_out": 2.0**-8}


@functools.cache
def kernel(family: str):
    names = tuple(ca.name_expression(*types) for types in FAMILIES.values())
    return EmuModule(ca.SOURCE, names).get_function(ca.name_expression(*FAMILIES[family]))


# ---- arrays of each C type, and the float64 values they hold ------------------------------------
NUMPY_TYPES = {"float": np.float32, "double": np.float64, "__half": np.float16}


def to_device(x: np.ndarray, ctype: str) -> np.ndarray:
    """x (float64) as an array of the C type: float16 for __half; for __nv_bfloat16, uint16 holding
    the top 16 bits of the float32 values."""
    if ctype in NUMPY_TYPES:
        return x.astype(NUMPY_TYPES[ctype])
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def held(x: np.ndarray) -> np.ndarray:
    """The float64 values an array from `to_device` (or a kernel output) holds."""
    if x.dtype == np.uint16:  # __nv_bfloat16
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def reference(q, k, v, mask, scale, scale_op):
    """softmax(op(q @ k^T, scale) + mask) @ v in float64, NumPy's way (max subtracted)."""
    s = q @ k.transpose(0, 2, 1)
    if scale_op == 1:
        s = s * scale
    elif scale_op == 2:
        s = s / scale
    if mask is not None:
        s = s + mask
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)) @ v


def mask_of(kind: str, B: int, Lq: int, Lk: int, rng) -> np.ndarray | None:
    """A mask whose broadcast to (B, Lq, Lk) the kernel reads through strides."""
    shapes = {"full": (Lq, Lk), "row": (1, Lk), "column": (Lq, 1), "batch": (B, Lq, Lk)}
    return rng.standard_normal(shapes[kind]) if kind in shapes else None


def run(family, q, k, v, mask=None, scale=0.125, scale_op=1, order="forward", seed=0):
    """Launch the family's kernel on q, k, v (float64 arrays, converted to its types) and mask;
    return (out, the float64 reference from the values the device arrays hold, those of v)."""
    T, M, A, O = FAMILIES[family]  # noqa: E741
    B, Lq, D = q.shape
    Lk, Dv = k.shape[1], v.shape[2]
    dq, dk, dv = (to_device(x, T) for x in (q, k, v))
    acc = NUMPY_TYPES[A]
    out = to_device(np.zeros((B, Lq, Dv)), O)
    if mask is None:
        dmask, strides, hmask = None, (0, 0, 0), None
    else:
        dmask = to_device(np.ascontiguousarray(mask), M)
        full = np.broadcast_to(dmask.reshape((1,) * (3 - dmask.ndim) + dmask.shape), (B, Lq, Lk))
        strides = tuple(s // dmask.itemsize for s in full.strides)
        hmask = held(full)
    grid, block, smem = ca.launch(B, Lq, Lk, D, Dv, np.dtype(acc).itemsize)
    args = (dq, dk, dv, dmask, out, *map(np.int64, (B, Lq, Lk, D, Dv, *strides)))
    args += (acc(scale), np.int32(scale_op))
    kernel(family)(grid, block, args, shared_mem=smem, order=order, seed=seed)
    ref = reference(held(dq), held(dk), held(dv), hmask, scale, scale_op)
    return held(out), ref, held(dv)


def check(out, ref, v, tol):
    bound = tol * (np.abs(ref) + np.nanmax(np.abs(v)))
    err = np.abs(out - ref)
    assert np.array_equal(np.isnan(out), np.isnan(ref)), "NaN where NumPy has none, or missing"
    finite = ~np.isnan(ref)
    assert (err[finite] <= bound[finite]).all(), f"max error {err[finite].max():.3g}"


def inputs(B, Lq, Lk, D, Dv, seed=0):
    rng = np.random.default_rng(seed)
    return rng, *(rng.standard_normal(s) for s in ((B, Lq, D), (B, Lk, D), (B, Lk, Dv)))


# (B, Lq, Lk, D, Dv): Lk past a tile and not a multiple of it, odd D/Dv, Lq past a row tile,
# several tiles, Lk = Lq = D = 1, D past the staged limit, Dv past one pass, the largest staged D
SHAPES = [
    (2, 5, 300, 65, 33),
    (1, 1, 1, 1, 1),
    (3, 9, 128, 3, 7),
    (1, 3, 700, 16, 5),
    (2, 3, 40, 300, 5),
    (1, 2, 50, 8, 300),
    (1, 4, 257, 256, 256),
]


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("family", ["float", "double"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shapes(shape, family, order):
    B, Lq, Lk, D, _ = shape
    rng, q, k, v = inputs(*shape)
    mask = mask_of("full", B, Lq, Lk, rng)
    out, ref, hv = run(family, q, k, v, mask, scale=1 / np.sqrt(D), order=order)
    check(out, ref, hv, TOL[family])


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("family", ["half", "bf16", "half_out", "bf16_out"])
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[2], SHAPES[4]], ids=["a", "b", "bigD"])
def test_half_and_bfloat16_inputs(shape, family, order):
    B, Lq, Lk, D, _ = shape
    rng, q, k, v = inputs(*shape, seed=1)
    mask = mask_of("batch", B, Lq, Lk, rng)
    out, ref, hv = run(family, q, k, v, mask, scale=1 / np.sqrt(D), order=order)
    check(out, ref, hv, TOL[family])


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("scale_op", [0, 1, 2])
@pytest.mark.parametrize("family", ["float", "double"])
def test_scale_ops(family, scale_op, order):
    _, q, k, v = inputs(2, 3, 150, 7, 9, seed=2)
    out, ref, hv = run(family, q * 0.3, k, v, None, scale=1.7, scale_op=scale_op, order=order)
    check(out, ref, hv, TOL[family])


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("kind", ["none", "full", "row", "column", "batch"])
def test_masks(kind, order):
    B, Lq, Lk = 2, 10, 260
    rng, q, k, v = inputs(B, Lq, Lk, 5, 6, seed=3)
    mask = mask_of(kind, B, Lq, Lk, rng)
    out, ref, hv = run("float", q, k, v, mask, order=order)
    check(out, ref, hv, TOL["float"])


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("family", ["float", "half"])
def test_random_thread_order(family, seed):
    B, Lq, Lk, D, Dv = 2, 9, 300, 33, 65
    rng, q, k, v = inputs(B, Lq, Lk, D, Dv, seed=seed)
    mask = mask_of("full", B, Lq, Lk, rng)
    out, ref, hv = run(family, q, k, v, mask, order="random", seed=seed)
    check(out, ref, hv, TOL[family])


def special_mask(Lq, Lk):
    """Rows of -inf: all (-> NaN), all but the last tile (-> finite), every other key, all but one
    key; a +inf score (-> NaN: inf - inf), a NaN mask entry, a NaN among a tile of -inf (-> NaN:
    the running max must keep NaN)."""
    mask = np.zeros((Lq, Lk))
    mask[0, :] = NEG_INF
    mask[1, : ca.KEYS * 2] = NEG_INF
    mask[2, ::2] = NEG_INF
    mask[3, :] = NEG_INF
    mask[3, Lk - 1] = 0.0
    mask[4, 7] = np.inf
    mask[5, ca.KEYS + 3] = np.nan
    mask[6, : ca.KEYS] = NEG_INF
    mask[6, 5] = np.nan
    return mask


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("order", ["forward", "reverse", "random"])
@pytest.mark.parametrize("family", ["float", "double", "half"])
def test_infinite_and_nan_masks(family, order):
    B, Lq, Lk, D, Dv = 2, 9, 300, 4, 3
    _, q, k, v = inputs(B, Lq, Lk, D, Dv, seed=4)
    out, ref, hv = run(family, q, k, v, special_mask(Lq, Lk), order=order)
    assert np.isnan(ref[:, [0, 4, 5, 6]]).all() and not np.isnan(ref[:, [1, 2, 3, 7, 8]]).any()
    check(out, ref, hv, TOL[family])
    np.testing.assert_array_equal(out[:, 3], hv[:, -1])  # one key left: weight 1


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("order", ORDERS)
def test_masked_keys_get_exactly_zero_weight(order):
    """Keys masked -inf in every row carry huge values: any weight on them would show."""
    B, Lq, Lk = 1, 6, 200
    rng, q, k, v = inputs(B, Lq, Lk, 8, 4, seed=5)
    masked = rng.random(Lk) < 0.3
    v[:, masked] = 1e30
    mask = np.where(masked, NEG_INF, 0.0)[None, :]
    out, ref, hv = run("float", q, k, v, mask, order=order)
    assert np.abs(out).max() < 10
    check(out, ref, hv, TOL["float"])


@pytest.mark.usefixtures("gxx")
@pytest.mark.parametrize("where", ["q", "k", "v"])
def test_nan_inputs_propagate(where):
    B, Lq, Lk, D, Dv = 1, 4, 200, 3, 5
    _, q, k, v = inputs(B, Lq, Lk, D, Dv, seed=6)
    {"q": q, "k": k, "v": v}[where][0, 1, 2] = np.nan  # q: row 1; k: key 1, all rows; v: column 2
    out, ref, hv = run("float", q, k, v, None, order="reverse")
    assert np.isnan(ref).any()
    check(out, ref, hv, TOL["float"])


@pytest.mark.usefixtures("nvrtc_ok")
def test_source_compiles_with_nvrtc_for_sm90():
    names = tuple(ca.name_expression(*t) for t in (*FAMILIES.values(), *EXTRA.values()))
    result = compile_cuda(ca.SOURCE, name_expressions=names, arch="sm_90")
    assert result.cubin.startswith(b"\x7fELF")
    assert set(result.lowered) == set(names)
    assert result.log == ""


def test_name_expression():
    assert ca.name_expression("float", "float", "float", "float") == (
        "ppto_attention<float, float, float, float>"
    )
    assert ca.name_expression("__half", "__nv_bfloat16", "float", "double") == (
        "ppto_attention<__half, __nv_bfloat16, float, double>"
    )
    with pytest.raises(ValueError, match="A must be one of"):
        ca.name_expression("float", "float", "__half", "float")
    with pytest.raises(ValueError, match="T must be one of"):
        ca.name_expression("int", "float", "float", "float")


def test_launch_configuration():
    assert ca.launch(3, 17, 1000, 64, 64, 4) == ((3 * 3,), (ca.THREADS,), 8 * (4 + 128 + 64) * 4)
    assert ca.launch(1, 1, 1, 1, 1, 8)[0] == (1,)
    for D in range(1, 257):
        for itemsize in (4, 8):
            assert ca.launch(4, 100, 5000, D, 256, itemsize)[2] < 48 * 1024
    assert ca.launch(1, 8, 8, 10_000, 8, 8)[2] == 8 * (4 + 128) * 8  # q read from global memory
    with pytest.raises(ValueError, match="grid limit"):
        ca.launch(2**30, 100, 1, 1, 1, 4)
