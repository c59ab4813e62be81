"""Fusion: cut a graph into kernels, recording the rule and the reason of every decision.

Values are computed by *compute* equations (maps, reductions, scans, contractions, attention,
user operators, stores). Reorders (transpose, slices, broadcasts, expand_dims, reshape,
concatenate, flip) are *index maps*: never a kernel of their own, they are copied into every
kernel that reads through them. Scalar arithmetic (rank-0 maps of rank-0 values) is treated the
same way: each kernel that needs it computes it once.

Kernels grow from their last equation backwards (consumers first, like XLA's instruction
fusion): equations are visited in reverse order; one not yet in a kernel roots a new one, which
then pulls in producers, latest first, while a rule allows it:

* ``map-chain``: a map read at the kernel's domain without broadcasting is computed inside
  (through any index map: transposes, shifted slices of a stencil, concatenation);
* ``broadcast``: a value read broadcast (once per row, per column...) is materialized rather
  than recomputed per element, except inside a reduction kernel where it is a per-row value;
* ``reduction``: a reduction joins a kernel whose values all sit at its input shape (full) or
  its reduced shape; reductions over the same rows share one kernel (softmax, layer norm);
* ``scan``: a scan joins a kernel of maps at its shape (prologue and epilogue);
* ``contraction``: a matrix product (or attention) joins the maps that follow it at its output
  shape (epilogue); its operands are read from memory (through index maps: a transpose is
  folded into the product, never copied); one product per kernel;
* ``multi-output``: a value also needed outside joins only at the kernel's full shape, read
  without moving data, and only when no path leaves the kernel and comes back (no cycle);
* ``store``: ``A[idx] = v`` computes ``v`` over the region ``idx`` and writes it; the array
  written into is materialized first; if ``v`` reads that array elsewhere than ``idx`` the
  kernel must not write in place (NumPy evaluates the right-hand side first);
* user operators that are not elementwise run alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Eqn, Graph, Literal, Var
from ..lower.families import family
from ..lower.index_map import (
    apart,
    broadcasts,
    exact_same,
    getitem_map,
    moves_data,
    one_element,
    view_map,
)
from ..ops.indexing import getitem_shape
from ..registry import REGISTRY
from ..shapes import ShapeContext, size_of
from ..symbolic import mul
from ..verify import verify
from .plan import Decision, Kernel, StoreOut

HEAVY = ("contraction", "attention")


def nbytes(t) -> object:
    return mul(size_of(t.shape), t.dtype.itemsize)


def _transparent(eqn: Eqn) -> bool:
    return family(eqn) in ("index", "scalar")


@dataclass(eq=False)
class Group:
    name: str
    root: Eqn
    kind: str
    domain: tuple
    reduced: tuple = ()
    scan_axis: int | None = None
    members: list = field(default_factory=list)
    edges: list = field(default_factory=list)  # (producer, consumer, chain) inside the kernel
    heavy: Eqn | None = None
    reasons: list = field(default_factory=list)


class Fuser:
    def __init__(self, graph: Graph, names: dict[int, str], facts=None):
        self.graph = graph
        self.names = names
        self.facts = facts
        self.prod = {id(e.out): e for e in graph.eqns}
        self._paths: dict[int, list] = {}
        self.order = {id(e): i for i, e in enumerate(graph.eqns)}
        self.outputs = {id(a) for a in graph.outputs if isinstance(a, Var)}
        # nodes: compute equations, and index/scalar equations whose value is an output
        self.nodes = [e for e in graph.eqns if not _transparent(e) or id(e.out) in self.outputs]
        self.node_ids = {id(e) for e in self.nodes}
        self.users: dict[int, list] = {id(e): [] for e in self.nodes}  # (consumer, operand, chain)
        for c in self.nodes:
            for i, a in enumerate(self._operands(c)):
                for src, chain in self.paths(a):
                    p = self.prod.get(id(src))
                    if p is not None and id(p) in self.node_ids:
                        self.users[id(p)].append((c, i, chain))
        self._reach()
        self.group_of: dict[int, Group] = {}
        self.decisions: list[Decision] = []
        self.ctx = ShapeContext(facts=[*(facts or ()), *graph.guards])

    def same(self, a, b) -> bool:
        """Shapes known equal (by the graph's guards and facts, never by assumption)."""
        a, b = tuple(a), tuple(b)
        return len(a) == len(b) and all(
            x == y or self.ctx.known(x, "==", y) is True for x, y in zip(a, b)
        )

    # -- graph walking ---------------------------------------------------------------------
    def _operands(self, eqn):
        """What an equation reads; a transparent root reads itself through its own chain."""
        return (eqn.out,) if _transparent(eqn) else eqn.inputs

    def paths(self, atom):
        """(source, chain of transparent equations from the source to ``atom``) for each leaf."""
        if isinstance(atom, Literal):
            return []
        found = self._paths.get(id(atom))
        if found is None:
            found = self._paths[id(atom)] = self._find_paths(atom)
        return found

    def _find_paths(self, atom):
        eqn = self.prod.get(id(atom))
        if eqn is None or not _transparent(eqn):
            return [(atom, ())]
        found = []
        for a in eqn.inputs:
            for src, chain in self.paths(a):
                found.append((src, (*chain, eqn)))
        if not any(isinstance(a, Var) for a in eqn.inputs):
            found.append((None, (eqn,)))  # computed from literals alone
        return found

    def _reach(self):
        """Bit masks of descendants and ancestors among nodes (for the cycle check)."""
        self.bit = {id(e): 1 << i for i, e in enumerate(self.nodes)}
        self.desc = {id(e): 0 for e in self.nodes}
        self.anc = {id(e): 0 for e in self.nodes}
        for e in reversed(self.nodes):
            for c, _, _ in self.users[id(e)]:
                self.desc[id(e)] |= self.bit[id(c)] | self.desc[id(c)]
        for e in self.nodes:
            for c, _, _ in self.users[id(e)]:
                self.anc[id(c)] |= self.bit[id(e)] | self.anc[id(e)]

    def name(self, eqn) -> str:
        return f"{eqn.op} {self.names.get(id(eqn.out), '?')}"

    # -- the driver ------------------------------------------------------------------------
    def run(self) -> list[Group]:
        groups = self.groups = []
        for e in reversed(self.nodes):
            if id(e) in self.group_of:
                continue
            g = self._new_group(e, f"k{len(groups)}")
            groups.append(g)
            self._grow(g)
        return groups[::-1]

    def _new_group(self, e, name) -> Group:
        fam = family(e)
        shape = e.out.type.shape
        if fam == "reduce":
            g = Group(name, e, "reduction", e.inputs[0].type.shape, e.params["axis"])
        elif fam == "scan":
            g = Group(name, e, "scan", shape, scan_axis=e.params["axis"])
        elif fam in HEAVY:
            g = Group(name, e, fam, shape, heavy=e)
        elif fam == "custom":
            g = Group(name, e, "custom", shape)
        elif fam == "store":
            base, index = e.inputs[0], e.params["index"]
            g = Group(name, e, "elementwise", getitem_shape(None, base.type.shape, index))
        else:
            g = Group(name, e, "elementwise", shape)  # "copy" if nothing computes (see below)
        g.members.append(e)
        self.group_of[id(e)] = g
        g.mask = self.bit[id(e)]
        g.desc, g.anc = self.desc[id(e)], self.anc[id(e)]
        return g

    def _grow(self, g: Group):
        seen: set[int] = set()
        while True:
            candidates = [
                p
                for m in g.members
                for i, a in enumerate(self._operands(m))
                for src, _ in self.paths(a)
                for p in [self.prod.get(id(src))]
                if p is not None
                and id(p) in self.node_ids
                and id(p) not in self.group_of
                and id(p) not in seen
            ]
            if not candidates:
                return
            p = max(candidates, key=lambda e: self.order[id(e)])
            seen.add(id(p))
            ok, rule, reason = self._legal(g, p)
            self.decisions.append(Decision(rule, ok, self.name(p), g.name, reason))
            if ok:
                self._add(g, p)

    def _add(self, g: Group, p: Eqn):
        g.members.append(p)
        self.group_of[id(p)] = g
        g.mask |= self.bit[id(p)]
        g.desc |= self.desc[id(p)]
        g.anc |= self.anc[id(p)]
        for c, i, chain in self.users[id(p)]:
            if self.group_of.get(id(c)) is g:
                g.edges.append((p, c, i, chain))

    # -- legality --------------------------------------------------------------------------
    def _legal(self, g: Group, p: Eqn) -> tuple[bool, str, str]:
        fam = family(p)
        inside = [u for u in self.users[id(p)] if self.group_of.get(id(u[0])) is g]
        outside = [u for u in self.users[id(p)] if self.group_of.get(id(u[0])) is not g]
        if g.kind == "custom" or fam == "custom":
            alone = g.root if g.kind == "custom" else p
            if REGISTRY[alone.op].builtin:  # the built-in custom op: a graph break
                return False, "break", "a graph break (a call PyPTO has no op for) runs alone"
            return False, "custom", "a user operator that is not elementwise runs alone"
        if fam == "store":
            return False, "store", "the result of a slice assignment is materialized"
        for c, i, _ in inside:
            cf = family(c)
            if c.out.type.weak and not p.out.type.weak:
                return (
                    False,
                    "python-number",
                    "a Python number (float(x), x.item(), bool(...)) is read from the array",
                )
            if cf == "store" and i == 0:
                return False, "store", "the array a slice assignment writes into is materialized"
            if cf in HEAVY:
                return (
                    False,
                    "contraction",
                    ("operands of a matrix product are read from memory (BLAS / tiled loads)"),
                )
            if cf == "gather":
                return (
                    False,
                    "gather",
                    "a gather reads its operands from memory (the indices are known before the "
                    "kernel; the operand is read wherever they point)",
                )
            if cf == "custom":
                if REGISTRY[c.op].builtin:
                    return False, "break", "a graph break reads its operands from memory"
                return False, "custom", "a user operator reads its operands from memory"
        mask = g.mask | self.bit[id(p)]
        desc = self._through_kernels(g.desc | self.desc[id(p)], "desc", g)
        anc = self._through_kernels(g.anc | self.anc[id(p)], "anc", g)
        if desc & anc & ~mask:
            return False, "cycle", "a path leaves the kernel and comes back through another"
        multi = bool(outside) or id(p.out) in self.outputs
        if multi:
            if self._place(g, p.out.type.shape) is None:
                return (
                    False,
                    "multi-output",
                    ("also needed outside this kernel, at a shape other than the kernel's"),
                )
            if not all(self._trivial(ch) for _, _, ch in inside):
                return False, "multi-output", "also needed outside, and read here through a reorder"
        ok, rule, reason = self._fits(g, p, fam, inside)
        if ok and multi:
            reason += "; also a kernel output (needed outside)"
        return ok, rule, reason

    def _through_kernels(self, reach: int, way: str, g: Group) -> int:
        """``reach`` (a mask of descendants or ancestors, ``way``) widened through the kernels
        made so far: a kernel runs whole, so reaching one of its members reaches all of them
        and what they reach (two kernels must not need each other through different
        members)."""
        changed = True
        while changed:
            changed = False
            for h in self.groups:
                if h is g or not reach & h.mask:
                    continue
                wider = reach | h.mask | getattr(h, way)
                if wider != reach:
                    reach, changed = wider, True
        return reach

    def _fits(self, g: Group, p: Eqn, fam: str, inside) -> tuple[bool, str, str]:
        shape = p.out.type.shape
        if fam in ("map", "gather"):  # (a gather: computed at its result's positions)
            if g.kind in ("elementwise", "contraction", "attention"):
                broadcast = not all(self._unbroadcast(c, i, ch) for c, i, ch in inside)
                if broadcast:
                    stat = self._row_stat(g, p) if g.kind == "elementwise" else None
                    if stat is None or not self._become_reduction(g, *stat, inside):
                        return (
                            False,
                            "broadcast",
                            "read broadcast: materialized once instead of recomputed per element",
                        )
                    return True, "reduction", "a per-row value of a reduction over these rows"
                if g.kind in HEAVY and not self.same(shape, g.domain):
                    return False, "contraction", "the epilogue runs at the product's shape"
                if fam == "gather":
                    return (
                        True,
                        "gather",
                        "computed in the kernel at the positions its indices hold",
                    )
                return True, "map-chain", "computed in the kernel through its index map"
            if g.kind in ("reduction", "rowwise"):
                place = self._place(g, shape)
                if place is None:
                    return False, "reduction", "not at the kernel's full or reduced shape"
                for c, _, chain in inside:
                    if not self._trivial(chain):
                        return False, "reduction", "read through a reorder that moves data"
                    if (
                        place == "full"
                        and family(c) not in ("reduce",)
                        and (self._place(g, c.out.type.shape) != "full")
                    ):
                        return False, "reduction", "a full-shape value read at the reduced shape"
                return True, "reduction", f"a map at the {place} shape of the rows"
            if g.kind == "scan":
                trivial = all(self._trivial(ch) for _, _, ch in inside)
                if not (trivial and self.same(shape, g.domain)):
                    return False, "scan", "a scan's prologue runs at its shape, element by element"
                return True, "scan", "scan prologue"
        if fam == "reduce":
            axes, dom = p.params["axis"], p.inputs[0].type.shape
            if g.kind in ("reduction", "rowwise"):
                if self.same(dom, g.domain) and axes == g.reduced:
                    return True, "reduction", "a reduction over the same rows"
                return False, "reduction", "reduces another shape or other axes"
            if g.kind == "elementwise" and g.heavy is None:
                if not self._become_reduction(g, dom, axes, inside):
                    return (
                        False,
                        "reduction",
                        (
                            "the kernel has values at neither the reduction's full nor reduced "
                            "shape, or reads through reorders that move data"
                        ),
                    )
                return True, "reduction", "the maps after it run at its reduced shape"
            return False, "reduction", f"a {g.kind} kernel does not take a reduction"
        if fam == "scan":
            if (
                g.kind == "elementwise"
                and g.heavy is None
                and not any(family(m) == "store" for m in g.members)  # an epilogue of maps
                and self.same(shape, g.domain)
                and all(self._trivial(ch) for *_, ch in g.edges)
                and all(self._trivial(ch) and self._unbroadcast(c, i, ch) for c, i, ch in inside)
            ):
                g.kind, g.scan_axis = "scan", p.params["axis"]
                return True, "scan", "the maps after it are its epilogue"
            return False, "scan", "a scan joins only maps at its own shape"
        if fam in HEAVY:
            if (
                g.kind == "elementwise"
                and g.heavy is None
                and self.same(shape, g.domain)
                and all(
                    family(c) == "map" and self._trivial(ch) and self._unbroadcast(c, i, ch)
                    for c, i, ch in inside
                )
            ):
                g.kind, g.heavy = fam, p
                return True, "contraction", "the maps after it are its epilogue"
            if g.heavy is not None:
                return False, "contraction", "one matrix product per kernel"
            article = "an" if g.kind[0] in "aeiou" else "a"
            return False, "contraction", f"{article} {g.kind} kernel does not take a matrix product"
        return False, "kind", f"a {fam} does not fuse into a {g.kind} kernel"

    def _become_reduction(self, g: Group, dom, axes, inside) -> bool:
        """Turn an elementwise kernel into a reduction over ``axes`` of ``dom``, if all its
        values sit at that domain's full or reduced shape and it reads nothing through
        reorders that move data."""
        if g.kind != "elementwise" or g.heavy is not None:
            return False
        trial = Group(g.name, g.root, "reduction", dom, axes)
        for m in g.members:
            if family(m) == "store" or self._place(trial, m.out.type.shape) is None:
                return False
        edges = [ch for *_, ch in g.edges] + [ch for _, _, ch in inside]
        if not all(self._trivial(ch) for ch in edges):
            return False
        g.kind, g.domain, g.reduced = "reduction", dom, axes
        return True

    def _row_stat(self, g: Group, p: Eqn):
        """(domain, axes) of a reduction over the kernel's domain that p is computed from by
        maps (a per-row statistic: the mean, the variance, sqrt(var + eps)), or None."""
        todo, seen = [p], set()
        while todo:
            e = todo.pop()
            if id(e) in seen or id(e) in self.group_of:
                continue
            seen.add(id(e))
            fam = family(e)
            if fam == "reduce":
                dom, axes = e.inputs[0].type.shape, e.params["axis"]
                trial = Group(g.name, g.root, "reduction", dom, axes)
                if self.same(dom, g.domain) and self._place(trial, p.out.type.shape) == "reduced":
                    return dom, axes
                continue
            if fam not in ("map", "scalar", "index"):
                continue
            for a in e.inputs:
                q = self.prod.get(id(a))
                if q is not None:
                    todo.append(q)
        return None

    def _place(self, g: Group, shape) -> str | None:
        if self.same(shape, g.domain):
            return "full"
        if g.kind in ("reduction", "rowwise"):
            dropped = tuple(d for a, d in enumerate(g.domain) if a not in g.reduced)
            kept = tuple(1 if a in g.reduced else d for a, d in enumerate(g.domain))
            if self.same(shape, dropped) or self.same(shape, kept):
                return "reduced"
        return None

    def _unbroadcast(self, c: Eqn, i: int, chain) -> bool:
        """The consumer reads each element of the value once (no broadcasting)."""
        if any(broadcasts(view_map(e, exact_same), e.out.type.shape, exact_same) for e in chain):
            return False
        operand = chain[-1].out if chain else None
        if operand is None:
            operand = c.inputs[i] if not _transparent(c) else c.out
        fam = family(c)
        if fam == "map":
            return self.same(operand.type.shape, c.out.type.shape)
        if fam == "store":
            return self.same(
                operand.type.shape, getitem_shape(None, c.inputs[0].type.shape, c.params["index"])
            )
        return True

    @staticmethod
    def _trivial(chain) -> bool:
        """The reorders only add or drop size-1 axes or broadcast (no data moves)."""
        same = exact_same  # (as written: fusion's trivial reorders do not ask the facts)
        return not any(
            moves_data(view_map(e, same), e.inputs[0].type.shape, e.out.type.shape, same)
            for e in chain
            if family(e) != "scalar"
        )


# -- groups to kernels ----------------------------------------------------------------------------
def build_kernels(fuser: Fuser, groups: list[Group]) -> list[Kernel]:
    kernels = []
    for g in groups:
        members = {id(m) for m in g.members}
        eqns: dict[int, Eqn] = {}
        inputs: dict[int, Var] = {}
        for m in g.members:  # each member, and the index maps between it and what it reads
            eqns[id(m)] = m
            for a in fuser._operands(m):
                for src, chain in fuser.paths(a):
                    for e in chain:
                        eqns[id(e)] = e
                    p = fuser.prod.get(id(src))
                    if src is not None and (p is None or id(p) not in members):
                        inputs.setdefault(id(src), src)
        outputs = [
            m.out
            for m in sorted(g.members, key=lambda e: fuser.order[id(e)])
            if id(m.out) in fuser.outputs
            or any(fuser.group_of.get(id(c)) is not g for c, _, _ in fuser.users[id(m)])
        ]
        body = Graph(
            tuple(inputs.values()),
            (),
            tuple(sorted(eqns.values(), key=lambda e: fuser.order[id(e)])),
            tuple(outputs),
            fuser.graph.guards,
        )
        verify(body, facts=fuser.facts, named=False)
        kind = _final_kind(fuser, g)
        late = ()
        if g.heavy is not None:  # inputs only the epilogue reads
            early = {id(a) for a in g.heavy.inputs}
            early |= {id(s) for a in g.heavy.inputs for s, _ in fuser.paths(a)}
            late = tuple(v for v in inputs.values() if id(v) not in early)
        stores = tuple(
            StoreOut(m.out, m.inputs[0], m.params["index"], inplace=False)
            for m in g.members
            if family(m) == "store"
        )
        k = Kernel(
            g.name,
            kind,
            tuple(g.domain),
            body,
            reduced=tuple(g.reduced),
            scan_axis=g.scan_axis,
            late_inputs=late,
            stores=stores,
        )
        k.hazards = _store_hazard(fuser, g)
        k.unfused_bytes = _unfused(body)
        kernels.append(k)
    return kernels


def _final_kind(fuser: Fuser, g: Group) -> str:
    if g.kind == "reduction":
        reduces = {id(m.out) for m in g.members if family(m) == "reduce"}
        for m in g.members:
            full = family(m) == "map" and fuser.same(m.out.type.shape, g.domain)
            if full and any(_depends(fuser, m, r) for r in reduces):
                return "rowwise"
    if g.kind == "elementwise" and all(_transparent(m) for m in g.members):
        return "copy"
    return g.kind


def _depends(fuser: Fuser, eqn: Eqn, value_id: int, _seen=None) -> bool:
    seen = _seen if _seen is not None else set()
    for a in eqn.inputs:
        if not isinstance(a, Var) or id(a) in seen:
            continue
        seen.add(id(a))
        if id(a) == value_id:
            return True
        p = fuser.prod.get(id(a))
        if p is not None and _depends(fuser, p, value_id, seen):
            return True
    return False


def _store_hazard(fuser: Fuser, g: Group) -> dict[int, str]:
    """For each store of the kernel: why it must not write in place (its value reads the array
    it overwrites elsewhere than the region it writes), keyed by id of the store's output."""
    found = {}
    if _one_element(g):  # one element computed, then written: nothing read after a write
        return found
    for s in g.members:
        if family(s) != "store":
            continue
        base, index = s.inputs[0], s.params["index"]
        for m in g.members:
            operands = fuser._operands(m) if m is not s else m.inputs[1:]
            for a in operands:
                for src, chain in fuser.paths(a):
                    one = len(chain) == 1 and family(chain[0]) == "index"
                    if src is base and not (  # read where it is written, or apart from it
                        one
                        and (
                            view_map(chain[0], exact_same) == getitem_map(index, base.type.rank)
                            or apart(chain[0].params.get("index", ()), index)
                        )
                    ):
                        found[id(s.out)] = (
                            f"the value written into {fuser.names.get(id(base), 'the array')} "
                            "reads it at other positions: computed before it is overwritten"
                        )
    return found


def _one_element(g: Group) -> bool:
    """Whether the kernel computes one element (rank-0 values, stores of one element)."""
    for m in g.members:
        if family(m) != "store":
            if m.out.type.rank:
                return False
        elif not one_element(m.params["index"]) or (
            isinstance(m.inputs[1], Var) and m.inputs[1].type.rank
        ):
            return False
    return True


def _unfused(body: Graph):
    """Bytes one NumPy call per op would move: each op reads its operands, writes its result
    (reorders are views and move nothing)."""
    total = 0
    for e in body.eqns:
        if family(e) in ("index", "scalar"):
            continue
        own = REGISTRY[e.op].unfused_bytes
        if own is not None:  # an op standing for several (attention)
            total = total + own(e)
            continue
        for a in e.inputs:
            if isinstance(a, Var):
                total = total + nbytes(a.type)
        total = total + nbytes(e.out.type)
    return total
