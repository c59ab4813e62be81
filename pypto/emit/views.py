"""Array code for an index map over a region: the NumPy target's blocks and the CuPy host views.

``base`` is the code of the operand over ``interval(m, region)`` (pypto/lower/index_map.py);
the result is the view's value over ``region``: a subscript drops fixed axes, steps and
reverses, and adds new axes; a transpose reorders axes; a broadcast stretches them. NumPy and
CuPy spell all of these the same (``xp`` names the module).
"""

from __future__ import annotations

from ..lower.index_map import IndexMap, broadcasts, interval


def view_code(m: IndexMap, base: str, region, out_shape, dim, shape_code, same, xp="np") -> str:
    """The view's value over ``region`` from ``base`` (``dim`` and ``shape_code`` render sizes
    and shapes, ``same`` decides sizes)."""
    new = set(m.new_axes())
    broadcast = broadcasts(m, out_shape, same)

    def step(r):
        if r.src is None:
            return "0"
        return ":" if r.scale in (0, 1) else f"::{r.scale}"

    items = []
    if m.permutes():
        items = [step(r) for r in m.reads]
    else:
        # result axes in order, fixed operand axes where they sit among the operand's axes
        pending = list(m.reads)
        leading = True
        for j in range(m.out_rank):
            if j in new:
                if not (broadcast and leading):  # broadcasting adds leading axes itself
                    items.append("None")
                continue
            leading = False
            while pending and pending[0].src is None:
                items.append(step(pending.pop(0)))
            items.append(step(pending.pop(0)))
        items += [step(r) for r in pending]
    while items and items[-1] == ":":
        items.pop()
    if not m.reads and items:  # new axes on a scalar (a Python number has no subscript)
        code = f"{xp}.expand_dims({base}, {tuple(j for j, i in enumerate(items))!r})"
    else:
        code = f"{base}[{', '.join(items)}]" if items else base
    if m.permutes():
        srcs = [r.src for r in m.reads if r.src is not None]
        perm = tuple(sorted(range(len(srcs)), key=lambda k: srcs[k]))
        code = f"{xp}.transpose({code}, {perm!r})"
        if new:
            code = f"{xp}.expand_dims({code}, {tuple(sorted(new))!r})"
    if broadcast:
        return f"{xp}.broadcast_to({code}, {shape_code(tuple(hi - lo for lo, hi in region))})"
    cut = [
        f"{dim(lo)}:{dim(hi)}" if j in new and (lo, hi) != (0, 1) else ":"
        for j, (lo, hi) in enumerate(region)
    ]  # a new axis' region is all of it, or empty (an empty slice of it)
    return f"{code}[{', '.join(cut)}]" if any(c != ":" for c in cut) else code


def subscript_code(m: IndexMap, name: str, region, shape, dim, same) -> str | None:
    """The view of array ``name`` (of ``shape``) over ``region`` as one subscript, when the map
    is a plain one (unit steps, no new, reordered or stretched axes): ``x[:, j]``, not
    ``x[:, j:j + 1][:, 0]`` (a loop body pays per subscript); None otherwise."""
    if not isinstance(m, IndexMap) or m.permutes() or m.new_axes():
        return None
    if any(r.src is not None and r.scale != 1 for r in m.reads):
        return None
    parts = []
    for r, (lo, hi), d in zip(m.reads, interval(m, region), shape):
        if r.src is None:
            parts.append(dim(r.offset))
        else:
            parts.append(region_code(((lo, hi),), (d,), dim, same) or ":")
    while parts and parts[-1] == ":":
        parts.pop()
    return f"{name}[{', '.join(parts)}]" if parts else name


def region_code(region, shape, dim, same) -> str:
    """The subscript of ``region`` (``(lo, hi)`` per axis) of an array of ``shape``: ``:`` for
    a whole axis, trailing ones dropped ("" for the whole array)."""
    parts = [
        ":" if lo == 0 and (hi == d or same((hi,), (d,))) else f"{dim(lo)}:{dim(hi)}"
        for (lo, hi), d in zip(region, shape)
    ]
    while parts and parts[-1] == ":":
        parts.pop()
    return ", ".join(parts)


__all__ = ["region_code", "subscript_code", "view_code"]
