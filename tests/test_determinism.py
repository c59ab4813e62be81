"""Same inputs, same bytes: results do not depend on thread timing.

Each workload runs 20 times while a second thread keeps a core busy with NumPy (so the pool's
workers take blocks in other orders from run to run); every result must be bit-identical.
Small chunk budgets (conftest.py) make every kernel run in many blocks."""

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import pypto as ppto

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "lazy_api"))


def jacobi(A, B, steps):
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A.sum()


def epilogue(a, b, c):
    return np.maximum(a @ b + c, 0.0).sum(axis=0), np.cumsum(c, axis=0)


def _workloads():
    import seed_5_2_attention as seed

    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 96, seed.head_dim)).astype(np.float32) for _ in range(3))
    x = rng.standard_normal((512, 96)).astype(np.float32)
    a, b = rng.standard_normal((64, 48)), rng.standard_normal((48, 40))
    c = rng.standard_normal((64, 40))
    t = ppto.tensor("x")
    softmax, colsum = ppto.softmax(t, axis=-1), ppto.sum(ppto.sin(t), axis=0)
    line = rng.standard_normal(4096)
    jac, epi = ppto.compile(jacobi), ppto.compile(epilogue)
    return {
        "attention float32": lambda: seed.attention_op.run(Q=q, K=k, V=v),
        "softmax": lambda: softmax.run(x=x),
        "column sum": lambda: colsum.run(x=x),
        "jacobi": lambda: jac(line.copy(), line.copy(), 5),
        "product epilogue": lambda: epi(a, b, c),
    }


def _bytes(result):
    if isinstance(result, tuple):
        return b"".join(_bytes(r) for r in result)
    return np.asarray(result).tobytes()


@pytest.fixture(scope="module")
def busy():
    stop = threading.Event()

    def work():
        m = np.random.default_rng(0).standard_normal((160, 160))
        while not stop.is_set():
            m @ m

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()


@pytest.mark.parametrize("name", list(_workloads()))
def test_twenty_calls_give_identical_bytes(busy, name):
    run = _workloads()[name]
    first = _bytes(run())
    for _ in range(19):
        assert _bytes(run()) == first
