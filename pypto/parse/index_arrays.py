"""Index arrays: gathers ``x[idx]``, ``x[:, idx]``, ``x[rows, cols]``, scatters
``x[idx] = v`` (and ``x[idx] op= v``) and ``np.add.at(x, idx, v)``, as graph breaks.

One rule decides what counts (``index_arrays``): integer arrays, or integers known only at run
time, on consecutive axes, every other axis whole (``x[:, i, j]``); NumPy then puts the
indices' broadcast shape where they stand. A gather of one index is NumPy's ``np.take`` (CuPy's
on the CUDA target); of several, the runtime's ``_gather`` (advanced indexing, on the device
arrays there). A scatter is a value: a copy of ``x`` with the write applied (the runtime's
``_scatter``: NumPy's ``__setitem__``, so its cast and its rule for repeated indices, the last
wins), written back into ``x`` as any store is (an argument's caller sees it). ``np.add.at``
(any binary ufunc's ``at``) likewise, repeated indices accumulating (``_ufunc_at``; on the CUDA
target NumPy's, through host copies). The copy costs the whole array per write: the cost model
counts it, so a loop of small scatters runs as the original code.
"""

from __future__ import annotations

import numpy as np

from .. import api
from ..emit.runtime.numpy_helpers import _gather, _scatter, _ufunc_at
from ..ops.host_calls import SLOT
from ..shapes import broadcast_shapes
from .expressions import is_tensor
from .values import View


class IndexArrays:
    def index_arrays(self, t, items):
        """(axis, index tensors) where ``items`` index ``t`` with integer arrays (or run-time
        integers) on consecutive axes from ``axis`` and every other axis whole; else None."""
        tensors = [k for k, i in enumerate(items) if is_tensor(i)]
        if not tensors or len(items) > t.ndim:
            return None
        axis, last = tensors[0], tensors[-1]
        if tensors != list(range(axis, last + 1)):
            return None
        arrays = tuple(self.tensor(items[k]) for k in tensors)
        if any(a.dtype.kind not in "iu" for a in arrays):
            return None
        rest = [i for k, i in enumerate(items) if k not in tensors]
        if not all(isinstance(i, slice) and i == slice(None) for i in rest):
            return None
        return axis, arrays

    def gather(self, t, items):
        """``x[idx]``, ``x[:, idx]``, ``x[i, j]`` (see ``index_arrays``): a graph break with
        the shape NumPy gives (the indices' broadcast shape in place of their axes); None for
        any other index."""
        found = self.index_arrays(t, items)
        if found is None:
            return None
        axis, arrays = found
        shape = self._gathered_shape(t, axis, arrays)
        if len(arrays) == 1:
            fn, name = np.take, "np.take (an index array)"
            template, kwargs = (SLOT, SLOT), (("axis", axis),)
        else:
            fn, name = _gather, "x[i, j] (index arrays)"
            template, kwargs = (SLOT, axis, *(SLOT,) * len(arrays)), ()
        return self._index_call(fn, name, template, kwargs, (t, *arrays), t.dtype, shape)

    def _gathered_shape(self, t, axis, arrays):
        index_shape = broadcast_shapes(self.ctx, *(a.shape for a in arrays))
        return (*t.shape[:axis], *index_shape, *t.shape[axis + len(arrays) :])

    def _index_call(self, fn, name, template, kwargs, operands, dtype, shape):
        attrs = {
            "fn": fn,
            "name": name,
            "template": template,
            "kwargs": kwargs,
            "item": None,
            "array": bool(shape),
            "out_dtype": dtype,
            "out_shape": tuple(shape),
            "sized": (),
        }
        return api.apply("host_call", operands, attrs)

    def scatter(self, base, items, value, node) -> bool:
        """``base[items] = value`` with index arrays: the copy with the write applied, written
        back; False where ``items`` are not index arrays (``index_arrays``)."""
        t = base.tensor
        found = self.index_arrays(t, items)
        if found is None:
            return False
        self._write_at(base, found, value, _scatter, "x[idx] = v", (), node)
        return True

    def ufunc_at(self, ufunc, args, kwargs, node):
        """``np.<ufunc>.at(a, indices, b)``: ``a`` with ``ufunc`` applied at ``indices`` (the
        repeated ones accumulate), written back; None, as NumPy returns."""
        what = f"np.{ufunc.__name__}.at"
        if kwargs or len(args) != 3 or ufunc.nin != 2:
            raise self.unsupported(
                node, f"{what} with these arguments", hint=f"{what}(a, indices, b)", code="PPT104"
            )
        base, index, value = args
        if not isinstance(base, View):
            raise self.unsupported(
                node, f"{what} into a temporary value (the write would be lost)", code="PPT105"
            )
        items = index if isinstance(index, tuple) else (index,)
        items = tuple(self.tensor(i) if is_tensor(i) else i for i in items)
        found = self.index_arrays(base.tensor, items)
        if found is None:
            raise self.unsupported(
                node,
                f"{what} with this index",
                hint="index arrays on consecutive axes, the other axes whole",
                code="PPT105",
            )
        kw = (("ufunc", ufunc.__name__),)
        self._write_at(base, found, value, _ufunc_at, f"{what}", kw, node)

    def _write_at(self, base, found, value, fn, name, kwargs, node):
        axis, arrays = found
        t = base.tensor
        if isinstance(value, View):  # a view reads its base as it is now
            value = self.current(value)
        v = self.as_tensor(value)
        template = (SLOT, SLOT, axis, *(SLOT,) * len(arrays))
        new = self._index_call(fn, name, template, kwargs, (t, v, *arrays), t.dtype, t.shape)
        self.write_through(base, new, node)


__all__ = ["IndexArrays"]
