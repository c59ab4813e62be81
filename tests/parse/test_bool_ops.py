"""``and`` / ``or`` / ``not`` on scalars known only at run time, with Python's semantics (the
operand itself, not a bool; only the truth in an ``if`` test and under ``not``), against
Python + NumPy: values and exact result types."""

import numpy as np
import pytest
from helpers import assert_same_result

import pypto as ppto


def converge_test(x, tol):
    err = np.abs(x).max()
    s = x.sum()
    if err > tol and s > 0:
        y = x / err
    else:
        y = x * 2.0
    if not (s > 1 or err < tol):
        y = y + 1
    return y, (err > tol) and (s > 0), (err > 1.0) or (s > 2.0), not s


def pick(a, b):
    return a and b, a or b, not a


def extremes(x):
    m, n = x.max(), x.min()
    return m and n, m or n, (m > 0) and (n < 0)


def mixed_types_in_an_if(x, k):
    if x.max() and k > 2:  # a float and a bool: only the truth counts in a test
        return x + 1
    return x - 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_and_or_not_match_python(dtype):
    rng = np.random.default_rng(1)
    for x in (rng.standard_normal(5), -np.abs(rng.standard_normal(5)), np.zeros(3)):
        x = (x * 3).astype(dtype)
        for tol in (0.1, 10.0):
            _same(ppto.compile(converge_test)(x, tol), converge_test(x, tol))
        _same(ppto.compile(extremes)(x), extremes(x))
        for k in (1, 3):
            _same(ppto.compile(mixed_types_in_an_if)(x, k), mixed_types_in_an_if(x, k))
    for a, b in ((0.0, 2.0), (1.5, 0.0), (2.0, 3.0), (0.0, 0.0)):
        _same(ppto.compile(pick)(a, b), pick(a, b))


def test_a_name_of_two_dtypes_after_a_run_time_branch_is_refused():
    def f(x):
        if x.sum() > 0:
            y = x / 2
        else:
            y = x * 2
        return y

    for x in (np.arange(3), -np.arange(3)):  # NumPy: float64 after one branch, else int64
        assert f(x).dtype == (np.float64 if x.sum() > 0 else np.int64)
    with pytest.raises(ppto.UnsupportedError) as info:
        ppto.compile(f)(np.arange(3))
    assert info.value.code == "PPT109" and "would depend on the branch" in str(info.value)
    assert ppto.compile(f)(np.arange(3.0)).dtype == np.float64  # one dtype: compiled


def test_and_of_run_time_values_of_two_types_outside_a_test_is_refused():
    def f(x):
        return x.max() and (x.min() > 0)

    with pytest.raises(ppto.UnsupportedError, match="its type would depend on the values"):
        ppto.compile(f)(np.ones(3))


def _same(got, want):
    assert_same_result(got, want)


def count_positive_prefix(x, n):
    s = 0
    i = 0
    while i < n and x[i] > 0:  # x[i] only where i < n: Python's short circuit
        s += 1
        i += 1
    return s


def guarded_division(c):
    if c == 0 or 10 // c > 1:
        return 1.0
    return 2.0


def guarded_neighbour(x):
    t = 0.0
    for i in range(x.shape[0]):
        if i >= 1 and x[i - 1] < 0:
            break
        t = t + x[i]
    return t


def three_terms(x, k):
    while x.sum() > 0 and k < 10 and x.max() < 100:
        x = x - 0.5
        k += 1
    return x, k


def values(a, b):
    return a and b, a or b


def test_and_or_short_circuit_as_python():
    """The right operand is computed only where Python computes it (fixes by review: an
    IndexError, a ZeroDivisionError and a loop guard breach where NumPy runs fine)."""
    for x in (np.array([1.0, 2.0, 3.0]), np.array([1.0, -2.0, 3.0])):
        _same(ppto.compile(count_positive_prefix)(x, 3), count_positive_prefix(x, 3))
    for c in (0, 3, 20):
        _same(ppto.compile(guarded_division)(np.int64(c)), guarded_division(np.int64(c)))
    x = np.array([0.5, 0.2, -0.3, 4.0])
    _same(ppto.compile(guarded_neighbour)(x), guarded_neighbour(x))
    _same(ppto.compile(three_terms)(np.ones(3) * 3, 0), three_terms(np.ones(3) * 3, 0))
    for a, b in ((0.0, 2.0), (1.5, 3.0)):
        _same(ppto.compile(values)(a, b), values(a, b))
