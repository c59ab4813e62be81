"""``return`` inside an ``if`` decided at run time.

Python leaves the function at the ``return``; what follows the ``if`` runs only on the paths
that did not return. The tracer runs those statements (``rest``) inside each branch of the
run-time ``if`` that falls through, so every path of the branch ends the function, and each
path's returned value goes into one name, ``<return>`` (a tuple: one name per item), that
the two branches merge as they merge any name (parse/statements.py). The function then
returns the merged value. Both paths must return values of one type (NumPy's result type
would depend on the branch otherwise: PPT109), or both nothing. A ``return`` inside a loop
stays refused (PPT106).
"""

from __future__ import annotations

RET = "<return>"


class Returns:
    return_depths: set

    def returning(self, body):
        """``body`` (a branch, then the rest), the value it returns put in ``RET``."""

        def run():
            from .statements import Return

            try:
                body()
                value = None
            except Return as r:
                value = r.value
            for name in [n for n in self.env if n.startswith(RET)]:
                del self.env[name]
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


__all__ = ["RET", "Returns"]
