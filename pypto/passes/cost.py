"""Never slower than the original: when the user's NumPy statements cost less than the Plan.

A generated program pays per block call and per kernel (a Python call, views, scratch); the
original pays per NumPy call. Where every kernel is small (below ``SMALL`` elements, so fusion
saves no memory traffic worth the calls) and the host loops run the original's calls fewer
times than the Plan's, the original statements are cheaper: a loop body of a few tiny kernels
run many times, a stencil time loop on a short array. The answer depends on sizes known only at
run time, so it is a list of size guards (``original_cheaper``): when all hold, the compiled
function runs the original. Costs are counted in tenths of a microsecond, measured on the
project's machine (benchmarks/loop_bench.py shows the ratios): a NumPy call of the original
about 0.4 us, a generated kernel about 4 us and a block call about 3 us at small sizes.
"""

from __future__ import annotations

from ..function import Block, Branch, Fail, Function, Loop
from ..shapes import Guard, make_guard, size_of
from ..symbolic import add, mul, smax, substitute

SMALL = 1 << 15  # elements: below this a fused kernel saves less than its calls cost
ORIGINAL_CALL, KERNEL, BLOCK = 4, 40, 30


def original_cheaper(fn: Function, plans: dict) -> tuple[Guard, ...]:
    """The guards under which running the original function costs less (empty: never)."""
    if not any(isinstance(s, (Loop, Branch)) for s in fn.body):  # straight-line code: the
        return ()  # Plan pays once, its fusion pays off
    cost = _Cost(plans)
    original, generated = cost.steps(fn.body, {})
    guards = [make_guard(generated, ">=", add(original, 1))]
    for size in dict.fromkeys(cost.sizes):
        guards.append(make_guard(SMALL - 1, ">=", size))
    if any(isinstance(g.expr, int) and not g.holds({}) for g in guards):
        return ()  # never cheaper
    return tuple(g for g in guards if not isinstance(g.expr, int))


class _Cost:
    def __init__(self, plans):
        self.plans = plans
        self.sizes: list = []  # every kernel's elements (loop variables at their bounds)

    def steps(self, steps, bounds):
        original = generated = 0
        for step in steps:
            o, g = self.step(step, bounds)
            original, generated = add(original, o), add(generated, g)
        return original, generated

    def step(self, step, bounds):
        if isinstance(step, Block):
            return self.block(step, bounds)
        if isinstance(step, Fail):
            return 0, 0
        if isinstance(step, Branch):
            a = self.steps(step.then, bounds)
            b = self.steps(step.orelse, bounds)
            return smax(a[0], b[0]), smax(a[1], b[1])
        inner = {**bounds, step.var: step.stop if step.step > 0 else step.start}
        span = step.stop - step.start if step.step > 0 else step.start - step.stop
        trips = _at(smax(span, 0), bounds)
        o, g = self.steps(step.body, inner)
        original = mul(trips, o)
        if step.vector is not None:
            return original, self.block(step.vector, bounds)[1]
        return original, mul(trips, g)

    def block(self, block: Block, bounds):
        plan = self.plans[id(block)]
        for k in plan.kernels:
            self.sizes.append(_at(size_of(k.domain), bounds))
        original = ORIGINAL_CALL * len(block.graph.eqns)
        return original, BLOCK + KERNEL * len(plan.kernels)


def _at(d, bounds):
    for var, value in bounds.items():
        d = substitute(d, var, value)
    return d
