"""Index maps (pypto/lower/index_map.py) against NumPy's own view semantics.

On random chains of views (transpose, slices with any step, integers, new axes, flip,
expand_dims, squeeze, broadcast_to, moveaxis) of ``np.arange``: the graph's reorders are read
as index maps, and

* the point rendering (the CUDA target's index expression, which is also Python) of the
  composed map, and of the maps one by one, gives at every result index the operand element
  NumPy's view holds there;
* on a random result region the interval rendering (the NumPy target's operand region) holds
  every point the region reads, and the array code built from it (emit/views.py, one op at a
  time as the NumPy target emits it) is NumPy's view over the region;
* the chunk tag and ``moves_data`` agree with the points.
"""

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import pypto as ppto
from pypto.emit.views import view_code
from pypto.lower.index_map import (
    BAD,
    IndexMap,
    chunk_tag,
    compose,
    identity,
    interval,
    moves_data,
    point,
    view_map,
)


def same(a, b):
    return tuple(a) == tuple(b)


def shape_code(shape):
    return "(" + "".join(f"{d}, " for d in shape) + ")"


@st.composite
def view_step(draw, shape):
    """One view of an array of ``shape``: (name, NumPy function, PyPTO function)."""
    rank = len(shape)
    kinds = ["getitem", "expand_dims", "broadcast_to"]
    if rank:
        kinds += ["transpose", "flip", "moveaxis"]
    if 1 in shape:
        kinds.append("squeeze")
    kind = draw(st.sampled_from(kinds))
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(rank))))
        return kind, lambda a: np.transpose(a, perm), lambda t: ppto.transpose(t, perm)
    if kind == "moveaxis":
        src = draw(st.integers(-rank, rank - 1))
        dst = draw(st.integers(-rank, rank - 1))
        return kind, lambda a: np.moveaxis(a, src, dst), lambda t: ppto.moveaxis(t, src, dst)
    if kind == "flip":
        axes = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1))))
        return kind, lambda a: np.flip(a, axes), lambda t: ppto.flip(t, axes)
    if kind == "expand_dims":
        axis = draw(st.integers(0, rank))
        return kind, lambda a: np.expand_dims(a, axis), lambda t: ppto.expand_dims(t, axis)
    if kind == "squeeze":
        axis = draw(st.sampled_from([a for a, d in enumerate(shape) if d == 1]))
        return kind, lambda a: np.squeeze(a, axis), lambda t: ppto.squeeze(t, axis)
    if kind == "broadcast_to":
        lead = draw(st.integers(0, 1 if rank < 3 else 0))
        new = tuple(draw(st.integers(1, 3)) for _ in range(lead)) + tuple(
            draw(st.integers(1, 3)) if d == 1 else d for d in shape
        )
        return kind, lambda a: np.broadcast_to(a, new), lambda t: ppto.broadcast_to(t, new)
    index = []
    for d in shape:
        choice = draw(st.sampled_from(["slice", "slice", "int", "none"]))
        if choice == "none":
            index.append(None)
        if choice == "int" and d:
            index.append(draw(st.integers(-d, d - 1)))
        else:
            step = draw(st.sampled_from([1, 1, 2, -1, -2, 3]))
            start = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
            index.append(slice(start, stop, step))
    index = tuple(index[: draw(st.integers(0, len(index)))])
    return kind, lambda a: a[index], lambda t: t[index]


@st.composite
def chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    steps, s = [], shape
    for _ in range(draw(st.integers(1, 4))):
        step = draw(view_step(s))
        s = step[1](np.empty(s)).shape
        if len(s) > 4 or 0 in s:
            break
        steps.append(step)
    return shape, steps


def _eqns(graph):
    """The graph's reorders from the output back to the input (a single chain)."""
    prod = {id(e.out): e for e in graph.eqns}
    out, v = [], graph.outputs[0]
    while id(v) in prod:
        e = prod[id(v)]
        out.append(e)
        v = e.inputs[0]
    assert v is graph.inputs[0], "the chain is not a chain of views of x"
    return out


def _eval_point(m, idx):
    return tuple(int(eval(code)) for code in point(m, tuple(map(str, idx)), str))


@given(chains(), st.randoms(use_true_random=False))
def test_index_maps_agree_with_numpy(chain, rnd):
    shape, steps = chain
    base = np.arange(int(np.prod(shape))).reshape(shape)
    want, t = base, ppto.tensor("x", shape, np.int64)
    for _, np_fn, pp_fn in steps:
        want, t = np_fn(want), pp_fn(t)
    graph = ppto.trace(t, x=base)
    eqns = _eqns(graph)
    assert all(e.inputs[0].type.rank is not None for e in eqns)
    maps = [view_map(e, same) for e in eqns]
    assert all(isinstance(m, IndexMap) for m in maps), "a chain of affine views"
    composed = identity(want.ndim)
    for m in maps:  # result -> ... -> x
        composed = compose(composed, m)
    # points: the composed map and the maps one by one
    for idx in itertools.product(*(range(d) for d in want.shape)):
        src = _eval_point(composed, idx)
        assert base[src] == want[idx], (idx, src)
        at = idx
        for m in maps:
            at = _eval_point(m, at)
        assert at == src
    # intervals: a random region of the result, rendered one op at a time
    region = []
    for d in want.shape:
        lo = rnd.randint(0, d)
        region.append((lo, rnd.randint(lo, d)))
    regions = [tuple(region)]
    for m in maps:
        regions.append(interval(m, regions[-1]))
    for idx in itertools.product(*(range(lo, hi) for lo, hi in region)):
        src = _eval_point(composed, idx)
        assert all(lo <= i < hi for i, (lo, hi) in zip(src, regions[-1])), (idx, src, regions)
    code = "x[" + ", ".join(f"{lo}:{hi}" for lo, hi in regions[-1]) + "]" if shape else "x"
    for e, m, r in reversed(list(zip(eqns, maps, regions))):
        code = view_code(m, code, r, e.out.type.shape, str, shape_code, same)
    got = eval(code, {"np": np, "x": base})
    np.testing.assert_array_equal(got, want[tuple(slice(lo, hi) for lo, hi in region)])
    # chunk tags: a block [lo, hi) of result axis ax reads the tagged operand axis at +offset
    points = {idx: _eval_point(composed, idx) for idx in np.ndindex(*want.shape)}
    for ax in range(want.ndim):
        tag = chunk_tag(composed, ax, frozenset({0}))
        if tag is BAD:  # reversed or strided along ax
            assert any(r.src == ax and r.scale not in (0, 1) for r in composed.reads)
        elif tag is None:  # the operand does not vary along ax
            for idx, src in points.items():
                assert src == points[idx[:ax] + (0,) + idx[ax + 1 :]]
        else:
            axis, (off,) = tag
            assert all(src[axis] == idx[ax] + off for idx, src in points.items())
    # moves_data False: the operand's elements in place, only size-1 axes added or dropped
    # and broadcast
    if not moves_data(composed, shape, want.shape, same):
        kept = [1] * want.ndim
        for r, d in zip(composed.reads, shape):
            if d != 1:
                kept[r.src] = d
        np.testing.assert_array_equal(np.broadcast_to(base.reshape(kept), want.shape), want)
