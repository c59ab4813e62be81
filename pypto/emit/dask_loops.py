"""Time loops on the Dask target: k steps per task (temporal blocking), never ``__setitem__``.

A host loop ``for t in range(T): <blocks>`` whose every kernel runs per block of axis 0 on
slabs (emit/dask_blocks.py) is a stencil in time: one step's value at row ``i`` depends on the
rows ``i - H .. i + H`` of the step before, ``H`` the sum over its kernels of how far each
reads from the rows it writes. Then k steps run inside one task per block: the task gets the
rows of its block and ``k * H`` rows either side (fewer at the arrays' ends), runs the loop's
blocks k times with the NumPy target's code on that slab as if it were the whole array, and
keeps its own rows, which are exact (what is wrong near a slab's cut edges moves in by at most
H rows a step). The ends of the arrays are the slabs' own ends, so a statement's boundary
(``B[1:-1]``, ``np.gradient``'s one-sided edges) is computed there as NumPy computes it. The
rounds (``persist`` is the caller's) take k steps each, ``k * H`` at most half a block.

The loop qualifies (``time_loop``) when running the body on a slab is running it on the array:
every kernel is chunked along axis 0 and reads each array that varies along it as a slab of
rows (no fixed row, no whole read), every such array has the loop arrays' length N along
axis 0 and each kernel's extent differs from N by a constant (``B[1:-1]``, not ``A[:n // 2]``),
no value uses N (it would be the slab's length), and everything the loop writes is such an
array. Otherwise the loop runs step by step, each step's kernels as tasks.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass

import numpy as np

from ..bindings import is_dask_array, is_device_array
from ..function import Block, Loop
from ..ir import Literal
from ..symbolic import Sym, add, evaluate, free_symbols, mul, substitute
from .dask_blocks import programs
from .dask_runtime import Args, pick
from .numpy_target import compile_graph

_ANALYSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_COUNTER = itertools.count()


@dataclass(frozen=True)
class LoopProgram:
    """What a task of a time loop runs: per block of the body, its NumPy program and which
    slots it reads and writes (slots: the loop's arrays ``D``, then its whole inputs ``W``)."""

    key: str
    var: str
    blocks: tuple  # (program dict, input slots, output slots)
    slabs: int  # slots 0 .. slabs - 1 hold slabs of the D arrays
    written: tuple  # the D slots the loop writes (returned, trimmed to the block)


@dataclass(frozen=True)
class TimeLoop:
    program: LoopProgram
    halo: int  # H: rows a step reads beyond the rows it writes
    shortest: int  # the fewest rows a slab may have: every statement's extent N + c >= 0
    distributed: tuple  # host vars D (slab slots 0..)
    whole: tuple  # host vars W read whole (loop invariant)
    written: tuple  # host vars the loop writes (all in D)


def time_loop(loop: Loop, plans: dict) -> TimeLoop | None:
    return _analysed(loop, plans)[0]


def _analysed(loop: Loop, plans: dict) -> tuple:
    """(TimeLoop or None, why not)."""
    if loop not in _ANALYSED:
        try:
            _ANALYSED[loop] = (_analyse(loop, plans), "")
        except _No as e:
            _ANALYSED[loop] = (None, str(e))
    return _ANALYSED[loop]


def describe_loop(loop: Loop, plans: dict, gpu: bool = False) -> str:
    """How the Dask target runs a host loop (for ``explain``; ``gpu``: on CuPy chunks)."""
    if gpu:
        return (
            f"the loop over {loop.var} runs step by step, each step's kernels as tasks "
            "(CuPy chunks: no temporal blocking)"
        )
    tl, why = _analysed(loop, plans)
    if tl is None:
        return f"the loop over {loop.var} runs step by step, each step's kernels as tasks ({why})"
    return (
        f"the loop over {loop.var} runs k steps per task per block of axis 0 (temporal "
        f"blocking: a halo of k*{tl.halo} rows; k at most half a block / {tl.halo})"
    )


class _No(Exception):
    pass


def _analyse(loop: Loop, plans: dict) -> TimeLoop:
    if loop.until is not None:
        raise _No("its body can `break`")
    if not loop.body or not all(isinstance(s, Block) for s in loop.body):
        raise _No("the body is not only blocks")
    if loop.guards and loop.ends is None:
        raise _No("guards checked at each step")
    written: dict[int, object] = {}
    for b in loop.body:
        for h in b.outputs:
            written[id(h)] = h
    distributed: dict[int, object] = {}
    whole: dict[int, object] = {}
    n_sym = None  # axis 0's length of the loop's arrays (symbolic)
    halo = 0
    sizes = set()  # the symbols of that length: no value may use them
    for b in loop.body:
        plan = plans[id(b)]
        host_of = {id(v): h for v, h in zip(plan.graph.inputs, b.inputs)}
        made = {id(v) for k in plan.kernels for v in k.outputs}
        consts = {id(v) for v, _ in plan.graph.consts}
        for k in plan.kernels:
            progs = programs(plan, k)
            if progs.block is None or k.chunking.axis != 0:
                raise _No(f"{k.name} does not run per block of axis 0")
            radius = 0
            offsets = [0 if start is None else start for _axis, start in progs.outs]
            if any(axis != 0 for axis, _ in progs.outs) or not all(
                isinstance(o, int) for o in offsets
            ):
                raise _No("an output along another axis")
            for v, slab in zip(k.inputs, progs.slabs):
                h = host_of.get(id(v))
                if slab is None:
                    if id(v) in consts or not v.type.rank:
                        continue
                    if h is None or id(h) in written or id(h) in distributed:
                        raise _No(f"{k.name} reads a loop array whole")
                    whole[id(h)] = h
                    continue
                axis, lo, hi = slab
                if axis != 0:
                    raise _No("a slab along another axis")
                radius = max(radius, *(max(abs(lo - o), abs(hi - o)) for o in offsets))
                if h is not None:
                    if id(h) in whole:
                        raise _No("a loop array read whole elsewhere")
                    distributed[id(h)] = h
                    d0 = v.type.shape[0]
                    n_sym = d0 if n_sym is None else n_sym
                    if _offset(plan, d0, n_sym) != 0:
                        raise _No("arrays of other lengths")
                    sizes |= free_symbols(d0)
                elif id(v) not in made:
                    raise _No("an input that is not a host value")
            if n_sym is not None and _offset(plan, k.chunking.extent, n_sym) is None:
                raise _No(f"{k.name}'s extent is not the arrays' length plus a constant")
            halo += radius
        for v, h in zip(plan.graph.outputs, b.outputs):
            if isinstance(v, Literal) or not v.type.rank:
                raise _No("the loop writes a scalar")
            if n_sym is None or _offset(plan, v.type.shape[0], n_sym) != 0:
                raise _No("the loop writes an array of another length")
            distributed.setdefault(id(h), h)
    if n_sym is None or halo == 0:
        raise _No("nothing to block")
    shortest = 1  # -c for the most negative extent N + c of any value along axis 0
    for b in loop.body:
        plan = plans[id(b)]
        for k in plan.kernels:
            c = _offset(plan, k.chunking.extent, n_sym)
            shortest = max(shortest, -c)
        for e in plan.graph.eqns:
            if e.out.type.rank:
                c = _offset(plan, e.out.type.shape[0], n_sym)
                if c is not None:
                    shortest = max(shortest, -c)
    for b in loop.body:  # what else the body reads (scalars, arrays no kernel slices): whole
        for h in b.inputs:
            if id(h) not in distributed:
                if id(h) in written:
                    raise _No(f"`{h.name}` is written by the loop but not as rows")
                whole[id(h)] = h
    dist = tuple(distributed.values())
    wh = tuple(h for h in whole.values() if id(h) not in distributed)
    slot = {id(h): i for i, h in enumerate((*dist, *wh))}
    blocks = []
    for b in loop.body:
        plan = plans[id(b)]
        for e in plan.graph.eqns:  # a value that uses N would use the slab's length
            for a in e.inputs:
                if isinstance(a, Literal) and _mentions(a.value, sizes):
                    raise _No("a value uses the arrays' length")
        run = compile_graph(plan)
        if run.program is None:
            raise _No("a user operator")
        if any(_mentions(symbol, sizes) for _, symbol in run.program["free"]):
            raise _No("the arrays' length is not read from the slabs")
        ins = tuple(slot[id(h)] for h in b.inputs)
        outs = tuple(slot[id(h)] for h in b.outputs)
        blocks.append((run.program, ins, outs))
    w = tuple(h for h in dist if id(h) in written)
    key = f"{next(_COUNTER):x}-{id(loop):x}"
    program = LoopProgram(key, loop.var, tuple(blocks), len(dist), tuple(slot[id(h)] for h in w))
    return TimeLoop(program, halo, shortest, dist, wh, w)


def _offset(plan, d, n):
    """``d - n`` when it is a constant (sizes the plan knows equal to ``n`` taken as ``n``),
    else None."""
    diff = add(d, mul(n, -1))
    if isinstance(diff, int):
        return diff
    for name in free_symbols(d):
        if plan.same((Sym(name),), (n,)):
            diff = add(substitute(d, name, n), mul(n, -1))
            if isinstance(diff, int):
                return diff
    return None


def _mentions(value, names) -> bool:
    from ..printer import symbols_in

    if isinstance(value, str):
        return value in names
    return bool(symbols_in(value, set()) & names)


def run_time_loop(loop: Loop, plans: dict, host: dict, env: dict) -> bool:
    """Run ``loop`` in rounds of k steps per task where it qualifies (True), else False."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    from .dask_target import _boundaries, _slab_keys, _whole_key

    tl = time_loop(loop, plans)
    if tl is None:
        return False
    start, stop = evaluate(loop.start, env), evaluate(loop.stop, env)
    steps = len(range(start, stop, loop.step))
    if steps < 2 or (loop.ends is not None and not all(g.holds(env) for g in loop.ends)):
        return False
    arrays = [host.get(id(h)) for h in tl.distributed]
    if not all(is_dask_array(a) for a in arrays):
        return False
    if any(is_device_array(a._meta) for a in arrays):
        return False  # CuPy chunks: step by step (the steps' NumPy programs run on the host)
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays) or n < tl.shortest:
        return False
    bounds = _boundaries(arrays[0].chunks[0])
    blocks = list(itertools.pairwise(bounds))
    shortest = min(e - s for s, e in blocks)
    per_round = max(1, min(steps, shortest // (2 * tl.halo)))
    sizes = {k: v for k, v in env.items() if k != loop.var}
    prog_key = f"pypto-program-loop-{tl.program.key}"
    done = 0
    t = start
    values = dict(zip((id(h) for h in tl.distributed), arrays))
    wholes = [host[id(h)] for h in tl.whole]
    while done < steps:
        k = min(per_round, steps - done)
        reach = k * tl.halo
        name = f"pypto-loop-{next(_COUNTER):x}"
        layer: dict = {prog_key: tl.program}
        deps: list = []
        # a slab at least as long as the statements need (widened into the next blocks: more
        # rows either side are always right); where the array is shorter, step by step
        spans = [_widened(max(0, s - reach), min(n, e + reach), tl.shortest, n) for s, e in blocks]
        slab_keys = []
        for h in tl.distributed:
            x = values[id(h)]
            slab_keys.append(_slab_keys(x, 0, spans, x.shape, da, layer, deps))
        whole_keys = [_whole_key(x, da, layer, deps) for x in wholes]
        for b, (s, e) in enumerate(blocks):
            kw = {"start": t, "step": loop.step, "count": k, "env": sizes}
            kw["trim"] = (s - spans[b][0], e - spans[b][0])
            args = [keys[b] for keys in slab_keys] + whole_keys
            layer[(name, b)] = (run_steps, prog_key, Args(kw), *args)
        main = HighLevelGraph.from_collections(name, layer, dependencies=deps)
        for j, h in enumerate(tl.written):
            old = values[id(h)]
            out_name = f"pypto-out{j}-{name[6:]}"
            out_layer = {
                (out_name, b, *([0] * (old.ndim - 1))): (pick, (name, b), j)
                for b in range(len(blocks))
            }
            g = HighLevelGraph(
                {**main.layers, out_name: out_layer}, {**main.dependencies, out_name: {name}}
            )
            chunks = (tuple(e - s for s, e in blocks), *((d,) for d in old.shape[1:]))
            values[id(h)] = da.Array(g, out_name, chunks, meta=old._meta)
        done += k
        t += k * loop.step
    for h in tl.written:
        host[id(h)] = values[id(h)]
    env.pop(loop.var, None)
    return True


def _widened(lo: int, hi: int, length: int, n: int) -> tuple[int, int]:
    """``lo:hi`` grown to at least ``length`` rows inside ``0:n`` (n >= length)."""
    short = length - (hi - lo)
    if short > 0:
        lo = max(0, lo - short)
        hi = min(n, lo + length) if hi - lo < length else hi
        lo = min(lo, hi - length)
    return lo, hi


def run_steps(program: LoopProgram, args: Args, *arrays):
    """A task of a time loop: ``count`` steps of the loop's blocks on slabs (copies: a block's
    program may write its inputs in place), the written arrays trimmed to the task's block."""
    from .dask_runtime import compiled_graph

    kw = args.kw
    slots = [a.copy() if i < program.slabs else a for i, a in enumerate(arrays)]
    env = dict(kw["env"])
    for i in range(kw["count"]):
        env[program.var] = kw["start"] + i * kw["step"]
        for prog, ins, outs in program.blocks:
            fn = compiled_graph(prog)
            results = fn([slots[j] for j in ins], env)
            for j, v in zip(outs, results):
                slots[j] = v
    lo, hi = kw["trim"]
    return tuple(np.asarray(slots[j])[lo:hi] for j in program.written)


__all__ = ["describe_loop", "run_steps", "run_time_loop", "time_loop"]
