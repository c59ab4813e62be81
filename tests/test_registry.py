"""The op registry: one entry per op, every one of them tested against NumPy."""

import importlib

import numpy as np
import pytest

import pypto as ppto
from pypto.registry import KINDS

# The set the foundation issue requires (names as registered; aliases resolve to them).
REQUIRED = """
add subtract multiply divide floor_divide mod power equal not_equal less less_equal greater
greater_equal neg abs sign sqrt square reciprocal exp exp2 expm1 log log2 log10 log1p sin cos
tan arcsin arccos arctan sinh cosh tanh floor ceil isnan isinf isfinite logical_not maximum
minimum arctan2 hypot logical_and logical_or logical_xor where clip astype sum mean max min prod
any all cumsum cumprod transpose reshape expand_dims squeeze broadcast_to getitem concatenate
stack flip matmul dot outer softmax log_softmax gradient var std
""".split()

OP_TEST_MODULES = [
    "ops.test_maps",
    "ops.test_reductions",
    "ops.test_scans",
    "ops.test_reorders",
    "ops.test_contractions",
    "ops.test_composites",
    "ops.test_creation",
    "ops.test_stores",
    "ops.test_attention_op",
    "ops.test_numpy_functions",
    "ops.test_numpy_library",
    "ops.test_einsum",
    "ops.test_take",
    "parse.test_graph_breaks",
]


def builtin_ops():
    return [op for op in ppto.REGISTRY.ops() if op.builtin]


def test_the_required_ops_are_registered():
    assert [name for name in REQUIRED if name not in ppto.REGISTRY] == []


def test_every_builtin_op_is_tested_against_numpy():
    covered = set()
    for name in OP_TEST_MODULES:
        covered |= importlib.import_module(name).COVERED
    untested = sorted(op.name for op in builtin_ops() if op.name not in covered)
    assert untested == []
    assert sorted(covered - {op.name for op in builtin_ops()}) == []


@pytest.mark.parametrize("op", builtin_ops(), ids=lambda op: op.name)
def test_entries_are_complete(op):
    assert op.kind in KINDS
    assert op.api.__name__ == op.name and getattr(ppto, op.name) is op.api
    for alias in op.aliases:
        assert getattr(ppto, alias) is op.api
    if op.kind == "composite":
        assert op.expand is not None
    else:
        assert callable(op.impl) and callable(op.shape_rule) and callable(op.dtype_rule)
    for fn in op.numpy:
        assert ppto.REGISTRY.for_numpy(fn).name == op.name


def test_kinds_are_as_the_issue_describes():
    kind = {op.name: op.kind for op in builtin_ops()}
    assert {kind[n] for n in ("sin", "add", "where", "astype")} == {"map"}
    assert {kind[n] for n in ("sum", "mean", "any")} == {"reduce"}
    assert {kind[n] for n in ("cumsum", "cumprod")} == {"scan"}
    assert {kind[n] for n in ("transpose", "reshape", "getitem", "concatenate")} == {"reorder"}
    assert {kind[n] for n in ("matmul", "dot")} == {"contract"}
    assert {kind[n] for n in ("softmax", "var", "gradient")} == {"composite"}


def test_names_are_reachable_and_listed():
    names = dir(ppto)
    for name in ("sin", "reduce_sum", "reduce_mean", "cumsum", "softmax", "gradient"):
        assert name in names
    assert ppto.reduce_sum is ppto.sum and ppto.negative is ppto.neg
    assert np.sin in ppto.REGISTRY["sin"].numpy
