"""The runtimes generated code embeds (pypto/emit/runtime/) are modules: what is embedded is
their text, and their helpers work when imported directly."""

from pathlib import Path

import numpy as np
import pytest

from pypto.emit import runtime
from pypto.emit.numpy_target import PRELUDE
from pypto.emit.runtime import cuda_helpers, gpu_dispatch, numpy_helpers


@pytest.mark.parametrize("name", ["numpy_helpers", "cuda_helpers", "gpu_dispatch"])
def test_embedded_text_is_the_module_below_its_docstring(name):
    text = (Path(runtime.__file__).parent / f"{name}.py").read_text()
    embedded = runtime.source(name)
    assert text.endswith(embedded)
    assert text[: -len(embedded)].strip().startswith('"""')  # only the docstring is left out
    assert '"""' not in text[: -len(embedded)].strip()[3:-3]
    compile(embedded, name, "exec")


def test_the_numpy_target_embeds_its_runtime():
    assert runtime.source("numpy_helpers") == PRELUDE


def test_scratch_arrays_follow_the_layout_they_are_asked_for():
    bufs = {}
    like = np.empty((4, 3)).T  # (3, 4), axis 0 innermost
    a = numpy_helpers._tmp(bufs, 0, (3, 4), np.float64, like)
    assert a.shape == (3, 4) and a.strides == like.strides
    b = numpy_helpers._tmp(bufs, 0, (3, 4), np.float64, like)
    assert b is a  # the same slot and shape: the same view back
    c = numpy_helpers._tmp(bufs, 0, (2, 2), np.float64)
    assert c.flags.c_contiguous and c.shape == (2, 2)


def test_cat_of_one_nonempty_piece_is_that_piece():
    x = np.arange(6.0).reshape(2, 3)
    empty = np.empty((0, 3))
    assert numpy_helpers._cat([empty, x, empty], 0) is x
    np.testing.assert_array_equal(numpy_helpers._cat([x, x], 0), np.concatenate([x, x]))


def test_chunks_cover_every_block_once():
    seen = []
    numpy_helpers._chunks(lambda s, e: seen.append((s, e)), 1000, 64)
    covered = sorted(i for s, e in seen for i in range(s, e))
    assert covered == list(range(1000))


def test_grid_and_strides():
    assert cuda_helpers._grid(0) == 0
    assert cuda_helpers._grid(1) == 1
    assert cuda_helpers._grid(10**9) == 4096
    a = np.empty((3, 5), np.float32)[:, ::2]
    assert cuda_helpers._stride(a, 1) == 2 and cuda_helpers._stride(a, 0) == 5


def test_gpu_dispatch_sees_only_gpu_arrays():
    assert not gpu_dispatch._on_gpu(np.ones(3), 2.0)

    class FakeGpuArray:
        __cuda_array_interface__ = {}
        dtype = np.dtype(np.float32)
        _pypto_cupy = "the stand-in"

    assert gpu_dispatch._on_gpu(np.ones(3), FakeGpuArray())
    assert gpu_dispatch._cupy(FakeGpuArray()) == "the stand-in"
