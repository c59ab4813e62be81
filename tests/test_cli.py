"""The pypto command."""

import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import pypto
from pypto_cli.main import main


def test_version_and_ops_listing():
    runner = CliRunner()
    result = runner.invoke(main, ["--version"])
    assert result.exit_code == 0 and pypto.__version__ in result.output
    result = runner.invoke(main, ["ops", "--kind", "scan"])
    assert result.exit_code == 0
    assert result.output.split("\n")[:2] == ["scan       cumprod", "scan       cumsum"]
    result = runner.invoke(main, ["ops", "--kind", "nope"])
    assert result.exit_code == 2


def test_the_installed_console_script_runs():
    script = shutil.which("pypto", path=str(Path(sys.executable).parent))
    assert script is not None, "the pypto console script is not installed next to python"
    out = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"pypto, version {pypto.__version__}"


def test_docs_ops_table_is_current():
    from pypto_cli.main import ops_markdown

    builtin = [op for op in pypto.REGISTRY.ops() if op.builtin]  # tests register others
    table = ops_markdown(sorted(builtin, key=lambda o: (o.kind, o.name)))
    path = Path(__file__).resolve().parent.parent / "docs" / "ops.md"
    assert path.read_text() == table + "\n", "regenerate: pypto ops --markdown > docs/ops.md"


# -- explain / graph ------------------------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SOFTMAX = f"{EXAMPLES / 'numpy_style' / 'reductions.py'}::softmax"


def test_explain_shows_kernels_bytes_buffers_levels_and_decisions():
    result = CliRunner().invoke(main, ["explain", SOFTMAX, "--arg", "x=f32[4,64,256]"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "kernels: 1 (one NumPy call per op would be 5)" in out
    assert "k0 rowwise over [x.0,x.1,x.2], reduced axes (2,)" in out
    assert "bytes: read 256.0 KiB, written 256.0 KiB" in out
    assert "parallel levels: k0" in out and "fusion decisions:" in out
    assert "chunks: axis 0" in out


def test_explain_a_lazy_chain_from_a_file():
    target = f"{EXAMPLES / 'lazy_api' / 'seed_3_2_composition.py'}::op_chain"
    result = CliRunner().invoke(main, ["explain", target, "-a", "x=f64[8,5]", "-a", "y=f64[8,3]"])
    assert result.exit_code == 0, result.output
    assert "kernels: 2" in result.output and "index maps: transpose" in result.output


def test_explain_usage_errors_are_clear():
    runner = CliRunner()
    result = runner.invoke(main, ["explain", SOFTMAX])
    assert result.exit_code == 2 and "--arg x=f32[64,64]" in result.output
    result = runner.invoke(main, ["explain", SOFTMAX.replace("::softmax", "::nope")])
    assert result.exit_code == 2 and "softmax" in result.output and "layer_norm" in result.output
    result = runner.invoke(main, ["explain", "no_such_file.py::f", "-a", "x=1"])
    assert result.exit_code == 2 and "no such file" in result.output
    result = runner.invoke(main, ["explain", SOFTMAX, "-a", "x=f32[3"])
    assert result.exit_code == 2 and "DTYPE[SHAPE]" in result.output
    result = runner.invoke(main, ["explain", SOFTMAX, "-a", "x=f32[3,3]", "-a", "z=1"])
    assert result.exit_code == 2 and "no parameter z" in result.output


def test_explain_reports_a_coded_error_for_unsupported_code(tmp_path):
    src = tmp_path / "bad.py"
    src.write_text(
        "import numpy as np\n\ndef f(x):\n    while x.sum() > 0:\n        x = x - 1\n"
        "    else:\n        x = x + 1\n    return x\n"
    )
    result = CliRunner().invoke(main, ["explain", f"{src}::f", "-a", "x=f64[3]"])
    assert result.exit_code == 1
    assert "[PPT1" in result.output and "bad.py:4" in result.output


def test_graph_writes_dot_with_kernel_clusters(tmp_path):
    out = tmp_path / "g.dot"
    target = f"{EXAMPLES / 'lazy_api' / 'seed_3_2_composition.py'}::op_chain"
    args = ["graph", target, "-a", "x=f32[8,5]", "-a", "y=f32[8,3]", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith("digraph") and text.count("subgraph cluster_") == 2
    assert 'label="k0: reduction (level 0)"' in text and "transpose" in text
    again = tmp_path / "again.dot"
    CliRunner().invoke(main, [*args[:-1], str(again)])
    assert again.read_text() == text  # deterministic


def test_graph_without_graphviz_says_so_and_writes_nothing(tmp_path):
    out = tmp_path / "g.svg"
    args = ["graph", SOFTMAX, "-a", "x=f32[8,8]", "-o", str(out)]
    result = CliRunner().invoke(main, args, env={"PATH": str(tmp_path)})
    assert result.exit_code == 1
    assert "Graphviz's `dot` program was not found" in result.output and "g.dot" in result.output
    assert list(tmp_path.iterdir()) == []


def test_graph_runs_graphviz_dot_for_svg(tmp_path):
    """A stand-in `dot` on PATH (Graphviz is not on the CI machine) records how it was called."""
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "text = sys.stdin.read()\n"
        "assert sys.argv[1:] == ['-Tsvg'] and text.startswith('digraph'), sys.argv\n"
        "print('<svg>' + str(text.count('subgraph cluster_')) + '</svg>')\n"
    )
    fake.chmod(0o755)
    out = tmp_path / "g.svg"
    args = ["graph", SOFTMAX, "-a", "x=f32[8,8]", "-o", str(out)]
    result = CliRunner().invoke(main, args, env={"PATH": str(fake.parent)})
    assert result.exit_code == 0, result.output
    assert out.read_text().strip() == "<svg>1</svg>"
