"""A corpus of NumPy-style scientific functions written the way their well-known originals are
(NPBench / PolyBench kernels, weather stencils, finance, ML layers, signal and image processing,
statistics, small physics), used by tests/test_transpile_coverage.py to check that what
``@ppto.compile`` handles also transpiles and runs its compiled program.

Each module has a ``CALLS`` list of ``(function, make_args)``; ``make_args(dtype, rng)`` returns
the positional arguments of a real call (float32 or float64 data, modest random sizes). The
modules import only NumPy and the standard library: the generated modules must run without
PyPTO. ``MODULES`` names them, in the order the test runs them.
"""

MODULES = ["weather", "finance", "ml", "linalg_kernels", "images", "signals", "stats", "physics"]
