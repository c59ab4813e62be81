"""NVRTC compiles the same kernel text as the emulator runs, to sm_90 cubin."""

import pytest
from cuda_kernels import ALL

from pypto.testing.nvrtc import CudaCompileError, available, compile_cuda

pytestmark = pytest.mark.usefixtures("nvrtc_ok")  # conftest.py: skip or fail without NVRTC


@pytest.mark.parametrize("key", sorted(ALL))
def test_every_test_kernel_compiles(key):
    source, names = ALL[key]
    result = compile_cuda(source, name_expressions=names)
    assert result.cubin.startswith(b"\x7fELF")
    assert set(result.lowered) == set(names)
    for name in names:
        if "<" not in name:  # extern "C" kernels keep their names
            assert result.lowered[name] == name
    assert result.log == ""


def test_name_expressions_are_lowered():
    source, names = ALL["templates"]
    lowered = compile_cuda(source, name_expressions=names).lowered
    assert lowered["axpy<float>"].startswith("_Z4axpyIfEv")
    assert lowered["axpy<double>"].startswith("_Z4axpyIdEv")


def test_errors_point_at_the_source():
    source = (
        'extern "C" __global__ void k(float* a, int n) {\n'
        "    int i = threadIdx.x;\n"
        "    if (i < n) a[i] = undefined_name * 2.0f;\n"
        "    float b = ;\n"
        "}\n"
    )
    with pytest.raises(CudaCompileError) as info:
        compile_cuda(source)
    assert str(info.value).splitlines()[1:] == [
        'kernel.cu:3:23: error: identifier "undefined_name" is undefined',
        "        if (i < n) a[i] = undefined_name * 2.0f;",
        "                          ^",
        "kernel.cu:4:15: error: expected an expression",
        "        float b = ;",
        "                  ^",
    ]
    assert "2 errors detected" in info.value.log


def test_available():
    assert available() is None
