"""Generated programs, loaded: a compiled function's (``load_program``: the host module's
source with what it raises and assumes, a dict emit/host.py makes) and a lazy chain's graph
(``load_graph``: its source with its constants, emit/numpy_target.py).

Loading needs only the runtime (emit/runtime/), not the emitters: the compile cache
(pypto/cache.py) loads the programs it stored with it.
"""

from __future__ import annotations

import linecache

from ..errors import ExecutionError, InternalError, PyptoError, remake
from . import runtime

_COUNTER = [0]


def load_program(program: dict, impls: dict | None = None, original=None):
    """``run(arguments, env) -> result`` for ``program``: its source run in a copy of the NumPy
    runtime's namespace, PyPTO's coded errors in place of the module's own (``_raise``,
    ``_guard_failed``), ``impls`` the user operators' implementations by table, ``original``
    the user's function (run where it costs less than the program, passes/cost.py)."""
    source, name = program["source"], program["name"]
    fails, guards = program["fails"], program["guards"]

    def _raise(k):
        raise remake(fails[k])

    def _guard_failed(k, value, dims=()):
        g, where, var = guards[k]
        if g.breach is not None:  # NumPy raises here too (an index past the end)
            raise g.breach.exception(dims)
        if var is not None:
            where = where.format(value)
        raise ExecutionError(
            f"{where} breaks an assumption PyPTO made when compiling it: {g}",
            hint="indices that depend on a loop variable must stay in bounds and keep their "
            "sign (write A[i - 1] only where i >= 1)",
        )

    namespace = _run(source, f"function-{{}}-{name}", {})
    # the module's own definitions stand alone; here PyPTO's coded errors and the user
    # operators' implementations take their place
    namespace.update(_raise=_raise, _guard_failed=_guard_failed, _results=program["consts"])
    namespace["_original"] = _marked(original) if original is not None else _no_original
    for key, value in (impls or {}).items():
        namespace[key].update(value)
    host = namespace[name]
    names = program["params"]

    def run(arguments: dict, env: dict):
        try:
            return host(*(arguments[n] for n in names))
        except UnboundLocalError as e:
            raise ExecutionError(
                f"a variable is used before assignment (a loop that ran zero times or a branch "
                f"that did not assign it): {e}"
            ) from None

    run.source = source
    return run


def _marked(original):
    """The user's function, its exceptions marked as its own (``checked`` lets them pass)."""

    def run(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except Exception as e:
            e.__pypto_original__ = True
            raise

    return run


def _no_original(**arguments):
    raise InternalError("the generated program asked for the original function, not given")


def load_graph(program: dict):
    """``run(values, env) -> outputs`` for a graph's generated function ``graph``."""
    namespace = _run(program["source"], "numpy-{}", program["names"])
    fn, free = namespace["graph"], program["free"]

    def run(values, env):
        return list(fn(*values, **{name: env[symbol] for name, symbol in free}))

    return run


def checked(generated, reference, discard=None):
    """``run(arguments, env)`` of a function's generated code: should it fail with anything but
    a coded error (or NumPy's own read-only error), the Function IR ``reference(arguments,
    error)`` gives
    runs on the reference executor, which raises the coded error NumPy's statements raise
    there (with the user's line); where it does not, ``discard()`` (the program is wrong) and
    an InternalError. The arguments keep what the program wrote before it failed (NumPy's
    statements wrote the same); the reference runs on copies of them, so that it does not
    write again what depends on them (``x[i] = x[i] + i``)."""

    def run(arguments, env):
        try:
            return generated(arguments, env)
        except PyptoError:
            raise
        except Exception as e:
            if isinstance(e, ValueError) and "read-only" in str(e):
                raise  # writing into the caller's read-only array: NumPy's own error
            if getattr(e, "__pypto_original__", False):
                raise  # the user's own function raised it (run instead: passes/cost.py,
                # function.mark_restarts)
            fn = reference(arguments, e)
            if fn is not None:
                from ..function import run_function  # (a cache hit runs without it)

                copies = {k: v.copy() if hasattr(v, "copy") else v for k, v in arguments.items()}
                run_function(fn, copies, env)
            if discard is not None:
                discard()
            raise InternalError(
                "the generated NumPy code failed where the reference executor did not: "
                f"{type(e).__name__}: {e}"
            ) from e

    return run


def _run(source: str, name: str, names: dict, helpers: str = "numpy_helpers") -> dict:
    """``source`` run in a copy of the runtime's namespace (``helpers``: the NumPy target's, or
    ``cuda_helpers``) with ``names``; its lines registered (as ``<pypto-NAME>``, ``{}``
    numbered) so tracebacks show them."""
    _COUNTER[0] += 1
    filename = f"<pypto-{name.format(_COUNTER[0])}>"
    namespace = dict(runtime.namespace(helpers), **names)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace
