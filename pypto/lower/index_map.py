"""Index maps: where each element of a view comes from, as data.

A view op (transpose, slices with steps, broadcast, flip, expand_dims/squeeze, reshape,
concatenation) and the operands of an elementwise op read their operand at positions computed
from the position of the result. Each op states that rule once (its registry entry's
``index_map``); chunking, fusion and both targets read these maps instead of testing op names:

* ``IndexMap``: for each operand axis a ``Read``: the operand index is
  ``offset + scale * out[src]`` (``scale`` 0: broadcast along ``src``), or the fixed index
  ``offset`` (``src`` None: an integer index, a squeezed axis). Result axes no read follows are
  new axes (size 1, or broadcast).
* ``Linear``: a reshape (C-order linearization of the result index, delinearized in the
  operand's shape): not an affine map per axis.
* ``Pieces``: a concatenation: along ``axis`` the result's positions ``[start, start + size)``
  are operand ``k``'s positions ``[0, size)``.

One rule, several renderings: ``point`` is the operand index at one result index (the CUDA
target's C expression; the same text is Python), ``interval`` the operand region a result
region reads (the NumPy target's blocks, the CuPy host views), ``chunk_tag`` the operand axis
and offsets a block of the chunk axis reads, ``moves_data`` whether the view moves elements
(fusion's trivial reorders).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..symbolic import Dim, Expr, add, is_nonneg, mul, smax, smin


class Read(NamedTuple):
    """One operand axis: index ``offset + scale * out[src]``, or ``offset`` when src is None."""

    src: int | None
    scale: int = 1
    offset: Dim = 0


@dataclass(frozen=True)
class IndexMap:
    reads: tuple[Read, ...]  # one per operand axis
    out_rank: int

    def new_axes(self) -> tuple[int, ...]:
        """Result axes that no operand axis follows (new axes of size 1, or broadcast)."""
        followed = {r.src for r in self.reads if r.src is not None}
        return tuple(j for j in range(self.out_rank) if j not in followed)

    def fixed(self) -> bool:
        """Every operand index is fixed (one element: ``x[i, j]``)."""
        return all(r.src is None for r in self.reads)

    def permutes(self) -> bool:
        srcs = [r.src for r in self.reads if r.src is not None]
        return srcs != sorted(srcs)


@dataclass(frozen=True)
class Linear:
    """A reshape from ``src`` to ``dst`` (C order)."""

    src: tuple
    dst: tuple


@dataclass(frozen=True)
class Pieces:
    """A concatenation along ``axis`` of operands of these sizes (along that axis)."""

    axis: int
    sizes: tuple
    out_rank: int

    def starts(self) -> list:
        out, start = [], 0
        for size in self.sizes:
            out.append(start)
            start = start + size
        return out

    def piece(self, k: int) -> IndexMap:
        """Operand k's map, valid on its positions."""
        start = self.starts()[k]
        return IndexMap(
            tuple(
                Read(j, 1, -start if j == self.axis else 0) if start != 0 else Read(j)
                for j in range(self.out_rank)
            ),
            self.out_rank,
        )


@dataclass(frozen=True)
class Gather:
    """A gather (ops/gathers.py): the result reads its index operand through ``index``, and its
    data operand through ``data`` except along ``axis``, where the data operand's index is the
    index operand's value there (a negative one counting from the end; ``data`` holds a fixed
    placeholder read on that axis)."""

    data: IndexMap
    index: IndexMap
    axis: int


# -- the maps the ops share -----------------------------------------------------------------------
def identity(rank: int) -> IndexMap:
    return IndexMap(tuple(Read(j) for j in range(rank)), rank)


def broadcast_map(shape, out_shape, same) -> IndexMap:
    """NumPy's broadcasting: an operand of ``shape`` read by a result of ``out_shape``
    (right-aligned; a size-1 axis against a larger one reads index 0)."""
    shift = len(out_shape) - len(shape)
    reads = []
    for i, d in enumerate(shape):
        j = i + shift
        one = d == 1 or same((d,), (1,))
        stretched = one and (j < 0 or not (out_shape[j] == 1 or same((out_shape[j],), (1,))))
        reads.append(Read(j, 0) if stretched else Read(j))
    return IndexMap(tuple(reads), len(out_shape))


def one_element(index) -> bool:
    """Whether a basic index picks one element (integers only: no slice, no new axis)."""
    from ..ops.indexing import SliceSpec

    return not any(isinstance(item, SliceSpec) or item is None for item in index)


def apart(a, b) -> bool:
    """Whether two normalized basic indices of one array select no element in common: on some
    axis the ranges they select provably do not overlap (``A[:, j]`` and ``A[:, j + 1]``)."""
    picks = [[x for x in index if x is not None and x is not Ellipsis] for index in (a, b)]
    for x, y in zip(*picks):
        (lx, hx), (ly, hy) = _span(x), _span(y)
        if is_nonneg(add(add(ly, mul(hx, -1)), -1)) or is_nonneg(add(add(lx, mul(hy, -1)), -1)):
            return True
    return False


def _span(item) -> tuple[Dim, Dim]:
    """The first and last position an index item selects (last < first: none)."""
    if not hasattr(item, "step"):
        return item, item
    far = add(item.start, mul(item.step, add(item.length, -1)))
    return (item.start, far) if item.step > 0 else (far, item.start)


def getitem_map(index, rank: int) -> IndexMap:
    """Basic indexing (a normalized index, see ops/indexing.py) of an array of ``rank``: slices
    follow one result axis each, integers fix an operand axis, None adds a result axis, ``...``
    and the axes the index leaves out are read whole."""
    from ..ops.indexing import SliceSpec

    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    reads, out = [], 0
    for item in index:
        if item is None:
            out += 1
        elif item is Ellipsis:
            for _ in range(rank - consumed):
                reads.append(Read(out))
                out += 1
        elif isinstance(item, SliceSpec):  # (one element: its step does not matter)
            reads.append(Read(out, 1 if item.length == 1 else item.step, item.start))
            out += 1
        else:
            reads.append(Read(None, 0, item))
    while len(reads) < rank:
        reads.append(Read(out))
        out += 1
    return IndexMap(tuple(reads), out)


def compose(outer: IndexMap, inner: IndexMap) -> IndexMap:
    """The map of ``inner``'s operand read through ``outer``: ``outer`` maps the final result
    to ``inner``'s result, ``inner`` that to its operand."""
    reads = []
    for r in inner.reads:
        if r.src is None:
            reads.append(r)
            continue
        mid = outer.reads[r.src]
        offset = r.offset + r.scale * mid.offset
        scale = r.scale * mid.scale
        reads.append(Read(mid.src, scale, offset))
    return IndexMap(tuple(reads), outer.out_rank)


# -- renderings ------------------------------------------------------------------------------------
def affine_code(offset: str, scale: int, i: str) -> str:
    """``offset + scale * i`` as C (and Python) text; ``offset`` already rendered."""
    if scale == 0:
        return offset
    if offset == "0":
        return i if scale == 1 else f"({scale} * ({i}))"
    if scale == 1:
        return f"({offset} + {i})"
    if scale == -1:
        return f"({offset} - ({i}))"
    return f"({offset} + {scale} * ({i}))"


def point(m: IndexMap, idx: tuple, dim) -> tuple[str, ...]:
    """The operand index (one expression per operand axis) at result index ``idx``;
    ``dim`` renders a size or offset."""
    out = []
    for r in m.reads:
        if r.src is None or r.scale == 0:
            out.append(str(r.offset) if isinstance(r.offset, int) else f"({dim(r.offset)})")
        elif r.scale == 1 and str(r.offset).startswith("-"):  # i - start (a piece's index:
            # the size a subtraction names, rather than a parameter for its negation)
            out.append(f"(({idx[r.src]}) - {_dim_code(-r.offset, dim)})")
        else:
            out.append(affine_code(_dim_code(r.offset, dim), r.scale, idx[r.src]))
    return tuple(out)


def _dim_code(d, dim) -> str:
    return str(d) if isinstance(d, int) else dim(d)


def interval(m: IndexMap, region) -> tuple:
    """The operand region (``(lo, hi)`` per operand axis) that result ``region`` reads: every
    point of the region maps inside it (an empty region stays empty)."""
    out = []
    for r in m.reads:
        if r.src is None or r.scale == 0:
            out.append((r.offset, r.offset + 1))
            continue
        lo, hi = region[r.src]
        s, o = r.scale, r.offset
        if s == 1:
            out.append((o + lo, o + hi))
        elif s == -1:
            out.append((o - hi + 1, o - lo + 1))
        elif s > 0:
            first = o + s * lo
            out.append((first, smax(o + s * (hi - 1) + 1, first)))
        else:
            end = o + s * lo + 1
            out.append((smin(o + s * (hi - 1), end), end))
    return tuple(out)


BAD = object()  # a block along the chunk axis would not read a contiguous range


def chunk_tag(m: IndexMap, ax: int, off):
    """What a block along result axis ``ax`` (read at offsets ``off``) reads of the operand:
    ``(operand axis, offsets)``, None where the operand does not vary along ``ax``, BAD where a
    block would not read a contiguous range (a reversed or strided read, two axes at once)."""
    found = None
    for i, r in enumerate(m.reads):
        if r.src != ax or r.scale == 0:
            continue
        if r.scale != 1 or found is not None:
            return BAD
        found = (i, frozenset(o + r.offset for o in off) if r.offset != 0 else off)
    return found


def moves_data(m, in_shape, out_shape, same) -> bool:
    """Whether the view moves elements: not only adding or dropping size-1 axes, or
    broadcasting (then the operand's elements sit where the result's do)."""
    if isinstance(m, Linear):
        return [d for d in m.src if d != 1] != [d for d in m.dst if d != 1]
    if isinstance(m, Pieces):
        return True
    srcs = []
    for r, d in zip(m.reads, in_shape):
        one = d == 1 or same((d,), (1,))
        if r.src is None or r.scale == 0:  # a fixed index, a broadcast read
            if not one:
                return True
            continue
        if not same((out_shape[r.src],), (d,)):  # a slice that changes the length
            return True
        if one:
            continue
        if r.scale != 1 or not _zero(r.offset):
            return True
        srcs.append(r.src)
    return srcs != sorted(srcs)


def broadcasts(m, out_shape, same) -> bool:
    """Whether the view repeats elements (a stretched axis, a new axis larger than 1)."""
    if not isinstance(m, IndexMap):
        return False
    return any(r.src is not None and r.scale == 0 for r in m.reads) or any(
        not (out_shape[j] == 1 or same((out_shape[j],), (1,))) for j in m.new_axes()
    )


def _zero(d) -> bool:
    return d == 0 and not isinstance(d, Expr)


def view_map(e, same):
    """The index map of a reorder equation (its registry entry's rule); None for an op
    without one."""
    from ..registry import REGISTRY

    rule = REGISTRY[e.op].index_map
    return None if rule is None else rule(e, same)


def exact_same(a, b) -> bool:
    """Sizes equal as written (where no facts are asked): the ``same`` of passes that run
    without a Plan's facts."""
    return tuple(a) == tuple(b)


__all__ = [
    "BAD",
    "Gather",
    "IndexMap",
    "Linear",
    "Pieces",
    "Read",
    "affine_code",
    "broadcast_map",
    "broadcasts",
    "chunk_tag",
    "compose",
    "exact_same",
    "getitem_map",
    "identity",
    "interval",
    "moves_data",
    "point",
    "view_map",
]
