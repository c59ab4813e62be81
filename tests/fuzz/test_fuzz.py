"""The differential fuzzer's CI profile: fixed seeds, reproducible.

Random NumPy-style functions (tests/fuzz/generator.py) run with NumPy and with PyPTO
(tests/fuzz/oracle.py): 400 programs through ``@ppto.compile`` on the NumPy target, the pure
ones among them also through the lazy API, and 36 programs through ``@ppto.compile`` on the CUDA
target, run by the CPU emulator (skipped, with the reason, where tests/cuda_emu's CUDA tests skip:
g++ or NVRTC missing), and 100 programs on the Dask target (dask arrays of random chunks, the
synchronous scheduler). Each failure is shrunk (within a time budget) and reported with its seed
and the shrunk program; ``generate(seed)`` rebuilds it. The long profile is
``benchmarks/fuzz_long.py``.
"""

from __future__ import annotations

import pytest
from helpers import cuda_emulator

from .generator import Config, generate
from .oracle import fuzz

# the CUDA tests' fixtures (g++ and NVRTC, or a device), from tests/cuda_emu/conftest.py
_emu = cuda_emulator("fuzz_cuda_emu_conftest")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools

CHUNKS, PER_CHUNK = 4, 100  # NumPy target (and lazy API): seeds 0..399
CUDA_CHUNKS, CUDA_PER_CHUNK = 2, 18  # CUDA emulator: seeds 100000..100035
CUDA_BASE = 100_000
DASK_BASE, DASK_PROGRAMS = 200_000, 100  # Dask target: seeds 200000..200099
# (the Dask target's programs without boolean-mask selections and scatters: sizes the values
# decide fail there where an assumption about them breaks, see docs/dask.md)
DASK_CONFIG = Config()
DASK_CONFIG.ops["select"] = 0
DASK_CONFIG.stmt["scatter"] = 0


def _assert_no_findings(findings, what):
    if findings:
        listed = "\n\n".join(f.message() for f in findings)
        pytest.fail(f"{len(findings)} fuzzer failure(s) on {what}:\n\n{listed}", pytrace=False)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_numpy_target_and_lazy_api(chunk):
    seeds = range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK)
    findings = fuzz(seeds, ("numpy", "lazy"), shrink_budget=5.0, per_failure=2.0)
    _assert_no_findings(findings, f"the NumPy target and the lazy API, seeds {seeds}")


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("chunk", range(CUDA_CHUNKS))
def test_fuzz_cuda_target_on_the_emulator(chunk):
    start = CUDA_BASE + chunk * CUDA_PER_CHUNK
    seeds = range(start, start + CUDA_PER_CHUNK)
    findings = fuzz(seeds, ("cuda",), shrink_budget=12.0, per_failure=6.0)
    _assert_no_findings(findings, f"the CUDA target (emulator), seeds {seeds}")


def test_fuzz_dask_target():
    pytest.importorskip("dask.array")
    seeds = range(DASK_BASE, DASK_BASE + DASK_PROGRAMS)
    findings = fuzz(
        seeds,
        ("dask",),
        shrink_budget=10.0,
        per_failure=3.0,
        generate=lambda seed: generate(seed, DASK_CONFIG),
    )
    _assert_no_findings(findings, f"the Dask target, seeds {seeds}")
