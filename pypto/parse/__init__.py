"""The libcst front end: a NumPy-style Python function becomes a Function IR.

``source.py`` finds and parses the source; ``frontend.py`` (the tracer) interprets the function
body on traced values, with ``expressions.py``, ``calls.py`` and ``statements.py`` for the
construct families and ``values.py`` for what names hold. CST nodes never leave this package.
"""

from .frontend import ArgSpec, trace_function
from .source import FunctionSource, function_source

__all__ = ["ArgSpec", "FunctionSource", "function_source", "trace_function"]
