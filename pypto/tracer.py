"""From a lazy chain and its bindings to a verified Graph, cached, then run.

``run`` validates the bindings (missing or extra names, unsupported values, declared shapes and
dtypes), describes each bound value abstractly (dtype, rank, which sizes are 1), finds a cached
graph for that description whose guards hold for the actual sizes, or traces a new one, verifies
it, and executes it with the reference executor.

Specialization: a graph is specific to its inputs' dtypes, ranks, weak-ness and which of their
sizes are 1 (those become the literal 1, as broadcasting depends on them); every other size is a
symbol (``x.0``, or a name declared in ``ppto.tensor(shape=...)``), so one graph serves all sizes
for which its guards hold.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import api
from .bindings import check_dask, dtype_of, is_dask_array, is_device_array, refuse_foreign
from .builder import GraphBuilder
from .dtypes import python_scalar_type, weak_dtype
from .errors import BindingError, PyptoError, api_boundary
from .ir import Graph
from .registry import REGISTRY
from .shapes import ShapeContext, input_facts
from .symbolic import Sym
from .types import TensorType
from .verify import verify


def _topo(roots) -> list:
    """Nodes reachable from roots, each after its arguments (iterative: chains can be long)."""
    order, seen = [], set()
    stack = [(r, False) for r in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for a in reversed(node.args):
            if isinstance(a, api.Node) and id(a) not in seen:
                stack.append((a, False))
    return order


def placeholders(roots) -> dict[str, api.Node]:
    found: dict[str, api.Node] = {}
    for node in _topo(roots):
        if node.op == "placeholder":
            other = found.setdefault(node.name, node)
            if other is not node and not (node.value is not None and other.value is node.value):
                raise BindingError(
                    f"two different inputs are named {node.name!r}", site=node.site, code="PPT407"
                )
    return found


def _bound_value(name: str, value):
    """The value as the executor will see it: ndarray, NumPy scalar or Python number."""
    refuse_foreign(name, value)
    if python_scalar_type(value) is not None or isinstance(value, np.generic):
        return value
    if is_dask_array(value):  # the Dask target: kept lazy
        check_dask(name, value, "input")
        return value
    if not isinstance(value, np.ndarray) and not is_device_array(value):
        try:
            value = np.asarray(value)
        except Exception as e:
            raise BindingError(
                f"input {name!r} cannot be made an array: {e}", code="PPT406"
            ) from None
    return value


def _abstract(name: str, value) -> TensorType:
    pytype = python_scalar_type(value)
    if pytype is not None and pytype is not bool:
        return TensorType(weak_dtype(pytype), (), weak=True)
    dtype = value.dtype if is_dask_array(value) else np.result_type(value)
    return TensorType(dtype_of(name, dtype), tuple(np.shape(value)))


def _input_type(node: api.Node, t: TensorType, named: dict) -> TensorType:
    """Check a bound value's type against the declaration; make its sizes symbolic."""
    name = node.name
    if node.dtype is not None and t.dtype != node.dtype:
        raise BindingError(
            f"input {name!r} must have dtype {node.dtype}, got {t.dtype}",
            site=node.site,
            code="PPT405",
        )
    if node.shape is not None and len(node.shape) != t.rank:
        raise BindingError(
            f"input {name!r} must have rank {len(node.shape)} (shape {node.shape}), "
            f"got rank {t.rank} (shape {t.shape})",
            site=node.site,
            code="PPT403",
        )
    dims = []
    for axis, size in enumerate(t.shape):
        want = node.shape[axis] if node.shape is not None else None
        if isinstance(want, int) and size != want:
            raise BindingError(
                f"input {name!r} must have size {want} on axis {axis}, got shape {t.shape}",
                site=node.site,
                code="PPT404",
            )
        if isinstance(want, str):
            first = named.setdefault(want, (size, name, axis))
            if first[0] != size:
                raise BindingError(
                    f"inputs {first[1]!r} (axis {first[2]}) and {name!r} (axis {axis}) share "
                    f"the size {want!r}, but have sizes {first[0]} and {size}",
                    site=node.site,
                    code="PPT404",
                )
        if size == 1 or isinstance(want, int):
            dims.append(size)
        else:
            dims.append(Sym(want if isinstance(want, str) else f"{name}.{axis}"))
    return TensorType(t.dtype, tuple(dims), t.weak)


def trace(roots: list, types: dict[str, TensorType], env: dict | None) -> Graph:
    """Replay the lazy chain on traced inputs of the given types; returns a verified Graph."""
    ctx = ShapeContext(env, facts=input_facts(types.values()))
    builder = GraphBuilder(ctx)
    memo: dict[int, object] = {}
    for name in sorted(types):
        memo[name] = api.traced(builder.add_input(name, types[name]), builder)
    token = api._BUILDER.set(builder)
    try:
        for node in _topo(roots):
            if node.op == "placeholder":
                memo[id(node)] = memo[node.name]
                continue
            if node.op == "const":
                memo[id(node)] = api.traced(builder.add_const(node.value), builder)
                continue
            args = tuple(memo[id(a)] if isinstance(a, api.Node) else a for a in node.args)
            builder.site = node.site
            try:
                memo[id(node)] = api.apply(node.op, args, node.attrs)
            except PyptoError as e:
                raise e.with_context(None, node.site) from None
    finally:
        api._BUILDER.reset(token)
    outputs = [memo[id(r)]._atom for r in roots]
    return verify(builder.finish(outputs))


def _key(types: dict[str, TensorType]):
    return (REGISTRY.version,) + tuple(
        (n, t.dtype.str, t.weak, tuple(d == 1 for d in t.shape)) for n, t in sorted(types.items())
    )


def compile_chain(roots: list, bindings: dict):
    """The graph for these bound values (cached on the first root) and the values to run it on."""
    head = roots[0]
    if head.cache is None:
        head.cache = {}
    chain_key = tuple(id(r) for r in roots[1:])
    found = head.cache.get(("inputs", chain_key))
    if found is None:  # the chain is immutable: walk it once
        found = head.cache[("inputs", chain_key)] = placeholders(roots)
    # dask arrays used as operands are inputs bound to themselves
    bindings = {**{n: p.value for n, p in found.items() if p.value is not None}, **bindings}
    missing = sorted(set(found) - set(bindings))
    extra = sorted(set(bindings) - set(found))
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing input" + "s" * (len(missing) > 1) + " " + ", ".join(missing))
        if extra:
            parts.append("unknown input" + "s" * (len(extra) > 1) + " " + ", ".join(extra))
        known = ", ".join(sorted(found)) or "none"
        raise BindingError(
            "; ".join(parts) + f" (the chain's inputs: {known})",
            code="PPT402" if extra and not missing else "PPT401",
        )
    values = {n: _bound_value(n, v) for n, v in bindings.items()}
    named: dict = {}
    types = {n: _input_type(found[n], _abstract(n, values[n]), named) for n in sorted(values)}
    env = {}
    for n, t in types.items():
        for d, size in zip(t.shape, np.shape(values[n])):
            if not isinstance(d, int):
                env[str(d)] = int(size)
    key = (chain_key, _key(types))
    entries = head.cache.setdefault(key, [])
    for graph, _roots in entries:
        if all(g.holds(env) for g in graph.guards):
            break
    else:
        graph = trace(roots, types, env)
        entries.append((graph, tuple(roots)))
    return graph, [values[n] for n in graph.input_names], env


@api_boundary
def run(outputs, **bindings):
    """Compute lazy tensors: ``run(t, x=...)``; several at once with a list, tuple or dict."""
    if isinstance(outputs, api.Tensor):
        return _run([outputs], bindings)[0]
    if isinstance(outputs, dict):
        keys = list(outputs)
        return dict(zip(keys, _run([outputs[k] for k in keys], bindings)))
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_run(list(outputs), bindings))
    raise BindingError(f"run() computes tensors, not {type(outputs).__name__}", code="PPT406")


def _run(tensors: list, bindings: dict) -> list:
    roots = []
    for t in tensors:
        if not isinstance(t, api.Tensor) or t._node is None:
            raise BindingError(f"run() computes lazy tensors, not {t!r}", code="PPT406")
        roots.append(t._node)
    graph, values, env = compile_chain(roots, bindings)
    state = _state(graph)
    stored = state[0] if _host_only(values) else None
    if stored is not None:
        try:
            return stored(values, env)
        except PyptoError:
            raise
        except Exception:  # the plan's own path says why (it diagnoses generated code)
            pass
    from .backends import run_graph  # the passes and the emitters: on the first run
    from .passes.pipeline import plan_graph

    plan = plan_graph(graph)
    result = run_graph(plan, values, env)
    generated = getattr(plan, "_numpy_fn", None)
    if not state[1] and generated is not None and generated.program is not None:
        state[1] = True  # stored once
        from . import cache

        key = cache.graph_key(graph) if cache.enabled() else None
        if key is not None:
            cache.store(key, {"program": generated.program})
    return result


# graph -> [its program from the compile cache or None, whether it is in the cache]
_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _host_only(values) -> bool:
    from .bindings import device_module

    return device_module(values) is None and not any(is_dask_array(v) for v in values)


def _state(graph) -> list:
    """A graph's program from the compile cache (pypto/cache.py), looked up once per graph."""
    found = _STATE.get(graph)
    if found is not None:
        return found
    from . import cache

    run = None
    key = cache.graph_key(graph) if cache.enabled() else None
    entries = cache.load(key) if key is not None else []
    if entries:
        from .emit.program import load_graph

        cache.touch(entries[0])
        run = load_graph(entries[0]["program"])
    found = _STATE[graph] = [run, run is not None]
    return found


api.RUN_CHAIN[:] = [run]
