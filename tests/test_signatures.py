"""The signature language (pypto/signatures.py): what ``signature_of`` writes for a call is what
``--signature`` and ``# pypto: export`` read back (a round-trip property), sizes related by
expressions give traces on sizes that satisfy them, NumPy scalars have a kind of their own
(issue 18, point 8), and what is not a signature is refused with the reason."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.signatures import (
    SignatureError,
    example_args,
    expand,
    kind_check,
    parse_signature,
    signature_of,
)

DTYPES = ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool", "complex64"]


def kind(value):
    """What a specialization keys on, and a little more: exact sizes and constant values."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype, value.shape)
    if isinstance(value, np.generic):
        return ("numpy", value.dtype)
    if type(value) in (float, complex):
        return (type(value),)
    return (type(value), value)


sizes = st.sampled_from([0, 1, 2, 3, 5, 8, 13, 64])
arrays = st.builds(
    lambda dtype, shape: np.zeros(shape, dtype),
    st.sampled_from(DTYPES),
    st.lists(sizes, max_size=4).map(tuple),
)
numpy_scalars = st.sampled_from(DTYPES).map(lambda d: np.zeros((), d)[()])
python_values = st.one_of(
    st.floats(allow_nan=False, width=32),
    st.integers(-1000, 1000),
    st.booleans(),
    st.complex_numbers(max_magnitude=10, allow_nan=False, allow_infinity=False),
    st.sampled_from(["mean", "sum", None, (1, 2), ()]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(arrays, numpy_scalars, python_values), max_size=6))
def test_signature_of_reads_back_as_the_call(args):
    sig = signature_of("f", args)
    name, specs = parse_signature(sig)
    assert name == "f" and len(specs) == len(args)
    assert expand(specs) == [specs]  # a call's signature is one specialization
    back = example_args(specs, np.random.default_rng(0))
    assert [kind(a) for a in back] == [kind(a) for a in args], sig


def test_numpy_scalars_are_not_python_floats():
    """``np.float64(1.5)`` was written as a literal that --signature refused; it is a strong
    scalar: its own kind, tested by type, any value."""
    sig = signature_of("f", [np.float64(1.5), 1.5, np.float32(2.0), np.int64(3), np.bool_(True)])
    assert sig == "f(f64, float, f32, i64, bool_)"
    args = example_args(parse_signature(sig)[1], np.random.default_rng(0))
    assert [type(a) for a in args] == [np.float64, float, np.float32, np.int64, np.bool_]
    assert kind_check("a", np.float64(7.0)) == "type(a) is np.float64"
    assert kind_check("a", 7.0) == "type(a) is float"


def test_sizes_related_by_expressions():
    """``hdiff``'s in_field is out_field plus 4 on two axes: traced on sizes that satisfy it
    (it was traced on unrelated sizes, and failed with PPT201)."""
    specs = parse_signature("hdiff(f64[n + 4, m + 4, k], f64[n, m, k], f64)")[1]
    a, b, c = example_args(specs, np.random.default_rng(0))
    assert a.shape == (b.shape[0] + 4, b.shape[1] + 4, b.shape[2]) and type(c) is np.float64
    assert len(set(a.shape + b.shape)) == 5  # different expressions, different sizes
    x, y = example_args(
        parse_signature("u(f32[2 * n, m // 2], f32[n - 1])")[1], np.random.default_rng(0)
    )
    assert x.shape[0] == 2 * (y.shape[0] + 1) and min(x.shape + y.shape) > 1
    (z,) = example_args(["f64[n - 20]"], np.random.default_rng(0))
    assert z.shape[0] > 1  # sizes chosen so that every axis stays above 1


def test_given_sizes_and_constants():
    x, n, mode, flag = example_args(
        parse_signature("f(f32[n=64, 1, 3], int=12, 'mean', False)")[1], np.random.default_rng(0)
    )
    assert x.shape == (64, 1, 3) and x.dtype == np.float32
    assert (n, mode, flag) == (12, "mean", False)
    assert expand(["f32[n]", "bool", "bool"]) == [
        ["f32[n]", "True", "True"],
        ["f32[n]", "True", "False"],
        ["f32[n]", "False", "True"],
        ["f32[n]", "False", "False"],
    ]
    assert kind_check("flag", False) == "flag is False"  # a bool is a constant, as compiled


@pytest.mark.parametrize(
    ("sig", "message"),
    [
        ("f(q32[n])", "'q32' in 'q32[n]' is not a dtype"),
        ("f(f32[n ** 2])", "sizes are names, integers, + - * //"),
        ("f(f32[n=1.5])", "`= N` takes an integer"),
        ("f(f32[n=4], f32[n=5])", "size n is given as 4 and 5"),
        ("f(f32[n + 1 = 7], f32[n=3])", "size n + 1 is 4"),
        ("f(float32x)", "is not DTYPE[SIZES], a scalar type"),
        ("f(f32[n - 3 = 2], f32[n=4])", "size n - 3 is 1"),
        ("nope", "is not NAME(SPEC, ...)"),
    ],
)
def test_what_is_not_a_signature(sig, message):
    with pytest.raises(SignatureError) as raised:
        _, specs = parse_signature(sig)
        example_args(specs, np.random.default_rng(0))
    assert message in str(raised.value) and "[PPT120]" in str(raised.value)
