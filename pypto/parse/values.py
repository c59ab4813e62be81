"""What a Python name can hold while a function is traced.

* plain Python values: numbers, strings, None, tuples, dtypes, modules, NumPy functions, and
  symbolic sizes (``Expr``: shapes, integer parameters, loop variables);
* a ``Ref``: a tensor bound to one or more names. Aliases (``b = a``) share the Ref, so a write
  through one name (``b[0] = 1``) is seen through the other, as in NumPy. The Ref's value lives
  in the current block (a traced tensor) or in a host variable between blocks;
* a ``ViewRef``: a name bound to a view of a Ref (``row = A[i]``): read, it is recomputed from
  the Ref's current value (so it sees later writes into A); written, the write goes into A.

Expressions evaluate to plain values, traced tensors, or a ``View``: a tensor together with the
Ref it is a view of and the view ops from that Ref (empty for a plain name).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..api import Tensor


class Ref:
    __slots__ = ("dirty", "hint", "host", "param", "value", "version")

    def __init__(
        self, value: Tensor | None = None, host=None, hint: str = "t", param: str | None = None
    ):
        self.value = value  # traced tensor (valid while its block is current)
        self.host = host  # HostVar holding the value between blocks
        self.version = 0  # bumped on every write: views compare it
        self.dirty = value is not None  # the value is newer than the host variable
        self.hint = hint  # for host variable names
        self.param = param  # argument name, for argument arrays

    def state(self):
        return (self.value, self.host, self.version, self.dirty)

    def restore(self, state) -> None:
        self.value, self.host, self.version, self.dirty = state


@dataclass(eq=False)
class ViewOp:
    """One view step from a base value: ``op(base, *args, **kwargs)`` via the op's API."""

    op: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    method: bool = False  # replayed as the Tensor method ``op`` rather than the registry op
    at: int = 0  # where the base goes among the arguments (np.einsum("ij->ji", x): 1)


@dataclass(eq=False)
class ViewRef:
    base: Ref
    ops: tuple  # of ViewOp
    version: int = -1  # base.version when ``cached`` was computed
    cached: Tensor | None = None
    made: int = 0  # base.version when the view was made


@dataclass(eq=False)
class View:
    tensor: Tensor
    base: Ref
    ops: tuple = ()


@dataclass(eq=False)
class SymCond:
    """A comparison of sizes that only the run can decide (it involves a loop variable):
    an ``if`` on it is a run-time branch that knows the comparison as a fact."""

    guard: object  # shapes.Guard: ``expr rel 0``


@dataclass(eq=False)
class Undefined:
    """A name that exists but cannot be used here, and why."""

    why: str


@dataclass(eq=False)
class BoundMethod:
    obj: object  # View or Tensor
    name: str
