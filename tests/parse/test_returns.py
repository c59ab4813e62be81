"""``return`` inside an ``if`` decided at run time (parse/returns.py), against Python: values,
types, writes into arguments; the paths that cannot merge are refused."""

import numpy as np
import pytest
from helpers import assert_same_result

import pypto as ppto


def early_exit(x, tol):
    err = np.abs(x).max()
    if err < tol:
        return x * 0.0
    y = x / err
    if y.sum() > 0:
        return y + 1
    return y - 1


def tuple_paths(x):
    if x.sum() > 0:
        return x, x.max()
    else:
        s = x.min()
    return x * 2, s


def compile_time_then_run_time(x, k):
    if x.ndim == 1:  # noqa: SIM102 (a compile-time if, then a run-time one)
        if x[0] > 0:
            return x + k
    return x - k


def elif_chain(x):
    s = x.sum()
    if s > 1:
        return x * 3
    elif s < -1:
        return x * -3
    else:
        z = x + 1
    return z


def writes_then_returns(a):
    a[0] = 5.0
    if a.sum() > 6:
        a[1] = -1.0
        return a.sum()
    a *= 2
    return a.max()


CASES = {
    early_exit: [(3.0, 0.1), (0.001, 0.1), (-3.0, 0.1)],
    tuple_paths: [(1.0,), (-1.0,)],
    compile_time_then_run_time: [(1.0, 2.0), (-1.0, 2.0)],
    elif_chain: [(1.0,), (-1.0,), (0.0,)],
    writes_then_returns: [(1.0,), (-1.0,)],
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_returns_in_run_time_ifs_match_python(fn, dtype):
    rng = np.random.default_rng(2)
    compiled = ppto.compile(fn)
    for scale, *rest in CASES[fn]:
        for shape in ((4,), (2, 3)):
            x = (np.abs(rng.standard_normal(shape)) * scale).astype(dtype)
            mine, theirs = x.copy(), x.copy()
            _same(compiled(mine, *rest), fn(theirs, *rest))
            _same(mine, theirs)


def test_paths_returning_different_kinds_are_refused():
    def f(x):
        if x.sum() > 0:
            return x, x
        return x

    with pytest.raises(ppto.UnsupportedError, match="returns a tuple of 2, the other a value"):
        ppto.compile(f)(np.ones(3))


def test_paths_returning_different_dtypes_are_refused():
    def f(x):
        if x.sum() > 0:
            return x / 2
        return x * 2

    with pytest.raises(ppto.UnsupportedError) as info:
        ppto.compile(f)(np.arange(3))
    assert info.value.code == "PPT109"


def _same(got, want):
    assert_same_result(got, want)


def test_a_return_in_a_run_time_if_inside_a_loop_is_refused():
    def f(x, alpha):
        for i in range(3):
            if alpha > i:
                return x * alpha
        return x

    with pytest.raises(ppto.UnsupportedError) as info:
        ppto.compile(f)(np.ones(3), 0.5)
    assert info.value.code == "PPT106"


def int_parameter_on_one_path(x, k):
    if x[0] > 0:
        return 0
    return k


def python_bools(a):
    if a.sum() == 0:  # noqa: SIM103 (NumPy returns a Python bool, not np.bool_)
        return True
    return False


def test_python_numbers_through_run_time_branches():
    """(review: an int parameter returned from a branch was a NameError in generated code;
    Python bools came back as np.bool_)"""
    x = np.array([0.3, -0.1, 0.2])
    for v in (x, -x):
        _same(ppto.compile(int_parameter_on_one_path)(v, 4), int_parameter_on_one_path(v, 4))
    for v in (x, x * 0):
        _same(ppto.compile(python_bools)(v), python_bools(v))


def float_of_int_parameter(x, k):
    if x[0] > 0:
        return 0.0
    return float(k)


def test_a_float_of_a_size_returned_from_a_branch():
    x = np.array([0.3, -0.1, 0.2])
    for v in (x, -x):
        _same(ppto.compile(float_of_int_parameter)(v, 4), float_of_int_parameter(v, 4))
