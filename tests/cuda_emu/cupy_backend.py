"""Which CuPy the CUDA-target tests run with.

By default the emulator's stand-in (``FakeCupy``): kernels run as emulated CUDA threads on the
CPU. With ``PYPTO_CUDA_TESTS=device`` the same tests run on a real GPU through the real CuPy
(``DeviceCupy``), which counts kernel launches and library products as the stand-in does;
``compile_graph`` then takes and returns host (NumPy) arrays, so the tests' oracles stay NumPy:
inputs are uploaded with their strides, results downloaded, and arrays the kernels wrote in
place copied back to the host arrays they came from.

    cp = make_cupy(order="reverse")
    run = compile_graph(plan, cp)
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from pypto.emit.cuda_target import compile_graph_cuda
from pypto.testing.cuda_emu.fakecupy import FakeCupy

ON_DEVICE = os.environ.get("PYPTO_CUDA_TESTS") == "device"
_PRODUCTS = ("matmul", "dot")


def make_cupy(order: str = "forward", seed: int = 0, isolate: bool = True):
    """The emulator's stand-in (threads in ``order``), or the real CuPy on a device."""
    return DeviceCupy() if ON_DEVICE else FakeCupy(order=order, seed=seed, isolate=isolate)


_LAUNCHES: list[str] = []  # every launch and product of the real CuPy in this process


def _instrument(cupy) -> None:
    """Count every kernel launched through ``cupy.RawModule`` and every ``cupy.matmul`` /
    ``cupy.dot``, however PyPTO found the module (CuPy's arrays cannot name a counter, so
    PyPTO imports ``cupy`` itself). Once per process."""
    if getattr(cupy, "_pypto_counted", False):
        return
    raw_module = cupy.RawModule

    def counting_module(*args, **kwargs):
        return _CountingModule(raw_module(*args, **kwargs))

    def counted(name, fn):
        def product(*args, **kwargs):
            _LAUNCHES.append(name)
            return fn(*args, **kwargs)

        return product

    cupy.RawModule = counting_module
    for name in _PRODUCTS:
        setattr(cupy, name, counted(name, getattr(cupy, name)))
    cupy._pypto_counted = True


class DeviceCupy:
    """The real ``cupy`` module; ``launches`` lists the launches since this object was made."""

    def __init__(self):
        import cupy

        _instrument(cupy)
        self._cp = cupy
        self._start = len(_LAUNCHES)

    @property
    def launches(self) -> list[str]:
        return _LAUNCHES[self._start :]

    def __getattr__(self, name):
        return getattr(self._cp, name)

    def device(self, a):
        return to_device(self._cp, np.asarray(a))


class _CountingModule:
    def __init__(self, module):
        self.module = module

    def get_function(self, name):
        kernel = self.module.get_function(name)

        def launch(grid, block, args, shared_mem=0):
            _LAUNCHES.append(name)
            return kernel(grid, block, args, shared_mem=shared_mem)

        return launch


def to_device(cp, a: np.ndarray):
    """``a`` on the device with the same strides (a view of an uploaded span of its memory)."""
    if a.flags.c_contiguous or a.size == 0:
        return cp.asarray(a)
    item = a.itemsize
    lo = sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + item
    if lo % item or any(s % item for s in a.strides):
        return cp.asarray(np.ascontiguousarray(a))
    start = a.__array_interface__["data"][0] + lo
    span = np.frombuffer((ctypes.c_char * (hi - lo)).from_address(start), dtype=a.dtype).copy()
    base = cp.asarray(span)[-lo // item :]
    return cp.lib.stride_tricks.as_strided(base, shape=a.shape, strides=a.strides)


def to_host(x):
    """Device arrays (in tuples and lists too) as NumPy arrays; anything else as it is."""
    if isinstance(x, (tuple, list)):
        return type(x)(to_host(v) for v in x)
    if hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):
        return x.get()
    return x


class _HostFacing:
    """A compiled graph that takes and returns NumPy arrays around a run on the device."""

    def __init__(self, run, cp):
        self._run, self._cp = run, cp

    def __getattr__(self, name):
        return getattr(self._run, name)

    def __call__(self, values, env):
        cp = self._cp._cp
        device = [to_device(cp, v) if isinstance(v, np.ndarray) else v for v in values]
        before = [v.copy() if isinstance(v, np.ndarray) else None for v in values]
        out = self._run(device, env)
        for host, dev, was in zip(values, device, before):  # what the kernels wrote in place
            if was is not None and host.flags.writeable:
                now = dev.get()
                if not np.array_equal(now, was, equal_nan=now.dtype.kind in "fc"):
                    np.copyto(host, now)
        return to_host(out)


def compile_graph(plan, cp):
    """compile_graph_cuda(plan, cp); on a device, taking and returning host arrays."""
    run = compile_graph_cuda(plan, cp)
    return _HostFacing(run, cp) if isinstance(cp, DeviceCupy) else run
