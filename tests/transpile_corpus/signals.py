"""Signal processing in plain NumPy: an FIR filter by shifted slices, a moving average by the
cumulative-sum trick, a one-pole IIR low-pass over the samples of several channels, the
autocorrelation by lag, a radix-2 FFT butterfly stage and a direct DFT power spectrum."""

import numpy as np


def fir_filter(x, taps):
    """Valid-mode FIR filter: y[n] = sum_k taps[k] * x[n + K - 1 - k]."""
    K = taps.shape[0]
    n_out = x.shape[0] - K + 1
    y = np.zeros(n_out, dtype=x.dtype)
    for k in range(K):
        y += taps[k] * x[K - 1 - k : K - 1 - k + n_out]
    return y


def moving_average(x, window):
    """Trailing moving average of each column (valid part), via the cumulative sum."""
    c = np.cumsum(x, axis=0)
    out = np.empty((x.shape[0] - window + 1, x.shape[1]), dtype=c.dtype)
    out[0] = c[window - 1]
    out[1:] = c[window:] - c[:-window]
    return out / window


def iir_lowpass(x, alpha):
    """One-pole low-pass y[t] = alpha * y[t - 1] + (1 - alpha) * x[t] of (time, channel)
    samples, one time step per iteration."""
    y = np.empty_like(x)
    y[0] = x[0]
    for t in range(1, x.shape[0]):
        y[t] = alpha * y[t - 1] + (1 - alpha) * x[t]
    return y


def autocorr(x, maxlag):
    """Biased autocorrelation estimates r[0..maxlag-1] of a zero-mean signal."""
    n = x.shape[0]
    x = x - x.mean()
    r = np.zeros(maxlag, dtype=x.dtype)
    for lag in range(maxlag):
        r[lag] = np.dot(x[: n - lag], x[lag:]) / n
    return r


def butterfly(x, twiddle):
    """One radix-2 decimation-in-time stage: x holds the (2n,) even and odd halves, twiddle the
    (n,) factors; the result is (2n,)."""
    n = twiddle.shape[0]
    even = x[:n]
    odd = x[n:] * twiddle
    return np.concatenate((even + odd, even - odd))


def dft_power(x):
    """Power spectrum |X_k|^2 of a real signal by the direct DFT (cosine and sine sums)."""
    n = x.shape[0]
    t = np.arange(n)
    angle = 2.0 * np.pi * np.outer(t, t) / n
    re = np.cos(angle) @ x
    im = -np.sin(angle) @ x
    return re * re + im * im


def _fir_args(dtype, rng):
    x = rng.standard_normal(int(rng.integers(16, 40))).astype(dtype)
    taps = (np.hanning(7) / np.hanning(7).sum()).astype(dtype)
    return x, taps


def _moving_average_args(dtype, rng):
    x = rng.standard_normal((int(rng.integers(12, 40)), int(rng.integers(4, 8)))).astype(dtype)
    return x, 5


def _iir_args(dtype, rng):
    x = rng.standard_normal(tuple(rng.integers(4, 40, size=2))).astype(dtype)
    return x, dtype(0.9)


def _autocorr_args(dtype, rng):
    return rng.standard_normal(int(rng.integers(16, 40))).astype(dtype), 6


def _butterfly_args(dtype, rng):
    n = int(rng.integers(4, 20))
    x = rng.standard_normal(2 * n).astype(dtype)
    return x, np.cos(np.pi * np.arange(n) / n).astype(dtype)


def _dft_args(dtype, rng):
    return (rng.standard_normal(int(rng.integers(8, 40))).astype(dtype),)


CALLS = [
    (fir_filter, _fir_args),
    (moving_average, _moving_average_args),
    (iir_lowpass, _iir_args),
    (autocorr, _autocorr_args),
    (butterfly, _butterfly_args),
    (dft_power, _dft_args),
]
