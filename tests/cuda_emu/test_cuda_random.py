"""Random lazy chains on the CUDA target, against the NumPy path.

Hypothesis draws a chain (the ideas of tests/passes/test_plan_invariants.py's strategy: maps,
comparisons, casts, broadcasting, reductions, transposes, slices, matmul, cumsum, where, slice
assignments; one or two outputs) over float32 or float64 inputs, with some int32 or bool inputs
beside them (or an int32 chain), shapes with 1-sized and 0-sized axes, and inputs bound as
non-contiguous views (steps, reversed axes, transposes of a larger array). Each chain is planned,
rendered as CUDA C + host code (compiled by NVRTC too) and run on the CPU emulation harness
through the CuPy stand-in, threads in random order with a drawn seed, and compared with
``ppto.run`` (the NumPy path): integers and bools exactly, floats with rtol 1e-5 (any float32
value in the chain) or 1e-10 (float64 only) relative to the largest finite magnitude of the
expected result (reductions add in another order than NumPy's pairwise sums).

What the chains found is kept at the end as the smallest cases, fixed since (they were strict
xfails first, and the strategy left those constructs out until then).
"""

from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from cupy_backend import ON_DEVICE, compile_graph, make_cupy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto as ppto
from pypto.passes.pipeline import plan_graph
from pypto.testing import nvrtc
from pypto.tracer import placeholders

_compiled: set[str] = set()  # sources NVRTC already compiled in this session


def run_on_cuda(roots, data, order="random", seed=0):
    """The chains (one graph) on the CUDA target: their outputs, as a list."""
    g = ppto.trace(list(roots), **data)
    run = compile_graph(plan_graph(g), make_cupy(order=order, seed=seed, isolate=False))
    digest = hashlib.sha256(run.cuda_source.encode()).hexdigest()
    if digest not in _compiled and not ON_DEVICE:
        nvrtc.compile_cuda(run.cuda_source)
        _compiled.add(digest)
    return list(run([data[v.name] for v in g.inputs], {}))


def assert_close(got, want, rtol, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    )
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    finite = np.isfinite(want)
    scale = float(np.max(np.abs(want[finite]), initial=1.0))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


def check(roots, data, seed=0, rtol=None):
    """The chains on the CUDA target give what the NumPy path gives (floats within `rtol`:
    1e-5 where float32 values are inputs, else 1e-10; a chain computing in float32 that casts
    to float64 passes its own)."""
    if rtol is None:
        rtol = 1e-5 if any(np.asarray(a).dtype == np.float32 for a in data.values()) else 1e-10
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Mean of empty slice"
        wants = ppto.run(list(roots), **data)
        gots = run_on_cuda(roots, data, seed=seed)
    assert len(gots) == len(wants)
    for i, (got, want) in enumerate(zip(gots, wants)):
        assert_close(got, want, rtol, f"output {i}")


# -- the strategy ---------------------------------------------------------------------------------
@dataclass
class Chain:
    roots: list
    bindings: dict
    steps: list
    seed: int
    rtol: float

    def __repr__(self):
        ins = ", ".join(
            f"{n}={a.dtype}{a.shape} strides {a.strides}" for n, a in self.bindings.items()
        )
        return f"Chain({ins}; steps {self.steps}; seed {self.seed}: {self.roots})"


UNARY = [np.sin, np.exp, np.abs, np.negative, np.tanh, np.square]
BINARY = [np.add, np.subtract, np.multiply, np.maximum, np.minimum]
COMPARE = [np.greater, np.less_equal, np.equal]
REDUCTIONS = [(np.sum, ppto.sum), (np.max, ppto.max), (np.min, ppto.min), (np.mean, ppto.mean)]
KINDS = ["unary", "binary", "scalar", "reduce", "transpose", "slice", "matmul", "cumsum", "where"]
KINDS += ["slice", "binary", "store", "compare", "astype"]


def _axes(draw, ndim):
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        a = draw(st.integers(0, ndim - 1))
        return a - ndim if draw(st.booleans()) else a
    return tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))


def _slice_item(draw, n, newaxis=True):
    kinds = ["all", "range", "reverse", "step", "int"] + ["new"] * newaxis
    kind = draw(st.sampled_from(kinds))
    if kind == "all" or n == 0:
        return slice(None)
    if kind == "range":
        start = draw(st.integers(0, n - 1))
        return slice(start, draw(st.integers(start, n)))  # start == stop: an empty slice
    if kind == "reverse":
        return slice(None, None, -1)
    if kind == "step":
        return slice(draw(st.integers(0, n - 1)), None, draw(st.integers(2, 3)))
    if kind == "int":
        i = draw(st.integers(0, n - 1))
        return i - n if draw(st.booleans()) else i
    return None


def _pick(draw, pool):
    return pool[draw(st.integers(0, len(pool) - 1))]


def _step(draw, pool, inputs):
    """One op on values of the pool (its first `inputs` values the chain's inputs): (name, what
    NumPy computes, what the chain builds)."""
    kind = draw(st.sampled_from(KINDS))
    a, t = pool[-1] if draw(st.sampled_from([True, True, False])) else _pick(draw, pool)
    nd = a.ndim
    if kind == "unary":
        f = draw(st.sampled_from(UNARY))
        finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
        if f in (np.sin, np.exp) and np.max(np.abs(finite), initial=0) > 10:
            # sin and exp of large values magnify the rounding of the sums before them (an
            # order of additions other than NumPy's) past the tolerance
            f = np.tanh
        return f.__name__, lambda: f(a), lambda: f(t)
    if kind in ("binary", "compare", "where"):
        b, u = _pick(draw, pool)
        if kind == "where":
            if draw(st.booleans()):  # a condition of the pool (any dtype), broadcast
                c, v = _pick(draw, pool)
                return "where(c)", lambda: np.where(c, a, b), lambda: ppto.where(v, t, u)
            return "where", lambda: np.where(a > b, a, b), lambda: ppto.where(t > u, t, u)
        f = draw(st.sampled_from(COMPARE if kind == "compare" else BINARY))
        if draw(st.booleans()):
            a, t, b, u = b, u, a, t
        return f.__name__, lambda: f(a, b), lambda: f(t, u)
    if kind == "scalar":
        c = draw(st.sampled_from([0.5, 2.0, -1.5, 1.0, 0.0, 3, -2]))
        f = draw(st.sampled_from(BINARY))
        return f"{f.__name__} {c}", lambda: f(a, c), lambda: f(t, c)
    if kind == "reduce":
        f, g = draw(st.sampled_from(REDUCTIONS))
        axis, keep = _axes(draw, nd), draw(st.booleans())
        return (
            f"{f.__name__}(axis={axis}, keepdims={keep})",
            lambda: f(a, axis=axis, keepdims=keep),
            lambda: g(t, axis=axis, keepdims=keep),
        )
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(nd))))
        return f"transpose{perm}", lambda: np.transpose(a, perm), lambda: ppto.transpose(t, perm)
    if kind == "slice":
        if nd == 0:
            return "[None]", lambda: a[None], lambda: t[None]
        index = tuple(_slice_item(draw, n) for n in a.shape)
        return f"getitem {index}", lambda: a[index], lambda: t[index]
    if kind == "matmul":
        if nd == 0 or a.dtype == np.bool_:
            return None
        b, u = _pick(draw, pool)
        if b.ndim >= 1 and b.dtype != np.bool_ and draw(st.booleans()):
            return "matmul", lambda: a @ b, lambda: t @ u
        if nd == 1:
            return "matmul (vector)", lambda: a @ a, lambda: t @ t
        perm = (*range(nd - 2), nd - 1, nd - 2)
        return (
            "matmul (transposed)",
            lambda: a @ np.transpose(a, perm),
            lambda: t @ ppto.transpose(t, perm),
        )
    if kind == "cumsum":
        axis = None if nd == 0 or draw(st.booleans()) else draw(st.integers(0, nd - 1))
        return (
            f"cumsum(axis={axis})",
            lambda: np.cumsum(a, axis=axis),
            lambda: ppto.cumsum(t, axis=axis),
        )
    if kind == "astype":
        to = np.dtype(draw(st.sampled_from([np.float32, np.float64, np.bool_, np.int32])))
        defined = np.isfinite(a).all() and (np.abs(a) < 2**31 - 1).all()
        if to == np.int32 and a.dtype.kind == "f" and not defined:
            return None  # only where NumPy's cast is defined: finite values in range
        return f"astype({to})", lambda: a.astype(to), lambda: ppto.astype(t, to)
    if kind == "store" and nd > 0:
        return _store(draw, pool, inputs, a, t)
    return None


def _store(draw, pool, inputs, a, t):
    """``base[index] = value`` as a new value (ppto.store): the value read from the base at the
    same region, another value of the pool (broadcast, possibly computed from the base), or a
    scalar."""
    index = tuple(_slice_item(draw, n, newaxis=False) for n in a.shape)
    how = draw(st.sampled_from(["same", "other", "scalar"]))
    if how == "same":
        value, chain_value = (lambda: np.negative(a[index])), (lambda: ppto.negative(t[index]))
    elif how == "other":
        b, u = _pick(draw, pool)
        value, chain_value = (lambda: b), (lambda: u)
    else:
        value, chain_value = (lambda: 0.5), (lambda: 0.5)

    def numpy_store():
        out = a.copy()
        out[index] = value()  # NumPy's casting rules: casts refused (float into int) are skipped
        return out

    return f"store {how} {index}", numpy_store, lambda: ppto.store(t, chain_value(), index)


def _values(draw, dtype, shape):
    """Values of `dtype` (floats with NaN and signed zeros now and then), from a seeded rng."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    out = rng.uniform(-3, 3, shape).astype(dtype)
    if out.size and draw(st.sampled_from([False] * 4 + [True])):
        flat = out.reshape(-1)
        flat[rng.integers(0, flat.size)] = draw(st.sampled_from([math.nan, 0.0, -0.0]))
    return out


def _bound(draw, dtype, shape):
    """An array of `shape`, often a non-contiguous view: every axis sliced with a step, reversed
    or offset, the axes of a larger array permuted."""
    layout = draw(st.sampled_from(["contiguous", "contiguous", "view", "transposed"]))
    if layout == "contiguous" or not shape:
        return _values(draw, dtype, shape)
    perm = tuple(draw(st.permutations(range(len(shape))))) if layout == "transposed" else None
    items = [draw(st.sampled_from(["all", "step", "reverse", "offset"])) for _ in shape]
    big = [n * 2 if k == "step" else n + 1 if k == "offset" else n for k, n in zip(items, shape)]
    index = tuple(
        slice(None, None, 2) if k == "step" else slice(None, None, -1) if k == "reverse"
        else slice(1, None) if k == "offset" else slice(None)
        for k in items
    )  # fmt: skip
    if perm is None:
        return _values(draw, dtype, tuple(big))[index]
    inverse = tuple(np.argsort(perm))
    base = _values(draw, dtype, tuple(big[p] for p in perm))
    return np.transpose(base, inverse)[index]  # axis i of the view: axis inverse[i] of base


@st.composite
def chains(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64, np.float32, np.int32])))
    rank = draw(st.sampled_from([2, 3, 1]))
    sizes = [3, 4, 2, 5] + [0] * draw(st.sampled_from([False] * 3 + [True]))
    base = draw(st.lists(st.sampled_from(sizes), min_size=rank, max_size=rank))
    bindings, pool = {}, []
    for n, name in enumerate("xyz"[: draw(st.sampled_from([2, 1, 3]))]):
        r = rank if n == 0 else draw(st.sampled_from(range(rank, -1, -1)))
        ones = draw(st.lists(st.sampled_from([False] * 4 + [True]), min_size=r, max_size=r))
        shape = tuple(1 if one else d for one, d in zip(ones, base[rank - r :]))
        kind = dtype if n == 0 else draw(st.sampled_from([dtype] * 3 + [np.int32, np.bool_]))
        array = _bound(draw, np.dtype(kind), shape)
        bindings[name] = array
        pool.append((array, ppto.tensor(name)))
    steps = []
    for _ in range(draw(st.integers(2, 7))):
        step = _step(draw, pool, len(bindings))
        if step is None:
            continue
        what, numpy_fn, chain_fn = step
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                value = np.asarray(numpy_fn())
        except (ValueError, IndexError, TypeError):
            continue  # NumPy refuses these operands (shapes that do not broadcast, ...)
        pool.append((value, chain_fn()))
        steps.append(what)
    made = pool[len(bindings) :]
    if not made:
        a, t = pool[0]
        made = [(a, ppto.abs(t))]
    roots = [made[-1][1]]
    extra = draw(st.sampled_from(["none", "value", "reorder"]))
    if extra != "none" and len(pool) > 1:  # a second output: another value, or a reorder of one
        a, t = pool[draw(st.integers(0, len(pool) - 2))]
        if extra == "reorder":
            t = t[None] if a.ndim < 2 else ppto.transpose(t, tuple(range(a.ndim))[::-1])
        roots.append(t)
    used = placeholders([t._node for t in roots])
    seed = draw(st.integers(0, 2**31 - 1))
    rtol = 1e-5 if any(a.dtype == np.float32 for a, _ in pool) else 1e-10
    return Chain(roots, {n: a for n, a in bindings.items() if n in used}, steps, seed, rtol)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chain=chains())
def test_random_chains_on_the_cuda_target_match_numpy(tools, chain):
    check(chain.roots, chain.bindings, seed=chain.seed, rtol=chain.rtol)


# -- what the random chains found (all fixed), as the smallest cases ------------------------------
@pytest.mark.parametrize(
    "make",
    [lambda x: x[1:], lambda x: x.T, lambda x: x[::-1], lambda x: (x * 2).T],
    ids=["slice", "transpose", "reversed", "transpose-of-map"],
)
def test_a_store_into_a_reorder(tools, make):
    """ppto.store(x[1:], 7.0, (slice(0, 1),)): the CUDA target raised InternalError [PPT901]
    "kernel k0: a store's base is computed inside"; the base is now copied through its index
    maps on the host."""
    x = ppto.tensor("x")
    data = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    check([ppto.store(make(x), 7.0, (slice(0, 1),))], data)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16])
def test_max_and_min_of_bools_along_the_last_axis(tools, dtype):
    """ppto.max(x) of a bool (or int8, uint8, int16) x: the block reduction shuffled the value
    with __shfl_xor_sync, which has no overload for these types (NVRTC refused); they travel as
    int now."""
    x = ppto.tensor("x")
    a = np.arange(5) % 2 == 1 if dtype == np.bool_ else np.arange(5).astype(dtype)
    check([ppto.max(x), ppto.min(x, axis=-1)], {"x": a})


def test_a_whole_slice_of_a_scan_beside_it(tools):
    """c = cumsum(x, axis=0); outputs [c[:], c]: the CUDA target raised _ScanElsewhere ("a scan
    read away from its position"): the identity slice wrote its index as 0 + 1 * i."""
    x = ppto.tensor("x")
    c = ppto.cumsum(x, axis=0)
    check([c[:], c], {"x": np.arange(4, dtype=np.float32)})


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_a_store_reading_its_base_elsewhere_is_not_written_in_place(tools, order):
    """m = x * 2; ppto.store(m, m[::-1], (slice(None),)) of x = arange(5.0): NumPy gives
    [8, 6, 4, 2, 0]; the CUDA target gave [8, 6, 4, 6, 8] (forward) or [0, 2, 4, 2, 0]
    (reverse): a store with a hazard went to new memory that reused its base's (the memory
    plan's in-place choice), so threads overwrote what others still read."""
    x = ppto.tensor("x")
    m = x * 2
    chain = ppto.store(m, m[::-1], (slice(None),))
    data = {"x": np.arange(5.0)}
    want = chain.run(**data)
    np.testing.assert_array_equal(want, [8.0, 6.0, 4.0, 2.0, 0.0])
    np.testing.assert_array_equal(run_on_cuda([chain], data, order=order)[0], want)


def test_numpy_path_product_of_an_empty_slice_of_a_new_axis():
    """Not the CUDA target: w = x[None][0:0] of a (1,) float64 x, then w @ w.T: the NumPy path
    raised InternalError (matmul: a mismatch in core dimension 0): an empty region of a new
    axis was dropped by expand_dims."""
    x = ppto.tensor("x")
    w = x[None][0:0]
    got = (w @ w.T).run(x=np.ones(1))
    assert got.shape == (0, 0)
