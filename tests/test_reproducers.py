"""Programs that once gave a wrong answer with no error, or failed inside PyPTO, each run next to
NumPy: the same result types (NumPy scalar, Python number or 0-d array), dtypes, shapes and
values, the same writes into the arguments, the same exception class where NumPy raises."""

import copy
import math

import numpy as np
import pytest

import pypto as ppto


def same_as_numpy(fn, *args, rtol=1e-12):
    """Run ``fn`` with NumPy and compiled, each on its own copy of ``args``; compare."""
    mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
    try:
        want = fn(*theirs)
    except Exception as e:
        with pytest.raises(type(e)) as raised:
            ppto.compile(fn)(*mine)
        assert isinstance(raised.value, ppto.PyptoError), raised.value
        for a, b in zip(mine, theirs):  # the writes NumPy made before it raised
            _same(a, b, rtol)
        return raised.value
    got = ppto.compile(fn)(*mine)
    _same(got, want, rtol)
    for a, b in zip(mine, theirs):  # every write into an argument
        _same(a, b, rtol)
    return got


def _same(got, want, rtol):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _same(g, w, rtol)
        return
    assert type(got) is type(want), f"{type(got).__name__} where NumPy gives {type(want)}"
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)
    else:
        assert got == want or (got != got and want != want), (got, want)


# -- reads before writes into an argument (kernels ran out of their memory plan's order) ------
def read_then_write(x, y):
    v = x * 2.0
    x[1:] = -y
    return v + 1.0


def sum_then_write(x):
    a = x * 2
    x[0] = x.sum()
    return a.sum()


def copy_then_write(b):
    c = np.copy(b)
    b[:] = b.max()
    return c + 0


def test_a_read_before_a_write_does_not_see_the_write():
    same_as_numpy(read_then_write, np.arange(4.0), np.array([1.5]))
    same_as_numpy(sum_then_write, np.arange(4.0))
    same_as_numpy(copy_then_write, np.arange(4.0))


# -- an empty slice of a kept reduction axis (fuzz seed 11002859) --------------------------------
def empty_slice_of_a_kept_axis(x0, x1):
    t2 = x1.min(keepdims=True)
    return np.mean(np.concatenate([t2[1:], x0]))


def sliced_kept_axes(x):
    m = x.max(axis=1, keepdims=True)
    return m[:, 1:] + 1.0, np.concatenate([m[:, :0], x], axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_slice_of_a_kept_reduction_axis_is_that_slice(dtype):
    """``x.min(keepdims=True)[1:]`` is empty: fused into a concatenation, the reduction was
    emitted whole (the kept axis' region was dropped) and its element joined the result."""
    same_as_numpy(
        empty_slice_of_a_kept_axis, np.array([1.584], dtype), np.array([-1.111], dtype), rtol=1e-6
    )
    same_as_numpy(sliced_kept_axes, np.arange(12.0, dtype=dtype).reshape(3, 4), rtol=1e-6)


# -- two reductions of one value (a buffer reused before its last reader ran) -----------------
def two_reductions(x, y):
    v = np.sin(y)
    return x + v.max(axis=1).min(), x + v.min()


def product_and_mean_write(v0, x2):
    a = np.sin(v0) @ v0
    x2[1] = v0.mean(keepdims=True)
    return a


def cumsum_of_sum_and_products(x0, x1, x2):
    v1 = x0.sum(axis=1)
    return np.cumsum(np.sum(v1 * 2.0, keepdims=True)) + (v1 @ x1) @ x2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_two_reductions_of_one_value_stay_apart(dtype):
    y = np.arange(20.0, dtype=dtype).reshape(4, 5)
    same_as_numpy(two_reductions, np.zeros(3, dtype), y, rtol=1e-6)
    same_as_numpy(
        product_and_mean_write, np.arange(9.0, dtype=dtype).reshape(3, 3), np.zeros((3, 1), dtype)
    )
    rng = np.random.default_rng(0)
    inputs = [rng.random(s).astype(dtype) for s in ((1, 2), (1, 16), (16, 3))]
    same_as_numpy(cumsum_of_sum_and_products, *inputs, rtol=1e-5)


def test_two_reductions_of_one_value_in_the_lazy_api():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    v = ppto.sin(y)
    xs, ys = np.zeros(3), np.arange(20.0).reshape(4, 5)
    got = ppto.run([x + v.max(axis=1).min(), x + v.min()], x=xs, y=ys)
    for g, w in zip(got, two_reductions(xs, ys)):
        np.testing.assert_array_equal(g, w)


# -- shape tuples compare as Python compares them -----------------------------------------------
def same_shapes(x, y):
    if x.shape == y.shape:
        return x + y
    return x - y


def shape_is(x):
    if x.shape == (2,):
        return x + 1
    if x.shape != (3,) and x.shape < (5,):
        return x - 1
    return x * 2


def test_shape_comparisons():
    same_as_numpy(same_shapes, np.ones(2), np.ones(2))
    same_as_numpy(same_shapes, np.ones((2, 3)), np.ones(3))
    for n in (2, 3, 4, 6):
        same_as_numpy(shape_is, np.ones(n))


# -- views that write through, and read what was written into their base ------------------------
def write_through_flip(x, y):
    v = np.flip(x, axis=0)
    v -= y
    return x


def flip_sees_later_write(x):
    v = np.flip(x, axis=0)
    x[0] = 5.0
    return v + 0


def write_through_squeeze(x):
    v = np.squeeze(x)
    v -= v
    return x


def write_through_transpose(x):
    x.T[0] = 1.0
    v = np.swapaxes(x, 0, 1)
    v[1, 1:] += 2.0
    w = x[:, None, ::-1]
    w[0] *= 3.0
    return x


def test_writes_through_views():
    same_as_numpy(write_through_flip, np.arange(4.0), np.ones(4))
    same_as_numpy(flip_sees_later_write, np.arange(4.0))
    same_as_numpy(write_through_squeeze, np.arange(4.0).reshape(1, 4))
    same_as_numpy(write_through_transpose, np.arange(12.0).reshape(3, 4))


def swap_rows(a):
    a[0], a[1] = a[1], a[0]  # views: both rows become the old row 1
    return a


def test_a_tuple_of_views_is_read_when_assigned():
    same_as_numpy(swap_rows, np.arange(6.0).reshape(2, 3))


def squeezed(x):
    return np.squeeze(x)


def whole(x):
    return x[...]


def scalar_and_view(x):
    return np.squeeze(x), x[0], x[0, ...], x.reshape(()), x.sum()


def test_views_of_rank_0_are_arrays_and_ufunc_results_scalars():
    same_as_numpy(squeezed, np.ones(1))
    same_as_numpy(whole, np.array(2.0))
    same_as_numpy(scalar_and_view, np.ones(1, np.float32))


# -- Python numbers and sizes on the left of array operators ------------------------------------
def size_times(x):
    n = x.shape[0]
    return n * x, (n - 1) * x, x // n, 2 * x + n


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_sizes_on_the_left_of_array_operators(dtype):
    same_as_numpy(size_times, np.arange(1, 4, dtype=dtype))


# -- in-place operators whose value's sizes are spelled otherwise -------------------------------
def add_ones(x):
    x += np.ones(3)
    return x


def subtract_reversed(x1, x0):
    x1 -= x0[2::-1]
    return x1


def empty_reversed_slice(x):
    return np.tanh(x)[:5:-2]


def shared_abs(x):
    z = x - x
    a = np.abs(x)
    x *= z / np.abs(x)
    return a - z[3]


def broadcast_mix(x0, x1):
    v0 = (x1 * 3)[0]
    v2 = x1.max(axis=0)
    v3 = (v0 - x1) * (v0 + v0)
    return (v2 + x1) / (-v2 + x0 + v3)


def test_programs_that_failed_inside_pypto():
    same_as_numpy(add_ones, np.zeros(3))
    same_as_numpy(subtract_reversed, np.zeros(3), np.arange(5.0))
    same_as_numpy(empty_reversed_slice, np.ones((4, 4)))
    same_as_numpy(shared_abs, np.arange(1.0, 5.0))
    rng = np.random.default_rng(1)
    same_as_numpy(broadcast_mix, rng.random((8, 1, 4)) + 1, rng.random((1, 4)) + 1)


# -- NumPy's exception classes ------------------------------------------------------------------
def add_300(x):
    return x + 300


def store_300(a):
    a[0] = 300
    return a


def iadd_300(a):
    a += 300
    return a


def add_huge(a):
    return a + 2**70


def maximum(a):
    return a.max()


def inverse(a):
    return a**-1


def store_nan(a):
    a[0] = np.nan
    return a


def zeros(n):
    return np.zeros(n) + 1


def past_the_end(a):
    for i in range(5):
        a[i] = 1.0
    return a


@pytest.mark.parametrize(
    "fn, arg, error",
    [
        (add_300, np.ones(3, np.int8), OverflowError),
        (store_300, np.ones(3, np.int8), OverflowError),
        (iadd_300, np.ones(3, np.int8), OverflowError),
        (add_huge, np.ones(3, np.int64), OverflowError),
        (maximum, np.ones(0), ValueError),
        (inverse, np.ones(3, np.int64), ValueError),
        (store_nan, np.ones(3, np.int64), ValueError),
        (zeros, -1, ValueError),
        (past_the_end, np.ones(3), IndexError),
    ],
)
def test_numpy_exception_classes(fn, arg, error):
    raised = same_as_numpy(fn, arg)
    assert isinstance(raised, error) and isinstance(raised, ppto.ExecutionError)


# -- Python arithmetic on Python numbers is Python's ---------------------------------------------
def divide_floats(x, a, b):
    return x + a / b


def floor_divide_floats(x, a, b):
    return x + a // b


def shift_int(x, n):
    return x + (n << 40)


def square_root(x, a):
    return x + math.sqrt(a)


def bools(x, a, b):
    return x + ((a > 0) + (b > 0)), x * (a > 0)


def test_python_numbers_follow_python():
    same_as_numpy(divide_floats, np.ones(2), 1.0, 0.0)  # ZeroDivisionError
    same_as_numpy(floor_divide_floats, np.ones(2), 1.0, 0.0)
    same_as_numpy(divide_floats, np.ones(2), 3, 2)
    same_as_numpy(shift_int, np.ones(2), 2**40)  # no wrap-around
    same_as_numpy(square_root, np.ones(2), -1.0)  # math domain error: ValueError
    same_as_numpy(square_root, np.ones(2, np.float32), 2.0)
    same_as_numpy(bools, np.ones(2, np.float32), 1.0, -2.0)  # True + False is the int 1


def zero_step(a):
    return a[::0]


def test_a_slice_step_of_zero_is_a_value_error():
    raised = same_as_numpy(zero_step, np.ones(3))
    assert isinstance(raised, ValueError) and isinstance(raised, ppto.IndexingError)


def twice(x):
    return x * 2


def test_masked_arrays_are_refused_not_unmasked():
    with pytest.raises(ppto.BindingError, match="MaskedArray"):
        ppto.compile(twice)(np.ma.masked_array([1.0, 2.0], mask=[0, 1]))


# -- each step at NumPy's precision ---------------------------------------------------------
def attention_scaled_by_a_numpy_scalar(Q, K, V):
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])  # a float32 product, float64 after
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def test_a_float32_product_scaled_by_a_float64_scalar_is_a_float32_product():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 64, 16)).astype(np.float32) for _ in range(3))
    got = same_as_numpy(attention_scaled_by_a_numpy_scalar, q, k, v, rtol=0)  # bit for bit
    assert got.dtype == np.float64


# -- the writes NumPy made before it raised -------------------------------------------------
def write_then_overflow(a, b):
    a += 1.0
    b += 300
    return a


def loop_then_overflow(a, b):
    for _ in range(3):
        a += 1.0
    b += 300
    return a


def write_then_empty_max(a, b):
    a *= 2.0
    return a + b.max()


def loop_past_the_end(a, b, n):
    a[0] = 7.0
    for i in range(n):
        b[i] = a[i] * 2 + b[i]
    return b


def test_writes_before_an_error_are_made():
    same_as_numpy(write_then_overflow, np.zeros(4), np.ones(3, np.int8))
    same_as_numpy(loop_then_overflow, np.zeros(4), np.ones(3, np.int8))
    same_as_numpy(write_then_empty_max, np.ones(3), np.ones(0))
    same_as_numpy(loop_past_the_end, np.zeros(3), np.ones(3), 5)


def log_of_zero(x):
    return np.log(x - x) + 1


def test_floating_point_errors_under_errstate_raise():
    for shape in ((3,), (300, 300)):  # one block, and many on the pool's threads
        with np.errstate(all="raise"):
            raised = same_as_numpy(log_of_zero, np.ones(shape))
        assert isinstance(raised, FloatingPointError)


# -- found by the fuzzer (tests/fuzz) -------------------------------------------------------
def squeeze_to_0d_in_place(x0):
    v = np.squeeze(x0)
    v *= 0.5
    return x0, v


def element_minus_a_float(x1):
    x1[0] -= 1.5  # a NumPy scalar's operator, then a store that casts
    return x1


def divide_in_place_0d(x1):
    x1 /= 2  # NumPy's UFuncTypeError (a TypeError)


def bad_axis(x0):
    return x0.sum(axis=2)


def unused_error(x1):
    e6 = x1[:0].max()  # noqa: F841 (NumPy raises here although nothing reads it)
    return x1 + 1


def compile_time_python_error(x):
    x[0] = 5.0
    e7 = 1.5 / 0.0  # noqa: F841
    return x


def negated_symbolic_float(x0, s0):
    t = -(s0 / 3)
    return x0 + t


def numpy_scalars_stay_strong(x0, s0):
    t1 = np.float64(2.0)
    return t1 + s0, np.minimum(x0, x0.shape[-1] - np.float64(1.5)), ~(np.float32(0.5) < s0)


def zero_d_creations(x):
    return np.zeros_like(0), np.full((), 2.0), np.zeros(()), np.copy(x[0])


def empty_slices_of_stepped_slices(x0, y0):
    return x0[::2][:0], (y0 * 0.25)[:, 1:, ::3][:, :, :0]


def input_named_like_a_size(x0):
    x0 = x0 / 0.5  # the block input x0_1 and the size x0.1
    for _ in range(2):
        pass
    return x0 + 1.0


def overflow_of_an_empty_array(x0):
    return x0.astype(np.int8) + 300


def test_programs_the_fuzzer_found():
    same_as_numpy(squeeze_to_0d_in_place, np.array([[[1.622]]]))
    same_as_numpy(element_minus_a_float, np.array([-1, 3], np.int64))
    assert isinstance(same_as_numpy(divide_in_place_0d, np.array(-1, np.int32)), TypeError)
    assert isinstance(same_as_numpy(bad_axis, np.ones((1, 1))), np.exceptions.AxisError)
    same_as_numpy(unused_error, np.ones(3))
    same_as_numpy(compile_time_python_error, np.zeros(2))  # x[0] is written, then it raises
    same_as_numpy(negated_symbolic_float, np.ones(2), 1)
    same_as_numpy(numpy_scalars_stay_strong, np.ones((1, 2), np.float32), 1)
    same_as_numpy(zero_d_creations, np.ones(2))
    same_as_numpy(empty_slices_of_stepped_slices, np.arange(4.0), np.ones((1, 1, 1), np.float32))
    same_as_numpy(input_named_like_a_size, np.ones((2, 3, 2))[:, ::2])
    same_as_numpy(overflow_of_an_empty_array, np.ones((3, 0, 3)))


def product_epilogue_transposed(x0):
    t1 = np.minimum(x0, x0 @ x0.T)  # the epilogue's output is the transposed product
    return np.transpose(t1, (1, 0))


def where_of_python_bools(s0, s1):
    return np.where(s1, 0, s0 < 0.25)


def test_more_programs_the_fuzzer_found(monkeypatch):
    monkeypatch.setenv("PYPTO_CHUNK_BUDGET", "64")  # the epilogue in several blocks
    same_as_numpy(product_epilogue_transposed, np.array([[1.75], [0.236], [0.929]]))
    same_as_numpy(where_of_python_bools, 1.97, 0.24)


def negate_a_promoting_concatenation(x1):
    return -np.concatenate([x1, x1 > x1])  # the bool piece is float32 once concatenated


def test_a_map_over_a_promoting_concatenation():
    same_as_numpy(negate_a_promoting_concatenation, np.array([0.144], np.float32)[::-1])


def negate_into_strided_blocks(x0, x1):
    t2 = np.concatenate([x1 @ x1.T - x0[-2::-1, ::-1], -(x1 @ x1.T - x0[-2::-1, ::-1])])
    return t2.cumsum(), np.isfinite(t2 / x1)


def test_ufuncs_numpy_computes_wrong_into_strided_outputs(monkeypatch):
    """NumPy 2.4's np.negative and np.isfinite write wrong values into a strided out= on AVX512
    CPUs; blocks along an inner axis are such outputs (generated code goes around it)."""
    monkeypatch.setenv("PYPTO_CHUNK_BUDGET", "256")
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((3, 4, 1)).astype(np.float32)
    x1 = rng.standard_normal((4, 1)).astype(np.float32)
    same_as_numpy(negate_into_strided_blocks, x0, x1, rtol=1e-6)


def view_of_a_numpy_scalar(x0, s0):
    x0 = np.expand_dims(s0, 0)  # a new array: a NumPy scalar has no views
    x0[:] = 1
    return 1.0 + s0, x0


def test_a_view_of_a_numpy_scalar_is_a_new_array():
    same_as_numpy(view_of_a_numpy_scalar, np.ones((1, 1)), np.float64(-0.32))


def negated_promoting_concatenation(x0):
    # a block inside the bool piece of an int concatenation is that piece, promoted
    return np.concatenate([x0, -np.concatenate([np.minimum(x0, 0), x0], axis=1)], axis=1)


def test_a_block_inside_one_piece_of_a_promoting_concatenation_is_promoted(monkeypatch):
    monkeypatch.setenv("PYPTO_CHUNK_BUDGET", "256")  # (fuzz seed 3006136)
    x0 = np.asfortranarray(np.array([[[True, False], [True, True]]]))
    same_as_numpy(negated_promoting_concatenation, x0)


def test_a_loop_body_that_raises_for_some_sizes_does_not_raise_for_others():
    """The first call's sizes make the loop body raise (as NumPy does); a later call whose
    sizes are valid compiled the body as a raise and reused it (a ShapeError where NumPy
    gives the answer): the guards the failing trace relied on were dropped."""
    from transpile_corpus.signals import fir_filter  # (tests/ is on sys.path: rootdir)

    f = ppto.compile(fir_filter)
    rng = np.random.default_rng(0)
    short, taps = rng.standard_normal(5), rng.standard_normal(7)
    with pytest.raises(ValueError, match="negative dimensions"):
        fir_filter(short, taps)
    with pytest.raises(ValueError, match="negative dimensions"):
        f(short, taps)
    x, taps = rng.standard_normal(20), rng.standard_normal(3)
    np.testing.assert_allclose(f(x, taps), fir_filter(x, taps), rtol=1e-12)
    assert "sizes break the guards" in f.history[-1]


def negative_base_power(x, n):
    return x * (-2.0) ** n


def test_a_negative_literal_base_of_a_power_keeps_its_sign():
    """Found in review: the host code wrote ``float(-2.0 ** n)``, which is -(2.0 ** n)."""
    x = np.arange(3.0)
    for n in (2, 3):
        same_as_numpy(negative_base_power, x, n)


def constant_tuple(x, t):
    return x + t[0]


def test_equal_tuples_of_other_types_are_other_constants():
    """Found in review: (1,) and (1.0,) compare equal, so the second call reused the first's
    specialization (int64 where NumPy gives float64)."""
    f = ppto.compile(constant_tuple)
    x = np.arange(3)
    for t in ((1,), (1.0,), (True,)):
        got, want = f(x, t), constant_tuple(x, t)
        assert got.dtype == want.dtype and np.array_equal(got, want), t
