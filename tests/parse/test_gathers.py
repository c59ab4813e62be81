"""Gathers: ``x[idx]``, ``x[:, idx]`` with an integer index array, and ``x[k]`` with an integer
known only at run time (``k = indptr[i]``), as ``np.take`` graph breaks, against NumPy:
values, dtypes, NumPy's IndexError; a CSR matrix-vector product with index pointers."""

import numpy as np
import pytest
from helpers import assert_same, csr_of, cuda_emulator, real_code

import pypto as ppto


def pick(x, idx):
    return x[idx] * 2 + 1


def column_sums(A, idx):
    return A[:, idx].sum(axis=0)


def rows_of(A, idx):
    return A[idx] - A.mean(axis=0)


csr_matvec = real_code().csr_matvec  # y = A x, A in CSR form (examples/real_code)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex128"])
def test_gathers_match_numpy(dtype):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(6) * 4).astype(dtype)
    A = (rng.standard_normal((4, 6)) * 4).astype(dtype)
    for idx in (np.array([0, 5, 2, -1, 2]), np.array([[1, 0], [3, 3]]), np.array(2)):
        tol = 1e-5 if dtype == "float32" else 1e-12
        assert_same(ppto.compile(pick)(x, idx), pick(x, idx))
        assert_same(ppto.compile(column_sums)(A, idx), column_sums(A, idx), rtol=tol, atol=tol)
        i = idx % 4
        assert_same(ppto.compile(rows_of)(A, i), rows_of(A, i), rtol=tol, atol=tol)


def test_an_index_out_of_bounds_is_numpys_index_error():
    x = np.arange(6.0)
    with pytest.raises(IndexError) as want:
        pick(x, np.array([7]))
    with pytest.raises(IndexError) as got:
        ppto.compile(pick)(x, np.array([7]))
    assert str(want.value) in str(got.value)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_csr_matvec_matches_the_dense_product(dtype):
    rng = np.random.default_rng(8)
    dense = (rng.standard_normal((7, 6)) * (rng.uniform(size=(7, 6)) > 0.5)).astype(dtype)
    dense[3] = 0  # an empty row
    data, indices, indptr = csr_of(dense)
    v = rng.standard_normal(6).astype(dtype)
    got = ppto.compile(csr_matvec)(data, indices, indptr, v)
    want = csr_matvec(data, indices, indptr, v)
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_same(got, want, rtol=tol, atol=tol)


def test_a_scatter_mixing_an_index_array_with_a_slice_writes_into_the_view():
    """``x[idx, 1:3] = v`` is ``x[:, 1:3][idx] = v`` (tests/parse/test_mixed_indices.py)."""

    def f(x, idx):
        x[idx, 1:3] = 0.0
        return x

    a, b = np.ones((4, 4)), np.ones((4, 4))
    np.testing.assert_array_equal(ppto.compile(f)(a, np.array([1, 2])), f(b, np.array([1, 2])))
    np.testing.assert_array_equal(a, b)


_emu = cuda_emulator("gathers_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
def test_gathers_on_the_cuda_target():
    from cupy_backend import make_cupy, to_host

    rng = np.random.default_rng(9)
    A = rng.standard_normal((4, 6))
    idx = np.array([0, 5, 2, -1, 2])
    cp = make_cupy(order="random", seed=6)
    got = ppto.compile(column_sums)(cp.device(A), cp.device(idx))
    assert_same(to_host(got), column_sums(A, idx), rtol=1e-12, atol=1e-12)
