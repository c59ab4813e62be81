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
