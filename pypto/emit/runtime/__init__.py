"""The runtimes generated code runs with, as real modules (linted and tested like the rest).

``numpy_helpers`` (the NumPy target), ``cuda_helpers`` (the CUDA target's host side, which
also calls ``numpy_helpers``' buffer helpers) and ``gpu_dispatch`` (a transpiled module's test
for CuPy arrays). In this process the targets run their text in a namespace (``source``);
``pypto transpile`` writes them as one vendored module, ``_pypto_runtime.py`` (``vendored``),
that the generated modules import: the imports of the parts first, then the parts, the
attention kernel's module (emit/cuda_attention.py) and the CUDA prelude's text.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent


@cache
def source(name: str) -> str:
    """The text of runtime module ``name`` below its docstring (what generated code embeds)."""
    return _body((HERE / f"{name}.py").read_text()).lstrip("\n")


_NAMESPACES: dict = {}


def namespace(name: str) -> dict:
    """Runtime module ``name`` run once in this process (generated code runs in copies of it),
    with ``math``, which generated code calls; ``cuda_helpers`` on top of ``numpy_helpers``, with
    ``_FA``, the attention kernel's module, and ``_CUDA_PRELUDE``, the text every kernel module
    starts with."""
    found = _NAMESPACES.get(name)
    if found is None:
        import math

        found = {"math": math}
        if name == "cuda_helpers":
            from .. import cuda_attention, cuda_prelude

            found = dict(namespace("numpy_helpers"), _FA=vars(cuda_attention))
            found["_CUDA_PRELUDE"] = cuda_prelude.PRELUDE
        exec(compile(source(name), f"<pypto-runtime-{name}>", "exec"), found)
        _NAMESPACES[name] = found
    return found


@cache
def vendored(cuda: bool, standalone: bool = False) -> str:
    """The vendored runtime module's code (below its header): the NumPy helpers and, with
    ``cuda``, the CUDA host helpers, the GPU dispatch, the attention kernel's module (its
    names are this module's) and ``_CUDA_PRELUDE``, the text every kernel module
    starts with. ``standalone``: with ``math``, for a module that is runtime and generated code
    in one."""
    from .. import cuda_attention, cuda_prelude

    parts = [source("numpy_helpers")]
    if cuda:
        parts.append(_body(Path(cuda_attention.__file__).read_text()))
        parts += [source("cuda_helpers"), source("gpu_dispatch")]
        parts.append(f"_CUDA_PRELUDE = r'''{cuda_prelude.PRELUDE}'''\n")
    imports, bodies, defined = ["import math"] if standalone else [], [], set()
    for part in parts:
        lines = part.splitlines(True)
        tree = ast.parse(part)
        cut = 0
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                break
            text = "".join(lines[node.lineno - 1 : node.end_lineno]).split("  # noqa")[0]
            if text.strip() not in imports and getattr(node, "module", "") != "__future__":
                imports.append(text.strip())
            cut = node.end_lineno
        names = _defined(tree)
        if names & defined:
            raise ValueError(f"runtime parts define {sorted(names & defined)} twice")
        defined |= names
        bodies.append("".join(lines[cut:]).strip("\n") + "\n")
    third = [i for i in imports if "numpy" in i]  # the standard library's first, as isort
    std = sorted(i for i in imports if i.startswith("import ") and i not in third)
    std += sorted(i for i in imports if i.startswith("from ") and i not in third)
    head = "from __future__ import annotations\n\n" + "\n".join(std) + "\n\n"
    head += "\n".join(third) + "\n"
    first = ast.parse(bodies[0]).body[0]
    gap = "\n\n" if isinstance(first, (ast.FunctionDef, ast.ClassDef)) else "\n"
    return head + gap + "\n\n".join(bodies)


@cache
def names(cuda: bool) -> frozenset[str]:
    """The top-level names of the vendored runtime (what a generated module may import)."""
    return frozenset(_defined(ast.parse(vendored(cuda))))


def _defined(tree) -> set[str]:
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
    return found


def _body(text: str) -> str:
    """A module's text below its docstring, without its imports of the other runtime parts
    (``from .numpy_helpers import _call``: one namespace holds them all)."""
    tree = ast.parse(text)
    lines = text.splitlines(True)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            lines[node.lineno - 1 : node.end_lineno] = [""] * (node.end_lineno - node.lineno + 1)
    doc = tree.body[0] if tree.body and isinstance(tree.body[0], ast.Expr) else None
    return "".join(lines[doc.end_lineno :]) if doc is not None else "".join(lines)


__all__ = ["names", "namespace", "source", "vendored"]
