"""Compile CUDA C with NVRTC (the compiler CuPy uses) without a GPU or a driver.

Needs the ``cuda-bindings`` and ``nvidia-cuda-nvrtc`` / ``nvidia-cuda-runtime`` wheels (13.0.x:
the GPU machines' driver loads PTX up to CUDA 13.0, so the output is cubin for ``sm_90``)::

    from pypto.testing.nvrtc import available, compile_cuda, CudaCompileError

    result = compile_cuda(src, name_expressions=("fused<float>",))
    result.lowered["fused<float>"]   # the mangled name
    result.cubin                     # bytes

A failed compile raises `CudaCompileError` whose message shows each error against the source:
``kernel.cu:LINE:COL: error: ...``, the source line and a caret.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

FILE_NAME = "kernel.cu"
_LOG_LINE = re.compile(
    r"^(?P<file>.*?)\((?P<line>\d+)\): (?P<kind>[a-z ]*error|warning)(?P<rest>.*)$"
)


class CudaCompileError(Exception):
    """NVRTC rejected the source; the message points at the failing lines."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@dataclass
class NvrtcResult:
    lowered: dict[str, str] = field(default_factory=dict)  # name expression -> mangled name
    log: str = ""  # NVRTC's log (warnings), "" when clean
    cubin: bytes = b""


@functools.cache
def _load():
    """(nvrtc module, cudart include dir) or the reason they cannot be used."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        return f"cuda-bindings not installed ({e})"
    try:
        import cuda.pathfinder as pf

        include = pf.find_nvidia_header_directory("cudart")
    except Exception as e:  # pathfinder raises its own errors when a wheel is missing
        return f"the CUDA runtime headers (nvidia-cuda-runtime) are not found ({e})"
    if include is None:
        return "the CUDA runtime headers (nvidia-cuda-runtime) are not found"
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as e:  # loading libnvrtc fails in its own ways
        return f"NVRTC cannot be loaded ({type(e).__name__}: {e})"
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return f"NVRTC cannot be loaded ({err})"
    return nvrtc, include, (major, minor)


def available() -> str | None:
    """None when NVRTC can compile here, else the reason."""
    loaded = _load()
    return loaded if isinstance(loaded, str) else None


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    return _require()[2]


def _require():
    loaded = _load()
    if isinstance(loaded, str):
        raise RuntimeError(f"NVRTC is not available: {loaded}")
    return loaded


def _check(nvrtc, result, what: str):
    err, *rest = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def compile_cuda(
    source: str, *, name_expressions=(), arch: str = "sm_90", options=()
) -> NvrtcResult:
    """Compile ``source`` to cubin for ``arch``; raise `CudaCompileError` if NVRTC rejects it."""
    nvrtc, include, _ = _require()
    prog = _check(
        nvrtc,
        nvrtc.nvrtcCreateProgram(source.encode(), FILE_NAME.encode(), 0, [], []),
        "nvrtcCreateProgram",
    )
    try:
        for name in name_expressions:
            _check(
                nvrtc, nvrtc.nvrtcAddNameExpression(prog, name.encode()), "nvrtcAddNameExpression"
            )
        opts = [
            f"--gpu-architecture={arch}".encode(),
            b"--std=c++17",
            f"-I{include}".encode(),
            *(o.encode() for o in options),
        ]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = b" " * size
        _check(nvrtc, nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        log = buf.rstrip(b"\0").decode(errors="replace").strip()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(_explain(source, log, err), log)
        lowered = {
            name: _check(
                nvrtc, nvrtc.nvrtcGetLoweredName(prog, name.encode()), "nvrtcGetLoweredName"
            ).decode()
            for name in name_expressions
        }
        size = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        _check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        return NvrtcResult(lowered=lowered, log=log, cubin=cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _explain(source: str, log: str, err) -> str:
    """NVRTC's log as `kernel.cu:LINE:COL: error: ...` with the source line and a caret."""
    src_lines = source.splitlines()
    log_lines = log.splitlines()
    out = []
    for i, text in enumerate(log_lines):
        m = _LOG_LINE.match(text)
        if not m or "error" not in m["kind"]:
            continue
        lineno = int(m["line"])
        col = None
        in_source = m["file"] == FILE_NAME and 1 <= lineno <= len(src_lines)
        if in_source and i + 2 < len(log_lines):  # NVRTC prints "  <line>" then "  <spaces>^"
            shown, caret = log_lines[i + 1], log_lines[i + 2]
            if shown[2:] == src_lines[lineno - 1] and caret.strip() == "^":
                col = len(caret) - 2
        place = f"{m['file']}:{lineno}" + (f":{col}" if col else "")
        out.append(f"{place}: {m['kind']}{m['rest']}")
        if in_source:
            out.append("    " + src_lines[lineno - 1])
            if col:  # keep the line's tabs so that the caret lines up
                pad = "".join(c if c == "\t" else " " for c in src_lines[lineno - 1][: col - 1])
                out.append("    " + pad + "^")
    if not out:  # nothing we could parse: show the log itself
        return f"NVRTC failed ({err}):\n{log}"
    return "NVRTC failed to compile the CUDA source:\n" + "\n".join(out)
