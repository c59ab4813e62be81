"""The CUDA tools: missing ones skip their tests with the reason, or fail them where
PYPTO_REQUIRE_CUDA_TOOLS=1 (CI) says that they must be there."""

import os

import pytest
from cupy_backend import ON_DEVICE

from pypto.testing import cuda_emu, nvrtc


def require(reason: str | None, tool: str) -> None:
    """Skip (or, with PYPTO_REQUIRE_CUDA_TOOLS=1, fail) when `reason` says why `tool` is missing."""
    if reason is None:
        return
    message = f"{tool} unavailable: {reason}"
    if os.environ.get("PYPTO_REQUIRE_CUDA_TOOLS") == "1":
        pytest.fail(f"{message} (and PYPTO_REQUIRE_CUDA_TOOLS=1)", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def gxx():
    """The CUDA emulator (g++) is usable."""
    require(cuda_emu.available(), "the CUDA emulator (g++)")


@pytest.fixture
def nvrtc_ok():
    """NVRTC (cuda-bindings and the nvidia-cuda-* wheels) is usable."""
    require(nvrtc.available(), "NVRTC")


@pytest.fixture
def tools(request):
    """Both g++ (the emulator) and NVRTC (the real compiler) are needed; on a device
    (PYPTO_CUDA_TESTS=device) CuPy compiles and runs the kernels."""
    if not ON_DEVICE:
        request.getfixturevalue("gxx")
        request.getfixturevalue("nvrtc_ok")
