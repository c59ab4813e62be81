"""The persistent compile cache (pypto/cache.py), across real processes: a second process runs
what the first compiled without compiling (nor importing the front end), with the same bytes;
what the function reads keys the entry; corrupt entries are replaced; the cache can be turned
off, emptied and bounded; concurrent processes share it (issue 18, point 6)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto
from pypto import cache

ROOT = Path(__file__).resolve().parent.parent

KERNELS = '''
import numpy as np

SCALE = 2.0


def helper(v):
    return v * SCALE


def thomas(a, b, c, d):
    """Thomas sweeps: a loop over scalars, 14 statements."""
    n = d.shape[0]
    cp = np.empty(n)
    dp = np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.empty(n)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return helper(x)


import config


class Cfg:
    scale = 2.0


def shift(v, k=SCALE + 1.0):
    return v + k


def attrs(x):
    """Reads a module's attribute, a class's, and a callee's default argument."""
    return x * config.K + x * Cfg.scale + shift(x)


def crop(x, k):
    out = np.zeros(x.shape[0] - k)
    for i in range(k):
        out += x[i : i + out.shape[0]]
    return out
'''

RUN = """
import hashlib, json, sys
import numpy as np
import pypto as ppto
import kernels
f = ppto.compile(getattr(kernels, sys.argv[1]))
rng = np.random.default_rng(0)
args = {"thomas": lambda: [rng.random(40) + 2 for _ in range(4)],
        "crop": lambda: [rng.random(int(sys.argv[2])), int(sys.argv[3])],
        "attrs": lambda: [rng.random(10)]}[sys.argv[1]]()
try:
    out = f(*args)
    result = hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest()
except Exception as e:
    result = f"{type(e).__name__}: {e}"
print(json.dumps({"result": result, "history": f.history, "libcst": "libcst" in sys.modules}))
"""


def python(tmp_path, *args, **env):
    run_env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYPTO_CACHE_DIR": str(tmp_path / "c")}
    run_env.update(env)
    done = subprocess.run(
        [sys.executable, "-c", RUN, *map(str, args)],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def entries(tmp_path) -> list[Path]:
    return sorted((tmp_path / "c").glob("*/*.pypto-cache"))


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "config.py").write_text("K = 2.0\n")
    return tmp_path / "kernels.py"


def test_attributes_of_modules_and_classes_and_defaults_key_the_entry(tmp_path, kernels):
    """Found in review: a module's attribute (``config.K``, another file), a class's
    (``Cfg.scale``) and an inlined callee's default argument were not in the key, so a
    changed value kept the old program."""
    first = python(tmp_path, "attrs")
    assert "loaded" in python(tmp_path, "attrs")["history"][-1]
    results = {first["result"]}
    for path, old, new in (
        (tmp_path / "config.py", "K = 2.0", "K = 5.0"),
        (kernels, "    scale = 2.0", "    scale = 7.0"),
        (kernels, "SCALE = 2.0", "SCALE = 4.0"),  # shift's default: SCALE + 1.0
    ):
        path.write_text(path.read_text().replace(old, new))
        changed = python(tmp_path, "attrs")
        assert "loaded" not in changed["history"][-1], (old, new)
        assert changed["result"] not in results, (old, new)
        results.add(changed["result"])
        assert python(tmp_path, "attrs", PYPTO_CACHE="0")["result"] == changed["result"]


def test_a_second_process_runs_what_the_first_compiled(tmp_path, kernels):
    cold = python(tmp_path, "thomas")
    assert cold["history"][-1].endswith(": first call") and cold["libcst"]
    assert len(entries(tmp_path)) == 1
    warm = python(tmp_path, "thomas")
    assert warm["result"] == cold["result"]  # the same bytes
    assert warm["history"][-1].endswith("first call; loaded from the compile cache")
    assert not warm["libcst"]  # neither the front end nor the passes were needed
    off = python(tmp_path, "thomas", PYPTO_CACHE="0")
    assert off["history"][-1].endswith(": first call") and off["result"] == cold["result"]


def test_the_entry_is_keyed_by_the_source_and_what_it_reads(tmp_path, kernels):
    first = python(tmp_path, "thomas")
    kernels.write_text(KERNELS.replace("SCALE = 2.0", "SCALE = 3.0"))  # a global it reads
    scaled = python(tmp_path, "thomas")
    assert "loaded" not in scaled["history"][-1] and scaled["result"] != first["result"]
    kernels.write_text(
        KERNELS.replace("SCALE = 2.0", "SCALE = 3.0").replace("v * SCALE", "v + SCALE")
    )
    callee = python(tmp_path, "thomas")  # a function it inlines
    assert "loaded" not in callee["history"][-1] and callee["result"] != scaled["result"]
    again = python(tmp_path, "thomas")
    assert "loaded" in again["history"][-1] and again["result"] == callee["result"]
    kernels.write_text(KERNELS.replace("cp[0] = c[0] / b[0]", "cp[0] = c[0] / b[0]  # same"))
    edited = python(tmp_path, "thomas")  # its own source (the lines its messages show)
    assert "loaded" not in edited["history"][-1] and edited["result"] == first["result"]


def test_guards_hold_for_the_sizes_and_coded_errors_come_back(tmp_path, kernels):
    ok = python(tmp_path, "crop", 20, 3)
    bad = python(tmp_path, "crop", 5, 7)  # NumPy: negative dimensions; other guards
    assert bad["result"].startswith("ExecutionValueError: [PPT601]"), bad
    assert "loaded" not in bad["history"][-1]
    assert python(tmp_path, "crop", 30, 4)["history"][-1].endswith("loaded from the compile cache")
    again = python(tmp_path, "crop", 5, 7)  # NumPy raises in the program: the coded error
    assert again["result"] == bad["result"]  # comes from the reference executor, as cold
    assert again["history"][0].endswith("loaded from the compile cache")
    assert again["history"][1].endswith("raised ValueError: compiled to say why")
    assert len(entries(tmp_path)) == 2 and ok["result"] != bad["result"]


def test_corrupt_and_foreign_entries_are_replaced(tmp_path, kernels):
    first = python(tmp_path, "thomas")
    (path,) = entries(tmp_path)
    path.write_bytes(b"PYPTO-COMPILE-CACHE 1\npypto 0.0.0\n" + path.read_bytes()[60:])
    foreign = python(tmp_path, "thomas")
    assert "loaded" not in foreign["history"][-1] and foreign["result"] == first["result"]
    (path,) = entries(tmp_path)
    path.write_bytes(path.read_bytes()[:-40])  # truncated
    truncated = python(tmp_path, "thomas")
    assert "loaded" not in truncated["history"][-1] and truncated["result"] == first["result"]
    assert "loaded" in python(tmp_path, "thomas")["history"][-1]  # written anew


def test_concurrent_processes_share_the_directory(tmp_path, kernels):
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYPTO_CACHE_DIR": str(tmp_path / "c")}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", RUN, "thomas"], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(4)
    ]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in runs]
    assert len({r["result"] for r in results}) == 1
    assert len(entries(tmp_path)) == 1  # the same entry, written whole by whoever was last
    assert not list((tmp_path / "c").glob("*/.*.tmp"))
    assert "loaded" in python(tmp_path, "thomas")["history"][-1]


def test_entries_are_deterministic(tmp_path, kernels):
    python(tmp_path, "thomas")
    python(tmp_path, "thomas", PYPTO_CACHE_DIR=str(tmp_path / "d"))
    first = [p.name for p in entries(tmp_path)]
    assert first == [p.name for p in sorted((tmp_path / "d").glob("*/*.pypto-cache"))]


def scaled(x, a):
    return np.tanh(x) * a + x.sum()


def shifted(x, k):
    return x[k:] * 2.0


def test_in_one_process(tmp_path, monkeypatch):
    """Off (``cache=False``, ``PYPTO_CACHE=0``), emptied, bounded; the recompile message
    names the argument that changed."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path))
    x = np.arange(6.0)
    ppto.compile(scaled, cache=False)(x, 2.0)
    monkeypatch.setenv("PYPTO_CACHE", "0")
    ppto.compile(scaled)(x, 2.0)
    assert not list(tmp_path.iterdir())
    monkeypatch.delenv("PYPTO_CACHE")
    f = ppto.compile(scaled)
    f(x, 2.0)
    f(x.astype(np.float32), 2.0)
    assert f.history[-1].endswith("argument 'x' was x: f64[x.0], now x: f32[x.0]"), f.history
    g = ppto.compile(scaled)
    g(x, 2.0)
    assert g.history[-1].endswith("loaded from the compile cache")
    np.testing.assert_array_equal(g(x, 2.0), scaled(x, 2.0))
    assert ppto.cache_clear() == 2 and not list(tmp_path.glob("*/*.pypto-cache"))
    monkeypatch.setenv("PYPTO_CACHE_MAX_BYTES", "1")  # every entry over the budget
    for fn, arg in ((scaled, 2.0), (shifted, 2)):
        monkeypatch.setattr(cache, "_STORED", [0])  # (a process checks on its first store)
        ppto.compile(fn)(x, arg)
    assert len(list(tmp_path.glob("*/*.pypto-cache"))) <= 1


def test_lazy_chains_are_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path))
    code = textwrap.dedent("""
        import hashlib, sys
        import numpy as np, pypto as ppto
        from pypto import tracer
        x, y = ppto.tensor("x"), ppto.tensor("y")
        chain = ppto.sin(ppto.reduce_sum(x, axis=1))[:, None] * ppto.exp(ppto.transpose(y, (1, 0)))
        rng = np.random.default_rng(0)
        out = chain.run(x=rng.random((30, 20)), y=rng.random((40, 30)))
        loaded = any(run is not None for run, _ in tracer._STATE.values())
        planned = "pypto.passes.pipeline" in sys.modules
        print(hashlib.sha256(out.tobytes()).hexdigest(), loaded, planned)
    """)
    outs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
        )
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout.split())
    assert outs[0][0] == outs[1][0]
    assert outs[0][1:] == ["False", "True"] and outs[1][1:] == ["True", "False"]


CORPUS_RUN = """
import copy, hashlib, importlib, json, sys, zlib
import numpy as np
import pypto as ppto
sys.path.insert(0, sys.argv[1])


def data(v):
    if v is None or isinstance(v, (bool, int, float, complex, str)):
        return repr(v)
    return (type(v).__name__, str(v.dtype), v.shape, np.ascontiguousarray(v).tobytes())


report = {}
for name in sys.argv[2:]:
    module = importlib.import_module(f"examples.numpy_style.{name}")
    for fn, make in module.CASES:
        label = f"{name}.{fn.__name__}"
        for dtype in (np.float32, np.float64):
            args = make("small", dtype, np.random.default_rng(zlib.crc32(label.encode())))
            f = ppto.compile(fn)
            mine = copy.deepcopy(args)
            with np.errstate(all="ignore"):
                out = f(*mine)
            outs = (out if isinstance(out, tuple) else (out,)) + tuple(mine)  # and its writes
            digest = hashlib.sha256(repr([data(o) for o in outs]).encode()).hexdigest()
            report[f"{label}.{np.dtype(dtype).name}"] = (digest, f.history[-1])
print(json.dumps(report))
"""


def test_the_corpus_runs_the_same_from_the_cache(tmp_path):
    names = sorted(p.stem for p in (ROOT / "examples" / "numpy_style").glob("*.py"))
    names = [n for n in names if n != "__init__"]
    env = {**os.environ, "PYPTO_CACHE_DIR": str(tmp_path)}
    reports = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", CORPUS_RUN, str(ROOT), *names],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(done.stdout))
    cold, warm = reports
    assert cold.keys() == warm.keys() and len(cold) > 100
    assert [k for k in cold if cold[k][0] != warm[k][0]] == []  # the same bytes
    loaded = [k for k in warm if warm[k][1].endswith("loaded from the compile cache")]
    assert len(loaded) == len(warm), sorted(set(warm) - set(loaded))


def test_errors_a_program_raises_are_made_again_in_another_process(tmp_path):
    """A coded error whose class ``execution_error`` made (also a ValueError) is stored as what
    makes it, so an entry raising it reads back in a process that has not made the class."""
    import pickle

    from pypto.errors import ExecutionError, execution_error, recipe

    e = execution_error(ValueError("x"), "negative dimensions", hint="h", code="PPT601")
    (tmp_path / "e.pkl").write_bytes(pickle.dumps(recipe(e)))
    code = textwrap.dedent(f"""
        import pickle
        from pypto.errors import ExecutionError, remake
        e = remake(pickle.loads(open({str(tmp_path / "e.pkl")!r}, "rb").read()))
        assert isinstance(e, ValueError) and isinstance(e, ExecutionError), type(e).__mro__
        print(type(e).__name__, e.message, e.hint, e.code)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [type(e).__name__, "negative", "dimensions", "h", "PPT601"]
    assert isinstance(e, ExecutionError)
