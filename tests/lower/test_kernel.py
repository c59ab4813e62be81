"""A Plan kernel lowered (pypto/lower/kernel.py): views of memory become one read with the
composed map, reductions and scans carry NumPy's combine and identity."""

import itertools

import numpy as np
import pytest

import pypto as ppto
from pypto.lower.families import family
from pypto.lower.index_map import point
from pypto.lower.kernel import combine_of, lower_kernel
from pypto.passes.pipeline import plan_graph
from pypto.symbolic import evaluate

REDUCTIONS = {
    "reduce_sum": np.sum,
    "reduce_prod": np.prod,
    "reduce_max": np.max,
    "reduce_min": np.min,
    "reduce_any": np.any,
    "reduce_all": np.all,
}


def only_kernel(chain, **data):
    plan = plan_graph(ppto.trace(chain, **data))
    (k,) = plan.kernels
    return plan, k


def test_a_chain_of_views_of_an_input_is_one_read_with_the_composed_map():
    x = ppto.tensor("x")
    data = np.arange(48.0).reshape(6, 8)
    plan, k = only_kernel(ppto.sin(ppto.flip(x.T, 0)[1:, ::2]) + 1.0, x=data)
    low = lower_kernel(k, plan.same)
    view = next(e for e in k.body.eqns if e.op == "sin").inputs[0]
    load = low.loads[id(view)]
    assert load.source is k.inputs[0] and len(load.chain) == 3
    assert all(family(e) != "index" for e in low.values)
    want = np.flip(data.T, 0)[1:, ::2]
    sizes = {"x.0": 6, "x.1": 8}  # the traced sizes of x
    for idx in itertools.product(*(range(d) for d in want.shape)):
        src = point(load.map, tuple(map(str, idx)), lambda d: str(evaluate(d, sizes)))
        assert data[tuple(eval(i) for i in src)] == want[idx]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_reductions_combine_and_start_as_numpy(name, dtype):
    x = ppto.tensor("x")
    data = np.ones((3, 4), dtype)
    plan, k = only_kernel(getattr(ppto, name)(x, axis=1), x=data)
    (e,) = [e for e in k.body.eqns if family(e) == "reduce"]
    c = combine_of(e)
    assert lower_kernel(k, plan.same).combines[id(e.out)] == c
    fn = REDUCTIONS[name]
    empty = np.ones((0,), dtype)
    if c.identity is None:  # NumPy raises for an empty max/min
        with pytest.raises(ValueError):
            fn(empty)
    else:
        assert fn(empty) == c.identity
    # the accumulator's start combined with any value is that value
    values = np.array([0, 1, -3, 100], dtype) if dtype != np.bool_ else np.array([0, 1], dtype)
    for v in values:
        assert c.ufunc(np.asarray(c.start).astype(values.dtype), v) == c.ufunc.reduce([v])


def test_a_scan_combines_with_its_step():
    x = ppto.tensor("x")
    plan, k = only_kernel(ppto.cumprod(x, axis=0), x=np.ones((4, 3)))
    (e,) = [e for e in k.body.eqns if family(e) == "scan"]
    c = lower_kernel(k, plan.same).combines[id(e.out)]
    assert c.ufunc is np.multiply and c.identity == 1
