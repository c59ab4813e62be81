"""Contractions against NumPy: matmul (``@``, ``ppto.matmul``, ``np.matmul``), dot and outer.

matmul and dot call NumPy's own function, and outer is the product of the flattened operands,
the same multiply ``np.outer`` does, so every comparison is exact: dtype, shape and values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import arrays, check, check_reuse, dtypes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto

COVERED = {"matmul", "dot", "outer"}


def data_of(shape, dtype=np.int64):
    return (np.arange(math.prod(shape)) % 7 - 3).astype(dtype).reshape(shape)


SIZE = st.integers(0, 4)


@st.composite
def matmul_shapes(draw):
    """Operand shapes for matmul: every 1-d / 2-d / batched combination, batch axes that
    broadcast, size-0 axes; sometimes mismatched core sizes, batch axes that do not broadcast
    or a 0-d operand (NumPy raises)."""
    case = draw(st.sampled_from(["1x1", "1x2", "2x1", "2x2", "1xN", "Nx1", "NxN", "NxN", "0d"]))
    n, k, m = draw(SIZE), draw(SIZE), draw(SIZE)
    k2 = k if draw(st.integers(0, 5)) else draw(SIZE)  # sometimes mismatched
    batch = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    b1, b2 = batch.input_shapes
    if draw(st.integers(0, 7)) == 0:  # batch axes that may not broadcast
        b1, b2 = (
            draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)),
            draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)),
        )
    core_a = {"1": (k,), "2": (n, k), "N": (*b1, n, k)}
    core_b = {"1": (k2,), "2": (k2, m), "N": (*b2, k2, m)}
    if case == "0d":
        other = draw(st.sampled_from([(k,), (n, k), (*b1, n, k)]))
        return ((), other) if draw(st.booleans()) else (other, ())
    return core_a[case[0]], core_b[case[2]]


@settings(max_examples=120)
@given(st.data())
def test_matmul(data):
    sa, sb = data.draw(matmul_shapes(), label="shapes")
    a = data.draw(arrays(data.draw(dtypes()), sa))
    b = data.draw(arrays(data.draw(dtypes()), sb))
    form = data.draw(st.sampled_from(["operator", "ppto", "np"]))
    build = {
        "operator": lambda x, y: x @ y,
        "ppto": lambda x, y: ppto.matmul(x, y),
        "np": lambda x, y: np.matmul(x, y),
    }[form]
    check(build, lambda x, y: np.matmul(x, y), x=a, y=b)


@settings(max_examples=60)
@given(st.data())
def test_matmul_with_a_constant_operand(data):
    sa, sb = data.draw(matmul_shapes(), label="shapes")
    a = data.draw(arrays(data.draw(dtypes()), sa))
    b = data.draw(arrays(data.draw(dtypes()), sb, layout=False))
    if data.draw(st.booleans()):
        check(lambda x: x @ b, lambda x: x @ b, x=a)
    else:
        check(lambda x: a @ x, lambda x: a @ x, x=b)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3,), (4,)),  # 1-d core mismatch
        ((2, 3), (4, 2)),
        ((3,), (4, 2)),
        ((2, 3), (2,)),
        ((2, 2, 3), (3, 3, 2)),  # batch axes that do not broadcast
        ((), (3,)),  # a 0-d operand is not a matrix
        ((3, 3), ()),
    ],
)
def test_matmul_errors(sa, sb):
    a, b = data_of(sa), data_of(sb)
    with pytest.raises(ValueError):
        np.matmul(a, b)
    with pytest.raises(ppto.PyptoError):
        (ppto.tensor("x") @ ppto.tensor("y")).run(x=a, y=b)


def test_matmul_python_scalar_operand_raises():
    a = data_of((2, 2))
    with pytest.raises(ValueError):
        np.matmul(a, 2)
    with pytest.raises(ppto.PyptoError):
        (ppto.tensor("x") @ 2).run(x=a)
    with pytest.raises(ppto.PyptoError):
        (2.5 @ ppto.tensor("x")).run(x=a)


@pytest.mark.parametrize(
    "da, db",
    [("bool", "bool"), ("int8", "uint8"), ("int32", "int64"), ("uint32", "int8")]
    + [("float16", "float16"), ("float16", "int8"), ("float32", "bool"), ("int64", "float64")],
)
def test_matmul_dtypes(da, db):
    a, b = data_of((2, 3, 4), da), data_of((4, 5), db)
    got = check(lambda x, y: x @ y, lambda x, y: x @ y, x=a, y=b)
    assert got.dtype == np.matmul(a, b).dtype


def test_matmul_chain_reused_across_shapes():
    chain = ppto.tensor("x") @ ppto.tensor("y")
    pairs = [
        ((2, 3), (3, 4)),
        ((5, 2), (2, 3)),
        ((4, 0), (0, 2)),
        ((2, 3), (4, 2)),  # mismatch: NumPy raises
        ((3, 6), (6, 3)),
        ((2, 4), (4, 0)),
        ((2, 2), (3, 2)),
    ]
    bindings = [{"x": data_of(s1), "y": data_of(s2)} for s1, s2 in pairs]
    check_reuse(chain, lambda x, y: np.matmul(x, y), bindings)
    chain = ppto.matmul(ppto.tensor("x"), ppto.tensor("y"))
    pairs = [
        ((2, 2, 3), (3, 4)),
        ((4, 3, 2, 3), (2, 3, 5)),
        ((3, 2, 3), (4, 3, 5)),  # batch axes that do not broadcast
        ((2, 5, 6), (2, 6, 2)),
        ((0, 2, 3), (3, 3)),
    ]
    bindings = [{"x": data_of(s1), "y": data_of(s2)} for s1, s2 in pairs]
    check_reuse(chain, lambda x, y: np.matmul(x, y), bindings)
    chain = ppto.tensor("x") @ ppto.tensor("y")  # vector operands
    pairs = [((3,), (3,)), ((5,), (5, 2)), ((0,), (0,)), ((4,), (3,)), ((2, 4), (4,))]
    bindings = [{"x": data_of(s1), "y": data_of(s2)} for s1, s2 in pairs]
    check_reuse(chain, lambda x, y: np.matmul(x, y), bindings)


@settings(max_examples=100)
@given(st.data())
def test_matmul_random_chain_reused_across_shapes(data):
    case = data.draw(st.sampled_from(["1x1", "1x2", "2x1", "2x2", "3x2", "2x3"]))
    ra, rb = int(case[0]), int(case[2])
    dt = data.draw(dtypes())
    chain = ppto.tensor("x") @ ppto.tensor("y")
    bindings = []
    for _ in range(data.draw(st.integers(2, 5))):
        n, k, m, batch = data.draw(SIZE), data.draw(SIZE), data.draw(SIZE), data.draw(SIZE)
        k2 = k if data.draw(st.integers(0, 4)) else data.draw(SIZE)
        sa = {1: (k,), 2: (n, k), 3: (batch, n, k)}[ra]
        sb = {1: (k2,), 2: (k2, m), 3: (batch, k2, m)}[rb]
        bindings.append({"x": data_of(sa, dt), "y": data_of(sb, dt)})
    check_reuse(chain, lambda x, y: np.matmul(x, y), bindings)


# -- dot --------------------------------------------------------------------------------------
@st.composite
def dot_shapes(draw):
    """All np.dot cases: a 0-d operand, 1-d . 1-d, N-d . 1-d, N-d . M-d (M >= 2), sizes
    sometimes mismatched."""
    case = draw(st.sampled_from(["scalar", "1x1", "Nx1", "NxM", "1xM", "NxM"]))
    k = draw(SIZE)
    k2 = k if draw(st.integers(0, 5)) else draw(SIZE)
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    trail = draw(hnp.array_shapes(min_dims=0, max_dims=1, max_side=3))
    m = draw(SIZE)
    if case == "scalar":
        other = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
        return ((), other) if draw(st.booleans()) else (other, ())
    if case == "1x1":
        return (k,), (k2,)
    if case == "Nx1":
        return (*lead, k), (k2,)
    if case == "1xM":
        return (k,), (*trail, k2, m)
    return (*lead, k), (*trail, k2, m)


@settings(max_examples=120)
@given(st.data())
def test_dot(data):
    sa, sb = data.draw(dot_shapes(), label="shapes")
    a = data.draw(arrays(data.draw(dtypes()), sa))
    b = data.draw(arrays(data.draw(dtypes()), sb))
    form = data.draw(st.sampled_from(["ppto", "np", "method"]))
    build = {
        "ppto": lambda x, y: ppto.dot(x, y),
        "np": lambda x, y: np.dot(x, y),
        "method": lambda x, y: x.dot(y),
    }[form]
    check(build, lambda x, y: np.dot(x, y), x=a, y=b)


@given(st.data())
def test_dot_python_scalar_operand(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(hnp.array_shapes(min_dims=0, max_dims=3))))
    s = data.draw(st.sampled_from([3, -2, 0, 2.5, -0.0, True]))
    if data.draw(st.booleans()):
        check(lambda x: ppto.dot(x, s), lambda x: np.dot(x, s), x=a)
    else:
        check(lambda x: ppto.dot(s, x), lambda x: np.dot(s, x), x=a)


@pytest.mark.parametrize(
    "sa, sb",
    [((3,), (4,)), ((2, 3), (4,)), ((3,), (4, 2)), ((2, 3), (2, 3)), ((2, 2, 3), (2, 4, 2))],
)
def test_dot_shapes_not_aligned_raise(sa, sb):
    a, b = data_of(sa), data_of(sb)
    with pytest.raises(ValueError):
        np.dot(a, b)
    with pytest.raises(ppto.PyptoError):
        ppto.dot(ppto.tensor("x"), ppto.tensor("y")).run(x=a, y=b)


def test_dot_chain_reused_across_shapes():
    chain = ppto.dot(ppto.tensor("x"), ppto.tensor("y"))
    pairs = [
        ((2, 3), (3, 4)),
        ((2, 4, 3), (5, 3, 2)),
        ((2, 4, 3), (5, 2, 2)),  # not aligned
        ((0, 2, 5), (2, 5, 0)),
        ((3, 2, 2), (2, 2, 3)),
    ]
    bindings = [{"x": data_of(s1), "y": data_of(s2, np.float32)} for s1, s2 in pairs]
    check_reuse(chain, lambda x, y: np.dot(x, y), bindings)
    chain = ppto.tensor("x").dot(ppto.tensor("y"))
    pairs = [((3,), (3,)), ((2, 5), (5,)), ((4,), (4,)), ((4,), (2,)), ((0,), (0,))]
    bindings = [{"x": data_of(s1, np.int8), "y": data_of(s2, np.uint8)} for s1, s2 in pairs]
    check_reuse(chain, lambda x, y: np.dot(x, y), bindings)


# -- outer ------------------------------------------------------------------------------------
@settings(max_examples=60)
@given(st.data())
def test_outer(data):
    sa = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    sb = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    a = data.draw(arrays(data.draw(dtypes()), sa))
    b = data.draw(arrays(data.draw(dtypes()), sb))
    form = data.draw(st.sampled_from(["ppto", "np"]))
    build = {
        "ppto": lambda x, y: ppto.outer(x, y),
        "np": lambda x, y: np.outer(x, y),
    }[form]
    check(build, lambda x, y: np.outer(x, y), x=a, y=b)


@given(st.data())
def test_outer_python_scalar_operand(data):
    a = data.draw(arrays(data.draw(dtypes()), data.draw(hnp.array_shapes(min_dims=0, max_dims=3))))
    s = data.draw(st.sampled_from([3, -2, 0, 2.5, -1.5, True, False]))
    if data.draw(st.booleans()):
        check(lambda x: ppto.outer(x, s), lambda x: np.outer(x, s), x=a)
    else:
        check(lambda x: ppto.outer(s, x), lambda x: np.outer(s, x), x=a)


def test_outer_chain_reused_across_shapes():
    chain = ppto.outer(ppto.tensor("x"), ppto.tensor("y"))
    pairs = [((3,), (4,)), ((2, 3), (5,)), ((0,), (3,)), ((2, 2), (3, 0)), ((6,), (2, 2))]
    pairs += [((2, 3), (4, 2)), ((7,), (1,)), ((3,), (4,))]
    bindings = [{"x": data_of(s1, np.int8), "y": data_of(s2, np.float16)} for s1, s2 in pairs]
    check_reuse(chain, lambda x, y: np.outer(x, y), bindings)
