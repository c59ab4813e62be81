"""``return`` inside an ``if`` decided at run time, and ``break`` / ``continue`` in loops.

Python leaves the function at the ``return``; what follows the ``if`` runs only on the paths
that did not return. The tracer runs those statements (``rest``) inside each branch of the
run-time ``if`` that falls through, so every path of the branch ends the function, and each
path's returned value goes into one name, ``<return>`` (a tuple: one name per item), that
the two branches merge as they merge any name (parse/statements.py). The function then
returns the merged value. Both paths must return values of one type (NumPy's result type
would depend on the branch otherwise: PPT109), or both nothing.

In a loop body the same continuation serves ``continue`` (the path stops; the rest of the
body runs on the other paths) and ``break`` (the path stops and sets ``<break>``, a Python bool
the branches merge; the loop's ``until`` host variable, checked after each iteration, ends the
loop where it is true). A ``return`` inside a loop stays refused (PPT106).
"""

from __future__ import annotations

import libcst as cst

RET, BROKE = "<return>", "<break>"


class Return(Exception):  # control flow, not an error
    def __init__(self, value):
        self.value = value


class Break(Exception):  # control flow, not an error
    pass


class Continue(Exception):  # control flow, not an error
    pass


def exits(node) -> bool:
    """Whether ``node`` (an ``if``) holds a ``return``, or a ``break`` / ``continue`` of the
    loop around it (not of a loop inside it)."""
    found = []

    class Finder(cst.CSTVisitor):
        def visit_For(self, node):
            found.extend(node.body.visit(_ReturnsOnly()).found or [])
            return False

        def visit_While(self, node):
            return self.visit_For(node)

        def visit_FunctionDef(self, node):
            return False

        def visit_Return(self, node):
            found.append(node)

        def visit_Break(self, node):
            found.append(node)

        def visit_Continue(self, node):
            found.append(node)

    node.visit(Finder())
    return bool(found)


class _ReturnsOnly(cst.CSTVisitor):
    """Returns inside a nested loop: they leave the function too (and are refused there)."""

    def __init__(self):
        super().__init__()
        self.found = []

    def visit_Return(self, node):
        self.found.append(node)


class Returns:
    return_depths: set
    loop_depths: list

    def in_loop(self) -> bool:
        """Whether a loop body of this frame is being traced (a ``break`` would end it)."""
        return bool(self.loop_depths) and self.loop_depths[-1] > self.frames[-1].depth

    def exits_here(self, node) -> bool:
        """Whether the ``if`` ``node`` is traced with its continuation: it holds an exit, at
        the function's (or the loop body's) level or inside such an ``if``'s branch."""
        if not exits(node):
            return False
        depth = self.control_depth
        base = self.loop_depths[-1] if self.in_loop() else self.frames[-1].depth
        return depth == base or (depth in self.return_depths and depth > base)

    def exec_Break(self, node) -> None:
        self._exit(node, "break")
        raise Break

    def exec_Continue(self, node) -> None:
        self._exit(node, "continue")
        raise Continue

    def _exit(self, node, word) -> None:
        depth = self.control_depth
        if not self.in_loop() or not (
            depth == self.loop_depths[-1]
            or (depth in self.return_depths and depth > self.loop_depths[-1])
        ):
            raise self.unsupported(node, f"`{word}` outside a loop body", code="PPT106")

    def loop_body(self, statements):
        """What traces a loop body (for ``body_steps``): ``continue`` ends the trace of its
        path, ``break`` too and sets ``<break>``; ``.until[0]``, after it ran: the host
        variable the body writes whether it broke into (None: it never breaks)."""

        def run():
            self.loop_depths.append(self.control_depth)
            try:
                try:
                    self.exec_body(statements)
                except Continue:
                    pass
                except Break:
                    self.env[BROKE] = True
            finally:
                self.loop_depths.pop()
            for name in [n for n in self.env if n.startswith(RET)]:
                del self.env[name]
            broke = self.env.pop(BROKE, False)
            if broke is False:
                return
            t = self.as_tensor(self.load_value(broke))
            run.until[0] = self.new_host("broke", t._atom.type)
            self._pending.append((t._atom, run.until[0]))

        run.until = [None]
        return run

    def returning(self, body):
        """``body`` (a branch, then the rest), the value it returns put in ``RET`` (in a loop
        body: whether it broke in ``<break>``)."""

        def run():
            broke = False
            try:
                body()
                value = None
            except Return as r:
                value = r.value
            except Continue:
                value = None
            except Break:
                value, broke = None, True
            for name in [n for n in self.env if n.startswith(RET)]:
                del self.env[name]
            if self.in_loop():
                if broke or self.env.get(BROKE) is None:
                    self.env[BROKE] = broke
                return
            if isinstance(value, tuple):
                self.env[RET] = f"tuple:{len(value)}"
                for k, item in enumerate(value):
                    self.env[f"{RET}{k}"] = self.store_value(item, "result")
            else:
                self.env[RET] = None if value is None else self.store_value(value, "result")

        return run

    def check_returns(self, node, after_then) -> None:
        """Both paths return the same structure (a value, a tuple of as many, or nothing)."""
        a, b = after_then[0].get(RET), self.env.get(RET)
        shape = [x if isinstance(x, str) or x is None else "value" for x in (a, b)]
        if shape[0] != shape[1]:
            what = {None: "nothing", "value": "a value"}
            shown = [what[x] if x in what else x.replace("tuple:", "a tuple of ") for x in shape]
            raise self.unsupported(
                node,
                f"one path of this `if` returns {shown[0]}, the other {shown[1]}",
                hint="return values of one kind on every path",
                code="PPT106",
            )

    def returned(self):
        """The merged returned value (after the branches), its names removed."""
        kind = self.env.pop(RET, None)
        if kind is None:
            return None
        if isinstance(kind, str):
            n = int(kind.split(":")[1])
            return tuple(self.load_value(self.env.pop(f"{RET}{k}")) for k in range(n))
        return self.load_value(kind)


__all__ = ["BROKE", "RET", "Break", "Continue", "Return", "Returns", "exits"]
