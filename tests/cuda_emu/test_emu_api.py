"""The emulator's Python side: argument checks, launch configurations, compile errors, the cache,
in-process launches, aliasing arrays and the ucontext fallback."""

import functools
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from cuda_kernels import ALL, TEMPLATES

from pypto.testing.cuda_emu import EmulationError, EmuModule, available

pytestmark = pytest.mark.usefixtures("gxx")  # conftest.py: skip or fail without g++


@functools.cache
def module(key: str) -> EmuModule:
    source, names = ALL[key]
    return EmuModule(source, names)


def map_fma():
    return module("basic").get_function("map_fma")


def test_parameters_are_described():
    k = map_fma()
    assert k.num_params == 4
    assert [p.type for p in k.params] == ["const float*", "const float*", "float*", "long long int"]
    assert [(p.kind, p.pointee_kind, p.pointee_size) for p in k.params[2:]] == [
        ("p", "f", 4),
        ("i", "-", 0),
    ]
    assert repr(k) == "<EmuKernel map_fma(const float*, const float*, float*, long long int)>"


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ("x x y", TypeError, r"kernel 'map_fma' takes 4 arguments \(const float\*, .*\); got 3"),
        (
            "x x y y",
            TypeError,
            r"argument 3 .* is a scalar parameter; got an array \(pass np.int64",
        ),
        (
            "x x y 5",
            TypeError,
            r"argument 3 .* is a Python int: pass a NumPy scalar such as np.int64\(5\)",
        ),
        ("x x y i32", TypeError, r"argument 3 .*long long int\) takes 8 bytes; got a NumPy int32"),
        ("x x y f64", TypeError, r"argument 3 .* takes an integer value; got a NumPy float64"),
        (
            "x f32 y n",
            TypeError,
            r"argument 1 .*\(const float\*\) is a pointer: pass an array, not a",
        ),
        (
            "x x d n",
            TypeError,
            r"argument 2 .*\(float\*\) points to 4-byte floating elements; got a",
        ),
        ("x x 1.5 n", TypeError, r"argument 2 .* is a pointer: pass an array, not float"),
    ],
)
def test_argument_errors(args, error, match):
    values = {
        "x": np.zeros(8, np.float32),
        "y": np.zeros(8, np.float32),
        "d": np.zeros(8, np.float64),
        "n": np.int64(8),
        "5": 5,
        "1.5": 1.5,
        "i32": np.int32(8),
        "f64": np.float64(8),
        "f32": np.float32(1),
    }
    with pytest.raises(error, match=match):
        map_fma()((1,), (8,), tuple(values[a] for a in args.split()))


@pytest.mark.parametrize(
    ("grid", "block", "error", "match"),
    [
        ((0,), (8,), ValueError, r"grid sizes must be >= 1"),
        ((1, 1, 1, 1), (8,), ValueError, r"grid must be a tuple of 1 to 3 ints"),
        (("a",), (8,), TypeError, r"grid must be a tuple of 1 to 3 ints"),
        ((1,), (1025,), EmulationError, r"invalid launch of kernel 'map_fma': block 1025x1x1"),
        ((1,), (8, 8, 65), EmulationError, r"block z <= 64"),
    ],
)
def test_launch_configuration_errors(grid, block, error, match):
    x = np.zeros(8, np.float32)
    with pytest.raises(error, match=match):
        map_fma()(grid, block, (x, x, x, np.int64(8)))


def test_other_errors():
    x = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=r"order must be one of"):
        map_fma()((1,), (8,), (x, x, x, np.int64(8)), order="backwards")
    with pytest.raises(ValueError, match=r"no kernel 'axpy' in this module"):
        module("templates").get_function("axpy")
    with pytest.raises(EmulationError, match=r"(?s)invalid launch.*232448"):
        map_fma()((1,), (8,), (x, x, x, np.int64(8)), shared_mem=300_000)


@pytest.mark.parametrize("order", ["forward", "reverse", "random"])
def test_grid_and_block_tuples_like_cupy(order):
    k = module("basic").get_function("coords")
    grid, block = (3, 2, 2), (4, 2, 3)
    out = np.zeros((2, 2, 3, 3, 2, 4, 6), np.int32)  # z y x of blocks, z y x of threads
    k(grid, block, (out,), order=order)
    idx = np.indices(out.shape[:-1])
    expect = np.stack([idx[2], idx[1], idx[0], idx[5], idx[4], idx[3]], axis=-1)
    np.testing.assert_array_equal(out, expect)
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    map_fma()(2, 32, (x, np.ones_like(x), y, np.int64(100)))  # plain ints too
    np.testing.assert_allclose(y, x + np.sin(x), rtol=1e-6)


def test_emu_array_wrappers_and_aliasing_arrays():
    class FakeCupyArray:
        def __init__(self, a):
            self._emu_array = a

    k = module("templates").get_function("axpy<float>")
    y = np.arange(100, dtype=np.float32)
    k((1,), (128,), (np.float32(2), FakeCupyArray(y), FakeCupyArray(y), np.int32(100)))
    np.testing.assert_array_equal(y, 4 * np.arange(100, dtype=np.float32))  # x is y: 2y + 2y
    whole = np.arange(200, dtype=np.float32)
    x, y = whole[:100], whole[50:150]  # overlapping views of one buffer come back whole
    k((1,), (128,), (np.float32(0), x, y, np.int32(100)))
    np.testing.assert_array_equal(whole[150:], np.arange(150, 200))
    assert whole[50] == 2 * 50


def test_in_process_launches():
    k = module("faults").get_function("early_exit")
    with pytest.raises(EmulationError, match="barrier divergence"):
        k((1,), (256,), (np.zeros(256, np.float32),), isolate=False)
    x = np.ones(64, np.float32)
    y = np.zeros_like(x)
    map_fma()((1,), (64,), (x, x, y, np.int64(64)), isolate=False)  # the scheduler recovered
    np.testing.assert_allclose(y, 1 + np.sin(x))


def test_compile_errors_show_the_line():
    source = 'extern "C" __global__ void k(float* a) {\n    a[0] = undefined_name;\n}\n'
    with pytest.raises(EmulationError, match=r"(?s)g\+\+ failed.*kernel.cu:2:12: error"):
        EmuModule(source)


def test_cache_and_options():
    assert available() is None
    source = TEMPLATES + "\n#ifndef SCALE\n#error SCALE\n#endif\n"
    a = EmuModule(source, ("axpy<float>",), options=("-DSCALE=2", "--std=c++17", "-use_fast_math"))
    b = EmuModule(source, ("axpy<float>",), options=("-DSCALE=2",))
    assert a.library_path == b.library_path and a.library_path.exists()
    with pytest.raises(EmulationError, match="#error SCALE"):
        EmuModule(source, ("axpy<float>",))


UCONTEXT = """
import numpy as np
from cuda_kernels import SOFTMAX
from pypto.testing.cuda_emu import EmuModule
mod = EmuModule(SOFTMAX, options=("-DPPTO_EMU_UCONTEXT",), order="random")
x = np.random.default_rng(0).standard_normal((8, 300), dtype=np.float32)
y = np.zeros_like(x)
mod.get_function("softmax_rows")((8,), (128,), (x, y, np.int64(300)))
e = np.exp(x - x.max(axis=1, keepdims=True))
np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
print("ok")
"""


def test_ucontext_fallback():
    """The scheduler built on swapcontext (other CPUs than x86-64): in a process of its own, since
    a process loads one scheduler."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(UCONTEXT)],
        capture_output=True,
        text=True,
        cwd=__file__.rsplit("/", 1)[0],
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
