"""Design document 3.2: composition and deferred execution.

Nothing is computed while the chain is built; ``run`` binds the inputs, traces the chain into a
typed graph (sizes stay symbolic: ``x.0`` is the size of x's axis 0), verifies it, and computes.
"""

from __future__ import annotations

import numpy as np

import pypto as ppto

x = ppto.tensor("x")
y = ppto.tensor("y")

# as written in the design document
# fmt: off
op_chain = (
    ppto.sin(ppto.reduce_sum(x, axis=1))
    * ppto.exp(ppto.transpose(y, (1, 0)))
)
# fmt: on


def numpy_version(data_x, data_y):
    return np.sin(np.sum(data_x, axis=1)) * np.exp(np.transpose(data_y, (1, 0)))


def inputs(seed: int = 0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((256, 64)).astype(dtype),
        "y": rng.standard_normal((256, 128)).astype(dtype) * 0.1,
    }


def results(seed: int = 0, dtype=np.float32):
    data = inputs(seed, dtype)
    # optimized and computed only now
    result = op_chain.run(x=data["x"], y=data["y"])
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    return [("op_chain", result, numpy_version(data["x"], data["y"]), rtol)]


def main():
    from _report import report

    data = inputs()
    print("the chain as built:", op_chain)
    report("3.2 composition and deferred execution", ppto.trace(op_chain, **data), results())


if __name__ == "__main__":
    main()
