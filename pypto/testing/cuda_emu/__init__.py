"""Run CUDA C kernels on the CPU: the proof, without a GPU, that emitted CUDA source computes right.

The emitted ``.cu`` text is compiled unchanged by g++ against ``ppto_emu.h`` (``-include``; the
stub headers in ``include/`` stand for ``cuda_fp16.h``, ``cuda_bf16.h`` and ``cuda_runtime.h``)
and called through ctypes, in CuPy's shapes::

    from pypto.testing.cuda_emu import EmuModule, available, EmulationError

    mod = EmuModule(code=src, name_expressions=("fused<float>",))
    k = mod.get_function("fused<float>")
    k((grid_x,), (block_x,), (a, b, out, np.int64(n)), shared_mem=0)

Each CUDA thread of a block is a fiber; fibers switch only at ``__syncthreads()`` and at warp
intrinsics; blocks run one after another. ``order`` ("forward", "reverse" or "random" with
``seed``) is the order in which threads run between two barriers (and blocks run): a missing
``__syncthreads()`` gives a wrong answer in some order (reading what a higher thread writes shows in
"forward", what a lower one writes in "reverse"). It is set per module (default: the environment
variable ``PYPTO_EMU_ORDER``, else "forward") and per launch: ``k(grid, block, args,
order="reverse", seed=3)``. Threads that wait at a barrier which others never reach raise
`EmulationError` naming the kernel, the block and the counts.

Arguments: NumPy arrays (or objects whose ``_emu_array`` attribute is one) for pointer parameters,
passed as their data pointer (``None`` is a null pointer); NumPy scalars (``np.float32(2)``,
``np.int64(n)``) for the others. Counts, kinds and sizes are checked against the kernel's parameter
types; a Python int or float raises TypeError (pass a NumPy scalar of the parameter's type).

``isolate=True`` (the default) runs each launch in a forked child: a crash (a bad pointer) raises
`EmulationError` ("kernel crashed: signal SIGSEGV ...") instead of killing the process, and a launch
running longer than ``timeout`` seconds is killed. The writable arrays come back from the child
when the kernel finishes. ``isolate=False`` runs in this process (faster; a crash kills it).

Compiled modules are cached on disk (``$PYPTO_EMU_CACHE_DIR``, else ``~/.cache/pypto/cuda_emu``) by
the SHA-256 of the source, the headers and the flags. `available` says why it cannot run here.
Compiler options in NVRTC's spelling are accepted: ``-D``, ``-U`` and ``-I`` options go to g++,
the others (``--std=...``, ``--use_fast_math``, ``-arch=...``) are ignored.

The scheduler (``ppto_emu_rt.cpp``) is a library of its own, built once and loaded before the
kernel modules; it switches fibers with a few x86-64 instructions, or with ``swapcontext`` on
other CPUs (and with ``-DPPTO_EMU_UCONTEXT``: one scheduler a process). Each thread has a 128 KiB
stack. Static ``__shared__`` arrays keep their contents from block to block; dynamic shared memory
(``PPTO_DYN_SMEM``) is filled with 0xFF bytes (NaN) at each block start and ends at a guard page.
"""

from pypto.testing.cuda_emu.loader import (
    HEADER,
    INCLUDE_DIR,
    EmuKernel,
    EmulationError,
    EmuModule,
    ParamInfo,
    available,
    cache_dir,
)

__all__ = [
    "HEADER",
    "INCLUDE_DIR",
    "EmuKernel",
    "EmuModule",
    "EmulationError",
    "ParamInfo",
    "available",
    "cache_dir",
]
