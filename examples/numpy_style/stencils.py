"""Stencils with time loops, most writing into their argument arrays (and returning nothing),
and gradient-based diffusion."""

import numpy as np


def jacobi_1d(tsteps, A, B):
    """Jacobi iteration in 1-D (PolyBench), in place."""
    for _ in range(tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def jacobi_2d(tsteps, A, B):
    """Jacobi iteration in 2-D (PolyBench), in place."""
    for _ in range(1, tsteps):
        B[1:-1, 1:-1] = 0.2 * (
            A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1]
        )
        A[1:-1, 1:-1] = 0.2 * (
            B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1]
        )


def heat_3d(tsteps, A, B):
    """Explicit heat equation in 3-D (PolyBench), in place."""
    for _ in range(1, tsteps):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1]
        )
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1]
        )


def fdtd_2d(tmax, ex, ey, hz, fict):
    """2-D finite-difference time-domain leapfrog (PolyBench), in place."""
    for t in range(tmax):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def laplacian_smooth(u, steps, alpha=0.1):
    """Smooth u in place with `steps` explicit steps of the 5-point Laplacian; returns u."""
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] += alpha * lap
    return u


def wave_1d(u_prev, u, c2, steps):
    """Leapfrog for the 1-D wave equation with fixed ends; returns the last two time levels."""
    n = u.shape[0]
    for _ in range(steps):
        u_next = u.copy()
        u_next[1 : n - 1] = 2 * u[1:-1] - u_prev[1:-1] + c2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u_prev = u
        u = u_next
    return u_prev, u


def gradient_diffusion(u, kappa):
    """The cross term grad(u) . grad(kappa) of a variable-coefficient diffusion operator."""
    return np.gradient(u, axis=0) * np.gradient(kappa, axis=0) + np.gradient(
        u, axis=1
    ) * np.gradient(kappa, axis=1)


def gradient_diffusion_spaced(u, kappa, dx, dy):
    """The same on a grid with spacings dx and dy."""
    ux = np.gradient(u, dx, axis=0)
    uy = np.gradient(u, dy, axis=1)
    return ux * np.gradient(kappa, dx, axis=0) + uy * np.gradient(kappa, dy, axis=1)


def upwind_advection(u, c, steps):
    """First-order upwind advection with a fixed inflow value: np.diff for the fluxes,
    np.hstack to put the boundary back."""
    for _ in range(steps):
        u = np.hstack([u[:1], u[1:] - c * np.diff(u)])
    return u


def stacked_summaries(a, b):
    """Row means of both fields stacked, their row sums side by side, the larger of the two
    at each point (np.vstack, np.column_stack, np.dstack)."""
    rows = np.vstack([a, b]).mean(axis=0)
    cols = np.column_stack([a.sum(axis=1), b.sum(axis=1)])
    return rows, cols, np.dstack([a, b]).max(axis=2)


def _pick(size, small, large):
    return small if size == "small" else large


def _jacobi_1d_inputs(size, dtype, rng):
    n, tsteps = _pick(size, (9, 3), (300, 40))
    return (
        tsteps,
        rng.uniform(1.0, 2.0, n).astype(dtype),
        rng.uniform(1.0, 2.0, n).astype(dtype),
    )


def _jacobi_2d_inputs(size, dtype, rng):
    n, tsteps = _pick(size, (7, 4), (120, 20))
    return (
        tsteps,
        rng.uniform(1.0, 2.0, (n, n)).astype(dtype),
        rng.uniform(1.0, 2.0, (n, n)).astype(dtype),
    )


def _heat_3d_inputs(size, dtype, rng):
    n, tsteps = _pick(size, (6, 4), (40, 10))
    return (
        tsteps,
        rng.uniform(1.0, 2.0, (n, n, n)).astype(dtype),
        rng.uniform(1.0, 2.0, (n, n, n)).astype(dtype),
    )


def _fdtd_inputs(size, dtype, rng):
    nx, ny, tmax = _pick(size, (6, 7, 3), (100, 120, 20))
    return (
        tmax,
        rng.uniform(-1.0, 1.0, (nx, ny)).astype(dtype),
        rng.uniform(-1.0, 1.0, (nx, ny)).astype(dtype),
        rng.uniform(-1.0, 1.0, (nx, ny)).astype(dtype),
        rng.uniform(-1.0, 1.0, tmax).astype(dtype),
    )


def _smooth_inputs(size, dtype, rng):
    shape, steps = _pick(size, ((7, 8), 3), ((150, 200), 25))
    return rng.uniform(1.0, 2.0, shape).astype(dtype), steps


def _wave_inputs(size, dtype, rng):
    # An offset of 2 keeps the displacements positive (|perturbation| stays below 1).
    n, steps = _pick(size, (9, 4), (300, 60))
    u0 = 2.0 + 0.3 * np.sin(np.linspace(0.0, np.pi, n))
    return (u0.astype(dtype), (u0 * 1.01).astype(dtype), 0.25, steps)


def _increasing_field(shape, rng):
    # Increasing along both axes: every gradient is positive, the products do not cancel.
    steps = rng.uniform(0.5, 1.5, shape)
    return np.cumsum(np.cumsum(steps, axis=0), axis=1) / (shape[0] * shape[1])


def _gradient_inputs(size, dtype, rng):
    shape = _pick(size, (6, 7), (150, 200))
    return (
        _increasing_field(shape, rng).astype(dtype),
        (1.0 + _increasing_field(shape, rng)).astype(dtype),
    )


def _gradient_spaced_inputs(size, dtype, rng):
    shape = _pick(size, (6, 7), (150, 200))
    u, kappa = _gradient_inputs(size, dtype, rng)
    return u, kappa, 1.0 / (shape[0] - 1), 0.5 / (shape[1] - 1)


def _upwind_inputs(size, dtype, rng):
    n, steps = _pick(size, (9, 4), (400, 50))
    return rng.uniform(1.0, 2.0, n).astype(dtype), 0.4, steps


def _stacked_inputs(size, dtype, rng):
    shape = _pick(size, (5, 6), (200, 150))
    return rng.uniform(1.0, 2.0, shape).astype(dtype), rng.uniform(1.0, 2.0, shape).astype(dtype)


CASES = [
    (jacobi_1d, _jacobi_1d_inputs),
    (jacobi_2d, _jacobi_2d_inputs),
    (heat_3d, _heat_3d_inputs),
    (fdtd_2d, _fdtd_inputs),
    (laplacian_smooth, _smooth_inputs),
    (wave_1d, _wave_inputs),
    (gradient_diffusion, _gradient_inputs),
    (gradient_diffusion_spaced, _gradient_spaced_inputs),
    (upwind_advection, _upwind_inputs),
    (stacked_summaries, _stacked_inputs),
]
