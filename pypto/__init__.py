"""PyPTO: NumPy-style Python compiled into fused, parallel kernels.

    import pypto as ppto
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(ppto.reduce_sum(x, axis=1))[:, None] * ppto.exp(ppto.transpose(y, (1, 0)))
    result = chain.run(x=data_x, y=data_y)

Every op of the registry is available as ``ppto.<name>`` (and by its aliases, such as
``reduce_sum`` for ``sum``); user operators appear there once registered.
"""

from . import ops  # noqa: F401  (importing it registers the built-in ops)
from .api import Tensor, tensor
from .compile import CompiledFunction, PyptoFallbackWarning, compile
from .errors import (
    ArgumentError,
    BindingError,
    DTypeError,
    ExecutionError,
    IndexingError,
    InternalError,
    PyptoError,
    RegistryError,
    ShapeError,
    UnsupportedError,
    api_boundary,
)
from .explain import explain
from .ir import Graph
from .ops.custom import register_operator, unregister_operator
from .registry import REGISTRY
from .tracer import run
from .verify import verify

__version__ = "0.1.0"

newaxis = None


@api_boundary
def trace(outputs, **bindings) -> Graph:
    """The verified graph a chain runs as, for these bindings (``print`` it to read it)."""
    from .tracer import compile_chain

    roots = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return compile_chain([t._node for t in roots], bindings)[0]


def __getattr__(name: str):
    op = REGISTRY.lookup(name)
    if op is None:
        raise AttributeError(f"module 'pypto' has no attribute {name!r}")
    return op.api


def __dir__():
    return sorted(set(globals()) | set(REGISTRY.names()))


__all__ = [
    "REGISTRY",
    "ArgumentError",
    "BindingError",
    "CompiledFunction",
    "DTypeError",
    "ExecutionError",
    "Graph",
    "IndexingError",
    "InternalError",
    "PyptoError",
    "PyptoFallbackWarning",
    "RegistryError",
    "ShapeError",
    "Tensor",
    "UnsupportedError",
    "__version__",
    "compile",
    "explain",
    "newaxis",
    "register_operator",
    "run",
    "tensor",
    "trace",
    "unregister_operator",
    "verify",
]
