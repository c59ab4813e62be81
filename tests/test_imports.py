"""The package's import graph: no cycles, and neither target imports the other; and what
``import pypto`` (and ``pypto --help``) load: not the compiler.

Every import counts, at module level or inside a function: a cycle through a lazy import is
still two modules that cannot be understood (or split out) one without the other.
"""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pypto"
TARGETS = {"pypto.emit.numpy_target", "pypto.emit.cuda_target", "pypto.emit.cuda_kernels"}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _imports(mods) -> dict[str, set[str]]:
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        package = m.split(".") if path.name == "__init__.py" else m.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + [base] * bool(base))
                names = [f"{base}.{a.name}" for a in node.names] + [base]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                while name not in mods and "." in name:
                    name = name.rsplit(".", 1)[0]
                # a module imports its parent packages anyway
                if name in mods and name != m and not m.startswith(name + "."):
                    edges[m].add(name)
    return edges


def _cycles(edges) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert _cycles(_imports(_modules())) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_target_imports_another():
    edges = _imports(_modules())
    for target in TARGETS:
        others = TARGETS - {target} - ({"pypto.emit.cuda_kernels"} if "cuda" in target else set())
        assert not edges[target] & others, (target, edges[target] & others)
    # the CUDA target and its kernel writer are one target; the writer does not import it back
    assert "pypto.emit.cuda_target" not in edges["pypto.emit.cuda_kernels"]


def test_view_ops_are_read_through_their_index_maps():
    """Outside the lowering and the ops, no code tests a view op by name (``e.op ==
    "transpose"``): it reads the op's index map (pypto/lower/index_map.py)."""
    import pypto  # noqa: F401  (registers the ops)
    from pypto.registry import REGISTRY

    views = {op.name for op in REGISTRY.ops() if op.index_map is not None}
    views -= {"store"}  # slice assignment is a write, not a view
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("lower/", "ops/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            if not any(isinstance(s, ast.Attribute) and s.attr == "op" for s in sides):
                continue
            names = set()
            for s in sides:
                items = s.elts if isinstance(s, (ast.Tuple, ast.List, ast.Set)) else [s]
                names |= {i.value for i in items if isinstance(i, ast.Constant)}
            if names & views:
                found.append(f"{rel}:{node.lineno}: {sorted(names & views)}")
    assert views >= {"transpose", "getitem", "broadcast_to", "reshape", "concatenate"}
    assert found == []


def test_every_package_is_installed():
    """pyproject.toml lists each package (a wheel has only those)."""
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")
    }
    assert found - listed == set()


# -- what importing costs -------------------------------------------------------------------------
# ``import pypto`` loads the registry, the ops, the lazy API and the decorator; the front end
# (libcst), the passes' pipeline, the emitters and the device libraries come with the first call
# that needs them. No timing here (machines are noisy): benchmarks/compile_overhead.py times it.
HEAVY = (
    "libcst",
    "pypto.parse",
    "pypto.emit",
    "pypto.passes.pipeline",
    "pypto.backends",
    "pypto.transpile",
    "pypto.testing",
    "cupy",
    "dask",
    "distributed",
)


def _loaded_after(code: str) -> tuple[list[str], str]:
    """(the heavy modules loaded, stdout) after running ``code`` in a fresh interpreter."""
    report = "\nimport sys\nprint('MODULES', *sorted(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code + report], capture_output=True, text=True, check=True
    ).stdout
    head, _, modules = out.rpartition("MODULES ")
    heavy = [m for m in modules.split() if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    return heavy, head


def test_import_pypto_loads_no_compiler():
    heavy, _ = _loaded_after("import pypto")
    assert heavy == []


def test_decorating_a_function_loads_no_compiler():
    """Nor does building a lazy chain, or an op on Python numbers (computed at once)."""
    code = (
        "import pypto as ppto\n"
        "@ppto.compile\n"
        "def f(x):\n"
        "    return x + 1\n"
        "g = ppto.compile(fallback=True)(lambda x: x)\n"
        "assert isinstance(f, ppto.CompiledFunction) and f.__name__ == 'f'\n"
        "chain = ppto.sin(ppto.tensor('x')) + 1\n"
        "assert ppto.sqrt(64) == 8.0\n"
    )
    heavy, _ = _loaded_after(code)
    assert heavy == []


def test_the_first_call_loads_the_compiler():
    """The lazy imports happen (the check above is not vacuous)."""
    code = (
        "import numpy as np, pypto as ppto\n"
        "x = ppto.tensor('x')\n"
        "print(ppto.run(ppto.sin(x) + 1, x=np.zeros(3)))\n"
    )
    heavy, out = _loaded_after(code)
    assert "[1. 1. 1.]" in out
    assert "pypto.passes.pipeline" in heavy and "pypto.emit.numpy_target" in heavy


def test_the_lazy_submodules_are_still_attributes():
    """``dir(pypto)`` is the same before and after the compiler loads; reading one of its
    submodules (``pypto.passes.pipeline``) loads it, as ``import pypto`` once did."""
    code = (
        "import pypto\n"
        "before = dir(pypto)\n"
        "assert pypto.passes.pipeline.plan_function and pypto.emit.numpy_target\n"
        "assert dir(pypto) == before, set(dir(pypto)) ^ set(before)\n"
        "try:\n"
        "    pypto.no_such_name\n"
        "except AttributeError as e:\n"
        "    assert str(e) == \"module 'pypto' has no attribute 'no_such_name'\", e\n"
    )
    heavy, _ = _loaded_after(code)
    assert "libcst" in heavy


def test_pypto_help_loads_no_compiler():
    code = (
        "from pypto_cli.main import main\n"
        "try:\n"
        "    main(['--help'], prog_name='pypto')\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
    )
    heavy, out = _loaded_after(code)
    assert heavy == []
    assert "  transpile  Write modules that run without PyPTO." in out.splitlines()


def test_lazy_commands_are_listed_by_their_own_short_help():
    """cli/main.py lists a lazily imported command by a copy of its short help: the same."""
    import importlib

    from click.testing import CliRunner

    from pypto_cli.main import LAZY_COMMANDS, main

    for name, (module, attribute, short_help) in LAZY_COMMANDS.items():
        command = getattr(importlib.import_module(module), attribute)
        assert command.name == name
        assert command.get_short_help_str(200) == short_help
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0 and f"Usage: main {name}" in result.output
