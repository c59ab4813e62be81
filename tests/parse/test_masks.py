"""Boolean-mask assignment (parse/masks.py): ``a[mask] = v`` and ``a[mask] op= v`` as a where and
a store, against NumPy (values, dtypes, writes into arguments, NumPy's errors), on the NumPy
target and the CUDA target (emulator)."""

import numpy as np
import pytest
from helpers import assert_same, cuda_emulator, real_code

import pypto as ppto


def clamp_negative(a):
    a[a < 0] = 0
    return a


def rows_to_vector(x, row):
    y = x.copy()
    y[x.sum(axis=1) > 0] = row
    return y


def bump_above(a, t):
    a[a > t] += 1.5
    return a


def cap_by_other(a, b):
    a[b > 0.5] = -1.0
    a[np.isnan(a)] = 0.0
    return a * 2


def set_300(a):
    a[a > 1] = 300  # NumPy's OverflowError for uint8
    return a


def copy_selected(a, b):
    m = b > a
    a[m] = b[m]
    c = a.copy()
    c[a < 0] = (2 * b)[a < 0]
    return a + c


def scale_where(a, m):
    a[m] *= 3
    return a


def mandelbrot(c_re, c_im, maxiter):
    """The escape-time count with a mask per iteration (NumPy style)."""
    zr = np.zeros_like(c_re)
    zi = np.zeros_like(c_im)
    n = np.zeros(c_re.shape, dtype=np.int64)
    for _ in range(maxiter):
        inside = zr * zr + zi * zi <= 4.0
        zr, zi = (
            np.where(inside, zr * zr - zi * zi + c_re, zr),
            np.where(inside, 2 * zr * zi + c_im, zi),
        )
        n[inside] += 1
    return n


DTYPES = ["float32", "float64", "int32", "int64", "uint8", "bool"]


def _both(fn, args):
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        try:
            want = fn(*theirs)
        except Exception as e:  # NumPy raises: PyPTO raises the same class
            with pytest.raises(type(e)):
                ppto.compile(fn)(*mine)
            return
        got = ppto.compile(fn)(*mine)
    assert_same(got, want)
    for m, t in zip(mine, theirs):  # every write into an argument
        if isinstance(t, np.ndarray):
            assert_same(m, t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_assignments_match_numpy_in_every_dtype(dtype):
    rng = np.random.default_rng(3)
    for shape in ((7,), (4, 5), (3, 1, 6)):
        a = (rng.standard_normal(shape) * 4).astype(dtype)
        _both(clamp_negative, (a,))
        _both(set_300, (a,))
        _both(copy_selected, (a, (rng.standard_normal(shape) * 4).astype(dtype)))
        _both(bump_above, (a, 0.25))
        m = rng.uniform(size=shape[:1]) > 0.5
        _both(scale_where, (a, m.reshape(shape[:1])))
        _both(scale_where, (a, rng.uniform(size=shape) > 0.5))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_masks_with_rows_nans_and_other_arrays(dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 4)).astype(dtype)
    _both(rows_to_vector, (x, np.arange(4.0, dtype=dtype)))
    a = rng.standard_normal((5, 3)).astype(dtype)
    a[1, 1] = np.nan
    _both(cap_by_other, (a, rng.uniform(size=(5, 3))))
    _both(cap_by_other, (a, rng.uniform(size=(3,))))  # NumPy's IndexError: mask of axis 0


def test_mandelbrot_with_masks():
    re, im = np.meshgrid(np.linspace(-2, 1, 9), np.linspace(-1.2, 1.2, 7))
    _both(mandelbrot, (re, im, 25))


def test_the_mask_fuses_with_what_makes_it():
    a = np.random.default_rng(5).standard_normal((8, 8))
    plans = ppto.explain(clamp_negative, a).plans
    assert sum(len(p.kernels) for _, p in plans) == 1


def _assign_selection(a, b):
    a[a > 0] = b
    return a


def test_a_value_with_an_axis_for_the_selection_is_numpys_assignment():
    """(refused PPT105 before: now NumPy's own assignment, a graph break)"""
    for a, b in (
        (np.ones(4), np.arange(4.0)),
        (np.array([1.0, -1.0, 2.0]), np.array([7.0, 8.0])),
        (np.array([1.0, -1.0, 2.0]), np.array([7.0, 8.0, 9.0])),  # NumPy's ValueError
        (np.array([[1, -1], [2, 3]]), np.array([1.5, 2.5, 3.5])),  # cast into ints
    ):
        _both(_assign_selection, (a, b))


def test_a_mask_of_the_wrong_size_raises_numpys_index_error():
    def f(a, m):
        a[m] = 0.0
        return a

    with pytest.raises(IndexError) as want:
        f(np.ones(4), np.ones(3, bool))
    with pytest.raises(IndexError) as got:
        ppto.compile(f)(np.ones(4), np.ones(3, bool))
    assert str(want.value) in str(got.value)


_emu = cuda_emulator("masks_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mask_assignments_on_the_cuda_target(dtype):
    from cupy_backend import make_cupy, to_host

    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 6)).astype(dtype)
    b = rng.uniform(size=(5, 6)).astype(dtype)
    cp = make_cupy(order="random", seed=2)
    da, db = cp.device(a), cp.device(b)
    got = ppto.compile(cap_by_other)(da, db)
    want_a = a.copy()
    want = cap_by_other(want_a, b)
    assert cp.launches
    assert_same(to_host(got), want)
    assert_same(to_host(da), want_a)


mandelbrot_complex = real_code().mandelbrot  # z[mask] = z[mask] ** 2 + c[mask]


def soft_clip(x, t):
    y = x.copy()
    m = x > t
    y[m] = t + np.log1p(x[m] - t)
    return y


def test_masked_elementwise_expressions():
    re, im = np.meshgrid(np.linspace(-2, 1, 9), np.linspace(-1.2, 1.2, 7))
    _both(mandelbrot_complex, (re + 1j * im, 20))
    x = np.random.default_rng(8).standard_normal((5, 4))
    _both(soft_clip, (x, 0.5))
    _both(soft_clip, (x.astype(np.float32), 0.5))


def _masked_product(x, w):  # NumPy: x[m] * w broadcasts (count,) against w's shape
    m = x > 0
    x[m] = x[m] * w
    return x


def test_a_masked_expression_with_an_array_operand_is_numpys():
    _both(_masked_product, (np.ones(4), np.arange(4.0)))
    _both(_masked_product, (np.array([1.0, -1.0, 1.0]), np.arange(3.0)))  # NumPy's ValueError


def assign_value(a, v):
    a[a > 0] = v
    return a


def test_a_value_known_at_run_time_is_converted_as_numpy_stores_it():
    """(review: 300 into int8 wrapped; NaN into ints did not raise)"""
    for a, v in (
        (np.array([1, -1], np.int8), 300),
        (np.array([1, 0], np.uint8), -1),
        (np.array([1, -1], np.int8), float("nan")),
        (np.array([1, -1], np.int8), float("inf")),
        (np.array([1.0, -1.0]), 1j),
        (np.array([1, -1], np.int8), 7.9),
        (np.array([1, -1], np.int8), 5),
    ):
        _both(assign_value, (a, v))


def _masked_power(a, e):  # NumPy computes the power on the selected elements only
    m = e >= 0
    a[m] = a[m] ** e[m]
    return a


def test_a_masked_integer_power_is_computed_on_the_selection():
    _both(_masked_power, (np.array([2, 3, 4]), np.array([2, -1, 1])))


def test_a_numpy_scalar_value_casts_as_numpy_stores_it():
    _both(assign_value, (np.array([1, -1], np.int8), np.int64(300)))  # wraps, as NumPy does
