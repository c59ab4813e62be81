"""The CUDA target's host runtime: launch grids, strides, the RawModule cache, buffer reuse,
streams, constants, the attention kernel's launch. Generated modules embed this text below
its docstring; ``_FA`` is cuda_attention.py's namespace."""

import os

import numpy as np

from .numpy_helpers import _call, _checked  # (generated code: one namespace holds both)

# cuda_attention.py's namespace: the one compile_graph_cuda runs the host code in gives it; in
# the vendored runtime (pypto transpile) its names are the module's own
_FA: dict = globals().get("_FA") or globals()


def _grid(n):
    """Blocks of a grid-stride launch over n items (0: nothing to launch)."""
    return 0 if n <= 0 else max(1, min(-(-n // 256), 4096))


def _stride(a, axis):
    return np.int64(a.strides[axis] // a.itemsize)


def _fn(cp, module, name):
    """The kernel ``name`` of the graph's RawModule (compiled at first use, then cached)."""
    if "mod" not in module:
        module["mod"] = cp.RawModule(code=module["source"], options=("--std=c++17",))
    fn = module["fns"].get(name)
    if fn is None:
        fn = module["fns"][name] = module["mod"].get_function(name)
    return fn


def _vectors(n, width, *arrays):
    """Whether a vectorized kernel may run: whole vectors, C-contiguous 16-byte aligned arrays."""
    if n % width:
        return False
    for a in arrays:
        ptr = a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data
        if ptr % 16 or not a.flags.c_contiguous:
            return False
    return True


def _stream(cp, module, i):
    """The graph's i-th stream for kernels of one level (made once, non-blocking)."""
    streams = module.setdefault("streams", [])
    while len(streams) <= i:
        streams.append(cp.cuda.Stream(non_blocking=True))
    return streams[i]


def _const(cp, consts, key):
    value = consts[key]
    if not isinstance(value, np.ndarray):
        return value
    device = consts.get(("device", id(cp), key))  # uploaded once per CuPy module
    if device is None:
        device = consts[("device", id(cp), key)] = cp.asarray(value)
    return device


def _host(cp, x):
    """A device array as NumPy (for user operators and creation ops run on the host)."""
    on_device = hasattr(x, "__cuda_array_interface__") or type(x).__module__.startswith("cupy")
    return cp.asnumpy(x) if on_device else x


def _device(cp, x):
    return cp.asarray(x) if isinstance(x, np.ndarray) else x


def _cuda_attention(cp, q, k, v, scale, mask, scale_op, dtype):
    """softmax(scale(q @ k^T) + mask) @ v, batch axes broadcast and flattened: by library
    products with the row-softmax kernel between them, in steps whose scores stay under
    cuda_attention.SCORES_BUDGET bytes (the default), or, with PYPTO_CUDA_ATTENTION=tiled, by
    the tiled online-softmax kernel, which never stores scores (cuda_attention.py)."""
    fa = _FA  # cuda_attention.py: the kernel source, its name expressions and launch
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    lq, d, lk, dv = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    out_dt = np.dtype(dtype)
    if lk == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    t = np.result_type(q.dtype, k.dtype, v.dtype)
    t = t if t.kind == "f" else np.dtype(np.float64)
    wide = "double" in (_CT[t.name], _CT[out_dt.name]) or (
        mask is not None and np.dtype(mask.dtype).name == "float64"
    )
    acc = np.float64 if wide else np.float32
    b = int(np.prod(batch, dtype=np.int64))

    def flat(x, rows, cols):  # each CuPy call costs host time: only the ones needed
        if x.dtype != t:
            x = x.astype(t)
        if x.shape[:-2] != batch:
            x = cp.broadcast_to(x, (*batch, rows, cols))
        if not x.flags.c_contiguous:
            x = cp.ascontiguousarray(x)
        return x.reshape(b, rows, cols)

    qf, kf, vf = flat(q, lq, d), flat(k, lk, d), flat(v, lk, dv)
    out = cp.empty((*batch, lq, dv), out_dt)
    if mask is not None:
        mask = cp.asarray(mask)
        if mask.dtype.kind not in "f":
            mask = mask.astype(acc)
        if mask.ndim > 2 and any(n != 1 for n in mask.shape[:-2]):
            m = cp.ascontiguousarray(cp.broadcast_to(mask, (*batch, lq, lk))).reshape(b, lq, lk)
            strides = [s // m.itemsize for s in m.strides]
        else:
            m = cp.broadcast_to(mask.reshape(mask.shape[-2:]) if mask.ndim >= 2 else mask, (lq, lk))
            strides = [0] + [s // m.itemsize for s in m.strides]
        mt = _CT[m.dtype.name]
    else:
        m, strides, mt = None, [0, 0, 0], _CT[t.name]
    if b == 0 or lq == 0:
        return out
    op = {None: 0, "multiply": 1, "divide": 2}[scale_op]
    if os.environ.get("PYPTO_CUDA_ATTENTION", "products") != "tiled":
        return _attention_products(cp, qf, kf, vf, m, strides, mt, out, scale, op, acc)
    name = fa["name_expression"](_CT[t.name], mt, _CT[np.dtype(acc).name], _CT[out_dt.name])
    grid, block, smem = fa["launch"](b, lq, lk, d, dv, np.dtype(acc).itemsize)
    if grid[0] == 0:
        return out
    fn = _attention_fn(cp, name)
    i64 = np.int64
    fn(
        grid,
        block,
        (
            qf,
            kf,
            vf,
            m,
            out,
            i64(b),
            i64(lq),
            i64(lk),
            i64(d),
            i64(dv),
            *(i64(s) for s in strides),
            acc(1 if scale is None else scale),
            np.int32(op),
        ),
        shared_mem=smem,
    )
    return out


def _attention_fn(cp, name):
    """The attention module's kernel ``name`` (compiled once per CuPy module and name)."""
    modules = _ATTENTION.setdefault(id(cp), {})
    fn = modules.get(name)
    if fn is None:
        mod = cp.RawModule(code=_FA["SOURCE"], options=("--std=c++17",), name_expressions=(name,))
        fn = modules[name] = mod.get_function(name)
    return fn


def _attention_products(cp, qf, kf, vf, m, strides, mt, out, scale, op, acc):
    """Attention of flattened (b, rows, cols) operands: per step of cuda_attention.score_steps,
    s = q @ k^T (a library product, in the accumulator type), the scale, mask and softmax of
    each row of s in place (ppto_softmax_rows), then out = s @ v."""
    acc = np.dtype(acc)
    b, lq, _ = qf.shape
    lk, dv = kf.shape[1], vf.shape[2]
    qa, ka, va = (x if x.dtype == acc else x.astype(acc) for x in (qf, kf, vf))
    kt = ka.transpose(0, 2, 1)
    o = out.reshape(b, lq, dv)
    fn = _attention_fn(cp, _FA["softmax_rows_name"](mt, _CT[acc.name]))
    i64 = np.int64
    for b0, b1, r0, r1 in _FA["score_steps"](b, lq, lk, acc.itemsize):
        s = cp.matmul(qa[b0:b1, r0:r1], kt[b0:b1])
        n = (b1 - b0) * (r1 - r0)
        fn(
            (min(n, 1 << 20),),
            (_FA["SOFTMAX_THREADS"],),
            (s, m, i64(n), i64(r1 - r0), i64(lk), i64(b0), i64(r0), *(i64(x) for x in strides),
             acc.type(1 if scale is None else scale), np.int32(op)),
        )  # fmt: skip
        if o.dtype == acc:
            cp.matmul(s, va[b0:b1], out=o[b0:b1, r0:r1])
        else:
            o[b0:b1, r0:r1] = cp.matmul(s, va[b0:b1])
    return out


_ATTENTION: dict = {}
_CT = {"float16": "__half", "float32": "float", "float64": "double"}


# CuPy functions that differ from NumPy's of the same name: NumPy's runs (host copies). The
# integer-index forms of these are native ops (ops/gathers.py); what remains as a graph break
# (mode=, non-integer indices) follows NumPy's rules, which CuPy's do not (they wrap indices)
_DIFFERENT = frozenset({"take", "take_along_axis"})


def _cupy_function(cp, path):
    """CuPy's function of the NumPy path ``path`` ("linalg.solve"), or None (none, or one
    that differs: ``_DIFFERENT``)."""
    if path in _DIFFERENT:
        return None
    fn = cp
    for part in (path or "").split(".") if path else ():
        fn = getattr(fn, part, None)
        if fn is None:
            return None
    return None if fn is cp else fn


def _cuda_call(cp, spec, path, *args, **kwargs):
    """A graph break on the CUDA target: CuPy's function of the same name on the device
    arrays, or (CuPy has none) the NumPy call on host copies, its result copied back."""
    same = spec[0] if path == "*" else _cupy_function(cp, path)  # "*": any array type
    if same is not None:
        extra = {"xp": cp} if getattr(same, "array_module", False) else {}
        out = same(*args, **kwargs, **extra)
        return _checked(spec, out, (args, tuple(kwargs.values())), cp)
    host = [_host(cp, a) for a in args]
    kw = {k: _host(cp, v) for k, v in kwargs.items()}
    return _device(cp, _call(spec, *host, **kw))
