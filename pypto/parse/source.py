"""Finding a function's source, parsing its module with libcst, and source positions.

The whole module is parsed (once per file version), so positions are the file's own lines and
helpers of the same module are found in the same tree. Where only the function's own text is
available (a notebook cell), that text is parsed with its line offset. Where no source is
available at all (the plain interactive interpreter), a clear error says so.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import textwrap
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from ..errors import UnsupportedError
from ..sites import Site


@dataclass(frozen=True, eq=False)
class ParsedModule:
    filename: str
    module: cst.Module
    positions: object  # CST node -> CodeRange
    line_offset: int = 0
    defs: dict = field(default_factory=dict)  # name -> FunctionDef nodes (filled on first use)

    def functions(self, name: str) -> list:
        if not self.defs:
            for node in m.findall(self.module, m.FunctionDef()):
                self.defs.setdefault(node.name.value, []).append(node)
        return self.defs.get(name, [])

    def site(self, node: cst.CSTNode) -> Site:
        pos = self.positions.get(node)
        if pos is None:
            return Site(self.filename, self.line_offset + 1)
        line = pos.start.line + self.line_offset
        end_col = pos.end.column if pos.end.line == pos.start.line else None
        return Site(self.filename, line, pos.start.column, end_col)


@dataclass(frozen=True, eq=False)
class FunctionSource:
    """A function to compile: its definition node, its module, and how its names resolve."""

    fn: object  # the Python function
    node: cst.FunctionDef
    parsed: ParsedModule
    scope: dict  # closure variables, then the function's globals

    @property
    def name(self) -> str:
        return self.node.name.value

    def star_site(self) -> Site:
        """Where the function declares ``*args`` (or ``**kwargs``)."""
        params = self.node.params
        star = params.star_arg if isinstance(params.star_arg, cst.Param) else params.star_kwarg
        return self.parsed.site(star if star is not None else self.node)


_CACHE: dict = {}


def parse_text(text: str, filename: str, line_offset: int = 0) -> ParsedModule:
    key = (filename, text, line_offset)
    if key not in _CACHE:
        try:
            module = cst.parse_module(text)
        except cst.ParserSyntaxError as e:
            raise UnsupportedError(
                f"the source of {filename} does not parse: {e.message}",
                site=Site(filename, e.raw_line + line_offset, e.raw_column),
                code="PPT108",
            ) from None
        wrapper = MetadataWrapper(module)
        positions = wrapper.resolve(PositionProvider)
        _CACHE[key] = ParsedModule(filename, wrapper.module, positions, line_offset)
    return _CACHE[key]


def function_source(fn) -> FunctionSource:
    """Locate ``fn``'s definition in its source file (or cell)."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", repr(fn))
    if code is None:
        raise UnsupportedError(f"`{name}` is not a Python function", code="PPT108")
    filename = code.co_filename
    lines = linecache.getlines(filename)
    if lines:
        parsed = parse_text("".join(lines), filename)
        node = _find_def(parsed, name, code.co_firstlineno)
    else:
        node = None
    if node is None:  # no file (or it changed): the function's own text, if inspect has it
        try:
            text, first = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise UnsupportedError(
                f"the source of `{name}` is not available (defined in the interactive "
                "interpreter, or from a string)",
                hint="define the function in a file, a module or a notebook cell",
                code="PPT108",
            ) from None
        parsed = parse_text(textwrap.dedent("".join(text)), filename, first - 1)
        node = _find_def(parsed, name, code.co_firstlineno)
        if node is None:
            raise UnsupportedError(f"cannot find `def {name}` in its source", code="PPT108")
    scope = {}
    if fn.__closure__:
        for var, cell in zip(code.co_freevars, fn.__closure__):
            with contextlib.suppress(ValueError):  # an empty cell: not bound yet
                scope[var] = cell.cell_contents
    return FunctionSource(fn, node, parsed, {**fn.__globals__, **scope})


def _find_def(parsed: ParsedModule, name: str, firstlineno: int) -> cst.FunctionDef | None:
    """The ``def name`` whose first line (its first decorator, or ``def``) is firstlineno."""
    for node in parsed.functions(name):
        pos = parsed.positions[node]
        starts = {pos.start.line + parsed.line_offset}
        for dec in node.decorators:
            starts.add(parsed.positions[dec].start.line + parsed.line_offset)
        if firstlineno in starts or firstlineno == _def_line(parsed, node):
            return node
    return None


def _def_line(parsed: ParsedModule, node: cst.FunctionDef) -> int:
    return parsed.positions[node.name].start.line + parsed.line_offset


def helper_source(fn, caller: FunctionSource) -> FunctionSource | None:
    """The source of a helper called from ``caller``: a function of the same module."""
    fn = inspect.unwrap(fn)
    if getattr(fn, "__module__", None) != getattr(caller.fn, "__module__", None):
        return None
    if not inspect.isfunction(fn):
        return None
    return function_source(fn)


@dataclass(eq=False)
class Frame:
    src: FunctionSource
    env: dict
    depth: int = 0  # the loop/branch depth where the function's body starts (for `return`)
