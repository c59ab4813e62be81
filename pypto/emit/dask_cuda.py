"""CuPy chunks: a kernel's task code on the CUDA target (the Dask target, emit/dask_target.py).

A dask array whose chunks are GPU arrays (its ``_meta`` a CuPy array) runs each kernel's tasks
as the CUDA target's code, shipped as source and compiled once per worker process (a CuPy
``RawKernel`` compiled on the client does not survive pickling, cupy/cupy#4044):

* ``block_program``: one block ``_s:_e`` of a chunked kernel's chunk axis, on the same slabs and
  origins as the NumPy block program (emit/dask_blocks.py): the CUDA target's kernel for the
  sub-plan, its grid over the block's rows (``CudaGraphEmitter.span``), every array addressed
  from where it starts (``CudaGraphEmitter.origins``); the outputs are the block's rows.
* ``whole_program``: the kernel's sub-plan over whole arrays (the CUDA target's host function).

A task's arguments name the CuPy module (``"cupy"``, or the CUDA emulator's stand-in, which
pickles by its settings): ``dask_runtime.run`` hands NumPy inputs to the device.
"""

from __future__ import annotations

from ..errors import InternalError, UnsupportedError
from ..passes.plan import GraphPlan
from ..symbolic import Sym
from .common import dtype_code, ident
from .cuda_kernels import NotInKernel
from .cuda_target import CudaGraphEmitter
from .dask_program import NotBlockable, Program, digest

_S, _E = Sym("_s"), Sym("_e")
RUNTIME = "cuda_helpers"


class CudaBlockEmitter(CudaGraphEmitter):
    """The CUDA target's code for one block of a chunked kernel, on slabs (module doc)."""

    def __init__(self, sub: GraphPlan, name: str, slabs, outs, symbols):
        super().__init__(sub, name)
        k = sub.kernels[0]
        self.k, self.outs, self.symbols = k, outs, list(symbols)
        self.span = (k.chunking.axis, _S, _E)
        self.tags = k.chunking.follows
        by_id = {id(v): s for v, s in zip(k.inputs, slabs)}
        self.slabs = {}
        for j, v in enumerate(sub.graph.inputs):
            slab = by_id[id(v)]
            if slab is not None:
                self.origins[id(v)] = (slab[0], Sym(f"_o{j}"))
                self.slabs[id(v)] = j
        for j, (v, (axis, start)) in enumerate(zip(k.outputs, outs)):
            self.origins[id(v)] = (axis, _S if start is None else Sym(f"_p{j}"))
        if any(v.type.rank for e in k.body.eqns if id(e.out) in self.whole_of(k) for v in [e.out]):
            raise NotBlockable("an array the host computes whole (a product, a user operator)")

    def chunk_axis(self, k, v, stores):
        return k.chunking.axis if id(v) in stores else self.origins[id(v)][0]

    def buffer_shape(self, v) -> str:
        """A value the block keeps (a scan's, read by the maps after it): its block's rows."""
        tag = self.tags.get(id(v))
        if tag is None or tuple(tag[1]) != (0,):
            raise NotBlockable("a scratch value that does not follow the block")
        self.origins[id(v)] = (tag[0], _S)
        return self._rows(v, tag[0], _E - _S)

    def few_long(self, lines, length):
        return False  # (a block's lines: one thread each)

    def _rows(self, v, axis, n) -> str:
        return self.shape(tuple(n if a == axis else d for a, d in enumerate(v.type.shape)))

    def _allocate(self, k, v, by_name, prod) -> list[str]:
        name = self.names[id(v)]
        j = list(k.outputs).index(v)
        axis = self.outs[j][0]
        s = next((x for x in k.stores if x.out is v), None)
        if s is None:
            rows = self._rows(v, axis, _E - _S)
            return [f"{name} = cp.empty({rows}, {dtype_code(v.type.dtype)})"]
        base = s.base
        if base.type.dtype != v.type.dtype or base.type.rank != v.type.rank:
            raise NotBlockable("a slice assignment whose base is converted")
        p, q = f"_p{j}", f"_q{j}"
        found = self.origins.get(id(base))
        if found is not None and found[0] != axis:
            raise NotBlockable("a slice assignment's base held along another axis")
        if found is not None:
            p, q = f"{p} - {found[1]}", f"{q} - {found[1]}"
        index = ", ".join(f"{p}:{q}" if a == axis else ":" for a in range(v.type.rank))
        return [f"{name} = {self.names[id(base)]}[{index}].copy()"]

    def render(self) -> tuple[str, str]:
        g, k = self.graph, self.k
        keys = ["_s", "_e", *(f"_o{j}" for j in sorted(self.slabs.values()))]
        for j, (_axis, start) in enumerate(self.outs):
            if start is not None:
                keys += [f"_p{j}", f"_q{j}"]
        keys += [ident(s) for s in self.symbols]
        params = ", ".join(self.names[id(v)] for v in g.inputs)
        head = f"def {self.name}(cp, {params + ', ' if params else ''}*, {', '.join(keys)}):"
        body = []
        for i, (v, array) in enumerate(g.consts):
            self.consts[f"_c{i}"] = array
            body.append(f"{self.names[id(v)]} = _const(cp, {self.name}_consts, '_c{i}')")
        by_name = {b.name: b for b in self.plan.buffers}
        body += self._kernel(k, f"{self.name}_k0", by_name)
        results = ", ".join(self.names[id(v)] for v in k.outputs)
        body.append(f"return ({results},)")
        host = "\n".join([head, *("    " + line for line in body)]) + "\n"
        return "\n" + "\n".join(self.kernels), host


def _program(emitter: CudaGraphEmitter, symbols=None):
    """The emitter's module (its kernels' source, constants, host function) as a Program;
    ``symbols`` None: the sizes its host function takes as keywords (``emitter.free``)."""
    kernels, host = emitter.render()
    source = emitter.module_source(kernels)
    names = {}
    if emitter.user_ops:  # ops the host code calls through its table (pickled by reference)
        names["_user_ops"] = dict(emitter.user_ops)
        source += f"{emitter.impl_name}.update(_user_ops)\n"
    source += host
    key = digest(source, emitter.consts, emitter.user_ops)
    if symbols is None:
        symbols = [(ident(s), s) for s in emitter.free]
    return Program(key, source, emitter.name, names, tuple(symbols), RUNTIME)


def block_program(sub: GraphPlan, name: str, slabs, outs, symbols):
    """The CUDA target's block program of ``sub``'s kernel (slabs and outputs as the NumPy
    block program's); NotBlockable where the CUDA target does not write it so."""
    try:
        emitter = CudaBlockEmitter(sub, f"{ident(name)}_cuda_block", slabs, outs, symbols)
        return _program(emitter, [(ident(s), s) for s in symbols])
    except (NotInKernel, UnsupportedError, InternalError) as e:
        raise NotBlockable(f"the CUDA target does not write the block: {e}") from None


def whole_program(sub: GraphPlan, name: str):
    """The CUDA target's host function for ``sub`` over whole arrays."""
    return _program(CudaGraphEmitter(sub, f"{ident(name)}_cuda_whole"))


def module_spec(cp):
    """What a task names its CuPy module by: ``"cupy"``, or the object (a stand-in)."""
    return "cupy" if getattr(cp, "__name__", None) == "cupy" else cp


def meta_like(ref, rank: int, dtype):
    """An empty array of ``ref``'s kind (a CuPy array: NumPy's functions dispatch to it)."""
    import numpy as np

    return np.empty_like(ref, dtype=dtype, shape=(0,) * rank)


__all__ = ["CudaBlockEmitter", "block_program", "meta_like", "module_spec", "whole_program"]
