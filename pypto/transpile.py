"""``pypto transpile``: a source file in, a module that runs without PyPTO out.

``transpile_file(path)`` imports the file (its functions are compiled from their source, as
``@ppto.compile`` does), and writes a module that is the file itself with each compiled function
replaced: the original ``def`` is kept under ``_<name>_python``, followed by the generated
programs of each *signature* (emit/host.py: blocks as NumPy code, emit/numpy_target.py, and as
CUDA kernels with CuPy host code, emit/cuda_target.py) and a dispatcher ``def <name>(<the
original parameters>)`` that runs the specialization the arguments match (NumPy or CuPy arrays,
their dtypes, ranks and size-1 axes, the plan's assumptions on sizes) and otherwise the original
function, so the module is a drop-in replacement whatever it is called with. The module imports
numpy (and cupy only when CuPy arrays arrive), never pypto.

Signatures say which argument kinds to compile for, one comment per signature (as Pythran's
``#pythran export``), or ``--signature`` on the command line (the language: signatures.py)::

    # pypto: export softmax(f32[n, m])
    # pypto: export blend(f32[n], f32[n], float)
    # pypto: export hdiff(f64[n + 4, m + 4, k], f64[n, m, k], f64)

Which functions: those decorated with ``@ppto.compile`` (the decorator is dropped), else every
top-level function with a signature (``select`` narrows either). A function that cannot be
compiled for a signature, or has none, is carried over unchanged with the reason
(``strict``: an error instead). The output starts with a header naming the source, its SHA-256,
the output's and the PyPTO version, marked ``@generated`` with ``# fmt: off`` (formatters leave
it alone; ``--check`` tells an edited one); then the source's shebang, encoding line, docstring
and ``from __future__`` imports; then the generated code's imports (numpy, math and the helpers
it calls from the vendored runtime ``_pypto_runtime.py``, which the CLI writes beside the module
or at the top of its package: ``runtime_text``); then the source. It is deterministic (the same
input gives the same bytes).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
import libcst.matchers as matchers
import numpy as np

from . import __version__
from .compile import CompiledFunction
from .compile import compile as ppto_compile
from .emit.host import FunctionEmitter, guard_test
from .errors import PyptoError, TranspileError, UnsupportedError
from .generated import GENERATED, RUNTIME, output_digest, runtime_text
from .passes.pipeline import plan_function
from .signatures import (
    example_args,
    expand,
    kind_check,
    parse_signature,
    signature_of,
    split_specs,
)
from .symbolic import format_code

EXPORT = re.compile(r"^\s*#\s*pypto:\s*export\s+(\w+)\s*\((.*)\)\s*$")


@dataclass
class Transpiled:
    text: str
    compiled: list[str] = field(default_factory=list)  # functions transpiled
    carried: list[tuple[str, str]] = field(default_factory=list)  # (function, why not)
    kernels: int = 0  # kernels emitted, all specializations together
    runtime: bool = False  # whether the module imports the vendored runtime


def transpile_file(
    path,
    *,
    signatures=(),
    select=None,
    strict: bool = False,
    display: str | None = None,
    target: str = "all",
    source_name: str | None = None,
    runtime: str = RUNTIME,
) -> Transpiled:
    """The generated module for the file at ``path`` (see the module docstring). ``target``:
    "numpy" (NumPy arrays), "cuda" (CuPy arrays) or "all" (both; what the arguments are
    decides at call time), "dask" (NumPy arrays, and dask arrays handed to PyPTO's Dask target,
    which imports pypto then); other arguments run the original function. ``runtime``: the
    module the generated code imports its helpers from (``runtime_text``; "._pypto_runtime"
    inside a package)."""
    if target not in ("numpy", "cuda", "all", "dask"):
        raise TranspileError(f"target {target!r} is not numpy, cuda, all or dask")
    path = Path(path)
    data = path.read_bytes()
    with open(path, "rb") as f:
        encoding, _ = tokenize.detect_encoding(f.readline)  # PEP 263, else UTF-8
    text = data.decode(encoding)
    shown = display or path.name
    try:
        tree = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        raise TranspileError(
            f"{shown}:{e.raw_line}:{e.raw_column + 1}: syntax error: {e.message}",
            hint="fix the syntax; nothing was written for this file",
        ) from None
    wanted: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        m = EXPORT.match(line)
        if m:
            wanted.setdefault(m.group(1), []).append(split_specs(m.group(2)))
    for sig in signatures:
        name, specs = parse_signature(sig)
        wanted.setdefault(name, []).append(specs)
    relative = any(node.relative for node in matchers.findall(tree, matchers.ImportFrom()))
    module = _import(path, shown, relative)
    defs = {
        s.name.value: s for s in tree.body if isinstance(s, cst.FunctionDef)
    }  # top-level functions
    decorated = [n for n, d in defs.items() if any(_is_compile(x.decorator) for x in d.decorators)]
    chosen = list(decorated) if decorated else [n for n in defs if n in wanted]
    if select:
        chosen = [n for n in defs if n in set(select)]
    result = Transpiled("")
    generated: dict[str, str] = {}
    for name in chosen:
        if name not in wanted:
            why = f"no signature: add `# pypto: export {name}(...)` or --signature"
            if strict:
                raise TranspileError(f"{shown}: `{name}`: {why}")
            result.carried.append((name, why))
            continue
        try:
            code, kernels, missing = _function(
                getattr(module, name), defs[name], wanted[name], module, target
            )
        except Exception as e:  # PyPTO's coded errors, and anything else: carried over
            why = (
                str(e) if isinstance(e, PyptoError) else f"internal error: {type(e).__name__}: {e}"
            )
            if strict:
                raise TranspileError(f"{shown}: `{name}` cannot be compiled:\n{why}") from None
            result.carried.append((name, why))
            continue
        if missing:  # a NumPy program but no CUDA one: CuPy arrays run the original
            result.carried.append((f"{name} [CUDA path]", missing))
        generated[name] = code
        result.compiled.append(name)
        result.kernels += kernels
    sha = hashlib.sha256(data).hexdigest()  # of the file's bytes, as sha256sum shows it
    named = source_name or shown  # (the CLI: relative to the source root, from any directory)
    names = _pypto_names(tree)
    rewritten = tree.visit(_Rewrite(generated, names))
    still = names & {n.value for n in _names(rewritten)}
    if still:  # PyPTO used otherwise (lazy chains): the module keeps importing it
        if strict:
            raise TranspileError(
                f"{shown} uses {', '.join(sorted(still))} besides decorators: the generated "
                "module would import pypto"
            )
        result.carried.append(("<module>", f"uses {', '.join(sorted(still))} besides decorators"))
        rewritten = tree.visit(_Rewrite(generated, names, drop_imports=False))
    first, head, body = _module_head(rewritten)
    imports = _imports(generated, rewritten, runtime)
    result.runtime = bool(imports) and runtime in imports
    rest = head + imports + ("\n\n" if imports else "") + body
    header = (
        f"{GENERATED}{__version__} (pypto transpile) from {named}\n"
        f"# source sha256: {sha}\n"
        f"# output sha256: {output_digest(first + rest)}\n"
        f"# DO NOT EDIT: change {named} and run pypto transpile again.\n"
        "# fmt: off\n"
    )
    result.text = first + header + rest
    return result


def _imports(generated: dict, module: cst.Module, runtime: str) -> str:
    """The generated code's imports: numpy and math where the source does not import them as
    the generated code names them, and the runtime's helpers it calls, by name."""
    if not generated:
        return ""
    from .emit import runtime as parts

    used = set()
    for code in generated.values():
        used |= {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
    has = set()
    for stmt in module.body:
        if matchers.matches(stmt, matchers.SimpleStatementLine()):
            for s in stmt.body:
                if isinstance(s, cst.Import):
                    for a in s.names:
                        name = cst.helpers.get_full_name_for_node(a.name)
                        has.add((name, a.evaluated_alias or name))
    sections = [["import math"] if "math" in used and ("math", "math") not in has else []]
    sections.append(["import numpy as np"] if "np" in used and ("numpy", "np") not in has else [])
    helpers = sorted(
        (n for n in used & parts.names(cuda=True) if n.startswith("_")),
        key=lambda n: (n.upper() != n, n.lower()),  # as isort orders them: constants first
    )
    if helpers:
        block = [f"from {runtime} import (", *(f"    {n}," for n in helpers), ")"]
        if runtime.startswith("."):  # a local import: a section of its own
            sections.append(block)
        else:  # a third-party module to isort: numpy's section
            sections[1] = sections[1] + block
    lines = "\n\n".join("\n".join(x) for x in sections if x)
    return lines + "\n\n# isort: split\n" if lines else ""


_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # PEP 263


def _module_head(module: cst.Module) -> tuple[str, str, str]:
    """The module's code split where Python needs its parts: the lines that must come first (a
    shebang, an encoding line), the docstring and ``from __future__`` imports (before any other
    statement, so they go above the runtime), and the rest."""
    header = list(module.header)
    first = []
    if header and header[0].comment is not None and header[0].comment.value.startswith("#!"):
        first.append(header.pop(0))
    if header and header[0].comment is not None and _CODING.match(header[0].comment.value):
        first.append(header.pop(0))
    first_code = "".join(module.code_for_node(line) for line in first)
    head, body = [], list(module.body)
    line = matchers.SimpleStatementLine
    if body and matchers.matches(body[0], line(body=[matchers.Expr(matchers.SimpleString())])):
        head.append(body.pop(0))
    future = line(body=[matchers.ImportFrom(module=matchers.Name("__future__"))])
    while body and matchers.matches(body[0], future):
        head.append(body.pop(0))
    if not head:  # the comments above the first statement, if any
        comments = "".join(module.code_for_node(line) for line in header)
        return first_code, comments, module.with_changes(header=[]).code
    kept = module.with_changes(body=head, header=header, footer=[])  # (comments above it too)
    rest = module.with_changes(body=body, header=[])
    return first_code, kept.code, rest.code


def _names(tree) -> list:
    found = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node):
            found.append(node)

    tree.visit(Names())
    return found


def _import(path: Path, shown: str, relative: bool = False):
    """The module the file defines, run once. A file with relative imports runs as part of its
    package (the directories above it with an ``__init__.py``), under its dotted name; any
    other under a private name, its directory on ``sys.path``."""
    path = path.resolve()
    root, package = path.parent, []
    while relative and (root / "__init__.py").exists():
        package.insert(0, root.name)
        root = root.parent
    if package:
        name = ".".join(package + ([] if path.name == "__init__.py" else [path.stem]))
        search = [str(path.parent)] if path.name == "__init__.py" else None
        spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=search)
        where = str(root)
    else:
        name = "_pypto_transpile_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        where = str(path.parent)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, where)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise TranspileError(f"{shown} fails when imported: {type(e).__name__}: {e}") from e
    finally:
        sys.path.remove(where)
    return module


def _function(obj, node: cst.FunctionDef, signatures, module, target) -> tuple[str, int]:
    """The generated specializations of one function and its dispatcher."""
    name = node.name.value
    fn = obj._fn if isinstance(obj, CompiledFunction) else obj
    compiled = ppto_compile(fn)
    parts, branches, gpu_branches, kernels, names, missing = [], [], [], 0, None, None
    for n, specs in enumerate(s for sig in signatures for s in expand(sig)):
        args = example_args(specs, np.random.default_rng(n))
        fn_ir = compiled.ir(*args)
        bound = compiled._bind(list(args), {})
        names = list(bound)
        plans = plan_function(fn_ir)
        kernels += sum(len(p.kernels) for p in plans.values())
        prefix = f"_{name}_{n}"
        if target in ("numpy", "all", "dask"):
            parts.append(_program(fn_ir, plans, prefix, "numpy", module))
        cuda = None
        if target in ("cuda", "all"):  # the program with its blocks on the CUDA target
            try:
                parts.append(_program(fn_ir, plans, prefix + "_cuda", "cuda", module))
                cuda = f"{prefix}_cuda(_cp, {', '.join(names)})"
            except PyptoError as e:
                if target == "cuda":
                    raise
                missing = str(e)
        # the plan's assumptions on sizes, checked before it runs
        guards = [guard_test(g, lambda e: format_code(e, _size_code)) for g in fn_ir.guards]
        if target in ("numpy", "all", "dask"):
            host = [kind_check(p, bound[p]) for p in names] + guards
            branches.append((" and ".join(host) or "True", f"{prefix}({', '.join(names)})"))
        if cuda is not None:
            gpu = [kind_check(p, bound[p], gpu=True) for p in names] + guards
            gpu_branches.append((" and ".join(gpu) or "True", cuda))
    keyword = {p.name.value for p in node.params.kwonly_params}  # passed as keywords
    original = ", ".join(f"{n}={n}" if n in keyword else n for n in names)
    params = cst.Module([]).code_for_node(node.params)
    returns = cst.Module([]).code_for_node(node.returns.annotation) if node.returns else None
    lines = [f"def {name}({params}){' -> ' + returns if returns else ''}:"]
    lines.append(f'    """PyPTO\'s compiled `{name}` for {len(signatures)} signature(s); other')
    lines.append('    arguments run the original Python function."""')
    arrays = ", ".join(names) + ("," if len(names) == 1 else "")
    if target == "dask":  # (the workers need pypto-compiler: its tasks call pypto)
        lines.append(f"    if _on_dask({arrays}):  # dask arrays: PyPTO's Dask target")
        lines.append(f"        return _dask_call(_{name}_python, {original})")
    if target in ("cuda", "all"):
        lines.append(f"    if _on_gpu({arrays}):  # CuPy arrays: the CUDA specializations")
        lines.append(f"        _cp = _cupy({arrays})")
        lines += _branches(gpu_branches, "        ")
        lines.append(f"        return _{name}_python({original})")
    lines += _branches(branches, "    ")
    lines.append(f"    return _{name}_python({original})")
    return "\n\n".join(parts) + "\n\n" + "\n".join(lines) + "\n", kernels, missing


def _program(fn_ir, plans, prefix: str, target: str, module) -> str:
    """One specialization as generated code: its blocks and host program."""
    emitter = FunctionEmitter(fn_ir, plans, prefix=prefix, name=prefix, target=target)
    source = emitter.render()
    if f"{prefix}_original(" in source:  # where the original costs less (passes/cost.py)
        source += f"\n{prefix}_original = _{fn_ir.name}_python\n"
    for e in emitter.emitters:  # user operators: the module's own functions, by name
        for op_name, impl in e.user_ops.items():
            if getattr(module, getattr(impl, "__name__", ""), None) is not impl:
                raise UnsupportedError(f"the user operator `{op_name}` is not defined in this file")
        if e.user_ops:
            table = ", ".join(f"{k!r}: {v.__name__}" for k, v in e.user_ops.items())
            source += f"\n{e.impl_name}.update({{{table}}})\n"
    return source


def _branches(branches, indent: str) -> list[str]:
    lines = []
    for test, call in branches:
        conditions = test.split(" and ")
        lines.append(f"{indent}if (")
        lines += [f"{indent}    {'and ' if i else ''}{c}" for i, c in enumerate(conditions)]
        lines.append(f"{indent}):")
        lines.append(f"{indent}    return {call}")
    return lines


def _size_code(symbol: str) -> str:
    """A size symbol of the Function IR as code over the parameters: ``x.0`` is x.shape[0]."""
    if "." in symbol:
        param, axis = symbol.rsplit(".", 1)
        if axis.isdigit():
            return f"{param}.shape[{axis}]"
    return symbol


def _is_compile(expr) -> bool:
    """``@ppto.compile``, ``@pypto.compile``, ``@compile`` or ``@ppto.compile(...)``."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "compile"
    return isinstance(expr, cst.Name) and expr.value == "compile"


def _pypto_names(tree) -> set[str]:
    names = set()
    for stmt in tree.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Import):
                    for a in s.names:
                        if cst.helpers.get_full_name_for_node(a.name).split(".")[0] == "pypto":
                            names.add(a.evaluated_alias or "pypto")
    return names


class _Rewrite(cst.CSTTransformer):
    """The source module with compiled functions replaced, PyPTO's decorators dropped, and
    (``drop_imports``) its imports of pypto removed."""

    def __init__(self, generated: dict[str, str], pypto_names: set[str], drop_imports=True):
        self.generated = generated
        self.pypto_names = pypto_names | {"ppto", "pypto"}
        self.drop_imports = drop_imports
        self.depth = 0

    def visit_FunctionDef(self, node):  # libcst's names
        self.depth += 1

    def visit_ClassDef(self, node):
        self.depth += 1

    def leave_ClassDef(self, original, updated):
        self.depth -= 1
        return updated

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        if self.depth:  # not a top-level function
            return updated
        decorators = [d for d in updated.decorators if not self._pypto(d.decorator)]
        updated = updated.with_changes(decorators=decorators)
        name = updated.name.value
        code = self.generated.get(name)
        if code is None:
            return updated
        renamed = updated.with_changes(name=cst.Name(f"_{name}_python"))
        body = list(cst.parse_module(code).body)
        gap = [cst.EmptyLine(), cst.EmptyLine()]
        body[0] = body[0].with_changes(leading_lines=gap)
        return cst.FlattenSentinel([renamed, *body])

    def _pypto(self, expr) -> bool:
        """A decorator of PyPTO's: ``@ppto.compile``, ``@ppto.register_operator(...)``, ..."""
        if isinstance(expr, cst.Call):
            expr = expr.func
        if isinstance(expr, cst.Attribute):
            root = expr
            while isinstance(root, cst.Attribute):
                root = root.value
            return isinstance(root, cst.Name) and root.value in self.pypto_names
        return isinstance(expr, cst.Name) and expr.value == "compile"

    def leave_SimpleStatementLine(self, original, updated):
        if not self.drop_imports:
            return updated
        kept = []
        for s in updated.body:
            if isinstance(s, cst.Import) and all(_is_pypto(a.name) for a in s.names):
                continue
            if isinstance(s, cst.ImportFrom) and s.module is not None and _is_pypto(s.module):
                continue
            kept.append(s)
        if not kept:
            return cst.RemoveFromParent()
        return updated.with_changes(body=kept)


def _is_pypto(node) -> bool:
    return cst.helpers.get_full_name_for_node(node).split(".")[0] == "pypto"


__all__ = [
    "GENERATED",
    "RUNTIME",
    "TranspileError",
    "Transpiled",
    "output_digest",
    "parse_signature",
    "runtime_text",
    "signature_of",
    "transpile_file",
]
