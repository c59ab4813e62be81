"""The runtimes generated code runs with (pypto/emit/runtime/) are modules: what runs in this
process is their text, ``pypto transpile`` vendors them as one module, and their helpers work
when imported directly."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pypto.emit import runtime
from pypto.emit.runtime import cuda_helpers, gpu_dispatch, numpy_helpers


@pytest.mark.parametrize("name", ["numpy_helpers", "cuda_helpers", "gpu_dispatch"])
def test_embedded_text_is_the_module_below_its_docstring(name):
    text = (Path(runtime.__file__).parent / f"{name}.py").read_text()
    embedded = runtime.source(name)
    # (without its imports of the other parts: generated code has them in one namespace)
    text = "".join(line for line in text.splitlines(True) if not line.startswith("from ."))
    embedded = "".join(line for line in embedded.splitlines(True) if line.strip())
    text = "".join(line for line in text.splitlines(True) if line.strip())
    assert text.endswith(embedded)
    assert text[: -len(embedded)].strip().startswith('"""')  # only the docstring is left out
    assert '"""' not in text[: -len(embedded)].strip()[3:-3]
    compile(embedded, name, "exec")


@pytest.mark.parametrize("cuda", [False, True])
def test_the_vendored_runtime_is_every_part_once_and_imports_alone(cuda, tmp_path):
    text = runtime.vendored(cuda)
    parts = ["numpy_helpers"] + (["cuda_helpers", "gpu_dispatch"] if cuda else [])
    for name in parts:  # each part's code below its imports, unchanged
        body = runtime.source(name).split("\nimport numpy as np\n", 1)[-1].strip()
        assert body in text, name
    assert text.startswith("from __future__ import annotations\n")
    (tmp_path / "_pypto_runtime.py").write_text(text)
    check = "import sys; sys.modules['pypto'] = None; import _pypto_runtime as r; "
    check += "print(sorted(n for n in dir(r) if n.startswith('_') and not n.startswith('__')))"
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert set(eval(done.stdout)) >= {n for n in runtime.names(cuda) if n.startswith("_")}
    if cuda:
        assert "_CUDA_PRELUDE" in runtime.names(cuda) and "launch" in runtime.names(cuda)


def test_reuse_takes_the_memory_of_a_dead_buffer_in_any_layout():
    dead = np.empty((6, 4)).T  # Fortran order: C-contiguous once its axes are in memory order
    got = numpy_helpers._reuse(dead, np.float32, (3, 4))
    assert got.shape == (3, 4) and got.dtype == np.float32 and np.shares_memory(got, dead)
    strided = np.empty((6, 8))[:, ::2]  # no layout holds a buffer: a new one
    got = numpy_helpers._reuse(strided, np.float64, (2, 3))
    assert got.shape == (2, 3) and not np.shares_memory(got, strided)


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
