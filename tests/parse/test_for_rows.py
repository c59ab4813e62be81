"""``for v in arr``: a loop over the rows of ``arr`` along axis 0, each ``v`` a view of its row
(NumPy's iteration: writes through ``v`` reach ``arr``), against NumPy."""

import numpy as np
import pytest
from helpers import assert_same

import pypto as ppto


def norm_total(A):
    total = 0.0
    for row in A:
        total = total + np.sqrt(np.sum(row * row))
    return total


def double_rows(A):
    for row in A:
        row *= 2.0
    return A


def sum_of_expression_rows(A):
    s = np.zeros(A.shape[1], dtype=A.dtype)
    for r in A[:, ::-1] * 2:
        s = s + r
    return s


def elements(x):
    best = x[0]
    for v in x:
        best = np.maximum(best, v)
    return best


CASES = [norm_total, double_rows, sum_of_expression_rows]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_loops_over_rows_match_numpy(fn, dtype):
    rng = np.random.default_rng(3)
    for shape in ((4, 3), (1, 5), (6, 1)):
        A = (rng.standard_normal(shape) * 5).astype(dtype)
        mine, theirs = A.copy(), A.copy()
        try:
            want = fn(theirs)
        except TypeError as e:  # (int rows *= 2.0: NumPy's UFuncTypeError; PyPTO raises it too)
            with pytest.raises(type(e)):
                ppto.compile(fn)(mine)
            continue
        got = ppto.compile(fn)(mine)
        assert type(got) is type(want)
        tol = 1e-5 if dtype == "float32" else 1e-12
        assert_same(got, want, rtol=tol, atol=tol)
        assert_same(mine, theirs)  # the writes through the rows


def test_a_loop_over_the_elements_of_a_vector():
    x = np.array([3.0, -1.0, 7.5, 2.0])
    got, want = ppto.compile(elements)(x), elements(x)
    assert type(got) is type(want) and got == want


def test_a_loop_over_a_0d_array_is_refused():
    with pytest.raises(ppto.UnsupportedError) as info:
        ppto.compile(norm_total)(np.float64(2.0) * np.ones(()))
    assert info.value.code == "PPT106"
