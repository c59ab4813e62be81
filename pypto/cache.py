"""The persistent compile cache: a specialization compiled in one process runs in the next.

``@ppto.compile`` stores each specialization it compiles (the generated host program with its
blocks, what it raises, its guards) in one file; a later process with the same function finds it
and runs it without the front end, the passes or the emitters (nor their imports: libcst).

An entry's key is the SHA-256 of what the program depends on: PyPTO's version and a digest of
its code, NumPy's and Python's versions, the planner's settings, the function (module, name,
file, source text, default arguments), the options, and the argument kinds (dtype, rank, size-1
axes, constants; sizes are symbols, checked by the guards). What the trace looked up is recorded
with a fingerprint of its value: names in the function's scope and in the scopes of the functions
it inlined, attributes of modules and classes (``config.K``, ``Cfg.scale``); a module counts by
its file's contents, a function by its source and defaults, an array by its bytes, a number or
string by value. An entry whose lookups find other values now is not used; a function looking
up other objects (or calling user operators) is not stored. Globals are read when a
specialization is compiled or loaded (as before: a specialization in use does not see later
changes).

Where: ``$PYPTO_CACHE_DIR``, else the platform's user cache directory (``$XDG_CACHE_HOME/pypto``
or ``~/.cache/pypto``; ``~/Library/Caches/pypto``; ``%LOCALAPPDATA%\\pypto\\Cache``). Files are
written to a temporary name and renamed (atomic: processes may share the directory); a file
that does not read back as an entry of this PyPTO version (corrupt, foreign, older) is ignored
and replaced; the directory is kept under ``$PYPTO_CACHE_MAX_BYTES`` (256 MiB) by removing the
entries used least recently (checked when a process first stores, then every 64 stores).
``PYPTO_CACHE=0`` turns the cache off; ``ppto.cache_clear()`` empties it. Entries are pickles:
the directory must be the user's own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import os
import pickle
import secrets
import sys
import types
from pathlib import Path

import numpy as np

MAGIC = b"PYPTO-COMPILE-CACHE 1\n"
SUFFIX = ".pypto-cache"
MISSING = ("missing",)


def enabled() -> bool:
    return os.environ.get("PYPTO_CACHE", "1") != "0" and os.environ.get(
        "PYPTO_BACKEND", "numpy"
    ) in ("", "numpy")


def directory() -> Path:
    found = os.environ.get("PYPTO_CACHE_DIR")
    if found:
        return Path(found)
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home())) / "pypto" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "pypto"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pypto"


def cache_clear() -> int:
    """Remove every entry of the compile cache (its directory: ``$PYPTO_CACHE_DIR`` or the
    user cache directory); the number removed."""
    removed = 0
    for path in _entries(directory()):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


# -- keys and fingerprints ----------------------------------------------------------------------
def function_key(fn, fallback: bool, kinds) -> str | None:
    """The key of a function's specialization for these argument kinds (``kinds``: the
    compiler's description, without the registry's in-process version); None when some
    constant argument cannot be told apart by value across processes."""
    from .registry import REGISTRY

    if not _plain(kinds):
        return None
    user = sorted(n for n in REGISTRY.names() if REGISTRY[n].kind == "custom")
    parts = (
        _version(),
        _settings(),
        fingerprint(fn),
        fallback,
        tuple(user),
        repr(kinds),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]


def graph_key(graph) -> str | None:
    """The key of a lazy chain's graph (``chain.run``): its inputs, equations (ops, attributes,
    operands), constants, outputs and guards, and the versions; None for a graph that calls
    user operators or holds what cannot be told apart across processes."""
    from .ir import Var
    from .registry import REGISTRY

    ids: dict[int, int] = {}

    def atom(a):
        if isinstance(a, Var):
            return ("v", ids.setdefault(id(a), len(ids)), str(a.type), a.name)
        return ("lit", repr(a.value), str(a.type))

    parts = [_version(), _settings(), tuple(atom(v) for v in graph.inputs)]
    for v, array in graph.consts:
        fp = fingerprint(array)
        if fp is None:
            return None
        parts.append((atom(v), fp))
    for e in graph.eqns:
        if REGISTRY[e.op].kind == "custom" or not _plain(tuple(v for _, v in e.attrs)):
            return None
        parts.append((e.op, repr(e.attrs), tuple(atom(a) for a in e.inputs), atom(e.out)))
    parts.append(tuple(atom(a) for a in graph.outputs))
    parts.append(tuple(str(g) for g in graph.guards))
    return "g" + hashlib.sha256(repr(parts).encode()).hexdigest()[:39]


def fingerprint(value):
    """What identifies a value a trace read, across processes; None when nothing does."""
    value = getattr(value, "__wrapped_function__", value)
    if value is MISSING:
        return MISSING
    if isinstance(value, types.ModuleType):
        if value.__name__ in ("numpy", "math", "cmath") or not getattr(value, "__file__", None):
            return ("module", value.__name__)
        try:
            return ("module", value.__name__, _digest(Path(value.__file__).read_bytes()))
        except OSError:
            return None
    if isinstance(value, types.FunctionType):
        try:
            text = inspect.getsource(value)
        except (OSError, TypeError):
            return None
        code = value.__code__
        defaults = tuple(fingerprint(d) for d in value.__defaults__ or ())
        defaults += tuple((k, fingerprint(d)) for k, d in (value.__kwdefaults__ or {}).items())
        if any(d is None or d[-1] is None for d in defaults):
            return None  # a default argument nothing identifies
        return ("function", value.__module__, value.__qualname__, code.co_filename,
                code.co_firstlineno, _digest(text.encode()), defaults)  # fmt: skip
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return None
        data = np.ascontiguousarray(value).tobytes()
        return ("array", value.dtype.str, value.shape, _digest(data))
    if isinstance(value, np.generic):
        return ("numpy", value.dtype.str, repr(value.item()))
    if isinstance(value, np.ufunc):
        return ("numpy", value.__name__)
    if isinstance(value, type):  # np.float32, or a class whose attributes are read (recorded)
        return ("class", value.__module__, value.__qualname__)
    if _plain(value):
        return ("value", repr(value))
    if callable(value) and getattr(value, "__module__", "").split(".")[0] in ("numpy", "math"):
        return ("numpy", value.__module__, getattr(value, "__qualname__", repr(value)))
    return None


def _plain(value) -> bool:
    """A value its repr names in any process: numbers, strings, dtypes, Python's types, sizes,
    NumPy scalars and ufuncs, slices, and tuples, lists and dataclasses of these (not classes,
    whose attributes change, nor arrays, whose repr leaves elements out)."""
    from .symbolic import Expr

    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, slice):
        return _plain((value.start, value.stop, value.step))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, type):
        return value.__module__ == "builtins"
    return (
        type(value) in (bool, int, float, complex, str, bytes, type(None))
        or isinstance(value, (np.dtype, Expr, np.generic, np.ufunc))
        or value is Ellipsis
    )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


class Reads:
    """What a trace looked up: names in the scopes of the functions it compiled (the first is
    the compiled function; others are inlined callees) and attributes of modules and classes
    (``np.pi``, ``config.K``, ``Cfg.scale``), each owner reached by an earlier read."""

    def __init__(self, fn):
        self.owners = [fn]  # functions whose scope, modules and classes whose attributes
        self.via: list[int | None] = [None]  # the read each owner's object came from
        self.reads: list[tuple] = []  # (owner index, name, value)

    def read(self, owner, name: str, value) -> None:
        owner = getattr(owner, "__wrapped_function__", owner)
        at = next((i for i, o in enumerate(self.owners) if o is owner), None)
        if at is None:
            found = [
                i
                for i, (_, _, v) in enumerate(self.reads)
                if getattr(v, "__wrapped_function__", v) is owner
            ]
            at = len(self.owners)
            self.owners.append(owner)
            self.via.append(found[0] if found else -1)
        self.reads.append((at, name, value))

    def record(self):
        """(owners' provenance, (owner, name, fingerprint) per read), or None when some read
        cannot be recognized in another process."""
        if -1 in self.via:
            return None
        kept: dict = {}  # (owner, name) -> its index among the reads recorded
        at, out = [], []  # at[i]: the recorded index of read i
        for owner, name, value in self.reads:
            if (owner, name) not in kept:
                fp = fingerprint(value)
                if fp is None:
                    return None
                kept[(owner, name)] = len(out)
                out.append((owner, name, fp))
            at.append(kept[(owner, name)])
        via = tuple(None if v is None else at[v] for v in self.via)
        return via, tuple(out)


def _lookup(owner, name: str):
    """What ``name`` is now where the trace looked it up: a function's scope (its closure,
    then its globals), or a module's or class's attribute."""
    if isinstance(owner, types.FunctionType):
        if owner.__closure__:
            for var, cell in zip(owner.__code__.co_freevars, owner.__closure__):
                if var == name:
                    with contextlib.suppress(ValueError):
                        return cell.cell_contents
        return owner.__globals__.get(name, MISSING)
    return getattr(owner, name, MISSING)


def reads_hold(fn, record) -> bool:
    """Whether every recorded read still finds a value of the same fingerprint."""
    via, reads = record
    owners: list = [fn] + [None] * (len(via) - 1)
    values = {}
    try:
        for owner, name, fp in reads:
            if owners[owner] is None:  # reached through an earlier read
                value = values[reads[via[owner]][:2]]
                owners[owner] = getattr(value, "__wrapped_function__", value)
            if (owner, name) not in values:
                values[(owner, name)] = _lookup(owners[owner], name)
            if fingerprint(values[(owner, name)]) != fp:
                return False
    except Exception:  # a value that cannot be looked at: not the same
        return False
    return True


# -- entries --------------------------------------------------------------------------------------
def store(key: str, entry: dict) -> None:
    """Write one specialization (atomically; errors are ignored: the cache is an optimization)."""
    root = directory()
    try:
        data = MAGIC + _version().encode() + b"\n" + pickle.dumps(entry, protocol=4)
    except Exception:  # something in it does not pickle: not kept
        return
    name = f"{key}-{_digest(data)[:12]}{SUFFIX}"
    shard = root / key[:2]  # directories of a few entries each: lookups list one of them
    with contextlib.suppress(OSError):
        shard.mkdir(parents=True, exist_ok=True)
        path = shard / name
        if path.exists():
            return
        tmp = shard / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        _STORED[0] += 1
        if _STORED[0] % 64 == 1:  # the size is checked on the first store, then every 64th
            _prune(root, int(os.environ.get("PYPTO_CACHE_MAX_BYTES", str(256 << 20))))


_STORED = [0]


def load(key: str) -> list[dict]:
    """The entries stored under ``key``; unreadable ones are removed."""
    found = []
    try:
        paths = sorted((directory() / key[:2]).glob(f"{key}-*{SUFFIX}"))
    except OSError:
        return []
    for path in paths:
        try:
            data = path.read_bytes()
            head, version, body = data.split(b"\n", 2)
            if head + b"\n" != MAGIC or version.decode() != _version():
                raise ValueError("a foreign entry")
            entry = pickle.loads(body)
            if not isinstance(entry, dict) or "program" not in entry:
                raise ValueError("not an entry")
        except FileNotFoundError:  # removed by another process meanwhile
            continue
        except Exception:  # corrupt, foreign or of another version: replaced by a new one
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        entry["path"] = path
        found.append(entry)
    return found


def discard(entry: dict) -> None:
    """Remove an entry (its program failed where a fresh compilation is to say why)."""
    with contextlib.suppress(OSError):
        entry["path"].unlink()


def touch(entry: dict) -> None:
    """Mark an entry used (the pruning removes the least recently used first)."""
    with contextlib.suppress(OSError):
        os.utime(entry["path"])


def _settings() -> tuple:
    """The environment settings the generated code depends on (the planner's block budget)."""
    return (os.environ.get("PYPTO_CHUNK_BUDGET", ""),)


@functools.cache
def _version() -> str:
    """PyPTO's version and a digest of its code (a change to the compiler or the runtime makes
    other programs, whatever the version says), NumPy's and Python's."""
    from . import __version__

    root = Path(__file__).resolve().parent
    code = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        code.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return (
        f"pypto {__version__} {code.hexdigest()[:16]} numpy {np.__version__} "
        f"python {sys.version.split()[0]}"
    )


def _entries(root: Path) -> list[Path]:
    try:
        return list(root.glob(f"*/*{SUFFIX}"))
    except OSError:
        return []


def _prune(root: Path, budget: int) -> None:
    sized = []
    for path in _entries(root):
        with contextlib.suppress(OSError):
            st = path.stat()
            sized.append((st.st_mtime, st.st_size, path))
    total = sum(s for _, s, _ in sized)
    for _, size, path in sorted(sized):
        if total <= budget:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size
