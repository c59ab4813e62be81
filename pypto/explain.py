"""``ppto.explain``: what the passes made of a function or a chain, for these arguments.

    print(ppto.explain(softmax, x))          # a NumPy-style function (or @ppto.compile'd one)
    print(ppto.explain(chain, x=data_x))     # a lazy chain and its bindings

Shows the IR, what simplification did, each kernel (kind, domain, the ops inside, the index
maps it reads through, inputs and outputs, bytes read and written against running the same ops
one NumPy call at a time, its chunking), the buffers and the memory they reuse, the parallel
levels, the planned peak memory, and every fusion decision with its rule and reason. Sizes are
symbolic in the plan; they are evaluated with the example arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import ArgumentError, api_boundary
from .printer import format_graph
from .symbolic import evaluate, format_dim

if TYPE_CHECKING:  # the passes are imported when something is explained, not with pypto
    from .passes.plan import GraphPlan


@dataclass
class Explanation:
    title: str
    ir: str
    plans: list[tuple[str, GraphPlan]]  # (where, plan) per block
    env: dict
    dask: dict | None = None  # with dask arguments: kernel name -> its tasks for them
    loops: tuple = ()  # with dask arguments: how each host loop runs
    gpu: bool = False  # with CuPy arguments, or dask arguments whose chunks are CuPy arrays

    @property
    def kernels(self):
        return [k for _, p in self.plans for k in p.kernels]

    def __str__(self):
        lines = [f"== {self.title} ==", "", "IR:", *("  " + x for x in self.ir.split("\n"))]
        for where, plan in self.plans:
            lines += ["", f"-- {where} --" if where else "--"]
            lines += describe_plan(plan, self.env, dask=self.dask is not None, gpu=self.gpu)
        if self.dask is not None:
            tasks = ", ".join(f"{k}: {n}" for k, n in sorted(self.dask.items())) or "none"
            lines += [""] + [f"dask: {x}" for x in self.loops]
            lines += [f"dask tasks for these arguments (per kernel name): {tasks}"]
        return "\n".join(lines)


def describe_plan(plan: GraphPlan, env: dict, dask: bool = False, gpu: bool = False) -> list[str]:
    names = plan.names
    size = _sizer(env)
    lines = []
    if plan.simplified:
        lines.append("simplified: " + "; ".join(plan.simplified))
    unfused_total = sum(_eval(k.unfused_bytes, env) for k in plan.kernels)
    moved_total = sum(_eval(k.bytes_read, env) + _eval(k.bytes_written, env) for k in plan.kernels)
    calls = sum(len(k.ops) for k in plan.kernels)
    lines.append(
        f"kernels: {len(plan.kernels)} (one NumPy call per op would be {calls}); bytes moved "
        f"{size(moved_total)} (unfused {size(unfused_total)})"
    )
    lines += graph_breaks(plan, gpu)
    for k in plan.kernels:
        dom = ",".join(format_dim(d) for d in k.domain)
        extra = f", reduced axes {k.reduced}" if k.reduced else ""
        extra += f", scan axis {k.scan_axis}" if k.scan_axis is not None else ""
        lines.append(f"  {k.name} {k.kind} over [{dom}]{extra}, level {k.level}")
        lines.append(
            f"     ops: {' '.join(k.ops) or '-'}; index maps: {' '.join(k.index_maps) or '-'}"
        )
        ins = ", ".join(names.get(id(v), "?") for v in k.inputs) or "-"
        outs = ", ".join(names.get(id(v), "?") for v in k.outputs)
        lines.append(f"     reads {ins}; writes {outs}")
        if k.late_inputs:
            late = ", ".join(names.get(id(v), "?") for v in k.late_inputs)
            lines.append(f"     epilogue waits for {late} (the product may start before)")
        for s in k.stores:
            how = "in place" if s.inplace else "into a copy"
            why = k.hazards.get(id(s.out), "")
            if why and s.inplace:
                why = "its value reads the array elsewhere, and is computed whole before the write"
            lines.append(
                f"     slice assignment into {names.get(id(s.base), '?')} {how}"
                + (f" ({why})" if why else "")
            )
        moved = _eval(k.bytes_read, env) + _eval(k.bytes_written, env)
        lines.append(
            f"     bytes: read {size(_eval(k.bytes_read, env))}, written "
            f"{size(_eval(k.bytes_written, env))} = {size(moved)} "
            f"(unfused {size(_eval(k.unfused_bytes, env))})"
        )
        for v in k.outputs:
            if id(v) in plan.layouts:  # passes/layout.py: NumPy's order of axes in memory
                order = ", ".join(map(str, plan.layouts[id(v)]))
                lines.append(
                    f"     layout: {names.get(id(v), '?')} has axes ({order}) outermost first"
                )
        c = k.chunking
        if c is None:
            lines.append("     chunks: none (no axis can be split)")
        else:
            block, extent = _eval(c.block, env), _eval(c.extent, env)
            here = ""
            if isinstance(block, int) and isinstance(extent, int):
                n = -(-extent // block) if block else 1
                here = f"; here {min(block, extent)} of {extent} -> {n} chunk(s)"
            halo = "".join(f", halo {n} +{hi}" for n, lo, hi in c.halo)
            lines.append(f"     chunks: axis {c.axis}, block {c.block}{halo}{here}")
        if dask:
            from .emit.dask_target import describe_kernel

            lines.append(f"     dask: {describe_kernel(plan, k, gpu)}")
        lines.append("     body:")
        lines += ["        " + x for x in format_graph(k.body, names).split("\n")]
    lines.append("buffers:")
    for b in plan.buffers:
        reuse = f", reuses the memory of {b.reuses}" if b.reuses else ""
        lines.append(
            f"  {b.name} {names.get(id(b.value), '?')}:{b.value.type} "
            f"{size(_eval(b.nbytes, env))} {b.role}, written by k{b.first}, last read by "
            f"k{b.last}{reuse}"
        )
    if not plan.buffers:
        lines.append("  (none)")
    levels = " | ".join(" ".join(f"k{i}" for i in lv) for lv in plan.levels)
    lines.append(f"parallel levels: {levels or '-'}")
    from .passes.memory import peak_bytes

    try:
        lines.append(f"planned peak memory: {size(peak_bytes(plan, env))} (inputs included)")
    except (KeyError, TypeError):
        lines.append("planned peak memory: depends on a loop variable")
    lines.append("fusion decisions:")
    lines += ["  " + str(d) for d in plan.decisions] or ["  (none)"]
    return lines


def graph_breaks(plan: GraphPlan, gpu: bool = False) -> list[str]:
    """Each call PyPTO has no op for (ops/host_calls.py), with its line and how it runs."""
    how = (
        "CuPy's function of the same name where CuPy has one, else NumPy's on host copies "
        "(a device-to-host round trip)"
        if gpu
        else "NumPy's own call"
    )
    lines = []
    for k in plan.kernels:
        for e in k.body.eqns:
            if e.op != "host_call":
                continue
            where = f"{Path(e.site.filename).name}:{e.site.lineno}" if e.site else "?"
            sized = e.params["sized"]
            if sized:  # (x[mask], np.nonzero: the code after it is a block of its own)
                size = e.out.type.shape[sized[0][0]]
                lines.append(
                    f"graph break at {where} ({k.name}): `{e.params['name']}`, whose size "
                    f"({size}) the values decide, runs as {how}; the size is bound when it "
                    "has run, and the code after it is a new block"
                )
                continue
            lines.append(
                f"graph break at {where} ({k.name}): `{e.params['name']}`, "
                f"{_why(e.params['fn'])}, runs as {how}; fusion stops at it"
            )
    return lines


def _why(fn) -> str:
    """Why a call is a graph break: no op, a variant of an op without a kernel (HostOnly), or
    an index PyPTO has no native gather or scatter for (parse/index_arrays.py)."""
    import operator

    from .registry import REGISTRY

    module = getattr(fn, "__module__", None) or ""  # (a ufunc's method has None)
    if fn in (np.take, operator.getitem) or module.startswith("pypto.emit.runtime"):
        return "an index PyPTO computes with NumPy's indexing (no native gather or scatter)"
    if REGISTRY.for_numpy(fn) is not None:
        return "a variant PyPTO has no kernel for"
    return "which PyPTO has no op for"


def _eval(d, env):
    try:
        return evaluate(d, env)
    except (KeyError, TypeError):
        return d


def _sizer(env):
    def size(n):
        if not isinstance(n, int):
            return f"{n} B"
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= scale:
                return f"{n / scale:.1f} {unit}"
        return f"{n} B"

    return size


@api_boundary
def explain(target, *args, **kwargs) -> Explanation:
    """The Plan of a NumPy-style function (called with example arguments) or of a lazy chain
    (with its bindings as keywords); ``print`` it."""
    from .api import Tensor
    from .compile import CompiledFunction, _specialize
    from .compile import compile as ppto_compile
    from .passes.cost import original_cheaper
    from .passes.pipeline import plan_function, plan_graph

    if isinstance(target, (Tensor, list, tuple)) and not callable(target):
        from .tracer import compile_chain

        if args:
            raise ArgumentError("explain(chain, ...) takes the chain's inputs as keywords")
        roots = target if isinstance(target, (list, tuple)) else [target]
        graph, _, env = compile_chain([t._node for t in roots], kwargs)
        return Explanation("lazy chain", str(graph), [("", plan_graph(graph))], env)
    compiled = target if isinstance(target, CompiledFunction) else ppto_compile(target)
    fn_ir = compiled.ir(*args, **kwargs)
    _, env, _ = _specialize(compiled._bind(args, kwargs))
    plans = plan_function(fn_ir)
    where = []
    _blocks(fn_ir.body, "", where)
    text = str(fn_ir)
    cheaper = original_cheaper(fn_ir, plans)
    if cheaper:
        holds = all(g.holds(env) for g in cheaper)
        text += (
            "\n  the original statements run instead where they cost less (passes/cost.py): "
            + ", ".join(str(g) for g in cheaper)
            + f"\n  (for these arguments: {'the original' if holds else 'the Plan'})"
        )
    found = [(w, plans[id(b)]) for w, b in where]
    tasks = _dask_tasks(compiled, args, kwargs)
    from .bindings import is_device_array

    loops, gpu = (), any(is_device_array(v) for v in [*args, *kwargs.values()])
    if tasks is not None:
        from .emit.dask_loops import describe_loop
        from .emit.dask_target import device_meta

        gpu = device_meta([*args, *kwargs.values()]) is not None
        loops = tuple(describe_loop(loop, plans, gpu) for loop in _loops(fn_ir.body))
    return Explanation(f"{fn_ir.name}", text, found, env, tasks, loops, gpu)


def _loops(steps):
    from .function import Branch, Loop, While

    for step in steps:
        if isinstance(step, Loop):
            yield step
            yield from _loops(step.body)
        elif isinstance(step, Branch):
            yield from _loops(step.then)
            yield from _loops(step.orelse)
        elif isinstance(step, While):
            yield from _loops(step.test)
            yield from _loops(step.body)


def _dask_tasks(compiled, args, kwargs) -> dict | None:
    """With dask arrays among the arguments: the graph the call builds (nothing computed; the
    arguments are new wrappers, so a write into one does not change the caller's), its PyPTO
    tasks per kernel name."""
    from .bindings import is_dask_array

    if not any(is_dask_array(a) for a in (*args, *kwargs.values())):
        return None
    import dask.array as da

    from .emit.dask_target import count_tasks

    def fresh(a):
        return da.Array(a.dask, a.name, a.chunks, meta=a._meta) if is_dask_array(a) else a

    args2 = [fresh(a) for a in args]
    kwargs2 = {k: fresh(v) for k, v in kwargs.items()}
    result = compiled(*args2, **kwargs2)
    results = result if isinstance(result, tuple) else (result,)
    return count_tasks([*results, *args2, *kwargs2.values()])


def _blocks(steps, context, out):
    from .function import Block, Branch, Loop, While

    for step in steps:
        if isinstance(step, Block):
            outs = ", ".join(h.name for h in step.outputs) or "_"
            out.append((f"block {len(out)}{context}: {outs}", step))
        elif isinstance(step, Loop):
            if isinstance(step.vector, Block):
                out.append((f"block {len(out)}{context}: the loop over {step.var}", step.vector))
            elif step.vector is not None:  # an interchanged nest
                _blocks((step.vector,), f"{context} in loop over {step.var} (interchanged)", out)
            if step.lines is not None:
                what = f"the loop over {step.var} inside one kernel (CUDA)"
                out.append((f"block {len(out)}{context}: {what}", step.lines))
            _blocks(step.body, f"{context} in loop over {step.var}", out)
        elif isinstance(step, Branch):
            _blocks(step.then, f"{context} if {step.cond.name}", out)
            _blocks(step.orelse, f"{context} else", out)
        elif isinstance(step, While):  # the condition read on the host before each iteration
            _blocks(step.test, f"{context} while-test ({step.cond.name}, read on the host)", out)
            _blocks(step.body, f"{context} in while {step.cond.name}", out)
