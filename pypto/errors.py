"""One exception family with stable codes (documented in docs/errors.md).

Every error PyPTO raises on purpose is a ``PyptoError``: a code, a message in plain words, an
optional hint, and the user's source site when known, rendered as ``file:line:col``, the line and
a caret. Subclasses also derive from the builtin exception a NumPy user would expect, so
``except ValueError`` keeps working for shape errors.
"""

from __future__ import annotations

import functools
import os
import types

import numpy as np

from .sites import Site, is_internal


class PyptoError(Exception):
    code = "PPT000"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        site: Site | None = None,
        code: str | None = None,
    ):
        Exception.__init__(self, message)  # (not a NumPy base's constructor: AxisError's)
        self.message = message
        self.hint = hint
        self.site = site
        if code is not None:
            self.code = code

    def with_context(self, prefix: str | None = None, site: Site | None = None) -> PyptoError:
        """Add what was being done and where, unless already known. Returns self."""
        if prefix and not self.message.startswith(prefix):
            self.message = f"{prefix}: {self.message}"
        if self.site is None and site is not None:
            self.site = site
        self.args = (self.message,)
        return self

    def __str__(self):
        parts = [f"[{self.code}] {self.message}"]
        if self.site is not None:
            parts.append(self.site.render())
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class ShapeError(PyptoError, ValueError):
    code = "PPT201"


class AxisError(ShapeError, np.exceptions.AxisError):
    """Also NumPy's AxisError (a ValueError and an IndexError)."""

    code = "PPT202"


class IndexingError(PyptoError, IndexError):
    code = "PPT204"


class SliceStepError(IndexingError, ValueError):
    """A slice step of 0: NumPy's ValueError."""


class DTypeError(PyptoError, TypeError):
    code = "PPT301"


class ArgumentError(PyptoError, TypeError):
    code = "PPT206"


class BindingError(PyptoError, TypeError):
    code = "PPT401"


class RegistryError(PyptoError, ValueError):
    code = "PPT501"


class UnsupportedError(PyptoError, NotImplementedError):
    code = "PPT101"


class HostOnly(UnsupportedError):
    """A variant of a native op that PyPTO computes as the original call: raised by an op's
    API before it builds anything, the tracer turns the call into a graph break (in the lazy
    API, where there is none, it is the UnsupportedError it derives from)."""


class TranspileError(PyptoError):
    """``pypto transpile`` cannot do what it is asked (a bad signature, a file that fails)."""

    code = "PPT120"


class ExecutionError(PyptoError, RuntimeError):
    code = "PPT601"


_NUMPY_CLASSES: dict[tuple, type] = {}


def execution_error(cause: BaseException, message: str, base=None, **kwargs) -> PyptoError:
    """A PyptoError (``base``: ExecutionError) that is also an instance of ``cause``'s class
    (OverflowError, ValueError, ZeroDivisionError, NumPy's UFuncTypeError, ...), so that
    ``except OverflowError`` catches what NumPy would have raised. The classes are made once
    per pair and live in this module (so that they pickle)."""
    base = base or ExecutionError
    cls = type(cause)
    if isinstance(cause, PyptoError) or issubclass(base, cls):
        return base(message, **kwargs)
    made = _NUMPY_CLASSES.get((base, cls))
    if made is None:
        name = f"{base.__name__.removesuffix('Error')}{cls.__name__.lstrip('_')}"
        try:
            made = type(name, (base, cls), {"__module__": __name__})
            made("probe")  # a class whose constructor takes other arguments cannot be used
        except TypeError:
            made = base
        else:
            globals().setdefault(name, made)
        _NUMPY_CLASSES[(base, cls)] = made
    return made(message, **kwargs)


def recipe(e: PyptoError) -> tuple:
    """What makes ``e`` again, in this process or another (``remake``): its class may be one
    ``execution_error`` made, which another process makes when it needs it."""
    for (base, cls), made in _NUMPY_CLASSES.items():
        if type(e) is made and made is not base:
            return (base, cls, e.message, e.hint, e.site, e.code)
    return (type(e), None, e.message, e.hint, e.site, e.code)


def remake(made: tuple) -> PyptoError:
    base, cls, message, hint, site, code = made
    if cls is None:
        return base(message, hint=hint, site=site, code=code)
    return execution_error(cls.__new__(cls), message, base=base, hint=hint, site=site, code=code)


class InternalError(PyptoError, AssertionError):
    """A broken invariant inside PyPTO (a bug): verify() failures and rule/NumPy mismatches."""

    code = "PPT901"


def user_traceback(tb):
    """The traceback without PyPTO's own frames (all of them with PYPTO_TRACEBACK=full)."""
    if os.environ.get("PYPTO_TRACEBACK") == "full":
        return tb
    kept = []
    while tb is not None:
        if not is_internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def api_boundary(fn):
    """Public entry points raise PyptoErrors with the user's frames only, not the compiler's."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except PyptoError as e:
            e.__traceback__ = user_traceback(e.__traceback__)
            raise  # a bare raise adds no frame of this wrapper

    return wrapper
