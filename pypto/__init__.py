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
from .ops.grids import mgrid, ogrid
from .registry import REGISTRY
from .tracer import run
from .verify import verify

__version__ = "0.1.0"


def cache_clear() -> int:
    """Empty the compile cache (``$PYPTO_CACHE_DIR``, or the user cache directory); the number
    of entries removed. ``PYPTO_CACHE=0`` turns the cache off (pypto/cache.py)."""
    from .cache import cache_clear as clear

    return clear()


newaxis = None


@api_boundary
def trace(outputs, **bindings) -> Graph:
    """The verified graph a chain runs as, for these bindings (``print`` it to read it)."""
    from .tracer import compile_chain

    roots = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return compile_chain([t._node for t in roots], bindings)[0]


# `import pypto` leaves the compiler (the front end with libcst, the passes, the emitters) to the
# first compile, run or explain. Its submodules read as attributes (``pypto.passes.pipeline``)
# load it then, all of it, as `import pypto` did before; ``cache`` (the compile cache, which a
# cached call reads without the compiler) loads alone.
_LAZY_SUBMODULES = ("backends", "cache", "emit", "executor", "function", "parse", "passes")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        compiler = ("backends", "parse.frontend", "passes.host", "passes.pipeline")
        for module in ("cache",) if name == "cache" else compiler:
            importlib.import_module(f"{__name__}.{module}")
        return globals()[name]
    op = REGISTRY.lookup(name)
    if op is None:
        raise AttributeError(f"module 'pypto' has no attribute {name!r}")
    return op.api


def __dir__():
    names = set(globals()) - {"_LAZY_SUBMODULES"}
    return sorted(names | set(_LAZY_SUBMODULES) | set(REGISTRY.names()))


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
    "cache_clear",
    "compile",
    "explain",
    "mgrid",
    "newaxis",
    "ogrid",
    "register_operator",
    "run",
    "tensor",
    "trace",
    "unregister_operator",
    "verify",
]
