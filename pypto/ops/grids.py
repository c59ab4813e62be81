"""Coordinate grids: ``np.meshgrid``, ``np.indices``, ``np.mgrid[...]`` and ``np.ogrid[...]``.

Composites of ``arange``, ``reshape``, ``broadcast_to`` and ``stack``, following NumPy's own
code (``nd_grid.__getitem__``, ``indices``, ``meshgrid``) step for step, so dtypes and values
are NumPy's: ``mgrid[a:b:s]`` is ``indices(sizes, typ) * s + a`` with ``typ`` the result type
of the bounds, a complex step ``nj`` asks for n points from a to b inclusive. Sizes may be
symbolic where the bounds are integers. ``ppto.mgrid`` / ``ppto.ogrid`` index like NumPy's.
"""

from __future__ import annotations

import math

import numpy as np

from ..api import apply, lift
from ..dtypes import to_dtype
from ..errors import ArgumentError, ShapeError, UnsupportedError
from ..symbolic import Expr
from .composites import _composite, stack
from .creation import arange
from .reorders import broadcast_to, reshape


def _axis_values(n, k: int, ndim: int):
    """``n`` (a vector) as axis ``k`` of ``ndim`` axes, the others of size 1."""
    return reshape(n, tuple(-1 if i == k else 1 for i in range(ndim)))


# -- indices --------------------------------------------------------------------------------------
def indices(dimensions, dtype=int, sparse=False):
    """The index of every position of a grid of ``dimensions``, one array per axis (stacked
    along a new first axis; ``sparse``: a tuple of broadcastable vectors)."""
    if not isinstance(dimensions, (tuple, list)):
        raise ArgumentError(f"indices needs a sequence of sizes, not {dimensions!r}")
    attrs = {"dimensions": tuple(dimensions), "dtype": to_dtype(dtype, "dtype")}
    if sparse:
        return tuple(apply("indices", (), {**attrs, "part": i}) for i in range(len(dimensions)))
    return apply("indices", (), {**attrs, "part": None})


def _indices(dimensions, dtype, part):
    n = len(dimensions)
    if part is not None:
        return _axis_values(arange(dimensions[part], dtype=dtype), part, n)
    axes = [_axis_values(arange(d, dtype=dtype), i, n) for i, d in enumerate(dimensions)]
    return _dense(axes, tuple(dimensions), dtype)


def _dense(axes, shape, dtype):
    """The grid's axes broadcast to its shape, stacked along a new first axis."""
    if not axes:  # np.indices(()): an empty (0,) array
        return arange(0, dtype=dtype)
    return stack([broadcast_to(a, shape) for a in axes])


def _indices_ref(dimensions, dtype, part):
    if part is None:
        return np.indices(dimensions, dtype)
    return np.indices(dimensions, dtype, sparse=True)[part]


_composite("indices", indices, _indices, _indices_ref, (np.indices,))


# -- mgrid / ogrid --------------------------------------------------------------------------------
def _bounds(s):
    if not isinstance(s, slice):
        raise ArgumentError(f"mgrid/ogrid index a slice at a time, not {s!r}")
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    return start, s.stop, step


def grid(key, sparse: bool):
    """``np.mgrid[key]`` (``sparse``: ``np.ogrid[key]``)."""
    single = not isinstance(key, tuple)
    items = (key,) if single else key
    for s in items:
        _bounds(s)
        for b in (s.start, s.stop, s.step):
            if b is not None and not isinstance(b, (int, float, complex, np.number, Expr)):
                raise UnsupportedError(
                    "mgrid/ogrid bounds known only at run time",
                    hint="use sizes, integer parameters or constants",
                )
    attrs = {"key": tuple((s.start, s.stop, s.step) for s in items), "single": single}
    if sparse and not single:
        return tuple(apply("nd_grid", (), {**attrs, "part": i}) for i in range(len(items)))
    return apply("nd_grid", (), {**attrs, "part": None})


def _number(v):
    return 1 if isinstance(v, Expr) else v


def _complex(step) -> bool:
    return isinstance(step, (complex, np.complexfloating))


def _nd_grid(key, single, part):
    items = [_bounds(slice(*t)) for t in key]
    if single:
        start, stop, step = items[0]
        if not _complex(step):
            return arange(start, stop, step)
        length = int(abs(step))
        mult = (stop - start) / float(length - 1) if length != 1 else length
        typ = np.result_type(_number(start), _number(stop), abs(step))
        return arange(0, length, 1, dtype=typ) * mult + start
    sizes, num_list = [], [0]
    for start, stop, step in items:
        if _complex(step):
            if any(isinstance(b, Expr) for b in (start, stop)):
                raise UnsupportedError("mgrid with a complex step and symbolic bounds")
            step = abs(step)
            sizes.append(int(step))
        elif any(isinstance(b, Expr) for b in (start, stop, step)):
            sizes.append(arange(start, stop, step).shape[0])  # (arange's length rule)
        else:
            sizes.append(math.ceil((stop - start) / step))
        num_list += [start, stop, step]
    if any(isinstance(n, int) and n < 0 for n in sizes):
        raise ShapeError(f"negative dimensions are not allowed: {tuple(sizes)}")
    typ = np.result_type(*(_number(v) for v in num_list))
    axes = []
    for k, (start, stop, step) in enumerate(items):
        if _complex(step):
            step = int(abs(step))
            if step != 1:
                step = (stop - start) / float(step - 1)
        axes.append(_axis_values(arange(sizes[k], dtype=typ) * step + start, k, len(items)))
    return axes[part] if part is not None else _dense(axes, tuple(sizes), typ)


def _nd_grid_ref(key, single, part):
    slices = tuple(slice(*t) for t in key)
    if part is None:  # (a single slice of ogrid is mgrid's)
        return np.mgrid[slices[0] if single else slices]
    return np.ogrid[slices][part]


def nd_grid(key, single, part=None):
    """``np.mgrid[...]`` / ``np.ogrid[...]`` (``part``: one array of ogrid's tuple): ``key``
    the (start, stop, step) of each slice, ``single`` for an index of one slice."""
    return apply("nd_grid", (), {"key": key, "single": single, "part": part})


_composite("nd_grid", nd_grid, _nd_grid, _nd_grid_ref)


class Grid:
    """``ppto.mgrid`` / ``ppto.ogrid``: index with slices, as NumPy's."""

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        return grid(key, self.sparse)

    def __repr__(self):
        return "ppto.ogrid" if self.sparse else "ppto.mgrid"


mgrid, ogrid = Grid(False), Grid(True)
GRIDS = {id(np.mgrid): False, id(np.ogrid): True, id(mgrid): False, id(ogrid): True}


# -- meshgrid -------------------------------------------------------------------------------------
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors (NumPy's ``meshgrid``: ``'xy'`` indexing
    swaps the first two axes; ``sparse`` gives broadcastable arrays). The results are always
    new arrays (``copy=False`` reads the same; writing into NumPy's views would reach the
    inputs, so ``copy=False`` with ``sparse=True`` is refused)."""
    if indexing not in ("xy", "ij"):
        raise ShapeError("Valid values for `indexing` are 'xy' and 'ij'.")
    if not copy and sparse:
        raise UnsupportedError(
            "meshgrid(..., sparse=True, copy=False): its results are views of the inputs",
            hint="use copy=True (the default)",
        )
    attrs = {"sparse": bool(sparse), "indexing": indexing}
    return tuple(apply("meshgrid", xi, {**attrs, "part": i}) for i in range(len(xi)))


def _meshgrid(*xi, sparse, indexing, part):
    ndim = len(xi)
    flat = reshape(lift(xi[part]), (-1,))
    k = {0: 1, 1: 0}.get(part, part) if indexing == "xy" and ndim > 1 else part
    out = _axis_values(flat, k, ndim)
    if sparse:
        return out
    shape = [reshape(lift(x), (-1,)).shape[0] for x in xi]
    if indexing == "xy" and ndim > 1:
        shape[0], shape[1] = shape[1], shape[0]
    return broadcast_to(out, tuple(shape))


_composite(
    "meshgrid",
    meshgrid,
    _meshgrid,
    lambda *xi, part, **kw: np.meshgrid(*xi, **kw)[part],
    (np.meshgrid,),
)
