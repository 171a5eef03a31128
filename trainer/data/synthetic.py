"""Synthetic markets with a known answer: what separates "the code runs" from "the agent learns".

Five hourly markets, each a seeded generator of ordinary OHLCV bars (so they travel through the
same loaders, features and environment as real data) plus the ground truth that generated them:

- ``ar1`` (:func:`make_signal_market`): log returns r_t = φ·r_{t−1} + σ·√(1−φ²)·ε_t — the sign of
  the last return predicts the next one with probability ½ + arcsin(φ)/π.
- ``regime`` (:func:`make_regime_market`): the same AR(1), but the sign of φ flips with a hidden
  two-state Markov chain, so a rule fitted on the average autocorrelation sees almost nothing.
- ``ou`` (:func:`make_ou_market`): the log price is a slowly drifting mean (a random walk) plus an
  Ornstein–Uhlenbeck deviation that decays with a known half-life.
- ``garch_trend`` (:func:`make_garch_trend_market`): a persistent, slowly changing drift under
  GARCH(1,1) volatility clustering.
- ``noise`` (:func:`make_noise_market`): independent returns; nothing to learn.

For each market the *feasible oracle* (:func:`oracle_positions`) knows the generator's parameters
but not its hidden state: it decides at bar t's close from the bars up to t, through the exact
Bayesian filter of that market (an HMM forward filter, a Kalman filter, the GARCH variance
recursion), and trades the sign of the expected next return with a hysteresis band that pays for
switching (:func:`hysteresis_positions`). On noise it stays flat. Given the training bars, it also
stays flat while the expected edge is too small to be worth its variance: the width of that flat
band is chosen on the training bars only (:func:`fit_flat_band`), as the fitted baselines choose
their windows — without it the "oracle" holds full positions through bars whose edge is ≈ 0 and a
learner that goes flat there beats it (docs/results.md §0, session 34).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from trainer.files import atomic_path

if TYPE_CHECKING:  # pandas builds the DataFrame view on demand; the markets themselves need numpy only
    import pandas as pd

BARS_PER_YEAR_HOURLY = 252 * 24
# Widths of the flat band a fitted rule chooses from, in standard deviations of its expected edge
# over the fitting bars (fit_flat_band); 0 = the rule never goes flat on purpose.
FLAT_BANDS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
MARKET_KINDS = ("ar1", "regime", "ou", "garch_trend", "noise")


@dataclass(frozen=True)
class SyntheticMarket:
    """Bars plus the ground truth that generated them.

    ``params`` are what the feasible oracle may know (the generator's parameters); ``hidden`` is
    the per-bar latent state it may not (regime, drifting mean, deviation, drift, variance), kept
    for tests and diagnostics.
    """

    kind: str  # one of MARKET_KINDS
    columns: Mapping[str, np.ndarray]  # [n_bars] each: timestamp (datetime64[ns]), open, high, low, close, volume
    log_returns: np.ndarray  # [n_bars] r_t = log(close_t / close_{t−1}); r_0 = 0
    params: Mapping[str, float]  # generator parameters (known to the oracle)
    cost_rate: float  # fraction of traded notional paid per unit of position change
    hidden: Mapping[str, np.ndarray] = field(default_factory=dict)  # [n_bars] each: latent state per bar

    @property
    def sigma(self) -> float:
        """Nominal per-bar standard deviation of the log return."""
        return float(self.params["sigma"])

    @property
    def close(self) -> np.ndarray:
        return np.asarray(self.columns["close"], dtype=np.float64)

    @property
    def bars(self) -> pd.DataFrame:
        """The OHLCV bars as a DataFrame (timestamp, open, high, low, close, volume); needs pandas."""
        import pandas as pd

        return pd.DataFrame(dict(self.columns))

    def __len__(self) -> int:
        return len(self.log_returns)


# ----------------------------------------------------------------------------- generators


def _ar1_log_returns(n_bars: int, phi: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    _check_coefficient("AR(1) coefficient", phi)
    innovations = rng.standard_normal(n_bars) * sigma * math.sqrt(1.0 - phi * phi)  # [n_bars]
    returns = np.zeros(n_bars)
    previous = rng.standard_normal() * sigma  # start in the stationary distribution
    for t in range(1, n_bars):
        previous = phi * previous + innovations[t]
        returns[t] = previous
    return returns


def _check_coefficient(what: str, value: float) -> None:
    if not -1.0 < value < 1.0:
        raise ValueError(
            f"{what} out of range ({value} vs −1 < φ < 1) — hint: |φ| ≥ 1 is not stationary; use e.g. 0.3"
        )


def _bars_from_log_returns(log_returns: np.ndarray, rng: np.random.Generator, start_price: float) -> dict[str, np.ndarray]:
    close = start_price * np.exp(np.cumsum(log_returns))  # [n_bars]
    open_ = np.concatenate([[start_price], close[:-1]])
    wick = np.abs(rng.standard_normal((2, len(close)))) * np.abs(log_returns).mean() * 0.5  # [2, n_bars]
    high = np.maximum(open_, close) * (1.0 + wick[0])
    low = np.minimum(open_, close) * (1.0 - wick[1])
    volume = np.round(1000.0 * np.exp(0.3 * rng.standard_normal(len(close))), 2)
    timestamp = (np.datetime64("2020-01-01T00", "h") + np.arange(len(close))).astype("datetime64[ns]")  # hourly
    return {"timestamp": timestamp, "open": open_, "high": high, "low": low, "close": close, "volume": volume}


def _validate_size(n_bars: int, sigma: float, cost_rate: float) -> None:
    if n_bars < 16:
        raise ValueError(
            f"synthetic market too short ({n_bars} bars vs at least 16) — hint: ask for more bars"
        )
    if sigma <= 0.0 or not math.isfinite(sigma):
        raise ValueError(f"return volatility must be positive ({sigma} vs > 0) — hint: use e.g. 0.005")
    if cost_rate < 0.0:
        raise ValueError(f"cost rate must not be negative ({cost_rate} vs ≥ 0) — hint: use e.g. 1e-4")


def make_signal_market(
    n_bars: int,
    *,
    phi: float = 0.4,
    sigma: float = 0.005,
    cost_rate: float = 1e-4,
    seed: int = 0,
    start_price: float = 100.0,
) -> SyntheticMarket:
    """A market whose next return is predictable from the last one (AR(1) with coefficient φ)."""
    _validate_size(n_bars, sigma, cost_rate)
    rng = np.random.default_rng(seed)
    log_returns = _ar1_log_returns(n_bars, phi, sigma, rng)
    columns = _bars_from_log_returns(log_returns, rng, start_price)
    kind = "ar1" if phi != 0.0 else "noise"
    return SyntheticMarket(kind, columns, log_returns, {"phi": phi, "sigma": sigma}, cost_rate)


def make_noise_market(
    n_bars: int, *, sigma: float = 0.005, cost_rate: float = 1e-4, seed: int = 0, start_price: float = 100.0
) -> SyntheticMarket:
    """Independent returns: nothing to learn, so the right policy is not to trade."""
    return make_signal_market(n_bars, phi=0.0, sigma=sigma, cost_rate=cost_rate, seed=seed, start_price=start_price)


def make_regime_market(
    n_bars: int,
    *,
    phi: float = 0.3,
    stay: float = 0.99,
    sigma: float = 0.005,
    cost_rate: float = 1e-4,
    seed: int = 0,
    start_price: float = 100.0,
) -> SyntheticMarket:
    """AR(1) returns whose coefficient is +φ or −φ by a hidden two-state Markov regime.

    r_t = s_t·φ·r_{t−1} + σ·√(1−φ²)·ε_t with s_t ∈ {+1, −1}, P(s_t = s_{t−1}) = ``stay`` (mean
    regime length 1/(1 − stay) bars), s_0 uniform, r_0 = 0. The stationary σ is the same in both
    regimes (φ² does not depend on the sign), so volatility gives the regime away nowhere.
    """
    _validate_size(n_bars, sigma, cost_rate)
    _check_coefficient("regime AR coefficient", phi)
    if not 0.5 <= stay < 1.0:
        raise ValueError(
            f"regime stay probability out of range ({stay} vs 0.5 ≤ stay < 1) — hint: use e.g. 0.99 "
            f"(regimes of 100 bars on average)"
        )
    rng = np.random.default_rng(seed)
    flips = rng.random(n_bars) >= stay  # [n_bars] a regime change entering bar t
    innovations = rng.standard_normal(n_bars) * sigma * math.sqrt(1.0 - phi * phi)  # [n_bars]
    regime = np.empty(n_bars)
    regime[0] = 1.0 if rng.random() < 0.5 else -1.0
    returns = np.zeros(n_bars)
    for t in range(1, n_bars):
        regime[t] = -regime[t - 1] if flips[t] else regime[t - 1]
        returns[t] = regime[t] * phi * returns[t - 1] + innovations[t]
    columns = _bars_from_log_returns(returns, rng, start_price)
    params = {"phi": phi, "stay": stay, "sigma": sigma}
    return SyntheticMarket("regime", columns, returns, params, cost_rate, {"regime": regime})


def make_ou_market(
    n_bars: int,
    *,
    half_life: float = 8.0,
    deviation_sigma: float = 0.012,
    mean_sigma: float = 0.001,
    cost_rate: float = 1e-4,
    seed: int = 0,
    start_price: float = 100.0,
) -> SyntheticMarket:
    """Log price = a random-walk mean + an Ornstein–Uhlenbeck deviation from it.

    x_t = log(start_price) + m_t + d_t with m_t = m_{t−1} + ``mean_sigma``·η_t (m_0 = 0) and
    d_t = a·d_{t−1} + ``deviation_sigma``·√(1−a²)·ε_t, a = 2^(−1/half_life) (d_0 drawn from its
    stationary law, std ``deviation_sigma``). The expected next return is (a − 1)·d_t: the price
    reverts towards a mean that itself wanders, so neither a fixed level nor a long moving average
    is the right anchor.
    """
    if not (math.isfinite(half_life) and half_life > 0.0):
        raise ValueError(f"OU half-life must be positive ({half_life} bars vs > 0) — hint: use e.g. 24")
    for name, value in (("deviation_sigma", deviation_sigma), ("mean_sigma", mean_sigma)):
        if value <= 0.0 or not math.isfinite(value):
            raise ValueError(f"OU {name} must be positive ({value} vs > 0) — hint: use e.g. 0.002")
    a = 2.0 ** (-1.0 / half_life)
    innovation = deviation_sigma * math.sqrt(1.0 - a * a)
    sigma = math.sqrt(mean_sigma**2 + 2.0 * (1.0 - a) * deviation_sigma**2)  # stationary std of r_t
    _validate_size(n_bars, sigma, cost_rate)
    rng = np.random.default_rng(seed)
    mean = np.concatenate([[0.0], np.cumsum(rng.standard_normal(n_bars - 1) * mean_sigma)])  # [n_bars]
    shocks = rng.standard_normal(n_bars) * innovation  # [n_bars]
    deviation = np.empty(n_bars)
    deviation[0] = rng.standard_normal() * deviation_sigma
    for t in range(1, n_bars):
        deviation[t] = a * deviation[t - 1] + shocks[t]
    returns = np.concatenate([[0.0], np.diff(mean + deviation)])
    # Bar 0 closes at start_price·e^{d_0}, so log close_t = log(start_price) + m_t + d_t exactly.
    columns = _bars_from_log_returns(returns, rng, start_price * math.exp(deviation[0]))
    params = {
        "a": a, "half_life": half_life, "deviation_sigma": deviation_sigma, "mean_sigma": mean_sigma,
        "sigma": sigma, "log_start": math.log(start_price),
    }  # fmt: skip
    return SyntheticMarket("ou", columns, returns, params, cost_rate, {"mean": mean, "deviation": deviation})


def make_garch_trend_market(
    n_bars: int,
    *,
    drift_sigma: float = 0.0008,
    drift_persistence: float = 0.995,
    sigma: float = 0.0045,
    alpha: float = 0.05,
    beta: float = 0.93,
    cost_rate: float = 1e-4,
    seed: int = 0,
    start_price: float = 100.0,
) -> SyntheticMarket:
    """A persistent drift under GARCH(1,1) volatility clustering.

    r_t = μ_t + √h_t·z_t for t ≥ 1 (r_0 = 0), with the drift μ_t = ρ·μ_{t−1} + ``drift_sigma``·√(1−ρ²)·ν_t
    (stationary std ``drift_sigma``, ρ = ``drift_persistence``) and the variance
    h_t = ω + α·r_{t−1}² + β·h_{t−1}, h_0 = σ², ω = σ²·(1 − α − β). The recursion runs on the
    observed return, so the oracle can rebuild h_t exactly from the bars; the drift it must filter.
    """
    _validate_size(n_bars, sigma, cost_rate)
    _check_coefficient("drift persistence", drift_persistence)
    if alpha < 0.0 or beta < 0.0 or alpha + beta >= 1.0:
        raise ValueError(
            f"GARCH(1,1) coefficients not stationary (α + β = {alpha + beta} vs α, β ≥ 0 and α + β < 1) — "
            f"hint: use e.g. α = 0.05, β = 0.93"
        )
    if drift_sigma <= 0.0 or not math.isfinite(drift_sigma):
        raise ValueError(f"drift_sigma must be positive ({drift_sigma} vs > 0) — hint: use e.g. 0.0008")
    rng = np.random.default_rng(seed)
    omega = sigma * sigma * (1.0 - alpha - beta)
    drift_innovation = drift_sigma * math.sqrt(1.0 - drift_persistence**2)
    nu = rng.standard_normal(n_bars)  # [n_bars]
    z = rng.standard_normal(n_bars)  # [n_bars]
    drift = np.empty(n_bars)
    variance = np.empty(n_bars)
    returns = np.zeros(n_bars)
    drift[0] = rng.standard_normal() * drift_sigma
    variance[0] = sigma * sigma
    for t in range(1, n_bars):
        drift[t] = drift_persistence * drift[t - 1] + drift_innovation * nu[t]
        variance[t] = omega + alpha * returns[t - 1] ** 2 + beta * variance[t - 1]
        returns[t] = drift[t] + math.sqrt(variance[t]) * z[t]
    columns = _bars_from_log_returns(returns, rng, start_price)
    params = {
        "drift_sigma": drift_sigma, "drift_persistence": drift_persistence, "sigma": sigma,
        "omega": omega, "alpha": alpha, "beta": beta,
    }  # fmt: skip
    return SyntheticMarket("garch_trend", columns, returns, params, cost_rate, {"drift": drift, "variance": variance})


# ----------------------------------------------------------------------------- filters


def regime_probabilities(log_returns: np.ndarray, *, phi: float, stay: float, sigma: float) -> np.ndarray:
    """HMM forward filter: P(s_t = +1 | r_0 … r_t) per bar → [n_bars].

    Emission r_t | r_{t−1}, s_t ~ N(s_t·φ·r_{t−1}, σ²(1−φ²)) for t ≥ 1 (r_0 carries no
    information); the prior of s_0 is uniform. Normalised every bar, so it never underflows.
    """
    r = np.asarray(log_returns, dtype=np.float64)
    variance = sigma * sigma * (1.0 - phi * phi)
    p_up = np.empty(len(r))
    up = 0.5
    p_up[0] = up
    for t in range(1, len(r)):
        predicted = stay * up + (1.0 - stay) * (1.0 - up)  # P(s_t = +1 | r_0 … r_{t−1})
        # Likelihood ratio of the two regimes; only the difference of the exponents matters.
        log_ratio = 2.0 * phi * r[t] * r[t - 1] / variance  # log N(r; +φr', v) − log N(r; −φr', v)
        log_ratio = min(max(log_ratio, -700.0), 700.0)
        up = predicted / (predicted + (1.0 - predicted) * math.exp(-log_ratio))
        p_up[t] = up
    return p_up


def ou_deviation_filter(
    log_price: np.ndarray, *, a: float, deviation_sigma: float, mean_sigma: float, log_start: float
) -> np.ndarray:
    """Kalman filter over (mean m_t, deviation d_t) of the OU market → E[d_t | x_0 … x_t] per bar.

    State transition diag(1, a), process noise diag(σ_m², σ_d²(1−a²)), observation x_t = m_t + d_t
    + log_start exactly (no observation noise). Prior: m_0 = 0 exactly, d_0 ~ N(0, σ_d²) — the
    generator's own initial law, so this is the exact posterior mean.
    """
    x = np.asarray(log_price, dtype=np.float64) - log_start
    q_mean, q_dev = mean_sigma**2, deviation_sigma**2 * (1.0 - a * a)
    state = np.zeros(2)  # (m, d)
    cov = np.array([[0.0, 0.0], [0.0, deviation_sigma**2]])
    out = np.empty(len(x))
    transition = np.array([[1.0, 0.0], [0.0, a]])
    for t in range(len(x)):
        if t > 0:
            state = transition @ state
            cov = transition @ cov @ transition.T + np.diag([q_mean, q_dev])
        innovation_var = cov.sum()  # H P Hᵀ with H = (1, 1)
        gain = cov.sum(axis=1) / innovation_var  # P Hᵀ / S → [2]
        state = state + gain * (x[t] - state.sum())
        cov = cov - np.outer(gain, cov.sum(axis=0))
        cov = 0.5 * (cov + cov.T)  # keep it symmetric against rounding
        out[t] = state[1]
    return out


def garch_variance(log_returns: np.ndarray, *, omega: float, alpha: float, beta: float, sigma: float) -> np.ndarray:
    """The GARCH(1,1) conditional variance h_t = ω + α·r_{t−1}² + β·h_{t−1}, h_0 = σ² → [n_bars].

    h_t is known at bar t−1's close (it uses returns up to t−1 only).
    """
    r = np.asarray(log_returns, dtype=np.float64)
    h = np.empty(len(r))
    h[0] = sigma * sigma
    for t in range(1, len(r)):
        h[t] = omega + alpha * r[t - 1] ** 2 + beta * h[t - 1]
    return h


def drift_filter(log_returns: np.ndarray, variance: np.ndarray, *, persistence: float, drift_sigma: float) -> np.ndarray:
    """Kalman filter of the drift: E[μ_t | r_1 … r_t] per bar, observations r_t = μ_t + N(0, h_t).

    μ_t = ρ·μ_{t−1} + N(0, σ_μ²(1−ρ²)), prior μ_0 ~ N(0, σ_μ²); r_0 is not an observation.
    """
    r = np.asarray(log_returns, dtype=np.float64)
    h = np.asarray(variance, dtype=np.float64)
    q = drift_sigma**2 * (1.0 - persistence**2)
    mean, var = 0.0, drift_sigma**2
    out = np.empty(len(r))
    out[0] = mean
    for t in range(1, len(r)):
        mean, var = persistence * mean, persistence**2 * var + q
        gain = var / (var + h[t])
        mean, var = mean + gain * (r[t] - mean), (1.0 - gain) * var
        out[t] = mean
    return out


def expected_next_return(market: SyntheticMarket) -> np.ndarray:
    """E[r_{t+1} | bars 0 … t] under the market's known parameters → [n_bars] (the oracle's edge)."""
    p, r = market.params, market.log_returns
    if market.kind == "ar1":
        return p["phi"] * r
    if market.kind == "regime":
        up = regime_probabilities(r, phi=p["phi"], stay=p["stay"], sigma=p["sigma"])
        up_next = p["stay"] * up + (1.0 - p["stay"]) * (1.0 - up)  # P(s_{t+1} = +1 | bars ≤ t)
        return (2.0 * up_next - 1.0) * p["phi"] * r
    if market.kind == "ou":
        log_price = np.log(market.close)
        deviation = ou_deviation_filter(
            log_price, a=p["a"], deviation_sigma=p["deviation_sigma"], mean_sigma=p["mean_sigma"], log_start=p["log_start"]
        )
        return (p["a"] - 1.0) * deviation
    if market.kind == "garch_trend":
        h = garch_variance(r, omega=p["omega"], alpha=p["alpha"], beta=p["beta"], sigma=p["sigma"])
        drift = drift_filter(r, h, persistence=p["drift_persistence"], drift_sigma=p["drift_sigma"])
        return p["drift_persistence"] * drift
    if market.kind == "noise":
        return np.zeros(len(r))
    raise ValueError(f"unknown synthetic market kind ({market.kind!r} vs one of {', '.join(MARKET_KINDS)})"
                     f" — hint: build markets with the make_*_market functions")  # fmt: skip


# ----------------------------------------------------------------------------- positions and scoring


def hysteresis_positions(expected: np.ndarray, cost_rate: float, flat_band: float = 0.0) -> np.ndarray:
    """Positions (−1, 0, +1) that follow the sign of an expected next return, paying for switches.

    Entering or flipping costs ``cost_rate`` per unit of position changed, so the current position
    is kept unless the expected edge of the other side exceeds the cost of switching (a hysteresis
    band, which is what keeps a rule from churning on tiny signals); an edge of exactly 0 never
    trades. With ``flat_band`` > 0 the rule is flat while |edge| ≤ ``flat_band``: a bar whose edge is
    that small adds the position's variance and almost none of its return, so holding through it
    lowers the Sharpe ratio. ``positions[t]`` is decided at bar t's close from ``expected[t]`` and is
    held to t+1.
    """
    positions = np.zeros(len(expected))
    current = 0.0
    for t, edge in enumerate(np.asarray(expected, dtype=np.float64)):
        if flat_band > 0.0 and abs(edge) <= flat_band:
            current = 0.0
        else:
            wanted = float(np.sign(edge))
            if wanted != current and abs(edge) > cost_rate * abs(wanted - current):
                current = wanted
        positions[t] = current
    return positions


def fit_flat_band(close: np.ndarray, expected: np.ndarray, cost_rate: float) -> float:
    """The flat band of :func:`hysteresis_positions` with the best Sharpe ratio on these bars: one of
    ``FLAT_BANDS`` × the std of ``expected`` over them (0 = never flat; the narrowest on a tie).

    Why fitted, and only on the bars given: the band that pays depends on how the edge is
    distributed, which the market's parameters alone do not give in closed form; a rule fitted on the
    training bars stays feasible (it reads no later bar), as the fitted baselines do."""
    close = np.asarray(close, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale = float(np.std(expected))
    best_band, best_score = 0.0, -math.inf
    for multiple in FLAT_BANDS:
        band = multiple * scale
        score = sharpe(position_returns(close, hysteresis_positions(expected, cost_rate, band), cost_rate))
        if score > best_score:
            best_band, best_score = band, score
    return best_band


def oracle_positions(market: SyntheticMarket, cost_rate: float | None = None, *, fit_bars: slice | None = None) -> np.ndarray:
    """The feasible oracle's position per bar (−1, 0, +1), decided at bar t's close from bars ≤ t.

    The sign of :func:`expected_next_return` (the market's exact filter under its known parameters)
    through :func:`hysteresis_positions` at ``cost_rate`` (default: the market's). Flat on noise.
    With ``fit_bars`` (the training window), flat also where the edge is within the band
    :func:`fit_flat_band` chooses on those bars; without, it never goes flat on purpose.
    """
    rate = market.cost_rate if cost_rate is None else cost_rate
    expected = expected_next_return(market)
    band = 0.0 if fit_bars is None else fit_flat_band(market.close[fit_bars], expected[fit_bars], rate)
    return hysteresis_positions(expected, rate, band)


def position_returns(close: np.ndarray, positions: np.ndarray, cost_rate: float) -> np.ndarray:
    """Per-bar net simple return of holding ``positions[t]`` (fraction of equity) from t to t+1.

    ``net[t] = positions[t]·(close[t+1]/close[t] − 1) − cost_rate·|positions[t] − positions[t−1]|``
    for t in 0..n−2 (the position before bar 0 is flat). A quick, vectorised score (rule fitting
    ranks candidates with it); benchmarks score through the trainer's backtester.
    """
    close = np.asarray(close, dtype=np.float64)
    positions = np.asarray(positions, dtype=np.float64)
    if close.shape != positions.shape:
        raise ValueError(
            f"positions and prices differ in length ({positions.shape} vs {close.shape}) — hint: "
            f"one position per bar"
        )
    simple = close[1:] / close[:-1] - 1.0  # [n−1]
    held = positions[:-1]  # [n−1]
    turnover = np.abs(np.diff(np.concatenate([[0.0], held])))  # [n−1]
    return held * simple - cost_rate * turnover


def sharpe(returns: np.ndarray, periods_per_year: int = BARS_PER_YEAR_HOURLY) -> float:
    """Annualised Sharpe (zero risk-free rate, sample std); 0 for a flat, zero-variance series."""
    returns = np.asarray(returns, dtype=np.float64)
    if len(returns) < 2:
        return 0.0
    std = returns.std(ddof=1)
    if std <= 1e-15:
        return 0.0
    return float(returns.mean() / std * math.sqrt(periods_per_year))


def turnover(positions: np.ndarray) -> float:
    """Mean absolute position change per bar."""
    positions = np.asarray(positions, dtype=np.float64)
    return float(np.abs(np.diff(np.concatenate([[0.0], positions]))).mean())


def write_market_csv(market: SyntheticMarket, path: str | os.PathLike[str]) -> Path:
    """Write the bars as an OHLCV CSV (atomically) so ``trainer train --data PATH`` can read them."""
    target = Path(path)
    with atomic_path(target, suffix=".csv.tmp") as temporary:
        market.bars.to_csv(temporary, index=False)
    return target
