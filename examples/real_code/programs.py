"""Twenty-two programs in the style of real NumPy code (convergence loops, masks, index
arrays, linear algebra, histograms, bit operations), compiled unchanged by ``@ppto.compile``:
tests/parse/test_real_code.py runs each against NumPy and checks that ``explain`` names the
calls PyPTO runs as graph breaks. The module imports only NumPy."""

import numpy as np


def jacobi(A, b, tol):
    """Jacobi iterations until the update is below ``tol`` (at most 1000)."""
    D = np.sum(A * np.eye(A.shape[0], dtype=A.dtype), axis=1)
    x = np.zeros_like(b)
    err = tol + 1.0
    it = 0
    while err > tol and it < 1000:
        x_new = (b - (A @ x - D * x)) / D
        err = np.abs(x_new - x).max()
        x = x_new
        it += 1
    return x, it


def power_iteration(A, tol):
    """The dominant eigenvalue by power iteration (a while loop on the change)."""
    v = np.ones(A.shape[0], dtype=A.dtype) / np.sqrt(A.shape[0])
    lam, delta = 0.0, 1.0
    while delta > tol:
        w = A @ v
        lam_new = np.linalg.norm(w)
        v = w / lam_new
        delta = abs(lam_new - lam)
        lam = lam_new
    return lam, v


def mandelbrot(c, maxiter):
    """Escape counts: z[mask] = z[mask] ** 2 + c[mask] on the points still bounded."""
    z = np.zeros_like(c)
    n = np.zeros(c.shape, dtype=np.int64)
    for _ in range(maxiter):
        mask = np.abs(z) <= 2.0
        z[mask] = z[mask] ** 2 + c[mask]
        n[mask] += 1
    return n


def equalize(img):
    """Histogram equalization: counts, their normalized running sum, an interpolation."""
    counts, edges = np.histogram(img, bins=32, range=(0.0, 1.0))
    cdf = np.cumsum(counts) / img.size
    return np.interp(img, edges[1:], cdf)


def csr_matvec(data, indices, indptr, x):
    """y = A x for A in CSR form: each row's nonzeros between its index pointers."""
    n = indptr.shape[0] - 1
    y = np.zeros(n, dtype=data.dtype)
    for i in range(n):
        k = indptr[i]
        s = data[0] * 0
        while k < indptr[i + 1]:
            s = s + data[k] * x[indices[k]]
            k += 1
        y[i] = s
    return y


def dft(x):
    """The discrete Fourier transform with index arithmetic (the matrix of e^{-2 pi i jk/n})."""
    n = x.shape[0]
    j = np.arange(n)
    k = j.reshape((n, 1))
    M = np.exp(-2j * np.pi * k * j / n)
    return M @ x


def spectrum_peak(x, dt):
    """The frequency of the largest rfft magnitude (index arithmetic on the bins)."""
    f = np.abs(np.fft.rfft(x - x.mean()))
    k = np.argmax(f)
    return k / (x.shape[0] * dt), f[k]


def nbody_accelerations(pos, mass, eps):
    """Pairwise gravity; pairs closer than eps (and each body with itself) masked out."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = np.sum(d * d, axis=-1)
    inv_r3 = 1.0 / np.sqrt(r2 + 1e-300) ** 3
    inv_r3[r2 < eps * eps] = 0.0
    return np.sum(d * (inv_r3 * mass[None, :])[:, :, None], axis=1)


def crc32(data):
    """CRC-32 (IEEE) of a byte array, bit by bit."""
    crc = np.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            crc = (crc >> np.uint32(1)) ^ (np.uint32(0xEDB88320) * (crc & np.uint32(1)))
    return crc ^ np.uint32(0xFFFFFFFF)


def cholesky_solve(A, b):
    """A x = b for symmetric positive definite A, by its Cholesky factor and two solves."""
    L = np.linalg.cholesky(A @ A.T + A.shape[0] * np.eye(A.shape[0], dtype=A.dtype))
    return np.linalg.solve(L.T, np.linalg.solve(L, b))


def whiten(X):
    """Decorrelate the columns: the eigenvectors of np.cov, scaled by the eigenvalues."""
    C = np.cov(X, rowvar=False)
    w, V = np.linalg.eigh(C)
    Xc = X - X.mean(axis=0)
    return np.abs((Xc @ V) / np.sqrt(w))


def kmeans_step(X, centers):
    """One Lloyd step: nearest centers (argmin), then the means of their points."""
    d = np.sum((X[:, None, :] - centers[None, :, :]) ** 2, axis=-1)
    labels = np.argmin(d, axis=1)
    onehot = (labels[:, None] == np.arange(centers.shape[0])).astype(X.dtype)
    counts = np.maximum(onehot.sum(axis=0), 1.0)
    return (onehot.T @ X) / counts[:, None], labels


def cross_entropy(logits, labels):
    """Mean negative log-likelihood of the labels, the log-softmax stable."""
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    picked = np.take_along_axis(logp, labels[:, None], axis=1)
    return -picked.mean()


def sinkhorn(K, a, b, tol):
    """Sinkhorn scaling of the kernel K to marginals a and b."""
    u = np.ones_like(a)
    v = np.ones_like(b)
    err = 1.0
    while err > tol:
        u = a / (K @ v)
        v = b / (K.T @ u)
        err = np.abs(u * (K @ v) - a).sum()
    return u[:, None] * K * v[None, :]


def logistic_fit(X, y, lr, steps):
    """Gradient descent on the logistic loss, stopping early when the gradient is small."""
    w = np.zeros(X.shape[1], dtype=X.dtype)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        g = X.T @ (p - y) / X.shape[0]
        if np.sqrt(np.sum(g * g)) < 1e-4:
            break
        w = w - lr * g
    return w


def smooth(x, width):
    """A moving average by np.convolve, then the residual."""
    k = np.ones(width, dtype=x.dtype) / width
    return x - np.convolve(x, k, mode="same")


def rank_gauss(x):
    """Ranks along axis 0 by a double argsort, mapped into (-1, 1)."""
    r = np.argsort(np.argsort(x, axis=0), axis=0)
    return 2.0 * (r + 0.5) / x.shape[0] - 1.0


def winsorize(x):
    """Values beyond the 5th and 95th percentiles set to them, by masks."""
    lo, hi = np.percentile(x, 5), np.percentile(x, 95)
    y = x.copy()
    y[y < lo] = lo
    y[y > hi] = hi
    return y


def top3_softmax(x):
    s = np.sort(x, axis=-1)[:, -3:]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def bisect_root(c, lo, hi):
    """The root of x**3 - c in [lo, hi] by bisection (scalars; and / or in the tests)."""
    while hi - lo > 1e-9 and not (lo > hi):
        mid = 0.5 * (lo + hi)
        if mid * mid * mid - c > 0 or mid > 1e6:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def safe_log_ratio(x, y):
    """log(x / y), or zeros where any value is not positive (an early return)."""
    if np.any(x <= 0) or np.any(y <= 0):
        return np.zeros_like(x)
    return np.log(x / y)


def logdet_ratio(A, B):
    """log det A - log det B by slogdet's two results."""
    sa, la = np.linalg.slogdet(A @ A.T + np.eye(A.shape[0], dtype=A.dtype))
    sb, lb = np.linalg.slogdet(B @ B.T + np.eye(B.shape[0], dtype=B.dtype))
    return sa * la - sb * lb


def csr_matvec_slices(data, indices, indptr, x):
    """y = A x for A in CSR form, each row a dot product of its slice between index pointers."""
    n = indptr.shape[0] - 1
    y = np.zeros(n, dtype=data.dtype)
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        y[i] = data[lo:hi] @ x[indices[lo:hi]]
    return y


def weighted_histogram(values, weights, bins):
    """Weighted counts per bin: the bin index by arithmetic, np.add.at for repeated bins."""
    lo, hi = values.min(), values.max()
    idx = np.minimum(((values - lo) / (hi - lo + 1e-12) * bins).astype(np.int64), bins - 1)
    counts = np.zeros(bins, dtype=weights.dtype)
    np.add.at(counts, idx, weights)
    return counts / counts.sum()


def nearest_centroid(X, C):
    """Labels by the nearest centroid (einsum distances, argmin), the distances to it, and the
    correlation of the features over the rows without a NaN (np.corrcoef)."""
    d = np.einsum("ij,ij->i", X, X)[:, None] - 2 * X @ C.T + np.einsum("ij,ij->i", C, C)
    labels = np.argmin(d, axis=1)
    members = X[np.isfinite(X).all(axis=1)]
    return labels, np.linalg.norm(X - C[labels], axis=1), np.corrcoef(members, rowvar=False)
