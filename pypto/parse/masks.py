"""Boolean-mask assignment: ``a[mask] = v`` and ``a[mask] op= v`` as one ``where`` and a store.

NumPy writes ``v`` into the elements of ``a`` where ``mask`` (a boolean array of ``a``'s
leading shape) holds. Its selection ``a[mask]`` has a size the values decide, but the write
does not: ``a`` becomes ``np.where(mask, v, a)`` (``v`` cast as a store casts it; the mask
broadcast over ``a``'s trailing axes), an elementwise op that fuses with what made the mask
and the value. ``v`` must broadcast to the trailing shape ``a.shape[mask.ndim:]`` (a scalar,
a row); a ``v`` with the selection's length along its first axis is NumPy's own assignment, a
graph break (parse/index_arrays.py), except an elementwise expression of reads with the same mask
(``z[m] = z[m] ** 2 + c[m]``, ``a[m] = np.exp(-b[m])``: ``np.where(m, z ** 2 + c, z)``, the
expression over whole arrays; its other operands must be numbers).
``a[mask] op= v`` is ``a op v`` over every element (NumPy's ``same_kind`` cast back), kept where
the mask holds.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as matchers
import numpy as np

from .. import api
from ..emit.runtime.numpy_helpers import _gather
from ..errors import execution_error
from ..ops.host_calls import SLOT
from ..registry import REGISTRY
from ..shapes import Breach, size_of
from ..symbolic import Expr, SymFloat
from .expressions import is_tensor
from .values import View


def _is_mask(tracer, item) -> bool:
    return is_tensor(item) and tracer.as_tensor(item).dtype == np.dtype(bool)


class Masks:
    def mask_of(self, index):  # (a mask among other indices: masked_read)
        """The boolean tensor ``index`` is (a lone mask), else None."""
        item = index[0] if isinstance(index, tuple) and len(index) == 1 else index
        if is_tensor(item) and not isinstance(item, tuple):
            t = self.as_tensor(item)
            if t.dtype == np.dtype(bool) and t.ndim > 0:
                return t
        return None

    def masked_copy(self, node) -> bool:
        """``a[m] = b[m]``, the same mask on both sides (its code, evaluated once): ``a`` where
        ``m`` holds takes ``b``'s elements there, ``np.where(m, b, a)``. False (nothing
        evaluated but the target's index) where the statement is not one."""
        if len(node.targets) != 1:
            return False
        t, v = node.targets[0].target, node.value
        if not isinstance(t, cst.Subscript):
            return False
        reads = _masked_reads(v, t.slice)
        if reads is None:
            return False
        base = self.eval(t.value)
        mask = self.mask_of(self.index_of(t)) if isinstance(base, View) else None
        if mask is None:
            return False
        if base.tensor.dtype.kind in "iub" and matchers.findall(v, matchers.Power()):
            return False  # (an integer to a negative power raises: NumPy's raises only if selected)
        for r in reads:  # each X[mask]: X of the target's rank, the mask X's leading shape
            x = self.eval(r.value)
            if not is_tensor(x) or self.as_tensor(x).ndim != base.tensor.ndim:
                return False
            self._mask_fits(mask, self.as_tensor(x))
        for name in _plain_names(v, reads):  # other operands: numbers (a scalar broadcasts
            value = self.eval(name)  # over the selection; an array would not: NumPy's error)
            if is_tensor(value) and self.as_tensor(value).ndim:
                return False
        self.unmasked |= {id(r) for r in reads}
        try:
            b = self.eval(v)  # elementwise over whole arrays: the selection's elements among them
        finally:
            self.unmasked -= {id(r) for r in reads}
        if not is_tensor(b) or self.as_tensor(b).ndim == 0:
            b = REGISTRY["broadcast_to"].api(self.tensor(b), tuple(base.tensor.shape))
        if not is_tensor(b) or self.as_tensor(b).ndim != base.tensor.ndim:
            raise self.unsupported(
                node,
                "a boolean-mask copy between arrays of different ranks",
                hint="write np.where(mask, value, x) with value of x's shape",
                code="PPT105",
            )
        self._mask_fits(mask, self.as_tensor(b))  # b[m]: NumPy's IndexError otherwise
        self.store_mask(base, mask, b, t, whole=True)
        return True

    def masked_read(self, t, index):
        """``x[mask]``, ``A[:, mask]``, ``A[mask, 0]``, ``A[i, mask]`` read (not in a masked
        assignment): the selected elements in NumPy's order, a graph break (the runtime's
        ``_gather`` of the mask and the integers next to it: NumPy's advanced indexing, CuPy's
        on the device arrays) whose length the values decide: a size symbol bound when it has
        run (function.Bind). None where ``index`` is not one boolean mask, integers beside it,
        and every other axis whole."""
        mask = self.mask_of(index)
        if mask is not None:
            return self._selection(t, 0, (mask,), "x[mask]")
        items = index if isinstance(index, tuple) else (index,)
        masks = [k for k, i in enumerate(items) if _is_mask(self, i)]
        if len(masks) != 1 or len(items) > t.ndim:
            return None
        lo = hi = masks[0]
        while lo > 0 and self._integer(items[lo - 1]):
            lo -= 1
        while hi + 1 < len(items) and self._integer(items[hi + 1]):
            hi += 1
        rest = items[:lo] + items[hi + 1 :]
        if not all(isinstance(i, slice) and i == slice(None) for i in rest):
            return None
        group = tuple(self.as_tensor(i) if is_tensor(i) else i for i in items[lo : hi + 1])
        return self._selection(t, lo, group, "x[:, mask]")

    def _integer(self, item) -> bool:
        """An integer index: a number, a size, or an integer known only at run time."""
        if is_tensor(item):
            a = self.as_tensor(item)
            return a.ndim == 0 and a.dtype.kind in "iu"
        return isinstance(item, (int, np.integer, Expr)) and not isinstance(item, bool)

    def _selection(self, t, axis: int, group: tuple, name):
        """``t[:, ..., *group]`` (``group``: one mask and integers) from ``axis``: a sized
        graph break."""
        (k,) = [j for j, i in enumerate(group) if _is_mask(self, i)]
        mask = group[k]
        self._mask_fits(mask, t, axis + k)
        covered = mask.ndim + len(group) - 1
        shape = (*t.shape[:axis], self.size_symbol(), *t.shape[axis + covered :])
        operands = [i for i in group if isinstance(i, api.Tensor)]
        marks = tuple(SLOT if isinstance(i, api.Tensor) else i for i in group)
        sized = ((axis, size_of(mask.shape)),)
        out = self.index_call(
            _gather, name, (SLOT, axis, *marks), (), (t, *operands), t.dtype, shape, sized
        )
        self.bind_sized(out)
        return out

    def _mask_fits(self, mask, a, axis: int = 0) -> None:
        if mask.ndim + axis > a.ndim:
            raise execution_error(
                IndexError(
                    f"too many indices for array: array is {a.ndim}-dimensional, but "
                    f"{mask.ndim} were indexed"
                ),
                "too many indices for array",
                site=self.site,
            )
        for k, (m, d) in enumerate(zip(mask.shape, a.shape[axis:])):
            text = (
                f"boolean index did not match indexed array along axis {axis + k}; size of axis "
                "is {} but size of corresponding boolean axis is {}"
            )
            breach = Breach(IndexError, text, (d, m), site=self.site)
            if not self.ctx.checked(breach, self.ctx.eq, m, d):
                raise breach.exception([self.ctx.show_dim(d), self.ctx.show_dim(m)])

    def store_mask(self, base: View, mask, value, node, op=None, whole=False) -> None:
        """``base[mask] = value`` (``op``: ``base[mask] op= value``; ``whole``: ``value`` is
        the array the selection is taken from, of ``base``'s leading shape)."""
        a = base.tensor
        self._mask_fits(mask, a)
        rest = a.ndim - mask.ndim
        if is_tensor(value) and self.as_tensor(value).ndim > rest and not whole:
            # a value with an axis for the selected elements (as long as the selection): NumPy's
            # own assignment, a graph break (parse/index_arrays.py); op=: the selection read
            if op is not None:
                value = self.in_place(op, self.masked_read(a, mask), value, node)
            return self.write_at(base, (0, (mask,)), value, "x[mask] = v", node)
        if op is not None:
            new = self.in_place(op, base, value, node)
        else:
            if isinstance(value, View):
                value = self.current(value)
            value = self.operand(value)
            stored = REGISTRY["store"].api(a, value, (Ellipsis,))  # a store's checks
            run_time = isinstance(value, (Expr, SymFloat)) or (  # (a Python number: a NumPy
                is_tensor(value) and self.as_tensor(value)._atom.type.weak  # scalar casts)
            )
            if run_time:  # a number known at run
                new = stored  # time: NumPy converts it as it stores it (OverflowError, NaN)
            else:  # (else the store is dead code, its checks made when traced)
                new = api.apply("astype", (value,), {"dtype": a.dtype})  # cast as stored
        m = REGISTRY["reshape"].api(mask, tuple(mask.shape) + (1,) * rest)
        picked = api.apply("where", (m, new, a))
        if picked.dtype != a.dtype:
            picked = picked.astype(a.dtype)
        region = REGISTRY["store"].api(a, picked, (Ellipsis,))
        self.write_through(base, region, node)


_ELEMENTWISE = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
    cst.Name,
    cst.Attribute,
)


def _masked_reads(value, mask_slice):
    """The ``X[mask]`` reads of ``value``, an elementwise expression of such reads, numbers,
    names and calls of NumPy ufuncs by attribute (``np.exp``); None for anything else (then
    ``a[mask] = value`` is not a masked copy)."""
    reads = []

    def walk(n) -> bool:
        if isinstance(n, cst.Subscript):
            same = len(n.slice) == len(mask_slice) and all(
                x.deep_equals(y) for x, y in zip(n.slice, mask_slice)
            )
            if same:  # (X itself is any expression, evaluated whole as NumPy does)
                reads.append(n)
                return True
            return False
        if isinstance(n, cst.Call):
            if not isinstance(n.func, cst.Attribute) or any(a.keyword or a.star for a in n.args):
                return False
            fn = getattr(np, n.func.attr.value, None)
            return isinstance(fn, np.ufunc) and all(walk(a.value) for a in n.args)
        if isinstance(n, cst.BinaryOperation):
            return walk(n.left) and walk(n.right)
        if isinstance(n, cst.UnaryOperation):
            return walk(n.expression)
        return isinstance(n, _ELEMENTWISE)

    return reads if walk(value) and reads else None


def _plain_names(value, reads):
    """The names ``value`` reads outside its masked reads and callees."""
    found = []
    inside = {id(r) for r in reads}

    def walk(n):
        if id(n) in inside:
            return
        if isinstance(n, cst.Call):
            for a in n.args:
                walk(a.value)
        elif isinstance(n, cst.BinaryOperation):
            walk(n.left)
            walk(n.right)
        elif isinstance(n, cst.UnaryOperation):
            walk(n.expression)
        elif isinstance(n, cst.Name):
            found.append(n)

    walk(value)
    return found


__all__ = ["Masks"]
