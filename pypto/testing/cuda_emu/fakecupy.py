"""A stand-in for the ``cupy`` module that runs the CUDA target's host code on the CPU.

Device arrays are NumPy arrays; ``RawModule`` compiles its source with the emulation harness
(so kernels run as emulated CUDA threads, in the order asked for); every other name the host
code uses (``empty``, ``copyto``, ``matmul``, ``transpose``, ...) is NumPy's, which CuPy mirrors.
``launches`` counts kernel launches and library products, to compare with the Plan's kernels.

    cp = FakeCupy(order="reverse")
    run = compile_graph_cuda(plan, cp)
"""

from __future__ import annotations

import numpy as np

from .loader import EmuModule

_PRODUCTS = ("matmul", "dot")


class DeviceArray(np.ndarray):
    """A NumPy array that PyPTO takes for a GPU array (it has ``__cuda_array_interface__``),
    naming the FakeCupy to run it with. Integer-array indexing behaves as CuPy documents it
    does where it differs from NumPy: an index outside its axis wraps around (NumPy raises
    IndexError), and of an assignment's repeated targets one value lands that NumPy would not
    choose (CuPy leaves it undefined; here the first, where NumPy keeps the last)."""

    _pypto_cupy = None

    def __getitem__(self, key):
        return super().__getitem__(_wrapped(key, self.shape)[0])

    def __setitem__(self, key, value):
        key, arrays = _wrapped(key, self.shape)
        if arrays:
            key, value = _first_wins(self, key, arrays, value)
        super().__setitem__(key, value)

    def __array_finalize__(self, obj):
        # (views and results of a stand-in's arrays are on its device, as CuPy's are)
        self._pypto_cupy = getattr(obj, "_pypto_cupy", None)

    @property
    def __cuda_array_interface__(self):
        return self.__array_interface__


def _wrapped(key, shape):
    """``key`` with its integer index arrays wrapped into their axes (CuPy's rule), and the
    positions of those arrays in it."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(_int_array(i) for i in items):
        return key, ()
    if any(i is None or i is Ellipsis or _bool_array(i) for i in items):
        return key, ()  # (not what the CUDA target's runtime indexes with)
    out = tuple(
        np.mod(np.asarray(i), shape[k]) if _int_array(i) else i for k, i in enumerate(items)
    )
    return out, tuple(k for k, i in enumerate(items) if _int_array(i))


def _int_array(i) -> bool:
    return isinstance(i, (np.ndarray, list)) and np.asarray(i).dtype.kind in "iu"


def _bool_array(i) -> bool:
    return isinstance(i, (np.ndarray, list)) and np.asarray(i).dtype.kind == "b"


def _first_wins(a, key, arrays, value):
    """The assignment ``a[key] = value`` in the reverse order of its targets, so that of
    repeated ones the first lands (consecutive index arrays, other axes whole; else as is)."""
    lo = arrays[0]
    if list(arrays) != list(range(lo, lo + len(arrays))) or any(
        not (isinstance(i, slice) and i == slice(None))
        for k, i in enumerate(key)
        if k not in arrays
    ):
        return key, value
    index = np.broadcast_arrays(*(key[k] for k in arrays))
    flip = (slice(None, None, -1),) * index[0].ndim
    shape = (*a.shape[:lo], *index[0].shape, *a.shape[lo + len(arrays) :])
    v = np.broadcast_to(np.asarray(value), shape)
    reversed_key = (*key[:lo], *(i[flip] for i in index), *key[lo + len(arrays) :])
    return reversed_key, v[(slice(None),) * lo + flip]


class _Event:
    def __init__(self, stream):
        self.stream = stream


class _Stream:
    """A stream: launches inside ``with stream:`` are recorded with its number (the emulator runs
    everything in order, which every stream schedule allows)."""

    def __init__(self, cp, number):
        self.cp, self.number, self.waits = cp, number, []

    def __enter__(self):
        self.cp._streams.append(self)
        return self

    def __exit__(self, *exc):
        self.cp._streams.pop()

    def record(self):
        return _Event(self)

    def wait_event(self, event):
        self.waits.append(event.stream.number)


class _Cuda:
    def __init__(self, cp):
        self.cp = cp
        self.null = _Stream(cp, 0)

    def Stream(self, non_blocking=False):  # CuPy's name
        self.cp.stream_count += 1
        return _Stream(self.cp, self.cp.stream_count)

    def get_current_stream(self):
        return self.cp._streams[-1] if self.cp._streams else self.null


class FakeCupy:
    """The subset of CuPy the generated host code calls, on NumPy and the emulator."""

    ndarray = np.ndarray

    def __init__(self, order: str = "forward", seed: int = 0, isolate: bool = True):
        self.order, self.seed, self.isolate = order, seed, isolate
        self.launches: list[str] = []
        self.streams: list[int] = []  # the stream of each launch (0: the null stream)
        self._streams: list[_Stream] = []
        self.stream_count = 0
        self.cuda = _Cuda(self)

    def __reduce__(self):
        # (a Dask worker's stand-in: one per process and settings; its launches are its own)
        return (shared, (self.order, self.seed, self.isolate))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        fn = getattr(np, name)
        if name in _PRODUCTS:

            def product(*args, **kwargs):
                self.launches.append(name)
                self.streams.append(self.cuda.get_current_stream().number)
                return np.asarray(fn(*args, **kwargs))  # CuPy: a 0-d array, not a scalar

            return product
        return fn

    def take(self, a, indices, axis=None, out=None):
        """CuPy's take: no ``mode``, indices outside the axis wrap around."""
        n = a.size if axis is None else a.shape[axis]
        return np.take(a, np.mod(indices, n), axis=axis, out=out)

    def take_along_axis(self, a, indices, axis):
        """CuPy's: indices outside the axis wrap around."""
        n = a.size if axis is None else a.shape[axis]
        return np.take_along_axis(a, np.mod(indices, n), axis)

    def asnumpy(self, a):
        return np.asarray(a)

    def device(self, a) -> DeviceArray:
        """``a`` as an array PyPTO runs on this stand-in's CUDA target."""
        out = np.array(a).view(DeviceArray)
        out._pypto_cupy = self
        return out

    def RawModule(self, code: str, options=(), name_expressions=()):  # CuPy's name
        return _Module(self, code, options, name_expressions)


_SHARED: dict = {}


def shared(order: str = "forward", seed: int = 0, isolate: bool = True) -> FakeCupy:
    """This process's stand-in with these settings (what a pickled one becomes)."""
    key = (order, seed, isolate)
    if key not in _SHARED:
        _SHARED[key] = FakeCupy(order=order, seed=seed, isolate=isolate)
    return _SHARED[key]


def shared_launches() -> list[str]:
    """The launches of this process's shared stand-ins (a Dask worker's: ``client.run``)."""
    return [name for cp in _SHARED.values() for name in cp.launches]


class _Module:
    def __init__(self, cp: FakeCupy, code, options, name_expressions):
        self.cp = cp
        self.module = EmuModule(
            code=code,
            name_expressions=tuple(name_expressions),
            options=tuple(options),
            order=cp.order,
            seed=cp.seed,
            isolate=cp.isolate,
        )

    def get_function(self, name):
        kernel = self.module.get_function(name)
        cp = self.cp

        def launch(grid, block, args, shared_mem=0):
            cp.launches.append(name)
            cp.streams.append(cp.cuda.get_current_stream().number)
            return kernel(grid, block, args, shared_mem=shared_mem)

        return launch
