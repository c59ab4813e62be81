"""Index values known only at run time: gathers ``x[idx]``, ``x[:, idx]``, ``x[rows, cols]``,
scatters ``x[idx] = v`` (and ``x[idx] op= v``), ``np.add.at(x, idx, v)`` and slices with run-time
bounds ``x[p[i]:p[i + 1]]``: graph breaks, except the gather of one index array.

One rule decides what counts (``index_arrays``): integer arrays, or integers known only at run
time, on consecutive axes, every other axis whole (``x[:, i, j]``); NumPy then puts the
indices' broadcast shape where they stand. A gather of one index is the native ``take`` op
(ops/gathers.py: fused with what reads it); of several, the runtime's ``_gather`` (advanced
indexing, on the device arrays there, its bounds checked: CuPy wraps them around). A scatter
is a value: a copy of ``x`` with the write applied (the runtime's ``_scatter``: NumPy's
``__setitem__``, so its cast and its rule for repeated indices, the last wins), written back
into ``x`` as any store is (an argument's caller sees it). ``np.add.at`` (any binary ufunc's
``at``) likewise, repeated indices accumulating (``_ufunc_at``; on the CUDA
target NumPy's, through host copies). The copy costs the whole array per write: the cost model
counts it, so a loop of small scatters runs as the original code.

A slice whose start or stop is an integer known only at run time has a length the values decide:
``_slice_read`` (a graph break) whose result's length is a size symbol bound when it has run
(function.Bind). NumPy's slice is a view: here the read is a view step of the array's name
(``run_time_slice``), so a name holding it is read again after a write into the array; a write
``x[a:b] = v`` (the other axes whole) is ``_slice_write``, a copy with the write, written back;
a write through such a view held by a name, or with other indices, is refused (PPT105).
"""

from __future__ import annotations

from .. import api
from ..emit.runtime.numpy_helpers import (
    _gather,
    _scatter,
    _slice_read,
    _slice_write,
    _ufunc_at,
)
from ..errors import UnsupportedError
from ..ops.host_calls import SLOT
from ..registry import REGISTRY
from ..shapes import broadcast_shapes
from .expressions import is_size, is_tensor, run_time_slice
from .values import View, ViewOp


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

    def basic_first(self, t, items):
        """``x[idx, 1:3]``, ``A[0, idx]``, ``x[m, 2:]``: index arrays (or a mask) with slices
        and integers on other axes, as the basic index first (a view: the slices, the
        integers) and then the arrays with those axes whole: (basic index, the rest, the
        permutation NumPy then applies or None). NumPy's rule: the integers count with the
        arrays; where these do not stand together the indices' axes go first. None where
        ``items`` have no array beside a basic index, or None / ``...``."""
        arrays = [k for k, i in enumerate(items) if is_tensor(i)]
        if not arrays or len(items) > t.ndim or any(i is None or i is Ellipsis for i in items):
            return None
        if any(
            self.tensor(items[k]).dtype == bool and self.tensor(items[k]).ndim != 1 for k in arrays
        ):
            return None  # (a mask over several axes, or none: one item, other than one axis)
        if not all(is_tensor(i) or isinstance(i, slice) or is_size(i) for i in items):
            return None  # (a list, an array constant: not split here)
        ints = [k for k, i in enumerate(items) if is_size(i)]
        sliced = [k for k, i in enumerate(items) if isinstance(i, slice) and i != slice(None)]
        if not ints and not sliced:
            return None
        if any(isinstance(items[k], slice) for k in range(arrays[0], arrays[-1] + 1)):
            return None  # (arrays apart: not one gather)
        basic = tuple(slice(None) if k in arrays else i for k, i in enumerate(items))
        rest = tuple(slice(None) if k in sliced else i for k, i in enumerate(items))
        rest = tuple(i for k, i in enumerate(rest) if k not in ints)
        group = sorted(arrays + ints)
        front = None
        at = sum(1 for k in range(arrays[0]) if k not in ints)  # where the gather puts them
        if group != list(range(group[0], group[-1] + 1)) and at:
            width = self._index_rank(items, arrays)
            rank = t.ndim - len(ints) - len(arrays) + width
            front = (*range(at, at + width), *(a for a in range(rank) if not at <= a < at + width))
        return basic, rest, front

    def _index_rank(self, items, arrays) -> int:
        """The rank the index arrays (or a mask: one axis) give the result."""
        if len(arrays) == 1 and self.tensor(items[arrays[0]]).dtype == bool:
            return 1
        return max(self.tensor(items[k]).ndim for k in arrays)

    def gather(self, t, items):
        """``x[idx]``, ``x[:, idx]``, ``x[i, j]`` (see ``index_arrays``): a graph break with
        the shape NumPy gives (the indices' broadcast shape in place of their axes); None for
        any other index."""
        found = self.index_arrays(t, items)
        if found is None:
            return None
        axis, arrays = found
        if len(arrays) == 1:  # the native gather (ops/gathers.py)
            return REGISTRY["take"].api(t, arrays[0], axis)
        shape = self._gathered_shape(t, axis, arrays)
        template = (SLOT, axis, *(SLOT,) * len(arrays))
        name = "x[i, j] (index arrays)"
        return self.index_call(_gather, name, template, (), (t, *arrays), t.dtype, shape)

    def _gathered_shape(self, t, axis, arrays):
        index_shape = broadcast_shapes(self.ctx, *(a.shape for a in arrays))
        return (*t.shape[:axis], *index_shape, *t.shape[axis + len(arrays) :])

    # -- slices with run-time bounds ------------------------------------------------------------
    def _run_time_axis(self, items, what: str) -> int:
        dyn = [k for k, i in enumerate(items) if run_time_slice(i)]
        if len(dyn) > 1 or any(i is None or i is Ellipsis for i in items[: dyn[0]]):
            raise UnsupportedError(
                f"{what} with several run-time slices, or after None or ...",
                hint="slice one axis at a time",
                site=self.site,
                code="PPT101" if what == "a read" else "PPT105",
            )
        return dyn[0]

    def slice_at_run_time(self, base, items):
        """``x[..., p[i]:p[i + 1], ...]``: the run-time slice (``read_slice``), then the other
        indices; a view step of ``base``'s name where it is one."""
        t = self.tensor(base)
        axis = self._run_time_axis(items, "a read")
        s = items[axis]
        rest = items[:axis] + (slice(None),) + items[axis + 1 :]
        whole = all(isinstance(i, slice) and i == slice(None) for i in rest)
        if isinstance(base, View) and self.is_array(base.base, t):
            step = ViewOp("run_time_slice", (axis, s))
            view = View(self.read_slice(t, axis, s), base.base, base.ops + (step,))
            return view if whole else self.getitem(view, rest)
        sliced = self.read_slice(t, axis, s)
        return sliced if whole else self.getitem(sliced, rest)

    def _slice_operands(self, s, axis):
        operands, template = [], [axis]
        for b in (s.start, s.stop):
            if isinstance(b, api.Tensor):
                operands.append(b)
                template.append(SLOT)
            else:
                template.append(b)
        return operands, (*template, s.step)

    def read_slice(self, t, axis: int, s: slice):
        """``t[:, ..., s]`` along ``axis``: a graph break whose length along it is a new size
        symbol, bound when it has run."""
        operands, template = self._slice_operands(s, axis)
        n = t.shape[axis]
        shape = (*t.shape[:axis], self.size_symbol(), *t.shape[axis + 1 :])
        out = self.index_call(
            _slice_read,
            "x[a:b] (run-time bounds)",
            (SLOT, *template),
            (),
            (t, *operands),
            t.dtype,
            shape,
            sized=((axis, n),),
        )
        self.bind_sized(out)
        return out

    def write_slice(self, base, items, value, node) -> None:
        """``x[..., a:b, ...] = value`` with a run-time bound, the other axes whole."""
        axis = self._run_time_axis(items, "a write")
        others = [i for k, i in enumerate(items) if k != axis]
        if base.ops or not all(isinstance(i, slice) and i == slice(None) for i in others):
            raise self.unsupported(
                node,
                "a write through a slice with run-time bounds and other indices or views",
                hint="write x[a:b] = v into the array itself (the other axes whole)",
                code="PPT105",
            )
        t = base.tensor
        region = self.read_slice(t, axis, items[axis])  # (the value fits it: NumPy's checks)
        t = base.tensor if base.tensor._builder is self.builder else self.read_ref(base.base)
        if isinstance(value, View):
            value = self.current(value)
        stored = REGISTRY["store"].api(region, self.operand(value), (Ellipsis,))
        operands, template = self._slice_operands(items[axis], axis)
        new = self.index_call(
            _slice_write,
            "x[a:b] = v (run-time bounds)",
            (SLOT, SLOT, *template),
            (),
            (t, stored, *operands),
            t.dtype,
            t.shape,
        )
        self.write_ref(base.base, new)

    def index_call(self, fn, name, template, kwargs, operands, dtype, shape, sized=()):
        """A graph break of a runtime index helper ``fn`` (host_call's attributes)."""
        attrs = {
            "fn": fn,
            "name": name,
            "template": template,
            "kwargs": kwargs,
            "item": None,
            "array": bool(shape),
            "out_dtype": dtype,
            "out_shape": tuple(shape),
            "sized": sized,
        }
        return api.apply("host_call", operands, attrs)

    def scatter(self, base, items, value, node) -> bool:
        """``base[items] = value`` with index arrays: the copy with the write applied, written
        back; False where ``items`` are not index arrays (``index_arrays``)."""
        t = base.tensor
        found = self.index_arrays(t, items)
        if found is None:
            return False
        self.write_at(base, found, value, "x[idx] = v", node)
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
        self.write_at(base, found, value, what, node, _ufunc_at, kw)

    def write_at(self, base, found, value, name, node, fn=_scatter, kwargs=()):
        """``base`` becomes a copy of itself with the write ``fn`` (``_scatter``: NumPy's
        ``__setitem__``) of ``value`` at ``found`` (axis, index arrays) applied."""
        axis, arrays = found
        t = base.tensor
        if isinstance(value, View):  # a view reads its base as it is now
            value = self.current(value)
        v = self.as_tensor(value)
        template = (SLOT, SLOT, axis, *(SLOT,) * len(arrays))
        new = self.index_call(fn, name, template, kwargs, (t, v, *arrays), t.dtype, t.shape)
        self.write_through(base, new, node)


__all__ = ["IndexArrays"]
