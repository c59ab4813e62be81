"""Weather and climate stencils: COSMO's horizontal diffusion and vertical advection (as NPBench
ports them), a staggered-grid flux divergence, periodic upwind advection and a column integral.

Several take arrays whose sizes are related: a halo of 2 on each side (hdiff), one more level of
vertical faces than of cells (vadv), one more face than cells along each axis (flux_divergence).
"""

import numpy as np

BET_M = 0.5
BET_P = 0.5
GRAVITY = 9.80665


def hdiff(in_field, out_field, coeff):
    """Fourth-order horizontal diffusion with flux limiting (COSMO, via NPBench).

    in_field is (I + 4, J + 4, K): the (I, J, K) domain with a halo of 2; writes out_field."""
    I = out_field.shape[0]  # noqa: E741
    J = out_field.shape[1]
    lap_field = 4.0 * in_field[1 : I + 3, 1 : J + 3, :] - (
        in_field[2 : I + 4, 1 : J + 3, :]
        + in_field[0 : I + 2, 1 : J + 3, :]
        + in_field[1 : I + 3, 2 : J + 4, :]
        + in_field[1 : I + 3, 0 : J + 2, :]
    )

    res = lap_field[1:, 1 : J + 1, :] - lap_field[:-1, 1 : J + 1, :]
    flx_field = np.where(
        (res * (in_field[2 : I + 3, 2 : J + 2, :] - in_field[1 : I + 2, 2 : J + 2, :])) > 0,
        0,
        res,
    )

    res = lap_field[1 : I + 1, 1:, :] - lap_field[1 : I + 1, :-1, :]
    fly_field = np.where(
        (res * (in_field[2 : I + 2, 2 : J + 3, :] - in_field[2 : I + 2, 1 : J + 2, :])) > 0,
        0,
        res,
    )

    out_field[:, :, :] = in_field[2 : I + 2, 2 : J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :]
    )


def vadv(utens_stage, u_stage, wcon, u_pos, utens, dtr_stage):
    """Implicit vertical advection: a Thomas sweep down each column and back up (COSMO, via
    NPBench). wcon is (I + 1, J, K), staggered in I; writes utens_stage."""
    I, J, K = utens_stage.shape[0], utens_stage.shape[1], utens_stage.shape[2]  # noqa: E741
    ccol = np.empty((I, J, K), dtype=utens_stage.dtype)
    dcol = np.empty((I, J, K), dtype=utens_stage.dtype)
    data_col = np.empty((I, J), dtype=utens_stage.dtype)

    for k in range(1):
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        cs = gcv * BET_M

        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - ccol[:, :, k]

        # update the d column
        correction_term = -cs * (u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = (
            dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] + correction_term
        )

        # Thomas forward
        divided = 1.0 / bcol
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = dcol[:, :, k] * divided

    for k in range(1, K - 1):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])

        as_ = gav * BET_M
        cs = gcv * BET_M

        acol = gav * BET_P
        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - acol - ccol[:, :, k]

        correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k]) - cs * (
            u_stage[:, :, k + 1] - u_stage[:, :, k]
        )
        dcol[:, :, k] = (
            dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] + correction_term
        )

        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided

    for k in range(K - 1, K):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        as_ = gav * BET_M
        acol = gav * BET_P
        bcol = dtr_stage - acol

        correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k])
        dcol[:, :, k] = (
            dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] + correction_term
        )

        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided

    for k in range(K - 1, K - 2, -1):
        datacol = dcol[:, :, k]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])

    for k in range(K - 2, -1, -1):
        datacol = dcol[:, :, k] - ccol[:, :, k] * data_col[:, :]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])


def flux_divergence(u, v, dx, dy):
    """Divergence of face-centred velocities on an Arakawa C grid: u lives on the (n + 1, m)
    x-faces, v on the (n, m + 1) y-faces; the result on the (n, m) cells."""
    return (u[1:, :] - u[:-1, :]) / dx + (v[:, 1:] - v[:, :-1]) / dy


def upwind_advection(q, c, steps):
    """First-order upwind advection of q on a periodic 1-D grid, Courant numbers c per cell."""
    for _ in range(steps):
        q_left = np.concatenate((q[-1:], q[:-1]))
        q_right = np.concatenate((q[1:], q[:1]))
        q = q - np.where(c > 0, c * (q - q_left), c * (q_right - q))
    return q


def column_integrate(q, dp):
    """Mass-weighted vertical integral of q (lat, lon, level) over pressure thicknesses dp."""
    return np.sum(q * dp, axis=2) / GRAVITY


def _hdiff_args(dtype, rng):
    I, J, K = rng.integers(4, 24, size=3)  # noqa: E741
    in_field = rng.standard_normal((I + 4, J + 4, K)).astype(dtype)
    out_field = np.zeros((I, J, K), dtype)
    coeff = (0.025 * rng.random((I, J, K))).astype(dtype)
    return in_field, out_field, coeff


def _vadv_args(dtype, rng):
    I, J, K = rng.integers(4, 16, size=3)  # noqa: E741
    utens_stage = rng.standard_normal((I, J, K)).astype(dtype)
    u_stage = rng.standard_normal((I, J, K)).astype(dtype)
    wcon = (0.1 * rng.standard_normal((I + 1, J, K))).astype(dtype)
    u_pos = rng.standard_normal((I, J, K)).astype(dtype)
    utens = rng.standard_normal((I, J, K)).astype(dtype)
    return utens_stage, u_stage, wcon, u_pos, utens, 3.0 / 20.0


def _flux_args(dtype, rng):
    n, m = rng.integers(4, 40, size=2)
    u = rng.standard_normal((n + 1, m)).astype(dtype)
    v = rng.standard_normal((n, m + 1)).astype(dtype)
    return u, v, 0.5, 0.25


def _upwind_args(dtype, rng):
    n = int(rng.integers(8, 40))
    q = np.exp(-(np.linspace(-3.0, 3.0, n) ** 2)).astype(dtype)
    c = rng.uniform(-0.4, 0.4, n).astype(dtype)
    return q, c, 5


def _column_args(dtype, rng):
    lat, lon, lev = rng.integers(4, 24, size=3)
    q = rng.random((lat, lon, lev)).astype(dtype)
    dp = rng.uniform(500.0, 5000.0, lev).astype(dtype)
    return q, dp


CALLS = [
    (hdiff, _hdiff_args),
    (vadv, _vadv_args),
    (flux_divergence, _flux_args),
    (upwind_advection, _upwind_args),
    (column_integrate, _column_args),
]
