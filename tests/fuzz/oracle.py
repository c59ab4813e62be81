"""The differential oracle of the fuzzer: run a generated program with NumPy and with PyPTO,
compare, and shrink what fails.

`check(program, path)` runs the original function with NumPy on fresh inputs and the compiled
one on other fresh inputs, on one of three paths:

- ``numpy``: ``ppto.compile(f)`` called with NumPy arrays (the NumPy target);
- ``lazy``: ``f`` called with ``ppto.tensor`` objects (NumPy functions on them build a chain),
  then ``.run(...)`` (``ppto.run`` for a tuple); only for pure programs;
- ``cuda``: ``ppto.compile(f)`` called with the CPU emulator's GPU arrays (tests/cuda_emu's
  ``make_cupy``; every emitted module is also compiled by NVRTC where that is available).

It compares the result structure (tuple or not), each result's exact Python type (a 0-d array
stands for a NumPy scalar on the CUDA target, as CuPy returns), dtype, shape and values (floats
within rtol 1e-4 / atol 1e-5 x scale when float32 is anywhere in the program, else rtol 1e-9 /
atol 1e-12 x scale; integers and bools exactly; NaN where NumPy has NaN) and every argument after
the call. If NumPy raises, PyPTO must raise an instance of the same class, or refuse the
program; a `UnsupportedError` with a PPT1xx code is a refusal (counted apart, never a pass) and
any other error a crash. The compiled
function runs twice on equal inputs and must give bit-identical results (on the CUDA target the
second run has other thread orders).

`shrink(program, path, verdict)` removes statements, replaces subexpressions by one of their
operands or a leaf, drops tuple elements and keyword arguments, shrinks the input shapes and
values, while the program keeps failing the same way (same path, category and exception types).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import itertools
import linecache
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import pypto as ppto
from pypto.api import Tensor
from pypto.errors import PyptoError, UnsupportedError
from pypto.tracer import placeholders

_CUDA_TESTS = Path(__file__).resolve().parent.parent / "cuda_emu"
if str(_CUDA_TESTS) not in sys.path:
    sys.path.insert(0, str(_CUDA_TESTS))

from cupy_backend import ON_DEVICE, make_cupy, to_host  # noqa: E402

from .generator import Input, Program  # noqa: E402

PATHS = ("numpy", "lazy", "cuda", "dask", "dask-cuda")
_ids = itertools.count()
_nvrtc_done: set[str] = set()
CUDA_LAUNCHES = [0]  # kernels launched on the CUDA target in this process (proof that it ran)


@contextmanager
def quiet():
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def load(source: str):
    """The function ``f`` of ``source``, defined in a module PyPTO can read the source of."""
    name = f"<pypto-fuzz-{next(_ids)}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    ns: dict = {"__name__": "pypto_fuzz"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of shrinking candidates
        code = compile(source, name, "exec")
    exec(code, ns)
    return ns["f"]


def forget(fn) -> None:
    linecache.cache.pop(fn.__code__.co_filename, None)


@dataclass
class Outcome:
    value: object = None
    args: list | None = None
    exc: BaseException | None = None
    tb: str = ""


@dataclass
class Verdict:
    path: str
    status: str  # "ok", "refusal", "failure"
    category: str = ""  # wrong value / wrong type / wrong dtype / wrong shape / arg-write
    # mismatch / exception class / crash / nondeterminism
    detail: str = ""
    key: tuple = ()  # what "fails the same way" means when shrinking
    seconds: float = 0.0

    def __str__(self):
        return f"[{self.path}] {self.category or self.status}: {self.detail}"


def _call(fn, args) -> Outcome:
    try:
        with quiet():
            value = fn(*args)
    except Exception as e:
        return Outcome(None, args, e, traceback.format_exc(limit=-3))
    return Outcome(value, args)


# -- the paths ------------------------------------------------------------------------------------
def run_numpy(program: Program, fn) -> Outcome:
    return _call(fn, program.arguments())


def run_compiled(program: Program, fn, second=False) -> Outcome:
    compiled = ppto.compile(fn)
    out = _call(compiled, program.arguments())
    if second:
        return out, _call(compiled, program.arguments())
    return out


def _host(x):
    x = to_host(x)
    if isinstance(x, tuple):
        return tuple(_host(v) for v in x)
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray:
        return x.view(np.ndarray)
    return x


def _cupy(seed: int):
    cp = make_cupy(order="random", seed=seed)
    if not ON_DEVICE:
        from pypto.testing import nvrtc

        if nvrtc.available() is None:
            raw = cp.RawModule

            def checked(code, options=(), name_expressions=()):
                digest = hashlib.sha256(code.encode()).hexdigest()
                if digest not in _nvrtc_done:
                    nvrtc.compile_cuda(code)
                    _nvrtc_done.add(digest)
                return raw(code, options=options, name_expressions=name_expressions)

            cp.RawModule = checked
    return cp


def run_cuda(program: Program, fn, seed: int) -> Outcome:
    compiled = ppto.compile(fn)
    cp = _cupy(seed)
    args = [cp.device(a) if isinstance(a, np.ndarray) else a for a in program.arguments()]
    out = _call(compiled, args)
    CUDA_LAUNCHES[0] += len(getattr(cp, "launches", ()))
    out.value = _host(out.value)
    out.args = [_host(a) for a in out.args]
    return out


def run_dask(program: Program, fn, seed: int, gpu: bool = False) -> Outcome:
    """``ppto.compile(f)`` on dask arrays (random chunks along each axis; ``gpu``: CuPy
    chunks, the emulator's device arrays), computed with the synchronous scheduler; the
    arguments computed after the call (what was written into them)."""
    import dask
    import dask.array as da

    rng = np.random.default_rng(seed)
    cp = _cupy(seed) if gpu else None

    def lazy(a):
        if not isinstance(a, np.ndarray) or a.ndim == 0:
            return a
        chunks = tuple(max(1, int(rng.integers(1, d + 1))) if d else 1 for d in a.shape)
        return da.from_array(a if cp is None else cp.device(a), chunks=chunks)

    compiled = ppto.compile(fn)
    args = [lazy(a) for a in program.arguments()]

    def call(*a):
        value = compiled(*a)
        with dask.config.set(scheduler="sync"):
            return dask.compute(value)[0]

    out = _call(call, args)
    with dask.config.set(scheduler="sync"):
        out.args = [a.compute() if isinstance(a, da.Array) else a for a in out.args]
    if cp is not None:
        CUDA_LAUNCHES[0] += len(getattr(cp, "launches", ()))
        out.value = _host(out.value)
        out.args = [_host(a) for a in out.args]
    return out


def run_lazy(program: Program, fn) -> Outcome:
    data = program.arguments()
    names = [i.name for i in program.inputs]
    tensors = [ppto.tensor(n) if isinstance(v, np.ndarray) else v for n, v in zip(names, data)]
    bindings = {n: v for n, v in zip(names, data) if isinstance(v, np.ndarray)}

    def chain():
        built = fn(*tensors)
        items = list(built) if isinstance(built, tuple) else [built]
        lazy = [i for i, v in enumerate(items) if isinstance(v, Tensor)]
        if len(lazy) == 1 and not isinstance(built, tuple):
            used = placeholders([built._node])
            items[0] = built.run(**{n: v for n, v in bindings.items() if n in used})
        elif lazy:
            roots = [items[i] for i in lazy]
            used = placeholders([r._node for r in roots])
            ran = ppto.run(roots, **{n: v for n, v in bindings.items() if n in used})
            for i, v in zip(lazy, ran):
                items[i] = v
        return tuple(items) if isinstance(built, tuple) else items[0]

    out = _call(lambda *a: chain(), data)
    return out


# -- comparing ------------------------------------------------------------------------------------
def _tolerance(program: Program, want, data):
    scale = max(1.0, program.scale, _magnitude(want), _magnitude(data))
    if program.f32:
        return 1e-4, 1e-5 * scale
    return 1e-9, 1e-12 * scale


def _magnitude(x) -> float:
    if isinstance(x, (tuple, list)):
        return max([_magnitude(v) for v in x], default=0.0)
    try:
        a = np.asarray(x)
    except Exception:
        return 0.0
    if a.dtype.kind not in "biuf" or a.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        a = np.abs(a.astype(np.float64))
    a = a[np.isfinite(a)]
    return float(a.max()) if a.size else 0.0


def _short(x) -> str:
    with np.printoptions(threshold=40, precision=8, linewidth=200):
        if isinstance(x, (np.ndarray, np.generic)):
            text = np.array2string(np.asarray(x), separator=", ")
            return f"{type(x).__name__} {x.dtype}{list(np.shape(x))} {text}"
        return f"{type(x).__name__} {x!r}"


def compare_value(want, got, rtol, atol, cuda=False, what="result", exact=False):
    """None when ``got`` matches ``want``, else (category, detail)."""
    if isinstance(want, tuple) or isinstance(got, tuple):
        if not (isinstance(want, tuple) and isinstance(got, tuple)) or len(want) != len(got):
            return "wrong type", f"{what}: NumPy gives {_short(want)}, PyPTO {_short(got)}"
        for i, (w, g) in enumerate(zip(want, got)):
            bad = compare_value(w, g, rtol, atol, cuda, f"{what}[{i}]", exact)
            if bad:
                return bad
        return None
    tw, tg = type(want), type(got)
    scalar_on_device = (
        cuda and isinstance(want, np.generic) and isinstance(got, np.ndarray) and got.ndim == 0
    )
    if tw is not tg and not scalar_on_device:
        return "wrong type", f"{what}: NumPy gives {_short(want)}, PyPTO {_short(got)}"
    if want is None:
        return None
    if isinstance(want, (np.ndarray, np.generic)):
        if want.dtype != got.dtype:
            return "wrong dtype", f"{what}: NumPy gives {_short(want)}, PyPTO {_short(got)}"
        if np.shape(want) != np.shape(got):
            return "wrong shape", f"{what}: NumPy gives {_short(want)}, PyPTO {_short(got)}"
    w, g = np.asarray(want), np.asarray(got)
    if exact or w.dtype.kind not in "fc":
        same = np.array_equal(w, g, equal_nan=w.dtype.kind in "fc")
        if exact and same and w.dtype.kind == "f":  # signed zeros too
            same = np.array_equal(np.signbit(w), np.signbit(g))
    else:
        with np.errstate(all="ignore"):
            nan_same = np.array_equal(np.isnan(w), np.isnan(g))
            inf_same = np.array_equal(np.where(np.isinf(w), w, 0), np.where(np.isinf(g), g, 0))
            fin = np.isfinite(w) & np.isfinite(g)
            close = np.all(np.abs(w[fin] - g[fin]) <= atol + rtol * np.abs(w[fin]))
        same = nan_same and inf_same and bool(close)
    if not same:
        cat = "nondeterminism" if exact else "wrong value"
        return cat, f"{what}: NumPy gives {_short(want)}, PyPTO {_short(got)}"
    return None


def _refusal(e) -> bool:
    return isinstance(e, UnsupportedError) and str(getattr(e, "code", "")).startswith("PPT1")


def _describe_exc(e) -> str:
    code = getattr(e, "code", None)
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}{f' {code}' if code and code not in first else ''}: {first}"[:400]


def judge(program: Program, path: str, want: Outcome, got: Outcome, again=None) -> Verdict:
    cuda = path in ("cuda", "dask", "dask-cuda")  # (a 0-d array stands for a NumPy scalar)
    if want.exc is not None:
        if got.exc is not None and isinstance(got.exc, type(want.exc)):
            return Verdict(path, "ok")
        if got.exc is not None and _refusal(got.exc):  # a refusal, whatever NumPy would raise
            return Verdict(path, "refusal", detail=_describe_exc(got.exc), key=(path, "refusal"))
        detail = f"NumPy raises {_describe_exc(want.exc)}; PyPTO " + (
            f"raises {_describe_exc(got.exc)}" if got.exc is not None else "does not raise"
        )
        key = (path, "exception class", type(want.exc).__name__, type(got.exc).__name__)
        return Verdict(path, "failure", "exception class", detail, key)
    if got.exc is not None:
        if _refusal(got.exc):
            return Verdict(path, "refusal", detail=_describe_exc(got.exc), key=(path, "refusal"))
        detail = _describe_exc(got.exc)
        if not isinstance(got.exc, PyptoError):
            detail += "\n" + got.tb[-1500:]
        key = (path, "crash", type(got.exc).__name__, getattr(got.exc, "code", ""))
        return Verdict(path, "failure", "crash", detail, key)
    rtol, atol = _tolerance(program, want.value, want.args)
    bad = compare_value(want.value, got.value, rtol, atol, cuda)
    if bad is None:
        for i, (w, g) in enumerate(zip(want.args, got.args)):
            bad = compare_value(w, g, rtol, atol, cuda, f"argument {program.inputs[i].name}")
            if bad:
                bad = ("arg-write mismatch", bad[1])
                break
    if bad is None and again is not None:
        if again.exc is not None:
            bad = "nondeterminism", f"the second run raises {_describe_exc(again.exc)}"
        else:
            bad = compare_value(got.value, again.value, 0, 0, cuda, "second run", exact=True)
            if bad is None:
                for i, (w, g) in enumerate(zip(got.args, again.args)):
                    bad = compare_value(w, g, 0, 0, cuda, f"second run, argument {i}", True)
                    if bad:
                        break
            if bad is not None:
                bad = ("nondeterminism", bad[1])
    if bad is None:
        return Verdict(path, "ok")
    return Verdict(path, "failure", bad[0], bad[1], (path, bad[0]))


def check(program: Program, path: str = "numpy", determinism: bool = True) -> Verdict:
    """Run ``program`` on NumPy and on ``path``, and judge."""
    start = time.perf_counter()
    fn = load(program.source)
    try:
        want = run_numpy(program, fn)
        again = None
        if path == "numpy":
            if determinism:
                got, again = run_compiled(program, fn, second=True)
            else:
                got = run_compiled(program, fn)
        elif path == "lazy":
            got = run_lazy(program, fn)
            if determinism and got.exc is None:
                again = run_lazy(program, fn)
        elif path == "cuda":
            got = run_cuda(program, fn, program.seed)
            if determinism and got.exc is None:
                again = run_cuda(program, fn, program.seed + 1)
        elif path == "dask":  # (other chunks the second time: the same values, bit for bit?
            got = run_dask(program, fn, program.seed)  # not promised; compared to NumPy)
            if determinism and got.exc is None:
                again = run_dask(program, fn, program.seed)
        elif path == "dask-cuda":  # CuPy chunks (the emulator's device arrays)
            got = run_dask(program, fn, program.seed, gpu=True)
            if determinism and got.exc is None:
                again = run_dask(program, fn, program.seed + 1, gpu=True)
        else:
            raise ValueError(path)
        verdict = judge(program, path, want, got, again)
    finally:
        forget(fn)
    verdict.seconds = time.perf_counter() - start
    return verdict


# -- shrinking ------------------------------------------------------------------------------------
def _function(tree):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef))


def _unparse(tree) -> str:
    ast.fix_missing_locations(tree)
    return "import numpy as np\n\n\n" + ast.unparse(_function(tree)) + "\n"


def _stmt_lists(fn):
    for node in ast.walk(fn):
        for attr in ("body", "orelse"):
            block = getattr(node, attr, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield node, attr


def _source_candidates(source: str):
    """Smaller versions of the function's text, roughly biggest cuts first."""
    tree = ast.parse(source)
    fn = _function(tree)
    lists = list(_stmt_lists(fn))
    # 0. an alias ``a = b`` inlined (its later uses read b)
    for i, stmt in enumerate(fn.body):
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, (ast.Name, ast.Constant))
        ):
            t = ast.parse(source)
            tf = _function(t)
            name, value = stmt.targets[0].id, tf.body[i].value
            del tf.body[i]
            for later in tf.body[i:]:
                for node in ast.walk(later):
                    for field, child in ast.iter_fields(node):
                        if _reads(child, name):
                            setattr(node, field, copy.deepcopy(value))
                        elif isinstance(child, list):
                            for j, c in enumerate(child):
                                if _reads(c, name):
                                    child[j] = copy.deepcopy(value)
            yield _unparse(t)
    # 1. drop one statement (the last ones first: the return's inputs are computed early)
    for li in range(len(lists)):
        n = len(getattr(lists[li][0], lists[li][1]))
        for i in reversed(range(n)):
            t = ast.parse(source)
            node, attr = list(_stmt_lists(_function(t)))[li]
            block = getattr(node, attr)
            if isinstance(block[i], ast.Return) and node is _function(t):
                continue
            del block[i]
            if not block:
                block.append(ast.Pass())
            yield _unparse(t)
    # 2. a loop or an if replaced by its body (a loop's variable becomes 0)
    for k, node in enumerate(ast.walk(fn)):
        if isinstance(node, (ast.For, ast.If)):
            for choice in ("body", "orelse"):
                t = ast.parse(source)
                target = list(ast.walk(_function(t)))[k]
                new = list(getattr(target, choice))
                if not new:
                    continue
                if isinstance(target, ast.For):
                    new = [ast.Assign([ast.Name(target.target.id, ast.Store())], ast.Constant(0))]
                    new += target.body
                    if choice == "orelse":
                        continue
                _replace_stmt(_function(t), target, new)
                yield _unparse(t)
    # 3. the return: fewer elements, or one value instead of a tuple
    for k, node in enumerate(ast.walk(fn)):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            elts = node.value.elts
            for i in range(len(elts)):
                t = ast.parse(source)
                target = list(ast.walk(_function(t)))[k]
                target.value = target.value.elts[i]
                yield _unparse(t)
                if len(elts) > 2:
                    t = ast.parse(source)
                    target = list(ast.walk(_function(t)))[k]
                    del target.value.elts[i]
                    yield _unparse(t)
    # 4. a subexpression replaced by one of its operands, or by a leaf
    nodes = list(ast.walk(fn))
    funcs = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    leaf = fn.args.args[0].arg if fn.args.args else "x0"
    for k, node in enumerate(nodes):
        if not isinstance(node, ast.expr) or isinstance(getattr(node, "ctx", None), ast.Store):
            continue
        if id(node) in funcs:
            continue
        if isinstance(node, (ast.Name, ast.Constant)) or _is_np(node):
            continue
        options = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        options = [c for c in options if not _is_np(c) and not isinstance(c, ast.Slice)]
        for kw in getattr(node, "keywords", []):
            options.append(kw.value)
        for j in range(len(options) + 2):
            t = ast.parse(source)
            tnodes = list(ast.walk(_function(t)))
            target = tnodes[k]
            if j < len(options):
                idx = nodes.index(options[j]) if options[j] in nodes else None
                if idx is None:
                    continue
                new = tnodes[idx]
            elif j == len(options):
                new = ast.Constant(1.0)
            else:
                new = ast.Name(leaf, ast.Load())
            if _replace_expr(_function(t), target, new):
                yield _unparse(t)
    # 5. keyword arguments and slice parts dropped
    for k, node in enumerate(nodes):
        if isinstance(node, ast.Call) and node.keywords:
            for i in range(len(node.keywords)):
                t = ast.parse(source)
                target = list(ast.walk(_function(t)))[k]
                del target.keywords[i]
                yield _unparse(t)
        if isinstance(node, ast.Slice):
            for part in ("lower", "upper", "step"):
                if getattr(node, part) is not None:
                    t = ast.parse(source)
                    target = list(ast.walk(_function(t)))[k]
                    setattr(target, part, None)
                    yield _unparse(t)


def _reads(node, name) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def _is_np(node) -> bool:
    return (isinstance(node, ast.Name) and node.id == "np") or (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "np"
    )


def _replace_stmt(root, target, new):
    for node in ast.walk(root):
        for attr in ("body", "orelse"):
            block = getattr(node, attr, None)
            if isinstance(block, list) and target in block:
                i = block.index(target)
                block[i : i + 1] = new
                return


def _replace_expr(root, target, new) -> bool:
    for node in ast.walk(root):
        for field, value in ast.iter_fields(node):
            if value is target:
                setattr(node, field, new)
                return True
            if isinstance(value, list) and any(v is target for v in value):
                value[next(i for i, v in enumerate(value) if v is target)] = new
                return True
    return False


def _used_names(source: str) -> set[str]:
    return {n.id for n in ast.walk(_function(ast.parse(source))) if isinstance(n, ast.Name)}


def _input_candidates(program: Program):
    """Smaller inputs: unused parameters dropped, shapes shrunk, values simplified."""
    used = _used_names(program.source)
    for k, inp in enumerate(program.inputs):
        if inp.name not in used:
            t = ast.parse(program.source)
            fn = _function(t)
            fn.args.args = [a for a in fn.args.args if a.arg != inp.name]
            yield replace(
                program, source=_unparse(t), inputs=program.inputs[:k] + program.inputs[k + 1 :]
            )
    for k, inp in enumerate(program.inputs):
        if inp.kind != "array":
            continue
        a = np.asarray(inp.value)
        for ax, n in enumerate(a.shape):
            for m in sorted({1, n // 2, n - 1}):
                if 0 < m < n:
                    new = replace(inp, value=np.take(a, range(m), axis=ax))
                    yield _with_input(program, k, new)
        if inp.layout != "c":
            yield _with_input(program, k, replace(inp, layout="c"))
        if a.dtype.kind == "f" and a.size:
            rounded = np.round(a, 1).astype(a.dtype)
            if not np.array_equal(rounded, a):
                yield _with_input(program, k, replace(inp, value=rounded))
            ones = np.ones_like(a)
            if not np.array_equal(ones, a):
                yield _with_input(program, k, replace(inp, value=ones))


def _with_input(program, k, new: Input) -> Program:
    inputs = list(program.inputs)
    inputs[k] = new
    return replace(program, inputs=inputs)


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<candidate>", "exec")
    except SyntaxError:
        return False
    return True


def _size(program: Program) -> tuple:
    body = sum(1 for _ in ast.walk(_function(ast.parse(program.source))))
    elements = sum(np.asarray(i.value).size for i in program.inputs if i.kind == "array")
    return (body, elements, len(program.source))


def shrink(program: Program, path: str, verdict: Verdict, budget_s: float = 20.0, max_tries=400):
    """The smallest program (by this greedy search, within the budget) that still fails as
    ``verdict`` says; returns (program, verdict, tries)."""
    deadline = time.perf_counter() + budget_s
    best, best_verdict, tries = program, verdict, 0
    seen = {program.source}
    improved = True
    while improved and time.perf_counter() < deadline and tries < max_tries:
        improved = False
        cands = itertools.chain(
            (replace(best, source=s) for s in _source_candidates(best.source) if _parses(s)),
            _input_candidates(best),
        )
        for cand in cands:
            if time.perf_counter() > deadline or tries >= max_tries:
                break
            sig = cand.source + repr([(i.name, np.shape(i.value), i.layout) for i in cand.inputs])
            sig += repr([np.asarray(i.value).tobytes() for i in cand.inputs])
            if sig in seen or _size(cand) >= _size(best):
                continue
            seen.add(sig)
            tries += 1
            try:
                v = check(cand, path, determinism=verdict.category == "nondeterminism")
            except Exception:  # a candidate the oracle itself cannot run
                continue
            if v.status == "failure" and v.key == verdict.key:
                best, best_verdict, improved = cand, v, True
                break
    return best, best_verdict, tries


def report(program: Program, verdict: Verdict) -> str:
    return f"{verdict}\n{program.describe()}"


@dataclass
class Finding:
    seed: int
    verdict: Verdict  # of the generated program
    shrunk: Program | None  # None: not shrunk (budget spent)
    shrunk_verdict: Verdict | None
    original: Program

    def message(self) -> str:
        head = f"seed {self.seed}: {self.verdict}"
        if self.shrunk is None:
            return f"{head}\n(not shrunk: shrink budget spent)\n{self.original.describe()}"
        return f"{head}\nshrunk to:\n{self.shrunk_verdict}\n{self.shrunk.describe()}"


def paths_for(program: Program, targets=("numpy", "lazy")) -> list[str]:
    return [p for p in targets if p != "lazy" or program.pure]


def fuzz(seeds, targets, shrink_budget=5.0, per_failure=3.0, generate=None, on_verdict=None):
    """Check every seed's program on its paths; shrink the failures while the budget lasts.
    Returns the findings; ``on_verdict(seed, program, verdict)`` sees every verdict."""
    from .generator import generate as default_generate

    generate = generate or default_generate
    failures = []
    for seed in seeds:
        program = generate(seed)
        for path in targets(program) if callable(targets) else paths_for(program, targets):
            v = check(program, path)
            if on_verdict is not None:
                on_verdict(seed, program, v)
            if v.status == "failure":
                failures.append((seed, program, v))
    findings = []
    deadline = time.perf_counter() + shrink_budget
    for seed, program, v in failures:
        left = deadline - time.perf_counter()
        if left <= 0.2:
            findings.append(Finding(seed, v, None, None, program))
            continue
        small, sv, _ = shrink(program, v.path, v, min(per_failure, left))
        findings.append(Finding(seed, v, small, sv, program))
    return findings
