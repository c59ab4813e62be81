"""Every construct of the "Refused" table of docs/supported-python.md raises its documented
error: the class and code of docs/errors.md, the user's source location (the line and column of
the offending construct in the function's own file), ``file:line:col`` with the source line and
a caret under the construct in the message, the hint the table gives, and a traceback that ends
in the user's code (PyPTO strips its own frames).

Each case is a small module written under pytest's tmp_path and imported from there, so the
expected line and column are computed from the source text itself.
"""

import importlib.util
import itertools
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto

PYPTO_DIR = Path(ppto.__file__).resolve().parent
_module_ids = itertools.count()


# -- machinery ------------------------------------------------------------------------------------
class Case:
    """A module written from ``source`` and imported; ``fn`` is its function ``name``."""

    def __init__(self, tmp_path, source, name="f"):
        self.text = textwrap.dedent(source).lstrip("\n")
        module_name = f"frontend_error_case_{next(_module_ids)}"
        self.path = tmp_path / f"{module_name}.py"
        self.path.write_text(self.text)
        spec = importlib.util.spec_from_file_location(module_name, self.path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.fn = getattr(module, name)
        self.lines = self.text.splitlines()

    def where(self, line_marker, col_marker=None):
        """(line, 0-based col) of the only line containing ``line_marker``; the column is where
        ``col_marker`` (default: the line marker) starts on that line."""
        hits = [i for i, text in enumerate(self.lines, 1) if line_marker in text]
        assert len(hits) == 1, f"{line_marker!r} must be on exactly one line"
        line = hits[0]
        return line, self.lines[line - 1].index(col_marker or line_marker)


def raised(fn, *args, cls=ppto.UnsupportedError, **kwargs):
    """The error calling ``ppto.compile(fn)(*args, **kwargs)`` raises (it must be ``cls``)."""
    compiled = ppto.compile(fn)
    with pytest.raises(cls) as info:
        compiled(*args, **kwargs)
    err = info.value
    assert isinstance(err, ppto.PyptoError)
    return err


def assert_user_traceback(err):
    tb = err.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    last = Path(tb.tb_frame.f_code.co_filename).resolve()
    assert not last.is_relative_to(PYPTO_DIR), f"the traceback ends inside PyPTO: {last}"


def assert_refused(
    case, args, code, line_marker, col_marker=None, hint=None, cls=ppto.UnsupportedError
):
    """Compile and call ``case.fn``: the error, its code, site, message, caret and hint."""
    err = raised(case.fn, *args, cls=cls)
    assert err.code == code, f"{err.code} != {code}: {err}"
    line, col = case.where(line_marker, col_marker)
    assert err.site is not None, f"no source location: {err}"
    assert Path(err.site.filename) == case.path
    got_col, _end, got_line = err.site.columns()
    assert (got_line, got_col) == (line, col), f"site {err.site} != {case.path}:{line}:{col + 1}"
    message = str(err)
    assert f"[{code}]" in message
    assert f"{case.path}:{line}:{col + 1}" in message
    rendered = message.splitlines()
    source = case.lines[line - 1]
    at = [i for i, r in enumerate(rendered) if r.startswith(f"{line} | ") and r.endswith(source)]
    assert len(at) == 1, f"the source line is not shown:\n{message}"
    caret = rendered[at[0] + 1]
    offset = len(f"{line} | ")
    assert caret.index("^") == offset + col, f"the caret is not under the construct:\n{message}"
    if hint is not None:
        assert err.hint is not None and hint in err.hint, f"hint {err.hint!r} lacks {hint!r}"
        assert f"hint: {err.hint}" in message
    assert_user_traceback(err)
    return err


VEC = np.arange(1.0, 6.0)
MAT = np.arange(12.0).reshape(3, 4)


# == PPT102: statements ============================================================================
PPT102_CASES = {
    "with": (
        """
        import contextlib

        def f(x):
            with contextlib.suppress(ValueError):
                y = x * 2
            return y
        """,
        "with",
    ),
    "try": (
        """
        def f(x):
            try:
                y = x * 2
            except ValueError:
                y = x
            return y
        """,
        "try",
    ),
    "raise": (
        """
        def f(x):
            if x.ndim != 1:
                raise ValueError("vectors only")
            return x
        """,
        "raise",
    ),
    "assert": (
        """
        def f(x):
            assert x.ndim == 2
            return x
        """,
        "assert",
    ),
    "del": (
        """
        def f(x):
            y = x * 2
            del x
            return y
        """,
        "del",
    ),
    "global": (
        """
        SCALE = 2.0

        def f(x):
            global SCALE
            return x * SCALE
        """,
        "global",
    ),
    "nonlocal": (
        """
        def outer():
            count = 0

            def f(x):
                nonlocal count
                return x * count

            return f

        f = outer()
        """,
        "nonlocal",
    ),
    "import": (
        """
        def f(x):
            import math
            return x * math.pi
        """,
        "import math",
    ),
    "from_import": (
        """
        def f(x):
            from math import pi
            return x * pi
        """,
        "from math",
    ),
    "def": (
        """
        def f(x):
            def g(v):
                return v * 2

            return g(x)
        """,
        "def g",
    ),
    "class": (
        """
        def f(x):
            class Box:
                pass

            return x
        """,
        "class Box",
    ),
}


@pytest.mark.parametrize("construct", list(PPT102_CASES))
def test_ppt102_statements(tmp_path, construct):
    source, marker = PPT102_CASES[construct]
    assert_refused(Case(tmp_path, source), (MAT,), "PPT102", marker)


# == PPT103: expressions ===========================================================================
PPT103_CASES = {
    "lambda": ("g = lambda v: v * 2", "lambda"),
    "list_comprehension": ("ys = [x[i] for i in range(3)]", "[x[i]"),
    "set_comprehension": ("ys = {i for i in range(3)}", "{i for"),
    "dict_comprehension": ("ys = {i: x[i] for i in range(3)}", "{i:"),
    "generator": ("ys = max(x[i] for i in range(3))", "x[i] for"),
    "dict": ('ys = {"a": x}', "{"),
    "set": ("ys = {1, 2}", "{"),
    "f_string": ('ys = f"{x.ndim}-d"', 'f"'),
    "walrus": ("ys = x * np.float64(k := 2.0)", "k :="),
    "not_on_array": ("ys = not x", "not x"),
    "and_on_arrays": ("ys = x and y", "x and y"),
    "or_on_arrays": ("ys = x or y", "x or y"),
    "unknown_array_attribute": ("ys = x.flags", "x.flags"),
    "unknown_array_method": ("ys = x.argsort()", "x.argsort"),
    "attribute_of_a_size": ("ys = x.shape[0].bit_length()", "x.shape[0].bit_length"),
}
PPT103_HINTS = {"and_on_arrays": "&", "or_on_arrays": "|", "not_on_array": "logical_not"}


@pytest.mark.parametrize("construct", list(PPT103_CASES))
def test_ppt103_expressions(tmp_path, construct):
    statement, col_marker = PPT103_CASES[construct]
    source = f"""
        import numpy as np

        def f(x, y):
            z = x + y
            {statement}
            return z
        """
    case = Case(tmp_path, source)
    hint = PPT103_HINTS.get(construct)
    assert_refused(case, (VEC, VEC), "PPT103", statement, col_marker, hint=hint)


# == PPT104: calls =================================================================================
PPT104_CASES = {  # (a call PyPTO has no op for is a graph break: these cannot be one)
    "print": ("print(x)", "print(x)", "`pypto ops`"),
    "np_random_shuffle": ("np.random.shuffle(x)", "np.random", "pass them in"),
    "np_unique_all": ("y = np.unique_all(x)", "np.unique_all", "`pypto ops`"),
    "out_argument": ("np.sort(x, out=y)", "np.sort", "`pypto ops`"),
}


@pytest.mark.parametrize("construct", list(PPT104_CASES))
def test_ppt104_calls(tmp_path, construct):
    statement, col_marker, hint = PPT104_CASES[construct]
    source = f"""
        import textwrap

        import numpy as np

        def f(x):
            y = x
            {statement}
            return y * 2
        """
    case = Case(tmp_path, source)
    sq = np.eye(3) + 1.0
    assert_refused(case, (sq,), "PPT104", statement, col_marker, hint=hint)
    if construct == "np_random_shuffle":  # the function as written, not np.shuffle
        assert "`np.random.shuffle`" in str(raised(case.fn, sq))


def test_a_function_of_another_module_raises_as_the_original(tmp_path):
    case = Case(
        tmp_path,
        """
        import textwrap

        def f(x):
            y = textwrap.dedent(x)
            return y
        """,
    )
    # a graph break (ops/host_calls.py) whose sample run raises NumPy's (here Python's)
    # TypeError of these dtypes: raised where the call runs, as the original raises it
    with pytest.raises(TypeError) as want:
        case.fn(VEC)
    err = raised(case.fn, VEC, cls=TypeError)
    assert isinstance(err, ppto.PyptoError) and str(want.value) in str(err)
    assert "textwrap.dedent" in str(err)


def test_ppt104_star_args_of_the_compiled_function(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(*xs):
            return xs[0] * 2
        """,
    )
    assert_refused(case, (VEC,), "PPT104", "def f(*xs)", "*xs")


def test_ppt104_star_args_of_a_helper(tmp_path):
    case = Case(
        tmp_path,
        """
        def _total(*vs):
            return vs[0] + vs[1]

        def f(x):
            return _total(x, x)
        """,
    )
    assert_refused(case, (VEC,), "PPT104", "return _total(x, x)", "_total(x, x)")


# == PPT105: assignment targets ====================================================================
PPT105_CASES = {
    "reshaped_view": ("x.reshape(-1)[0] = 1.0", "x.reshape(-1)[0]"),
    "broadcast_view": ("np.broadcast_to(x, (2, 3, 4))[0] = 1.0", "np.broadcast_to"),
    "temporary": ("np.abs(x)[0] = 1.0", "np.abs(x)[0]"),
    "attribute": ("x.shape = (4, 3)", "x.shape"),
    "augmented_attribute": ("x.real += 1.0", "x.real"),
}


@pytest.mark.parametrize("construct", list(PPT105_CASES))
def test_ppt105_assignment_targets(tmp_path, construct):
    statement, col_marker = PPT105_CASES[construct]
    source = f"""
        import numpy as np

        def f(x):
            {statement}
            return x
        """
    case = Case(tmp_path, source)
    assert_refused(case, (MAT.copy(),), "PPT105", statement, col_marker)


# == PPT106: control flow ==========================================================================
def test_ppt106_while_else(tmp_path):
    case = Case(  # (while loops on run-time conditions compile: tests/parse/test_while.py)
        tmp_path,
        """
        def f(x, n):
            while x.sum() > n:
                x = x * 0.5
            else:
                x = x + 1
            return x
        """,
    )
    assert_refused(case, (VEC, 3), "PPT106", "while")


def test_ppt106_return_inside_a_loop(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, n):
            for i in range(n):
                return x * i
            return x
        """,
    )
    assert_refused(case, (VEC, 3), "PPT106", "return x * i")


@pytest.mark.parametrize(
    ("loop", "iterable"),
    [("for v in [1, 2]:", "[1, 2]"), ("for v in x.shape:", "x.shape")],  # (arrays: rows)
)
def test_ppt106_loop_over_anything_but_range(tmp_path, loop, iterable):
    case = Case(
        tmp_path,
        f"""
        def f(x):
            total = 0.0
            {loop}
                total = total + 1.0
            return total
        """,
    )
    # the caret is under the iterable
    assert_refused(case, (MAT,), "PPT106", loop, iterable, hint="for i in range(")


def test_ppt106_buffer_swapping_in_a_loop(tmp_path):
    case = Case(
        tmp_path,
        """
        import numpy as np

        def f(u, steps):
            v = np.zeros_like(u)
            for _ in range(steps):
                v[1:-1] = 0.5 * (u[:-2] + u[2:])
                u, v = v, u
            return u
        """,
    )
    assert_refused(case, (VEC.copy(), 3), "PPT106", "for _ in", "for", hint="copy back")


# == PPT107: names =================================================================================
def test_ppt107_undefined_name(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x):
            return x * undefined_scale
        """,
    )
    assert_refused(case, (VEC,), "PPT107", "undefined_scale")


def test_ppt107_loop_variable_after_its_loop(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, n):
            for i in range(n):
                x = x + 1.0
            return x[i]
        """,
    )
    assert_refused(case, (VEC, 3), "PPT107", "return x[i]", "i]")


def test_ppt107_name_assigned_in_one_branch_of_a_run_time_if(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, alpha):
            if alpha > 0:
                z = x * alpha
            return z + 1.0
        """,
    )
    assert_refused(case, (VEC, 0.5), "PPT107", "z + 1.0")


# == PPT108: no source =============================================================================
def test_ppt108_function_without_source():
    namespace = {"np": np}
    exec("def f(x):\n    return np.sin(x) * 2\n", namespace)
    err = raised(namespace["f"], VEC)
    assert err.code == "PPT108"
    assert "source" in err.message
    assert "file" in err.hint and "notebook cell" in err.hint
    assert f"hint: {err.hint}" in str(err)
    assert_user_traceback(err)


# == PPT109: shapes that change ====================================================================
def test_ppt109_shape_changes_across_loop_iterations(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, n):
            y = x
            for i in range(n):
                y = y[1:]
                x = x * 2.0
            return y
        """,
    )
    assert_refused(case, (VEC, 2), "PPT109", "y = y[1:]")


def test_ppt109_shape_differs_between_branches(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, alpha):
            if alpha > 0:
                z = x * alpha
            else:
                z = x[1:] * 2.0
            return z
        """,
    )
    assert_refused(case, (VEC, 0.5), "PPT109", "z = x[1:]")


# == PPT110: arguments sharing memory ==============================================================
def test_ppt110_written_argument_shares_memory_with_another(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(a, b):
            a += b
            return a
        """,
    )
    a = np.arange(5.0)
    err = raised(case.fn, a, a)
    assert err.code == "PPT110"
    assert "'a'" in err.message and "'b'" in err.message
    assert "pass separate arrays" in err.hint and f"hint: {err.hint}" in str(err)
    np.testing.assert_array_equal(a, np.arange(5.0))  # nothing was written
    assert_user_traceback(err)
    err = raised(case.fn, a, a[::-1])  # an overlapping view
    assert err.code == "PPT110"
    assert_user_traceback(err)
    compiled = ppto.compile(case.fn)
    assert compiled(a, a.copy()) is a
    np.testing.assert_array_equal(a, np.arange(5.0) * 2)


def test_ppt110_only_written_arguments_count(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(a, b):
            return a + b
        """,
    )
    a = np.arange(5.0)
    np.testing.assert_array_equal(ppto.compile(case.fn)(a, a), a + a)


# == PPT101 / PPT204: indexing by array values =====================================================
def test_ppt101_boolean_mask_indexing(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, i):
            y = x * 2.0
            return x[x[:, 0] > 1.5, i] + 1.0
        """,
    )  # (a mask with integers or slices beside it is a sized read: test_index_arrays.py)
    args = (np.ones((3, 3)), np.array([0, 1, 2]))
    assert_refused(case, args, "PPT101", "x[x[:, 0] > 1.5, i]", hint="np.where")


def test_ppt101_integer_array_indexing(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x):
            y = x * 2.0
            return x[[0, 2]] + 1.0
        """,
    )
    err = raised(case.fn, VEC)
    assert err.code in ("PPT101", "PPT204")
    assert_refused(case, (VEC,), err.code, "x[[0, 2]]")


def test_ppt101_index_from_array_data(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x, k):
            y = x * 2.0
            return x[k[0]] + 1.0
        """,
    )  # (an integer index from array data is a gather: tests/parse/test_gathers.py)
    args = (VEC, np.array([1.0, 2.0]))
    err = raised(case.fn, *args)
    assert err.code in ("PPT101", "PPT204"), f"{err.code}: {err}"
    assert_refused(case, args, err.code, "x[k[0]]", "k[0]")


# == fallback ======================================================================================
def test_fallback_runs_the_original_with_a_warning(tmp_path):
    case = Case(
        tmp_path,
        """
        import numpy as np

        def f(x):
            return np.unique_all(x).values[::-1] * 2.0
        """,
    )
    compiled = ppto.compile(case.fn, fallback=True)
    x = np.array([3.0, 1.0, 2.0])
    with pytest.warns(ppto.PyptoFallbackWarning) as record:
        got = compiled(x)
    np.testing.assert_array_equal(got, case.fn(x))
    assert len(record) == 1
    assert "PPT104" in str(record[0].message) and "np.unique_all" in str(record[0].message)
    assert Path(record[0].filename).resolve() == Path(__file__).resolve()  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second call runs the original without a new warning
        np.testing.assert_array_equal(compiled(x * 2), case.fn(x * 2))
    decorated = ppto.compile(fallback=True)(case.fn)
    with pytest.warns(ppto.PyptoFallbackWarning):
        np.testing.assert_array_equal(decorated(x), case.fn(x))


def test_without_fallback_the_error_is_raised_every_call(tmp_path):
    case = Case(
        tmp_path,
        """
        def f(x):
            while x.sum() > 0:
                x = x - 1
            else:
                x = x + 0
            return x
        """,
    )
    compiled = ppto.compile(case.fn)
    for _ in range(2):
        with pytest.raises(ppto.UnsupportedError) as info:
            compiled(VEC)
        assert info.value.code == "PPT106"
        assert_user_traceback(info.value)
