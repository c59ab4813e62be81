"""User operators: @ppto.register_operator (design document 7.1)."""

import numpy as np
import pytest
from helpers import assert_same
from numpy.lib.stride_tricks import sliding_window_view

import pypto as ppto


@pytest.fixture
def registered():
    """Register operators for one test and remove them afterwards."""
    names = []

    def register(fn=None, **options):
        op = ppto.register_operator(fn, **options) if fn is not None else None
        if op is None:
            return lambda f: register(f, **options)
        names.append(options.get("name") or fn.__name__)
        return op

    yield register
    for name in names:
        if name in ppto.REGISTRY:
            ppto.unregister_operator(name)


def conv_valid(image, kernel):
    return np.einsum("ijkl,kl->ij", sliding_window_view(image, kernel.shape), kernel)


def test_a_registered_function_becomes_a_lazy_op(registered):
    op = registered(conv_valid)
    img, ker = np.random.rand(12, 9), np.random.rand(3, 2)
    assert_same(op(img, ker), conv_valid(img, ker))  # still a NumPy function on arrays
    x, k = ppto.tensor("x"), ppto.tensor("k")
    chain = ppto.conv_valid(x, k) * 2.0
    assert ppto.conv_valid is op and ppto.REGISTRY["conv_valid"].kind == "custom"
    assert_same(chain.run(x=img, k=ker), conv_valid(img, ker) * 2.0)


def test_the_shape_rule_is_derived_symbolically_and_reused_across_sizes(registered):
    registered(conv_valid)
    x, k = ppto.tensor("x"), ppto.tensor("k")
    chain = ppto.conv_valid(x, k)
    g = ppto.trace(chain, x=np.ones((40, 30)), k=np.ones((3, 5)))
    assert str(g.outputs[0].type) == "f64[x.0 - k.0 + 1,x.1 - k.1 + 1]"
    for shape_x, shape_k in [((7, 9), (2, 4)), ((50, 20), (5, 5)), ((4, 4), (4, 4))]:
        img, ker = np.random.rand(*shape_x), np.random.rand(*shape_k)
        assert ppto.trace(chain, x=img, k=ker) is g
        assert_same(chain.run(x=img, k=ker), conv_valid(img, ker))


def test_functions_that_need_equal_sizes_get_tied_and_guarded(registered):
    registered(np.linalg.solve, name="solve")
    a, b = ppto.tensor("a"), ppto.tensor("b")
    A = np.random.rand(5, 5) + 5 * np.eye(5)
    B = np.random.rand(5, 2)
    g = ppto.trace(ppto.solve(a, b), a=A, b=B)
    assert {str(guard) for guard in g.guards} == {"a.1 == a.0", "b.0 == a.0"}
    np.testing.assert_allclose(ppto.solve(a, b).run(a=A, b=B), np.linalg.solve(A, B))


def test_elementwise_operators_broadcast_and_carry_their_cuda_expression(registered):
    @registered(elementwise=True, cuda="{0} / (1 + exp(-{0}))")
    def silu(v):
        return v / (1 + np.exp(-v))

    op = ppto.REGISTRY["silu"]
    assert op.kind == "map" and op.cuda == "{0} / (1 + exp(-{0}))" and not op.builtin
    x, y = ppto.tensor("x"), ppto.tensor("y")
    a, b = np.random.rand(3, 1).astype(np.float32), np.random.rand(4).astype(np.float32)
    assert_same((ppto.silu(x) + y).run(x=a, y=b), silu(a) + b)


def test_explicit_shape_and_dtype_rules(registered):
    @registered(shape=lambda s: (s[0] * 2,), dtype=np.float32)
    def doubled(v):
        return np.concatenate([v, v]).astype(np.float32)

    @registered(shape=lambda s, times: (s[0] * times,), dtype=lambda d, times: d)
    def tiled(v, times):
        return np.tile(v, times)

    x = ppto.tensor("x")
    assert str(ppto.trace(ppto.doubled(x), x=np.ones(3)).outputs[0].type) == "f32[2*x.0]"
    assert_same(ppto.doubled(x).run(x=np.arange(3.0)), doubled(np.arange(3.0)))
    assert_same(ppto.tiled(x, times=3).run(x=np.arange(4)), np.tile(np.arange(4), 3))


def test_constant_arguments_stay_constants(registered):
    @registered
    def scaled(v, factor, mode="add"):
        return v * factor if mode == "mul" else v + factor

    x = ppto.tensor("x")
    a = np.arange(5.0)
    assert_same(ppto.scaled(x, 3.0, mode="mul").run(x=a), a * 3.0)
    assert_same(ppto.scaled(x, 2.0).run(x=a), a + 2.0)
    with pytest.raises(ppto.ArgumentError, match="hashed"):
        ppto.scaled(x, 2.0, mode={"not": "hashable"})


def test_a_wrong_rule_is_an_error_never_a_wrong_answer(registered):
    @registered(shape=lambda s: (s[0] + 1,))
    def liar(v):
        return v * 2

    x = ppto.tensor("x")
    with pytest.raises(ppto.ExecutionError, match="returned float64 .3,., its rules say"):
        ppto.liar(x).run(x=np.ones(3))


def test_shape_rules_that_cannot_be_found_ask_for_shape(registered):
    @registered
    def squares(v):
        return np.outer(v, v).ravel()  # n*n elements: not affine in n

    @registered
    def picky(v):
        if v.shape[0] < 100:
            raise ValueError("needs at least 100 elements")
        return v

    x = ppto.tensor("x")
    with pytest.raises(ppto.ShapeError, match="not an affine function") as e:
        ppto.squares(x).run(x=np.ones(4))
    assert e.value.code == "PPT503" and "shape=" in e.value.hint
    with pytest.raises(ppto.ShapeError, match="needs at least 100 elements"):
        ppto.picky(x).run(x=np.ones(200))


def test_registration_errors(registered):
    def dup(v):
        return v

    registered(dup)
    with pytest.raises(ppto.RegistryError, match="already registered") as e:
        ppto.register_operator(dup)
    assert "replace=True" in e.value.hint
    registered(lambda v: v + 1, name="dup", replace=True)
    assert_same(ppto.dup(ppto.tensor("x")).run(x=np.ones(2)), np.full(2, 2.0))
    with pytest.raises(ppto.RegistryError, match="built-in"):
        ppto.register_operator(lambda v: v, name="sin", replace=True)
    with pytest.raises(ppto.RegistryError, match="built-in"):
        ppto.register_operator(lambda v: v, name="reduce_sum")  # an alias counts too
    with pytest.raises(ppto.RegistryError, match="identifier"):
        ppto.register_operator(lambda v: v, name="not a name")
    with pytest.raises(ppto.RegistryError, match="elementwise"):
        ppto.register_operator(lambda v: v, name="c_op", cuda="{0}")
    with pytest.raises(ppto.RegistryError, match="no user operator"):
        ppto.unregister_operator("sin")
    with pytest.raises(AttributeError):
        ppto.never_registered  # noqa: B018
