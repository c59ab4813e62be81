"""``pypto transpile``, end to end: the installed command in a subprocess, on the NumPy-style
corpus (examples/numpy_style) and on small files made here.

The corpus functions have no export comments: their signatures come from each module's CASES
(the "small" inputs, float32 and float64, through signature_of) as --signature options. The
whole corpus is transpiled twice per module (``--jobs 1`` and ``--jobs 2``), shared by the
tests below; the generated modules are then run in an interpreter where pypto cannot be
imported, against the original functions.
"""

import collections
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pypto.transpile import signature_of
from pypto_cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "numpy_style"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
MODULE_NAMES = sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")
PYPTO = shutil.which("pypto", path=str(Path(sys.executable).parent))


def pypto(*args, cwd=ROOT):
    assert PYPTO is not None, "the pypto console script is not installed next to python"
    return subprocess.run(
        [PYPTO, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def corpus_signatures() -> list[str]:
    """--signature options for every CASES entry of the corpus (float32 and float64)."""
    options = []
    for name in MODULE_NAMES:
        module = importlib.import_module(f"examples.numpy_style.{name}")
        for fn, make in module.CASES:
            for dtype in (np.float32, np.float64):
                seed = zlib.crc32(f"{name}.{fn.__name__}".encode())
                sig = signature_of(fn.__name__, make("small", dtype, np.random.default_rng(seed)))
                if sig not in options:
                    options.append(sig)
    return [item for sig in options for item in ("--signature", sig)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus transpiled into out1 (--jobs 1) and out2 (--jobs 2)."""
    base = tmp_path_factory.mktemp("corpus")
    sigs = corpus_signatures()
    runs = {}
    for jobs in (1, 2):
        out = base / f"out{jobs}"
        runs[jobs] = pypto("transpile", "examples/numpy_style", "-o", out, "-j", jobs, *sigs)
        assert runs[jobs].returncode == 0, runs[jobs].stderr
    return {"base": base, "out1": base / "out1", "out2": base / "out2", "runs": runs}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_corpus_package_is_mirrored_and_summarized(corpus):
    files = tree(corpus["out1"])
    expected = {f"numpy_style/{p.name}" for p in CORPUS.glob("*.py")}
    # __init__.py too: the output is a package, with its runtime
    assert set(files) == expected | {"numpy_style/_pypto_runtime.py"}
    stderr = corpus["runs"][1].stderr
    assert "\r" not in stderr  # no progress display where stderr is not a terminal
    assert "warning" not in stderr and corpus["runs"][1].stdout == ""
    summary = stderr.strip().splitlines()[-1]
    assert summary.startswith(
        f"{len(expected)} files ({len(expected)} written, 0 up to date, 1 runtime module: "
        "1 written); "
    )
    assert " 0 carried over; " in summary and "kernels emitted" in summary
    header = files["numpy_style/elementwise.py"].decode().splitlines()[:2]
    assert header[0].endswith("(pypto transpile) from numpy_style/elementwise.py")
    assert header[1].startswith("# source sha256: ")


def test_jobs_2_and_a_second_run_give_the_same_bytes(corpus):
    one, two = tree(corpus["out1"]), tree(corpus["out2"])
    assert one.keys() == two.keys()
    assert [name for name in one if one[name] != two[name]] == []


CHECKER = """
import copy, importlib, json, sys, zlib
OUT, ROOT = sys.argv[1], sys.argv[2]
sys.modules["pypto"] = None  # PyPTO cannot be imported here
try:
    import pypto
except ImportError:
    pass
else:
    raise SystemExit("pypto is importable")
sys.path[:0] = [OUT, ROOT, ROOT + "/tests"]
import numpy as np
from compare import differences

RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
failures, calls = [], 0


for name in sys.argv[3:]:
    generated = importlib.import_module(f"numpy_style.{name}")
    original = importlib.import_module(f"examples.numpy_style.{name}")
    assert generated.__file__.startswith(OUT), generated.__file__
    for fn, make in original.CASES:
        fname = fn.__name__
        kept = getattr(generated, f"_{fname}_python")

        def refuse(*args, _what=f"{name}.{fname}", **kwargs):
            raise AssertionError(f"{_what}: the original ran, not the compiled code")

        for size in ("small", "large"):
            # small: the kinds compiled for, with new values: the compiled code must run.
            # large: other sizes (some of other ranks): the compiled code or the original.
            setattr(generated, f"_{fname}_python", refuse if size == "small" else kept)
            for dtype in (np.float32, np.float64):
                rng = np.random.default_rng(zlib.crc32(f"{name}.{fname}.{size}.new".encode()))
                args = make(size, dtype, rng)
                mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
                what = f"{name}.{fname} ({size}, {np.dtype(dtype).name})"
                want = fn(*theirs)
                try:
                    got = getattr(generated, fname)(*mine)
                except Exception as e:
                    failures.append(f"{what}: {type(e).__name__}: {e}")
                    continue
                calls += 1
                rtol = RTOL[np.dtype(dtype)]
                failures += differences(got, want, rtol, what)
                for i, (g, w) in enumerate(zip(mine, theirs)):
                    if isinstance(w, np.ndarray):  # what it writes in place
                        failures += differences(g, w, rtol, f"{what}, argument {i} afterwards")
print(json.dumps({"calls": calls, "failures": failures}))
"""


def _pypto_imports(text: str) -> set:
    """The functions of a module that import pypto ("<module>" for its top level)."""
    import ast

    found = set()

    def walk(node, where):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else where
            if isinstance(child, ast.Import) and any(
                a.name.split(".")[0] == "pypto" for a in child.names
            ):
                found.add(where)
            if isinstance(child, ast.ImportFrom) and (child.module or "").split(".")[0] == "pypto":
                found.add(where)
            walk(child, inner)

    walk(ast.parse(text), "<module>")
    return found


def test_generated_modules_run_without_pypto_and_match_the_originals(corpus, tmp_path):
    out = corpus["out1"]
    for path in out.rglob("*.py"):
        # pypto is imported in one place only: the runtime's hand-off of dask arrays to
        # PyPTO's Dask target (``--target dask``; a cluster's workers need pypto anyway)
        assert _pypto_imports(path.read_text()) <= {"_dask_call"}, path
    script = tmp_path / "checker.py"
    script.write_text(CHECKER)
    run = subprocess.run(
        [sys.executable, "-I", script, out, ROOT, *MODULE_NAMES],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["failures"] == []
    cases = sum(
        len(importlib.import_module(f"examples.numpy_style.{n}").CASES) for n in MODULE_NAMES
    )
    assert report["calls"] == cases * 4


RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")


def ruff_findings(*paths, select=()) -> collections.Counter:
    """(file name, rule, the line's text) of each finding of ``ruff check`` with its default
    rules (no project configuration), or the rules ``select`` names."""
    command = [RUFF, "check", "--isolated", "--no-cache", "--output-format", "json"]
    command += [f"--select={','.join(select)}"] if select else []
    done = subprocess.run([*command, *map(str, paths)], capture_output=True, text=True)
    found = collections.Counter()
    for item in json.loads(done.stdout):
        lines = Path(item["filename"]).read_text().splitlines()
        text = lines[item["location"]["row"] - 1].strip() if lines else ""
        found[(Path(item["filename"]).name, item["code"], text)] += 1
    return found


@pytest.mark.parametrize("select", [(), ("E4", "E7", "E9", "F")], ids=["default", "pyflakes"])
def test_generated_modules_are_clean_under_ruff_and_marked_generated(corpus, select):
    """Issue 18, point 3: what PyPTO writes adds no finding to what ruff finds in the sources
    (default rules, and the pyflakes set that had 27 F841, 3 E402 and 2 F811 on one file);
    ``ruff format --check`` leaves the modules alone (``# fmt: off`` in the header, below the
    ``@generated`` marker); the vendored runtime is clean on its own."""
    assert RUFF is not None, "ruff is a test dependency (pip install -e .[dev])"
    out = corpus["out1"] / "numpy_style"
    sources = ruff_findings(*sorted(CORPUS.glob("*.py")), select=select)
    outputs = ruff_findings(*sorted(out.glob("*.py")), select=select)
    assert outputs - sources == collections.Counter()
    assert sum(outputs.values()) <= sum(sources.values())
    done = subprocess.run([RUFF, "format", "--isolated", "--check", out], capture_output=True)
    assert done.returncode == 0, done.stdout
    for path in out.glob("*.py"):
        head = path.read_text().splitlines()[:5]
        assert head[0].startswith("# @generated by PyPTO ") and "# fmt: off" in head


def test_the_runtime_is_written_once_per_tree_and_modules_hold_only_their_programs(corpus):
    """Issue 18, point 2: one ``_pypto_runtime.py`` for the package; the modules import the
    helpers they call; the CUDA prelude is the runtime's, not repeated per kernel module; a
    module with nothing to compile is its source under the header."""
    out = corpus["out1"] / "numpy_style"
    runtime = (out / "_pypto_runtime.py").read_text()
    assert runtime.count("ppto_floordiv(T a, T b)") == 1 and "def _chunks(" in runtime
    init = (out / "__init__.py").read_text()
    assert init.split("# fmt: off\n", 1)[1] == (CORPUS / "__init__.py").read_text()
    for path in sorted(out.glob("*.py")):
        if path.name in ("__init__.py", "_pypto_runtime.py"):
            continue
        text = path.read_text()
        assert "ppto_floordiv" not in text and "def _chunks(" not in text, path.name
        assert "from ._pypto_runtime import (" in text, path.name
        assert "_CUDA_PRELUDE + r'''" in text, path.name  # its kernel modules start with it
    sizes = {p.name: len(p.read_text().splitlines()) for p in out.glob("*.py")}
    source = {p.name: len(p.read_text().splitlines()) for p in CORPUS.glob("*.py")}
    assert sizes["__init__.py"] == source["__init__.py"] + 5  # the header


# -- small files made here -------------------------------------------------------------------------
GOOD = """\
import numpy as np

# pypto: export scale(f64[n], float)


def scale(x, a):
    return np.exp(x) * a
"""

MIXED = """\
import numpy as np

# pypto: export fine(f64[n])
# pypto: export refused(f64[n])


def fine(x):
    return np.sin(x) + 1


def refused(x):
    try:
        y = x + 1
    except ValueError:
        y = x
    return y
"""


def make_package(root: Path) -> Path:
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "good.py").write_text(GOOD)
    (pkg / "sub" / "mixed.py").write_text(MIXED)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "junk.py").write_text("this is not Python")
    return pkg


def test_a_failing_file_never_damages_the_others(tmp_path):
    pkg = make_package(tmp_path)
    first = pypto("transpile", "pkg", "-o", "out", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    # no __init__.py: two directories of top-level modules, a runtime beside each
    assert sorted(tree(tmp_path / "out")) == [
        "pkg/_pypto_runtime.py",
        "pkg/good.py",
        "pkg/sub/_pypto_runtime.py",
        "pkg/sub/mixed.py",
    ]
    assert "`refused` carried over unchanged" in first.stderr and "[PPT102]" in first.stderr
    before = tree(tmp_path / "out")
    mixed = (tmp_path / "out" / "pkg" / "sub" / "mixed.py").read_text()
    assert "def _fine_python(x):" in mixed and "def refused(x):\n    try:" in mixed

    # A syntax error in good.py and a new file that fails when imported: both reported,
    # good.py's earlier output left as it was, nothing at all for the new one.
    (pkg / "good.py").write_text(GOOD.replace("def scale(x, a):", "def scale(x, a:"))
    (pkg / "boom.py").write_text("raise RuntimeError('no import for you')\n")
    second = pypto("transpile", "pkg", "-o", "out", "-j", 2, cwd=tmp_path)
    assert second.returncode == 1
    assert "error: pkg/good.py (out/pkg/good.py left as it was)" in second.stderr
    assert "syntax error" in second.stderr and "[PPT120]" in second.stderr
    assert "error: pkg/boom.py (out/pkg/boom.py not written)" in second.stderr
    assert "RuntimeError: no import for you" in second.stderr
    assert tree(tmp_path / "out") == before  # no partial, temporary or changed file

    # --strict: the function PyPTO refuses fails its file (exit 1, the coded error shown).
    (pkg / "good.py").write_text(GOOD)
    (pkg / "boom.py").unlink()
    (tmp_path / "out" / "pkg" / "good.py").unlink()
    strict = pypto("transpile", "pkg", "-o", "out", "--strict", cwd=tmp_path)
    assert strict.returncode == 1
    assert "error: pkg/sub/mixed.py (out/pkg/sub/mixed.py left as it was)" in strict.stderr
    assert "[PPT120] pkg/sub/mixed.py: `refused` cannot be compiled" in strict.stderr
    assert "[PPT102] `try` blocks are not supported" in strict.stderr
    assert (tmp_path / "out" / "pkg" / "sub" / "mixed.py").read_text() == mixed
    assert (tmp_path / "out" / "pkg" / "good.py").read_bytes() == before["pkg/good.py"]


def test_a_failed_write_leaves_no_partial_file(tmp_path):
    make_package(tmp_path)
    (tmp_path / "out" / "pkg" / "good.py").mkdir(parents=True)  # cannot be replaced
    run = pypto("transpile", "pkg", "-o", "out", cwd=tmp_path)
    assert run.returncode == 1
    assert "writing out/pkg/good.py failed" in run.stderr
    assert sorted(tree(tmp_path / "out")) == [  # and no temporary file
        "pkg/_pypto_runtime.py",
        "pkg/sub/_pypto_runtime.py",
        "pkg/sub/mixed.py",
    ]


def test_check_and_diff_after_the_source_changes(tmp_path):
    shutil.copy(CORPUS / "elementwise.py", tmp_path / "elementwise.py")
    args = ["transpile", "elementwise.py", "-o", "out", "-s", "sigmoid(f32[n,m])"]
    missing = pypto(*args, "--check", cwd=tmp_path)
    assert missing.returncode == 1
    assert "would write out/elementwise.py (missing)" in missing.stderr
    assert not (tmp_path / "out").exists()

    written = pypto(*args, cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    output = (tmp_path / "out" / "elementwise.py").read_bytes()
    current = pypto(*args, "--check", cwd=tmp_path)
    assert current.returncode == 0, current.stderr
    assert "1 file (0 stale, 1 up to date, 1 runtime module: 1 up to date)" in current.stderr
    same = pypto(*args, "--diff", cwd=tmp_path)
    assert same.returncode == 0 and same.stdout == ""

    source = tmp_path / "elementwise.py"
    changed = source.read_text().replace("np.exp(-x))", "np.exp(-2.0 * x))")
    source.write_text(changed)
    stale = pypto(*args, "--check", cwd=tmp_path)
    assert stale.returncode == 1
    assert "would write out/elementwise.py (source changed)" in stale.stderr
    diff = pypto(*args, "--diff", cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.startswith("--- out/elementwise.py\n+++ out/elementwise.py\n")
    assert "\n-    return 1.0 / (1.0 + np.exp(-x))\n" in diff.stdout
    assert "\n+    return 1.0 / (1.0 + np.exp(-2.0 * x))\n" in diff.stdout
    assert "\n+# source sha256: " in diff.stdout
    assert (tmp_path / "out" / "elementwise.py").read_bytes() == output  # nothing written
    assert pypto(*args, "--check", "--diff", cwd=tmp_path).returncode == 1


def test_check_finds_outputs_whose_source_is_gone(tmp_path):
    pkg = make_package(tmp_path)
    assert pypto("transpile", "pkg", "-o", "out", cwd=tmp_path).returncode == 0
    (pkg / "good.py").unlink()
    check = pypto("transpile", "pkg", "-o", "out", "--check", cwd=tmp_path)
    assert check.returncode == 1
    assert "orphaned out/pkg/good.py (its source pkg/good.py is gone: delete it)" in check.stderr


def test_check_covers_the_runtime(tmp_path):
    """The vendored runtime is checked like the modules: missing, edited by hand, and orphaned
    once no generated module of its directory imports it."""
    pkg = make_package(tmp_path)
    assert pypto("transpile", "pkg", "-o", "out", cwd=tmp_path).returncode == 0
    runtime = tmp_path / "out" / "pkg" / "_pypto_runtime.py"
    runtime.write_text(runtime.read_text().replace("def _chunks(", "def _chunks(  ", 1))
    edited = pypto("transpile", "pkg", "-o", "out", "--check", cwd=tmp_path)
    assert edited.returncode == 1
    assert "would write out/pkg/_pypto_runtime.py (edited by hand)" in edited.stderr
    runtime.unlink()
    missing = pypto("transpile", "pkg", "-o", "out", "--check", cwd=tmp_path)
    assert "would write out/pkg/_pypto_runtime.py (missing)" in missing.stderr
    assert pypto("transpile", "pkg", "-o", "out", cwd=tmp_path).returncode == 0
    (pkg / "good.py").write_text("X = 1\n")  # nothing to compile beside it any more
    orphan = pypto("transpile", "pkg", "-o", "out", cwd=tmp_path)
    assert orphan.returncode == 0
    assert "warning: orphaned out/pkg/_pypto_runtime.py: no module imports it" in orphan.stderr
    check = pypto("transpile", "pkg", "-o", "out", "--check", cwd=tmp_path)
    assert check.returncode == 1
    assert "orphaned out/pkg/_pypto_runtime.py (no generated module imports it)" in check.stderr


def test_select_verbose_and_quiet(tmp_path):
    shutil.copy(CORPUS / "elementwise.py", tmp_path / "elementwise.py")
    sigs = ["-s", "sigmoid(f32[n])", "-s", "relu(f64[n,m])", "-s", "gelu(f32[n])"]
    run = pypto("transpile", "elementwise.py", "-o", "out", *sigs, "--select", "sigmoid,relu",
                "--select", "nothing", "-v", cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "out" / "elementwise.py").read_text()
    assert "def _sigmoid_python(" in text and "def _relu_python(" in text
    assert "_gelu_python" not in text and "def gelu(x):" in text
    assert "elementwise.py -> out/elementwise.py: written; compiled sigmoid, relu (" in run.stderr
    assert "warning: --select nothing: no file has a top-level function nothing" in run.stderr
    assert "warning: --signature gelu(f32[n]): no function gelu was transpiled" in run.stderr
    quiet = pypto("transpile", "elementwise.py", "-o", "out", *sigs, "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "Missing argument 'SRC...'"),
        (["no_such.py"], "does not exist"),
        (["elementwise.py", "-s", "sigmoid"], "is not NAME(SPEC, ...)"),
        (["elementwise.py", "-s", "sigmoid(f32[n)"], "--signature"),
        (["elementwise.py", "-s", "sigmoid(q32[n])"], "'q32' in 'q32[n]' is not a dtype"),
        (["elementwise.py", "-j", "-1"], "--jobs"),
        (["elementwise.py", "-q", "-v"], "exclude each other"),
        (["elementwise.py", "--target", "tpu"], "--target"),
        (["elementwise.py", "--select", "a-b"], "not a function name"),
        (["elementwise.py", "-o", "."], "overwrite the sources"),
        (["elementwise.py", "--nope"], "No such option"),
    ],
)
def test_usage_errors_exit_2(tmp_path, monkeypatch, args, message):
    """(In this process: nothing is transpiled. The installed command's 2 is checked below.)"""
    (tmp_path / "elementwise.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["transpile", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elementwise.py"]


def test_usage_errors_exit_2_from_the_installed_command(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "same.py").write_text(GOOD)
    (tmp_path / "b" / "same.py").write_text(GOOD)
    run = pypto("transpile", "a/same.py", "b/same.py", cwd=tmp_path)
    assert run.returncode == 2
    assert "a/same.py and b/same.py would both be written to pypto_out/same.py" in run.stderr
    assert not (tmp_path / "pypto_out").exists()


def test_targets_numpy_cuda_and_all(tmp_path):
    """The default (all) has both programs; CuPy-only modules run NumPy arrays as the original.
    (The CUDA programs themselves are run in tests/cuda_emu/test_transpiled_cuda.py.)"""
    (tmp_path / "good.py").write_text(GOOD)
    code = textwrap.dedent("""
        import sys
        sys.modules["pypto"] = None
        import numpy as np, good
        python = good._scale_python
        ran = []
        good._scale_python = lambda *a: ran.append(1) or python(*a)
        x = np.linspace(-1, 1, 7)
        assert np.allclose(good.scale(x, 2.0), np.exp(x) * 2.0)
        print("original" if ran else "compiled")
    """)
    for target, programs, runs in [
        (None, ["def _scale_0(", "def _scale_0_cuda("], "compiled"),
        ("numpy", ["def _scale_0("], "compiled"),
        ("cuda", ["def _scale_0_cuda("], "original"),
    ]:
        out = tmp_path / f"out_{target}"
        options = ["--target", target] if target else []
        run = pypto("transpile", "good.py", "-o", out, *options, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        text = (out / "good.py").read_text()
        found = [p for p in ("def _scale_0(", "def _scale_0_cuda(") if p in text]
        assert found == programs, target
        env = {**os.environ, "PYTHONPATH": str(out)}
        ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == runs, target


def test_help_texts():
    top = pypto("--help")
    assert top.returncode == 0 and "transpile" in top.stdout
    run = pypto("transpile", "--help")
    assert run.returncode == 0
    text = run.stdout
    needles = ["Examples:", "Exit codes:", "--check", "--diff", "--jobs", "--strict"]
    needles += ["--select", "--signature", "--target [numpy|cuda|all|dask]", "pypto_out"]
    for needle in needles:
        assert needle in text, needle
    assert "  2  usage error" in text


def test_the_pre_commit_hook_runs_the_check():
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "- id: pypto-transpile-check\n" in text
    assert "  entry: pypto transpile --check\n" in text
    assert "  language: python\n" in text


def test_the_generated_module_runs_as_in_the_docs(tmp_path):
    """README's example: a module the generated code runs (in a fresh interpreter)."""
    run = pypto("transpile", CORPUS / "elementwise.py", "--signature", "sigmoid(f32[n])",
                "-o", tmp_path / "out")  # fmt: skip
    assert run.returncode == 0, run.stderr
    code = textwrap.dedent("""
        import sys
        sys.modules["pypto"] = None
        import numpy as np, elementwise
        elementwise._sigmoid_python = None  # the compiled path runs, not the original
        print(elementwise.sigmoid(np.zeros(3, np.float32)))
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "out")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[0.5 0.5 0.5]"


LAZY = """\
import numpy as np
import pypto as ppto


@ppto.compile
def twice_sin(x):
    return np.sin(x) * 2


# pypto: export twice_sin(f64[n])

chain = ppto.exp(ppto.tensor("x"))
"""


def test_a_module_that_still_uses_pypto(tmp_path):
    """@ppto.compile functions are chosen and their decorator dropped; a module that uses PyPTO
    besides (a lazy chain) keeps importing it: a warning, and an error under --strict."""
    (tmp_path / "lazy.py").write_text(LAZY)
    run = pypto("transpile", "lazy.py", "-o", "out", "--target", "numpy", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "warning: lazy.py: the generated module still imports pypto" in run.stderr
    text = (tmp_path / "out" / "lazy.py").read_text()
    assert "import pypto as ppto" in text and "@ppto.compile" not in text
    assert "def _twice_sin_python(x):" in text
    strict = pypto("transpile", "lazy.py", "-o", "out2", "--strict", cwd=tmp_path)
    assert strict.returncode == 1
    assert "[PPT120] lazy.py uses ppto besides decorators" in strict.stderr
    assert not (tmp_path / "out2").exists()


LAYOUT = '''\
#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# A license comment above the docstring.
"""Kernels for the layout test: the module keeps this docstring."""

from __future__ import annotations

import numpy as np


def scaled(x: np.ndarray, a: float) -> np.ndarray:
    return np.sin(x) * a


# pypto: export scaled(f64[n], float)
'''


def test_the_source_module_layout_is_kept(tmp_path):
    """Issue 18, point 1: a shebang and an encoding line stay first, the docstring and the
    ``from __future__`` imports come before the runtime (else: a SyntaxError on import), and
    --check reads the header below them."""
    (tmp_path / "layout.py").write_text(LAYOUT)
    run = pypto("transpile", "layout.py", "-o", "out", "--target", "numpy", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "out" / "layout.py").read_text()
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env python3" and lines[1] == "# -*- coding: utf-8 -*-"
    assert lines[2].startswith("# @generated by PyPTO ") and lines[3].startswith("# source sha")
    assert lines[3:7][-1] == "# fmt: off"  # formatters leave the generated module alone
    # the docstring, then from __future__, then the generated imports, then the source's
    assert lines[7] == "# A license comment above the docstring."
    future = text.index("from __future__ import annotations")
    assert text.index('"""Kernels for') < future < text.index("from _pypto_runtime import (")
    assert text.index("# isort: split") < text.index("import numpy as np")
    code = textwrap.dedent("""
        import sys
        sys.modules["pypto"] = None
        import numpy as np, layout
        layout._scaled_python = None  # the compiled path runs, not the original
        print(layout.__doc__)
        print(layout.scaled(np.zeros(3), 2.0))
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "out")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Kernels for the layout test: the module keeps this docstring.",
        "[0. 0. 0.]",
    ]
    check = pypto("transpile", "layout.py", "-o", "out", "--target", "numpy", "--check",
                  cwd=tmp_path)  # fmt: skip
    assert check.returncode == 0, check.stderr
    (tmp_path / "layout.py").write_text(LAYOUT.replace("* a", "* a + 0.0"))
    stale = pypto("transpile", "layout.py", "-o", "out", "--target", "numpy", "--check",
                  cwd=tmp_path)  # fmt: skip
    assert stale.returncode == 1 and "source changed" in stale.stderr, stale.stderr


def test_check_from_another_directory_and_its_stale_reasons(tmp_path):
    """Issue 18, point 5: the header names the source relative to its SRC, so --check from
    another directory agrees; an output edited by hand, and other options, say so."""
    src = tmp_path / "proj" / "kernels"
    src.mkdir(parents=True)
    shutil.copy(CORPUS / "elementwise.py", src / "elementwise.py")
    sig = ["-s", "sigmoid(f32[n])", "--target", "numpy"]
    written = pypto("transpile", "kernels", "-o", "gen", *sig, cwd=tmp_path / "proj")
    assert written.returncode == 0, written.stderr
    out = tmp_path / "proj" / "gen" / "kernels" / "elementwise.py"
    assert out.read_text().splitlines()[0].endswith(" from kernels/elementwise.py")
    elsewhere = pypto("transpile", src, "-o", out.parent.parent, *sig, "--check", cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    options = pypto("transpile", src, "-o", out.parent.parent, "-s", "sigmoid(f64[n])",
                    "--target", "numpy", "--check", cwd=tmp_path)  # fmt: skip
    assert options.returncode == 1 and "(other signatures or options)" in options.stderr
    out.write_text(out.read_text().replace("def sigmoid(", "def sigmoid(  ", 1))
    edited = pypto("transpile", src, "-o", out.parent.parent, *sig, "--check", cwd=tmp_path)
    assert edited.returncode == 1 and "(edited by hand)" in edited.stderr, edited.stderr


RELATIVE = """\
import numpy as np

from . import c
from .c import SCALE


def f(x):
    return np.sin(x) * SCALE + c.SCALE


# pypto: export f(f64[n])
"""


def test_a_package_module_with_relative_imports(tmp_path):
    """Issue 18, point 4: ``from . import c`` inside a package: the file is imported as part of
    its package (it failed with PPT120 and was left out of the output package)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "c.py").write_text("SCALE = 2.0\n")
    (pkg / "a.py").write_text(RELATIVE)
    run = pypto("transpile", "pkg", "-o", "out", "--target", "numpy", "--strict", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "pkg").iterdir()) == [
        "__init__.py",
        "_pypto_runtime.py",  # the package's runtime, imported relatively
        "a.py",
        "c.py",
    ]
    assert "from ._pypto_runtime import (" in (tmp_path / "out" / "pkg" / "a.py").read_text()
    code = textwrap.dedent("""
        import sys
        sys.modules["pypto"] = None
        import numpy as np, pkg.a as a
        a._f_python = None  # the compiled path runs, not the original
        print(a.f(np.zeros(3)))
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "out")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2. 2. 2.]"


KEYWORD_ONLY = """\
import numpy as np


def f(x, *, s=2.0):
    return np.sin(x) * s


# pypto: export f(f32[n])
"""


def test_keyword_only_parameters_reach_the_original(tmp_path):
    """Found in review: the dispatcher passed keyword-only parameters positionally to the
    original (a TypeError for every call it did not compile for)."""
    (tmp_path / "kw.py").write_text(KEYWORD_ONLY)
    run = pypto("transpile", "kw.py", "-o", "out", "--target", "numpy", "--strict", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    code = textwrap.dedent("""
        import sys
        sys.modules["pypto"] = None
        import numpy as np, kw
        print(kw.f(np.zeros(2, np.float64) + 1.0, s=3.0)[0])  # f64: the original runs
        print(kw.f(np.ones(2, np.float32))[0])  # f32: the compiled program
    """)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "out")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        str(np.sin(1.0) * 3.0),
        str(np.float32(np.sin(np.float32(1)) * 2)),
    ]
