"""The host program of a compiled function rendered as Python around its blocks' NumPy code.

``def <name>(<params>)`` binds the size symbols from its array arguments, keeps host variables
as locals, runs loops as ``for i in range(...)`` (checking each iteration's guards), run-time
``if``s as ``if``, calls each block's generated function (numpy_target.py), raises the errors
of code that can only fail where the run reaches them, copies final values into argument arrays
written in place (unless the block already wrote into them), and returns the result.

``compile_function(fn, plans)`` gives ``run(arguments, env) -> result``; the Function IR's
interpreter (function.py) stays the reference.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import recipe
from ..function import Bind, Block, Branch, Fail, Function, Loop, While
from ..symbolic import SymFloat, as_symbol
from . import runtime
from .common import const_code, dim_code, ident, read_bindings, source_lines, symfloat_code
from .numpy_target import GraphEmitter
from .program import load_program


class FunctionEmitter:
    def __init__(
        self,
        fn: Function,
        plans: dict,
        prefix: str = "",
        name: str | None = None,
        target: str = "numpy",
    ):
        self.fn = fn
        self.cuda = target == "cuda"  # blocks on the CUDA target; the function takes ``cp``
        self.plans = plans
        self.p = prefix  # before every module-level name (several functions in one module)
        self.name = name or fn.name
        self.emitters: list = []
        self.lines: list[str] = []
        self.blocks: list[str] = []  # the blocks' function sources
        self.hosts: dict[int, str] = {}
        self.namespace: dict = {}
        self.fails: list = []
        self.consts: list = []
        self.const_sources: list[str] = []
        self.binds: list[str] = []  # the lines binding sizes the values decide
        self.count = 0

    def host(self, hv) -> str:
        name = self.hosts.get(id(hv))
        if name is None:
            name = self.hosts[id(hv)] = f"h_{ident(hv.name)}_{len(self.hosts)}"
        return name

    def render(self) -> str:
        fn = self.fn
        params = [p.name for p in fn.params]
        out = [f"def {self.name}({', '.join((['cp'] if self.cuda else []) + params)}):"]
        bound, sizes = set(), []
        for p in fn.params:
            if p.kind == "array":
                for axis, d in enumerate(p.type.shape):
                    s = as_symbol(d)
                    if s is not None and s not in bound:
                        bound.add(s)
                        sizes.append(f"    {ident(s)} = {p.name}.shape[{axis}]")
        for p in fn.params:
            if p.host is not None:
                sizes.append(f"    {self.host(p.host)} = {p.name}")
        if not self.cuda:
            from ..passes.cost import original_cheaper

            cheaper = original_cheaper(fn, self.plans)
            if cheaper:  # NumPy's own statements cost less at these sizes (passes/cost.py)
                test = " and ".join(guard_test(g) for g in cheaper)
                self._add(1, f"if _ORIGINAL[0] and {test}:  # the original costs less here")
                self._add(2, f"return {self._original()}")
        self._steps(fn.body, 1)
        out += self.lines
        self.lines = []
        self._writebacks(1)
        out += self.lines
        out.append(f"    return {self._result(fn.result)}")
        out[1:1] = read_bindings(sizes, "\n".join(out[1:]))
        code = "\n".join(out)
        out = [  # (a size no code after it reads: the blocks read it from their inputs)
            line
            for line in out
            if line.strip() not in self.binds
            or len(re.findall(rf"\b{line.split('=')[0].strip()}\b", code)) > 1
        ]
        return "\n\n\n".join([self._tables(), *self.blocks, "\n".join(out)]) + "\n"

    def _tables(self) -> str:
        """The module-level data the function reads: each block's constants, the messages of
        the errors it raises (the loader puts PyPTO's coded errors in their place; on its own
        the module raises RuntimeError with the same text), the constant results."""
        lines = [*self.const_sources]
        fails = ", ".join(repr(str(e)) for e in self.fails)
        lines.append(f"{self.p}_FAILS = [{fails}]")
        lines.append("")
        lines.append("")
        lines.append(f"def {self.p}_raise(k):")
        lines.append(f"    raise RuntimeError({self.p}_FAILS[k])")
        guards, breaches = [], []
        for k, (g, where, var) in enumerate(self.namespace.get("_guards", [])):
            text = f"{where} breaks an assumption PyPTO made when compiling it: {g}"
            if var is None:
                text = text.replace("{", "{{").replace("}", "}}")
            guards.append(repr(text))
            if g.breach is not None:
                breaches.append(f"{k}: ({g.breach.error.__name__}, {g.breach.message!r})")
        lines.append("")
        lines.append("")
        lines.append(f"{self.p}_GUARDS = [{', '.join(guards)}]")
        lines.append(f"{self.p}_BREACHES = {{{', '.join(breaches)}}}  # what NumPy raises there")
        lines.append("")
        lines.append("")
        lines.append(f"def {self.p}_guard_failed(k, value, dims=()):")
        lines.append(f"    if k in {self.p}_BREACHES:")
        lines.append(f"        error, message = {self.p}_BREACHES[k]")
        lines.append("        raise error(message.format(*dims))")
        lines.append(f"    raise RuntimeError({self.p}_GUARDS[k].format(value))")
        lines.append("")
        lines.append("")
        results = [const_code(c) if _literal(c) else "None" for c in self.consts]
        lines.append(f"{self.p}_results = [{', '.join(results)}]  # others: set by the loader")
        return "\n".join(lines)

    def _writebacks(self, depth: int):
        """The arguments the function writes get their values (at its end, or before an error
        its body ends in: NumPy made those writes before it raised)."""
        xp = "cp" if self.cuda else "np"
        for name, hv in self.fn.writebacks:
            h = self.host(hv)
            self._add(depth, f"if {h} is not {name}:")
            self._add(depth + 1, f"{xp}.copyto({name}, {h}, casting='unsafe')")

    def _add(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def _steps(self, steps, depth):
        if not steps:
            self._add(depth, "pass")
        for step in steps:
            if isinstance(step, Block):
                self._block(step, depth)
            elif isinstance(step, Fail):
                self.fails.append(step.error)
                if depth == 1 and step is self.fn.body[-1]:  # the end of the function's body
                    self._writebacks(depth)
                self._add(depth, f"{self.p}_raise({len(self.fails) - 1})")
            elif isinstance(step, Loop):
                at = depth
                if step.vector is not None:  # the loop as array operations, when they apply
                    test = " and ".join(guard_test(g) for g in step.when) or "True"
                    self._add(depth, f"if {test}:  # the loop over {step.var}: {step.decision}")
                    self._steps((step.vector,), depth + 1)
                    self._add(depth, "else:")
                    at = depth + 1
                rng = ", ".join(dim_code(d) for d in (step.start, step.stop))
                # (the guards, and for a loop run inside one kernel its inner loops' forms)
                ends = step.ends if step.guards or step.lines is not None else None
                flag = None
                if ends:  # checked once: each iteration checks only where an end breaks one
                    self.count += 1
                    flag = f"_ends{self.count}"
                    self._add(at, f"{flag} = {' and '.join(guard_test(g) for g in ends)}")
                if self.cuda and step.lines is not None and self._in_kernel(step, flag, at):
                    self._add(at, "else:")
                    at += 1
                self._add(at, f"for {ident(step.var)} in range({rng}, {step.step}):")
                where = f"at {step.var} = {{}} the loop"
                self._guards(step.guards, at + 1, where, step.var, unless=flag)
                self._steps(step.body, at + 1)
                self._until(step, at + 1)
            elif isinstance(step, While):  # (CUDA: the condition read to the host each time)
                self._add(depth, "while True:")
                self._steps(step.test, depth + 1)
                self._add(depth + 1, f"if not {self.host(step.cond)}:")
                self._add(depth + 2, "break")
                self._steps(step.body, depth + 1)
                self._until(step, depth + 1)
            elif isinstance(step, Bind):  # a size the values decide, bound now
                line = f"{ident(step.var)} = {self.host(step.source)}.shape[{step.axis}]"
                self.binds.append(line)
                self._add(depth, line)
                if step.restart:  # nothing written yet: NumPy's answer is the original's
                    test = " or ".join(guard_test(g.negated()) for g in step.guards)
                    if test:
                        self._add(depth, f"if {test}:  # (sizes PyPTO did not assume)")
                        self._add(depth + 1, f"return {self._original()}")
                else:
                    self._guards(step.guards, depth, f"the size of {step.what}")
            elif isinstance(step, Branch):
                self._add(depth, f"if {self.host(step.cond)}:")
                self._guards(step.then_guards, depth + 1, "this branch")
                self._steps(step.then, depth + 1)
                if step.orelse or step.else_guards:
                    self._add(depth, "else:")
                    self._guards(step.else_guards, depth + 1, "this branch")
                    self._steps(step.orelse, depth + 1)

    def _original(self) -> str:
        """The call of the original function with the arguments (``{p}_original``)."""
        fn = self.fn
        args = ", ".join(
            f"{n}={n}" if n in fn.keyword_only else n for n in (p.name for p in fn.params)
        )
        return f"{self.p}_original({args})"

    def _until(self, loop, depth) -> None:
        """A loop whose body may ``break`` (under a run-time condition) ends where it did."""
        if loop.until is not None:
            self._add(depth, f"if {self.host(loop.until)}:")
            self._add(depth + 1, "break")

    def _guards(self, guards, depth, where, var=None, unless=None):
        """Each guard checked (``unless``: a flag that, true, says they all hold)."""
        for g in guards:
            test = guard_test(g)
            self.namespace.setdefault("_guards", []).append((g, where, var))
            index = len(self.namespace["_guards"]) - 1
            value = ident(var) if var else "None"
            dims = ""
            if g.breach is not None:  # the values its message names
                dims = ", (" + "".join(f"{dim_code(d)}, " for d in g.breach.dims) + ")"
            self._add(depth, f"if {'' if unless is None else f'not {unless} and '}not ({test}):")
            self._add(depth + 1, f"{self.p}_guard_failed({index}, {value}{dims})")

    def _in_kernel(self, loop: Loop, flag, depth) -> bool:
        """A recurrence along independent lines as one kernel that loops inside (where its
        guards hold at both ends); False where the block is not one in-place elementwise
        kernel (the host loop runs it)."""
        from .cuda_kernels import NotInKernel

        try:
            name, emitter = self._render(loop.lines, loop)
        except NotInKernel:
            return False
        self._add(depth, f"if {flag or 'True'}:  # the loop over {loop.var}: one kernel")
        bounds = {"_lo": dim_code(loop.start), "_hi": dim_code(loop.stop)}
        self._call(loop.lines, name, emitter, depth + 1, bounds)
        return True

    def _block(self, block: Block, depth):
        name, emitter = self._render(block)
        self._call(block, name, emitter, depth)

    def _render(self, block: Block, loop: Loop | None = None):
        """The block's function (and its module data) on this target; ``loop``: with that
        loop's iterations inside its kernel (CUDA; raises NotInKernel where they cannot be)."""
        plan = self.plans[id(block)]
        name = f"{self.p}_b{len(self.blocks)}"
        if self.cuda:
            from .cuda_target import CudaGraphEmitter

            inside = None if loop is None else (loop.var, loop.step)
            emitter = CudaGraphEmitter(plan, name, loop=inside)
            cuda_source, source = emitter.render()
            self.const_sources.append(emitter.module_source(cuda_source))
        else:
            emitter = GraphEmitter(plan, name)
            source = emitter.render()
            self.namespace.update(emitter.module_names())  # keyed by the block's name
            self.const_sources.append(emitter.module_source())
        self.emitters.append(emitter)
        self.blocks.append(source)
        return name, emitter

    def _call(self, block: Block, name, emitter, depth, bounds=None):
        """``outputs, = block(inputs, *, sizes)`` (``bounds``: values of named parameters)."""
        bounds = bounds or {}
        args = (["cp"] if self.cuda else []) + [self.host(h) for h in block.inputs]
        args += [f"{ident(s)}={bounds.get(s, ident(s))}" for s in emitter.free]
        outs = [self.host(h) for h in block.outputs]
        call = f"{name}({', '.join(args)})"
        plan = self.plans[id(block)]
        lines = "".join(source_lines(k).strip().replace("# ", " ") for k in plan.kernels[:1])
        where = f"  #{lines}" if lines else ""
        if outs:
            self._add(depth, f"{', '.join(outs)}, = {call}{where}")
        else:
            self._add(depth, call + where)

    def _result(self, result) -> str:
        kind, value = result
        if kind == "tuple":
            items = [self._result(r) for r in value]
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if kind == "host":
            return self.host(value)
        if kind == "param":
            return value
        if kind == "dim":
            if isinstance(value, SymFloat):
                return symfloat_code(value, ident)
            return dim_code(value)
        self.consts.append(value)
        return f"{self.p}_results[{len(self.consts) - 1}]"


def guard_test(g, code=dim_code) -> str:
    """A size guard as a Python condition (``code`` renders its expression)."""
    expr = code(g.expr)
    return {"==": f"{expr} == 0", "!=": f"{expr} != 0", ">=": f"{expr} >= 0"}[g.rel]


def _literal(value) -> bool:
    """Whether ``value`` can be written into the module as source."""
    if isinstance(value, (np.ndarray, np.generic)) or value is None:
        return True
    if isinstance(value, tuple):
        return all(_literal(v) for v in value)
    return type(value) in (bool, int, float, complex, str)


def compile_function(fn: Function, plans: dict, original=None):
    """``run(arguments, env) -> result`` for a compiled function, from generated source
    (``run.program``: what the compile cache stores; None when it calls user operators)."""
    emitter = FunctionEmitter(fn, plans)
    source = emitter.render()
    program = {
        "source": source,
        "name": fn.name,
        "params": [p.name for p in fn.params],
        "fails": [recipe(e) for e in emitter.fails],
        "guards": emitter.namespace.get("_guards", []),
        "consts": emitter.consts,
    }
    impls = {k: v for k, v in emitter.namespace.items() if k.startswith("_impl")}
    run = load_program(program, impls, original)
    run.program = None if any(impls.values()) else program
    run.module = runtime.vendored(cuda=False, standalone=True) + "\n\n" + source  # on its own
    return run
