"""Synthetic markets with a known answer: what separates "the code runs" from "the agent learns".

``make_signal_market`` draws log returns from an AR(1) process, r_t = φ·r_{t−1} + σ·√(1−φ²)·ε_t,
so the sign of the last bar's return (a feature every pipeline computes: the 1-bar return)
predicts the sign of the next one with probability ½ + arcsin(φ)/π. The *oracle* holds
sign(φ·r_t) — the Bayes-optimal direction given that feature — and goes flat when the expected
edge |φ·r_t| does not pay the round-trip cost. ``make_noise_market`` is the same generator with
φ = 0: there is nothing to learn, the oracle stays flat, and an agent that keeps trading there only
pays costs.

The markets come out as ordinary OHLCV bars (timestamp, open, high, low, close, volume), so they
travel through the same loaders, features and environment as real data.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from trainer.files import atomic_path

if TYPE_CHECKING:  # pandas builds the DataFrame view on demand; the markets themselves need numpy only
    import pandas as pd

BARS_PER_YEAR_HOURLY = 252 * 24


@dataclass(frozen=True)
class SyntheticMarket:
    """Bars plus the ground truth that generated them."""

    columns: Mapping[str, np.ndarray]  # [n_bars] each: timestamp (datetime64[ns]), open, high, low, close, volume
    log_returns: np.ndarray  # [n_bars] r_t = log(close_t / close_{t−1}); r_0 = 0
    phi: float  # AR(1) coefficient: the exploitable signal (0 = pure noise)
    sigma: float  # stationary std of the per-bar log return
    cost_rate: float  # fraction of traded notional paid per unit of position change

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


def _ar1_log_returns(n_bars: int, phi: float, sigma: float, rng: np.random.Generator) -> np.ndarray:
    if not -1.0 < phi < 1.0:
        raise ValueError(
            f"AR(1) coefficient out of range ({phi} vs −1 < φ < 1) — hint: |φ| ≥ 1 is not "
            f"stationary; use e.g. 0.3"
        )
    innovations = rng.standard_normal(n_bars) * sigma * math.sqrt(1.0 - phi * phi)  # [n_bars]
    returns = np.zeros(n_bars)
    previous = rng.standard_normal() * sigma  # start in the stationary distribution
    for t in range(1, n_bars):
        previous = phi * previous + innovations[t]
        returns[t] = previous
    return returns


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
    return SyntheticMarket(columns=columns, log_returns=log_returns, phi=phi, sigma=sigma, cost_rate=cost_rate)


def make_noise_market(
    n_bars: int, *, sigma: float = 0.005, cost_rate: float = 1e-4, seed: int = 0, start_price: float = 100.0
) -> SyntheticMarket:
    """Independent returns: nothing to learn, so the right policy is not to trade."""
    return make_signal_market(n_bars, phi=0.0, sigma=sigma, cost_rate=cost_rate, seed=seed, start_price=start_price)


def oracle_positions(market: SyntheticMarket) -> np.ndarray:
    """The Bayes-optimal position per bar (−1, 0, +1) given the last return, decided at bar t's close.

    The expected next log return is φ·r_t. Entering or flipping costs ``cost_rate`` per unit of
    position changed, so the oracle keeps its current position unless the expected edge of the
    other side exceeds the cost of switching (a hysteresis band, which is what keeps it from
    churning on tiny returns), and never trades on a market with φ = 0.
    """
    expected = market.phi * market.log_returns  # [n_bars] E[r_{t+1} | r_t]
    positions = np.zeros(len(market))
    current = 0.0
    for t, edge in enumerate(expected):
        wanted = float(np.sign(edge))
        if wanted != current and abs(edge) * 1.0 > market.cost_rate * abs(wanted - current):
            current = wanted
        positions[t] = current
    return positions


def position_returns(close: np.ndarray, positions: np.ndarray, cost_rate: float) -> np.ndarray:
    """Per-bar net simple return of holding ``positions[t]`` (fraction of equity) from t to t+1.

    ``net[t] = positions[t]·(close[t+1]/close[t] − 1) − cost_rate·|positions[t] − positions[t−1]|``
    for t in 0..n−2 (the position before bar 0 is flat). Agent and oracle are scored by this same
    function, so their Sharpe ratios are comparable.
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
