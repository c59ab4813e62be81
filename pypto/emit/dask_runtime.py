"""What a Dask worker runs: the trampoline every PyPTO task calls.

A task is ``(run, program, arguments, *arrays)``: ``run`` is this module's function (pickled by
reference, a few dozen bytes), ``program`` a key of the graph whose value is the kernel's
``Program`` (its NumPy source; Dask moves it to a worker once, like any data), ``arguments``
the block's origins and the sizes (``Args``: Dask does not look inside it for keys). The
source is compiled once per worker process (cached by its hash).
"""

from __future__ import annotations

_COMPILED: dict[str, object] = {}


class Args:
    """Keyword arguments of a task, opaque to Dask's graph (it looks for keys in tuples,
    lists and dicts, not in other objects)."""

    __slots__ = ("kw",)

    def __init__(self, kw: dict):
        self.kw = kw

    def __reduce__(self):
        return (Args, (self.kw,))

    def __repr__(self):
        return f"Args({self.kw!r})"


def run(program, args: Args, *arrays):
    fn = _COMPILED.get(program.key)
    if fn is None:
        from .program import _run

        namespace = _run(program.source, "dask-{}", program.names)
        fn = _COMPILED[program.key] = namespace[program.entry]
    return fn(*arrays, **args.kw)


def pick(results, i: int):
    """Output ``i`` of a task that makes several."""
    return results[i]


__all__ = ["Args", "pick", "run"]
