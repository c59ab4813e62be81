"""Functions for tests/parse/test_supported_python.py that need a module of their own: NumPy
imported as plain ``numpy`` and names imported ``from numpy``, and module constants read
through those names (ppto.compile resolves names through the function's module globals)."""

import math

import numpy
from numpy import exp, newaxis, sqrt

LIMIT = 0.75
POWERS = (1, 2, 3)


def numpy_unaliased(x):
    """NumPy imported as ``numpy``."""
    y = numpy.exp(-x) * numpy.sum(x, axis=-1, keepdims=True)
    return numpy.maximum(y, LIMIT), numpy.float32(2.5) * x, numpy.pi


def names_from_numpy(x):
    """Functions and constants imported ``from numpy``."""
    col = x[..., newaxis]
    return exp(col) / sqrt(x.size), exp(-x) ** POWERS[2], math.sqrt(POWERS[1])
