"""How a result differs from NumPy's (no PyPTO here: generated modules are checked with it in
interpreters where pypto cannot be imported)."""

import numpy as np


def kind(value) -> str:
    if isinstance(value, np.ndarray):
        return "ndarray"
    return "NumPy scalar" if isinstance(value, np.generic) else type(value).__name__


def differences(got, want, rtol: float, what: str) -> list[str]:
    """How ``got`` differs from NumPy's ``want``: its kind (tuple, array, NumPy scalar, Python
    type), dtype, shape, values (floats within ``rtol``, or ``rtol`` times the largest element,
    NaN equal to NaN; others exactly);
    empty when it does not."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return [f"{what}: a {kind(got)} where NumPy gives a {len(want)}-tuple"]
        pairs = enumerate(zip(got, want))
        return [m for i, (g, w) in pairs for m in differences(g, w, rtol, f"{what}[{i}]")]
    if kind(got) != kind(want):
        return [f"{what}: a {kind(got)} where NumPy gives a {kind(want)}"]
    if want is None:
        return []
    g, w = np.asarray(got), np.asarray(want)
    if (g.dtype, g.shape) != (w.dtype, w.shape):
        return [f"{what}: {g.dtype}{g.shape} where NumPy gives {w.dtype}{w.shape}"]
    if w.dtype.kind not in "fc":
        return [] if np.array_equal(g, w) else [f"{what}: values differ"]
    # sums in another order (a reduction, a loop turned into a matrix product) differ by a few
    # ulps of the array's largest element: an element left small by cancellation may then
    # differ relatively more than rtol, but not absolutely
    finite = np.abs(w[np.isfinite(w)])
    atol = rtol * float(finite.max()) if finite.size else 0.0
    try:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        return [f"{what}: {str(e).strip()}"]
    return []
