"""The NumPy target's runtime: the helpers generated NumPy code calls (the block pool and
its scratch, BLAS threading, buffer reuse, constants, the attention loop). Generated modules
embed this text below its docstring (emit/runtime/__init__.py); it is also an importable,
linted and tested module."""

import base64
import contextvars
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

_POOL = []


_CPUS = max(1, os.cpu_count() or 1)


def _chunks(part, n, block, work=0, blas=False):
    """part(s, e) over 0..n in blocks; with more than one block, the pool's threads take blocks
    in turn from a shared counter (NumPy releases the GIL), so a kernel costs one task per
    thread, not one per block. A kernel touching more than 4 MiB is split into at least one
    block per core. ``blas``: the blocks call BLAS, which then runs on one thread in each
    worker (OpenBLAS's per-thread setting); where that cannot be set, one block after another
    on this thread, leaving BLAS its own threads."""
    if work > 1 << 22 and n > 1:
        block = min(block, -(-n // _CPUS))
    if n <= block:
        part(0, n)
        return
    setter = _blas_threads() if blas else None
    if _CPUS == 1 or (blas and setter is None):
        for s in range(0, n, block):
            part(s, min(s + block, n))
        return
    count = -(-n // block)
    workers = min(_CPUS, count)
    # each worker sweeps its own contiguous share of the blocks (two threads writing the same
    # fresh pages fault on them in turn: measured 1.5x slower), then takes blocks from the end
    # of the largest share left (a core busy elsewhere must not leave its share undone)
    shares = [[w * count // workers, (w + 1) * count // workers] for w in range(workers)]
    lock = threading.Lock()

    def take(w):
        with lock:
            share = shares[w]
            if share[0] < share[1]:
                share[0] += 1
                return share[0] - 1
            share = max(shares, key=lambda r: r[1] - r[0])
            if share[0] < share[1]:
                share[1] -= 1
                return share[1]
            return None

    def worker(w):
        before = setter(1) if setter is not None else None
        try:
            i = take(w)
            while i is not None:
                part(i * block, min(i * block + block, n))
                i = take(w)
        finally:
            if setter is not None:
                setter(before)

    if not _POOL:
        _POOL.append(ThreadPoolExecutor(_CPUS))
    # each worker runs in a copy of the caller's context: np.errstate applies in the workers
    # (the calling thread only waits: as a worker itself it measured slower)
    futures = [_POOL[0].submit(contextvars.copy_context().run, worker, w) for w in range(workers)]
    for f in futures:
        f.result()


def _openblas():
    """The OpenBLAS libraries NumPy has loaded (found in /proc/self/maps, as threadpoolctl
    finds them), as ctypes libraries; none on another BLAS or another system."""
    try:
        import ctypes

        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
        return [ctypes.CDLL(path) for path in paths]
    except (OSError, ImportError):
        return []


_BLAS = []


def _blas_threads():
    """OpenBLAS's ``openblas_set_num_threads_local``, or None."""
    if not _BLAS:
        import ctypes

        found = None
        for lib in _openblas():
            found = getattr(lib, "openblas_set_num_threads_local", None)
            if found is not None:
                found.restype = ctypes.c_int
                found.argtypes = [ctypes.c_int]
                break
        _BLAS.append(found)
    return _BLAS[0]


_GEMM = []


def _gemm_acc(a, b, c):
    """c += a @ b for float32/float64 matrices: BLAS ``gemm`` with beta = 1 (OpenBLAS's CBLAS,
    found as _blas_threads finds it), so the sum costs no pass of its own and no temporary;
    where that is not possible, NumPy's product and an add."""
    if not _GEMM:
        _GEMM.append(_cblas())
    gemm = _GEMM[0].get(c.dtype.name) if _GEMM[0] else None
    ta, tb = _trans(a), _trans(b)
    ok = gemm is not None and c.flags.c_contiguous and a.dtype == b.dtype == c.dtype
    ok = ok and ta is not None and tb is not None and c.ndim == a.ndim == b.ndim == 2
    ok = ok and c.size and a.shape[1] and not np.may_share_memory(c, a)
    ok = ok and not np.may_share_memory(c, b)
    if not ok:
        c += np.matmul(a, b)
        return
    (m, k), n = a.shape, b.shape[1]
    fn, int_t = gemm
    fn(101, ta[0], tb[0], int_t(m), int_t(n), int_t(k), 1.0, a.ctypes.data, int_t(ta[1]),
       b.ctypes.data, int_t(tb[1]), 1.0, c.ctypes.data, int_t(n))  # fmt: skip


def _trans(x):
    """(CBLAS transpose flag, leading dimension) of a row- or column-major matrix, else None."""
    if x.ndim != 2:
        return None
    item = x.itemsize
    if x.strides[1] == item and x.strides[0] >= max(1, x.shape[1]) * item:
        return 111, x.strides[0] // item  # row-major: no transpose
    if x.strides[0] == item and x.strides[1] >= max(1, x.shape[0]) * item:
        return 112, x.strides[1] // item  # a transposed row-major matrix
    return None


def _cblas():
    """{"float32": (sgemm, int type), "float64": (dgemm, int type)} of the CBLAS in the OpenBLAS
    NumPy loaded, or None. Only ILP64 names, whose integer width their suffix tells (a plain
    cblas_sgemm may take 32- or 64-bit integers)."""
    import ctypes

    for lib in _openblas():
        for prefix in ("scipy_cblas_", "cblas_"):
            found = {}
            for letter, name, real in (("s", "float32", ctypes.c_float),
                                       ("d", "float64", ctypes.c_double)):  # fmt: skip
                fn = getattr(lib, f"{prefix}{letter}gemm64_", None)
                if fn is None:
                    break
                i64, ptr = ctypes.c_int64, ctypes.c_void_p
                fn.restype = None
                fn.argtypes = [ctypes.c_int] * 3 + [i64] * 3 + [real, ptr, i64, ptr, i64, real,
                                                                  ptr, i64]  # fmt: skip
                found[name] = (fn, i64)
            if len(found) == 2:
                return found
    return None


class _Lease:
    """Pool memory lent to the arrays of one buffer: they name this as their base (NumPy does
    not look past it), so it lives while any of them does; then its memory returns to the
    pool (_release)."""

    __slots__ = ("__array_interface__", "__weakref__")

    def __init__(self, raw):
        self.__array_interface__ = {
            "data": (raw.ctypes.data, False),
            "shape": (raw.size,),
            "typestr": "|u1",
            "version": 3,
        }


_FREE = {}  # bytes -> memory no array uses, kept for the next buffer of that size
# PYPTO_ORIGINAL=never: always the generated program (tests); else the original function runs
# where it costs less (passes/cost.py)
_ORIGINAL = [os.environ.get("PYPTO_ORIGINAL", "cheaper") != "never"]
_HELD = [0, int(os.environ.get("PYPTO_POOL_BYTES", str(1 << 30)))]  # bytes kept, the most kept
_FREE_LOCK = threading.Lock()


def _out(shape, dtype):
    """A new buffer (a kernel's output): buffers of 1 MiB or more come from memory that
    earlier results no longer use, so a function called again and again (its old results
    dropped) writes into memory already mapped instead of faulting in fresh pages."""
    count = 1
    for d in shape:
        count *= d
    nbytes = count * np.dtype(dtype).itemsize
    if nbytes < 1 << 20 or _HELD[1] <= 0:
        return np.empty(shape, dtype)
    with _FREE_LOCK:
        free = _FREE.get(nbytes)
        raw = free.pop() if free else None
        if raw is not None:
            _HELD[0] -= nbytes
    if raw is None:
        raw = np.empty(nbytes, np.uint8)
    lease = _Lease(raw)
    weakref.finalize(lease, _release, raw).atexit = False
    return np.asarray(lease).view(dtype).reshape(shape)


def _release(raw):
    with _FREE_LOCK:
        if _HELD[0] + raw.size <= _HELD[1]:
            _FREE.setdefault(raw.size, []).append(raw)
            _HELD[0] += raw.size


_LOCAL = threading.local()


def _take():
    """This thread's scratch buffers, for one block (a block that calls generated code again
    meanwhile, through a user operator, gets buffers of its own)."""
    bufs = getattr(_LOCAL, "bufs", None)
    _LOCAL.bufs = None
    return bufs if bufs is not None else {}


def _give(bufs):
    _LOCAL.bufs = bufs


def _tmp(bufs, slot, shape, dtype, like=None):
    """An array of ``shape`` in scratch slot ``slot`` (grown when too small); with ``like``, in
    the order of its axes in memory (as NumPy lays out a ufunc's new result). ``bufs`` maps a
    slot to its memory and (slot, shape, dtype, like's strides) to the view made for them
    before: blocks of one size get theirs back with one lookup."""
    key = (slot, shape, dtype, None if like is None else like.strides)
    view = bufs.get(key)
    return view if view is not None else _tmp_new(bufs, key, slot, shape, dtype, like)


def _tmp_new(bufs, key, slot, shape, dtype, like):
    count = 1
    for d in shape:
        count *= d
    nbytes = count * np.dtype(dtype).itemsize
    buf = bufs.get(slot)
    if buf is None or buf.size < nbytes:
        for k in [k for k in bufs if type(k) is tuple and k[0] == slot]:
            del bufs[k]  # views of the memory given up
        buf = bufs[slot] = np.empty(nbytes, np.uint8)
    if len(bufs) > 512:  # many sizes seen: keep the memory, forget the views
        for k in [k for k in bufs if type(k) is tuple]:
            del bufs[k]
    flat = buf[:nbytes].view(dtype)
    strides = [abs(s) for s in like.strides] if like is not None else ()
    if len(shape) < 2 or len(strides) != len(shape) or strides == sorted(strides, reverse=True):
        view = flat.reshape(shape)
    else:
        order = sorted(range(len(shape)), key=lambda a: -strides[a])
        view = flat.reshape([shape[a] for a in order]).transpose(np.argsort(order))
    bufs[key] = view
    return view


def _reuse(array, dtype, shape):
    """A buffer of ``shape`` (C order) in the memory of a dead one (of any order of axes; a
    NumPy array, or a CuPy array of the CUDA target, whose reshape copies where it must)."""
    if not array.flags.c_contiguous:  # laid out in another order: its axes in memory order
        array = array.transpose(sorted(range(array.ndim), key=lambda a: -abs(array.strides[a])))
        if not array.flags.c_contiguous and isinstance(array, np.ndarray):
            return np.empty(shape, dtype)
    raw = array.reshape(-1).view(np.uint8)
    count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    return raw[:count].view(dtype).reshape(shape)


def _cat(parts, axis, dtype=None):
    """np.concatenate, except that a block inside one piece is that piece (no copy; with
    ``dtype``, the concatenation's when pieces differ, converted as np.concatenate does)."""
    full = [p for p in parts if p.shape[axis]]
    if len(full) != 1:
        return np.concatenate(parts, axis=axis)
    return full[0] if dtype is None else np.asarray(full[0]).astype(dtype, copy=False)


def _py(x):
    return x.item() if hasattr(x, "item") else x


def _fresh_out(ufunc, *args, out=None):
    """``ufunc(*args, out=out)``, except that a strided ``out`` is written from a new result:
    NumPy 2.4's SIMD loops of np.negative and np.isfinite write wrong values into a strided
    out= on AVX512 CPUs (found by the fuzzer with NumPy 2.4.6)."""
    if out is None or out.flags.c_contiguous or out.flags.f_contiguous:
        return ufunc(*args, out=out)
    np.copyto(out, ufunc(*args))
    return out


def _array(data, dtype, shape):
    """A constant array, written into the source as base64 of its bytes (little-endian)."""
    raw = np.frombuffer(base64.b64decode(data), np.dtype(dtype).newbyteorder("<"))
    return raw.astype(dtype).reshape(shape)


def _astype(x, dtype):
    if isinstance(x, (np.ndarray, np.generic)):
        return x.astype(dtype)
    return np.asarray(x).astype(dtype)[()]


def _slc(start, stop, step):
    return slice(start, stop if stop >= 0 else None, step)


def _attention(q, k, v, scale, mask, scale_op, out, rows=256):
    """softmax(scale(q @ k^T) + mask) @ v over blocks of query rows: the score matrix of one
    block at a time (in cache), never the whole."""
    lq = q.shape[-2]
    batch = out.shape[:-2]
    if k.shape[-2] == 0:  # as NumPy: the maximum of an empty row of scores
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    kt = np.swapaxes(k, -1, -2)

    def part(index, s, e):
        def pick(a, keep):
            lead = len(a.shape) - keep
            return (
                a[
                    tuple(
                        0 if a.shape[i] == 1 else index[len(batch) - lead + i] for i in range(lead)
                    )
                ]
                if lead > 0
                else a
            )

        sc = np.matmul(pick(q, 2)[s:e], pick(kt, 2))
        if scale_op is not None:  # the scores scaled, in NumPy's order (same rounding)
            op = np.multiply if scale_op == "multiply" else np.divide
            sc = op(sc, scale, out=sc) if np.result_type(sc, scale) == sc.dtype else op(sc, scale)
        if mask is not None:
            m = pick(mask, min(mask.ndim, 2))
            m = m[s:e] if m.ndim == 2 and m.shape[0] != 1 else m
            sc = np.add(sc, m, out=sc) if np.result_type(sc, m) == sc.dtype else sc + m
        if sc.dtype.kind in "fc":  # in place
            np.subtract(sc, np.max(sc, axis=-1, keepdims=True), out=sc)
            np.exp(sc, out=sc)
            np.divide(sc, np.sum(sc, axis=-1, keepdims=True), out=sc)
        else:  # integer scores: exp makes floats, as in NumPy
            sc = np.exp(sc - np.max(sc, axis=-1, keepdims=True))
            sc = sc / np.sum(sc, axis=-1, keepdims=True)
        target, vb = out[index][s:e], pick(v, 2)
        if np.result_type(sc, vb) == target.dtype:
            np.matmul(sc, vb, out=target)
        else:
            target[...] = np.matmul(sc, vb)

    # query blocks in parallel, each product on one BLAS thread (as one block after another
    # with BLAS's own threads, the softmax between the products ran on one core: 1.5x slower)
    tasks = [(i, s) for i in np.ndindex(*batch) for s in range(0, lq, rows)]

    def run(a, b):
        for i, s in tasks[a:b]:
            part(i, s, min(s + rows, lq))

    _chunks(run, len(tasks), 1, blas=True)
    return out


def _readonly(v):
    if isinstance(v, np.ndarray):
        v = v.view()
        v.flags.writeable = False
    elif isinstance(v, (list, tuple)):
        return type(v)(_readonly(x) for x in v)
    return v


def _arrays_in(v):
    if isinstance(v, np.ndarray):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _arrays_in(x)


def _checked(spec, out, args, xp=np):
    """A graph break's result: item ``item`` of a tuple, as an array of its own memory, with
    the dtype and shape PyPTO compiled the code after it for."""
    _, name, item, shape, dtype = spec
    if item is not None:
        out = out[item]
    result = xp.asarray(out)
    if (
        result.dtype != np.dtype(dtype)
        or any(  # (None: a size the values decide)
            d is not None and d != e for d, e in zip(shape, result.shape)
        )
        or result.ndim != len(shape)
    ):
        raise ValueError(
            f"`{name}` returned {result.dtype}{list(result.shape)} here; PyPTO compiled the "
            f"code after it for {dtype}{list(shape)} (a result whose size or dtype depends on "
            "the values cannot be compiled)"
        )
    if any(xp.may_share_memory(result, a) for a in _arrays_in(args)):
        result = result.copy()  # a view of an argument: the code after it may write in place
    return result


def _gather(x, axis, *index, xp=np):
    """``x[:, ..., i0, i1, ...]``: index arrays (or integers) on the axes from ``axis`` on, as
    NumPy's advanced indexing reads them (any array type: CuPy's on the device, ``xp``)."""
    if xp is not np:
        _in_bounds(x, axis, index)
    return x[(slice(None),) * axis + index]


def _scatter(x, value, axis, *index, xp=np):
    """A copy of ``x`` with ``x[:, ..., i0, i1, ...] = value`` (NumPy's ``__setitem__``: the
    value broadcast and cast, the last of repeated indices wins; any array type: CuPy's on
    the device, ``xp``)."""
    out = x.copy()
    key = (slice(None),) * axis + index
    if xp is not np:
        _in_bounds(x, axis, index)
        key, value = _last_wins(xp, out, axis, index, value)
    out[key] = value
    return out


def _in_bounds(x, axis, index):
    """NumPy's IndexError where an index array steps outside its axis. NumPy checks its own
    arrays; CuPy wraps such indices around instead (its documented difference), so device
    arrays are checked here."""
    for k, i in enumerate(index):
        if getattr(i, "dtype", None) is not None and i.dtype.kind in "iu":
            _take_bounds(i, x.shape[axis + k], axis + k)
        # (a boolean mask: its size is checked where the program is compiled)


def _take_bounds(index, n, axis):
    """NumPy's IndexError (its message) where ``index`` holds a value outside an axis of size
    ``n``: before a kernel that gathers and writes (NumPy raises before writing anything), and
    on the device (CuPy wraps such indices around). One read of a flag; any array type."""
    if getattr(index, "dtype", None) == np.uint64:  # (NumPy reads them as intp: 2**64 - 1 is -1)
        index = index.astype(np.int64)
    bad = (index < -n) | (index >= n)
    if bool(bad.any()):
        first = int(index.ravel()[int(bad.ravel().argmax())])
        raise IndexError(f"index {first} is out of bounds for axis {axis} with size {n}")


def _last_wins(xp, out, axis, index, value):
    """``out[:, ..., *index] = value`` as an index whose targets are distinct, and the value
    for it: where an index repeats a target, the last one in NumPy's order (C order of the
    indices' broadcast shape) keeps it. CuPy leaves which value lands undefined; sorting the
    distinct keys ``target * count + order`` decides it without depending on thread timing."""
    arrays = xp.broadcast_arrays(*(xp.asarray(i) for i in index))
    shape = arrays[0].shape
    count = int(np.prod(shape, dtype=np.int64))
    sizes = out.shape[axis : axis + len(index)]
    target = xp.zeros(count, dtype=np.int64)
    for i, n in zip(arrays, sizes):
        target = target * n + (i.ravel().astype(np.int64) % n)  # (in bounds: checked)
    key = xp.sort(target * count + xp.arange(count, dtype=np.int64))
    keep = xp.ones(count, dtype=bool)
    keep[:-1] = key[1:] // count != key[:-1] // count  # the last of each target's run
    chosen = key[keep] % count
    region = (*out.shape[:axis], *shape, *out.shape[axis + len(index) :])
    v = xp.broadcast_to(xp.asarray(value), region).reshape(
        (*out.shape[:axis], count, *out.shape[axis + len(index) :])
    )
    picked = v[(slice(None),) * axis + (chosen,)]
    return (slice(None),) * axis + tuple(i.ravel()[chosen] for i in arrays), picked


def _ufunc_at(x, value, axis, *index, ufunc):
    """A copy of ``x`` with ``np.<ufunc>.at(x, index, value)`` applied (repeated indices
    accumulate)."""
    out = x.copy()
    getattr(np, ufunc).at(out, (slice(None),) * axis + index, value)
    return out


def _run_time_slice(axis, start, stop, step):
    bounds = (None if b is None else int(b) for b in (start, stop))  # (0-d arrays: integers)
    return (slice(None),) * axis + (slice(*bounds, step),)


def _slice_read(x, axis, start, stop, step):
    """``x[:, ..., start:stop:step]`` with bounds known only at run time (a copy: NumPy's
    view is re-read after every write into ``x``, parse/index_arrays.py)."""
    return x[_run_time_slice(axis, start, stop, step)]


def _slice_write(x, value, axis, start, stop, step):
    """A copy of ``x`` with ``x[:, ..., start:stop:step] = value``."""
    out = x.copy()
    out[_run_time_slice(axis, start, stop, step)] = value
    return out


for _f in (_gather, _scatter, _slice_read, _slice_write):
    _f.any_array = True  # (the CUDA target calls them on the device arrays)
for _f in (_gather, _scatter):
    _f.array_module = True  # (... passing CuPy as ``xp``)
for _f in (_scatter, _ufunc_at, _slice_write):
    _f.copies = True  # (the cost model counts the copy: passes/cost.py)
del _f


def _call(spec, *args, **kwargs):
    """A graph break (ops/host_calls.py): ``spec[0]`` called as the source calls it, on
    read-only views of its array arguments (spec: fn, name as written, tuple item, shape,
    dtype)."""
    out = spec[0](*_readonly(args), **_readonly(kwargs))
    return _checked(spec, out, (args, tuple(kwargs.values())))
