"""Errors are a feature: a code, the message, file:line:col, the line, a caret, a hint."""

import numpy as np
import pytest

import pypto as ppto


def test_error_shows_file_line_column_and_caret():
    x, y = ppto.tensor("x"), ppto.tensor("y")
    chain = ppto.sin(x) + y  # the construct the caret must point at
    with pytest.raises(ppto.ShapeError) as e:
        chain.run(x=np.ones((3, 4)), y=np.ones(5))
    lines = str(e.value).splitlines()
    assert lines[0].startswith("[PPT201] `add` of sin(x): float64 (3, 4), y: float64 (5,)")
    where = next(line for line in lines if line.strip().startswith("-->"))
    assert where.strip().endswith("test_errors.py:11:13")
    source = next(i for i, line in enumerate(lines) if "chain = ppto.sin(x) + y" in line)
    caret = lines[source + 1]
    col = lines[source].index("ppto.sin(x) + y")
    assert caret.index("^") == col and caret.count("^") == len("ppto.sin(x) + y")


def test_hint_is_shown():
    x = ppto.tensor("x")
    with pytest.raises(ppto.UnsupportedError) as e:
        x[x > 0]
    assert "boolean-mask indexing" in str(e.value)
    assert "hint: use np.where(mask, x, other)" in str(e.value)


def test_errors_are_also_the_builtin_exceptions_numpy_users_catch():
    assert issubclass(ppto.ShapeError, ValueError)
    assert issubclass(ppto.DTypeError, TypeError)
    assert issubclass(ppto.IndexingError, IndexError)
    assert issubclass(ppto.UnsupportedError, NotImplementedError)
    assert issubclass(ppto.InternalError, ppto.PyptoError)
    x = ppto.tensor("x")
    with pytest.raises(TypeError, match="boolean negative"):
        (-x).run(x=np.array([True]))


def test_dtype_errors_say_what_numpy_says():
    x = ppto.tensor("x")
    with pytest.raises(ppto.DTypeError, match=r"`bitwise_and` does not support float64") as e:
        (x & 1).run(x=np.ones(2))
    assert e.value.code == "PPT301"


def test_no_internal_traceback_for_bad_arguments():
    x = ppto.tensor("x")
    for build in (
        lambda: x.sum(axis=5),
        lambda: x.reshape(5, -1),
        lambda: x[0, 0, 0],
        lambda: ppto.transpose(x, (0, 0)),
        lambda: x[::0],
    ):
        with pytest.raises(ppto.PyptoError):
            build().run(x=np.ones((2, 3)))


def test_every_error_code_is_documented():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    used = set()
    for path in (root / "pypto").rglob("*.py"):
        used |= set(re.findall(r"PPT\d{3}", path.read_text()))
    documented = set(re.findall(r"\| (PPT\d{3}) \|", (root / "docs" / "errors.md").read_text()))
    assert sorted(used - documented) == []
