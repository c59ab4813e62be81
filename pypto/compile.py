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
from typing import TYPE_CHECKING

import numpy as np

from .bindings import (
    check_dask,
    dtype_of,
    is_dask_array,
    is_device_array,
    refuse_foreign,
    symbolic_shape,
)
from .dtypes import python_scalar_type, weak_dtype
from .errors import BindingError, PyptoError, UnsupportedError, api_boundary
from .registry import REGISTRY
from .types import ArgSpec, TensorType

# The front end (libcst), the passes and the emitters are imported on the first call that needs
# them, not with ``import pypto``: decorating a function stays cheap.
if TYPE_CHECKING:
    from .function import Function


class PyptoFallbackWarning(UserWarning):
    """A function PyPTO could not compile ran as plain Python (``fallback=True``)."""


_FALLBACK = "fallback"


class CompiledFunction:
    def __init__(self, fn, fallback: bool = False, cache: bool = True, chunks=None):
        if not inspect.isfunction(fn):
            raise UnsupportedError(
                f"ppto.compile needs a Python function, not {fn!r}", code="PPT108"
            )
        functools.update_wrapper(self, fn)
        self.__wrapped_function__ = fn  # what the front end inlines when another function calls
        self._fn = fn
        self._fallback = fallback
        self._chunks = chunks  # distribute NumPy arguments as dask arrays (the Dask target)
        self._persist = cache  # the compile cache across processes (pypto/cache.py)
        self._unstored: dict = {}  # id(Function) -> (its cache key, what its trace read)
        self._specs: dict = {}  # per specialization key: each argument's description
        self._signature = inspect.signature(fn)
        params = self._signature.parameters.values()
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        self._positional = tuple(p.name for p in params) if plain else None
        self._source = None
        self._cache: dict = {}
        self._runners: dict = {}
        self._recent: dict = {}  # exact argument kinds and sizes -> (Function, ..., env)
        self.history: list[str] = []  # why each specialization was compiled
        self._described: list[str] = []

    @api_boundary
    def __call__(self, *args, **kwargs):
        arguments = self._bind(args, kwargs)
        if self._chunks is not None:
            return self._distributed(arguments)
        return self._call(arguments, args, kwargs)

    def _distributed(self, arguments: dict):
        """``chunks=``: NumPy arrays in as dask arrays, dask arrays out; the NumPy arguments the
        function writes get their final values (computed here)."""
        import dask.array as da

        fn_ir, _ = self._resolve(arguments)  # (NumPy's aliasing rule, on the NumPy arrays)
        if fn_ir is not _FALLBACK:
            _check_aliasing(fn_ir, arguments)
        lazy = {}
        for name, v in arguments.items():
            if isinstance(v, np.ndarray) and v.ndim:
                chunks = self._chunks
                if isinstance(chunks, int):
                    chunks = (chunks,) + v.shape[1:]
                lazy[name] = da.from_array(v, chunks=chunks)
        before = {name: x.name for name, x in lazy.items()}
        result = self._call({**arguments, **lazy}, None, None)
        for name, final in lazy.items():
            if final.name != before[name]:  # written (its graph replaced)
                np.copyto(arguments[name], final.compute())
        return result

    def _call(self, arguments: dict, args, kwargs):
        fn_ir, env = self._resolve(arguments)
        if fn_ir is _FALLBACK:
            if args is None:  # (distributed arguments)
                return self._fn(**arguments)
            return self._fn(*args, **kwargs)
        _check_aliasing(fn_ir, arguments)
        return self._runner(fn_ir)(arguments, env)

    def _resolve(self, arguments: dict):
        """(the Function IR for these arguments, or _FALLBACK; the size symbols' values)."""
        seen = _call_key(arguments)  # the same kinds of arguments as a recent call: its answer
        found = self._recent.get(seen) if seen is not None else None
        if found is not None:
            fn_ir, env = found
        else:
            specs, env, key = _specialize(arguments)
            # (the cache has NumPy programs)
            other = any(is_device_array(v) or is_dask_array(v) for v in arguments.values())
            fn_ir = self._lookup(key, env, stored=not other)
            if fn_ir is None:
                fn_ir = self._stored(specs, env, key, arguments) or self._compile(specs, env, key)
            if seen is not None:
                if len(self._recent) > 64:
                    self._recent.clear()
                self._recent[seen] = (fn_ir, env)
        return fn_ir, env

    def _runner(self, fn_ir: Function):
        """Runs fn_ir (made once per compiled Function): its generated code, or with
        PYPTO_BACKEND=reference its blocks' Plans kernel by kernel."""
        runner = self._runners.get(id(fn_ir))
        if runner is None:
            if isinstance(fn_ir, _Stored):
                runner = self._runners[id(fn_ir)] = fn_ir.runner(self)
                return runner
            from .backends import run_compiled
            from .passes.pipeline import plan_function

            runner = self._runners[id(fn_ir)] = run_compiled(fn_ir, plan_function(fn_ir), self._fn)
            self._store(fn_ir, runner)
        return runner

    def _cache_key(self, key) -> str | None:
        from . import cache

        if not self._persist or not cache.enabled():
            return None
        return cache.function_key(self._fn, self._fallback, key[1:])  # not REGISTRY.version

    def _stored(self, specs, env, key, arguments):
        """A specialization an earlier process compiled (pypto/cache.py), or None."""
        if any(is_device_array(v) or is_dask_array(v) for v in arguments.values()):
            return None  # the CUDA and Dask targets: compiled here
        ckey = self._cache_key(key)
        if ckey is None:
            return None
        from . import cache

        for entry in cache.load(ckey):
            if all(g.holds(env) for g in entry["guards"]) and cache.reads_hold(
                self._fn, entry["reads"]
            ):
                cache.touch(entry)
                stored = _Stored(entry)
                reason = self._reason(key, env, specs)
                self._cache.setdefault(key, []).append(stored)
                self._note(specs, key, f"{reason}; loaded from the compile cache")
                return stored
        return None

    def _store(self, fn_ir, runner) -> None:
        """Keep a new specialization for later processes (when it can be recognized there)."""
        ckey, record = self._unstored.pop(id(fn_ir), (None, None))
        program = getattr(runner, "program", None)
        if record is None or program is None or ckey is None:
            return
        from . import cache

        cache.store(
            ckey,
            {
                "program": program,
                "guards": tuple(fn_ir.guards),
                "writebacks": tuple((name, None) for name, _ in fn_ir.writebacks),
                "name": fn_ir.name,
                "reads": record,
            },
        )

    def ir(self, *args, **kwargs) -> Function:
        """The Function IR these arguments run (compiled if needed); ``print`` it to read it."""
        arguments = self._bind(args, kwargs)
        specs, env, key = _specialize(arguments)
        fn_ir = self._lookup(key, env, stored=False) or self._compile(specs, env, key)
        if fn_ir is _FALLBACK:
            raise UnsupportedError(f"`{self.__name__}` runs as plain Python (fallback)")
        return fn_ir

    def _diagnosis(self, arguments, error):
        """The Function IR for arguments whose program from the compile cache failed (the
        reference executor says which coded error NumPy's statements raise)."""
        specs, env, key = _specialize(arguments)
        why = (
            f"the program from the compile cache raised {type(error).__name__}: compiled to say why"
        )
        return self._lookup(key, env, stored=False) or self._compile(specs, env, key, why)

    def _bind(self, args, kwargs) -> dict:
        names = self._positional
        if names is not None and not kwargs and len(args) == len(names):
            return dict(zip(names, args))  # (every parameter given by position: no defaults)
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for p in self._signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                from .parse.source import function_source

                raise UnsupportedError(
                    f"`{self.__name__}` takes *args or **kwargs",
                    hint="name the parameters",
                    site=function_source(self._fn).star_site(),
                    code="PPT104",
                )
        return dict(bound.arguments)

    def _lookup(self, key, env, stored: bool = True):
        for fn_ir in self._cache.get(key, ()):
            if not stored and isinstance(fn_ir, _Stored):
                continue
            if fn_ir is _FALLBACK or all(g.holds(env) for g in fn_ir.guards):
                return fn_ir
        return None

    def _compile(self, specs, env, key, reason=None):
        from . import cache
        from .function import verify_function
        from .parse.frontend import trace_function
        from .parse.source import function_source
        from .passes.host import prune_host_outputs
        from .passes.loops import vectorize_loops

        reason = reason or self._reason(key, env, specs)
        reads = cache.Reads(self._fn)
        try:
            # the globals as they are now: what a specialization from the cache checks too
            self._source = function_source(self._fn)
            traced = trace_function(self._source, specs, env, reads)
            fn_ir = verify_function(vectorize_loops(prune_host_outputs(traced)))
            self._unstored[id(fn_ir)] = (self._cache_key(key), reads.record())
        except PyptoError as e:
            if not self._fallback:
                raise
            warnings.warn(
                f"PyPTO cannot compile `{self.__name__}`, running it as plain Python:\n{e}",
                PyptoFallbackWarning,
                stacklevel=_user_level(),
            )
            fn_ir = _FALLBACK
        self._cache.setdefault(key, []).append(fn_ir)
        self._note(specs, key, reason)
        return fn_ir

    def _note(self, specs, key, reason) -> None:
        self.history.append(f"{_describe(specs)}: {reason}")
        self._described.append(_describe(specs))
        self._specs[key] = {name: _describe({name: s}) for name, s in specs.items()}

    def _reason(self, key, env, specs) -> str:
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
        if self._specs:
            return _changed(self._specs, {n: _describe({n: s}) for n, s in specs.items()})
        return "first call"

    def __repr__(self):
        return f"<compiled {self.__name__} ({len(self.history)} specializations)>"


def compile(fn=None, *, fallback: bool = False, cache: bool = True, chunks=None):
    """Compile a NumPy-style function: ``@ppto.compile``, ``@ppto.compile(fallback=True)`` or
    ``ppto.compile(fn)``. Unsupported code raises on the first call, with its location; with
    ``fallback=True`` the original runs instead, with a PyptoFallbackWarning. ``cache``: keep
    what is compiled for later processes, and use what earlier ones kept (pypto/cache.py; also
    off with PYPTO_CACHE=0). ``chunks``: NumPy array arguments are distributed, as dask arrays
    of these chunks (what ``dask.array.from_array`` takes; an int is the block length along
    axis 0, other axes whole), and the results are dask arrays (nothing computed until they
    are); a write into a NumPy argument is computed when the call returns, as NumPy has it."""
    if fn is None:
        return functools.partial(compile, fallback=fallback, cache=cache, chunks=chunks)
    return CompiledFunction(fn, fallback, cache, chunks)


class _Stored:
    """A specialization loaded from the compile cache: its guards, its writes into arguments,
    and its generated program (no Function IR: should the program fail, the function is
    compiled here to say why)."""

    def __init__(self, entry: dict):
        self.entry = entry
        self.guards = entry["guards"]
        self.writebacks = entry["writebacks"]
        self.name = entry["name"]

    def runner(self, compiled: CompiledFunction):
        from . import cache
        from .emit.program import checked, load_program

        host = load_program(self.entry["program"], original=compiled._fn)

        def reference(arguments, error):  # compiled here, to say why
            real = compiled._diagnosis(arguments, error)
            return None if real is _FALLBACK else real

        run = checked(host, reference, lambda: cache.discard(self.entry))
        run.source = host.source
        return run


def _changed(before: dict, now: dict) -> str:
    """Which arguments differ from the closest earlier specialization (as JAX explains a cache
    miss): ``argument 'x' was x: f64[x.0], now x: f32[x.0]``."""
    best = min(before.values(), key=lambda d: sum(d.get(n) != v for n, v in now.items()))
    diff = [n for n, v in now.items() if best.get(n) != v]
    return "new argument types (dtype, rank, size-1 axes or constants): " + "; ".join(
        f"argument {n!r} was {best.get(n, 'absent')}, now {now[n]}" for n in diff
    )


_PLAIN = frozenset({int, float, bool, complex, str, type(None)})
_EXACT = frozenset({int, bool, str, type(None)})  # (values a specialization depends on)


def _call_key(arguments: dict):
    """What a call's specialization depends on, exactly (types, dtypes, shapes, int and constant
    values, and the registry's version); None when some argument is not simple enough."""
    parts = [REGISTRY.version]
    for name, v in arguments.items():
        t = type(v)
        if t is np.ndarray:
            parts.append((name, v.dtype, v.shape))
        elif t in _PLAIN:
            parts.append((name, t, v if t in _EXACT else None))
        elif isinstance(v, np.generic):
            parts.append((name, v.dtype))
        elif is_device_array(v):
            parts.append((name, t, v.dtype, v.shape))
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
    if is_dask_array(value):
        check_dask(name, value)
    if isinstance(value, np.ndarray) or is_device_array(value) or is_dask_array(value):
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
    return ArgSpec("const", value=value), ("const", type(value), _typed(value))


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


def _user_level() -> int:
    """The ``stacklevel`` of a warning issued by the caller of this function that names the
    first frame outside the pypto package (the user's call)."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _check_aliasing(fn_ir: Function, arguments: dict) -> None:
    """Arguments the function writes must not share memory with other array arguments."""
    if not fn_ir.writebacks:
        return
    written = {name for name, _ in fn_ir.writebacks}
    arrays = [(n, v) for n, v in arguments.items() if isinstance(v, np.ndarray)]
    # a dask array is a value: two arguments share it when they are one object (equal data,
    # one name, in two objects: two arrays, as two equal NumPy arrays are)
    lazy = [(n, v) for n, v in arguments.items() if is_dask_array(v)]
    for name in written:
        target = arguments[name]
        for other, value in arrays if isinstance(target, np.ndarray) else lazy:
            if other == name:
                continue
            if isinstance(target, np.ndarray):
                shared = np.may_share_memory(target, value)
            else:
                shared = target is value
            if shared:
                raise UnsupportedError(
                    f"argument {name!r} is written by `{fn_ir.name}` and shares memory with "
                    f"argument {other!r}",
                    hint="pass separate arrays (a copy), or call the function without PyPTO",
                    code="PPT110",
                )


def _typed(value):
    """A constant as a key that tells apart equal values of other types: ``(1,)``, ``(1.0,)``
    and ``(True,)`` are different constants to the compiler (NumPy gives other dtypes)."""
    if isinstance(value, tuple):
        return tuple((type(v), _typed(v)) for v in value)
    return value
