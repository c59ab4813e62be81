"""The lazy API of the design document: building chains, binding inputs, running, caching."""

import importlib.util

import numpy as np
import pytest
from helpers import assert_same

import pypto as ppto
from pypto.tracer import placeholders

rng = np.random.default_rng(0)
A34 = rng.standard_normal((3, 4)).astype(np.float32)
B4 = rng.standard_normal(4).astype(np.float32)


# -- building -------------------------------------------------------------------------------------
def test_nothing_is_computed_until_run():
    calls = []

    @ppto.register_operator(name="spy_op", elementwise=True)
    def spy(a):
        calls.append(a.shape)
        return a * 1

    try:
        x = ppto.tensor("x")
        chain = ppto.spy_op(x) + 1  # registration probes dtypes only when traced
        assert calls == []
        chain.run(x=A34)
        assert (3, 4) in calls
    finally:
        ppto.unregister_operator("spy_op")


def test_tensor_declarations_are_validated():
    for bad in ("1x", "x-y", "class", "", 3):
        with pytest.raises(ppto.ArgumentError):
            ppto.tensor(bad)
    with pytest.raises(ppto.ArgumentError):
        ppto.tensor("x", shape=(3, -1))
    with pytest.raises(ppto.ArgumentError):
        ppto.tensor("x", shape=(3.5,))
    with pytest.raises(ppto.DTypeError, match="not supported"):
        ppto.tensor("x", dtype=object)
    assert ppto.tensor("x", shape=4) is not None  # a bare int is a 1-d shape


def test_operators_methods_and_reflected_forms_match_numpy():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    cases = [
        (x + y, A34 + B4),
        (2 - x, 2 - A34),
        (B4 * x, B4 * A34),
        (x / 3, A34 / 3),
        (x // 0.5, A34 // 0.5),
        (x % 0.7, A34 % 0.7),
        (abs(x) ** 0.5, abs(A34) ** 0.5),
        (-x, -A34),
        (+x, +A34),
        (x @ y, A34 @ B4),
        (~(x > 0), ~(A34 > 0)),
        ((x > 0) & (y < 0), (A34 > 0) & (B4 < 0)),
        ((x > 0) | (y < 0), (A34 > 0) | (B4 < 0)),
        (x == y, A34 == B4),
        (x != y, A34 != B4),
        (x <= 0, A34 <= 0),
        (x >= y, A34 >= B4),
        (x.T, A34.T),
        (x.sum(axis=1), A34.sum(axis=1)),
        (x.mean(), A34.mean()),
        (x.reshape(2, 6), A34.reshape(2, 6)),
        (x.reshape((4, 3)), A34.reshape((4, 3))),
        (x.transpose(), A34.transpose()),
        (x.transpose(1, 0), A34.transpose(1, 0)),
        (x.astype(np.int32), A34.astype(np.int32)),
        (x.flatten(), A34.flatten()),
        (x.ravel(), A34.ravel()),
        (x[None].squeeze(0), A34[None].squeeze(0)),
        (x.max(axis=0, keepdims=True), A34.max(axis=0, keepdims=True)),
        (x.cumsum(axis=1), A34.cumsum(axis=1)),
        (x.var(ddof=1), A34.var(ddof=1)),
        (x.dot(y), A34.dot(B4)),
        (x.clip(-0.1, 0.1), A34.clip(-0.1, 0.1)),
        (x.copy(), A34),
        (x.swapaxes(0, 1), A34.swapaxes(0, 1)),
        (x.std(axis=0), A34.std(axis=0)),
        (x.any(axis=1), A34.any(axis=1)),
        (x.all(), A34.all()),
        (x.min(), A34.min()),
        (x.prod(axis=0, dtype=np.float64), A34.prod(axis=0, dtype=np.float64)),
        (x.cumprod(), A34.cumprod()),
        (x[1:, ::-2], A34[1:, ::-2]),
    ]
    data = {"x": A34, "y": B4}
    for chain, want in cases:
        used = placeholders([chain._node])  # bind exactly the inputs this chain has
        with np.errstate(all="ignore"):
            got = chain.run(**{name: data[name] for name in used})
        assert_same(got, want, rtol=1e-5)


def test_numpy_functions_on_lazy_tensors_build_chains():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = np.sin(x) + np.sum(np.transpose(x), axis=1) * np.maximum(y, 0)
    assert isinstance(chain, ppto.Tensor)
    want = np.sin(A34) + np.sum(np.transpose(A34), axis=1) * np.maximum(B4, 0)
    assert_same(chain.run(x=A34, y=B4), want)
    assert_same((np.float32(2) * x).run(x=A34), np.float32(2) * A34)
    assert_same((B4 + x).run(x=A34), B4 + A34)  # ndarray on the left defers to the tensor


def test_unsupported_numpy_calls_are_named():
    x = ppto.tensor("x")
    with pytest.raises(ppto.UnsupportedError, match="np.sort"):
        np.sort(x)
    with pytest.raises(ppto.UnsupportedError, match=r"np.subtract.reduce"):
        np.subtract.reduce(x)
    with pytest.raises(ppto.UnsupportedError, match="out"):
        np.sin(x, out=np.empty(3))
    with pytest.raises(ppto.UnsupportedError, match="out="):
        np.sum(x, out=np.empty(()))
    with pytest.raises(ppto.ArgumentError, match="np.mean"):
        np.mean(x, where=True)


def test_a_lazy_tensor_has_no_value_yet():
    x = ppto.tensor("x")
    with pytest.raises(ppto.UnsupportedError, match="truth value"):
        bool(x > 0)
    with pytest.raises(ppto.UnsupportedError, match="iterate"):
        list(x)
    with pytest.raises(ppto.UnsupportedError, match="run"):
        np.asarray(x)
    with pytest.raises(ppto.UnsupportedError, match="only known when it runs"):
        x.shape  # noqa: B018
    with pytest.raises(TypeError):
        {x: 1}  # noqa: B018  (== builds a node, so tensors are unhashable)
    assert repr(ppto.sin(x) + 1) == "Tensor(add(sin(x), 1))"


def test_python_numbers_fold_to_python_numbers():
    assert ppto.sqrt(64) == 8.0 and type(ppto.sqrt(64)) is float
    assert ppto.maximum(2, 3) == 3 and type(ppto.maximum(2, 3)) is int
    assert ppto.sqrt(np.float32(4)).dtype == np.float32  # NumPy scalars stay NumPy scalars
    assert ppto.isnan(float("nan")) is True


# -- binding --------------------------------------------------------------------------------------
def test_missing_and_extra_inputs_are_named():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = x + y
    with pytest.raises(ppto.BindingError, match=r"missing input y .*inputs: x, y"):
        chain.run(x=A34)
    with pytest.raises(ppto.BindingError, match="unknown input z"):
        chain.run(x=A34, y=B4, z=B4)
    with pytest.raises(ppto.BindingError, match="missing inputs x, y; unknown input w"):
        chain.run(w=1)


def test_declared_rank_dtype_and_sizes_are_checked():
    x = ppto.tensor("x", shape=(None, 4), dtype=np.float32)
    with pytest.raises(ppto.BindingError, match=r"'x' must have rank 2") as e:
        (x + 1).run(x=B4)
    assert e.value.code == "PPT403"
    with pytest.raises(ppto.BindingError, match=r"'x' must have dtype float32, got float64"):
        (x + 1).run(x=A34.astype(np.float64))
    with pytest.raises(ppto.BindingError, match="size 4 on axis 1"):
        (x + 1).run(x=A34.T.copy())
    assert_same((x + 1).run(x=A34), A34 + 1)


def test_named_sizes_are_shared_between_inputs():
    a = ppto.tensor("a", shape=("n", "k"))
    b = ppto.tensor("b", shape=("k", "m"))
    chain = a @ b
    assert_same(chain.run(a=A34, b=A34.T.copy()), A34 @ A34.T)
    with pytest.raises(ppto.BindingError, match=r"'a' \(axis 1\) and 'b' \(axis 0\) share"):
        chain.run(a=A34, b=A34)
    graph = ppto.trace(chain, a=A34, b=A34.T.copy())
    assert "a:f32[n,k] b:f32[k,m]" in str(graph) and not graph.guards


def test_shapes_that_do_not_broadcast_name_both_operands_and_the_line():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(x) + y
    with pytest.raises(ppto.ShapeError) as e:
        chain.run(x=A34, y=np.ones(5, np.float32))
    text = str(e.value)
    assert "sin(x): float32 (3, 4)" in text and "y: float32 (5,)" in text
    assert "do not broadcast" in text and "test_lazy_api.py" in text
    assert "chain = ppto.sin(x) + y" in text


def test_values_that_are_not_numpy_arrays():
    x = ppto.tensor("x")
    assert_same((x * 2).run(x=[1, 2, 3]), np.array([1, 2, 3]) * 2)

    class FakeGPUArray:
        __cuda_array_interface__ = {}

    with pytest.raises(ppto.BindingError, match="GPU array") as e:
        (x * 2).run(x=FakeGPUArray())
    assert e.value.code == "PPT406"

    class FakeCupyArray(FakeGPUArray):  # a GPU array PyPTO would run, but CuPy is absent here
        dtype, shape = np.dtype(np.float32), (3,)

    if importlib.util.find_spec("cupy") is None:
        with pytest.raises(ppto.BindingError, match="CuPy is not installed") as e:
            (x * 2).run(x=FakeCupyArray())
        assert e.value.code == "PPT406"
    with pytest.warns(PendingDeprecationWarning):
        matrix = np.matrix([[1.0]])
    with pytest.raises(ppto.BindingError, match="np.matrix"):
        (x * 2).run(x=matrix)
    with pytest.raises(ppto.BindingError, match="object is not supported"):
        (x * 2).run(x=np.array([None, 1], dtype=object))
    with pytest.raises(ppto.BindingError, match="datetime64"):
        (x * 2).run(x=np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_scalar_inputs_promote_like_numpy_scalars():
    x, s = ppto.tensor("x"), ppto.tensor("s")
    chain = x * s
    assert chain.run(x=A34, s=2.0).dtype == np.float32  # a Python float is weak
    assert chain.run(x=A34, s=np.float64(2.0)).dtype == np.float64  # a NumPy scalar is strong
    assert chain.run(x=A34, s=np.array(2.0)).dtype == np.float64  # so is a 0-d array
    assert chain.run(x=np.arange(3, dtype=np.int8), s=True).dtype == np.int8
    assert_same(chain.run(x=3.0, s=2), np.multiply(3.0, 2))


# -- running several outputs ----------------------------------------------------------------------
def test_several_outputs_at_once():
    x = ppto.tensor("x")
    a, b = ppto.sin(x), x.sum()
    got_list = ppto.run([a, b], x=A34)
    got_tuple = ppto.run((a, b), x=A34)
    got_dict = ppto.run({"a": a, "b": b}, x=A34)
    assert isinstance(got_list, list) and isinstance(got_tuple, tuple)
    for got in (got_list, got_tuple, (got_dict["a"], got_dict["b"])):
        assert_same(got[0], np.sin(A34))
        assert_same(got[1], A34.sum())
    with pytest.raises(ppto.BindingError):
        ppto.run(3, x=A34)
    with pytest.raises(ppto.BindingError, match="two different inputs are named"):
        ppto.run(ppto.tensor("x") + ppto.tensor("x"), x=A34)


def test_an_input_can_be_an_output():
    x = ppto.tensor("x")
    assert ppto.run([x, x + 1], x=A34)[0] is A34


def test_long_chains_do_not_recurse():
    x = ppto.tensor("x")
    chain = x
    for _ in range(3000):
        chain = chain + 1.0
    assert_same(chain.run(x=np.zeros(2)), np.full(2, 3000.0))


# -- specialization and the trace cache --------------------------------------------------------
def test_one_graph_serves_every_size_its_guards_allow():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = x[1:-1] * y
    g1 = ppto.trace(chain, x=np.ones(6), y=np.ones(4))
    g2 = ppto.trace(chain, x=np.ones(10), y=np.ones(8))
    assert g1 is g2  # same dtypes, ranks and size-1 pattern; guards hold
    assert_same(
        chain.run(x=np.arange(10.0), y=np.arange(8.0)), np.arange(10.0)[1:-1] * np.arange(8)
    )
    g3 = ppto.trace(chain, x=np.ones(3), y=np.ones(5))  # x.0 - 2 == 1: broadcasts, retraced
    assert g3 is not g1
    assert_same(chain.run(x=np.arange(3.0), y=np.arange(5.0)), np.arange(3.0)[1:-1] * np.arange(5))
    with pytest.raises(ppto.ShapeError):
        chain.run(x=np.ones(6), y=np.ones(5))


def test_size_one_axes_and_dtypes_specialize():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = x + y
    g = ppto.trace(chain, x=np.ones((3, 4)), y=np.ones((3, 4)))
    assert ppto.trace(chain, x=np.ones((3, 1)), y=np.ones((1, 4))) is not g
    assert ppto.trace(chain, x=np.ones((3, 4), np.float32), y=np.ones((3, 4))) is not g
    assert_same(chain.run(x=np.ones((3, 1)), y=np.ones((1, 4))), np.full((3, 4), 2.0))


def test_registering_an_operator_invalidates_cached_graphs():
    x = ppto.tensor("x")
    chain = x + 1
    g = ppto.trace(chain, x=A34)

    @ppto.register_operator(name="cache_probe_op")
    def noop(a):
        return a

    try:
        assert ppto.trace(chain, x=A34) is not g
    finally:
        ppto.unregister_operator("cache_probe_op")


def test_errors_at_run_time_name_the_op_and_line():
    x = ppto.tensor("x")
    chain = x.max(axis=0)
    # an empty axis has no maximum: NumPy's ValueError, known from the sizes
    with pytest.raises(ValueError, match="`max` of x: .* zero-size array") as e:
        chain.run(x=np.ones((0, 3)))
    assert isinstance(e.value, ppto.ExecutionError) and "chain = x.max(axis=0)" in str(e.value)
    with pytest.raises(ppto.ExecutionError, match="negative integer powers"):
        (x ** ppto.tensor("p")).run(x=np.arange(3), p=np.array([-1, 1, 2]))
