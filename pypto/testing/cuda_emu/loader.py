"""Compile CUDA source against ppto_emu.h with g++, load it, check arguments and launch kernels."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import operator
import os
import platform
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.array_utils import byte_bounds

HERE = Path(__file__).resolve().parent
HEADER = HERE / "ppto_emu.h"
RUNTIME = HERE / "ppto_emu_rt.cpp"
INCLUDE_DIR = HERE / "include"
ORDERS = {"forward": 0, "reverse": 1, "random": 2}
FLAGS = (
    "-std=c++20",
    "-O2",
    "-shared",
    "-fPIC",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",  # CUDA code reads float arrays through float4* and the like
    "-Wno-attributes",
)
_KERNEL_FILE = "kernel.cu"
_EXTERN_C_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\("
)
_NUMPY_NAMES = {
    ("f", 2): "np.float16",
    ("f", 4): "np.float32",
    ("f", 8): "np.float64",
    ("i", 1): "np.int8",
    ("i", 2): "np.int16",
    ("i", 4): "np.int32",
    ("i", 8): "np.int64",
    ("c", 1): "np.int8",
    ("u", 1): "np.uint8",
    ("u", 2): "np.uint16",
    ("u", 4): "np.uint32",
    ("u", 8): "np.uint64",
    ("b", 1): "np.bool_",
}


class EmulationError(RuntimeError):
    """A kernel failed in the emulator (compile error, barrier divergence, crash, timeout)."""


def cache_dir() -> Path:
    """Where compiled modules are kept: ``$PYPTO_EMU_CACHE_DIR``, else
    ``~/.cache/pypto/cuda_emu`` (not the compile cache's ``$PYPTO_CACHE_DIR``: the tests give
    that one a fresh directory and keep this one)."""
    env = os.environ.get("PYPTO_EMU_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "pypto" / "cuda_emu"


@functools.cache
def _compiler() -> tuple[str, str] | str:
    """(path, version line) of g++, or why it cannot be used."""
    if platform.system() != "Linux":
        return f"the CUDA emulator needs Linux (fork, mmap); this is {platform.system()}"
    gxx = shutil.which("g++")
    if gxx is None:
        return "g++ not found on PATH"
    try:
        out = subprocess.run(
            [gxx, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"],
            input="#include <bit>\nstatic_assert(sizeof(std::bit_cast<int>(1.0f)) == 4);\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
        if out.returncode != 0:
            return f"{gxx} cannot compile C++20: {out.stderr.strip()[:500]}"
        version = subprocess.run(
            [gxx, "--version"], capture_output=True, text=True, timeout=60
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError) as e:
        return f"{gxx} does not run: {e}"
    return gxx, version


def available() -> str | None:
    """None when kernels can be emulated here, else the reason (e.g. "g++ not found on PATH")."""
    c = _compiler()
    return c if isinstance(c, str) else None


@dataclass(frozen=True)
class ParamInfo:
    """A kernel parameter as the compiled kernel declares it."""

    type: str  # C++ spelling, e.g. "const float*"
    size: int  # sizeof the parameter
    kind: str  # p pointer, f floating, i signed, u unsigned, b bool, c char, o other
    pointee_size: int  # pointers: sizeof the pointee (0 for void)
    pointee_kind: str  # pointers: kind of the pointee (v void); "-" otherwise

    @property
    def is_pointer(self) -> bool:
        return self.kind == "p"


def _parse_info(text: str) -> tuple[ParamInfo, ...]:
    params = []
    for line in text.splitlines():
        if line:
            size, kind, psize, pkind, type_ = line.split(" ", 4)
            params.append(ParamInfo(type_, int(size), kind, int(psize), pkind))
    return tuple(params)


_LAUNCH_ARGTYPES = [ctypes.c_uint] * 6 + [
    ctypes.c_ulonglong,
    ctypes.c_void_p,
    ctypes.c_int,
    ctypes.c_ulonglong,
]
_RUN_ARGTYPES = [ctypes.c_void_p, *_LAUNCH_ARGTYPES] + [
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int,
    ctypes.c_double,
    ctypes.c_char_p,
    ctypes.c_ulonglong,
]
_LOCK = threading.RLock()  # the runtime's scheduler state is global: one launch at a time here


def _launchers(names: list[str]) -> str:
    lines = ["", "// ---- launchers appended by pypto.testing.cuda_emu ----"]
    for i, name in enumerate(names):
        lit = json.dumps(name)
        lines += [
            f"static constexpr auto ppto_kernel_{i} = &({name});",
            f"PPTO_EXPORT int ppto_launch_{i}(unsigned int gx, unsigned int gy, unsigned int gz,",
            "    unsigned int bx, unsigned int by, unsigned int bz, unsigned long long smem,",
            "    void** args, int order, unsigned long long seed) {",
            f"  return ::ppto_emu::launch<ppto_kernel_{i}>({lit}, gx, gy, gz, bx, by, bz, smem,",
            "                                             args, order, seed);",
            "}",
            f"PPTO_EXPORT const char* ppto_info_{i}() {{",
            f"  return ::ppto_emu::info<ppto_kernel_{i}>();",
            "}",
        ]
    return "\n".join(lines) + "\n"


def _headers_digest() -> bytes:
    h = hashlib.sha256(HEADER.read_bytes() + b"\0" + RUNTIME.read_bytes())
    for p in sorted(INCLUDE_DIR.iterdir()):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.digest()


def _gxx_options(options) -> list[str]:
    """NVRTC options to g++ ones: -D -U -I kept (-I made absolute), the others dropped."""
    out: list[str] = []
    it = iter(options)
    for opt in it:
        if not isinstance(opt, str):
            raise TypeError(f"compiler options are strings, got {opt!r}")
        for flag, long in (
            ("-D", "--define-macro="),
            ("-U", "--undefine-macro="),
            ("-I", "--include-path="),
        ):
            if opt == flag:  # "-D", "NAME=1" as two items
                value = next(it, "")
            elif opt.startswith(flag) or opt.startswith(long):
                value = opt[len(flag if opt.startswith(flag) else long) :]
            else:
                continue
            out.append(flag + (os.path.abspath(value) if flag == "-I" else value))
            break
    return out


def _build(source: str, gxx_opts: list[str], *, runtime: bool = False) -> Path:
    comp = _compiler()
    if isinstance(comp, str):
        raise EmulationError(f"cannot emulate CUDA here: {comp}")
    gxx, version = comp
    flags = [*FLAGS, *gxx_opts]
    key = hashlib.sha256(
        json.dumps([source, flags, version, platform.machine(), runtime]).encode()
        + _headers_digest()
    ).hexdigest()
    root = cache_dir()
    lib = root / f"{'rt-' if runtime else ''}{key}.so"
    if lib.exists():
        return lib
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        (tmp / _KERNEL_FILE).write_text(source)
        include = [f"-I{HERE}"] if runtime else ["-include", str(HEADER), f"-I{INCLUDE_DIR}"]
        cmd = [gxx, *flags, *include, "-x", "c++", _KERNEL_FILE, "-o", "kernel.so"]
        out = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if out.returncode != 0:
            log = out.stderr.strip()
            if len(log) > 20000:
                log = log[:20000] + "\n[... compiler output cut]"
            raise EmulationError(f"g++ failed to compile the CUDA source for emulation:\n{log}")
        os.replace(tmp / "kernel.so", lib)  # atomic: readers see all of it or nothing
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return lib


_runtimes: dict[tuple[str, ...], ctypes.CDLL] = {}


def _runtime(gxx_opts: list[str]) -> ctypes.CDLL:
    """The scheduler library, loaded RTLD_GLOBAL so that kernel modules link to it on loading."""
    rt_opts = tuple(o for o in gxx_opts if o.startswith("-DPPTO_EMU_"))  # e.g. PPTO_EMU_UCONTEXT
    with _LOCK:
        lib = _runtimes.get(rt_opts)
        if lib is None:
            if _runtimes:
                raise EmulationError(
                    f"a CUDA emulator runtime built with {sorted(_runtimes)[0] or 'no options'} "
                    f"is loaded already; one process cannot also load one with {rt_opts}"
                )
            path = _build(RUNTIME.read_text(), list(rt_opts), runtime=True)
            lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
            lib.ppto_last_error.restype = ctypes.c_char_p
            lib.ppto_run_isolated.argtypes = _RUN_ARGTYPES
            lib.ppto_reserve.argtypes = [ctypes.c_uint]
            _runtimes[rt_opts] = lib
        return lib


def _dims(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, tuple | list):
        dims = list(value)
    else:
        dims = [value]
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} must be a tuple of 1 to 3 ints, got {value!r}")
    try:
        dims = [operator.index(d) for d in dims]
    except TypeError:
        raise TypeError(f"{what} must be a tuple of 1 to 3 ints, got {value!r}") from None
    if any(not 1 <= d < 2**32 for d in dims):
        raise ValueError(f"{what} sizes must be >= 1, got {value!r}")
    return (*dims, 1, 1)[:3]


def _order(order: str) -> int:
    try:
        return ORDERS[order]
    except KeyError:
        raise ValueError(f"order must be one of {sorted(ORDERS)}, got {order!r}") from None


class EmuModule:
    """CUDA source compiled for the CPU emulator; `get_function` gives its kernels.

    ``name_expressions`` names the kernels to launch (``"fused<float>"``, ``"softmax_rows"``);
    ``extern "C" __global__`` kernels are found without being named.
    """

    def __init__(
        self,
        code: str,
        name_expressions=(),
        options=(),
        *,
        order: str | None = None,
        seed: int = 0,
        isolate: bool = True,
        timeout: float | None = 120.0,
    ):
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of CUDA source, got {type(code).__name__}")
        names = list(dict.fromkeys(name_expressions or ()))
        for name in names:
            if not isinstance(name, str) or not name.strip() or "\n" in name or ";" in name:
                raise ValueError(f"not a kernel name expression: {name!r}")
        names += [n for n in _EXTERN_C_KERNEL.findall(code) if n not in names]
        self.code = code
        self.name_expressions = tuple(names)
        self.order = order if order is not None else os.environ.get("PYPTO_EMU_ORDER", "forward")
        _order(self.order)
        self.seed = seed
        self.isolate = isolate
        self.timeout = timeout
        sep = "" if code.endswith("\n") else "\n"
        self.source = code + sep + _launchers(names)  # what g++ compiles
        gxx_opts = _gxx_options(options)
        self._rt = _runtime(gxx_opts)
        self.library_path = _build(self.source, gxx_opts)
        try:
            self._lib = ctypes.CDLL(str(self.library_path))
        except OSError as e:  # e.g. a function declared, used and never defined
            raise EmulationError(f"the compiled CUDA source does not load: {e}") from None
        self._kernels: dict[str, EmuKernel] = {}

    def get_function(self, name: str) -> EmuKernel:
        """The kernel named by one of the module's name expressions."""
        kernel = self._kernels.get(name)
        if kernel is None:
            if name not in self.name_expressions:
                raise ValueError(
                    f"no kernel {name!r} in this module: its kernels are "
                    f"{list(self.name_expressions)} (list templates and C++-linkage kernels in "
                    "name_expressions)"
                )
            kernel = self._kernels[name] = EmuKernel(self, self.name_expressions.index(name), name)
        return kernel


class EmuKernel:
    """One kernel of an `EmuModule`; call it like a CuPy RawKernel."""

    def __init__(self, module: EmuModule, index: int, name: str):
        self.module = module
        self.name = name
        lib = module._lib
        self._launch = getattr(lib, f"ppto_launch_{index}")
        self._launch.argtypes = _LAUNCH_ARGTYPES
        self._launch_ptr = ctypes.cast(self._launch, ctypes.c_void_p).value
        info = getattr(lib, f"ppto_info_{index}")
        info.restype = ctypes.c_char_p
        self.params: tuple[ParamInfo, ...] = _parse_info(info().decode())

    @property
    def num_params(self) -> int:
        return len(self.params)

    def __repr__(self):
        sig = ", ".join(p.type for p in self.params)
        return f"<EmuKernel {self.name}({sig})>"

    def _arg(self, i: int, p: ParamInfo, value):
        """(bytes of the argument, the array passed or None)."""
        where = f"argument {i} of kernel '{self.name}' ({p.type})"
        if hasattr(value, "_emu_array"):
            value = value._emu_array
        if p.is_pointer:
            if value is None:
                return (0).to_bytes(8, "little"), None
            if not isinstance(value, np.ndarray):
                got = (
                    f"a NumPy {value.dtype} scalar"
                    if isinstance(value, np.generic)
                    else type(value).__name__
                )
                raise TypeError(f"{where} is a pointer: pass an array, not {got}")
            dt = value.dtype
            if p.pointee_kind in "fiub" and dt.kind in "fiub":
                float_p, float_a = p.pointee_kind == "f", dt.kind == "f"
                if dt.itemsize != p.pointee_size or float_p != float_a:
                    raise TypeError(
                        f"{where} points to {p.pointee_size}-byte "
                        f"{'floating' if float_p else 'integer'} elements; got a {dt} array"
                    )
            ptr = value.__array_interface__["data"][0]
            return ptr.to_bytes(8, "little"), value
        if isinstance(value, np.ndarray):
            raise TypeError(
                f"{where} is a scalar parameter; got an array (pass "
                f"{_NUMPY_NAMES.get((p.kind, p.size), 'a NumPy scalar')}(...))"
            )
        if not isinstance(value, np.generic):
            hint = _NUMPY_NAMES.get((p.kind, p.size))
            hint = f"such as {hint}({value!r})" if hint else f"of {p.size} bytes"
            raise TypeError(
                f"{where} is a Python {type(value).__name__}: pass a NumPy scalar {hint}"
            )
        dt = value.dtype
        if dt.itemsize != p.size:
            raise TypeError(f"{where} takes {p.size} bytes; got a NumPy {dt} ({dt.itemsize} bytes)")
        if p.kind in "fiubc" and dt.kind in "fiub" and (p.kind == "f") != (dt.kind == "f"):
            want = "a floating" if p.kind == "f" else "an integer"
            raise TypeError(f"{where} takes {want} value; got a NumPy {dt}")
        return value.tobytes(), None

    def __call__(
        self,
        grid,
        block,
        args,
        *,
        shared_mem: int = 0,
        order: str | None = None,
        seed: int | None = None,
        isolate: bool | None = None,
        timeout: float | None = None,
    ) -> None:
        mod = self.module
        g = _dims(grid, "grid")
        b = _dims(block, "block")
        shared_mem = operator.index(shared_mem)
        if shared_mem < 0:
            raise ValueError(f"shared_mem must be >= 0, got {shared_mem}")
        code = _order(order if order is not None else mod.order)
        seed = (mod.seed if seed is None else operator.index(seed)) % 2**64
        isolate = mod.isolate if isolate is None else isolate
        timeout = mod.timeout if timeout is None else timeout
        args = tuple(args)
        if len(args) != len(self.params):
            raise TypeError(
                f"kernel '{self.name}' takes {len(self.params)} arguments "
                f"({', '.join(p.type for p in self.params)}); got {len(args)}"
            )
        # every argument in one buffer, each at a 16-byte aligned offset; args[i] points to it
        blobs, arrays = [], []
        for i, (p, v) in enumerate(zip(self.params, args)):
            blob, arr = self._arg(i, p, v)
            blobs.append(blob)
            if arr is not None:
                arrays.append(arr)
        offsets, size = [], 0
        for blob in blobs:
            offsets.append(size)
            size += (len(blob) + 15) // 16 * 16
        store = ctypes.create_string_buffer(max(size, 16) + 16)
        base = (ctypes.addressof(store) + 15) // 16 * 16
        for off, blob in zip(offsets, blobs):
            ctypes.memmove(base + off, blob, len(blob))
        argv = (ctypes.c_void_p * max(len(blobs), 1))(*[base + off for off in offsets])
        dims = (*g, *b)
        lib = mod._rt
        if not isolate:
            with _LOCK:
                rc = self._launch(*dims, shared_mem, argv, code, seed)
                if rc != 0:
                    raise EmulationError(lib.ppto_last_error().decode(errors="replace"))
            return
        regions = _writable_regions(arrays)
        nreg = len(regions)
        ptrs = (ctypes.c_void_p * max(nreg, 1))(*[lo for lo, _ in regions])
        sizes = (ctypes.c_ulonglong * max(nreg, 1))(*[hi - lo for lo, hi in regions])
        err = ctypes.create_string_buffer(4096)
        with _LOCK:  # (the child gets a consistent copy of the scheduler's state)
            lib.ppto_reserve(b[0] * b[1] * b[2])  # stacks mapped once, here, for every child
            rc = lib.ppto_run_isolated(
                self._launch_ptr,
                *dims,
                shared_mem,
                argv,
                code,
                seed,
                ptrs,
                sizes,
                nreg,
                float(timeout or 0.0),
                err,
                len(err),
            )
        if rc == 0:
            return
        launch = f"kernel '{self.name}' (grid {g}, block {b})"
        if rc < 0:
            sig = -rc
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            hint = ""
            if sig in (signal.SIGSEGV, signal.SIGBUS):
                hint = " (a bad address, or a thread's stack overflowed: each has 128 KiB)"
            raise EmulationError(
                f"kernel crashed: signal {name} ({signal.strsignal(sig)}) in {launch}{hint}"
            )
        if rc == 2:
            raise EmulationError(
                f"{launch} did not finish within {timeout} s and was killed (an endless loop, "
                "or a wait for another block: blocks run one after another)"
            )
        if rc == 3:
            raise EmulationError(f"{launch} was interrupted")
        raise EmulationError(err.value.decode(errors="replace"))


def _writable_regions(arrays) -> list[tuple[int, int]]:
    """The byte ranges of the writable arrays, overlapping ones merged."""
    spans = []
    for a in arrays:
        if a.flags.writeable and a.size:
            lo, hi = byte_bounds(a)
            spans.append((lo, hi))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged
