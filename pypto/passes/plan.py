"""The Plan: what every emitter consumes (ARCHITECTURE.md, "The Plan").

A ``GraphPlan`` is one op graph (a block of a function, or a lazy chain) cut into kernels:

* ``Kernel``: a fused group. ``kind`` is one of KERNEL_KINDS; ``domain`` its iteration space
  (symbolic); ``body`` a closed, verified ``Graph`` over its ``inputs`` (values read from memory:
  graph inputs, constants, outputs of earlier kernels) whose outputs are the kernel's
  ``outputs``. Reorder equations inside the body are the *index maps* through which the body
  reads its inputs and its own values: they never copy. ``reduced`` names the reduced axes of
  ``domain`` (row-wise and reduction kernels), ``scan_axis`` the scanned axis. ``late_inputs``
  are inputs only the epilogue reads (a contraction may start before they exist). ``stores``
  says, for an output made by a slice assignment, which base value it starts from and whether it
  is written in place.
* ``Chunking``: the axis of ``domain`` a kernel may be split along, the block size (a symbolic
  expression, evaluated when sizes are known), the halo each input needs along that axis.
* ``Buffer``: a materialized intermediate: its bytes, the kernels that first write and last read
  it, and the buffer whose memory it reuses.
* ``levels``: lists of kernel indices that may run at the same time.
* ``decisions``: every fusion decision, with its rule and reason, for ``explain``.

Bytes are symbolic (``Dim`` expressions) and are evaluated with ``evaluate(bytes, env)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Var
from ..symbolic import Dim

KERNEL_KINDS = (
    "elementwise",  # maps (stencils included) over one domain
    "reduction",  # prologue maps, reductions over the same axes, maps at the reduced shape
    "rowwise",  # reductions whose results are used again at full shape (softmax, layer norm)
    "scan",  # a scan with its map prologue and epilogue
    "contraction",  # a matrix product with its elementwise epilogue
    "attention",  # product, scale, mask, softmax, product: the score matrix is never stored
    "custom",  # an opaque user operator
    "copy",  # a reorder whose result must be materialized (an output, or a reshape copy)
)


@dataclass(frozen=True)
class Chunking:
    axis: int  # axis of the kernel's domain
    block: Dim  # elements of that axis per chunk (at run time: max(1, ...))
    extent: Dim  # the axis' size
    halo: tuple[tuple[str, int, int], ...] = ()  # (input name, before, after) along the axis
    budget: int = 0  # the cache budget in bytes the block size was chosen for
    reason: str = ""
    work: Dim = 0  # bytes the kernel touches in all: large kernels use every core
    # id(value) -> (the value's axis the chunk axis is, the offsets a block reads it at), or
    # None where it does not vary along the chunk axis (passes/chunk.py ``follow``)
    follows: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class StoreOut:
    """A kernel output made by ``base[index] = value``: the kernel writes ``index`` only."""

    out: Var
    base: Var
    index: tuple
    inplace: bool  # the output shares the base's buffer (the base is dead afterwards)


@dataclass(eq=False)
class Kernel:
    name: str
    kind: str
    domain: tuple
    body: Graph
    reduced: tuple[int, ...] = ()
    scan_axis: int | None = None
    late_inputs: tuple[Var, ...] = ()
    stores: tuple[StoreOut, ...] = ()
    accumulate: Var | None = None  # the addend the product is accumulated into (memory.py)
    chunking: Chunking | None = None
    bytes_read: Dim = 0
    bytes_written: Dim = 0
    unfused_bytes: Dim = 0  # what running the same ops one NumPy call at a time moves
    reasons: list[str] = field(default_factory=list)
    hazards: dict = field(default_factory=dict)  # id(store output) -> why not in place
    level: int = 0

    @property
    def inputs(self) -> tuple[Var, ...]:
        return self.body.inputs

    @property
    def outputs(self) -> tuple[Var, ...]:
        return self.body.outputs

    @property
    def ops(self) -> list[str]:
        """The computing ops inside (reorders are index maps, listed apart)."""
        from ..registry import REGISTRY

        return [e.op for e in self.body.eqns if REGISTRY[e.op].kind != "reorder" or e.op == "store"]

    @property
    def index_maps(self) -> list[str]:
        from ..registry import REGISTRY

        return [
            e.op for e in self.body.eqns if REGISTRY[e.op].kind == "reorder" and e.op != "store"
        ]


@dataclass(eq=False)
class Buffer:
    name: str
    value: Var
    nbytes: Dim
    first: int  # index of the kernel that writes it
    last: int  # index of the last kernel that reads it (== first if none)
    reuses: str | None = None  # the buffer whose memory it takes over
    donor: Var | None = None  # an input array written in place (a slice assignment into it)
    role: str = "temp"  # "temp" (freed after its last reader) or "output" (returned)


@dataclass(frozen=True)
class Decision:
    rule: str  # which fusion rule decided
    fused: bool
    producer: str  # what was (or was not) pulled into the kernel
    kernel: str
    reason: str

    def __str__(self):
        verdict = "fused" if self.fused else "kept apart"
        return f"{self.producer} -> {self.kernel}: {verdict} [{self.rule}] {self.reason}"


@dataclass(eq=False)
class GraphPlan:
    graph: Graph  # the simplified graph the kernels were cut from
    source: Graph  # the graph before simplification
    kernels: list[Kernel]
    levels: list[list[int]] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    memory: dict = field(default_factory=dict)  # buffer name -> the memory it lives in
    in_use: list = field(default_factory=list)  # bytes of memory in use at each level
    facts: tuple = ()  # size facts that hold where the graph runs (it was planned with them)
    donated: frozenset = frozenset()  # ids of inputs whose arrays may be written in place
    layouts: dict = field(default_factory=dict)  # id(value) -> its axes in memory, not C order
    names: dict = field(default_factory=dict)  # id(value) -> its printed name
    same: object = None  # (shape, shape) -> known equal, by the graph's facts
    notes: list[str] = field(default_factory=list)  # what the plan passes did
    simplified: list[str] = field(default_factory=list)  # what simplification did
    passes: list[str] = field(default_factory=list)  # the pipeline that made it

    @property
    def outputs(self):
        return self.graph.outputs

    def buffer_of(self, value: Var) -> Buffer | None:
        return next((b for b in self.buffers if b.value is value), None)
