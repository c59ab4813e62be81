"""Never slower than the original: when the user's NumPy statements cost less than the Plan.

A generated program pays per block call and per kernel (a Python call, views, scratch); the
original pays per NumPy call. What the Plan gains is memory traffic: a kernel of ``n`` ops over
an array beyond the cache makes ``n - 1`` fewer passes over it than the ops one NumPy call at a
time (in the cache, below ``SMALL`` elements, a pass costs next to nothing). The original is
cheaper where its calls, counted per trip of the host loops, cost less than the Plan's blocks
and kernels minus what fusion saves: a loop body of a few small kernels run many times, a
stencil time loop on a short array, a recurrence over columns whose only large kernel runs
once. The answer depends on sizes known only at run time, so it is a size guard
(``original_cheaper``): when it holds, the compiled function runs the original. Costs are in
nanoseconds, measured on the project's machine (benchmarks/loop_bench.py shows the ratios): a
NumPy call of the original about 0.4 us, a generated kernel about 4 us and a block call about
3 us at small sizes, a pass over an element beyond the cache about 2 ns.
"""

from __future__ import annotations

from ..function import Bind, Block, Branch, Fail, Function, Loop, While
from ..shapes import Guard, make_guard, size_of
from ..symbolic import add, mul, smax, substitute

SMALL = 1 << 15  # elements: below this an array stays in the cache (a pass costs no traffic)
ORIGINAL_CALL, KERNEL, BLOCK, PASS = 400, 4000, 3000, 2  # ns: a call, a kernel, a block, and
# a pass over one element beyond the cache (what each op fused into a kernel saves)


def original_cheaper(fn: Function, plans: dict) -> tuple[Guard, ...]:
    """The guards under which running the original function costs less (empty: never)."""
    if not any(isinstance(s, (Loop, Branch, While)) for s in fn.body):  # straight-line code: the
        return ()  # Plan pays once, its fusion pays off
    cost = _Cost(plans)
    original, generated = cost.steps(fn.body, {})
    guard = make_guard(generated, ">=", add(original, 1))
    if isinstance(guard.expr, int) and not guard.holds({}):
        return ()  # never cheaper
    return (guard,)


class _Cost:
    def __init__(self, plans):
        self.plans = plans

    def steps(self, steps, bounds):
        original = generated = 0
        for step in steps:
            if isinstance(step, Bind):  # a size the values decide: costed at its bound
                bounds = {**bounds, step.var: _at(step.bound, bounds)}
                continue
            o, g = self.step(step, bounds)
            original, generated = add(original, o), add(generated, g)
        return original, generated

    def step(self, step, bounds):
        if isinstance(step, Block):
            return self.block(step, bounds)
        if isinstance(step, Fail):
            return 0, 0
        if isinstance(step, While):  # one iteration (the trip count is the same for both)
            a = self.steps(step.test, bounds)
            b = self.steps(step.body, bounds)
            return add(a[0], b[0]), add(a[1], b[1])
        if isinstance(step, Branch):
            a = self.steps(step.then, bounds)
            b = self.steps(step.orelse, bounds)
            return smax(a[0], b[0]), smax(a[1], b[1])
        inner = {**bounds, step.var: step.stop if step.step > 0 else step.start}
        trips = _at(smax(step.count(), 0), bounds)  # (a step of 2: half the span)
        o, g = self.steps(step.body, inner)
        original = mul(trips, o)
        if step.vector is not None:  # a block, or an interchanged nest
            return original, self.step(step.vector, bounds)[1]
        return original, mul(trips, g)

    def block(self, block: Block, bounds):
        """One run of the block: the original's calls, the Plan's calls less what it saves."""
        plan = self.plans[id(block)]
        generated = BLOCK + KERNEL * len(plan.kernels)
        saved = 0
        for k in plan.kernels:
            for e in k.body.eqns:  # a scatter copies its array (parse/index_arrays.py)
                if e.op == "host_call" and getattr(e.params["fn"], "copies", False):
                    generated = add(generated, mul(PASS, _at(size_of(e.out.type.shape), bounds)))
            fused = len(k.ops) - 1
            if fused > 0:
                beyond = smax(add(_at(size_of(k.domain), bounds), -SMALL), 0)
                saved = add(saved, mul(PASS * fused, beyond))
        return ORIGINAL_CALL * len(block.graph.eqns), add(generated, mul(-1, saved))


def _at(d, bounds):
    for var, value in bounds.items():
        d = substitute(d, var, value)
    return d
