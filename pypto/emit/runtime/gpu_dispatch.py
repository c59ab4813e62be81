"""How a transpiled module tells CuPy arrays from NumPy arrays (and finds CuPy, or the
CPU emulator's stand-in, only when such arrays arrive), and dask arrays (``--target dask``: PyPTO's
Dask target runs them). Embedded below its docstring."""


def _gpu_array(x):
    return hasattr(x, "__cuda_array_interface__") and hasattr(x, "dtype")


def _on_gpu(*args):
    return any(_gpu_array(a) for a in args)


def _cupy(*args):
    """CuPy (imported only when GPU arrays arrive), or the CPU emulator's stand-in they name."""
    for a in args:
        if _gpu_array(a) and getattr(a, "_pypto_cupy", None) is not None:
            return a._pypto_cupy
    import cupy

    return cupy


def _on_dask(*args):
    return any(
        type(a).__module__.startswith("dask.") and hasattr(a, "__dask_graph__") for a in args
    )


_DASK_COMPILED = {}


def _dask_call(original, *args, **kwargs):
    """dask arrays: PyPTO's Dask target compiles the original function (pypto is imported
    here, when dask arrays arrive; the cluster's workers need it installed too)."""
    fn = _DASK_COMPILED.get(original)
    if fn is None:
        import pypto

        fn = _DASK_COMPILED[original] = pypto.compile(original)
    return fn(*args, **kwargs)
