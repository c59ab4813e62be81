"""Every row of docs/supported-python.md: a small NumPy function per row, compiled with
ppto.compile and run next to the original. The functions live in small modules next to this
file (frontend_cases, frontend_names, frontend_expressions, frontend_statements): ppto.compile
reads each function's source from its file.

``check`` runs a function on inputs made at two sizes and in float32 and float64 (ints where
the row is about ints), on deep copies: the original on one, the compiled function (compiled
once, so the later calls go through its cache) on the other. The results must have the same
structure, kind (Python scalar, NumPy scalar, ndarray), type, dtype, shape and values; a result
that is an argument of the original must be that same argument of the compiled call; and every
argument array must hold the same values afterwards (in-place writes).
"""

import copy
import math
import zlib

import frontend_cases
import frontend_expressions as exprs
import frontend_names as names
import frontend_statements as stmts
import numpy as np
import pytest

import pypto as ppto

SIZES = (5, 23)
FLOATS = (np.float32, np.float64)
INTS = (np.int32, np.int64)
RTOL = {
    np.dtype(np.float32): 2e-5,
    np.dtype(np.float64): 1e-12,
    np.dtype(np.complex128): 1e-12,
}


# -- comparison machinery -------------------------------------------------------------------------
def kind(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return "tuple"
    if isinstance(value, np.ndarray):
        return "ndarray"
    if isinstance(value, np.generic):
        return f"NumPy scalar {type(value).__name__}"
    if type(value) in (bool, int, float, complex):
        return f"Python {type(value).__name__}"
    return f"other {type(value).__name__}"


def assert_same_value(got, want, rtol, what="result"):
    assert kind(got) == kind(want), f"{what}: {kind(got)} where NumPy gives {kind(want)}"
    if want is None:
        return
    if isinstance(want, tuple):
        assert len(got) == len(want), f"{what}: {len(got)} items, NumPy {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_value(g, w, rtol, f"{what}[{i}]")
        return
    if not isinstance(want, (np.ndarray, np.generic, bool, int, float, complex)):
        assert got == want, f"{what}: {got!r} != {want!r}"
        return
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, f"{what}: dtype {got_a.dtype} != NumPy's {want_a.dtype}"
    assert got_a.shape == want_a.shape, f"{what}: shape {got_a.shape} != NumPy's {want_a.shape}"
    tol = rtol if rtol is not None else RTOL.get(want_a.dtype, 0.0)
    if want_a.dtype.kind in "fc" and tol:
        np.testing.assert_allclose(got_a, want_a, rtol=tol, atol=0, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got_a, want_a, err_msg=what)


def argument_positions(value, args):
    """Where ``value`` (or an item of a returned tuple) is one of the argument arrays."""
    if isinstance(value, tuple):
        return tuple(argument_positions(v, args) for v in value)
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and value is a:
            return i
    return None


def run_both(fn, compiled, args, kwargs=None, rtol=None):
    """Run the original and the compiled function on copies of ``args``; compare everything."""
    kwargs = kwargs or {}
    want_args, got_args = copy.deepcopy(args), copy.deepcopy(args)
    want_kwargs, got_kwargs = copy.deepcopy(kwargs), copy.deepcopy(kwargs)
    want = fn(*want_args, **want_kwargs)
    got = compiled(*got_args, **got_kwargs)
    assert_same_value(got, want, rtol)
    assert argument_positions(got, got_args) == argument_positions(want, want_args), (
        "the original returns an argument itself exactly where the compiled function does"
    )
    for i, (g, w) in enumerate(zip(got_args, want_args)):
        if isinstance(w, np.ndarray):
            assert_same_value(g, w, rtol, f"argument {i} after the call")
    for name, w in want_kwargs.items():
        if isinstance(w, np.ndarray):
            assert_same_value(got_kwargs[name], w, rtol, f"argument {name} after the call")
    return got, want


def check(fn, make, dtypes=FLOATS, sizes=SIZES, kwargs=None, rtol=None, compiled=None):
    """``make(n, dtype, rng)`` gives the arguments; every (dtype, size) pair is compared.
    Returns the compiled function (one compilation per dtype while guards hold)."""
    compiled = compiled or ppto.compile(fn)
    for dtype in dtypes:
        for n in sizes:
            rng = np.random.default_rng(zlib.crc32(f"{fn.__name__}-{n}-{dtype}".encode()))
            args = make(n, np.dtype(dtype), rng)
            run_both(fn, compiled, args, kwargs, rtol)
    return compiled


def vec(n, dtype, rng, lo=0.5, hi=1.5):
    return rng.uniform(lo, hi, n).astype(dtype)


def mat(n, dtype, rng, lo=0.5, hi=1.5, cols=None):
    return rng.uniform(lo, hi, (n, cols or n + 2)).astype(dtype)


def one_vec(n, dtype, rng):
    return (vec(n, dtype, rng),)


def one_mat(n, dtype, rng):
    return (mat(n, dtype, rng),)


def square(n, dtype, rng):
    return (mat(n, dtype, rng, cols=n),)


# == Modules and names =============================================================================
def test_numpy_under_any_alias_import_numpy_as_np():
    check(names.numpy_as_np, one_mat)


def test_numpy_under_any_alias_import_numpy():
    check(frontend_cases.numpy_unaliased, one_mat)


def test_numpy_under_any_alias_from_numpy_import():
    check(frontend_cases.names_from_numpy, one_mat)


def test_numpy_under_any_alias_through_a_closure():
    check(names.make_closure(3.0, np), one_mat)


def test_math_on_scalars():
    check(names.math_on_scalars, lambda n, dt, rng: (mat(n, dt, rng), float(rng.uniform(-2, 2))))
    # a negative run-time float: Python's floor and ceil, ints
    check(names.math_on_scalars, lambda n, dt, rng: (mat(n, dt, rng), -1.25), sizes=(4,))


def test_math_on_scalars_floor_of_a_size_ratio():
    check(names.math_floor_of_a_size_ratio, one_vec)


def test_constants():
    check(names.constants, one_vec)


def test_dtype_objects():
    check(names.dtype_objects, one_mat)


def test_dtype_objects_cast_of_an_array_to_its_own_dtype_is_the_array():
    x = np.arange(3.0, dtype=np.float32)
    assert names.cast_to_float32(x) is x  # NumPy returns the argument itself
    run_both(names.cast_to_float32, ppto.compile(names.cast_to_float32), (x,))


def test_module_constants():
    check(names.module_constants, one_vec)


def test_helpers_inlined_recursively_writing_into_their_arguments():
    check(names.helpers, lambda n, dt, rng: (mat(n, dt, rng), np.zeros((n, n + 2), dtype=dt)))


def test_helpers_a_helper_writes_into_its_argument():
    check(names.scale_into, lambda n, dt, rng: (mat(n, dt, rng), 3.0))


def test_ppto_ops_softmax_inside_a_compiled_function():
    compiled = ppto.compile(names.ppto_softmax)
    for dtype in FLOATS:
        for n in SIZES:
            x = mat(n, dtype, np.random.default_rng(n))
            assert_same_value(compiled(x), names.softmax_in_numpy(x), None)
    assert len(compiled.history) == 2


def test_ppto_ops_user_operators_registered_under_their_own_name():
    ppto.register_operator(names.sorted_rows)
    try:
        check(names.calls_user_operator_by_its_name, one_mat)
    finally:
        ppto.unregister_operator("sorted_rows")


def test_ppto_ops_user_operators_registered_under_another_name():
    ppto.register_operator(names.sorted_rows, name="fe_sorted_rows")
    try:
        check(names.calls_user_operator, one_mat)
    finally:
        ppto.unregister_operator("fe_sorted_rows")


# == Parameters and arguments ======================================================================
def two_mats(n, dt, rng):
    return (mat(n, dt, rng), mat(n, dt, rng))


def test_positional_keyword_and_default_parameters():
    f = names.keyword_defaults
    compiled = check(f, two_mats)
    for kwargs in ({"alpha": 0.25}, {"beta": 3}, {"beta": 4, "alpha": 1.5}):
        check(f, two_mats, kwargs=kwargs, compiled=compiled)
    rng = np.random.default_rng(0)
    x, y = mat(4, np.float32, rng), mat(4, np.float32, rng)
    run_both(f, compiled, (x,), {"y": y})
    run_both(f, compiled, (), {"y": y, "x": x, "alpha": 2.0})
    run_both(f, compiled, (x, y, 0.125, 5))


def test_array_arguments_specialized_on_dtype_rank_and_size_one_axes():
    f = names.array_arguments
    compiled = ppto.compile(f)
    rng = np.random.default_rng(0)
    for n in (3, 8, 40):
        run_both(f, compiled, (mat(n, np.float32, rng), vec(n + 2, np.float32, rng)))
    assert len(compiled.history) == 1 and compiled.history[0].endswith("first call")
    printout = str(compiled.ir(mat(3, np.float32, rng), vec(5, np.float32, rng)))
    assert "x.0" in printout and "x.1" in printout and "y.0" in printout  # sizes are symbols
    run_both(f, compiled, (mat(1, np.float32, rng), vec(1, np.float32, rng)))  # size-1 axes
    assert len(compiled.history) == 2 and "new argument types" in compiled.history[1]
    run_both(f, compiled, (mat(3, np.float64, rng), vec(5, np.float64, rng)))  # dtype
    assert len(compiled.history) == 3 and "new argument types" in compiled.history[2]
    run_both(f, compiled, (vec(5, np.float64, rng), vec(5, np.float64, rng)))  # rank
    assert len(compiled.history) == 4 and "new argument types" in compiled.history[3]


def test_another_size_reuses_the_compilation_another_dtype_or_rank_recompiles():
    f = names.numpy_as_np
    compiled = ppto.compile(f)
    rng = np.random.default_rng(2)
    run_both(f, compiled, (mat(5, np.float32, rng),))
    run_both(f, compiled, (mat(31, np.float32, rng),))
    assert len(compiled.history) == 1
    run_both(f, compiled, (mat(5, np.float64, rng),))
    assert len(compiled.history) == 2
    assert "new argument types" in compiled.history[1] and "f64" in compiled.history[1]
    by_rank = ppto.compile(f)
    run_both(f, by_rank, (mat(5, np.float32, rng),))
    run_both(f, by_rank, (vec(7, np.float32, rng),))
    assert len(by_rank.history) == 2 and "new argument types" in by_rank.history[1]


def test_history_names_the_earlier_specialization():
    compiled = ppto.compile(names.numpy_as_np)
    compiled(np.ones((2, 3), np.float32))
    compiled(np.ones((2, 3), np.float64))
    # "new argument types ... since <the earlier specialization>": x: f32[x.0,x.1]
    reason = compiled.history[1].split(": new argument types")[1]
    assert "f32" in reason, compiled.history


def test_python_int_arguments_loop_and_slice_bounds():
    f = names.int_argument
    compiled = ppto.compile(f)
    rng = np.random.default_rng(3)
    for dtype in FLOATS:
        for size, n in ((10, 4), (10, 7), (30, 3), (30, 30)):
            run_both(f, compiled, (vec(size, dtype, rng), n))
    assert len(compiled.history) == 2, compiled.history  # one per dtype


def test_python_float_arguments_are_weak():
    f = names.float_argument
    compiled = check(f, lambda n, dt, rng: (mat(n, dt, rng), float(rng.uniform())))
    got = compiled(np.ones(3, np.float32), 0.1)
    assert got[0].dtype == np.float32 and type(got[1]) is float


@pytest.mark.parametrize("scalar_type", [np.float32, np.float64, np.int32])
def test_numpy_scalar_arguments_are_strong(scalar_type):
    f = names.numpy_scalar_argument
    compiled = check(f, lambda n, dt, rng: (mat(n, dt, rng), scalar_type(2)))
    got = compiled(np.ones(3, np.float32), np.float64(2))
    assert got[0].dtype == np.float64  # a float32 array times a float64 scalar: float64


def test_constant_arguments_each_value_compiles_its_own_version():
    f = names.constant_arguments
    compiled = ppto.compile(f)
    calls = [{}, {"normalize": True}, {"mode": "diff"}, {"mode": None}, {"normalize": True}]
    for kwargs in calls:
        check(f, one_vec, dtypes=(np.float64,), kwargs=kwargs, compiled=compiled)
    # bool, string and None: one version per value (the last call reuses the second's)
    assert len(compiled.history) == 4, compiled.history
    assert "normalize=True" in compiled.history[1] and "mode='diff'" in compiled.history[2]
    assert "mode=None" in compiled.history[3]
    # a float is a run-time value: another float reuses the compilation
    check(f, one_vec, dtypes=(np.float64,), kwargs={"shift": 7.0}, compiled=compiled)
    check(f, one_vec, dtypes=(np.float64,), kwargs={"shift": -1.5}, compiled=compiled)
    assert len(compiled.history) == 4


def test_constant_arguments_none_or_an_array():
    f = names.optional_argument
    compiled = check(f, one_vec)
    check(f, lambda n, dt, rng: (vec(n, dt, rng), vec(n, dt, rng)), compiled=compiled)


def test_docstrings_and_type_annotations_are_ignored():
    check(names.documented, one_mat)


# == Expressions ===================================================================================
def test_arithmetic_operators():
    def floats(n, dt, rng):
        return mat(n, dt, rng, -3, 3), mat(n, dt, rng, 0.5, 2)

    def ints(n, dt, rng):
        return rng.integers(-9, 9, (n, 3)).astype(dt), rng.integers(1, 4, (n, 3)).astype(dt)

    check(exprs.arithmetic_arrays, floats)
    check(exprs.arithmetic_arrays, ints, dtypes=INTS)
    check(exprs.arithmetic_numpy_scalars, lambda n, dt, rng: (vec(n, dt, rng, -3, 3),))
    check(
        exprs.arithmetic_python_numbers,
        lambda n, dt, rng: (vec(n, dt, rng), float(rng.uniform(0.5, 3))),
    )


def test_matrix_product_bitwise_and_shifts():
    def int_pair(n, dt, rng):
        return rng.integers(0, 50, (n, 3)).astype(dt), rng.integers(0, 9, 3).astype(dt)

    check(exprs.bitwise_shifts, int_pair, dtypes=INTS)

    def operands(n, dt, rng):
        return mat(n, dt, rng, -1, 1, cols=n), mat(n, dt, rng, -1, 1, cols=n), vec(n, dt, rng)

    check(exprs.matrix_product, operands, rtol=1e-4)

    def int_operands(n, dt, rng):
        return tuple((a * 10).astype(dt) for a in operands(n, np.float64, rng))

    check(exprs.matrix_product, int_operands, dtypes=INTS)


def test_comparisons_unary_ops_and_parentheses():
    f = exprs.comparisons_unary
    compiled = check(f, lambda n, dt, rng: (mat(n, dt, rng, 0, 3, 4), mat(n, dt, rng, 0, 3, 4)))
    x = mat(4, np.float64, np.random.default_rng(0))
    run_both(f, compiled, (x, x.copy()))


def test_comparisons_of_sizes_decided_at_compile_time_and_guarded():
    f = exprs.sizes_compared
    compiled = ppto.compile(f)
    rng = np.random.default_rng(4)
    run_both(f, compiled, (vec(10, np.float64, rng),))
    run_both(f, compiled, (vec(40, np.float64, rng),))
    assert len(compiled.history) == 1
    run_both(f, compiled, (vec(4, np.float64, rng),))
    assert len(compiled.history) == 2 and "guards" in compiled.history[1]
    run_both(f, compiled, (vec(3, np.float64, rng),))
    run_both(f, compiled, (vec(12, np.float64, rng),))
    assert len(compiled.history) == 2


def test_chained_method_calls():
    check(exprs.reduction_methods, lambda n, dt, rng: (mat(n, dt, rng, 0.9, 1.1),), rtol=1e-4)
    check(exprs.shape_methods, lambda n, dt, rng: (rng.uniform(0.5, 1.5, (n, 1, 4)).astype(dt),))
    check(exprs.item_and_fill, lambda n, dt, rng: (mat(n, dt, rng), np.zeros(n, dtype=dt)))


def test_array_attributes():
    compiled = check(exprs.array_attributes, one_mat)
    check(
        exprs.array_attributes,
        lambda n, dt, rng: (rng.uniform(size=(n, 1, 3)).astype(dt),),
        compiled=compiled,
    )


def test_min_max_abs_on_scalars():
    check(exprs.min_max_abs, lambda n, dt, rng: (vec(n, dt, rng, -2, 2), float(rng.uniform(-2, 2))))


def test_min_max_abs_on_sizes_and_python_numbers():
    f = exprs.min_max_abs_of_sizes_and_python_numbers
    check(f, lambda n, dt, rng: (vec(n, dt, rng, -2, 2), float(rng.uniform(-2, 2))))
    check(f, lambda n, dt, rng: (vec(n, dt, rng, -2, 2), 0.5), sizes=(12,))


def test_min_max_of_numpy_scalars_are_numpy_scalars():
    check(exprs.max_of_numpy_scalars, one_vec)


def test_min_max_first_of_equal_values_wins():
    f = exprs.first_of_equals
    compiled = ppto.compile(f)
    for a, b in ((0.0, -0.0), (-0.0, 0.0), (1.5, 1.5), (2.0, -3.0)):
        want = f(a, b)
        got = compiled(a, b)
        assert_same_value(got, want, None)
        assert [math.copysign(1.0, v) for v in got] == [math.copysign(1.0, v) for v in want]
    assert len(compiled.history) == 1


def test_min_max_nan_first_stays():
    f = exprs.max_of_numpy_scalars
    compiled = ppto.compile(f)
    for x in (np.array([np.nan, 1.0]), np.array([1.0, np.nan])):
        want, got = f(x), compiled(x)
        assert [np.isnan(v) for v in got] == [np.isnan(v) for v in want]


def test_scalar_arithmetic_on_shapes():
    compiled = check(exprs.shape_arithmetic, one_vec)
    assert len(compiled.history) == 2  # symbolic: one compilation per dtype for both sizes


def test_numpy_functions():
    check(exprs.numpy_functions, two_mats, rtol=1e-4)


def test_ufunc_outer():
    check(exprs.ufunc_outer, lambda n, dt, rng: (mat(n, dt, rng, cols=3), vec(n, dt, rng)))


BINARY_UFUNCS = sorted(
    {
        f.__name__
        for name in ppto.REGISTRY.names()
        for f in ppto.REGISTRY.lookup(name).numpy
        if isinstance(f, np.ufunc) and f.nin == 2 and f.signature is None
    }
)
INTEGER_UFUNCS = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}


def test_ufunc_outer_covers_the_registry():
    assert len(BINARY_UFUNCS) >= 20 and {"add", "multiply", "maximum"} <= set(BINARY_UFUNCS)


@pytest.mark.parametrize("name", BINARY_UFUNCS)
def test_ufunc_outer_for_every_ufunc_of_the_registry(name):
    ufunc = getattr(np, name)

    def operands(n, dt, rng):
        if name in INTEGER_UFUNCS:
            return rng.integers(0, 9, n).astype(dt), rng.integers(0, 5, (2, 3)).astype(dt)
        return vec(n, dt, rng, 0.5, 2.0), mat(2, dt, rng, 0.5, 2.0, cols=3)

    dtypes = INTS if name in INTEGER_UFUNCS else FLOATS
    check(exprs.ufunc_outer_of, operands, dtypes=dtypes, kwargs={"ufunc": ufunc}, rtol=1e-6)


def test_array_creation():
    check(exprs.array_creation, one_mat)


def test_array_creation_np_empty_gives_zeros():
    got = ppto.compile(exprs.empty_result)(np.ones((4, 3), np.float32))
    assert_same_value(got, (np.zeros((4, 3)), np.zeros((4, 3), np.float32)), None)


def test_conditional_expression_on_compile_time_values():
    compiled = check(exprs.conditional_expression, one_vec)
    check(exprs.conditional_expression, one_mat, compiled=compiled)


# == Indexing ======================================================================================
def test_basic_slicing():
    check(stmts.basic_slicing, one_mat)


def test_integer_indices_none_and_ellipsis():
    check(stmts.integer_none_ellipsis, lambda n, dt, rng: (rng.uniform(size=(n, 3, 4)).astype(dt),))


def test_bounds_from_expressions():
    check(stmts.expression_bounds, lambda n, dt, rng: (mat(n, dt, rng, cols=n), 2))


def test_bounds_from_expressions_checked_at_run_time():
    f = stmts.index_parameter
    compiled = ppto.compile(f)
    x = np.arange(5.0)
    run_both(f, compiled, (x, 4))
    run_both(f, compiled, (x, -5))
    with pytest.raises(IndexError):
        f(x, 5)
    with pytest.raises(ppto.PyptoError) as info:
        compiled(x, 5)
    assert isinstance(info.value, IndexError)


# == Statements ====================================================================================
def test_assignment():
    check(stmts.assignments, one_mat)


def test_assignment_chained_binds_one_array_to_both_names():
    check(stmts.chained_array_assignment, lambda n, dt, rng: (n,), dtypes=(np.float64,))


def test_augmented_assignment():
    check(stmts.augmented, two_mats)
    check(stmts.inplace_into_arguments, lambda n, dt, rng: (mat(n, dt, rng), vec(n + 2, dt, rng)))


def test_augmented_assignment_in_place_with_same_kind_casting():
    f = stmts.inplace_casting
    compiled = ppto.compile(f)
    rng = np.random.default_rng(5)
    # float32 += float64: cast back into the float32 argument, which is returned
    run_both(f, compiled, (vec(6, np.float32, rng), vec(6, np.float64, rng)))
    # int += float: NumPy refuses (same_kind casting), and so does PyPTO
    a, b = np.arange(4), np.ones(4)
    with pytest.raises(TypeError):
        f(a.copy(), b)
    with pytest.raises(ppto.PyptoError) as info:
        compiled(a.copy(), b)
    assert isinstance(info.value, TypeError)


def test_slice_assignment():
    check(stmts.slice_assignment, lambda n, dt, rng: (mat(n, dt, rng), vec(n + 2, dt, rng)))


def test_slice_assignment_through_an_alias():
    check(stmts.alias_write, one_vec)
    a = np.zeros(3)
    total, b = ppto.compile(stmts.alias_write)(a)
    assert b is a and a[0] == 1.0 and total == 1.0


def test_slice_assignment_views_see_later_writes():
    check(stmts.view_sees_write, one_mat)
    check(stmts.write_through_view, one_mat)


def test_return():
    for f in (
        stmts.return_argument,
        stmts.return_nothing,
        stmts.no_return_statement,
        stmts.return_argument_after_write,
    ):
        check(f, one_vec)
    check(stmts.return_tuple, lambda n, dt, rng: (vec(n, dt, rng), vec(n, dt, rng)))


def test_return_an_argument_returns_the_same_object():
    x = np.ones(4)
    assert ppto.compile(stmts.return_argument)(x) is x
    assert ppto.compile(stmts.return_argument_after_write)(x) is x and x[0] == 3.0
    y = np.zeros(3)
    got = ppto.compile(stmts.return_tuple)(x, y)
    assert got[0] is x and got[2][0] is y


def test_for_loops():
    compiled = check(stmts.loop_ranges, lambda n, dt, rng: (vec(n, dt, rng), 3))
    check(stmts.loop_ranges, lambda n, dt, rng: (vec(n, dt, rng), 0), compiled=compiled)


def test_for_loops_nested_reversed_and_triangular():
    check(stmts.triangular_loops, square)


def test_for_loops_a_carried_python_zero_is_widened():
    compiled = check(stmts.widening_sum, one_vec)
    got = compiled(np.arange(4.0))
    assert type(got) is np.float64 and got == 6.0
    got = compiled(np.arange(4, dtype=np.int64))
    assert type(got) is np.int64 and got == 6


def test_if_on_compile_time_values():
    f = stmts.compile_time_if
    compiled = ppto.compile(f)
    rng = np.random.default_rng(6)
    for args in (
        (vec(5, np.float64, rng),),
        (mat(5, np.float64, rng),),
        (mat(3, np.float64, rng),),
    ):
        for normalize in (False, True):
            run_both(f, compiled, args, {"normalize": normalize})
    run_both(f, compiled, (mat(2, np.float64, rng),))
    run_both(f, compiled, (mat(9, np.float64, rng),))
    assert any("guards" in h for h in compiled.history)


def test_if_on_compile_time_values_only_the_taken_branch_is_compiled():
    f = stmts.untaken_branch
    compiled = check(f, one_mat)
    with pytest.raises(ppto.UnsupportedError) as info:  # np.unique_all: the other branch
        compiled(np.ones((2, 3, 4)))
    assert info.value.code == "PPT104"


def test_if_on_scalars_at_run_time_names_assigned_in_both_branches():
    f = stmts.runtime_if
    compiled = ppto.compile(f)
    rng = np.random.default_rng(7)
    for dtype in FLOATS:
        for alpha in (0.5, -0.25, 0.0):
            run_both(f, compiled, (mat(4, dtype, rng), alpha))
    assert len(compiled.history) == 2  # one per dtype: the branch is taken at run time
    compiled = ppto.compile(stmts.runtime_if_alias)
    for alpha in (0.5, -0.5):
        run_both(stmts.runtime_if_alias, compiled, (vec(5, np.float32, rng), alpha))


def test_if_on_scalars_at_run_time_elif_and_numpy_scalar_conditions():
    f = stmts.runtime_elif
    compiled = ppto.compile(f)
    rng = np.random.default_rng(8)
    for s in (2.0, -2.0, 0.5):
        for n in (3, 30):
            run_both(f, compiled, (vec(n, np.float64, rng), s))
    assert len(compiled.history) == 1


def test_if_on_scalars_at_run_time_constants_assigned_in_both_branches():
    f = stmts.runtime_if_constants
    compiled = ppto.compile(f)
    for alpha in (0.5, -0.5):
        run_both(f, compiled, (np.ones(3), alpha))


def test_if_on_scalars_at_run_time_a_view_assigned_in_both_branches():
    f = stmts.runtime_if_view
    compiled = ppto.compile(f)
    for alpha in (0.5, -0.5):
        run_both(f, compiled, (np.arange(1.0, 5.0), alpha))


def test_pass_and_expression_statements():
    check(stmts.pass_and_expressions, one_mat)
