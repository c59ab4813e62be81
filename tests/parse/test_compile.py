"""@ppto.compile: the cache and its guards, fallback, the Function IR, run-time checks."""

import numpy as np
import pytest
from compile_cases import (
    by_size,
    decorated,
    falls_back,
    first_row,
    jacobi,
    make_closure,
    scaled,
    shifted,
    triangular,
)
from helpers import assert_same

import pypto as ppto
from pypto.function import Block, Function, Loop, verify_function


def test_forms_of_compile_keep_the_function_identity():
    assert decorated.__name__ == "decorated" and decorated.__doc__ == "A decorated function."
    assert isinstance(decorated, ppto.CompiledFunction)
    assert isinstance(ppto.compile(scaled), ppto.CompiledFunction)
    x = np.arange(4.0, dtype=np.float32)
    assert_same(decorated(x), x * 2.0)
    assert_same(decorated(x, y=np.float64(3)), x * np.float64(3))


def test_sizes_reuse_a_compilation_and_broken_guards_recompile():
    f = ppto.compile(jacobi)
    for n in (10, 40, 3, 2):
        a, b = np.random.rand(n), np.random.rand(n)
        a2, b2 = a.copy(), b.copy()
        jacobi(a, b, 3)
        assert f(a2, b2, 3) is None
        np.testing.assert_allclose(a2, a)
        np.testing.assert_allclose(b2, b)
    assert len(f.history) == 1 and f.history[0].endswith("first call")
    f(np.random.rand(6).astype(np.float32), np.random.rand(6).astype(np.float32), 1)
    assert len(f.history) == 2 and "new argument types" in f.history[1]
    with pytest.raises(ppto.ShapeError):  # A.0 == B.0 is guarded: retraced, and refused
        f(np.ones(5), np.ones(6), 1)
    g = ppto.compile(by_size)
    assert_same(g(np.ones(10)), np.full(10, 2.0))
    assert_same(g(np.ones(40)), np.full(40, 2.0))
    assert_same(g(np.ones(3)), np.ones(3) + 1)  # 3 > 4 is false: the other branch
    assert len(g.history) == 2 and "guards" in g.history[1] and "x.0" in g.history[1]


def test_the_ir_prints_loops_blocks_writebacks_and_guards():
    f = ppto.compile(jacobi)
    fn_ir = f.ir(np.ones(8), np.ones(8), 2)
    assert isinstance(fn_ir, Function) and verify_function(fn_ir) is fn_ir
    text = str(fn_ir)
    assert text.startswith("def jacobi(A:f64[A.0], B:f64[B.0], tsteps:int):")
    assert "for _ in range(0, tsteps, 1):" in text
    assert "store[index=(1:B.0 - 1,)] B" in text
    assert "A[...] = A  # written back into the argument" in text
    assert "where " in text and "A.0 - 2 >= 0" in text
    (loop,) = fn_ir.body
    assert isinstance(loop, Loop) and isinstance(loop.body[0], Block)


def test_verify_function_catches_a_block_that_lies_about_its_host_variables():
    import dataclasses

    f = ppto.compile(scaled)
    fn_ir = f.ir(np.ones(3))
    (block,) = fn_ir.body
    wrong = dataclasses.replace(
        block.outputs[0],
        type=block.inputs[0].type.__class__(np.dtype("f4"), block.outputs[0].type.shape),
    )
    bad = dataclasses.replace(fn_ir, body=(dataclasses.replace(block, outputs=(wrong,)),))
    with pytest.raises(ppto.InternalError, match="host variables"):
        verify_function(bad)


def test_an_index_the_compiler_could_not_prove_is_checked_at_run_time():
    f = ppto.compile(shifted)
    x = np.arange(6.0)
    assert_same(f(x, 5), shifted(x, 5))
    with pytest.raises(IndexError):
        shifted(x, 6)
    # NumPy's exception class, its message and the user's line
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6") as e:
        f(x, 6)
    assert isinstance(e.value, ppto.ExecutionError) and "out[i] = x[i + 1]" in str(e.value)


def test_fallback_runs_the_original_with_a_warning():
    x = np.array([2.0, 3.0])
    with pytest.warns(ppto.PyptoFallbackWarning, match="while ... else"):
        got = falls_back(x)
    assert_same(got, np.array([-1.0, 0.0]))
    assert_same(falls_back(x), np.array([-1.0, 0.0]))  # decided once per specialization
    with pytest.raises(ppto.UnsupportedError, match="`while ... else`"):
        ppto.compile(falls_back.__wrapped__)(x)


def test_closures_and_module_constants_are_read_at_compile_time():
    times3 = ppto.compile(make_closure(3.0))
    assert_same(times3(np.ones(2, np.float32)), np.full(2, 4.0, np.float32))
    assert_same(ppto.compile(scaled)(np.ones(2)), np.full(2, 3.0))


def test_arguments_that_cannot_be_specialized_are_refused():
    f = ppto.compile(scaled)
    with pytest.raises(ppto.BindingError, match="list"):
        f([1.0, 2.0])
    with pytest.raises(ppto.BindingError, match="not supported"):
        f(np.array(["a"]))
    with pytest.raises(TypeError):  # Python's own message for a wrong call
        f()


def test_scalars_returned_as_numpy_returns_them():
    f = ppto.compile(first_row)
    x = np.arange(6.0).reshape(2, 3)
    assert_same(f(x), first_row(x))
    v = np.arange(3.0)
    got, want = f(v), first_row(v)
    assert type(got) is type(want) is np.float64 and got == want
    g = ppto.compile(triangular)
    A = np.random.rand(5, 5)
    got, want = g(A), triangular(A)
    assert type(got) is type(want) and np.isclose(got, want)


def test_read_only_arguments_fail_as_in_numpy():
    f = ppto.compile(jacobi)
    a, b = np.ones(5), np.ones(5)
    b.flags.writeable = False
    with pytest.raises(ValueError):
        jacobi(a.copy(), b, 1)
    with pytest.raises(ValueError):
        f(a, b, 1)


def test_functions_from_a_notebook_cell_compile(tmp_path):
    """A cell's source is in linecache (as IPython puts it), not in a file."""
    import linecache

    name = "<ipython-input-7-pypto>"
    text = "import numpy as np\n\ndef cell_fn(x):\n    return np.exp(x) - 1\n"
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    namespace = {}
    exec(compile(text, name, "exec"), namespace)
    f = ppto.compile(namespace["cell_fn"])
    assert_same(f(np.arange(3.0)), np.exp(np.arange(3.0)) - 1)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_conditions_on_loop_variables_are_decided_at_run_time(n):
    from compile_cases import boundary, prefix, skip_diagonal

    x = np.random.rand(n)
    for fn in (boundary, prefix):
        assert_same(ppto.compile(fn)(x), fn(x), rtol=1e-12)
    A = np.random.rand(n, n)
    got, want = ppto.compile(skip_diagonal)(A), skip_diagonal(A)
    # s = 0.0 widens to NumPy's float64 (a subclass of float) even where the loop adds nothing
    assert isinstance(got, type(want)) and np.isclose(got, want)
    fn_ir = ppto.compile(prefix).ir(x)
    if n > 1:  # for n == 1, i can only be 0: i > 0 is decided when compiling
        assert "greater_equal[weak=True] i - 1 0" in str(fn_ir)  # i > 0, decided by the run
