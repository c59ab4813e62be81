"""The index rules of a loop turned into an axis (passes/loops.py decides when).

``Analysis`` is the dependence test of a loop body (one merged graph; ``var`` the loop
variable): for each array it writes, where each iteration reads and writes it (the normalized
basic indices of ``getitem`` and ``store``), and whether another iteration can reach the same
element in an order array statements would not keep. It also finds the accumulations
(``s = s + g``, ``C[idx] = C[idx] + g``).

``Batcher`` rebuilds the body over a leading axis of the iterations (vmap with index rules):
an index ``a*i + b`` becomes the slice ``a*start + b :: a*step`` of ``count`` elements, the loop
axis moved to the front; maps line the loop axes up (size-1 axes after it), reductions and
products shift their axes; the loop variable as a value is ``arange``; a slice whose length
moves with ``i`` is the hull of every iteration's slice, masked where it is read by a
reduction or stored; an accumulation is one sum over the new axis. What has no rule raises
``Refused`` with the reason (the loop stays a host loop).
"""

from __future__ import annotations

import numpy as np

from ..builder import GraphBuilder, literal
from ..errors import PyptoError
from ..ir import Eqn, Graph, Literal, Var
from ..ops.indexing import SliceSpec
from ..registry import REGISTRY
from ..symbolic import Expr, Sym, SymFloat, affine, free_symbols, is_nonneg, substitute
from ..types import TensorType


def _extreme(kind: str):
    def identity(dtype):
        if dtype.kind == "f":
            return dtype.type(-np.inf if kind == "max" else np.inf)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return dtype.type(info.min if kind == "max" else info.max)
        return None

    return identity


# the value each reduction ignores (a ragged axis is filled with it outside each slice)
_REDUCE_IDENTITY = {
    "sum": lambda dt: dt.type(0) if dt.kind in "iufc" else None,
    "prod": lambda dt: dt.type(1) if dt.kind in "iufc" else None,
    "max": _extreme("max"),
    "min": _extreme("min"),
    "any": lambda dt: np.bool_(False) if dt.kind == "b" else None,
    "all": lambda dt: np.bool_(True) if dt.kind == "b" else None,
}

# ops whose batched form is the op itself with its axes moved by one
_COMPARISONS = {np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal}

_AXIS_OPS = {"sum", "prod", "mean", "max", "min", "any", "all", "cumsum", "cumprod", "flip"}


# accumulating ops -> their group (a chain mixes ops of one group) and the reduction over the
# new axis (maximum and minimum are exact in any order, NaN included; sums reassociate)
_ACCUMULATE = {"add": "sum", "subtract": "sum", "maximum": "max", "minimum": "min"}


class Refused(Exception):
    """The loop stays a host loop; the message says why."""


class Merged:
    def __init__(self, graph: Graph, inputs, outputs):
        self.graph = graph
        self.inputs = inputs  # [(HostVar, Var)]
        self.outputs = outputs  # [(HostVar, Atom)]


class Analysis:
    """The dependence test, and what each output of the merged body is."""

    def __init__(self, merged: Merged, var: str, step: int, span, read_outside: set[int]):
        self.var, self.step, self.span = var, step, span  # span: the variable's least, greatest
        g = merged.graph
        self.producer = {id(e.out): e for e in g.eqns}
        self.uses: dict[int, int] = {}
        for e in g.eqns:
            for a in e.inputs:
                self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        for a in g.outputs:
            self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        self.input_of = {id(h): v for h, v in merged.inputs}
        self.dropped: set[int] = set()  # outputs nothing after the loop reads (temporaries)
        self.accumulations: dict[int, int] = {}  # id(add's out) -> which operand it keeps
        exempt: set[tuple[int, int]] = set()  # (id(eqn out), id(value)): an accumulator's use
        accumulators = set()  # ids of the inputs accumulated into: read only to accumulate
        for h, o in merged.outputs:
            v_in = self.input_of.get(id(h))
            if (
                isinstance(o, Var)
                and v_in is not None
                and o is not v_in
                and self._accumulation(o, v_in, exempt)
            ):
                accumulators.add(id(v_in))
        root: dict[int, Var] = {id(v): v for v in g.inputs}
        version: dict[int, int] = {id(v): 0 for v in g.inputs}
        latest: dict[int, int] = {id(v): 0 for v in g.inputs}
        accesses: dict[int, list] = {}  # id(root) -> [(write?, index or None, version)]
        for e in g.eqns:
            inputs = e.inputs
            if e.op in ("getitem", "store") and id(e.inputs[0]) in root:
                base = e.inputs[0]
                r, k = root[id(base)], version[id(base)]
                if e.op == "getitem" and (id(e.out), id(base)) not in exempt:
                    accesses.setdefault(id(r), []).append((False, e.params["index"], k))
                if e.op == "store":
                    if k != latest[id(r)]:
                        raise Refused(f"`{r.name}` is written from an older value of itself")
                    root[id(e.out)], version[id(e.out)] = r, k + 1
                    latest[id(r)] = k + 1
                    if (id(e.out), id(base)) not in exempt:
                        accesses.setdefault(id(r), []).append((True, e.params["index"], k + 1))
                inputs = e.inputs[1:]
            for a in inputs:
                if isinstance(a, Var) and id(a) in root and (id(e.out), id(a)) not in exempt:
                    accesses.setdefault(id(root[id(a)]), []).append((False, None, version[id(a)]))
        for h, o in merged.outputs:
            v_in = self.input_of.get(id(h))
            if isinstance(o, Var) and id(o) in root:
                if v_in is None or root[id(o)] is not v_in:
                    raise Refused(f"`{h.name}` becomes another array in the loop")
                if version[id(o)] != latest[id(v_in)]:
                    raise Refused(f"`{h.name}` is an older value of itself after the loop")
            elif v_in is None:  # a value the body makes; its last value is not kept
                if id(h) in read_outside:
                    raise Refused(f"`{h.name}` keeps its last iteration's value after the loop")
                self.dropped.add(id(h))
            elif o is not v_in and id(o) not in self.accumulations:
                raise Refused(f"`{h.name}` carries a value from one iteration to the next")
        for key, items in accesses.items():
            name = next(v.name for v in g.inputs if id(v) == key)
            if key in accumulators:  # (a prefix sum, not a sum)
                raise Refused(f"`{name}` is read in the loop while it accumulates")
            for w, wix, wk in items:
                if w:
                    for other, ix, k in items:
                        self._check(name, wix, wk, other, ix, k)

    def _accumulation(self, o, v_in, exempt) -> bool:
        """``o = v_in + g`` (or ``-``, or ``np.maximum(v_in, g)``, ``np.minimum``), or the store
        of ``v_in[idx] + g`` at ``idx``, with no other use of the old value or the new one
        inside the body."""
        e = self.producer.get(id(o))
        if e is None or self.uses.get(id(o), 0) != 1:
            return False
        if e.op == "store" and e.inputs[0] is v_in:
            index, value = e.params["index"], e.inputs[1]
            if any(self._mentions(d) for d in _index_dims(index)):
                return False
            add = self.producer.get(id(value)) if isinstance(value, Var) else None
            if add is None or add.op not in _ACCUMULATE or self.uses[id(value)] != 1:
                return False
            if add.out.type.dtype != v_in.type.dtype:  # the store casts at every step
                return False
            for keep in (0, 1):
                read = add.inputs[keep]
                r = self.producer.get(id(read)) if isinstance(read, Var) else None
                ok = keep == 0 or add.op != "subtract"
                if (
                    ok
                    and r is not None
                    and r.op == "getitem"
                    and r.inputs[0] is v_in
                    and r.params["index"] == index
                    and self.uses[id(read)] == 1
                    and not self._reads(add.inputs[1 - keep], v_in)
                ):
                    self.accumulations[id(add.out)] = keep
                    exempt.update({(id(e.out), id(v_in)), (id(r.out), id(v_in))})
                    return True
            return False
        # s + x, s + x - y, x + (s + y), ...: a chain of adds and subtracts with s once, on the
        # side each step keeps (s - x; never x - s), each link read only by the next
        # (or of one of maximum, minimum: np.maximum(np.maximum(s, a), b))
        chain, value, group = [], o, None
        while value is not v_in:
            e = self.producer.get(id(value)) if isinstance(value, Var) else None
            if e is None or e.op not in _ACCUMULATE or e.out.type.dtype.kind not in "iufc":
                return False
            if group is not None and _ACCUMULATE[e.op] != group:
                return False
            group = _ACCUMULATE[e.op]
            if chain and self.uses.get(id(value), 0) != 1:
                return False
            sides = [k for k in (0, 1) if self._reads(e.inputs[k], v_in)]
            if len(sides) != 1 or (sides[0] == 1 and e.op == "subtract"):
                return False
            chain.append((e, sides[0]))
            value = e.inputs[sides[0]]
        for e, keep in chain:
            self.accumulations[id(e.out)] = keep
        exempt.add((id(chain[-1][0].out), id(v_in)))
        return True

    def _mentions(self, d) -> bool:
        return _mentions(d, self.var)

    def _reads(self, atom, v) -> bool:
        seen, todo = set(), [atom]
        while todo:
            x = todo.pop()
            if x is v:
                return True
            if not isinstance(x, Var) or id(x) in seen:
                continue
            seen.add(id(x))
            e = self.producer.get(id(x))
            if e is not None:
                todo.extend(e.inputs)
        return False

    def _check(self, name, w, wk, other_write, x, k) -> None:
        """The write at ``w`` (making version ``wk``) against an access at ``x`` (a write
        making, or a read of, version ``k``) in other iterations: they must touch other
        elements, or (a read) come in the same order as the loop runs them."""
        distance = _distance(w, x, self.var, self.span)
        if distance == 0 or distance is _DISJOINT:
            return
        kind = "written" if other_write else "read"
        where = f"`{name}` is written at [{_show(w)}] and {kind} at [{_show(x)}]"
        if distance is None:
            raise Refused(f"{where}: every iteration, or an unknown distance apart")
        if other_write:
            raise Refused(f"{where}, {abs(distance)} apart")
        later = distance * self.step > 0  # the read's iteration comes after the write's
        if later != (k >= wk):
            raise Refused(f"{where}: a dependence carried at distance {abs(distance)}")


_DISJOINT = object()


def _distance(w, x, var, span):
    """``i_x - i_w`` for iterations whose elements at ``w`` and ``x`` can be the same one
    (an int), ``_DISJOINT`` when none can, None when unknown or any two iterations can.
    ``span``: the least and the greatest value of the loop variable."""
    if x is None:
        return None
    deltas = set()
    for iw, ix in zip(_axes(w), _axes(x)):
        if _apart(iw, ix, var, span):
            return _DISJOINT
        if isinstance(iw, SliceSpec) or isinstance(ix, SliceSpec):
            continue
        fw, fx = affine(iw, var), affine(ix, var)
        if fw is None or fx is None:
            continue
        (a, b), (c, d) = fw, fx
        diff = b - d
        if a == 0 or a != c or not isinstance(diff, int):
            continue
        if diff % a:
            return _DISJOINT
        deltas.add(diff // a)
    if len(deltas) > 1:
        return _DISJOINT
    return deltas.pop() if deltas else None


def _apart(iw, ix, var, span) -> bool:
    """Whether, on one axis, what any iteration selects at ``iw`` and what any iteration
    selects at ``ix`` never meet: ranges of positions over the whole loop that do not overlap
    (``A[i, j]`` for ``j >= i`` and ``A[i, :i]``)."""
    ranges = []
    for item in (iw, ix):
        if isinstance(item, SliceSpec):
            if _mentions(item.start, var) or _mentions(item.length, var):
                return False
            far = item.start + item.step * (item.length - 1)
            ranges.append((item.start, far) if item.step > 0 else (far, item.start))
            continue
        f = affine(item, var)
        if f is None:
            return False
        a, b = f
        ends = (a * span[0] + b, a * span[1] + b)
        ranges.append(ends if a >= 0 else ends[::-1])
    (lw, hw), (lx, hx) = ranges
    return is_nonneg(lx - hw - 1) or is_nonneg(lw - hx - 1)


def independent_lines(merged: Merged, var: str, same) -> None:
    """The test of a recurrence that can run inside one kernel, one thread per line: every
    array the body writes is read and written at one pattern of slices, the same at every
    iteration (the loop variable only in integer indices: ``y[:, j] = f(y[:, j - 1], x[:, j])``),
    every such access and every value computed from one has one shape (the lines), through
    elementwise ops without broadcasting. Then the element ``p`` of the lines is read and
    written only by the thread of ``p``, so each thread can run all the iterations in order.
    ``same(a, b)`` decides sizes. Raises ``Refused`` with the reason otherwise."""
    g = merged.graph
    root, written = _roots(g)
    patterns: dict[int, set] = {}
    derived: set[int] = set()  # values read from a written array, or computed from one
    lines = []  # the shape of every such value (all must be the same)
    for e in g.eqns:
        if e.op not in ("getitem", "store") and REGISTRY[e.op].kind != "map":
            raise Refused(f"its body has `{e.op}`, not elementwise")
        base = e.inputs[0] if e.op in ("getitem", "store") else None
        if base is not None and id(base) in derived:
            raise Refused("it indexes into a value read from an array it writes")
        if base is not None and id(root.get(id(base), base)) in written:
            r = root[id(base)]
            patterns.setdefault(id(r), set()).add(_pattern(e.params["index"], var))
            if e.op == "getitem":
                derived.add(id(e.out))
                lines.append(e.out.type.shape)
            else:
                value = e.inputs[1]
                lines.append(_region(e.params["index"]))
                if isinstance(value, Var) and id(value) in derived:
                    lines.append(value.type.shape)
            continue
        operands = e.inputs[1:] if e.op == "store" else e.inputs
        for a in operands:
            if isinstance(a, Var) and id(root.get(id(a), a)) in written and id(a) in root:
                raise Refused(f"`{root[id(a)].name}` is read whole")
        if e.op != "getitem" and any(isinstance(a, Var) and id(a) in derived for a in operands):
            derived.add(id(e.out))
            lines.append(e.out.type.shape)
    _in_place(merged, root, set(), "is not an array written in place", temporaries=False)
    for key in written:
        name = root[key].name
        found = patterns.get(key, set())
        if None in found:
            raise Refused(f"`{name}` is accessed at a slice that moves with {var}")
        if len(found) != 1:
            raise Refused(f"`{name}` is read and written at different slices")
    for shape in lines:
        if len(shape) != len(lines[0]) or not same(shape, lines[0]):
            raise Refused("the arrays it writes are read at other shapes (lines do not line up)")


def own_elements(merged: Merged, var: str, read_outside: set[int]) -> None:
    """The test that lets a loop over ``var`` move inside another (an interchange): every
    array the body writes is read and written only at one index ``a*var + b`` (``a != 0``) on
    one axis, the same at each access (``y[i, j] = f(y[i, j - 1])``), and the body carries
    nothing else from one iteration to the next (a value it makes is made before it is read,
    and not read after the loop). Then different values of ``var`` never touch
    the same element, whatever the other loop does, so the two loops may run in either order.
    Raises ``Refused`` with the reason otherwise."""
    g = merged.graph
    root, written = _roots(g)
    axes: dict[int, set] = {}
    for e in g.eqns:
        base = e.inputs[0] if e.op in ("getitem", "store") else None
        operands = e.inputs[1:] if base is not None else e.inputs
        for a in operands:
            if isinstance(a, Var) and id(a) in root and id(root[id(a)]) in written:
                raise Refused(f"`{root[id(a)].name}` is read whole")
        if base is None or id(base) not in root or id(root[id(base)]) not in written:
            continue
        found, axis = set(), 0
        for item in e.params["index"]:
            if item is None or item is Ellipsis:  # (no operand axis)
                continue
            if not isinstance(item, SliceSpec):
                ab = affine(item, var)
                if ab is not None and ab[0] != 0:
                    found.add((axis, ab[0], ab[1]))
            axis += 1
        r = id(root[id(base)])
        axes[r] = found if r not in axes else axes[r] & found
    for key in written:
        if not axes.get(key):
            name = root[key].name
            raise Refused(f"`{name}` is not indexed by {var} the same way at each access")
    _in_place(merged, root, read_outside, "carries a value from one iteration to the next")


def _roots(g: Graph):
    """The array each value of a store chain writes into (id(value) -> graph input: the
    inputs themselves, each store's output its base's), and the ids of the inputs written."""
    root: dict[int, Var] = {id(v): v for v in g.inputs}
    for e in g.eqns:
        if e.op == "store" and id(e.inputs[0]) in root:
            root[id(e.out)] = root[id(e.inputs[0])]
    written = {id(root[id(e.out)]) for e in g.eqns if e.op == "store" and id(e.out) in root}
    return root, written


def _in_place(merged: Merged, root, read_outside, why: str, temporaries=True) -> None:
    """Every value the body hands on is an array it read, written in place (its store chain);
    with ``temporaries``, also a value each iteration makes before reading it and nothing after
    the loop reads. Raises ``Refused`` (``why`` after the name) otherwise."""
    for h, o in merged.outputs:
        v_in = next((v for hh, v in merged.inputs if hh is h), None)
        if temporaries and v_in is None and id(h) not in read_outside:
            continue
        if not (isinstance(o, Var) and id(o) in root and v_in is not None and root[id(o)] is v_in):
            raise Refused(f"`{h.name}` {why}")


def _region(index) -> tuple:
    """The shape of a basic index's region (its slices' lengths)."""
    return tuple(item.length for item in index if isinstance(item, SliceSpec))


def _pattern(index, var):
    """An index with its integer positions left out: what must be the same at each access of
    an array for it to stay on its lines (None: a slice that moves with the loop variable, or
    a new axis)."""
    out = []
    for item in index:
        if isinstance(item, SliceSpec):
            if any(_mentions(d, var) for d in (item.start, item.length)):
                return None
            out.append((item.start, item.step, item.length))
        elif item is None:
            return None
        else:
            out.append("..." if item is Ellipsis else "int")
    return tuple(out)


def _mentions(d, var: str) -> bool:
    """Whether a size, an index or a literal's value (an int, ``Expr`` or ``SymFloat``) reads
    the loop variable."""
    if isinstance(d, SymFloat):
        return any(var in free_symbols(e) for e, _ in d.terms)
    return isinstance(d, Expr) and var in free_symbols(d)


def _index_dims(index):
    for item in index:
        if isinstance(item, SliceSpec):
            yield item.start
            yield item.length
        elif item is not None and item is not Ellipsis:
            yield item


def _axes(index) -> list:
    return [item for item in index if item is not None and item is not Ellipsis]


def _show(index) -> str:
    if index is None:
        return "..."
    return ", ".join(str(i) if not isinstance(i, SliceSpec) else repr(i) for i in index)


# -- building the graph over the new axis -------------------------------------------------------
class Batcher:
    """The merged body over a leading axis of ``count`` iterations (vmap with index rules)."""

    def __init__(self, merged: Merged, analysis: Analysis, var, start, step, count, ctx):
        self.m, self.a = merged, analysis
        self.var, self.start, self.step, self.count = var, start, step, count
        self.b = GraphBuilder(ctx)
        self.kinds: set[str] = set()

    def run(self):
        b, g = self.b, self.m.graph
        self.val: dict[int, object] = {}
        self.batched: set[int] = set()
        self.weak: set[int] = set()  # batched values made only of weak scalars (the loop index)
        # ragged values (a slice whose length moves with the loop variable: ``C[i, :i + 1]``):
        # id -> ((axis, length), ...): the value's axis holds the hull of every iteration's
        # slice, of which the first ``length`` (affine in the loop variable) are the iteration's
        self.ragged: dict[int, tuple] = {}
        for v in g.inputs:
            self.val[id(v)] = b.add_input(v.name, v.type)
        for v, array in g.consts:
            self.val[id(v)] = b.add_const(array)
        for e in g.eqns:
            b.site = e.site
            try:
                self._eqn(e)
            except PyptoError as err:
                raise Refused(f"`{e.op}` over the new axis: {str(err).splitlines()[0]}") from None
        outputs = []
        for h, o in self.m.outputs:
            if id(h) in self.a.dropped:
                continue
            if self._is_batched(o):
                raise Refused(f"`{h.name}` would be one value per iteration")
            new = self._atom(o)
            if new.type != h.type:
                raise Refused(f"`{h.name}` would change type")
            outputs.append(new)
        return b.finish(outputs), self.kinds

    # values
    def _atom(self, a):
        if isinstance(a, Var):
            return self.val[id(a)]
        if self._mentions(a.value):
            return self._index_value(a)
        return a

    def _is_batched(self, a) -> bool:
        if isinstance(a, Var):
            return id(a) in self.batched
        return isinstance(a, Literal) and self._mentions(a.value)

    def _mentions(self, d) -> bool:
        return _mentions(d, self.var)

    def _index_value(self, lit: Literal):
        """The loop variable used as a value: its values over the new axis (np.arange; a float
        expression of sizes, ``i * 0.5``, its terms scaled and summed)."""
        if isinstance(lit.value, SymFloat):
            v = lit.value
            total = Literal(v.const, TensorType(np.dtype(np.float64), (), weak=True))
            for e, c in v.terms:
                term = Literal(e, TensorType(np.dtype(np.int64), (), weak=True))
                term = self._atom(term) if self._mentions(e) else term
                scaled = self._apply("multiply", [term, literal(c)], {})
                total = self._apply("add", [total, scaled], {})
            return total
        return self._loop_values(lit.value)

    def _loop_values(self, d):
        """The values of ``d`` (affine in the loop variable) at each iteration, along axis 0."""
        f = affine(d, self.var)
        if f is None:
            raise Refused(f"the value {d} is not linear in {self.var}")
        a, rest = f
        first = a * self.start + rest
        if a * self.step == 0:
            raise Refused("a constant index value")
        attrs = {"start": first, "stop": first + a * self.step * self.count}
        attrs.update(step=a * self.step, dtype=np.dtype(np.int64))
        return self._apply("arange", [], attrs)

    def _set(self, e: Eqn, v, batched: bool, weak: bool = False):
        self.val[id(e.out)] = v
        if batched:
            self.batched.add(id(e.out))
            if weak:
                self.weak.add(id(e.out))

    def _apply(self, name, inputs, attrs):
        return self.b.apply(REGISTRY[name], tuple(inputs), attrs)

    def _expand(self, v, rank: int):
        """A batched value of per-iteration rank ``v.rank - 1`` given ``rank`` (size-1 axes
        after the loop axis), so that NumPy's broadcasting lines up the loop axes."""
        missing = rank - (v.type.rank - 1)
        if missing <= 0:
            return v
        return self._apply("expand_dims", [v], {"axis": tuple(range(1, 1 + missing))})

    def _loop_axis(self, v, at: int):
        """Move a batched value's loop axis from 0 to ``at``."""
        if at == 0:
            return v
        perm = list(range(1, v.type.rank))
        perm.insert(at, 0)
        return self._apply("transpose", [v], {"perm": tuple(perm)})

    def _front(self, v, at: int):
        """Move axis ``at`` of a value to the front."""
        if at == 0:
            return v
        perm = [at] + [k for k in range(v.type.rank) if k != at]
        return self._apply("transpose", [v], {"perm": tuple(perm)})

    # equations
    def _eqn(self, e: Eqn):
        op = REGISTRY[e.op]
        attrs = e.params
        batched = [self._is_batched(a) for a in e.inputs]
        keep = self.a.accumulations.get(id(e.out))
        if keep is not None:
            return self._set(e, self._accumulate(e, keep), False)
        if e.op in ("getitem", "store"):
            return self._index_op(e, batched)
        if e.op == "arange" and self._mentions(attrs["start"]):
            return self._moving_arange(e, attrs)
        if any(self._mentions(v) for v in _attr_dims(attrs)):
            raise Refused(f"`{e.op}` has a size that depends on {self.var}")
        ins = [self._atom(a) for a in e.inputs]
        if not any(batched):
            return self._set(e, self._apply(e.op, ins, attrs), False)
        rank = e.out.type.rank
        if op.kind == "map":
            strong = [
                a.type.dtype
                for a, bt in zip(e.inputs, batched)
                if not a.type.weak and not (bt and self._weak(a))
            ]
            fixed = [
                self._weak_operand(e, a, self._expand(v, rank), strong) if bt else v
                for a, v, bt in zip(e.inputs, ins, batched)
            ]
            out = self._apply(e.op, fixed, attrs)
            ragged_in = any(id(a) in self.ragged for a in e.inputs)
            if ragged_in and e.op == "power" and out.type.dtype.kind in "iu":
                raise Refused("an integer power of a ragged value (the hull's others may raise)")
            ragged = []
            for a in e.inputs:
                shift = rank - (a.type.rank if isinstance(a, Var) else 0)
                ragged += [(p + shift, n) for p, n in self.ragged.get(id(a), ())]
            self._ragged(e, ragged)
            return self._set(e, out, True, weak=not strong)
        ragged = self.ragged.get(id(e.inputs[0]), ()) if e.inputs else ()
        if e.op in _REDUCE_IDENTITY and ragged:
            return self._ragged_reduce(e, ins[0], ragged)
        if e.op == "transpose":
            perm = (0, *(p + 1 for p in attrs["perm"]))
            self._ragged(e, [(perm.index(p), n) for p, n in ragged])
            return self._set(e, self._apply(e.op, ins, {"perm": perm}), True)
        if e.op == "expand_dims":
            axis = tuple(x + 1 for x in attrs["axis"])
            out = self._apply(e.op, ins, {"axis": axis})
            kept = [k for k in range(out.type.rank) if k not in axis]
            self._ragged(e, [(kept[p], n) for p, n in ragged])
            return self._set(e, out, True)
        if e.op in ("matmul", "dot"):
            return self._set(e, self._product(e, ins, batched), True)
        if any(id(a) in self.ragged for a in e.inputs):
            raise Refused(f"`{e.op}` of a ragged value (a slice whose length moves with the loop)")
        if e.op in _AXIS_OPS and "axis" in attrs:
            axis = attrs["axis"]
            shifted = tuple(x + 1 for x in axis) if isinstance(axis, tuple) else axis + 1
            return self._set(e, self._apply(e.op, ins, {**attrs, "axis": shifted}), True)
        if e.op in ("reshape", "broadcast_to"):
            if e.op == "broadcast_to":
                ins[0] = self._expand(ins[0], rank)
            shape = (self.count, *attrs["shape"])
            return self._set(e, self._apply(e.op, ins, {"shape": shape}), True)
        raise Refused(f"`{e.op}` has no rule over a new axis yet")

    def _weak_operand(self, e: Eqn, a, v, strong):
        """A batched operand made of weak scalars (the loop variable as a value) in the dtype
        NumPy gives the Python number it stands for, next to the arrays' (NEP 50)."""
        if not self._weak(a):
            return v
        if not strong:  # weak with weak: a Python number still
            if v.type.dtype != a.type.dtype:
                v = self._apply("astype", [v], {"dtype": a.type.dtype})
            return v
        example = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[a.type.dtype.kind]
        common = np.result_type(*strong, example)
        if common.kind in "iu" and REGISTRY[e.op].ufunc in _COMPARISONS:
            return v  # a Python int compares exactly, whatever the array's integer type
        if common.kind in "iu" and common != np.dtype(np.int64):
            # NumPy raises OverflowError for a Python int the array's type cannot hold
            raise Refused(f"the loop variable as a value next to {common} (it may not fit)")
        if v.type.dtype != common:
            v = self._apply("astype", [v], {"dtype": common})
        return v

    def _weak(self, a) -> bool:
        return (isinstance(a, Var) and id(a) in self.weak) or isinstance(a, Literal)

    def _product(self, e, ins, batched):
        """``matmul`` (and ``dot`` of ranks 1 and 2) over the new axis: NumPy's broadcasting
        of leading axes where both are over it, the loop axis moved where one is a vector. A
        ragged contraction axis is zero outside each iteration's slice; a ragged row or column
        axis stays ragged in the result."""
        x, y = e.inputs
        rx, ry = x.type.rank, y.type.rank  # per iteration
        if rx < 1 or ry < 1 or (e.op == "dot" and (rx > 2 or ry > 2)):
            raise Refused(f"`{e.op}` of ranks {rx} and {ry} over a new axis")
        contract = (rx, ry - 1 if ry >= 2 else 1)  # each operand's contracted axis (batched)
        ro = e.out.type.rank
        ragged = []
        ins = list(ins)
        for k, (a, axis) in enumerate(zip(e.inputs, contract)):
            spec = self.ragged.get(id(a), ())
            inside = [(p, n) for p, n in spec if p == axis]
            if inside:
                zero = Literal(a.type.dtype.type(0), TensorType(a.type.dtype, ()))
                mask = self._mask(ins[k].type.shape, inside)
                ins[k] = self._apply("where", [mask, ins[k], zero], {})
            for p, n in spec:
                if p == axis:
                    continue
                if k == 0 and p == rx - 1 and rx >= 2:  # x's rows: the result's rows
                    ragged.append((ro if ry == 1 else ro - 1, n))
                elif k == 1 and p == ry and ry >= 2:  # y's columns
                    ragged.append((ro, n))
                else:
                    raise Refused(f"`{e.op}` of a value ragged along a batch axis")
        self._ragged(e, ragged)
        xb, yb = batched
        # a loop axis of size 1 (a ragged value the same at every iteration): a plain operand
        for k in (0, 1):
            if batched[k] and ins[k].type.shape[0] == 1 and self.count != 1:
                ins[k] = self._apply("squeeze", [ins[k]], {"axis": (0,)})
                xb, yb = (False, yb) if k == 0 else (xb, False)
        if not xb and not yb:
            out = self._apply("matmul", ins, {})
            return self._apply("expand_dims", [out], {"axis": (0,)})
        if yb and not xb and ry == 1:  # a @ v_i for each i: (a @ V.T), its last axis first
            vt = self._apply("transpose", [ins[1]], {"perm": (1, 0)})
            out = self._apply("matmul", [ins[0], vt], {})
            return self._front(out, out.type.rank - 1)
        if xb and yb and rx == 1 and ry == 1:  # in the product's type, as np.dot sums
            prod = self._apply("multiply", ins, {})
            attrs = {"axis": (1,), "keepdims": False, "dtype": e.out.type.dtype}
            return self._apply("sum", [prod], attrs)
        if xb and yb and rx == 1:  # (n, 1, k) @ (n, ..., k, p), then the 1 dropped
            xx = self._apply("expand_dims", [ins[0]], {"axis": (1,)})
            out = self._apply("matmul", [self._expand(xx, ry), ins[1]], {})
            return self._apply("squeeze", [out], {"axis": (out.type.rank - 2,)})
        if xb and yb and ry == 1:  # (n, ..., m, k) @ (n, k, 1), then the 1 dropped
            yy = self._apply("expand_dims", [ins[1]], {"axis": (2,)})
            out = self._apply("matmul", [ins[0], self._expand(yy, rx)], {})
            return self._apply("squeeze", [out], {"axis": (out.type.rank - 1,)})
        if (xb and rx == 1) or (yb and ry == 1) or (xb != yb and min(rx, ry) == 1):
            return self._apply("matmul", ins, {})
        rank = max(rx, ry)
        return self._apply(
            "matmul", [self._expand(v, rank) if b else v for v, b in zip(ins, (xb, yb))], {}
        )

    def _index_op(self, e: Eqn, batched):
        index = e.params["index"]
        base = self._atom(e.inputs[0])
        new, at, pos = [], None, 0  # at: where the loop axis lands among the result's axes
        ragged: list = []  # (axis among the result's axes, length) of ragged slices
        if id(e.inputs[0]) in self.ragged:
            raise Refused(f"`{e.op}` into a ragged value")
        for item in index:
            if item is None:
                new.append(None)
                pos += 1
                continue
            if item is Ellipsis:
                new.append(item)
                continue
            if isinstance(item, SliceSpec):
                if self._mentions(item.start):
                    raise Refused(f"a slice [{item!r}] whose start moves with {self.var}")
                if self._mentions(item.length):
                    item = self._hull(item, pos, ragged)
                new.append(item)
                pos += 1
                continue
            f = affine(item, self.var)
            if f is None:
                raise Refused(f"the index {item} is not linear in {self.var}")
            a, rest = f
            if a == 0:
                new.append(item)
                continue
            if at is not None:
                raise Refused(f"two indices depend on {self.var} (a diagonal)")
            new.append(SliceSpec(a * self.start + rest, a * self.step, self.count))
            at = pos
            pos += 1
        if batched[0]:
            if at is not None:
                raise Refused(f"an index that depends on {self.var} into a value over the loop")
            new.insert(0, SliceSpec(0, 1, self.count))
            at = 0
        index = tuple(new)
        if ragged and at is None:  # one region per iteration all the same, but for its length
            if e.op == "store":
                raise Refused("every iteration writes the same place, of another length")
            out = self._apply("getitem", [base], {"index": index})
            out = self._apply("expand_dims", [out], {"axis": (0,)})
            self._ragged(e, [(p + 1, n) for p, n in ragged])
            return self._set(e, out, True)
        # the result's axes with the loop axis moved to the front
        front = [(p + 1 if p < at else p, n) for p, n in ragged] if at is not None else []
        if e.op == "getitem":
            out = self._apply("getitem", [base], {"index": index})
            if at is None:
                return self._set(e, out, False)
            self._ragged(e, front)
            return self._set(e, self._front(out, at), True)
        value, vb = self._atom(e.inputs[1]), batched[1]
        dtype = e.out.type.dtype
        if vb and self._weak(e.inputs[1]) and dtype.kind in "iu" and dtype != np.dtype(np.int64):
            # NumPy raises OverflowError for a Python int the array's type cannot hold
            raise Refused(f"the loop variable stored into {dtype} (it may not fit)")
        if ragged:  # outside each iteration's slice the region keeps what it holds
            value = self._expand(value if vb else self._lift(value), pos - 1)
            old = self._front(self._apply("getitem", [base], {"index": index}), at)
            if value.type.dtype != old.type.dtype:  # as the store casts it
                value = self._apply("astype", [value], {"dtype": old.type.dtype})
            value = self._apply("where", [self._mask(old.type.shape, front), value, old], {})
            vb = True
        if at is None:
            if vb:
                raise Refused("every iteration writes the same place")
            return self._set(e, self._apply("store", [base, value], {"index": index}), False)
        if vb or value.type.rank:  # the value over the loop, its loop axis at ``at``
            if not vb:
                value = self._lift(value)
            value = self._loop_axis(self._expand(value, pos - 1), at)
        out = self._apply("store", [base, value], {"index": index})
        return self._set(e, out, batched[0])

    def _moving_arange(self, e: Eqn, attrs):
        """``arange(a*i + b, a*i + c, step)``: ``arange(b, c, step)`` plus each iteration's
        ``a*i`` (its length must not move)."""
        start, stop = attrs["start"], attrs["stop"]
        fs, fe = affine(start, self.var), affine(stop, self.var)
        dtype = attrs["dtype"]
        if fs is None or fe is None or fs[0] != fe[0] or dtype is None or dtype.kind not in "iu":
            raise Refused(f"`arange` whose length moves with {self.var}")
        base = self._apply("arange", [], {**attrs, "start": fs[1], "stop": fe[1]})
        shift = self._loop_values(fs[0] * Sym(self.var, nonneg=False))
        shift = self._apply("expand_dims", [shift], {"axis": (1,)})
        if shift.type.dtype != base.type.dtype:
            shift = self._apply("astype", [shift], {"dtype": base.type.dtype})
        return self._set(e, self._apply("add", [shift, base], {}), True)

    def _lift(self, value):
        """An unbatched value with a loop axis of size 1 (it broadcasts over the loop)."""
        return self._apply("expand_dims", [value], {"axis": (0,)})

    def _ragged(self, e: Eqn, ragged) -> None:
        if ragged:
            self.ragged[id(e.out)] = tuple(dict.fromkeys(ragged))

    def _hull(self, item: SliceSpec, pos: int, ragged: list) -> SliceSpec:
        """The slice covering every iteration's ``item`` (its length moves with the loop
        variable): as long as the longest, at the first or the last iteration."""
        f = affine(item.length, self.var)
        if f is None:
            raise Refused(f"a slice length {item.length} not linear in {self.var}")
        last = self.start + self.step * (self.count - 1)
        longest = last if f[0] * self.step > 0 else self.start
        ragged.append((pos, item.length))
        return SliceSpec(item.start, item.step, substitute(item.length, self.var, longest))

    def _mask(self, shape, ragged):
        """Where a value of ``shape`` (loop axis first) holds its iteration's elements."""
        rank, mask = len(shape), None
        for p, length in ragged:
            a, rest = affine(length, self.var)
            first = a * self.start + rest
            n = self._apply(  # each iteration's length, along the loop axis
                "arange",
                (),
                {
                    "start": first,
                    "stop": first + a * self.step * self.count,
                    "step": a * self.step,
                    "dtype": np.dtype(np.int64),
                },
            )
            n = self._apply("expand_dims", [n], {"axis": tuple(range(1, rank))})
            j = self._apply(
                "arange", (), {"start": 0, "stop": shape[p], "step": 1, "dtype": np.dtype(np.int64)}
            )
            others = tuple(k for k in range(rank) if k != p)
            j = self._apply("expand_dims", [j], {"axis": others})
            inside = self._apply("less", [j, n], {})
            mask = inside if mask is None else self._apply("logical_and", [mask, inside], {})
        return mask

    def _ragged_reduce(self, e: Eqn, x, ragged):
        """A reduction of a ragged value: the elements outside each iteration's slice are the
        reduction's identity."""
        axis = tuple(a + 1 for a in e.params["axis"])
        inside = [(p, n) for p, n in ragged if p in axis]
        if inside:
            identity = _REDUCE_IDENTITY[e.op](x.type.dtype)
            if identity is None:
                raise Refused(f"`{e.op}` over a ragged axis")
            fill = Literal(identity, TensorType(x.type.dtype, ()))
            x = self._apply("where", [self._mask(x.type.shape, inside), x, fill], {})
        out = self._apply(e.op, [x], {**e.params, "axis": axis})
        keep = e.params.get("keepdims", False)
        rest = [
            (p if keep else p - sum(a < p for a in axis), n) for p, n in ragged if p not in axis
        ]
        self._ragged(e, rest)
        return self._set(e, out, True)

    def _contraction(self, g):
        """``sum over k of p[k] * q[k, :]`` (a number times a vector at each iteration) as
        ``P @ Q``: a matrix-vector product, BLAS's, instead of a product then a sum."""
        m = self.a.producer.get(id(g)) if isinstance(g, Var) else None
        if m is None or m.op != "multiply" or not all(isinstance(a, Var) for a in m.inputs):
            return None
        p, q = m.inputs
        if p.type.rank > q.type.rank:
            p, q = q, p
        if not (self._is_batched(p) and self._is_batched(q)):
            return None
        if p.type.rank != 0 or q.type.rank != 1 or p.type.dtype != q.type.dtype:
            return None
        if self._weak(p) or self._weak(q) or p.type.dtype.kind not in "fc":
            return None
        vp, vq = self._atom(p), self._atom(q)
        if vp.type.shape[0] != self.count or vq.type.shape[0] != self.count:
            return None
        out = self._apply("matmul", [vp, vq], {})
        return out if out.type == g.type else None

    def _accumulate(self, e: Eqn, keep: int):
        """``start + g`` at every iteration: ``start + sum(g over the new axis)`` (``max`` for
        ``np.maximum``, ``min`` for ``np.minimum``)."""
        g = e.inputs[1 - keep]
        if not self._is_batched(g):
            raise Refused("an accumulation of the same value at every iteration")
        if id(g) in self.ragged:
            raise Refused("an accumulation of a ragged value")
        summed = _ACCUMULATE[e.op] == "sum"
        product = self._contraction(g) if summed and g.type.dtype == e.out.type.dtype else None
        if product is not None:
            self.kinds.add("contraction")
            ins = [product, product]
            ins[keep] = self._atom(e.inputs[keep])
            return self._apply(e.op, ins, dict(e.params))
        total = self._atom(g)
        if total.type.shape[0] == 1 and self.count != 1:
            shape = (self.count, *total.type.shape[1:])
            total = self._apply("broadcast_to", [total], {"shape": shape})
        dtype = e.out.type.dtype  # each step adds in the accumulator's type, as NumPy does
        if dtype.kind not in "iufc":
            raise Refused(f"an accumulation of {dtype} values")
        if total.type.dtype != dtype:
            total = self._apply("astype", [total], {"dtype": dtype})
        reduction = _ACCUMULATE[e.op]
        attrs = {"axis": (0,), "keepdims": False}
        if reduction == "sum":
            attrs["dtype"] = dtype
        s = self._apply(reduction, [total], attrs)
        self.kinds.add("reduce")
        ins = [s, s]
        ins[keep] = self._atom(e.inputs[keep])
        return self._apply(e.op, ins, dict(e.params))


def _attr_dims(attrs: dict):
    for v in attrs.values():
        if isinstance(v, tuple):
            yield from (x for x in v if not isinstance(x, SliceSpec))
        else:
            yield v
