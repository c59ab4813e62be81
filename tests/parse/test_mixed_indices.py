"""Index arrays and masks next to slices and integers (``x[idx, 1:3]``, ``A[0, idx]``,
``x[1:3, idx, :, 0]``, ``x[m, 1:] = v``): random index expressions, each written into a module
of its own and compiled unchanged, read and written against NumPy (values, shapes, dtypes,
the argument after the write, NumPy's errors). NumPy's rule for where the indices' axes go
(first, where the arrays and integers do not stand together) included."""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest
from helpers import assert_same_result
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import pypto as ppto

_COUNT = itertools.count()


def _module(tmp_path, source: str):
    path = tmp_path / f"mixed_{next(_COUNT)}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@st.composite
def _indexed(draw):
    """(shape, index items as source text, the arrays they name, is a write refused)"""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    count = draw(st.integers(1, rank))
    start = draw(st.integers(0, rank - count))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    mask = draw(st.booleans()) and count == 1
    ishape = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    arrays, items = {}, []
    for k, n in enumerate(shape):
        if start <= k < start + count:
            name = f"i{k}"
            if mask:
                arrays[name] = rng.uniform(size=n) > 0.4
            else:
                arrays[name] = rng.integers(-n, n, ishape if draw(st.booleans()) else ())
            items.append(name)
            continue
        kind = draw(st.sampled_from(["all", "slice", "int", "step"]))
        lo = draw(st.integers(-n, n))
        items.append(
            {
                "all": ":",
                "slice": f"{lo}:",
                "int": str(draw(st.integers(-n, n - 1))),
                "step": "::-2",
            }[kind]
        )
    while len(items) > count and items[-1] == ":" and draw(st.booleans()):
        items.pop()  # (the trailing axes left out)
    return shape, ", ".join(items), arrays


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_indexed(), dtype=st.sampled_from(["float32", "float64", "int64"]))
def test_mixed_indices_read_and_write_like_numpy(tmp_path, case, dtype):
    shape, index, arrays = case
    names = ", ".join(arrays)
    mod = _module(
        tmp_path,
        f"def read(x, {names}):\n    return x[{index}] * 2\n\n\n"
        f"def write(x, {names}, v):\n    x[{index}] = v\n    return x.sum()\n",
    )
    x = (np.random.default_rng(1).standard_normal(shape) * 5).astype(dtype)
    args = tuple(arrays.values())
    try:
        want = mod.read(x, *args)
    except IndexError:
        with pytest.raises(IndexError):
            ppto.compile(mod.read)(x, *args)
        event("read: IndexError")
        return
    assert_same_result(ppto.compile(mod.read)(x, *args), want)
    v = np.arange(np.size(want), dtype=dtype).reshape(np.shape(want)) + 1
    mine, ref = x.copy(), x.copy()
    try:
        expected = mod.write(ref, *args, v)
    except (IndexError, ValueError) as e:
        with pytest.raises(type(e)):
            ppto.compile(mod.write)(mine, *args, v)
        event("write: NumPy's error")
        return
    try:
        got = ppto.compile(mod.write)(mine, *args, v)
    except ppto.UnsupportedError as e:  # (only the documented refusal)
        assert "PPT105" in str(e), e
        event("write refused")
        return
    event("read and write compared")
    assert_same_result(got, expected)
    np.testing.assert_array_equal(mine, ref)  # the write into the argument


def test_a_mask_over_two_axes_beside_a_slice_is_refused(tmp_path):
    """(a mask covers as many axes as it has: not one item per axis, so not split here)"""
    mod = _module(tmp_path, "def f(x, m):\n    return x[m, 1:] * 2\n")
    x = np.arange(60.0).reshape(3, 4, 5)
    with pytest.raises(ppto.UnsupportedError) as got:
        ppto.compile(mod.f)(x, x[:, :, 0] > 10)
    assert "PPT101" in str(got.value)
