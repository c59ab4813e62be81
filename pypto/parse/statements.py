"""Statements: assignment (tuple and chained), augmented assignment, stores into arrays,
``return``, ``for i in range(...)``, and ``if`` (decided at compile time, or at run time on a
scalar).

Writes follow NumPy: ``A[idx] = v`` and ``A += v`` change the array object, so every name bound
to it (and every view of it) sees the change; ``s += 1`` on a number rebinds ``s``. A name
re-assigned in a loop body or a run-time branch is *carried*: it gets one host variable of one
type (a Python ``0`` that becomes a float is widened, and the loop traced again).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
import numpy as np

from .. import api
from ..builder import GraphBuilder
from ..dtypes import result_type
from ..errors import (
    DTypeError,
    InternalError,
    PyptoError,
    ShapeError,
    UnsupportedError,
    execution_error,
)
from ..function import Block, Branch, Fail, HostVar, Loop, While
from ..lower.index_map import broadcasts, exact_same, view_map
from ..printer import symbols_in
from ..registry import REGISTRY
from ..shapes import ShapeContext
from ..symbolic import Expr, Sym, free_symbols
from ..types import TensorType
from .expressions import BINARY, is_host, is_size, is_tensor, run_time_slice
from .returns import Return, Returns, exits
from .values import Ref, SymCond, Undefined, View, ViewRef

AUGMENTED = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr,
    cst.BitXorAssign: cst.BitXor,
    cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift,
}
REFUSED = {
    "With": ("`with` blocks are not supported", None),
    "Try": ("`try` blocks are not supported", None),
    "TryStar": ("`try` blocks are not supported", None),
    "FunctionDef": ("a function defined inside the function", "define it at module level"),
    "ClassDef": ("a class defined inside the function", None),
    "Match": ("`match` statements are not supported", None),
    "Global": ("`global` is not supported", "pass the value as a parameter"),
    "Nonlocal": ("`nonlocal` is not supported", None),
    "Del": ("`del` is not supported", None),
    "Assert": ("`assert` is not supported", None),
    "Raise": ("`raise` is not supported", None),
    "Import": ("an import inside the function", "import at module level"),
    "ImportFrom": ("an import inside the function", "import at module level"),
}
DOCSTRING = m.Expr(value=m.SimpleString() | m.ConcatenatedString())


class Widen(Exception):
    """A carried variable changed type: trace the region again with these wider types."""

    def __init__(self, types: dict):
        self.types = types


class Statements(Returns):
    def exec_body(self, statements) -> None:
        statements = list(statements)
        for i, node in enumerate(statements):
            self.set_site(node)
            self.ensure_block()
            if isinstance(node, cst.SimpleStatementLine):
                for small in node.body:
                    self.set_site(small)
                    self.exec_node(small)
            elif isinstance(node, cst.If) and exits(node):
                if self.exec_If(node, rest=statements[i + 1 :]):
                    return  # a run-time `if` that returns: the rest ran inside its branches
            else:
                self.exec_node(node)

    def exec_node(self, node) -> None:
        kind = type(node).__name__
        handler = getattr(self, "exec_" + kind, None)
        if handler is not None:
            handler(node)
            return
        what, hint = REFUSED.get(kind, (f"the statement `{kind}` is not supported", None))
        raise self.unsupported(
            node,
            what,
            hint=hint,
            code="PPT106" if kind in ("While", "Break", "Continue") else "PPT102",
        )

    def exec_Pass(self, node) -> None:
        pass

    def exec_Expr(self, node) -> None:
        if not m.matches(node, DOCSTRING):
            self.eval(node.value)  # evaluated for its effects (a helper writing in place)

    def exec_Return(self, node) -> None:
        depth = self.control_depth
        if self.in_loop() or (depth != self.frames[-1].depth and depth not in self.return_depths):
            raise self.unsupported(
                node,
                "`return` inside a loop or an `if` decided at run time",
                hint="assign the result and return it at the end",
                code="PPT106",
            )
        if node.value is not None:
            self.whole.add(id(node.value))
        raise Return(None if node.value is None else self.eval(node.value))

    # -- assignment -------------------------------------------------------------------------------
    def exec_Assign(self, node) -> None:
        if self.masked_copy(node):  # a[m] = b[m] (parse/masks.py)
            return
        self.whole.add(id(node.value))
        value = self.eval(node.value)
        if len(node.targets) > 1 and isinstance(value, api.Tensor):
            value = View(value, self.new_ref(value))  # a = b = expr: one array, two names
        for target in node.targets:
            self.assign(target.target, value)

    def exec_AnnAssign(self, node) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value))

    def assign(self, target, value) -> None:
        if isinstance(target, cst.Name):
            self.env[target.value] = self.store_value(value, target.value)
            self.assigned_at[target.value] = self.frames[-1].src.parsed.site(target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if is_tensor(value):
                raise self.unsupported(
                    target, "unpacking an array into names", hint="index it: a, b = x[0], x[1]"
                )
            items = list(value) if isinstance(value, (tuple, list)) else None
            if items is None or len(items) != len(target.elements):
                raise self.unsupported(
                    target,
                    f"cannot unpack {value!r} into {len(target.elements)} names",
                    code="PPT206",
                )
            for element, item in zip(target.elements, items):
                if isinstance(element, cst.StarredElement):
                    raise self.unsupported(element, "starred assignment")
                self.assign(element.value, item)
        elif isinstance(target, cst.Subscript):
            base = self.eval(target.value)
            self.store_into(base, self.index_of(target), value, target)
        else:
            raise self.unsupported(target, f"assigning to {type(target).__name__}", code="PPT105")

    def store_into(self, base, index, value, node) -> None:
        if not isinstance(base, View):
            raise self.unsupported(
                node, "assigning into a temporary value (the write would be lost)", code="PPT105"
            )
        mask = self.mask_of(index)
        if mask is not None:  # parse/masks.py
            return self.store_mask(base, mask, value, node)
        items = index if isinstance(index, tuple) else (index,)
        items = tuple(self.as_tensor(i) if is_tensor(i) else i for i in items)
        if any(run_time_slice(i) for i in items):  # x[a:b] = v, run-time bounds
            return self.write_slice(base, items, value, node)  # (parse/index_arrays.py)
        split = self.basic_first(base.tensor, items)
        if split is not None and split[2] is None:  # x[idx, 1:3] = v: into the view x[:, 1:3]
            rest = list(split[1])
            while len(rest) > 1 and isinstance(rest[-1], slice) and rest[-1] == slice(None):
                rest.pop()  # (x[m, :] is x[m])
            rest = rest[0] if len(rest) == 1 else tuple(rest)
            return self.store_into(self.getitem(base, split[0]), rest, value, node)
        if self.scatter(base, items, value, node):  # parse/index_arrays.py
            return None
        for item in items:
            if is_tensor(item) or isinstance(item, (list, np.ndarray)):
                mask = is_tensor(item) and self.as_tensor(item).dtype == np.dtype(bool)
                raise self.unsupported(
                    node,
                    "boolean-mask assignment" if mask else "assignment through an index array",
                    hint="use np.where(mask, value, x)" if mask else "assign with basic indexing",
                    code="PPT105",
                )
        if isinstance(value, View):  # a view reads its base as it is now (a, b = b, a)
            value = self.current(value)
        value = self.operand(value)
        region = REGISTRY["store"].api(base.tensor, value, index)
        self.write_through(base, region, node)

    def current(self, view: View) -> api.Tensor:
        """The view's value on its Ref's current value."""
        t = self.read_ref(view.base)
        for op in view.ops:
            t = self.apply_view_op(op, t)
        return t

    def write_through(self, view: View, new, node) -> None:
        """Make ``new`` the value of ``view``: a write into the Ref it is a view of. The view
        is rebuilt on the Ref's current value, then each of its equations, from the view back
        to the Ref, says what its operand becomes (the ``write`` rule of its registry entry)."""
        root = self.read_ref(view.base)
        t = self.current(view)
        if any(op.op == "ravel" for op in view.ops):
            raise self.unsupported(
                node,
                "writing through np.ravel: NumPy's ravel is a view of a contiguous array and "
                "a copy of another, which a compiled function cannot tell apart",
                hint="write into the array itself with the matching index",
                code="PPT105",
            )
        made_by = self.producers()
        atom = t._atom
        while atom is not root._atom:
            e = made_by.get(id(atom))
            rule = REGISTRY[e.op].write if e is not None else None
            if rule is None:
                if e is None:
                    what = "this view"
                elif broadcasts(view_map(e, exact_same), e.out.type.shape, exact_same):
                    what = "a broadcast view (read-only in NumPy)"
                else:
                    what = f"a view made by `{e.op}`"
                raise self.unsupported(
                    node,
                    f"writing through {what}",
                    hint="write into the array itself with the matching index",
                    code="PPT105",
                )
            try:
                new = rule(api.Tensor(None, e.inputs[0], self.builder), new, **e.params)
            except UnsupportedError as err:
                raise err.with_context(None, self.site) from None
            atom = e.inputs[0]
        self.write_ref(view.base, new)

    def exec_AugAssign(self, node) -> None:
        op = BINARY[AUGMENTED[type(node.operator)]]
        target = node.target
        rhs = self.eval(node.value)
        if isinstance(target, cst.Name):
            held = self.env.get(target.value)
            if held is None or isinstance(held, Undefined):
                self.eval(target)  # raises the name error
            current = self.load_value(held)
            if isinstance(held, (Ref, ViewRef)) and self.is_array(held, self.as_tensor(current)):
                self.write_through(current, self.in_place(op, current, rhs, node), node)
            else:  # numbers (and NumPy scalars) are immutable: the name is rebound
                self.env[target.value] = self.store_value(
                    self.binop(op, current, rhs, node), target.value
                )
                self.assigned_at[target.value] = self.frames[-1].src.parsed.site(target)
        elif isinstance(target, cst.Subscript):
            base = self.eval(target.value)
            index = self.index_of(target)
            mask = self.mask_of(index) if isinstance(base, View) else None
            if mask is not None:  # parse/masks.py
                return self.store_mask(base, mask, rhs, node, op=op)
            current = self.getitem(base, index) if is_tensor(base) else None
            if current is None:
                raise self.unsupported(
                    target, "augmented assignment into a non-array", code="PPT105"
                )
            if self.is_array(None, self.as_tensor(current)):
                new = self.in_place(op, current, rhs, node)
            else:  # x[0] -= 1.0: a NumPy scalar's operator, then a store (casting as it does)
                new = self.binop(op, current, rhs, node)
            self.store_into(base, index, new, target)
        else:
            raise self.unsupported(target, "augmented assignment to an attribute", code="PPT105")

    def is_array(self, held, t) -> bool:
        """Whether a name holds an array (written in place by ``+=``), not a NumPy scalar
        (rebound): any rank but 0; at rank 0 an argument, or the result of an op NumPy gives
        as a 0-d array (a view, a copy, ``np.full``)."""
        if t.ndim > 0 or (isinstance(held, Ref) and held.param is not None):
            return True
        e = self.producers().get(id(t._atom))
        return e is not None and REGISTRY[e.op].returns_array(e.params)

    def in_place(self, op, current, rhs, node):
        """``current op= rhs`` as NumPy does it: same shape, cast with 'same_kind'."""
        t = self.as_tensor(current)
        new = self.as_tensor(self.binop(op, current, rhs, node))
        if new.dtype != t.dtype:
            if not np.can_cast(new.dtype, t.dtype, "same_kind"):
                raise _casting_error(op, new.dtype, t.dtype, self.site)
            new = new.astype(t.dtype)
        if len(new.shape) != len(t.shape) or not all(
            self.ctx.eq(a, b) for a, b in zip(new.shape, t.shape)
        ):
            raise ShapeError(
                f"non-broadcastable output operand with shape {self.ctx.show(t.shape)} doesn't "
                f"match the broadcast shape {self.ctx.show(new.shape)}",
                site=self.site,
            )
        if tuple(new.shape) != tuple(t.shape):  # equal sizes, spelled apart (x.0 and 3)
            new = REGISTRY["broadcast_to"].api(new, tuple(t.shape))
        return new

    # -- if ---------------------------------------------------------------------------------------
    def exec_If(self, node, rest=None) -> bool:
        """An ``if``; ``rest``: the statements after it, when a branch may return (a run-time
        ``if`` then runs them inside each branch that does not: parse/returns.py). True where
        they ran here."""
        self.tested.add(id(node.test))  # only its truth counts (`a and b` of any types)
        cond = self.eval(node.test)
        if isinstance(cond, Expr):
            cond = self.decide("ne", cond, 0)
        fact = cond.guard if isinstance(cond, SymCond) else None
        if is_host(cond):  # the taken branch, then (a branch may return) the rest
            if self.truth(cond, node.test):
                self.exec_body([*node.body.body, *(rest or ())])
            elif isinstance(node.orelse, cst.If):  # elif
                if not self.exec_If(node.orelse, rest):
                    self.exec_body(rest or ())
            else:
                body = node.orelse.body.body if node.orelse is not None else ()
                self.exec_body([*body, *(rest or ())])
            return True
        t = self.run_time_test(node, cond)
        returning = rest is not None and self.exits_here(node)  # (parse/returns.py)
        cond_ref = self.new_ref(t, "cond")
        statements = [*node.body.body, *([node.orelse] if node.orelse is not None else [])]
        after = rest if returning else ()  # (each branch runs the rest: parse/returns.py)

        def then_body():
            self.exec_body([*node.body.body, *after])

        def else_body():
            if isinstance(node.orelse, cst.If):  # elif
                if not self.exec_If(node.orelse, rest if returning else None) and returning:
                    self.exec_body(rest)
            else:
                body = node.orelse.body.body if node.orelse is not None else ()
                self.exec_body([*body, *after])

        if returning:
            statements += rest
            then_body, else_body = self.returning(then_body), self.returning(else_body)

        check = (lambda after_then: self.check_returns(node, after_then)) if returning else None
        run = self.branch(cond_ref, then_body, else_body, fact, check)
        if not returning:
            self.carried_region(node, statements, run)
            return False
        self.return_depths.add(self.control_depth + 1)
        try:
            self.carried_region(node, statements, run)
        finally:
            self.return_depths.discard(self.control_depth + 1)
        if self.in_loop():  # a break or continue: the rest of the body ran in the branches
            return True
        raise Return(self.returned())

    def run_time_test(self, node, cond):
        """The tensor an ``if`` / ``while`` test decided at run time is (a scalar: NumPy has
        no truth value for an array of more than one element)."""
        t = self.as_tensor(cond)
        if t.ndim:
            raise self.unsupported(
                node.test,
                "the truth value of an array",
                hint="use np.any(...) or np.all(...)",
                code="PPT106",
            )
        return t

    def short_circuit(self, node, left):
        """``left and right`` / ``left or right``, ``left`` known only at run time, as Python
        runs it: ``right`` is computed only where ``left`` lets it (a run-time ``Branch``;
        guards ``right`` needs are checked only there: ``i < n and x[i] > 0``). Where only the
        truth counts (``tested``), the result is a bool; else ``left`` or ``right`` itself,
        which must be of one type."""
        is_and = isinstance(node.operator, cst.And)
        tested = id(node) in self.tested
        fact = left.guard if isinstance(left, SymCond) else None
        if fact is not None and not is_and:
            fact = fact.negated()  # (right runs where left is false)
        a = self.as_tensor(left)
        go = self.truth_of(a)
        if not is_and:
            go = api.apply("logical_not", (go,), {"weak": True} if go._atom.type.weak else {})
        cond_ref = self.new_ref(go, "cond")
        keep = self.new_ref(a, "left")
        name = f"<{'and' if is_and else 'or'}{id(node)}>"

        def right():
            b = self.eval(node.right)
            if is_tensor(b) and self.as_tensor(b).ndim:
                raise self.bool_op_refused(node, "arrays")
            if tested:
                b = self.truth_of(self.as_tensor(b)) if is_tensor(b) else bool(self.truth(b, node))
            elif not is_tensor(b) or self.as_tensor(b)._atom.type != a._atom.type:
                raise self.bool_op_refused(node, "types")
            self.env[name] = self.store_value(b, name)

        def other():
            self.env[name] = (
                (not is_and) if tested else self.store_value(self.load_value(keep), name)
            )

        self.carried_region(node, [], self.branch(cond_ref, right, other, fact))
        return self.load_value(self.env.pop(name))

    def branch(self, cond_ref, then_body, else_body, fact, check=None):
        """``run(hosts)`` for ``carried_region``: a run-time ``Branch`` on ``cond_ref``, each
        side traced (knowing ``fact`` or its negation), the names both bind merged;
        ``check(after_then)`` where both sides can continue."""

        def run(hosts):
            before = self.env_state()
            then, then_guards = self.side(then_body, hosts, fact)
            after_then = self.env_state()
            self.set_env_state(before)
            orelse, else_guards = self.side(
                else_body, hosts, None if fact is None else fact.negated()
            )
            if not (_fails(then) or _fails(orelse)):
                if check is not None:
                    check(after_then)
                then, orelse = self.merge_branches(before, after_then, then, orelse)
            elif _fails(orelse):  # only the then side continues: its names stand
                self.set_env_state(after_then)
            return Branch(cond_ref.host, then, orelse, fact, then_guards, else_guards)

        return run

    def side(self, execute, hosts, fact):
        """One branch, traced knowing its condition when it is a size comparison; guards on
        loop symbols that only this side needs are checked when it runs."""
        facts = [fact] if fact is not None else []
        self.ctx.assume(facts)
        mark = len(self.ctx.guards)
        try:
            steps = self.body_steps(execute, hosts)
        finally:
            self.ctx.forget(facts)
        new = self.ctx.guards[mark:]
        local = tuple(g for g in new if not self.ctx.concrete(g.expr))
        self.ctx.guards[mark:] = [g for g in new if self.ctx.concrete(g.expr)]
        return steps, local

    def exec_else(self, orelse) -> None:
        if isinstance(orelse, cst.If):  # elif
            self.exec_If(orelse)
        else:
            self.exec_body(orelse.body.body)

    def env_state(self):
        refs: dict = {}
        for held in self.env.values():
            self._collect_refs(held, refs)
        return dict(self.env), {k: (r, r.state()) for k, r in refs.items()}

    def set_env_state(self, state) -> None:
        env, refs = state
        self.env.clear()
        self.env.update(env)
        for ref, st in refs.values():
            ref.restore(st)

    def merge_branches(self, before, after_then, then, orelse):
        """After both branches: a name first bound in both continues in one host variable
        (each branch materializes its value there); one bound in a single branch is unusable
        after; arrays written in either branch are read again from their host variables."""
        env0, refs0 = before
        after_else = self.env_state()
        then_env, else_env = after_then[0], after_else[0]
        merged = {}
        for name in sorted((set(then_env) | set(else_env)) - set(env0)):
            a, b = then_env.get(name), else_env.get(name)
            if _same_constant(a, b):
                merged[name] = a
            elif a is None or b is None or isinstance(a, Undefined) or isinstance(b, Undefined):
                merged[name] = Undefined(
                    "it is assigned in only one branch of an `if` decided at run time; assign "
                    "it before the `if` or in both branches"
                )
            else:
                self.set_env_state(after_then)
                then, ha = self.materialize(then, a)
                self.set_env_state(after_else)
                orelse, hb = self.materialize(orelse, b)
                if ha.type.dtype != hb.type.dtype and not (ha.type.weak and hb.type.weak):
                    raise UnsupportedError(  # (Python numbers are widened: docs)
                        f"`{name}` is {ha.type} after one branch of an `if` decided at run "
                        f"time and {hb.type} after the other: its dtype would depend on the "
                        "branch taken",
                        hint="give both branches the same dtype (.astype(...))",
                        site=self.site,
                        code="PPT109",
                    )
                host = self.new_host(name, _join(ha.type, hb.type, name, self.site))
                then = (*then, _copy_block(ha, host))
                orelse = (*orelse, _copy_block(hb, host))
                merged[name] = Ref(host=host, hint=name)
        self.set_env_state(after_else)
        self.env.update(merged)
        then_versions = {k: st[2] for k, (r, st) in after_then[1].items()}
        for key, (ref, st0) in refs0.items():
            if ref.version != st0[2] or then_versions.get(key, st0[2]) != st0[2]:
                ref.value, ref.dirty = None, False
                ref.version = max(ref.version, then_versions.get(key, 0)) + 1
        return tuple(then), tuple(orelse)

    def materialize(self, steps, held):
        """Steps extended so that the value ``held`` is in a host variable; and that variable."""
        if isinstance(held, Ref) and not held.dirty and held.host is not None:
            return tuple(steps), held.host
        outer, self.steps = self.steps, list(steps)
        try:
            t = self.as_tensor(self.load_value(held))
            if type(held) is bool:  # a Python bool stays one (NumPy would give np.bool_)
                t = api.apply("astype", (t,), {"dtype": np.dtype(bool), "weak": True})
            host = self.new_host("value", t._atom.type)
            self._pending.append((t._atom, host))
            self.flush()
            return tuple(self.steps), host
        finally:
            self.steps = outer

    # -- for --------------------------------------------------------------------------------------
    def exec_For(self, node) -> None:
        if node.orelse is not None or node.asynchronous is not None:
            raise self.unsupported(node, "`for ... else` and `async for`", code="PPT106")
        rows = None  # `for v in arr`: the array (its rows along axis 0, as NumPy iterates)
        if not m.matches(node.iter, m.Call()) or self.eval(node.iter.func) is not range:
            rows = self.eval(node.iter)
            if not is_tensor(rows) or self.as_tensor(rows).ndim == 0:
                raise self.unsupported(
                    node.iter,
                    "a loop over anything but range() or an array",
                    hint="loop over indices: for i in range(len(x))",
                    code="PPT106",
                )
            if not isinstance(rows, View):  # an expression: evaluated once, as Python does
                t = self.as_tensor(rows)
                rows = View(t, self.new_ref(t))
        if not isinstance(node.target, cst.Name):
            raise self.unsupported(
                node.target, "a loop target that is not a plain name", code="PPT106"
            )
        if rows is not None:
            self._for_loop(node, 0, self.as_tensor(rows).shape[0], 1, rows)
            return
        bounds = []
        for a in node.iter.args:
            v = self.eval(a.value)
            if a.keyword is not None or a.star or not is_size(v):
                raise self.unsupported(
                    a,
                    "range() bounds must be integers: constants, sizes, "
                    "integer parameters or loop variables",
                    code="PPT106",
                )
            bounds.append(v if isinstance(v, Expr) else int(v))
        if not 1 <= len(bounds) <= 3:
            raise self.unsupported(node.iter, "range() takes 1 to 3 arguments", code="PPT206")
        start, stop, step = {
            1: lambda b: (0, b[0], 1),
            2: lambda b: (b[0], b[1], 1),
            3: lambda b: tuple(b),
        }[len(bounds)](bounds)
        if not isinstance(step, int):
            raise self.unsupported(
                node.iter,
                "a range() step known only at run time",
                hint="use a constant step",
                code="PPT106",
            )
        if step == 0:
            raise self.unsupported(node.iter, "range() arg 3 must not be zero", code="PPT206")
        self._for_loop(node, start, stop, step)

    def _for_loop(self, node, start, stop, step, rows=None) -> None:
        """The loop over ``range(start, stop, step)`` (``rows``: over that array's rows, the
        loop variable a view of the row, as NumPy iterates)."""
        span = stop - start if step > 0 else start - stop
        runs = self.ctx.known(span, ">=", 1)
        if runs is None and self.ctx.concrete(span):  # sizes of this call: decided, guarded
            runs = self.ctx.ge(span, 1)
        if runs is False:  # NumPy never runs the body (nor do its names change type)
            return
        var = node.target.value
        symbol = self.new_symbol(var if rows is None else f"{var}_row")

        def run(hosts):
            facts = Loop(symbol, start, stop, step, ()).facts()
            self.ctx.assume(facts)
            self.ctx.loops.append(symbol)
            mark = len(self.ctx.guards)
            self.env[var] = Sym(symbol, nonneg=False)
            if rows is not None:  # (the array as it is now: its Ref's current value)
                now = View(self.current(rows), rows.base, rows.ops)
                self.env[var] = self.store_value(self.getitem(now, Sym(symbol, nonneg=False)), var)
            try:
                body = self.loop_body(node.body.body)
                steps = self.body_steps(body, hosts)
            finally:
                self.ctx.forget(facts)
                self.ctx.loops.pop()
            new = self.ctx.guards[mark:]
            inside = [g for g in new if symbol in free_symbols(g.expr)]
            self.ctx.guards[mark:] = [g for g in new if symbol not in free_symbols(g.expr)]
            return Loop(symbol, start, stop, step, steps, tuple(inside), until=body.until[0])

        before = set(self.env)
        self.carried_region(node, node.body.body, run)
        self.env[var] = Undefined(f"`{var}` is the variable of a loop that has ended")
        for name in set(self.env) - before:
            if _mentions(self.env[name], symbol):
                self.env[name] = Undefined(
                    "its value depends on a loop that has ended (assign it before the loop "
                    "to carry it out)"
                )

    def exec_While(self, node) -> None:
        """``while <test>:`` on values known only at run time: a ``While`` step, the test
        computed before each iteration and read on the host (on the CUDA target, one
        device-to-host read per iteration). Names the body re-assigns are carried as in a
        ``for`` loop."""
        if node.orelse is not None:
            raise self.unsupported(node, "`while ... else`", code="PPT106")
        self.tested.add(id(node.test))  # only its truth counts

        def run(hosts):
            test = self.while_test(node)
            if test is None:
                return Block(GraphBuilder(self.ctx).finish([]), (), ())  # never runs
            body = self.loop_body(node.body.body)
            return While(*test, self.body_steps(body, hosts), until=body.until[0])

        self.carried_region(node, node.body.body, run)

    def while_test(self, node):
        """(steps computing the truth of the test, its host variable); None where the test is
        false when compiling (the body never runs)."""
        outer, self.steps = self.steps, []
        try:
            v = self.eval(node.test)
            if isinstance(v, Expr):
                v = self.decide("ne", v, 0)
            if is_host(v):
                if not self.truth(v, node.test):
                    return None
                if not m.findall(node.body, m.Break()):
                    raise self.unsupported(
                        node.test,
                        "a `while` condition that is true when compiling, which the body does "
                        "not change and no `break` ends (the loop would not end)",
                        code="PPT106",
                    )
                v = True  # `while True:` that a `break` ends
            t = self.run_time_test(node, v)
            truth = self.truth_of(t)
            cond = self.new_host("cond", truth._atom.type)
            self._pending.append((truth._atom, cond))
            self.flush()
            return tuple(self.steps), cond
        finally:
            self.steps = outer

    # -- regions with carried variables -----------------------------------------------------------
    def carried_region(self, node, statements, run) -> None:
        """Trace a loop body or a pair of branches (``run(hosts)`` returns the step). A name the
        region re-assigns is carried in one host variable of one type; when an assignment
        changes its type, the region is traced again with the wider type."""
        self.flush()
        rebound, stored, augmented = _assigned(statements)
        for name in augmented:  # x += ...: in place on an array, a new binding otherwise
            held = self.env.get(name)
            is_array = (
                isinstance(held, (Ref, ViewRef)) and self.as_tensor(self.load_value(held)).ndim > 0
            )
            (stored if is_array else rebound).append(name)
        self.flush()
        carried = [
            n
            for n in dict.fromkeys(rebound)
            if n in self.env and not isinstance(self.env[n], Undefined)
        ]
        written = {
            id(self._ref_of(self.env[n]))
            for n in stored
            if isinstance(self.env.get(n), (Ref, ViewRef))
        }
        for n in carried:
            held = self.env[n]
            if isinstance(held, (Ref, ViewRef)) and id(self._ref_of(held)) in written:
                raise self.unsupported(
                    node,
                    f"`{n}` is both reassigned and written in place here (or shares its "
                    "array with a name that is)",
                    hint="copy back instead of swapping: u[...] = u_new",
                    code="PPT106",
                )
        widened: dict = {}
        snap = self.snapshot()
        for attempt in range(4):
            try:
                hosts = self._carry_in(carried, widened)
                self.control_depth += 1
                try:
                    step = run(hosts)
                finally:
                    self.control_depth -= 1
                self.steps.append(step)
                for n, hv in hosts.items():
                    self.env[n] = Ref(host=hv, hint=n)
                return
            except Widen as w:
                if attempt == 3:
                    raise self.unsupported(
                        node, "the types of reassigned names do not settle", code="PPT109"
                    ) from None
                self.restore(snap)
                widened.update(w.types)

    def _ref_of(self, held):
        return held.base if isinstance(held, ViewRef) else held

    def _carry_in(self, carried, widened) -> dict:
        hosts = {}
        for n in carried:
            t = self.as_tensor(self.load_value(self.env[n]))
            want = widened.get(n, t._atom.type)
            if t._atom.type != want:
                attrs = {"dtype": want.dtype, **({"weak": True} if want.weak else {})}
                t = api.apply("astype", (t,), attrs)
            hosts[n] = self.new_host(n, want)
            self._pending.append((t._atom, hosts[n]))
            self.env[n] = Ref(host=hosts[n], hint=n)
        self.flush()
        return hosts

    def same_sizes(self, t, want: TensorType):
        """``t`` with the sizes of ``want`` when they are equal (guarded), so a carried array
        keeps one type: ``x = A @ x`` has size A.0, equal to x.0 when A is square."""
        have = t._atom.type
        if have.shape == want.shape or len(have.shape) != len(want.shape):
            return t
        if not all(a == b or self.ctx.eq(a, b) for a, b in zip(have.shape, want.shape)):
            return t
        return REGISTRY["reshape"].api(t, want.shape)

    def body_steps(self, execute, hosts) -> tuple:
        """Trace into a fresh step list; at the end carried names go to their host vars.

        A loop body or a branch may never run: an error its code would raise (a shape that
        does not fit, an index out of bounds) becomes a ``Fail`` step, raised only if reached.
        The guards its trace recorded stay (the sizes decided that it raises: other sizes
        compile again, and a loop's own guards are checked before each iteration).
        """
        outer = self.steps
        self.steps = []
        start = self.env_state()
        try:
            try:
                execute()
            except PyptoError as e:
                if isinstance(e, (UnsupportedError, InternalError)):
                    raise
                self.flush_discard()
                self.dirty = []
                self.set_env_state(start)
                return (Fail(e),)
            self.ensure_block()
            widen = {}
            for n, hv in hosts.items():
                held = self.env.get(n)
                if held is None or isinstance(held, Undefined):
                    raise UnsupportedError(
                        f"`{n}` is not defined at the end of the block",
                        site=self.site,
                        code="PPT107",
                    )
                t = self.as_tensor(self.load_value(held))
                t = self.same_sizes(t, hv.type)
                if t._atom.type != hv.type:
                    where = self.assigned_at.get(n, self.site)
                    widen[n] = _join(hv.type, t._atom.type, n, where, self.ctx)
                else:
                    self._pending.append((t._atom, hv))
                    if isinstance(held, Ref) and held.dirty and held.value is t:
                        held.host, held.dirty = hv, False  # written once, to the carried var
            if widen:
                raise Widen(widen)
            self.flush()
            return tuple(self.steps)
        finally:
            self.steps = outer


def _casting_error(op: str, have: np.dtype, want: np.dtype, site) -> PyptoError:
    """``x op= y`` whose result cannot be cast back: the error NumPy's ufunc raises (its class
    too, a UFuncTypeError), as a DTypeError."""
    ufunc = getattr(np, api._BINARY_OPERATORS.get(op, op), None)
    cause = TypeError()
    if isinstance(ufunc, np.ufunc):
        try:
            ufunc(np.zeros(1, have), np.zeros(1, have), out=np.zeros(1, want), casting="same_kind")
        except TypeError as e:
            cause = e
    message = (
        f"Cannot cast ufunc '{getattr(ufunc, '__name__', op)}' output from dtype('{have}') to "
        f"dtype('{want}') with casting rule 'same_kind'"
    )
    return execution_error(cause, message, base=DTypeError, site=site)


def _fails(steps) -> bool:
    return len(steps) == 1 and isinstance(steps[0], Fail)


def _same_constant(a, b) -> bool:
    plain = (bool, int, float, complex, str, type(None), Expr)
    return isinstance(a, plain) and type(a) is type(b) and a == b


def _copy_block(src: HostVar, dst: HostVar) -> Block:
    """A block that copies (and if needed casts) one host variable into another."""
    builder = GraphBuilder(ShapeContext())
    v = builder.add_input(src.name, src.type)
    out = v
    if src.type != dst.type:
        attrs = {"dtype": dst.type.dtype, **({"weak": True} if dst.type.weak else {})}
        out = builder.apply(REGISTRY["astype"], (v,), attrs)
    return Block(builder.finish([out]), (src,), (dst,))


def _join(a: TensorType, b: TensorType, name, site, ctx=None) -> TensorType:
    if len(a.shape) != len(b.shape) or any(
        x != y and (ctx is None or not ctx.eq(x, y)) for x, y in zip(a.shape, b.shape)
    ):
        raise UnsupportedError(
            f"`{name}` changes shape from {a} to {b} inside a loop or branch",
            site=site,
            code="PPT109",
        )
    return TensorType(result_type(a.key, b.key), a.shape, a.weak and b.weak)


def _assigned(statements):
    """Names re-bound, names written in place (subscript targets) and names augmented (``+=``:
    in place on arrays, a re-binding on numbers)."""
    rebound, stored, augmented = [], [], []
    for stmt in statements:
        for t in m.findall(stmt, m.AssignTarget() | m.AnnAssign() | m.For()):
            target = t.target
            for name in m.findall(target, m.Name()):
                if isinstance(target, cst.Subscript) or _inside_subscript(target, name):
                    continue
                rebound.append(name.value)
        for t in m.findall(
            stmt, m.AssignTarget(target=m.Subscript()) | m.AugAssign(target=m.Subscript())
        ):
            base = t.target
            while isinstance(base, (cst.Subscript, cst.Attribute)):
                base = base.value
            if isinstance(base, cst.Name):
                stored.append(base.value)
        for t in m.findall(stmt, m.AugAssign(target=m.Name())):
            augmented.append(t.target.value)
    return rebound, stored, list(dict.fromkeys(augmented))


def _inside_subscript(target, name) -> bool:
    return any(name in m.findall(s, m.Name()) for s in m.findall(target, m.Subscript()))


def _mentions(held, symbol: str) -> bool:
    """Whether a name's value depends on a size symbol (a loop's variable): its host
    variable's shape, or the traced value not yet in one (``c = a[k]`` reads at index k), or a
    view's base and steps."""
    if isinstance(held, ViewRef):
        return _mentions(held.base, symbol) or symbol in symbols_in(held.ops, set())
    if isinstance(held, Ref):
        if held.value is not None and held.dirty and held.value._builder is not None:
            return _traced_mentions(held.value, symbol)
        if held.host is not None:
            return any(symbol in free_symbols(d) for d in held.host.type.shape)
    if isinstance(held, Expr):
        return symbol in free_symbols(held)
    return False


def _traced_mentions(t, symbol: str) -> bool:
    """Whether a traced value, or anything it is computed from in its block, names ``symbol``
    (in a shape or an attribute)."""
    made = {id(e.out): e for e in t._builder.eqns}
    todo, seen = [t._atom], set()
    while todo:
        a = todo.pop()
        if id(a) in seen:
            continue
        seen.add(id(a))
        if symbol in symbols_in(getattr(getattr(a, "type", None), "shape", ()), set()):
            return True
        e = made.get(id(a))
        if e is not None:
            if symbol in symbols_in(e.attrs, set()):
                return True
            todo += list(e.inputs)
    return False


__all__ = ["Return", "Statements", "Widen"]
