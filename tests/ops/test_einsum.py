"""einsum against NumPy (a composite of transposes, reshapes, diagonals, sums and matmul): a table
of subscripts (explicit, implicit, ellipses, diagonals, several operands, scalars), random sizes
(0 and 1 among them, sizes NumPy broadcasts and sizes it refuses), every required dtype and mixes
of them, ``dtype=``, NumPy's own function and PyPTO's, lazy chains and compiled functions, the
CUDA target on the CPU emulator."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import arrays, check, check_reuse, checked_cupy, cuda_emulator, dtypes, quiet
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pypto as ppto

COVERED = {"einsum"}

SUBSCRIPTS = [
    "ij,jk->ik",
    "ij,jk",
    "bij,bjk->bik",
    "i,i",
    "i,j->ij",
    "ij->ji",
    "ii->i",
    "ii",
    "ij->",
    "...ij,...jk->...ik",
    "ij,ij->ij",
    "ijk,ikl->jl",
    "i,i,i",
    "ij,jk,kl->il",
    "bhqd,bhkd->bhqk",
    "a,b,c",
    "...i,...i->...",
    "ji",
    "iij->j",
    "iij->ij",
    "ij->j",
    "ij,j->i",
    "i,ij",
    "...",
    "i...->...",
    "...ii->...i",
    "ij...,jk...->ik...",
    ",ij->ij",
    "",
    "Aa,aB->BA",
    "aB",  # (implicit: upper case sorts first, as in ASCII)
    "ia,jB",
    "ijk->kji",
    "ij,kl->ijkl",
    "bi,ij,bj->b",
    "ii,i->i",
    "iji->j",
    " i j , j k -> k i ",
]
DTYPES = [np.dtype(t) for t in ("bool", "int8", "int32", "int64", "float16", "float32", "float64")]
RTOL = {"e": 1e-2, "f": 1e-5, "d": 1e-12, "F": 1e-5, "D": 1e-12}


def _operand_subscripts(subscripts: str) -> list[str]:
    return subscripts.split("->")[0].replace(" ", "").split(",")


@st.composite
def einsum_shapes(draw, subscripts: str, mismatch: bool = True):
    """A shape per operand for ``subscripts``: a size per letter, the broadcast axes of ``...``
    right-aligned, some sizes 1 (NumPy broadcasts them) and, rarely, some other size (NumPy
    refuses most)."""
    ops = _operand_subscripts(subscripts)
    letters = sorted({c for op in ops for c in op if c.isalpha()})
    size = {c: draw(st.integers(0, 4), label=f"size {c}") for c in letters}
    ell = draw(st.lists(st.integers(1, 3), max_size=2), label="...")
    out = []
    for op in ops:
        shape = []
        for part in op.split("...")[0], None, *op.split("...")[1:]:
            if part is None:
                if "..." in op:
                    n = draw(st.integers(0, len(ell)))
                    shape += [draw(st.sampled_from([d, d, 1])) for d in ell[len(ell) - n :]]
                continue
            for c in part:
                kind = draw(st.sampled_from(["same"] * 6 + ["one", "other"])) if mismatch else ""
                if kind == "one":
                    shape.append(1)  # (NumPy broadcasts it, but not inside one operand)
                elif kind == "other":
                    shape.append(draw(st.integers(0, 4)))  # (NumPy refuses most)
                else:
                    shape.append(size[c])
        out.append(tuple(shape))
    return out


def _numpys_empty_diagonal(subscripts, shapes) -> bool:
    """NumPy's view of one operand's diagonal (``'ii->i'``: every subscript in the output)
    takes an axis of size 0 for any size, the other axis's (a (0, 2) array gives a diagonal of 2
    elements, read from no memory); PyPTO refuses those sizes, as NumPy does (2, 0), or (0, 2)
    where the diagonal is summed."""
    ops = _operand_subscripts(subscripts)
    if len(ops) != 1 or "->" not in subscripts:
        return False
    (op,), (shape,) = ops, shapes
    pre, _, post = op.partition("...")
    labels = list(pre) + [None] * (len(shape) - len(pre) - len(post)) + list(post)
    if not set(op) - {"."} <= set(subscripts.split("->")[1]):
        return False
    first: dict = {}
    for c, d in zip(labels, shape):
        if c is not None and first.setdefault(c, d) == 0 and d != 0:
            return True
    return False


def _values(data, dtype, shape):
    return data.draw(arrays(dtype, shape, finite=True, small=dtype.kind == "f"))


def _bound(subscripts, arrs, dtype):
    """An absolute tolerance: the largest sum of |products| (the size of the rounding)."""
    if np.dtype(dtype).kind not in "fc":
        return 0.0
    mags = [np.abs(a).astype(np.float64) for a in arrs]
    try:
        b = quiet(np.einsum, subscripts, *mags)
    except ValueError:
        return 0.0
    return float(np.max(b, initial=0.0))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_einsum_matches_numpy(data):
    subscripts = data.draw(st.sampled_from(SUBSCRIPTS), label="subscripts")
    shapes = data.draw(einsum_shapes(subscripts), label="shapes")
    assume(not _numpys_empty_diagonal(subscripts, shapes))
    dtype = data.draw(dtypes(DTYPES), label="dtype")
    mixed = data.draw(st.integers(0, 3)) == 0
    arrs = [_values(data, data.draw(dtypes(DTYPES)) if mixed else dtype, s) for s in shapes]
    kwargs = {}
    optimize = data.draw(st.sampled_from([None, False, True, "greedy", "optimal"]))
    if optimize is not None:
        kwargs["optimize"] = optimize
    if data.draw(st.integers(0, 4)) == 0:
        kwargs["dtype"] = data.draw(dtypes(DTYPES), label="dtype=")
    if kwargs.get("dtype", np.result_type(*arrs)) == np.float16:
        # NumPy's float16 einsum rounds its float32 sums to float16 as its loops store them:
        # no overflow there
        arrs = [a if a.dtype == np.bool_ else np.clip(a, -4, 4).astype(a.dtype) for a in arrs]
    form = data.draw(st.sampled_from([ppto, np]), label="form")
    names = [f"a{i}" for i in range(len(arrs))]

    def oracle(**kw):  # (optimize changes NumPy's path, not its values: PyPTO ignores it)
        return np.einsum(subscripts, *(kw[n] for n in names), dtype=kwargs.get("dtype"))

    try:
        want = quiet(oracle, **dict(zip(names, arrs)))
    except Exception:
        rtol = atol = None
    else:
        rtol = RTOL.get(np.asarray(want).dtype.char)
        atol = 0.0 if rtol is None else rtol * _bound(subscripts, arrs, want.dtype)
    check(
        lambda **kw: form.einsum(subscripts, *(kw[n] for n in names), **kwargs),
        oracle,
        rtol=rtol,
        atol=atol or 0.0,
        **dict(zip(names, arrs)),
    )


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_complex_operands(data):
    subscripts = data.draw(st.sampled_from(SUBSCRIPTS), label="subscripts")
    shapes = data.draw(einsum_shapes(subscripts, mismatch=False), label="shapes")
    dtype = data.draw(st.sampled_from([np.complex64, np.complex128]))
    arrs = []
    for s in shapes:
        re, im = (_values(data, np.dtype(np.float32), s) for _ in range(2))
        arrs.append((re + 1j * im).astype(dtype))
    want = np.einsum(subscripts, *arrs)
    rtol = RTOL[np.asarray(want).dtype.char]
    names = [f"a{i}" for i in range(len(arrs))]
    check(
        lambda **kw: ppto.einsum(subscripts, *(kw[n] for n in names)),
        lambda **kw: np.einsum(subscripts, *(kw[n] for n in names)),
        rtol=rtol,
        atol=rtol * _bound(subscripts, arrs, want.dtype),
        **dict(zip(names, arrs)),
    )


def test_integers_wrap_in_their_dtype_and_bools_are_or_of_and():
    a = np.full((3, 4), 100, np.int8)
    b = np.full((4, 2), 3, np.int8)
    x, y = ppto.tensor("x"), ppto.tensor("y")
    got = ppto.einsum("ij,jk->ik", x, y).run(x=a, y=b)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.einsum("ij,jk->ik", a, b))
    got = ppto.einsum("ij->", x).run(x=a)
    assert got.dtype == np.int8 and got == np.einsum("ij->", a)  # (np.sum would give int64)
    p = np.array([[True, False], [False, False]])
    q = np.array([[False, True], [True, True]])
    got = ppto.einsum("ij,jk", x, y).run(x=p, y=q)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.einsum("ij,jk", p, q))
    np.testing.assert_array_equal(
        ppto.einsum("ij,ij->", x, y).run(x=p, y=q), np.einsum("ij,ij->", p, q)
    )


def test_diagonals_are_the_values_exactly():
    a = np.array([[-0.0, np.inf, 1.0], [np.nan, 2.5, -np.inf], [3.0, 0.0, np.nan]])
    x = ppto.tensor("x")
    got = ppto.einsum("ii->i", x).run(x=a)
    want = np.einsum("ii->i", a)
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[0]) and got.dtype == want.dtype
    b = np.arange(2 * 3 * 2 * 3, dtype=np.int64).reshape(2, 3, 2, 3)
    for s in ("ijij->ij", "ijij->ji", "ijij", "iji...->j...i"):
        np.testing.assert_array_equal(ppto.einsum(s, x).run(x=b), np.einsum(s, b))
    c = np.arange(27.0).reshape(3, 3, 3)
    np.testing.assert_array_equal(ppto.einsum("iii->i", x).run(x=c), np.einsum("iii->i", c))


def test_python_numbers_are_arrays_as_in_numpy():
    x = ppto.tensor("x")
    a = np.arange(3, dtype=np.float32)
    got = ppto.einsum(",i->i", 2.0, x).run(x=a)
    want = np.einsum(",i->i", 2.0, a)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    assert ppto.einsum(",", 2.0, 3.0) == np.einsum(",", 2.0, 3.0) == 6.0
    got = ppto.einsum("i,i", x, [1, 2, 3]).run(x=np.arange(3, dtype=np.int8))
    assert got.dtype == np.int64 and got == 8


def test_dtype_is_numpys():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    i32 = np.arange(6, dtype=np.int32).reshape(2, 3)
    f32 = np.ones((2, 3), np.float32)
    for s, arrs, dt in [
        ("ij,ij->i", (i32, i32), np.float64),
        ("ij,ij->i", (i32, i32), np.int64),
        ("ij->", (f32,), np.float64),
        ("ij", (f32,), np.float64),  # NumPy's view: dtype= is ignored
        ("ji", (i32,), np.int8),  # (so is the 'safe' rule)
        ("ij,ij", (i32, f32), None),
    ]:
        names = ("x", "y")[: len(arrs)]
        got = ppto.einsum(s, *(x, y)[: len(arrs)], dtype=dt).run(**dict(zip(names, arrs)))
        want = np.einsum(s, *arrs, dtype=dt)
        assert got.dtype == want.dtype, s
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        np.einsum("ij->", np.ones((2, 2)), dtype=np.int32)
    with pytest.raises(ppto.DTypeError):  # the 'safe' rule: NumPy's TypeError
        ppto.einsum("ij->", x, dtype=np.int32).run(x=np.ones((2, 2)))
    with pytest.raises(ppto.DTypeError):
        ppto.einsum("ij->", x, dtype="not a dtype")


# what NumPy refuses with a ValueError: a subscripts string it cannot read, or operands that do
# not fit it (PyPTO: ShapeError, a ValueError; refused when the chain is built where the string
# says enough, else when it runs)
NUMPY_VALUE_ERRORS = [
    ("ij,jk", [(2, 3)]),  # too few operands
    ("ij", [(2, 3), (3,)]),  # too many
    ("ijk", [(2, 3)]),  # more subscripts than axes
    ("ij", [(2, 3, 4)]),  # fewer, and no ellipsis
    ("ij,jk", [(2, 3), (4, 5)]),  # sizes that do not broadcast
    ("i,i", [(2,), (3,)]),
    ("...i,...i", [(2, 3), (3, 3)]),
    ("ii", [(2, 3)]),  # a diagonal of unequal axes
    ("ii", [(1, 3)]),  # (no broadcasting inside one operand)
    ("ij->k", [(2, 3)]),  # an output subscript no input has
    ("ij->ii", [(2, 3)]),  # twice in the output
    ("...ij->ij", [(5, 2, 3)]),  # broadcast axes with no ellipsis in the output
    ("i1", [(2, 3)]),  # not a letter
    ("i.j", [(2, 3)]),  # not an ellipsis
    ("i......", [(2,)]),  # two ellipses
    ("i-", [(2,)]),
    ("i>", [(2,)]),
    ("ij->,", [(2, 3)]),
    ("ié", [(2, 3)]),  # (NumPy: a UnicodeEncodeError, a ValueError)
    ("", [(2,)]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), NUMPY_VALUE_ERRORS)
def test_numpys_value_errors_are_shape_errors(subscripts, shapes):
    arrs = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError):
        np.einsum(subscripts, *arrs)
    names = [f"a{i}" for i in range(len(arrs))]
    with pytest.raises(ppto.ShapeError):
        ppto.einsum(subscripts, *(ppto.tensor(n) for n in names)).run(**dict(zip(names, arrs)))
    with pytest.raises(ppto.ShapeError):
        ppto.compile(_EINSUM_OF[len(arrs)])(subscripts, *arrs)


def _einsum_of_1(s, a):
    return np.einsum(s, a)


def _einsum_of_2(s, a, b):
    return np.einsum(s, a, b)


_EINSUM_OF = {1: _einsum_of_1, 2: _einsum_of_2}


def test_what_is_refused():
    x = ppto.tensor("x")
    a = np.ones((2, 2))
    with pytest.raises(ValueError):
        np.einsum("ij")
    with pytest.raises(ppto.ShapeError):
        ppto.einsum("ij")
    with pytest.raises(ppto.UnsupportedError, match="subscript lists") as e:
        ppto.einsum(x, [0, 1], x, [1, 2])
    assert "np.einsum('ij,jk->ik', a, b)" in str(e.value)
    with pytest.raises(ppto.UnsupportedError):
        np.einsum(x, [0, 1])  # NumPy's own function on a lazy tensor
    with pytest.raises(ppto.UnsupportedError, match="out="):
        ppto.einsum("ij", x, out=a)
    with pytest.raises(ppto.UnsupportedError, match="casting"):
        ppto.einsum("ij", x, casting="unsafe")
    with pytest.raises(ppto.ArgumentError):
        ppto.einsum("ij", x, order="Z")
    with pytest.raises(ppto.ArgumentError):
        ppto.einsum("ij", x, optimize="fastest")
    with pytest.raises(ppto.ArgumentError):
        np.einsum("ij", x, bogus=1)
    for optimize in (False, True, "greedy", "optimal", ["einsum_path", (0,)]):
        np.testing.assert_array_equal(ppto.einsum("ij->j", x, optimize=optimize).run(x=a), [2, 2])
    np.testing.assert_array_equal(ppto.einsum(b"ij->i", x, order="F").run(x=a), [2.0, 2.0])


def test_a_chain_is_reused_across_sizes_numpys_errors_where_they_do_not_fit():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    rng = np.random.default_rng(5)
    for s, shapes in [
        ("ij,jk", [((2, 3), (3, 4)), ((5, 1), (7, 2)), ((2, 3), (2, 4)), ((4, 0), (0, 2))]),
        ("ii,ij->j", [((3, 3), (3, 2)), ((1, 1), (4, 2)), ((2, 3), (2, 2)), ((4, 4), (4, 0))]),
        ("...i,...i->...", [((2, 3), (4, 1, 3)), ((3,), (3,)), ((2, 3), (3, 3)), ((1,), (5, 2))]),
    ]:
        chain = ppto.einsum(s, x, y)
        bindings = [{"x": rng.standard_normal(a), "y": rng.standard_normal(b)} for a, b in shapes]
        check_reuse(chain, lambda x, y, s=s: np.einsum(s, x, y), bindings, rtol=1e-12)


# -- compiled functions (np.einsum in the source) --------------------------------------------------
def _bilinear(x, W, y):
    return np.tanh(np.einsum("bi,ij,bj->b", x, W, y))


def _attention(q, k, v):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * 0.5
    return np.einsum("bhqk,bhkd->bhqd", s, v)


def _traces(a, b):
    return np.einsum("ii", a) + np.einsum("ii->i", a) * np.einsum("ij,jk", a, b).sum(axis=1)


def _batched(a, b):
    return np.einsum("...ij,...jk->...ik", a, b) - np.einsum("...ij->...i", a)[..., None]


def _scaled(a):
    return np.einsum(",i,ij->j", 3.0, a[:, 0], a)


def _counts(m, w):
    return np.einsum("ij,jk->ik", m, m) * np.einsum("ij,j->i", m, w)[:, None]


COMPILED = {
    "bilinear": (_bilinear, lambda n, r, dt: (r((n, 3), dt), r((3, 4), dt), r((n, 4), dt))),
    "attention": (_attention, lambda n, r, dt: tuple(r((2, 3, m, 4), dt) for m in (n, 5, 5))),
    "traces": (_traces, lambda n, r, dt: (r((n, n), dt), r((n, 2), dt))),
    "batched": (_batched, lambda n, r, dt: (r((2, n, 3), dt), r((3, 2), dt))),
    "scaled": (_scaled, lambda n, r, dt: (r((n, 4), dt),)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_functions_match_numpy(name, dtype):
    fn, make = COMPILED[name]
    rng = np.random.default_rng(len(name))

    def r(shape, dt):
        return rng.standard_normal(shape).astype(dt)

    compiled = ppto.compile(fn)
    for n in (3, 6, 1):  # (one program for every size)
        args = make(n, r, dtype)
        want = fn(*args)
        got = compiled(*args)
        assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-4 if dtype == "float32" else 1e-12, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64"])
def test_compiled_integer_and_bool_products(dtype):
    rng = np.random.default_rng(7)
    m = rng.integers(-100, 100, (4, 4)).astype(dtype)
    w = rng.integers(-100, 100, (4,)).astype(dtype)
    got = ppto.compile(_counts)(m, w)
    want = _counts(m, w)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_the_lowering_is_transposes_and_matrix_products():
    q = np.ones((2, 3, 4, 5))
    k = np.ones((2, 3, 6, 5))
    g = ppto.trace(ppto.einsum("bhqd,bhkd->bhqk", ppto.tensor("q"), ppto.tensor("k")), q=q, k=k)
    assert [e.op for e in g.eqns] == ["transpose", "matmul"]
    a = ppto.tensor("a")
    g = ppto.trace(ppto.einsum("ij,jk,kl->il", a, a, a), a=np.ones((3, 3)))
    assert [e.op for e in g.eqns] == ["matmul", "matmul"]


def _sublists(a, b):
    return np.einsum(a, [0, 1], b, [1, 2], [0, 2]) * 2


def _unsafe(a, b):
    return np.einsum("ij,jk", a, b, dtype="float32", casting="same_kind") + 1


@pytest.mark.parametrize("fn", [_sublists, _unsafe], ids=["sublists", "casting"])
def test_what_the_op_refuses_runs_as_numpys_call_in_a_compiled_function(fn):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    got, want = ppto.compile(fn)(a, b), fn(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert "graph break" in str(ppto.explain(fn, a, b))


# -- the CUDA target on the CPU emulator -----------------------------------------------------------
_emu = cuda_emulator("einsum_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


def _on_gpu(q, k):
    s = np.einsum("bqd,bkd->bqk", q, k)
    o = np.einsum("bqk,bkd->bqd", s, k)
    return o + np.einsum("bqq->bq", s)[:, :, None] + np.einsum("bqd->d", q)


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_einsum_on_the_cuda_target(dtype):
    from cupy_backend import to_host

    rng = np.random.default_rng(23)
    q = rng.standard_normal((2, 5, 3)).astype(dtype)
    k = rng.standard_normal((2, 5, 3)).astype(dtype)
    cp = checked_cupy(_emu)
    got = to_host(ppto.compile(_on_gpu)(cp.device(q), cp.device(k)))
    assert cp.launches
    want = _on_gpu(q, k)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5 if dtype == "float32" else 1e-12)


def _transposed_write(x):
    y = np.einsum("ij->ji", x)  # a view of x in NumPy: the write reaches x
    y[0, 1] = 7.0
    return x.sum()


def _diagonal_write(x):
    d = np.einsum("ii->i", x)
    d[0] = 7.0
    return x


def test_a_write_through_an_einsum_view_reaches_the_operand():
    x = np.arange(9.0).reshape(3, 3)
    mine, theirs = x.copy(), x.copy()
    assert ppto.compile(_transposed_write)(mine) == _transposed_write(theirs)
    np.testing.assert_array_equal(mine, theirs)
    with pytest.raises(ppto.UnsupportedError) as info:  # (a gathered diagonal: refused)
        ppto.compile(_diagonal_write)(x.copy())
    assert info.value.code == "PPT105"
