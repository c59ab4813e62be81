"""The type of every IR value: dtype, shape (static rank, possibly symbolic sizes) and weakness."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import short_name, weak_pytype
from .symbolic import Dim, Expr, evaluate, format_dim


@dataclass(frozen=True)
class TensorType:
    dtype: np.dtype
    shape: tuple[Dim, ...]
    weak: bool = False  # a Python scalar (rank 0): promotes like NumPy's weak scalars

    def __post_init__(self):
        if self.weak and self.shape != ():
            raise ValueError("only rank-0 values can be weak")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def key(self):
        """What dtype rules see: the dtype, or the Python type for a weak scalar."""
        return weak_pytype(self.dtype) if self.weak else self.dtype

    @property
    def is_static(self) -> bool:
        return not any(isinstance(d, Expr) for d in self.shape)

    def concrete_shape(self, env) -> tuple[int, ...]:
        return tuple(evaluate(d, env) for d in self.shape)

    def __str__(self):
        dims = ",".join(format_dim(d) for d in self.shape)
        return f"{'~' if self.weak else ''}{short_name(self.dtype)}[{dims}]"


@dataclass(frozen=True)
class ArgSpec:
    """How one argument is specialized: kind, type (arrays, scalars) or value (constants)."""

    kind: str  # "array" | "int" | "scalar" | "const"
    type: TensorType | None = None
    value: object = None
