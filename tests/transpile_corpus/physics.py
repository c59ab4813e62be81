"""Small physics: direct-sum N-body accelerations by broadcasting (softened, the softening a
NumPy scalar), a kick-drift-kick leapfrog that updates positions and velocities in place, a
finite-volume continuity step on a staggered 1-D grid (n cells, n + 1 faces) and the Thomas
algorithm for a tridiagonal system (sub- and super-diagonals of n - 1)."""

import numpy as np


def nbody_accel(pos, mass, G, softening):
    """Accelerations of n bodies (pos is (n, 3)) from all the others."""
    dx = pos[None, :, :] - pos[:, None, :]
    r2 = np.sum(dx * dx, axis=-1) + softening**2
    inv_r3 = r2**-1.5
    return G * np.sum(dx * (inv_r3 * mass[None, :])[:, :, None], axis=1)


def _accel(pos, mass):
    dx = pos[None, :, :] - pos[:, None, :]
    inv_r3 = (np.sum(dx * dx, axis=-1) + 0.01) ** -1.5
    return np.sum(dx * (inv_r3 * mass[None, :])[:, :, None], axis=1)


def leapfrog(pos, vel, mass, dt, steps):
    """Kick-drift-kick integration for `steps` steps, in place on pos and vel."""
    acc = _accel(pos, mass)
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = _accel(pos, mass)
        vel += 0.5 * dt * acc


def continuity_step(h, u, dt, dx):
    """dh/dt + d(hu)/dx = 0 with centred face depths: h on the n cells, u on the n + 1 faces
    (the end faces take the end cells' depth)."""
    h_face = np.concatenate((h[:1], 0.5 * (h[1:] + h[:-1]), h[-1:]))
    flux = u * h_face
    return h - dt / dx * (flux[1:] - flux[:-1])


def thomas(a, b, c, d):
    """Solve the tridiagonal system with sub-diagonal a (n - 1), diagonal b (n),
    super-diagonal c (n - 1) and right-hand side d (n)."""
    n = b.shape[0]
    cp = np.zeros(n - 1, dtype=b.dtype)
    dp = np.zeros(n, dtype=b.dtype)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        denom = b[i] - a[i - 1] * cp[i - 1]
        if i < n - 1:
            cp[i] = c[i] / denom
        dp[i] = (d[i] - a[i - 1] * dp[i - 1]) / denom
    x = np.zeros(n, dtype=b.dtype)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def _nbody_args(dtype, rng):
    n = int(rng.integers(4, 40))
    pos = rng.standard_normal((n, 3)).astype(dtype)
    mass = rng.uniform(0.5, 1.5, n).astype(dtype)
    return pos, mass, 1.0, dtype(0.1)


def _leapfrog_args(dtype, rng):
    n = int(rng.integers(4, 24))
    pos = rng.standard_normal((n, 3)).astype(dtype)
    vel = (0.1 * rng.standard_normal((n, 3))).astype(dtype)
    mass = rng.uniform(0.5, 1.5, n).astype(dtype)
    return pos, vel, mass, 0.01, 4


def _continuity_args(dtype, rng):
    n = int(rng.integers(4, 40))
    h = rng.uniform(1.0, 2.0, n).astype(dtype)
    u = rng.uniform(-0.5, 0.5, n + 1).astype(dtype)
    return h, u, 0.1, 1.0


def _thomas_args(dtype, rng):
    n = int(rng.integers(4, 40))
    a = rng.uniform(-1.0, 0.0, n - 1).astype(dtype)
    c = rng.uniform(-1.0, 0.0, n - 1).astype(dtype)
    b = rng.uniform(3.0, 4.0, n).astype(dtype)
    d = rng.standard_normal(n).astype(dtype)
    return a, b, c, d


CALLS = [
    (nbody_accel, _nbody_args),
    (leapfrog, _leapfrog_args),
    (continuity_step, _continuity_args),
    (thomas, _thomas_args),
]
