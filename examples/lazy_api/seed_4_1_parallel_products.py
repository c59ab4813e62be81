"""Design document 4.1: two independent matrix products, then their sum.

The two products do not depend on each other; the passes (a later issue) schedule them on
different compute units. Here the chain runs op by op and is checked against NumPy.
"""

from __future__ import annotations

import numpy as np

import pypto as ppto

A, B, C, D = (ppto.tensor(n) for n in "ABCD")

op1 = ppto.matmul(A, B)
op2 = ppto.matmul(C, D)
final_op = op1 + op2  # the two products are independent


def results(seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    data = {n: rng.standard_normal((64, 64)).astype(dtype) for n in "ABCD"}
    want = data["A"] @ data["B"] + data["C"] @ data["D"]
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    return [("final_op", final_op.run(**data), want, rtol)]


def main():
    from _report import report

    rng = np.random.default_rng(0)
    data = {n: rng.standard_normal((64, 64)).astype(np.float32) for n in "ABCD"}
    report("4.1 independent products", ppto.trace(final_op, **data), results())


if __name__ == "__main__":
    main()
