"""``@ppto.compile``: NumPy-style functions compiled from their source, cached per specialization.

On each call the arguments are described abstractly: arrays by dtype, rank and which sizes are
1 (other sizes become symbols ``x.0``, ``x.1``); Python ints by nothing (they are symbols too:
``range(n)``, ``A[:n]``); Python floats as weak scalars, NumPy scalars as strong ones; bools,
strings, None and other constants by value. A compiled Function is reused for a later call with
the same description when its guards hold for the new sizes; otherwise the function is traced
again, and ``history`` says why. The Function IR runs on the reference executor (NumPy); the
emitters replace that later. Argument arrays the function writes into are written in place,
so callers see exactly NumPy's effects.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from .backends import run_compiled
from .bindings import dtype_of, is_device_array, refuse_foreign, symbolic_shape
from .dtypes import python_scalar_type, weak_dtype
from .errors import BindingError, PyptoError, UnsupportedError, api_boundary
from .function import Function, guards_hold, verify_function
from .parse.frontend import ArgSpec, trace_function
from .parse.source import function_source
from .passes.host import prune_host_outputs
from .passes.pipeline import plan_function
from .types import TensorType


class PyptoFallbackWarning(UserWarning):
    """A function PyPTO could not compile ran as plain Python (``fallback=True``)."""


_FALLBACK = "fallback"


class CompiledFunction:
    def __init__(self, fn, fallback: bool = False):
        if not inspect.isfunction(fn):
            raise UnsupportedError(
                f"ppto.compile needs a Python function, not {fn!r}", code="PPT108"
            )
        functools.update_wrapper(self, fn)
        self.__wrapped_function__ = fn  # what the front end inlines when another function calls
        self._fn = fn
        self._fallback = fallback
        self._signature = inspect.signature(fn)
        self._source = None
        self._cache: dict = {}
        self._runners: dict = {}
        self._recent: dict = {}  # exact argument kinds and sizes -> (Function, ..., env)
        self.history: list[str] = []  # why each specialization was compiled
        self._described: list[str] = []

    @api_boundary
    def __call__(self, *args, **kwargs):
        arguments = self._bind(args, kwargs)
        seen = _call_key(arguments)  # the same kinds of arguments as a recent call: its answer
        found = self._recent.get(seen) if seen is not None else None
        if found is not None:
            fn_ir, env = found
        else:
            specs, env, key = _specialize(arguments)
            fn_ir = self._lookup(key, env)
            if fn_ir is None:
                fn_ir = self._compile(specs, env, key)
            if seen is not None:
                if len(self._recent) > 64:
                    self._recent.clear()
                self._recent[seen] = (fn_ir, env)
        if fn_ir is _FALLBACK:
            return self._fn(*args, **kwargs)
        _check_aliasing(fn_ir, arguments)
        return self._runner(fn_ir)(arguments, env)

    def _runner(self, fn_ir: Function):
        """Runs fn_ir (made once per compiled Function): its generated code, or with
        PYPTO_BACKEND=reference its blocks' Plans kernel by kernel."""
        runner = self._runners.get(id(fn_ir))
        if runner is None:
            runner = self._runners[id(fn_ir)] = run_compiled(fn_ir, plan_function(fn_ir))
        return runner

    def ir(self, *args, **kwargs) -> Function:
        """The Function IR these arguments run (compiled if needed); ``print`` it to read it."""
        arguments = self._bind(args, kwargs)
        specs, env, key = _specialize(arguments)
        fn_ir = self._lookup(key, env) or self._compile(specs, env, key)
        if fn_ir is _FALLBACK:
            raise UnsupportedError(f"`{self.__name__}` runs as plain Python (fallback)")
        return fn_ir

    def _bind(self, args, kwargs) -> dict:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for p in self._signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise UnsupportedError(
                    f"`{self.__name__}` takes *args or **kwargs",
                    hint="name the parameters",
                    site=function_source(self._fn).star_site(),
                    code="PPT104",
                )
        return dict(bound.arguments)

    def _lookup(self, key, env):
        for fn_ir in self._cache.get(key, ()):
            if fn_ir is _FALLBACK or guards_hold(fn_ir, env):
                return fn_ir
        return None

    def _compile(self, specs, env, key):
        reason = self._reason(key, env)
        try:
            if self._source is None:
                self._source = function_source(self._fn)
            fn_ir = verify_function(prune_host_outputs(trace_function(self._source, specs, env)))
        except PyptoError as e:
            if not self._fallback:
                raise
            warnings.warn(
                f"PyPTO cannot compile `{self.__name__}`, running it as plain Python:\n{e}",
                PyptoFallbackWarning,
                stacklevel=4,
            )
            fn_ir = _FALLBACK
        self._cache.setdefault(key, []).append(fn_ir)
        self.history.append(f"{_describe(specs)}: {reason}")
        self._described.append(_describe(specs))
        return fn_ir

    def _reason(self, key, env) -> str:
        if key in self._cache:
            failed = [
                g
                for f in self._cache[key]
                if f is not _FALLBACK
                for g in f.guards
                if not g.holds(env)
            ]
            return "sizes break the guards of the earlier compilation" + (
                f" ({failed[0]})" if failed else ""
            )
        if self._cache:
            before = "; ".join(f"({d})" for d in self._described)
            return f"new argument types (dtype, rank, size-1 axes or constants); before: {before}"
        return "first call"

    def __repr__(self):
        return f"<compiled {self.__name__} ({len(self.history)} specializations)>"


def compile(fn=None, *, fallback: bool = False):
    """Compile a NumPy-style function: ``@ppto.compile``, ``@ppto.compile(fallback=True)`` or
    ``ppto.compile(fn)``. Unsupported code raises on the first call, with its location; with
    ``fallback=True`` the original runs instead, with a PyptoFallbackWarning."""
    if fn is None:
        return functools.partial(compile, fallback=fallback)
    return CompiledFunction(fn, fallback)


def _call_key(arguments: dict):
    """What a call's specialization depends on, exactly (types, dtypes, shapes, int and constant
    values, and the registry's version); None when some argument is not simple enough."""
    from .registry import REGISTRY

    parts = [REGISTRY.version]
    for name, v in arguments.items():
        t = type(v)
        if t is np.ndarray:
            parts.append((name, v.dtype, v.shape))
        elif is_device_array(v):
            parts.append((name, t, v.dtype, v.shape))
        elif t in (int, float, bool, complex, str, type(None)):
            parts.append((name, t, v if t in (int, bool, str, type(None)) else None))
        elif isinstance(v, np.generic):
            parts.append((name, v.dtype))
        else:
            return None
    return tuple(parts)


def _specialize(arguments: dict):
    """(specs, size-symbol values, cache key) for bound arguments."""
    specs, env, key = {}, {}, []
    for name, value in arguments.items():
        spec, part = _describe_arg(name, value, env)
        specs[name] = spec
        key.append((name, *part))
    from .registry import REGISTRY

    return specs, env, (REGISTRY.version, *key)


def _describe_arg(name, value, env):
    refuse_foreign(name, value, "argument")
    if isinstance(value, np.ndarray) or is_device_array(value):
        dtype = dtype_of(name, value.dtype, "argument")
        ones = tuple(s == 1 for s in value.shape)
        dims = symbolic_shape(name, value.shape, env)
        return ArgSpec("array", TensorType(dtype, dims)), ("array", dtype.str, ones)
    pytype = python_scalar_type(value)
    if pytype is int:
        env[name] = value
        return ArgSpec("int"), ("int",)
    if pytype in (float, complex):
        return ArgSpec("scalar", TensorType(weak_dtype(pytype), (), weak=True)), ("weak", pytype)
    if isinstance(value, np.generic):
        dtype = dtype_of(name, value.dtype, "argument")
        return ArgSpec("scalar", TensorType(dtype, ())), ("scalar", dtype.str)
    if isinstance(value, (list, set, dict)):
        raise BindingError(
            f"argument {name!r} is a {type(value).__name__}",
            hint="pass a NumPy array (or a tuple of constants)",
            code="PPT406",
        )
    try:
        hash(value)
    except TypeError:
        raise BindingError(
            f"argument {name!r} ({type(value).__name__}) is not supported", code="PPT406"
        ) from None
    return ArgSpec("const", value=value), ("const", type(value), value)


def _describe(specs) -> str:
    parts = []
    for name, s in specs.items():
        if s.kind == "const":
            parts.append(f"{name}={s.value!r}")
        elif s.kind == "int":
            parts.append(f"{name}: int")
        else:
            parts.append(f"{name}: {s.type}")
    return ", ".join(parts)


def _check_aliasing(fn_ir: Function, arguments: dict) -> None:
    """Arguments the function writes must not share memory with other array arguments."""
    written = {name for name, _ in fn_ir.writebacks}
    arrays = [(n, v) for n, v in arguments.items() if isinstance(v, np.ndarray)]
    for name in written:
        for other, value in arrays:
            if other != name and np.may_share_memory(arguments[name], value):
                raise UnsupportedError(
                    f"argument {name!r} is written by `{fn_ir.name}` and shares memory with "
                    f"argument {other!r}",
                    hint="pass separate arrays (a copy), or call the function without PyPTO",
                    code="PPT110",
                )
