"""Design document 5.1: a diffusion term from gradients (computational fluid dynamics).

``ppto.gradient`` follows ``np.gradient``: central differences inside, one-sided at the edges.
"""

from __future__ import annotations

import numpy as np

import pypto as ppto

u = ppto.tensor("u")
kappa = ppto.tensor("kappa")

# as written in the design document
# fmt: off
diffusion_op = (
    ppto.gradient(u, axis=0) * ppto.gradient(kappa, axis=0)
    + ppto.gradient(u, axis=1) * ppto.gradient(kappa, axis=1)
)
# fmt: on


def numpy_version(u, kappa):
    return np.gradient(u, axis=0) * np.gradient(kappa, axis=0) + np.gradient(
        u, axis=1
    ) * np.gradient(kappa, axis=1)


def results(seed: int = 0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    grid = np.linspace(0, 1, 96, dtype=dtype)
    data_u = (np.sin(4 * grid)[:, None] * np.cos(3 * grid)[None, :]).astype(dtype)
    data_k = (1 + 0.1 * rng.random((96, 96))).astype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    got = diffusion_op.run(u=data_u, kappa=data_k)
    return [("diffusion_op", got, numpy_version(data_u, data_k), rtol)]


def main():
    from _report import report

    report("5.1 diffusion with gradient", None, results())


if __name__ == "__main__":
    main()
