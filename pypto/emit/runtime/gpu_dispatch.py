"""How a transpiled module tells CuPy arrays from NumPy arrays (and finds CuPy, or the
CPU emulator's stand-in, only when such arrays arrive). Embedded below its docstring."""


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
