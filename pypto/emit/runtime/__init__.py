"""The runtimes generated code runs with, as real modules (linted and tested like the rest).

Generated modules embed a runtime's text (below its docstring), so that they run without
PyPTO: ``numpy_helpers`` (the NumPy target), ``cuda_helpers`` (the CUDA target's host side)
and ``gpu_dispatch`` (a transpiled module's test for CuPy arrays).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent


@cache
def source(name: str) -> str:
    """The text of runtime module ``name`` below its docstring (what generated code embeds)."""
    text = (HERE / f"{name}.py").read_text()
    tree = ast.parse(text)
    doc = tree.body[0] if tree.body and isinstance(tree.body[0], ast.Expr) else None
    if doc is not None:
        text = "".join(text.splitlines(True)[doc.end_lineno :])
    return text.lstrip("\n")


__all__ = ["source"]
