"""Source sites: where in the user's code a node was built, rendered with a caret.

A ``Site`` is captured cheaply (file name, line, code object and instruction offset) when a lazy
node is created; the exact column range is looked up from the code object's position table only
when an error is shown.
"""

from __future__ import annotations

import itertools
import linecache
import sys
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Site:
    filename: str
    lineno: int
    col: int | None = None  # 0-based column of the construct, when known
    end_col: int | None = None
    _code: object = field(default=None, repr=False)
    _lasti: int = field(default=-1, repr=False)

    def columns(self) -> tuple[int | None, int | None, int]:
        """(col, end_col, line) of the construct; columns None when unknown."""
        if self.col is not None or self._code is None or self._lasti < 0:
            return self.col, self.end_col, self.lineno
        positions = self._code.co_positions()
        pos = next(itertools.islice(positions, self._lasti // 2, None), None)
        if pos is None or pos[0] is None or pos[2] is None:
            return None, None, self.lineno
        line, end_line, col, end_col = pos
        if end_line != line:
            end_col = None
        return col, end_col, line

    def render(self) -> str:
        """``file:line:col`` followed by the source line and a caret under the construct."""
        col, end_col, line = self.columns()
        text = linecache.getline(self.filename, line).rstrip("\n")
        where = f"{self.filename}:{line}" + (f":{col + 1}" if col is not None else "")
        if not text:
            return f"  --> {where}"
        gutter = " " * len(str(line))
        out = [f"  --> {where}", f"{gutter} |", f"{line} | {text}"]
        if col is not None:
            width = max(1, (end_col if end_col is not None else len(text)) - col)
            out.append(f"{gutter} | {' ' * col}{'^' * width}")
        return "\n".join(out)

    def __str__(self):
        col, _, line = self.columns()
        return f"{self.filename}:{line}" + (f":{col + 1}" if col is not None else "")


def is_internal(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == "pypto" or name.startswith("pypto.")


def user_site(skip: int = 1) -> Site | None:
    """The innermost calling frame outside the ``pypto`` package."""
    frame = sys._getframe(skip)
    while frame is not None and is_internal(frame):
        frame = frame.f_back
    if frame is None:
        return None
    return Site(frame.f_code.co_filename, frame.f_lineno, _code=frame.f_code, _lasti=frame.f_lasti)
