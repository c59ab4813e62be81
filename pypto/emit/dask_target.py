"""The Dask target: a Plan run as a Dask graph, each kernel one task per block.

``run_graph_dask(plan, values, env)`` takes the graph's inputs (dask arrays, NumPy arrays,
scalars) and returns its outputs as dask arrays: nothing is computed until the user computes
(or persists) them. Kernel by kernel, in the Plan's order:

* a **chunked** kernel (the Plan's ``Chunking``: an axis of its domain every value follows)
  becomes one task per block of that axis. The Plan's chunk axis is the Dask chunk axis: the
  blocks are the chunks of the kernel's first input that varies along it (a slice
  assignment's base first, so a time loop keeps its arrays' chunks), shifted by the offset it is
  read at; each input is rechunked once to whole other axes. An input read at offsets (a
  stencil) arrives as the slab of rows its block reads, its halo included (Dask's getitem and
  concatenate make it: ``map_overlap``'s job). A slice assignment's output is its base with
  the block's rows written: the first and last blocks take the rows before and after the
  assigned region, so the output has the base's chunks and no ``setitem`` task exists.
* any other kernel (a reduction along every axis it could be split on, a user operator, a
  product with symbolic offsets) is one task over whole arrays.

Each task runs the NumPy target's code for its kernel (emit/dask_blocks.py) through the
trampoline ``pypto.emit.dask_runtime.run``. Task keys name the kernel:
``pypto-<kernel>-<token>``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..bindings import device_module, is_dask_array, is_device_array
from ..errors import UnsupportedError
from ..ir import Literal, Var
from ..passes.plan import GraphPlan, Kernel
from ..registry import REGISTRY
from ..symbolic import Sym, evaluate
from . import dask_blocks
from .common import sized_calls
from .dask_blocks import (
    KernelPrograms,
    ProductProgram,
    ScanProgram,
    TreeProgram,
    product_program,
    programs,
    scan_program,
    tree_program,
)
from .dask_cuda import meta_like, module_spec
from .dask_runtime import Args, combine, finish, pick, run, scan_carry, scan_finish, to_device
from .dask_runtime import matmul as device_matmul

_COUNTER = itertools.count()
TASK_BYTES = 64 << 20  # blocks of about this size when no input's chunks say otherwise


def run_graph_dask(plan: GraphPlan, values: list, env: dict) -> list:
    import dask.array as da

    graph = plan.graph
    vals: dict[int, object] = {id(v): x for v, x in zip(graph.inputs, values)}
    for v, array in graph.consts:
        vals[id(v)] = array
    ref = device_meta(values)  # CuPy chunks: the CUDA target's programs (emit/dask_cuda.py)
    dev = {} if ref is None else {"_cp": module_spec(device_module([ref]))}
    for k in plan.kernels:
        outs = _kernel(plan, k, vals, env, da, dev)
        for v, x in zip(k.outputs, outs):
            if ref is not None and is_dask_array(x):
                x._meta = meta_like(ref, x.ndim, x.dtype)
            vals[id(v)] = x
    results = []
    for a in graph.outputs:
        if isinstance(a, Literal):
            results.append(a.value)
            continue
        x = vals[id(a)]
        results.append(x if is_dask_array(x) or not isinstance(x, np.ndarray) else da.asarray(x))
    return results


def _kernel(plan: GraphPlan, k: Kernel, vals: dict, env: dict, da, dev: dict) -> list:
    """Kernel ``k``'s outputs as dask arrays; ``dev``: the tasks' CuPy module (``_cp``) where
    the chunks are on the GPU (the CUDA target's programs; no trees or chained scans: those
    kernels run whole), else empty."""
    cuda = bool(dev)
    if set(sized_calls(plan.graph)) & {id(v) for v in k.outputs}:
        return _sized(k, vals, env, da, dev)
    progs = programs(plan, k, cuda)
    consts = {id(v) for v, _ in plan.graph.consts}
    scan = scan_program(plan, k) if k.kind == "scan" and not cuda else None
    if scan is not None and _split_along(k, scan, vals):  # the input's blocks split the scan
        bounds = _tree_bounds(k, scan, vals, env)
        if len(bounds) > 2:
            return _scan(k, scan, vals, env, bounds, da)
    symbols = (
        {name: _int(evaluate(Sym(s), env)) for name, s in progs.block.symbols}
        if progs.block
        else {}
    )
    symbols.update(dev)
    product = product_program(plan, k, cuda) if k.kind == "contraction" else None
    if product is not None and (cuda or _panel_bytes(product, env) > dask_blocks.PANEL_BYTES):
        # (on the GPU always: the product by CuPy's matmul per block, the epilogue after it)
        return _split_product(k, product, vals, env, da, dev)
    if progs.block is not None:
        bounds = _bounds(k, progs, vals, env)
        if bounds is not None and len(bounds) > 2:
            return _blocked(k, progs, vals, env, bounds, symbols, consts, da)
    elif k.chunking is None and not cuda:
        tree = tree_program(plan, k)
        if tree is not None:
            bounds = _tree_bounds(k, tree, vals, env)
            if len(bounds) > 2:
                return _tree(k, tree, vals, env, bounds, da)
    return _whole(k, progs, vals, env, consts, da, dev)


def _sized(k: Kernel, vals: dict, env: dict, da, dev: dict) -> list:
    """A graph break whose size the values decide (``x[mask]``, ``np.nonzero``): computed
    here, what it reads first, so the tasks after it know its size (dask's own boolean
    indexing leaves the chunk sizes unknown instead)."""
    if dev:
        raise UnsupportedError(
            "a size the values decide (x[mask], np.nonzero) on dask arrays of GPU chunks",
            hint="compute the selection before the call, or pass NumPy chunks",
            code="PPT101",
        )
    (e,) = k.body.eqns
    args = [vals[id(a)] if isinstance(a, Var) else a.value for a in e.inputs]
    args = [np.asarray(a.compute()) if is_dask_array(a) else a for a in args]
    params = e.params
    axes = {a for a, _ in params["sized"]}
    shape = tuple(d if a in axes else evaluate(d, env) for a, d in enumerate(params["out_shape"]))
    out = REGISTRY["host_call"].impl(*args, **{**params, "out_shape": shape})
    return [da.from_array(out, chunks=out.shape or ())]


def device_meta(values):
    """The ``_meta`` of the first dask array among ``values`` whose chunks are GPU arrays
    (CuPy's), or None."""
    for x in values:
        if is_dask_array(x) and is_device_array(x._meta):
            return x._meta
    return None


def _int(x):
    return int(x) if isinstance(x, (int, np.integer)) else x


def _name(k: Kernel) -> str:
    return f"pypto-{k.name}-{next(_COUNTER):x}"


def _shape(v, env) -> tuple:
    return tuple(int(evaluate(d, env)) for d in v.type.shape)


def _boundaries(chunks) -> list[int]:
    return [0, *itertools.accumulate(chunks)]


SPLIT_EVERY = 8  # partial reductions a combine task takes


def _panel_bytes(product: ProductProgram, env) -> int:
    """The bytes of the operand every block of a product would read whole."""
    panel = product.operands[1]
    return int(np.prod(_shape(panel, env))) * np.dtype(panel.type.dtype).itemsize


def _split_product(k: Kernel, product: ProductProgram, vals, env, da, dev) -> list:
    """A product whose second operand is too large for every task to read: dask.array's
    matmul (its own blocked tasks), then the epilogue per block of rows on the product's
    rows."""
    a, b = (_distributed(vals[id(v)], da, dev) for v in product.operands)
    if dev:  # a task per block of rows and columns: CuPy's matmul over the whole of K
        dtype = product.value.type.dtype
        meta = meta_like(a._meta, 2, dtype)
        value = da.blockwise(
            device_matmul, "ik", a, "ij", b, "jk", meta=meta, concatenate=True, spec=dev["_cp"]
        )
    else:
        value = da.matmul(a, b)
    if product.final is None:  # the product alone
        return [value.astype(product.value.type.dtype, copy=False)]
    vals = {**vals, id(product.value): value}
    bounds = _boundaries(value.chunks[0])
    blocks = list(itertools.pairwise(bounds))
    name = _name(k)
    key = f"pypto-program-{product.final.key}"
    layer: dict = {key: product.final}
    deps: list = []
    symbols = {n: _int(evaluate(Sym(s), env)) for n, s in product.final.symbols} | dev
    _block_tasks(
        name,
        key,
        product.final_inputs,
        product.final_slabs,
        blocks,
        symbols,
        vals,
        env,
        layer,
        deps,
        da,
    )
    n = len(k.outputs)
    return _outputs(k, name, layer, deps, [0] * n, [blocks] * n, env, da)


def _distributed(x, da, dev):
    """``x`` as a dask array (a NumPy array: one chunk; on the GPU where ``dev`` names it)."""
    if is_dask_array(x):
        return x
    x = da.from_array(x)
    return x.map_blocks(to_device, dev["_cp"], dtype=x.dtype) if dev else x


def _split_along(k: Kernel, scan: ScanProgram, vals: dict) -> bool:
    """Whether a dask input has several blocks along the scanned axis (else the kernel's own
    chunk axis, if any, splits it without moving the data)."""
    for v, slab in zip(scan.inputs, scan.slabs):
        x = vals[id(v)]
        if slab is not None and is_dask_array(x) and len(x.chunks[slab[0]]) > 1:
            return True
    return False


def _scan(k: Kernel, sp: ScanProgram, vals, env, bounds, da) -> list:
    """A scan per block of the scanned axis; each block's carry is the carry before it
    stepped with its last row (a chain of small tasks); then each block's values and the
    maps after the scan, per block."""

    name = _name(k)
    layer: dict = {}
    deps: list = []
    blocks = list(itertools.pairwise(bounds))
    part_key = f"pypto-program-{sp.partial.key}"
    layer[part_key] = sp.partial
    symbols = {n: _int(evaluate(Sym(s), env)) for n, s in sp.partial.symbols}
    partials = _block_tasks(
        f"pypto-scan-{name[6:]}",
        part_key,
        sp.inputs,
        sp.slabs,
        blocks,
        symbols,
        vals,
        env,
        layer,
        deps,
        da,
    )
    carries = [None]
    for b in range(1, len(blocks)):
        key = (f"pypto-carry-{name[6:]}", b)
        layer[key] = (
            scan_carry,
            Args({"axis": sp.axis, "step": sp.step}),
            carries[-1],
            partials[b - 1],
        )
        carries.append(key)
    final_key, others, final_kw = None, [[] for _ in blocks], [{} for _ in blocks]
    slots = [None if v is None else j for j, v in enumerate(sp.final_inputs)]
    if sp.final is not None:
        final_key = f"pypto-program-{sp.final.key}"
        layer[final_key] = sp.final
        fsym = {n: _int(evaluate(Sym(s), env)) for n, s in sp.final.symbols}
        final_kw = [dict(fsym, _s=s, _e=e) for s, e in blocks]
        others = _slab_args(
            sp.final_inputs, sp.final_slabs, blocks, final_kw, vals, env, layer, deps, da
        )
    for b in range(len(blocks)):
        kw = {"axis": sp.axis, "step": sp.step, "slots": slots, "final": final_kw[b]}
        layer[(name, b)] = (scan_finish, final_key, Args(kw), carries[b], partials[b], *others[b])
    n = len(k.outputs)
    return _outputs(k, name, layer, deps, [sp.axis] * n, [blocks] * n, env, da)


def _block_tasks(name, prog_key, inputs, slabs, blocks, symbols, vals, env, layer, deps, da):
    """One task per block running a block program on slabs of ``inputs``; their keys."""
    kws = [dict(symbols, _s=s, _e=e) for s, e in blocks]
    args = _slab_args(inputs, slabs, blocks, kws, vals, env, layer, deps, da)
    keys = [(name, b) for b in range(len(blocks))]
    for b, key in enumerate(keys):
        layer[key] = (run, prog_key, Args(kws[b]), *args[b])
    return keys


def _slab_args(inputs, slabs, blocks, kws, vals, env, layer, deps, da, rows=None) -> list:
    """Per block, the keys of what a block program reads: input j's slab along its axis (its
    halo clipped at the array's ends; ``rows[id(v)]``, per block, rows it must hold too), or
    the whole input; its origin goes into ``kws[b]["_oj"]``. An input None is a value the task
    makes itself, a block of it as it is (origin: the block's start), not an argument."""
    args = [[] for _ in blocks]
    for j, (v, slab) in enumerate(zip(inputs, slabs)):
        if v is None:
            for b, (s, _e) in enumerate(blocks):
                kws[b][f"_o{j}"] = s
            continue
        x = vals[id(v)]
        if slab is None:
            key = _whole_key(x, da, layer, deps)
            for b in range(len(blocks)):
                args[b].append(key)
            continue
        axis, lo, hi = slab
        shape = _shape(v, env)
        spans = [(max(0, s + lo), min(shape[axis], e + hi)) for s, e in blocks]
        for held in (rows or {}).get(id(v), ()):
            spans = [(min(a, p), max(z, q)) for (a, z), (p, q) in zip(spans, held)]
        keys = _slab_keys(x, axis, spans, shape, da, layer, deps)
        for b in range(len(blocks)):
            args[b].append(keys[b])
            kws[b][f"_o{j}"] = spans[b][0]
    return args


def _outputs(k, name, layer, deps, axes, rows, env, da) -> list:
    """Dask arrays of a kernel's outputs from its block tasks ``(name, b)``, each returning its
    outputs' blocks: output j's block b is along ``axes[j]``, its rows ``rows[j][b]``. One
    output: the task itself is the chunk."""
    from dask.highlevelgraph import HighLevelGraph

    nb = len(rows[0])
    one = len(k.outputs) == 1
    layers, names = [], []
    for j, (v, axis) in enumerate(zip(k.outputs, axes)):
        shape = _shape(v, env)
        out_name = name if one else f"pypto-out{j}-{name[6:]}"
        out_layer = layer if one else {}
        for b in range(nb):
            key = (out_name, *(b if a == axis else 0 for a in range(len(shape))))
            if one:  # (its one result)
                out_layer[key] = (pick, layer.pop((name, b)), 0)
            else:
                out_layer[key] = (pick, (name, b), j)
        layers.append(out_layer)
        names.append(out_name)
    main = HighLevelGraph.from_collections(name, layer, dependencies=deps)
    results = []
    for j, (v, axis) in enumerate(zip(k.outputs, axes)):
        shape = _shape(v, env)
        g = main
        if not one:
            g = HighLevelGraph(
                {**main.layers, names[j]: layers[j]}, {**main.dependencies, names[j]: {name}}
            )
        chunks = tuple(
            tuple(q - p for p, q in rows[j]) if a == axis else (d,) for a, d in enumerate(shape)
        )
        meta = np.empty((0,) * v.type.rank, v.type.dtype)
        results.append(da.Array(g, names[j], chunks, meta=meta))
    return results


def _tree_bounds(k: Kernel, tree, vals: dict, env: dict) -> list[int]:
    n = int(evaluate(k.domain[tree.axis], env))
    for v, slab in zip(tree.inputs, tree.slabs):
        x = vals[id(v)]
        if slab is not None and is_dask_array(x):
            axis, lo, _hi = slab
            return sorted({min(max(b - lo, 0), n) for b in _boundaries(x.chunks[axis])} | {0, n})
    return [0, n]


def _tree(k: Kernel, tree: TreeProgram, vals, env, bounds, da) -> list:
    """Partial reductions per block, combined SPLIT_EVERY at a time, then the maps after them."""
    from dask.highlevelgraph import HighLevelGraph

    name = _name(k)
    layer: dict = {}
    deps: list = []
    part_key = f"pypto-program-{tree.partial.key}"
    layer[part_key] = tree.partial
    symbols = {n: _int(evaluate(Sym(s), env)) for n, s in tree.partial.symbols}
    blocks = list(itertools.pairwise(bounds))
    level = _block_tasks(
        name, part_key, tree.inputs, tree.slabs, blocks, symbols, vals, env, layer, deps, da
    )
    meta = Args({"reductions": tree.reductions})
    depth = 0
    while len(level) > 1:
        depth += 1
        groups = [level[i : i + SPLIT_EVERY] for i in range(0, len(level), SPLIT_EVERY)]
        level = []
        for g, group in enumerate(groups):
            key = (f"pypto-combine-{name[6:]}", depth, g)
            layer[key] = (combine, meta, *group)
            level.append(key)
    counts = [None if r.count is None else int(evaluate(r.count, env)) for r in tree.reductions]
    casts = [
        np.dtype(np.float16) if c is not None and e_dtype == np.float16 else None
        for c, e_dtype in zip(counts, _reduction_dtypes(k))
    ]
    final_kw = {
        "reductions": tree.reductions,
        "counts": counts,
        "casts": casts,
        "wiring": [(kind, i if kind == "reduction" else 0) for kind, i in tree.final_inputs],
        "outputs": list(tree.outputs),
        "symbols": {},
    }
    extra = []
    final_key = None
    if tree.final is not None:
        final_key = f"pypto-program-{tree.final.key}"
        layer[final_key] = tree.final
        final_kw["symbols"] = {n: _int(evaluate(Sym(s), env)) for n, s in tree.final.symbols}
        for kind, v in tree.final_inputs:
            if kind == "input":
                extra.append(_whole_key(vals[id(v)], da, layer, deps))
    done = (f"pypto-finish-{name[6:]}",)
    layer[done] = (finish, final_key, Args(final_kw), level[0], *extra)
    results = []
    main = HighLevelGraph.from_collections(done[0], layer, dependencies=deps)
    for j, v in enumerate(k.outputs):
        shape = _shape(v, env)
        out_name = f"pypto-out{j}-{name[6:]}"
        key = (out_name, *([0] * len(shape)))
        g = HighLevelGraph(
            {**main.layers, out_name: {key: (pick, done, j)}},
            {**main.dependencies, out_name: {done[0]}},
        )
        meta_v = np.empty((0,) * v.type.rank, v.type.dtype)
        results.append(da.Array(g, out_name, tuple((d,) for d in shape), meta=meta_v))
    return results


def _reduction_dtypes(k: Kernel) -> list:
    from ..lower.families import family

    return [e.out.type.dtype for e in k.body.eqns if family(e) == "reduce"]


def _bounds(k: Kernel, progs: KernelPrograms, vals: dict, env: dict):
    """The block boundaries along the kernel's chunk axis, from the chunks of a dask input
    that follows the axis, placed so that the outputs get that input's chunks: a slice
    assignment's base first (domain index = base index - the region's start), then the input
    read nearest offset 0; else about TASK_BYTES per block."""
    c = k.chunking
    n = int(evaluate(c.extent, env))
    if n <= 1:
        return None
    candidates = []  # (preference, input index, the offset its boundaries shift by)
    stores = {id(s.out): s for s in k.stores}
    starts = {}  # id(base) -> the start of the region assigned into it
    for v, (_axis, start) in zip(k.outputs, progs.outs):
        if start is not None:
            starts.setdefault(id(stores[id(v)].base), start)
    for i, (v, slab) in enumerate(zip(k.inputs, progs.slabs)):
        if slab is None or not is_dask_array(vals[id(v)]):
            continue
        _axis, lo, hi = slab
        if id(v) in starts:
            start = starts[id(v)]
            shift = start if isinstance(start, int) else int(evaluate(start, env))
            candidates.append((0, i, shift))
        else:
            candidates.append((1 + abs(min(max(0, lo), hi)), i, min(max(0, lo), hi)))
    if candidates:
        _, i, shift = min(candidates)
        x = vals[id(k.inputs[i])]
        axis = progs.slabs[i][0]
        return sorted({min(max(b - shift, 0), n) for b in _boundaries(x.chunks[axis])} | {0, n})
    per_row = max(1, sum(np.dtype(v.type.dtype).itemsize for v in k.outputs))
    for a, d in enumerate(k.domain):
        if a != c.axis:
            per_row *= max(1, int(evaluate(d, env)))
    rows = max(1, TASK_BYTES // per_row)
    blocks = max(1, math.ceil(n / rows))
    step = math.ceil(n / blocks)
    return [*range(0, n, step), n]


def _blocked(k, progs: KernelPrograms, vals, env, bounds, symbols, consts, da) -> list:

    name = _name(k)
    prog_key = f"pypto-program-{progs.block.key}"  # one key however often the kernel runs
    layer: dict = {prog_key: progs.block}
    deps = []
    blocks = list(itertools.pairwise(bounds))
    nb = len(blocks)
    stores = {id(s.out): s for s in k.stores}
    out_shapes = [_shape(v, env) for v in k.outputs]
    # per output j: per block (p, q), its rows in the output (a slice assignment's: the first
    # and last blocks take the rows before and after its region)
    out_rows = []
    for j in range(len(k.outputs)):
        axis, start = progs.outs[j]
        if start is None:
            out_rows.append(blocks)
            continue
        start = int(evaluate(start, env)) if not isinstance(start, int) else start
        rows = [(start + s, start + e) for s, e in blocks]
        rows[0] = (0, rows[0][1])
        rows[-1] = (rows[-1][0], out_shapes[j][axis])
        out_rows.append(rows)
    # per input: its slab (a slice assignment's base also holds the rows of its output)
    kw_per_block = [dict(symbols, _s=s, _e=e) for s, e in blocks]
    held: dict = {}
    for j, v in enumerate(k.outputs):
        if id(v) in stores:
            held.setdefault(id(stores[id(v)].base), []).append(out_rows[j])
    taken = [(v, slab) for v, slab in zip(k.inputs, progs.slabs) if id(v) not in consts]
    args_per_block = _slab_args(
        [v for v, _ in taken],
        [slab for _, slab in taken],
        blocks,
        kw_per_block,
        vals,
        env,
        layer,
        deps,
        da,
        held,
    )
    for j, (_axis, start) in enumerate(progs.outs):
        if start is not None:
            for b in range(nb):
                kw_per_block[b][f"_p{j}"], kw_per_block[b][f"_q{j}"] = out_rows[j][b]
    for b in range(nb):
        layer[(name, b)] = (run, prog_key, Args(kw_per_block[b]), *args_per_block[b])
    axes = [axis for axis, _ in progs.outs]
    return _outputs(k, name, layer, deps, axes, out_rows, env, da)


def _whole_key(x, da, layer, deps):
    """A key (or the value itself) for an input a task reads whole."""
    if is_dask_array(x):
        if x.ndim == 0:
            deps.append(x)
            return (x.name,)
        whole = x.rechunk(x.shape) if x.npartitions > 1 else x
        deps.append(whole)
        return (whole.name, *([0] * x.ndim))
    if isinstance(x, np.ndarray) and x.ndim:
        key = f"pypto-const-{next(_COUNTER):x}"
        layer[key] = x
        return key
    return x


def _slab_keys(x, axis, spans, shape, da, layer, deps):
    """Per block, a key of the slab ``spans[b]`` of ``x`` along ``axis`` (whole other axes)."""
    if not is_dask_array(x):
        x = da.from_array(np.asarray(x), chunks=-1)
    # whole other axes; along the axis the chunks are kept (a block's slab is one of them, or
    # made from the ones it meets)
    want = {a: (x.chunks[a] if a == axis else -1) for a in range(x.ndim)}
    if any(len(x.chunks[a]) > 1 for a in range(x.ndim) if a != axis):
        x = x.rechunk(want)
    bounds = _boundaries(x.chunks[axis])
    keys = []
    pieces = {}
    for lo, hi in spans:
        if lo in bounds and hi in bounds and bounds.index(hi) == bounds.index(lo) + 1:
            keys.append((x.name, *(bounds.index(lo) if a == axis else 0 for a in range(x.ndim))))
            if x.name not in pieces:
                pieces[x.name] = x
            continue
        index = tuple(slice(lo, hi) if a == axis else slice(None) for a in range(x.ndim))
        slab = x[index]
        slab = slab.rechunk(slab.shape) if slab.npartitions > 1 else slab
        pieces[slab.name] = slab
        keys.append((slab.name, *([0] * x.ndim)))
    deps.extend(pieces.values())
    return keys


def _whole(k, progs: KernelPrograms, vals, env, consts, da, dev) -> list:
    from dask.highlevelgraph import HighLevelGraph

    name = _name(k)
    prog = progs.whole
    prog_key = f"pypto-program-{prog.key}"
    layer: dict = {prog_key: prog}
    deps: list = []
    args = [_whole_key(vals[id(v)], da, layer, deps) for v in k.inputs if id(v) not in consts]
    kw = {n: _int(evaluate(Sym(s), env)) for n, s in prog.symbols} | dev
    task = (run, prog_key, Args(kw), *args)
    if len(k.outputs) == 1:  # the task itself is the output's one chunk
        v = k.outputs[0]
        shape = _shape(v, env)
        layer[(name, *([0] * len(shape)))] = (pick, task, 0)
        g = HighLevelGraph.from_collections(name, layer, dependencies=deps)
        meta = np.empty((0,) * v.type.rank, v.type.dtype)
        return [da.Array(g, name, tuple((d,) for d in shape), meta=meta)]
    layer[(name,)] = task
    main = HighLevelGraph.from_collections(name, layer, dependencies=deps)
    results = []
    for j, v in enumerate(k.outputs):
        shape = _shape(v, env)
        out_name = f"pypto-out{j}-{name[6:]}"
        key = (out_name, *([0] * len(shape)))
        g = HighLevelGraph(
            {**main.layers, out_name: {key: (pick, (name,), j)}},
            {**main.dependencies, out_name: {name}},
        )
        meta = np.empty((0,) * v.type.rank, v.type.dtype)
        results.append(da.Array(g, out_name, tuple((d,) for d in shape), meta=meta))
    return results


def write_back(target, final) -> None:
    """A slice assignment into a dask array argument: the array becomes its new value, as
    dask's own ``x[...] = v`` makes it (its graph replaced; nothing computed)."""
    import dask.array as da

    if not is_dask_array(target):
        np.copyto(target, np.asarray(final), casting="unsafe")
        return
    y = final if is_dask_array(final) else da.asarray(final)
    if y.dtype != target.dtype:
        y = y.astype(target.dtype, casting="unsafe")
    target._meta, target.dask, target._name, target._chunks = y._meta, y.dask, y.name, y.chunks


def describe_kernel(plan: GraphPlan, k: Kernel, gpu: bool = False) -> str:
    """How the Dask target runs kernel ``k`` (for ``explain``; ``gpu``: on CuPy chunks)."""
    if gpu:
        return _describe_on_gpu(plan, k)
    names = plan.names
    progs = programs(plan, k)
    scan = scan_program(plan, k) if k.kind == "scan" else None
    prefix = ""
    if k.kind == "contraction" and product_program(plan, k) is not None:
        prefix = (
            f"where the product's second operand is over {dask_blocks.PANEL_BYTES >> 20} MiB: "
            "dask.array's matmul, then the epilogue per block of rows; else "
        )
    if scan is not None:
        prefix = (
            f"where the input's blocks split axis {scan.axis}: a scan per block, each block's "
            "carry from the one before (a chain of small tasks), the maps after the scan per "
            "block; else "
        )
    if progs.block is not None:
        reads = []
        for v, slab in zip(k.inputs, progs.slabs):
            if slab is None:
                continue
            axis, lo, hi = slab
            halo = f", offsets {lo:+d}..{hi:+d}" if (lo, hi) != (0, 0) else ""
            reads.append(f"{names.get(id(v), '?')} (axis {axis}{halo})")
        whole = [names.get(id(v), "?") for v, s in zip(k.inputs, progs.slabs) if s is None]
        text = f"one task per block of axis {k.chunking.axis}"
        if reads:
            text += "; slabs of " + ", ".join(reads)
        if whole:
            text += "; whole " + ", ".join(whole)
        return prefix + text
    tree = tree_program(plan, k) if k.chunking is None else None
    if tree is not None:
        return (
            f"a tree: partial reductions per block of axis {tree.axis}, combined "
            f"{SPLIT_EVERY} at a time, then the maps after them in one task"
        )
    why = "not chunked" if k.chunking is None else "its blocks do not render as slabs"
    return prefix + f"one task over whole arrays ({why}: the inputs are gathered on one worker)"


def _describe_on_gpu(plan: GraphPlan, k: Kernel) -> str:
    where = "CuPy chunks: the CUDA target's code, compiled on the worker"
    if k.kind == "contraction" and product_program(plan, k, True) is not None:
        return (
            f"{where}: CuPy's matmul per block of rows and columns (the whole of the "
            "contracted axis), then the epilogue's kernel per block of rows"
        )
    progs = programs(plan, k, True)
    if progs.block is not None:
        return f"{where}: one task per block of axis {k.chunking.axis}, its kernel over the block"
    why = (
        "a reduction or scan along every axis it could be split on"
        if k.chunking is None
        else ("its block is not a kernel of its own on the CUDA target")
    )
    return f"{where}: one task over whole arrays ({why})"


def count_tasks(arrays) -> dict[str, int]:
    """PyPTO's kernel tasks per kernel name (``loop``: a time loop's) in the graphs of
    ``arrays`` (dask arrays)."""
    found: dict[str, int] = {}
    seen = set()
    for a in arrays:
        if not is_dask_array(a):
            continue
        for key in dict(a.__dask_graph__()):
            name = key[0] if isinstance(key, tuple) else key
            if key in seen or not isinstance(name, str):
                continue
            if not (name.startswith("pypto-k") or name.startswith("pypto-loop-")):
                continue
            seen.add(key)
            kernel = name.split("-")[1]
            found[kernel] = found.get(kernel, 0) + 1
    return found


__all__ = ["count_tasks", "describe_kernel", "run_graph_dask", "write_back"]
