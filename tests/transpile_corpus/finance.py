"""Quantitative finance: Black-Scholes with the PARSEC polynomial normal CDF, geometric Brownian
motion paths, RiskMetrics EWMA volatility, a Cox-Ross-Rubinstein binomial tree and portfolio
variance. Rates and volatilities arrive as NumPy scalars (``np.float64(0.02)``), as they do when
read from an array or a data frame."""

import numpy as np

_A1, _A2, _A3, _A4, _A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
_RSQRT2PI = 0.39894228040143267794


def _cnd(d):
    """The standard normal CDF, Abramowitz & Stegun 26.2.17 (PARSEC blackscholes' CNDF)."""
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    poly = k * (_A1 + k * (_A2 + k * (_A3 + k * (_A4 + k * _A5))))
    w = 1.0 - _RSQRT2PI * np.exp(-0.5 * d * d) * poly
    return np.where(d < 0, 1.0 - w, w)


def black_scholes(S, K, T, r, sigma):
    """European call and put prices for spot S, strike K and expiry T (arrays of options)."""
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * sigma * sigma) * T) / (sigma * sqrt_t)
    d2 = d1 - sigma * sqrt_t
    discounted = K * np.exp(-r * T)
    call = S * _cnd(d1) - discounted * _cnd(d2)
    put = discounted * _cnd(-d2) - S * _cnd(-d1)
    return call, put


def gbm_paths(s0, z, mu, sigma, dt):
    """Geometric Brownian motion: z holds standard normal draws, (paths, steps)."""
    increments = (mu - 0.5 * sigma**2) * dt + sigma * np.sqrt(dt) * z
    log_paths = np.cumsum(increments, axis=1)
    return s0 * np.exp(log_paths)


def ewma_volatility(returns, lam):
    """RiskMetrics exponentially weighted volatility of each asset (columns), day by day."""
    T = returns.shape[0]
    var = np.empty_like(returns)
    var[0] = returns[0] ** 2
    for t in range(1, T):
        var[t] = lam * var[t - 1] + (1 - lam) * returns[t - 1] ** 2
    return np.sqrt(var)


def binomial_call(S0, K, T, r, sigma, n):
    """Cox-Ross-Rubinstein price of European calls for the strikes K, with n steps."""
    dt = T / n
    u = np.exp(sigma * np.sqrt(dt))
    d = 1.0 / u
    p = (np.exp(r * dt) - d) / (u - d)
    disc = np.exp(-r * dt)
    ST = S0 * u ** np.arange(n, -1, -1) * d ** np.arange(0, n + 1)
    V = np.maximum(ST[:, None] - K[None, :], 0.0)
    for i in range(n, 0, -1):
        V[:i] = disc * (p * V[:i] + (1 - p) * V[1 : i + 1])
    return V[0]


def portfolio_variance(weights, returns):
    """Mean return and variance of a portfolio from the sample covariance of asset returns."""
    mu = returns.mean(axis=0)
    centered = returns - mu
    cov = centered.T @ centered / (returns.shape[0] - 1)
    return mu @ weights, weights @ cov @ weights


def _bs_args(dtype, rng):
    n = int(rng.integers(4, 40))
    S = rng.uniform(50.0, 150.0, n).astype(dtype)
    K = rng.uniform(50.0, 150.0, n).astype(dtype)
    T = rng.uniform(0.25, 2.0, n).astype(dtype)
    return S, K, T, dtype(0.02), dtype(0.3)


def _gbm_args(dtype, rng):
    paths, steps = rng.integers(4, 40, size=2)
    z = rng.standard_normal((paths, steps)).astype(dtype)
    return 100.0, z, dtype(0.05), dtype(0.2), 1.0 / 252


def _ewma_args(dtype, rng):
    T, assets = rng.integers(4, 40, size=2)
    returns = (0.01 * rng.standard_normal((T, assets))).astype(dtype)
    return returns, dtype(0.94)


def _binomial_args(dtype, rng):
    K = rng.uniform(80.0, 120.0, int(rng.integers(4, 20))).astype(dtype)
    return 100.0, K, 1.0, dtype(0.03), dtype(0.25), int(rng.integers(4, 30))


def _portfolio_args(dtype, rng):
    T, n = int(rng.integers(20, 40)), int(rng.integers(4, 12))
    returns = (0.01 * rng.standard_normal((T, n))).astype(dtype)
    weights = rng.dirichlet(np.ones(n)).astype(dtype)
    return weights, returns


CALLS = [
    (black_scholes, _bs_args),
    (gbm_paths, _gbm_args),
    (ewma_volatility, _ewma_args),
    (binomial_call, _binomial_args),
    (portfolio_variance, _portfolio_args),
]
