"""What a Dask task runs, as data: a kernel's ``Program`` (its source, the runtime it runs in,
the sizes it takes) and its key; shared by the NumPy target's block programs
(emit/dask_blocks.py) and the CUDA target's (emit/dask_cuda.py)."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np


class NotBlockable(Exception):
    """The kernel's block cannot be rendered as a slab program (runs whole instead)."""


@dataclasses.dataclass(frozen=True)
class Program:
    """A kernel's task code: ``source`` defines ``entry``; ``names`` its module's tables."""

    key: str
    source: str
    entry: str
    names: dict
    symbols: tuple  # (name in the code, symbol) of the sizes it takes as keywords
    runtime: str = "numpy_helpers"  # the runtime it runs in ("cuda_helpers": CuPy chunks)


def digest(source: str, consts: dict, user_ops: dict) -> str:
    """A program's key: what its code runs (source, constants, user operators)."""
    h = hashlib.sha256(source.encode())
    for name, array in sorted(consts.items()):
        h.update(f"{name}{array.dtype.str}{array.shape}".encode())
        h.update(np.ascontiguousarray(array).tobytes())
    for name, impl in sorted(user_ops.items()):
        where = f"{getattr(impl, '__module__', '')}.{getattr(impl, '__qualname__', '')}"
        h.update(f"{name}={where}:{id(impl)}".encode())
    return h.hexdigest()[:20]


__all__ = ["NotBlockable", "Program", "digest"]
