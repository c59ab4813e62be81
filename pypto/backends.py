"""Running a Plan: the backend is chosen here.

``numpy`` (default): the Plan's generated NumPy code (emit/numpy_target.py; a compiled
function's host program too, emit/host.py), compiled once per plan. ``reference``: kernel by
kernel on the reference executor (emit/reference.py), with the plan's memory checked when
PYPTO_CHECK_PLAN=1. Set PYPTO_BACKEND to choose. Should the code generator fail on a plan, the
plan runs on the reference path (PYPTO_STRICT_EMIT=1, set by the tests, raises instead).
"""

from __future__ import annotations

import os

from .bindings import device_module, is_dask_array
from .emit.cuda_target import compile_graph_cuda
from .emit.host import compile_function
from .emit.numpy_target import compile_graph
from .emit.program import checked
from .emit.reference import run_plan
from .errors import InternalError, PyptoError
from .function import Function, run_function
from .passes.plan import GraphPlan


def backend() -> str:
    return os.environ.get("PYPTO_BACKEND", "numpy")


def run_graph(plan: GraphPlan, values: list, env: dict) -> list:
    cp = device_module(values)
    if cp is not None:  # GPU arrays: the CUDA target
        return compile_graph_cuda(plan, cp)(values, env)
    if any(is_dask_array(v) for v in values):  # dask arrays: the Dask target
        from .emit.dask_target import run_graph_dask

        return run_graph_dask(plan, values, env)
    if backend() == "reference":
        return run_plan(plan, values, env)
    try:
        generated = compile_graph(plan)
    except Exception:  # as in run_compiled: never stop the user for a renderer bug
        if os.environ.get("PYPTO_STRICT_EMIT") == "1":
            raise
        return run_plan(plan, values, env)
    try:
        return generated(values, env)
    except PyptoError:
        raise
    except Exception as e:
        return _diagnose(plan, values, env, e)


def run_compiled(fn: Function, plans: dict, original=None):
    """``run(arguments, env) -> result`` for a compiled function: its host program and blocks
    as generated code (emit/host.py), or with PYPTO_BACKEND=reference the Function IR's
    interpreter running each block's Plan kernel by kernel. With GPU arrays among the
    arguments, the interpreter runs each block on the CUDA target."""
    host = _run_on_host(fn, plans, original)

    def run(arguments, env):
        cp = device_module(arguments.values())
        if cp is None and any(is_dask_array(v) for v in arguments.values()):
            from .emit.dask_loops import run_time_loop
            from .emit.dask_target import run_graph_dask, write_back

            return run_function(
                fn,
                arguments,
                env,
                lambda b, v, e: run_graph_dask(plans[id(b)], v, e),
                write=write_back,
                run_loop=lambda loop, host, e: run_time_loop(loop, plans, host, e),
            )
        if cp is None:
            return host(arguments, env)

        def run_lines(loop, values, env):
            run = compile_graph_cuda(plans[id(loop.lines)], cp, (loop.var, loop.step))
            return None if run is None else run(values, env)

        return run_function(
            fn,
            arguments,
            env,
            lambda b, v, e: compile_graph_cuda(plans[id(b)], cp)(v, e),
            run_lines,
            original=original,
        )

    run.source = getattr(host, "source", None)
    run.module = getattr(host, "module", None)  # the generated module, self-contained
    run.program = getattr(host, "program", None)  # what the compile cache keeps
    return run


def _run_on_host(fn: Function, plans: dict, original=None):
    def by_plans(arguments, env):
        run = lambda b, v, e: run_graph(plans[id(b)], v, e)  # noqa: E731
        return run_function(fn, arguments, env, run, original=original)

    if backend() == "reference":
        return by_plans
    try:
        generated = compile_function(fn, plans, original)
    except Exception:  # a renderer bug must not stop the user: run the Plans instead (the
        if os.environ.get("PYPTO_STRICT_EMIT") == "1":  # tests set PYPTO_STRICT_EMIT=1 and
            raise  # see it fail)
        return by_plans

    run = checked(generated, lambda arguments, error: fn)
    run.source, run.module, run.program = generated.source, generated.module, generated.program
    return run


def _diagnose(plan, values, env, e):
    """NumPy refused something (an empty maximum, an integer to a negative power): run the plan
    op by op, which raises the same error naming the op and the user's line. (The generated code
    writes its own buffers and, in place, only input arrays the block reassigns; the reference
    run reads them but its results are dropped.)"""
    run_plan(plan, values, env, check=False)
    raise InternalError(
        f"the generated NumPy code failed where the reference executor did not: "
        f"{type(e).__name__}: {e}"
    ) from e
