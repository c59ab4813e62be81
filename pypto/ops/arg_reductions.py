"""``argmax`` / ``argmin``: the index of the first extreme value along an axis (NumPy's rules:
the first of equal values; a NaN is the extreme, so the first NaN's index).

Composites of two reductions over the same axis, as a softmax is (fused into one kernel where
the reduction is): ``m = x.max(axis)``, then the smallest index ``i`` with ``x[i] == m`` or
``x[i]`` NaN (``max`` propagates NaN, so a row with a NaN finds its first NaN, and a row without
one its first maximum). Complex values (NumPy orders them lexicographically) run as NumPy's
call (a graph break).
"""

from __future__ import annotations

import numpy as np

from ..api import apply, lift, no_out
from ..errors import HostOnly
from ..registry import OpDef, register
from ..shapes import normalize_axis
from .creation import arange
from .maps import where
from .reorders import reshape


def _arg_reduction(name: str, extreme: str, np_fn):
    def api(a, axis=None, out=None, *, keepdims=False):
        no_out(out, name)
        return apply(name, (a,), {"axis": axis, "keepdims": bool(keepdims)})

    def expand(a, axis, keepdims):
        x = lift(a)
        if x.dtype.kind == "c":
            raise HostOnly(f"{name} of complex values (NumPy orders them lexicographically)")
        if axis is None or x.ndim == 0:  # the flattened array (a number: a 1-element vector)
            if axis is not None:
                normalize_axis(axis, 1)  # (NumPy takes axis 0 / -1 of a 0-d array)
            flat = reshape(x, (-1,))
            found = _first_extreme(flat, 0, extreme, keepdims=False)
            return reshape(found, (1,) * x.ndim) if keepdims else found
        return _first_extreme(x, normalize_axis(axis, x.ndim), extreme, keepdims)

    api.__name__ = api.__qualname__ = name
    api.__doc__ = (
        f"The index of the first {extreme}imum along ``axis`` (None: of the flattened array); "
        "a NaN counts as the extreme, as in NumPy."
    )
    register(OpDef(name, "composite", api, expand=expand, impl=np_fn, numpy=(np_fn,)))


def _first_extreme(x, ax: int, extreme: str, keepdims: bool):
    m = getattr(x, extreme)(axis=ax, keepdims=True)  # (an empty axis: NumPy's ValueError)
    hit = apply("equal", (x, m))
    if x.dtype.kind == "f":
        hit = hit | apply("isnan", (x,))
    n = x.shape[ax]
    index = reshape(arange(n, dtype=np.intp), tuple(n if k == ax else 1 for k in range(x.ndim)))
    return where(hit, index, n).min(axis=ax, keepdims=keepdims)


_arg_reduction("argmax", "max", np.argmax)
_arg_reduction("argmin", "min", np.argmin)
