"""Structural invariants of the Plan, for every block of every corpus function and for random
lazy chains.

Each invariant is a function of one planned graph (``Case``: the plan, the facts that hold where
it runs, and the (values, sizes) it was run with, when it ran):

* closure: kernel bodies are closed (every value read is a body input or defined in the body),
  verify with the facts of their block, read every input and compute nothing they drop;
* dataflow: each graph output is made by exactly one kernel (or is an input or a constant), each
  kernel input is a graph input, a constant or an earlier kernel's output;
* levels: every kernel in exactly one level, at the earliest level its inputs allow, kernels of
  one level independent (but for late inputs), the kernel list in topological order;
* memory: buffers sharing memory never live at once (but for a slice assignment written in
  place into a base only it reads), outputs never give their memory away, inputs are never
  written in place;
* fusion: every compute equation of the simplified graph in exactly one kernel (reorders and
  scalar arithmetic in any number), copy kernels only for outputs that are reorders;
* bytes: a kernel that computes moves no more bytes than its ops run one NumPy call at a time;
* run: running the plan (its memory checked: reused memory is poisoned) gives exactly what the
  reference executor gives on the graph, and leaves its inputs alone;
* chunking: the chunk axis is never reduced, scanned or a product's columns, and its block size
  is a positive integer.

Cases: the NumPy-style corpus (examples/numpy_style, small inputs, float32 and float64), the
lazy-API examples (examples/lazy_api, small inputs, plus a user operator), and random lazy
chains drawn by hypothesis (maps, broadcasting, reductions, transposes, slices, matmul, cumsum,
where, slice assignments; one or two outputs). Each check is also shown to fail on a plan broken
on purpose, and what the checks found is kept as its smallest case at the end.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import importlib.util
import itertools
import math
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from helpers import load_seed
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pypto as ppto
from pypto.compile import _specialize
from pypto.emit.reference import run_plan
from pypto.executor import execute
from pypto.function import Block, Branch, Fail, Loop, run_function
from pypto.ir import Var
from pypto.passes.pipeline import plan_function, plan_graph
from pypto.registry import REGISTRY
from pypto.shapes import input_facts
from pypto.symbolic import evaluate
from pypto.tracer import compile_chain, placeholders
from pypto.verify import verify

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FLOATS = [np.float32, np.float64]
CALLS_KEPT = 3  # (values, sizes) kept per block: the first calls (loop bodies run many times)


@dataclass
class Case:
    """One planned graph, the facts that hold where it runs, and how it ran."""

    where: str
    plan: object  # GraphPlan
    facts: list
    calls: list = field(default_factory=list)  # (input values, size env) per run


# -- small helpers --------------------------------------------------------------------------------
def transparent(eqn) -> bool:
    """An index map (a reorder other than a store) or scalar arithmetic (a rank-0 map of
    rank-0 values): fusion copies these into every kernel that needs them."""
    op = REGISTRY[eqn.op]
    if op.kind == "reorder" and eqn.op != "store":
        return True
    return op.kind == "map" and eqn.out.type.rank == 0 and all(a.type.rank == 0 for a in eqn.inputs)


def name_of(plan, v) -> str:
    return plan.names.get(id(v), repr(v))


def producers(plan) -> dict[int, int]:
    """id(value) -> index of the kernel that writes it (asserting there is one)."""
    made_by: dict[int, int] = {}
    for i, k in enumerate(plan.kernels):
        for v in k.outputs:
            assert id(v) not in made_by, (
                f"{name_of(plan, v)} is written by k{made_by[id(v)]} and k{i}"
            )
            made_by[id(v)] = i
    return made_by


def readers(plan) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for i, k in enumerate(plan.kernels):
        for v in k.inputs:
            found.setdefault(id(v), []).append(i)
    return found


def given_ids(plan) -> set[int]:
    """Graph inputs and constants: values no kernel writes."""
    return {id(v) for v in plan.graph.inputs} | {id(v) for v, _ in plan.graph.consts}


def same_results(got, want, what):
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert type(g) is type(w), f"{what}, output {i}: {type(g)} != {type(w)}"
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.dtype == wa.dtype and ga.shape == wa.shape, (
            f"{what}, output {i}: {ga.dtype}{ga.shape} != {wa.dtype}{wa.shape}"
        )
        np.testing.assert_array_equal(ga, wa, err_msg=f"{what}, output {i}")


def snapshot(values):
    return [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in values]


# -- the invariants -------------------------------------------------------------------------------
def check_closure(case: Case):
    plan = case.plan
    for k in plan.kernels:
        body = k.body
        inputs = [id(v) for v in body.inputs]
        assert len(set(inputs)) == len(inputs), f"{k.name} reads an input twice"
        assert body.consts == (), f"{k.name}: constants are kernel inputs, not body constants"
        defined = set(inputs)
        read: set[int] = set()
        for e in body.eqns:
            for a in e.inputs:
                if isinstance(a, Var):
                    assert id(a) in defined, (
                        f"{k.name}: `{e.op}` reads {name_of(plan, a)}, neither an input of the "
                        f"kernel nor defined before in its body\n{body}"
                    )
                    read.add(id(a))
            assert id(e.out) not in defined, f"{k.name}: {name_of(plan, e.out)} defined twice"
            defined.add(id(e.out))
        made = {id(e.out) for e in body.eqns}
        outs = [id(v) for v in body.outputs]
        assert outs, f"{k.name} has no outputs"
        assert len(set(outs)) == len(outs), f"{k.name} writes an output twice"
        for v in body.outputs:
            assert isinstance(v, Var) and id(v) in made, (
                f"{k.name}: output {name_of(plan, v)} is not computed in its body"
            )
        unread = [name_of(plan, v) for v in body.inputs if id(v) not in read]
        assert not unread, f"{k.name} takes inputs it never reads: {unread}"
        dead = [e.op for e in body.eqns if id(e.out) not in read and id(e.out) not in outs]
        assert not dead, f"{k.name} computes values nothing reads: {dead}"
        assert set(map(id, k.late_inputs)) <= set(inputs), f"{k.name}: late inputs not inputs"
        verify(body, facts=case.facts, named=False)


def check_dataflow(case: Case):
    plan = case.plan
    made_by = producers(plan)
    given_ = given_ids(plan)
    src, simple = plan.source.outputs, plan.graph.outputs
    assert [a.type for a in simple] == [a.type for a in src], "simplification changed outputs"
    for a in simple:
        if not isinstance(a, Var):
            continue
        assert (id(a) in made_by) != (id(a) in given_), (
            f"output {name_of(plan, a)}: made by a kernel: {id(a) in made_by}, an input or "
            f"constant: {id(a) in given_}"
        )
    outputs = {id(a) for a in simple if isinstance(a, Var)}
    read = readers(plan)
    for i, k in enumerate(plan.kernels):
        for v in k.inputs:
            assert id(v) in given_ or id(v) in made_by, (
                f"k{i} reads {name_of(plan, v)}, neither an input, a constant nor a kernel output"
            )
        for v in k.outputs:
            assert id(v) not in given_, f"k{i} overwrites the input {name_of(plan, v)}"
            assert id(v) in outputs or id(v) in read, (
                f"k{i} writes {name_of(plan, v)}, which no kernel reads and is not an output"
            )


def check_levels(case: Case):
    plan = case.plan
    kernels = plan.kernels
    flat = [i for lv in plan.levels for i in lv]
    assert sorted(flat) == list(range(len(kernels))), f"levels {plan.levels}"
    for lv, members in enumerate(plan.levels):
        assert members, f"level {lv} is empty: {plan.levels}"
        for i in members:
            assert kernels[i].level == lv, f"k{i} is in level {lv}, says {kernels[i].level}"
    made_by = producers(plan)
    for i, k in enumerate(kernels):
        late = {id(v) for v in k.late_inputs}
        earliest = 0
        for v in k.inputs:
            j = made_by.get(id(v))
            if j is None:
                continue
            what = f"k{i} (level {k.level}) reads {name_of(plan, v)} from k{j}"
            assert j < i, f"{what}: kernels not in topological order"
            if id(v) in late:
                assert kernels[j].level <= k.level, f"{what} (level {kernels[j].level})"
                earliest = max(earliest, kernels[j].level)
            else:
                assert kernels[j].level < k.level, f"{what} (level {kernels[j].level})"
                earliest = max(earliest, kernels[j].level + 1)
        assert k.level == earliest, f"k{i} is at level {k.level}, could start at {earliest}"


def check_memory(case: Case):
    plan = case.plan
    kernels = plan.kernels
    outputs = {id(a) for a in plan.graph.outputs if isinstance(a, Var)}
    given_ = given_ids(plan)
    read = readers(plan)
    made = [id(v) for k in kernels for v in k.outputs]
    assert sorted(id(b.value) for b in plan.buffers) == sorted(made), (
        "not one buffer per kernel output"
    )
    by_name = {b.name: b for b in plan.buffers}
    assert len(by_name) == len(plan.buffers), "two buffers with one name"
    assert set(plan.memory) == set(by_name), "buffers without memory, or memory of no buffer"

    def start(b):
        return kernels[b.first].level

    def end(b):
        return max((kernels[r].level for r in read.get(id(b.value), [])), default=start(b))

    for b in plan.buffers:
        assert any(v is b.value for v in kernels[b.first].outputs), f"{b.name}: not k{b.first}'s"
        assert b.last == max(read.get(id(b.value), []), default=b.first), f"{b.name}: last"
        assert b.role == ("output" if id(b.value) in outputs else "temp"), f"{b.name}: role"

    held: dict[str, list] = {}  # memory -> its buffers, in the order the plan made them
    for b in plan.buffers:
        held.setdefault(plan.memory[b.name], []).append(b)
    for mem, group in held.items():
        assert group[0].reuses is None, f"{group[0].name} reuses {group[0].reuses}, in {mem}"
        for a, b in itertools.pairwise(group):
            what = f"memory {mem}: {b.name} ({name_of(plan, b.value)}) after {a.name}"
            assert b.reuses == a.name, f"{what}, but says it reuses {b.reuses}"
            assert a.role != "output", f"{what}: {a.name} is an output, its memory is returned"
            s = next((s for s in kernels[b.first].stores if s.out is b.value), None)
            inplace = (
                s is not None
                and s.inplace
                and s.base is a.value
                and read.get(id(a.value)) == [b.first]
            ) or (  # out = a @ b + X accumulated into X's memory (memory.py, _addend)
                kernels[b.first].accumulate is a.value and read.get(id(a.value)) == [b.first]
            )
            if inplace:
                assert start(b) >= end(a), f"{what}: written in place before its base exists"
            else:
                assert start(b) > end(a), (
                    f"{what}: starts at level {start(b)}, {a.name} is read until level {end(a)}"
                )
            for _values, env in case.calls:
                size = evaluate(group[0].nbytes, env)
                assert evaluate(b.nbytes, env) <= size, f"{what}: does not fit, sizes {env}"
    for i, k in enumerate(kernels):
        for s in k.stores:
            if not s.inplace:
                continue
            what = f"k{i} writes {name_of(plan, s.out)} in place into {name_of(plan, s.base)}"
            # an input only when the block reassigns it (donated); despite a hazard only when
            # the kernel computes its value whole (no blocks) and writes nothing else
            donated = id(s.base) in plan.donated
            assert id(s.base) not in given_ or donated, f"{what}, an input of the graph"
            assert id(s.out) not in k.hazards or (k.chunking is None and len(k.outputs) == 1), (
                f"{what}, despite: {k.hazards[id(s.out)]}"
            )
            others = [r for r in read.get(id(s.base), []) if r != i]
            assert all(kernels[r].level < k.level for r in others), (
                f"{what}, which k{others} read at the same level or later"
            )
            base, out = plan.buffer_of(s.base), plan.buffer_of(s.out)
            if donated:
                assert base is None and out.donor is s.base, f"{what}: not marked as donated"
                continue
            assert base is not None and base.role == "temp", f"{what}, not a temporary"
            assert out.reuses == base.name, f"{what}, but its buffer reuses {out.reuses}"


def check_fusion(case: Case):
    plan = case.plan
    in_graph = {id(e) for e in plan.graph.eqns}
    count: Counter = Counter()
    outputs = {id(a) for a in plan.graph.outputs if isinstance(a, Var)}
    for k in plan.kernels:
        for e in k.body.eqns:
            assert id(e) in in_graph, f"{k.name}: `{e.op}` is not an equation of the graph"
            count[id(e)] += 1
        computes = [e.op for e in k.body.eqns if not transparent(e)]
        if k.kind == "copy":
            assert not computes, f"{k.name} is a copy but computes {computes}"
            for v in k.outputs:
                assert id(v) in outputs, (
                    f"{k.name} copies {name_of(plan, v)}, which is not an output of the graph"
                )
        else:
            assert computes, f"{k.name} is a {k.kind} kernel computing nothing"
    for e in plan.graph.eqns:
        n = count[id(e)]
        if transparent(e):
            assert n >= 1, f"`{e.op}` {name_of(plan, e.out)} is in no kernel"
        else:
            assert n == 1, f"`{e.op}` {name_of(plan, e.out)} is in {n} kernels"


def check_bytes(case: Case):
    plan = case.plan
    for _values, env in case.calls:
        for k in plan.kernels:
            if all(transparent(e) for e in k.body.eqns):
                continue  # index maps and scalar arithmetic alone: unfused, they move nothing
            read = evaluate(k.bytes_read, env)
            written = evaluate(k.bytes_written, env)
            unfused = evaluate(k.unfused_bytes, env)
            assert read >= 0 and written >= 0
            assert read + written <= unfused, (
                f"{k.name} ({k.kind}: {' '.join(k.ops)}; index maps "
                f"{' '.join(k.index_maps) or '-'}) reads {read} B and writes {written} B, "
                f"more than the {unfused} B of one NumPy call per op, at sizes {env}"
            )


def check_run(case: Case):
    plan = case.plan
    rewritten = any(e.op == "attention" for e in plan.graph.eqns) and not any(
        e.op == "attention" for e in plan.source.eqns
    )
    donated = [id(v) in plan.donated for v in plan.graph.inputs]
    for values, env in case.calls:
        before = snapshot(values)
        values = [v.copy() if d else v for v, d in zip(values, donated)]  # written in place
        with np.errstate(all="ignore"):
            want = execute(plan.graph if rewritten else plan.source, values, env)
            got = run_plan(plan, values, env, check=True)
        same_results(got, want, f"the plan against the executor, sizes {env}")
        for i, (a, b, d) in enumerate(zip(values, before, donated)):
            if isinstance(b, np.ndarray) and not d:  # only arrays the block reassigns
                np.testing.assert_array_equal(a, b, err_msg=f"running the plan wrote input {i}")


def check_chunking(case: Case):
    plan = case.plan
    for k in plan.kernels:
        c = k.chunking
        if c is None:
            continue
        what = f"{k.name} ({k.kind}, domain rank {len(k.domain)}) chunked along axis {c.axis}"
        assert k.kind != "custom", what
        assert 0 <= c.axis < len(k.domain), what
        assert c.axis not in k.reduced, f"{what}, a reduced axis {k.reduced}"
        assert c.axis != k.scan_axis, f"{what}, the scanned axis"
        if k.kind in ("contraction", "attention"):
            assert c.axis != len(k.domain) - 1, f"{what}, the product's columns"
        assert c.extent == k.domain[c.axis], f"{what}: extent {c.extent}"
        for _values, env in case.calls:
            block = evaluate(c.block, env)
            assert isinstance(block, int) and not isinstance(block, bool), f"{what}: {block!r}"
            assert block >= 1, f"{what}: block {block} at sizes {env}"


CHECKS = {
    "closure": check_closure,
    "dataflow": check_dataflow,
    "levels": check_levels,
    "memory": check_memory,
    "fusion": check_fusion,
    "bytes": check_bytes,
    "run": check_run,
    "chunking": check_chunking,
}
INVARIANTS = list(CHECKS)


# -- the corpus: every block of every function ----------------------------------------------------
CORPUS = ROOT / "examples" / "numpy_style"
MODULE_NAMES = sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")
CORPUS_CASES = [
    (f"{name}.{fn.__name__}", fn, make)
    for name in MODULE_NAMES
    for fn, make in importlib.import_module(f"examples.numpy_style.{name}").CASES
]
_corpus: dict = {}


def blocks_with_facts(fn_ir) -> list[tuple[Block, list]]:
    """Every block of a function with the facts that hold where it runs (as the pipeline
    plans them: the inputs' specialization, the function's guards, the loops' ranges and
    guards, the branches' conditions and guards)."""
    found: list = []

    def walk(steps, facts):
        for step in steps:
            if isinstance(step, Block):
                found.append((step, facts))
            elif isinstance(step, Fail):
                continue
            elif isinstance(step, Loop):
                walk(step.body, [*facts, *step.facts(), *step.guards])
                if step.vector is not None:  # the loop as one block over a new axis
                    walk((step.vector,), [*facts, *step.when])
                if step.lines is not None:  # the body as one block (iterations in a kernel)
                    walk((step.lines,), [*facts, *step.facts(), *step.guards])
            elif isinstance(step, Branch):
                walk(step.then, [*facts, *step.facts("then"), *step.then_guards])
                walk(step.orelse, [*facts, *step.facts("else"), *step.else_guards])
            else:
                raise AssertionError(f"unknown step {step!r}")

    arrays = [p.type for p in fn_ir.params if p.kind == "array"]
    walk(fn_ir.body, [*input_facts(arrays), *fn_ir.guards])
    return found


def corpus_cases(case_id: str, fn, make) -> list[Case]:
    """The Case of every block of the function, for float32 and float64 small inputs; each
    block's first calls recorded while the function runs on the reference executor."""
    if case_id in _corpus:
        return _corpus[case_id]
    compiled = ppto.compile(fn)
    cases = []
    for dtype in FLOATS:
        label = f"{case_id}-{np.dtype(dtype).name}"
        args = make("small", dtype, np.random.default_rng(zlib.crc32(label.encode())))
        fn_ir = compiled.ir(*args)
        plans = plan_function(fn_ir)
        found = blocks_with_facts(fn_ir)
        assert set(plans) == {id(b) for b, _ in found}, "plan_function planned other blocks"
        here = {}
        for n, (block, facts) in enumerate(found):
            here[id(block)] = Case(f"{label} block {n}", plans[id(block)], facts)

        def record(block, values, env, here=here):
            with np.errstate(all="ignore"):
                outs = execute(block.graph, values, env)
            calls = here[id(block)].calls
            if len(calls) < CALLS_KEPT:
                calls.append((snapshot(values), dict(env)))
            return outs

        arguments = compiled._bind(copy.deepcopy(args), {})
        _, env, _ = _specialize(arguments)
        with np.errstate(all="ignore"):
            run_function(fn_ir, arguments, env, record)
        cases += here.values()
    _corpus[case_id] = cases
    return cases


@pytest.mark.parametrize(
    ("case_id", "fn", "make"), [pytest.param(*c, id=c[0]) for c in CORPUS_CASES]
)
@pytest.mark.parametrize("invariant", INVARIANTS)
def test_corpus_block_plans(invariant, case_id, fn, make):
    cases = corpus_cases(case_id, fn, make)
    assert cases, f"{case_id} has no blocks"
    for case in cases:
        try:
            CHECKS[invariant](case)
        except AssertionError as e:
            raise AssertionError(f"{case.where}: {e}") from None


def test_the_corpus_is_all_there():
    assert len(CORPUS_CASES) >= 40
    ran = [c for case_id, fn, make in CORPUS_CASES[:5] for c in corpus_cases(case_id, fn, make)]
    assert any(c.calls for c in ran)


# -- the lazy-API examples and a user operator ----------------------------------------------------
LAZY_CASES = [
    ("3_1", "map_chain", {"x": (2, 3, 4), "y": (2, 3, 4)}),
    ("3_1", "reduce_chain", {"x": (2, 3, 4)}),
    ("3_1", "scan_chain", {"x": (2, 3, 4)}),
    ("3_1", "reorder_chain", {"x": (2, 3, 4)}),
    ("3_1", "numpy_spelled_chain", {"x": (2, 3, 4), "y": (3, 4)}),
    ("3_2", "op_chain", {"x": (4, 3), "y": (4, 5)}),
    ("4_1", "final_op", {"A": (3, 4), "B": (4, 5), "C": (3, 2), "D": (2, 5)}),
    ("5_1", "diffusion_op", {"u": (5, 6), "kappa": (5, 6)}),
    ("5_2", "attention_op", {"Q": (2, 4, 8), "K": (2, 3, 8), "V": (2, 3, 5)}),
]


def lazy_module(section: str):
    """An example module (those without user operators: importing them only builds chains)."""
    return load_seed(section)


def chain_case(where: str, roots, bindings) -> Case:
    graph, values, env = compile_chain([t._node for t in roots], bindings)
    facts = input_facts(v.type for v in graph.inputs)
    return Case(where, plan_graph(graph), facts, [(values, env)])


def lazy_bindings(shapes: dict, dtype, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(s).astype(dtype) for n, s in shapes.items()}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("section", "chain", "shapes"), [pytest.param(*c, id=f"{c[0]}.{c[1]}") for c in LAZY_CASES]
)
@pytest.mark.parametrize("invariant", INVARIANTS)
def test_lazy_example_plans(invariant, section, chain, shapes, dtype):
    root = getattr(lazy_module(section), chain)
    case = chain_case(f"{section}.{chain}", [root], lazy_bindings(shapes, dtype, 7))
    CHECKS[invariant](case)


def _roll_rows(a):
    return np.roll(a, 1, axis=0) * 2


@pytest.mark.parametrize("invariant", INVARIANTS)
def test_user_operator_plans(invariant):
    op = ppto.register_operator(_roll_rows, name="plan_invariants_roll_rows")
    try:
        x, y = ppto.tensor("x"), ppto.tensor("y")
        made = op(ppto.exp(x) + y)
        roots = [ppto.maximum(made, 0.0) * x, ppto.sum(made, axis=1)]
        bindings = lazy_bindings({"x": (4, 3), "y": (3,)}, np.float64, 3)
        case = chain_case("user operator", roots, bindings)
        assert "custom" in [k.kind for k in case.plan.kernels]
        CHECKS[invariant](case)
    finally:
        ppto.unregister_operator("plan_invariants_roll_rows")


# -- random lazy chains ---------------------------------------------------------------------------
@dataclass
class Chain:
    roots: list
    bindings: dict
    steps: list

    def __repr__(self):
        ins = ", ".join(f"{n}={a.dtype}{a.shape}" for n, a in self.bindings.items())
        return f"Chain({ins}: {self.roots})"


UNARY = [np.sin, np.exp, np.abs, np.negative, np.tanh, np.square]
BINARY = [np.add, np.subtract, np.multiply, np.maximum]
REDUCTIONS = [(np.sum, ppto.sum), (np.max, ppto.max), (np.mean, ppto.mean)]


def _axes(draw, ndim):
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        a = draw(st.integers(0, ndim - 1))
        return a - ndim if draw(st.booleans()) else a
    return tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))


def _slice_item(draw, n, newaxis=True):
    kinds = ["all", "range", "reverse", "step", "int"] + ["new"] * newaxis
    kind = draw(st.sampled_from(kinds))
    if kind == "all" or n == 0:
        return slice(None)
    if kind == "range":
        start = draw(st.integers(0, n - 1))
        return slice(start, draw(st.integers(start + 1, n)))
    if kind == "reverse":
        return slice(None, None, -1)
    if kind == "step":
        return slice(draw(st.integers(0, n - 1)), None, draw(st.integers(2, 3)))
    if kind == "int":
        i = draw(st.integers(0, n - 1))
        return i - n if draw(st.booleans()) else i
    return None


KINDS = ["unary", "binary", "scalar", "reduce", "transpose", "slice", "matmul", "cumsum", "where"]
KINDS += ["slice", "binary", "store"]


def _step(draw, pool):
    """One op on values of the pool: (name, what NumPy computes, what the chain builds)."""
    kind = draw(st.sampled_from(KINDS))
    latest = draw(st.sampled_from([True, True, True, False]))
    a, t = pool[-1] if latest else pool[draw(st.integers(0, len(pool) - 1))]
    nd = a.ndim
    if kind == "unary":
        f = draw(st.sampled_from(UNARY))
        return f.__name__, lambda: f(a), lambda: f(t)
    if kind in ("binary", "where"):
        b, u = pool[draw(st.integers(0, len(pool) - 1))]
        if kind == "where":
            return "where", lambda: np.where(a > b, a, b), lambda: ppto.where(t > u, t, u)
        f = draw(st.sampled_from(BINARY))
        if draw(st.booleans()):
            return f.__name__, lambda: f(b, a), lambda: f(u, t)
        return f.__name__, lambda: f(a, b), lambda: f(t, u)
    if kind == "scalar":
        c = draw(st.sampled_from([0.5, 2.0, -1.5, 1.0, 0.0]))
        f = draw(st.sampled_from(BINARY))
        return f"{f.__name__} {c}", lambda: f(a, c), lambda: f(t, c)
    if kind == "reduce":
        f, g = draw(st.sampled_from(REDUCTIONS))
        axis, keep = _axes(draw, nd), draw(st.booleans())
        return (
            f"{f.__name__}(axis={axis}, keepdims={keep})",
            lambda: f(a, axis=axis, keepdims=keep),
            lambda: g(t, axis=axis, keepdims=keep),
        )
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(nd))))
        return f"transpose{perm}", lambda: np.transpose(a, perm), lambda: ppto.transpose(t, perm)
    if kind == "slice":
        if nd == 0:
            return "[None]", lambda: a[None], lambda: t[None]
        index = tuple(_slice_item(draw, n) for n in a.shape)
        return f"getitem {index}", lambda: a[index], lambda: t[index]
    if kind == "matmul":
        if nd == 0:
            return None
        b, u = pool[draw(st.integers(0, len(pool) - 1))]
        if b.ndim >= 1 and draw(st.booleans()):
            return "matmul", lambda: a @ b, lambda: t @ u
        if nd == 1:
            return "matmul (vector)", lambda: a @ a, lambda: t @ t
        perm = (*range(nd - 2), nd - 1, nd - 2)
        return (
            "matmul (transposed)",
            lambda: a @ np.transpose(a, perm),
            lambda: t @ ppto.transpose(t, perm),
        )
    if kind == "cumsum":
        axis = None if nd == 0 or draw(st.booleans()) else draw(st.integers(0, nd - 1))
        return (
            f"cumsum(axis={axis})",
            lambda: np.cumsum(a, axis=axis),
            lambda: ppto.cumsum(t, axis=axis),
        )
    if kind == "store" and nd > 0:
        return _store(draw, pool, a, t)
    return None


def _store(draw, pool, a, t):
    """``base[index] = value`` as a new value (ppto.store): the value read from the base at the
    same region (may be written in place), at other positions (must not), another value of the
    pool (broadcast), or a scalar."""
    index = tuple(_slice_item(draw, n, newaxis=False) for n in a.shape)
    how = draw(st.sampled_from(["same", "flipped", "other", "scalar"]))
    if how == "same":
        value, chain_value = (lambda: np.sin(a[index])), (lambda: ppto.sin(t[index]))
    elif how == "flipped":
        value = lambda: np.flip(a, axis=0)[index] * 2  # noqa: E731
        chain_value = lambda: ppto.flip(t, axis=0)[index] * 2  # noqa: E731
    elif how == "other":
        b, u = pool[draw(st.integers(0, len(pool) - 1))]
        value, chain_value = (lambda: b), (lambda: u)
    else:
        value, chain_value = (lambda: 0.5), (lambda: 0.5)

    def numpy_store():
        out = a.copy()
        out[index] = value()
        return out

    return f"store {how} {index}", numpy_store, lambda: ppto.store(t, chain_value(), index)


def _elements(dtype):
    w = np.dtype(dtype).itemsize * 8
    return st.floats(-3, 3, width=w) | st.sampled_from([math.nan, 0.0, -0.0])


@st.composite
def chains(draw):
    dtype = np.dtype(draw(st.sampled_from(FLOATS)))
    rank = draw(st.sampled_from([2, 3, 1]))
    base = draw(st.lists(st.sampled_from([3, 4, 2, 5]), min_size=rank, max_size=rank))
    bindings, pool = {}, []
    for n, name in enumerate("xyz"[: draw(st.sampled_from([2, 1, 3]))]):
        r = rank if n == 0 else draw(st.sampled_from(range(rank, -1, -1)))
        ones = draw(st.lists(st.sampled_from([False] * 4 + [True]), min_size=r, max_size=r))
        shape = tuple(1 if one else d for one, d in zip(ones, base[rank - r :]))
        array = draw(hnp.arrays(dtype, shape, elements=_elements(dtype)))
        bindings[name] = array
        pool.append((array, ppto.tensor(name)))
    steps = []
    for _ in range(draw(st.integers(2, 7))):
        step = _step(draw, pool)
        if step is None:
            continue
        what, numpy_fn, chain_fn = step
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(numpy_fn())
        except (ValueError, IndexError, TypeError):
            continue  # NumPy refuses these operands (shapes that do not broadcast...)
        pool.append((value, chain_fn()))
        steps.append(what)
    made = pool[len(bindings) :]
    if not made:
        a, t = pool[0]
        made = [(-a, -t)]
    roots = [made[-1][1]]
    extra = draw(st.sampled_from(["none", "value", "reorder"]))
    if extra != "none" and len(pool) > 1:  # a second output: another value, or a reorder of one
        a, t = pool[draw(st.integers(0, len(pool) - 2))]
        if extra == "reorder":
            t = t[None] if a.ndim < 2 else ppto.transpose(t, tuple(range(a.ndim))[::-1])
        roots.append(t)
    used = placeholders([t._node for t in roots])
    return Chain(roots, {n: a for n, a in bindings.items() if n in used}, steps)


@pytest.mark.parametrize("invariant", INVARIANTS)
@given(chain=chains())
def test_random_chain_plans(invariant, chain):
    case = chain_case("random chain", chain.roots, chain.bindings)
    CHECKS[invariant](case)


# -- the checks themselves catch broken plans ------------------------------------------------------
def _reference_case() -> Case:
    """Scans, a reduction and a product over five kernels in four levels, memory reused."""
    x = ppto.tensor("x")
    a = ppto.cumsum(x, axis=1)
    c = ppto.cumsum(ppto.cumsum(ppto.sin(a), axis=0) * 2, axis=1)
    roots = [ppto.sum(c * x, axis=1), ppto.exp(a) @ ppto.transpose(x)]
    x_value = np.random.default_rng(5).standard_normal((3, 4))
    return chain_case("reference", roots, {"x": x_value})


def _broken(case: Case, change) -> Case:
    plan = copy.copy(case.plan)  # the pipeline caches its plans: change copies only
    plan.kernels = [copy.copy(k) for k in plan.kernels]
    plan.buffers = [copy.copy(b) for b in plan.buffers]
    plan.levels = [list(lv) for lv in plan.levels]
    plan.memory = dict(plan.memory)
    change(plan)
    return Case(f"{case.where}, broken", plan, case.facts, case.calls)


def _drop_an_input(plan):
    k = next(k for k in plan.kernels if k.inputs)
    k.body = dataclasses.replace(k.body, inputs=k.body.inputs[1:])


def _drop_a_producer(plan):
    out = next(a for a in plan.graph.outputs if isinstance(a, Var))
    plan.kernels = [k for k in plan.kernels if not any(v is out for v in k.outputs)]


def _merge_the_last_levels(plan):
    *rest, before, last = plan.levels
    plan.levels = [*rest, before + last]
    for i in last:
        plan.kernels[i].level -= 1


def _share_live_memory(plan):
    """A buffer written into the memory of one a later kernel still reads."""
    read = readers(plan)
    for a, b in itertools.permutations(plan.buffers, 2):
        later = [r for r in read.get(id(a.value), []) if r > b.first]
        if a.role == "temp" and later and plan.memory[a.name] != plan.memory[b.name]:
            plan.memory[b.name] = plan.memory[a.name]
            b.reuses = a.name
            return
    raise AssertionError("no two buffers live at once")


def _call_a_computing_kernel_a_copy(plan):
    next(k for k in plan.kernels if k.ops).kind = "copy"


def _overcount_bytes(plan):
    k = next(k for k in plan.kernels if k.ops)
    k.bytes_read = k.unfused_bytes + 1


def _chunk_a_reduced_axis(plan):
    k = next(k for k in plan.kernels if k.reduced and k.chunking is not None)
    k.chunking = dataclasses.replace(k.chunking, axis=k.reduced[0])


BREAKS = {
    "closure": _drop_an_input,
    "dataflow": _drop_a_producer,
    "levels": _merge_the_last_levels,
    "memory": _share_live_memory,
    "fusion": _call_a_computing_kernel_a_copy,
    "bytes": _overcount_bytes,
    "run": _share_live_memory,
    "chunking": _chunk_a_reduced_axis,
}


@pytest.mark.parametrize("invariant", INVARIANTS)
def test_each_check_catches_a_broken_plan(invariant):
    case = _reference_case()
    CHECKS[invariant](case)
    with pytest.raises(AssertionError):
        CHECKS[invariant](_broken(case, BREAKS[invariant]))


# -- what the invariants found, as the smallest cases ---------------------------------------------
def test_a_kernel_reading_a_slice_of_its_input_moves_no_more_than_unfused():
    """sin(x[:1]) reads one row of x; the plan counts all of x as read (bytes_read 128 B for
    an 8x4 float32 x), more than sin on the row one NumPy call at a time moves (32 B)."""
    x = ppto.tensor("x")
    case = chain_case("sin(x[:1])", [ppto.sin(x[:1])], {"x": np.ones((8, 4), np.float32)})
    check_bytes(case)


def test_a_kernel_that_computes_is_not_a_copy():
    """A reorder output of a map (sin(x).T) roots a kernel that computes the map."""
    x = ppto.tensor("x")
    for chain in (ppto.sin(x).T, ppto.sin(x).reshape(-1), ppto.sin(x)[1:]):
        case = chain_case(repr(chain), [chain], {"x": np.ones((3, 4), np.float32)})
        check_fusion(case)
        assert [k.kind for k in case.plan.kernels] == ["elementwise"]


def test_an_output_that_reorders_a_temporary_outlives_the_temporary():
    """a = cumsum(x) is a temporary; a[None] is an output made by a copy kernel; the plan
    frees a's memory after its last reader. Running the plan with its memory checked must
    still return a[None]'s values (not the garbage written into a's freed memory)."""
    x = ppto.tensor("x")
    a = ppto.cumsum(x)
    case = chain_case("a[None]", [a[None], ppto.cumsum(ppto.cumsum(a))], {"x": np.arange(3.0)})
    assert [k.kind for k in case.plan.kernels] == ["scan", "copy", "scan", "scan"]
    check_run(case)
