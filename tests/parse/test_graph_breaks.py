"""Graph breaks (ops/host_calls.py): calls PyPTO has no op for run as written, the code around
them compiled; against NumPy on the decorator path, in pypto transpile's module, on the CUDA
target (emulator), with explain naming each break; and the calls that cannot be one."""

import sys
from pathlib import Path

import graph_break_helpers as helpers
import graph_break_programs as programs
import numpy as np
import pytest
from helpers import assert_same, assert_same_result, cuda_emulator, run_transpiled

import pypto as ppto
from pypto.dtypes import SUPPORTED

HERE = Path(__file__).resolve().parent
COVERED = {"host_call"}  # (tests/test_registry.py)
DTYPES = [dt.name for dt in SUPPORTED]  # every dtype PyPTO supports


def sorted_and_spread(x):
    """Graph breaks between fused code, in every dtype (np.ptp of bools: NumPy's TypeError)."""
    s = np.sort(x, axis=-1)[::-1]
    return s, np.argsort(x, axis=0, kind="stable") * 2, np.ptp(x.T, axis=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_graph_break_in_every_dtype(dtype):
    rng = np.random.default_rng(7)
    compiled = ppto.compile(sorted_and_spread)
    for shape in ((4, 5), (1, 3), (6, 1)):
        x = (rng.standard_normal(shape) * 50).astype(dtype)
        if dtype == "bool":
            with pytest.raises(TypeError) as want:
                sorted_and_spread(x)
            with pytest.raises(TypeError) as got:
                compiled(x)
            assert isinstance(got.value, ppto.PyptoError)
            assert str(want.value) in str(got.value)
            continue
        with np.errstate(all="ignore"):
            want = sorted_and_spread(x)
            got = compiled(x)
        for g, w in zip(got, want):
            assert_same(g, w)


def _inputs(name, rng, dtype, n):
    """Arguments for program ``name`` with sizes around ``n`` (well conditioned)."""

    def a(*shape):
        return rng.standard_normal(shape).astype(dtype)

    return {
        "gp_posterior_mean": lambda: (a(n, 2), a(n), a(n + 3, 2), 0.7),
        "mahalanobis": lambda: (a(4 * n, 3),),
        "equalize": lambda: (rng.uniform(0, 1, (n, n + 1)).astype(dtype),),
        "centered_by_median": lambda: (a(n, n + 2),),
        "ranks": lambda: (a(n, 3),),
        "top3_softmax": lambda: (a(n, n + 3),),
        "power_spectrum": lambda: (a(3, 2 * n), np.hanning(2 * n).astype(dtype)),
        "logdet": lambda: (a(n, n + 1),),
        "clip_to_percentiles": lambda: (a(n, 4),),
        "bilinear": lambda: (a(n, 3), a(3, 4), a(n, 4)),
        "one_hot_argmax": lambda: (a(n, 5),),
        "least_squares": lambda: (a(3 * n, 3), a(3 * n)),
        "smoothed_energy": lambda: (a(n, 7),),
        "norm_ratio": lambda: (a(n, 3),),
    }[name]()


NAMES = [
    "gp_posterior_mean",
    "mahalanobis",
    "equalize",
    "centered_by_median",
    "ranks",
    "top3_softmax",
    "power_spectrum",
    "logdet",
    "clip_to_percentiles",
    "bilinear",
    "one_hot_argmax",
    "least_squares",
    "smoothed_energy",
    "norm_ratio",
]
RTOL = {"float32": 2e-3, "float64": 1e-9}


def _same(got, want, dtype):
    assert_same_result(got, want, lambda _: RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_programs_match_numpy(name, dtype):
    fn = getattr(programs, name)
    compiled = ppto.compile(fn)
    rng = np.random.default_rng(len(name))
    for n in (5, 8):  # two sizes: the compiled program is reused for the second
        args = _inputs(name, rng, dtype, n)
        _same(compiled(*args), fn(*args), dtype)


# programs whose calls became native ops (np.einsum, np.argmax, np.linalg.norm): no break left
NATIVE_NOW = {"bilinear", "one_hot_argmax", "norm_ratio"}


@pytest.mark.parametrize("name", NAMES)
def test_explain_names_each_break_with_its_line(name):
    fn = getattr(programs, name)
    text = str(ppto.explain(fn, *_inputs(name, np.random.default_rng(0), "float64", 6)))
    breaks = [line for line in text.splitlines() if line.startswith("graph break at")]
    source = Path(programs.__file__).read_text().splitlines()
    assert bool(breaks) == (name not in NATIVE_NOW), breaks
    for line in breaks:
        where = line.split()[3]  # graph_break_programs.py:LINE
        lineno = int(where.split(":")[1])
        called = line.split("`")[1]  # the function as the source writes it
        assert called in source[lineno - 1], (line, source[lineno - 1])
        assert "runs as NumPy's own call" in line


def test_a_dtype_class_as_a_keyword_of_a_break():
    """(review: ``dtype=np.float32`` came out as ``<class 'numpy.float32'>`` in the code)"""
    x = np.random.default_rng(4).standard_normal((5, 3))
    x[1, 2] = np.nan
    _same(ppto.compile(programs.nanmean_f32)(x), programs.nanmean_f32(x), "float32")


def test_the_code_around_a_break_is_fused():
    x = np.random.default_rng(1).standard_normal((6, 9))
    plans = ppto.explain(programs.top3_softmax, x).plans
    kernels = [k for _, p in plans for k in p.kernels]
    assert [k.kind for k in kernels].count("custom") == 1  # the sort
    assert len(kernels) <= 3  # the sort, then the softmax's kernels


def test_a_tuple_result_is_one_equation_per_item_used():
    x = np.random.default_rng(2).uniform(size=(5, 6))
    text = str(ppto.explain(programs.equalize, x))
    assert text.count("`np.histogram`") == 2  # counts and edges
    assert text.count("`np.interp`") == 1


def test_the_transpiled_module_runs_without_pypto(tmp_path):
    sigs = ["mahalanobis(f64[n,3])", "top3_softmax(f64[n,m])", "norm_ratio(f32[n,k])"]
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((12, 3)), rng.standard_normal((4, 6))
    Z = rng.standard_normal((5, 2)).astype(np.float32)
    calls = "(m.mahalanobis(args[0]), m.top3_softmax(args[1]), m.norm_ratio(args[2]))"
    got, text = run_transpiled(tmp_path, HERE / "graph_break_programs.py", sigs, calls, (X, Y, Z))
    assert "_call((np.linalg.inv, 'np.linalg.inv'" in text
    want = (programs.mahalanobis(X), programs.top3_softmax(Y), programs.norm_ratio(Z))
    for g, w in zip(got, want):
        assert_same(g, w, rtol=1e-5 if w.dtype == np.float32 else 1e-12)


# -- the CUDA target on the CPU emulator ---------------------------------------------------------
_emu = cuda_emulator("graph_breaks_cuda_emu")
gxx, nvrtc_ok, tools = _emu.gxx, _emu.nvrtc_ok, _emu.tools


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["gp_posterior_mean", "mahalanobis", "top3_softmax", "logdet"])
def test_on_the_cuda_target(name, dtype):
    """CuPy's function of the same name (the stand-in's are NumPy's), on device arrays."""
    from cupy_backend import make_cupy, to_host

    fn = getattr(programs, name)
    args = _inputs(name, np.random.default_rng(4), dtype, 6)
    cp = make_cupy(order="random", seed=4)
    dev = [cp.device(a) if isinstance(a, np.ndarray) else a for a in args]
    got = ppto.compile(fn)(*dev)
    assert cp.launches  # the code around the break ran as CUDA kernels
    assert_same(to_host(got), fn(*args), rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.mark.usefixtures("tools")
def test_on_the_cuda_target_without_a_cupy_function_the_call_runs_on_the_host():
    from cupy_backend import make_cupy, to_host

    x = np.random.default_rng(5).standard_normal((4, 7))
    cp = make_cupy(order="random", seed=4)
    got = ppto.compile(programs.smoothed_energy)(cp.device(x))
    assert_same(to_host(got), programs.smoothed_energy(x), rtol=1e-12)
    text = str(ppto.explain(programs.smoothed_energy, cp.device(x)))
    assert "a device-to-host round trip" in text


# -- what cannot be a graph break ------------------------------------------------------------------
def _compiled(source, tmp_path, name="f"):
    path = tmp_path / "case_mod.py"
    path.write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib

        sys.modules.pop("case_mod", None)
        module = importlib.import_module("case_mod")
    finally:
        sys.path.remove(str(tmp_path))
    return getattr(module, name)


def test_a_result_whose_size_depends_on_the_values_is_an_error_where_it_runs():
    def f(x):
        return helpers.positives(x * 1.0) + 1

    with pytest.raises(ppto.PyptoError, match=r"helpers.positives.*returned float64\[4\]"):
        ppto.compile(f)(np.linspace(-1, 1, 9))


@pytest.mark.parametrize(
    "call, why",
    [
        ("helpers.zero_diagonal(x * 2)", "writes into an argument"),
        ("np.fill_diagonal(x, 0.0)", "writes into an argument"),
        ("np.sort(x, out=x)", "writes into an argument"),
        ("np.random.permutation(x)", "draws random numbers"),
        ("np.unique_all(x)", "depends on the values"),
        ("np.unique_inverse(x)", "depends on the values"),
        ("np.hanning(x.shape[0])", "a size known only at run time"),
        ("print(x)", "not a function on arrays"),
    ],
)
def test_calls_that_cannot_be_graph_breaks_are_refused_at_the_call(call, why, tmp_path):
    source = "import graph_break_helpers as helpers\nimport numpy as np\n\n\ndef f(x):\n"
    f = _compiled(source + f"    return {call}\n", tmp_path)
    with pytest.raises(ppto.UnsupportedError) as info:
        ppto.compile(f)(np.ones((3, 3)))
    assert info.value.code == "PPT104"
    assert why in str(info.value)


def test_np_asarray_of_an_array_is_the_array_itself():
    def f(x):
        y = np.asarray(x)
        y[0] = 5.0  # NumPy writes the argument too
        return np.asarray(y, dtype=np.float32)

    x, expect_x = np.zeros((2, 3)), np.zeros((2, 3))
    expect = f(expect_x)
    assert_same(ppto.compile(f)(x), expect)
    assert_same(x, expect_x)


def test_a_call_returning_a_view_of_its_argument_is_refused():
    def f(x):
        y = np.atleast_3d(x)
        return y * 2

    with pytest.raises(ppto.UnsupportedError, match="returns a view of its argument"):
        ppto.compile(f)(np.ones((2, 3)))


def test_the_host_call_op_is_not_for_users():
    with pytest.raises(ppto.ArgumentError, match="has no op for"):
        ppto.host_call(ppto.tensor("x"))


def sorted_by_argsort(A):
    return np.take_along_axis(A, np.argsort(A, axis=1), axis=1) * 2


@pytest.mark.usefixtures("tools")
def test_index_taking_calls_get_valid_sample_indices():
    """(review: np.take_along_axis was refused on the CUDA target, its sample indices out of
    bounds; integer samples are zeros where the call rejects them)"""
    from cupy_backend import make_cupy, to_host

    A = np.random.default_rng(10).standard_normal((3, 4))
    assert_same(ppto.compile(sorted_by_argsort)(A), sorted_by_argsort(A))
    cp = make_cupy()
    assert_same(to_host(ppto.compile(sorted_by_argsort)(cp.device(A))), sorted_by_argsort(A))
