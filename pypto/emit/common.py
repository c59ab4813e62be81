"""What both targets write the same way: names of values, literals, constants, the return.

Neither target imports the other: the NumPy target, the CUDA target (its CuPy host code) and
the host program (emit/host.py) take these from here.
"""

from __future__ import annotations

import base64
import os
import re

import numpy as np

from ..errors import InternalError
from ..ir import Literal
from ..passes.plan import GraphPlan, Kernel
from ..symbolic import Expr, SymFloat, as_symbol, format_code, free_symbols


def ident(name: str) -> str:
    return name.replace(".", "_")


def bound_symbols(graph) -> dict:
    """Size symbols an input's shape gives: symbol -> (input, axis), first use."""
    bound: dict = {}
    for v in graph.inputs:
        for axis, d in enumerate(v.type.shape):
            s = as_symbol(d) if isinstance(d, Expr) else None
            if s is not None and s not in bound:
                bound[s] = (v, axis)
    return bound


def sized_calls(graph) -> dict:
    """Graph breaks whose result's size the values decide (``host_call`` with ``sized``
    axes): id(result) -> the symbol the call's result binds (the block does not take it)."""
    out = {}
    for e in graph.eqns:
        if e.op == "host_call" and e.params["sized"]:
            out[id(e.out)] = as_symbol(e.out.type.shape[e.params["sized"][0][0]])
    return out


def read_bindings(bindings: list[str], code: str) -> list[str]:
    """The lines ``NAME = ...`` of ``bindings`` whose NAME ``code`` names (sizes an input's
    shape gives that no statement reads are not bound: linters flag unused locals)."""
    return [b for b in bindings if re.search(rf"\b{b.split('=')[0].strip()}\b", code)]


def _floats(value, found: set) -> None:
    """The size symbols of floats that depend on sizes (``n + 1.0``) in ``value``."""
    if isinstance(value, SymFloat):
        for term, _ in value.terms:
            found.update(free_symbols(term))
    elif isinstance(value, tuple):
        for v in value:
            _floats(v, found)


def literal_symbols(value, found: set) -> None:
    """The size symbols a literal's code names (sizes, floats that depend on sizes)."""
    from ..printer import symbols_in

    symbols_in(value, found)
    _floats(value, found)


def eqn_symbols(e) -> set[str]:
    """The size symbols an equation's code names: its result's shape, its attributes, its
    literals, floats that depend on sizes."""
    from ..printer import symbols_in

    found: set[str] = set()
    symbols_in(e.out.type.shape, found)
    symbols_in(e.attrs, found)
    _floats(e.attrs, found)
    for a in e.inputs:
        if isinstance(a, Literal):
            literal_symbols(a.value, found)
    return found


def graph_symbols(plan: GraphPlan, chunks: bool = True) -> set[str]:
    """Every size symbol a graph's code names: in shapes, attributes, literals, floats that
    depend on sizes and (``chunks``) the blocks of chunked kernels."""
    from ..printer import symbols_in

    found: set[str] = set()
    for v in plan.graph.inputs:
        symbols_in(v.type.shape, found)
    for e in plan.graph.eqns:
        found |= eqn_symbols(e)
    for a in plan.graph.outputs:  # a size as an output (``s = n`` in a branch)
        if isinstance(a, Literal):
            literal_symbols(a.value, found)
    if chunks:
        for k in plan.kernels:
            if k.chunking is not None:
                symbols_in((k.chunking.block, k.chunking.extent), found)
    return found


def buffer_source(k: Kernel, v, b, by_name: dict, parallel: bool):
    """Where kernel output ``v`` (its buffer ``b``) lives: ``("donor", input)`` a slice
    assignment written in place into an input array; ``("base", value)`` into the memory of the
    array it assigns into; ``("reuse", value)`` the memory of a dead buffer; ``("new", None)``.
    ``parallel`` (the CUDA target's threads): in place only without write hazards (NumPy
    computes such a value whole first), and a slice assignment never takes over other memory.
    """
    s = next((x for x in k.stores if x.out is v), None)
    inplace = s is not None and s.inplace
    if parallel and inplace:  # (the base computed in the same kernel is never in place)
        inplace = not k.hazards.get(id(v)) and all(e.out is not s.base for e in k.body.eqns)
    if b is not None and b.donor is not None and (inplace or not parallel):
        return "donor", b.donor
    prior = by_name.get(b.reuses) if b is not None and b.reuses else None
    if inplace:
        return "base", prior.value if prior is not None and not parallel else s.base
    if prior is not None and not (parallel and s is not None):
        return "reuse", prior.value
    return "new", None


def dtype_code(dtype) -> str:
    """The NumPy name of a dtype in generated code (``np.bool_`` for bool)."""
    return "np.bool_" if dtype.name == "bool" else f"np.{dtype.name}"


def dim_code(d) -> str:
    """A size (int or symbolic) as Python code, size symbols by their identifiers."""
    return format_code(d, ident)


def attr_code(v, dim=dim_code) -> str:
    """An op's attribute value as Python code (sizes through ``dim``)."""
    from ..ops.indexing import SliceSpec

    if isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if isinstance(v, type) and issubclass(v, np.generic):  # dtype=np.float32 in a graph break
        return f"np.{np.dtype(v).type.__name__}"
    if isinstance(v, Expr):
        return dim(v)
    if isinstance(v, tuple):
        inner = ", ".join(attr_code(x, dim) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})"
    if isinstance(v, SymFloat):
        return symfloat_code(v, ident)
    if isinstance(v, SliceSpec):
        raise InternalError("slice attributes are emitted by their op")
    return pyrepr(v)


def attention_args(args: list, attrs: dict) -> tuple:
    """The attention op's operands (code): q, k, v, then scale and mask when it has them
    ("None" where not)."""
    q, k, v, *rest = args
    scale = rest.pop(0) if attrs["scale_op"] else "None"
    mask = rest.pop(0) if attrs["masked"] else "None"
    return q, k, v, scale, mask


def value_idents(plan: GraphPlan) -> dict[int, str]:
    """id(value) -> its name in generated code, for both targets: ``v_`` + its printed name;
    an input its own name, unless a size symbol is spelled so (an input ``x0_1`` beside the
    size ``x0.1``)."""
    names = {k: "v_" + ident(v) for k, v in plan.names.items()}
    symbols = {ident(s) for v in plan.graph.inputs for d in v.type.shape for s in free_symbols(d)}
    for v in plan.graph.inputs:
        if v.name is None:  # a value of another plan (the Dask target's kernels): its name
            continue
        name = ident(v.name)
        while name in symbols:
            name += "_in"
        names[id(v)] = name
    return names


def return_code(outputs, names, literal, scalars=()) -> str:
    """``return (...)`` of a graph's outputs, in both targets: literals as code, Python scalars
    through ``_py``, rank-0 arrays in ``scalars`` (ids) as NumPy scalars, as NumPy returns them."""
    results = []
    for a in outputs:
        if isinstance(a, Literal):
            results.append(literal(a))
        elif a.type.weak:
            results.append(f"_py({names[id(a)]})")
        elif a.type.rank == 0 and id(a) in scalars:
            results.append(f"{names[id(a)]}[()]")
        else:
            results.append(names[id(a)])
    return f"return ({', '.join(results)}{',' if len(results) == 1 else ''})"


def literal_code(lit: Literal, name_of) -> str:
    """A literal operand as Python source: sizes through ``name_of``, NumPy scalars typed; an
    operand in any expression (``(-2.0) ** n``: ``-2.0 ** n`` is ``-(2.0 ** n)``)."""
    v = lit.value
    if isinstance(v, Expr) or (isinstance(v, int) and not isinstance(v, bool)):
        code = format_code(v, name_of)
    elif isinstance(v, SymFloat):
        code = symfloat_code(v, name_of)
    elif isinstance(v, np.generic):
        code = f"np.{v.dtype.name}({pyrepr(v.item())})"
    else:
        code = pyrepr(v)
    return f"({code})" if code.startswith("-") else code


def source_lines(k: Kernel) -> str:
    """`` # file.py:LINE`` (or ``:FIRST-LAST``): the user's lines a kernel computes."""
    sites = [e.site for e in k.body.eqns if e.site is not None and e.site.lineno]
    if not sites:
        return ""
    name = os.path.basename(sites[0].filename)
    lines = sorted({s.lineno for s in sites if s.filename == sites[0].filename})
    span = f"{lines[0]}" if lines[0] == lines[-1] else f"{lines[0]}-{lines[-1]}"
    return f"  # {name}:{span}"


def const_code(value) -> str:
    """Python source that rebuilds a constant: a literal for scalars and small arrays, base64
    of the bytes for larger ones (deterministic: same value, same text)."""
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}({pyrepr(value.item())})"
    if not isinstance(value, np.ndarray):
        return pyrepr(value)
    dt = value.dtype.name
    if value.size <= 16 and value.dtype.kind in "biuf":
        items = [pyrepr(x) for x in value.reshape(-1).tolist()]
        return f"np.array([{', '.join(items)}], np.{dt}).reshape({value.shape!r})"
    data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes()
    return f"_array({base64.b64encode(data).decode()!r}, {dt!r}, {value.shape!r})"


def symfloat_code(v: SymFloat, name_of) -> str:
    """A float that depends on sizes as a Python expression."""
    parts = [repr(float(v.const))]
    parts += [f"{coef!r} * {format_code(term, name_of)}" for term, coef in v.terms]
    return "(" + " + ".join(parts) + ")"


def pyrepr(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "float('nan')"
        if v in (float("inf"), float("-inf")):
            return f"float({str(v)!r})"
    if isinstance(v, complex):
        return f"complex({pyrepr(v.real)}, {pyrepr(v.imag)})"
    return repr(v)


__all__ = [
    "attention_args",
    "attr_code",
    "bound_symbols",
    "buffer_source",
    "const_code",
    "dim_code",
    "dtype_code",
    "graph_symbols",
    "ident",
    "literal_code",
    "pyrepr",
    "return_code",
    "source_lines",
    "symfloat_code",
    "value_idents",
]


def function_code(fn) -> tuple[str | None, str | None]:
    """How a generated module names ``fn`` (a graph break's function: ops/host_calls.py), and
    its path under NumPy ("linalg.solve", what CuPy's function of the same name is found by):
    ``np.<path>`` for NumPy's, ``__import__(module).<name>`` for another importable module's,
    the name of a runtime helper (path "*" where it takes device arrays as they are);
    (None, None) for a function no module name reaches (a closure, a lambda)."""
    import sys

    owner = getattr(fn, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(np, owner.__name__, None) is owner:
        path = f"{owner.__name__}.{fn.__name__}"  # np.add.reduce
        return f"np.{path}", path
    module, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or not qual or "<" in qual:
        return None, None
    if module == "pypto.emit.runtime.numpy_helpers":  # a helper of the generated code's runtime
        return qual, "*" if getattr(fn, "any_array", False) else None
    if module == "numpy" or module.startswith("numpy."):
        for path in (f"{module[6:]}.{qual}".lstrip("."), getattr(fn, "__name__", "")):
            if _reached(np, path) is fn:
                return f"np.{path}", path
    if _reached(sys.modules.get(module), qual) is fn:
        return f"__import__({module!r}, fromlist=['_']).{qual}", None
    return None, None


def function_ref(fn, user_ops: dict, table: str) -> str:
    """The code naming a graph break's function: by its module path, else (a closure) through
    the module's table of user operators (``table``), where it is added."""
    code = function_code(fn)[0]
    if code is None:
        key = f"host_call_{len(user_ops)}"
        user_ops[key] = fn
        code = f"{table}[{key!r}]"
    return code


def _reached(obj, path: str):
    for part in path.split(".") if path else ():
        obj = getattr(obj, part, None)
    return obj if path else None


def host_call_code(attrs: dict, args: list, fn_code: str, dim, cuda: bool = False) -> str:
    """A graph break as code: the runtime's ``_call`` (``_cuda_call`` on the CUDA target) of
    the function (``fn_code``) on the arguments (the operands' code filled into the
    call's template), checked against the compiled shape and dtype."""
    from ..ops.host_calls import fill
    from ..shapes import unsized

    shape = attr_code(unsized(attrs["out_shape"], attrs["sized"]), dim)
    dtype = attrs["out_dtype"].name
    spec = f"({fn_code}, {attrs['name']!r}, {attrs['item']!r}, {shape}, {dtype!r})"

    def code(v):
        if isinstance(v, _Code):
            return v.text
        if isinstance(v, (list, tuple)):
            inner = ", ".join(code(x) for x in v)
            return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' * (len(v) == 1)})"
        return attr_code(v, dim)

    positional, kw = fill(attrs["template"], [_Code(a) for a in args], attrs["kwargs"])
    items = [code(a) for a in positional] + [f"{k}={code(v)}" for k, v in kw.items()]
    if cuda:
        path = function_code(attrs["fn"])[1]
        return f"_cuda_call(cp, {spec}, {path!r}, {', '.join(items)})"
    return f"_call({spec}, {', '.join(items)})"


class _Code:
    def __init__(self, text):
        self.text = text
