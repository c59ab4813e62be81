"""What a Dask worker runs: the trampoline every PyPTO task calls.

A task is ``(run, program, arguments, *arrays)``: ``run`` is this module's function (pickled by
reference, a few dozen bytes), ``program`` a key of the graph whose value is the kernel's
``Program`` (its NumPy source; Dask moves it to a worker once, like any data), ``arguments``
the block's origins and the sizes (``Args``: Dask does not look inside it for keys). The
source is compiled once per worker process (cached by its hash).
"""

from __future__ import annotations

import numpy as np

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

        namespace = _run(program.source, "dask-{}", program.names, program.runtime)
        fn = _COMPILED[program.key] = namespace[program.entry]
    if program.runtime != "cuda_helpers":
        return fn(*arrays, **args.kw)
    # CuPy chunks: the CUDA target's host function, on the device (NumPy inputs moved there)
    kw = dict(args.kw)
    cp = _cupy(kw.pop("_cp"))
    arrays = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in arrays]
    return fn(cp, *arrays, **kw)


def to_device(x, spec):
    """A NumPy block on the GPU of the CuPy module ``spec`` names."""
    return _cupy(spec).asarray(x)


def matmul(a, b, spec):
    """A block of a product on the GPU (CuPy's matmul: cuBLAS)."""
    cp = _cupy(spec)
    return cp.matmul(cp.asarray(a), cp.asarray(b))


def _cupy(spec):
    """The CuPy module a task names (``"cupy"``), or the stand-in it carries."""
    if spec == "cupy":
        import cupy

        return cupy
    return spec


def combine(reductions, *partials):
    """Partial reductions (tuples, one value per reduction) combined: each reduction's
    ``combine`` ufunc over the split axis, kept dims."""
    out = []
    for i, r in enumerate(reductions.kw["reductions"]):
        parts = [p[i] for p in partials]
        axis = r.axes[0]
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)
        out.append(getattr(np, r.combine).reduce(whole, axis=axis, keepdims=True))
    return tuple(out)


def finish(program, args: Args, combined, *arrays):
    """The reductions' values (a mean divided by its count, reduced dims dropped unless
    kept), then the maps after them (``program``, or None)."""
    values = []
    for r, count, cast, p in zip(
        args.kw["reductions"], args.kw["counts"], args.kw["casts"], combined
    ):
        if count is not None:
            p = np.true_divide(p, count)
        if cast is not None:
            p = p.astype(cast)
        values.append(p if r.keepdims else np.squeeze(p, axis=r.axes))
    made = ()
    if program is not None:
        ins, extra = [], iter(arrays)
        for kind, i in args.kw["wiring"]:
            ins.append(values[i] if kind == "reduction" else next(extra))
        made = run(program, Args(args.kw["symbols"]), *ins)
    return tuple(values[i] if kind == "reduction" else made[i] for kind, i in args.kw["outputs"])


def scan_carry(args: Args, carry, partial):
    """What a scan carries into the next block: ``carry`` stepped with the last row of this
    block's scan (``partial``: a task's results, the scan first)."""
    axis = args.kw["axis"]
    last = np.take(partial[0], [partial[0].shape[axis] - 1], axis=axis)
    return last if carry is None else getattr(np, args.kw["step"])(carry, last)


def scan_finish(program, args: Args, carry, partial, *arrays):
    """A block's scan values (its own scan stepped with what the blocks before carry), then
    the maps after the scan (``program`` on slabs: the scan's value in its slot), or them."""
    local = partial[0]
    value = local if carry is None else getattr(np, args.kw["step"])(carry, local)
    if program is None:
        return (value,)
    it = iter(arrays)
    ins = [value if slot is None else next(it) for slot in args.kw["slots"]]
    return run(program, Args(args.kw["final"]), *ins)


_GRAPHS: dict[str, object] = {}


def compiled_graph(program: dict):
    """A graph's NumPy program (``compile_graph(plan).program``), loaded once per worker."""
    import hashlib

    key = hashlib.sha256(program["source"].encode()).hexdigest()
    fn = _GRAPHS.get(key)
    if fn is None:
        from .program import load_graph

        fn = _GRAPHS[key] = load_graph(program)
    return fn


def pick(results, i: int):
    """Output ``i`` of a task that makes several."""
    return results[i]


__all__ = [
    "Args",
    "combine",
    "compiled_graph",
    "finish",
    "matmul",
    "pick",
    "run",
    "scan_carry",
    "scan_finish",
    "to_device",
]
