"""Simple strategies fitted on the training bars only: the bar a learning agent has to clear.

- ``ar5`` (:func:`fit_ar`): OLS of r_{t+1} on (1, r_t, …, r_{t−k+1}) over the training log returns,
  k = 5; it trades the sign of the prediction.
- ``rolling_autocorr`` (:func:`fit_rolling_autocorr`): the lag-1 autocorrelation of the last w
  returns, ρ̂_t = Σ r_i·r_{i−1} / Σ r_{i−1}² over i ∈ (t−w, t], predicts s·ρ̂_t·r_t.
- ``zscore`` (:func:`fit_zscore`): the z-score of the log price against its w-bar moving average,
  z_t = (x_t − mean(x_{t−w+1…t})) / std(x_{t−w+1…t}); it predicts s·b·z_t (s = −1 mean reversion,
  +1 momentum; b = |OLS slope of r_{t+1} on z_t| puts the edge in return units for the cost band).

The rolling rules choose their window w and sign s by the Sharpe ratio on the training bars. Every
rule trades through :func:`trainer.data.synthetic.hysteresis_positions`, the same cost band as the
oracles, with a flat band chosen on the training bars as the oracles' is
(:func:`trainer.data.synthetic.fit_flat_band`). Every ``fit_*`` receives the training closes and
nothing else, so it cannot read a later bar; :meth:`FittedRule.positions` then applies the fitted
rule causally (bar t from bars ≤ t) to any series.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from trainer.data.synthetic import fit_flat_band, hysteresis_positions, position_returns, sharpe

AR_ORDER = 5
AUTOCORR_WINDOWS = (24, 48, 96, 192, 384)
ZSCORE_WINDOWS = (6, 12, 24, 48, 96, 192)
SIGNS = (1.0, -1.0)


@dataclass(frozen=True)
class FittedRule:
    """A rule with its fitted values; ``expected(close)`` is its prediction of the next log return."""

    kind: str  # "ar5" | "rolling_autocorr" | "zscore"
    params: Mapping[str, float | list[float]]
    train_sharpe: float  # Sharpe of its positions on the training bars (annualised)
    flat_band: float = 0.0  # flat while |expected| ≤ this (edge units; fitted on the training bars)

    def expected(self, close: np.ndarray) -> np.ndarray:
        """Predicted r_{t+1} per bar from bars ≤ t → [n_bars] (0 where the history is too short)."""
        if self.kind == "ar5":
            return _ar_prediction(log_returns(close), np.asarray(self.params["coefficients"]))
        if self.kind == "rolling_autocorr":
            return self.params["sign"] * autocorr_signal(log_returns(close), int(self.params["window"]))
        if self.kind == "zscore":
            scale = self.params["sign"] * self.params["scale"]
            return scale * zscore(np.log(np.asarray(close, dtype=np.float64)), int(self.params["window"]))
        raise ValueError(f"unknown baseline rule ({self.kind!r} vs ar5, rolling_autocorr or zscore) — hint: "
                         f"build rules with fit_baselines")  # fmt: skip

    def positions(self, close: np.ndarray, cost_rate: float) -> np.ndarray:
        """Positions (−1, 0, +1) per bar, decided at bar t's close, with the cost hysteresis and the
        fitted flat band."""
        return hysteresis_positions(self.expected(close), cost_rate, self.flat_band)


def log_returns(close: np.ndarray) -> np.ndarray:
    """r_t = log(close_t / close_{t−1}), r_0 = 0 → [n_bars]."""
    close = np.asarray(close, dtype=np.float64)
    return np.concatenate([[0.0], np.diff(np.log(close))])


def _check_training_bars(close: np.ndarray, needed: int) -> np.ndarray:
    close = np.asarray(close, dtype=np.float64)
    if close.ndim != 1 or len(close) < needed:
        raise ValueError(
            f"too few training bars to fit a baseline ({close.shape} vs at least {needed}) — hint: "
            f"give the rule a longer training window"
        )
    return close


def _lagged(r: np.ndarray, k: int) -> np.ndarray:
    """Rows (1, r_t, …, r_{t−k+1}) for every t → [n, k + 1]; rows t < k are zero beyond the constant."""
    design = np.zeros((len(r), k + 1))
    design[:, 0] = 1.0
    for lag in range(k):
        design[lag:, lag + 1] = r[: len(r) - lag]
    return design


def _ar_prediction(r: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    k = len(coefficients) - 1
    predicted = _lagged(r, k) @ coefficients  # [n]
    predicted[:k] = 0.0  # not enough history (r_0 is a placeholder, not a return)
    return predicted


def _rolling_sum(values: np.ndarray, window: int) -> np.ndarray:
    """Sum of the last ``window`` values at every t (fewer at the start) → [n]."""
    total = np.cumsum(values)
    total[window:] = total[window:] - total[:-window]
    return total


def autocorr_signal(r: np.ndarray, window: int) -> np.ndarray:
    """ρ̂_t·r_t with ρ̂_t over the last ``window`` return pairs; 0 until the window is full."""
    products = np.concatenate([[0.0], r[1:] * r[:-1]])  # [n] r_t·r_{t−1}
    squares = np.concatenate([[0.0], r[:-1] ** 2])  # [n] r_{t−1}²
    numerator, denominator = _rolling_sum(products, window), _rolling_sum(squares, window)
    signal = np.zeros(len(r))
    ready = np.arange(len(r)) > window  # pairs (r_i, r_{i−1}) with i ≥ 2 only: r_0 is not a return
    ready &= denominator > 0.0
    signal[ready] = numerator[ready] / denominator[ready] * r[ready]
    return signal


def zscore(log_price: np.ndarray, window: int) -> np.ndarray:
    """(x_t − mean) / std over the last ``window`` log prices; 0 until the window is full."""
    z = np.zeros(len(log_price))
    if len(log_price) < window:
        return z
    windows = sliding_window_view(log_price, window)  # [n − w + 1, w]
    std = windows.std(axis=1)
    centred = log_price[window - 1 :] - windows.mean(axis=1)
    valid = std > 0.0
    z[window - 1 :][valid] = centred[valid] / std[valid]
    return z


def _fitted(kind: str, params: Mapping[str, float | list[float]], close: np.ndarray, expected: np.ndarray,
            cost_rate: float, periods_per_year: float) -> FittedRule:  # fmt: skip
    """A candidate rule with its flat band fitted and its Sharpe ratio on the training bars."""
    band = fit_flat_band(close, expected, cost_rate)
    positions = hysteresis_positions(expected, cost_rate, band)
    return FittedRule(kind, params, sharpe(position_returns(close, positions, cost_rate), int(periods_per_year)), band)


def _best(candidates: list[FittedRule]) -> FittedRule:
    """The candidate with the highest training Sharpe; the first one listed on a tie (deterministic)."""
    return max(candidates, key=lambda rule: rule.train_sharpe)


def fit_ar(train_close: np.ndarray, *, cost_rate: float, periods_per_year: float, order: int = AR_ORDER) -> FittedRule:
    """OLS AR(``order``) with an intercept on the training log returns."""
    close = _check_training_bars(train_close, 4 * order + 8)
    r = log_returns(close)
    design = _lagged(r, order)[order:-1]  # [m, k + 1] rows t = k … n−2 (r_1 … r_{n−1} are returns)
    target = r[order + 1 :]  # [m] r_{t+1}
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    rule = FittedRule("ar5", {"coefficients": coefficients.tolist()}, 0.0)
    return _fitted(rule.kind, rule.params, close, rule.expected(close), cost_rate, periods_per_year)


def fit_rolling_autocorr(
    train_close: np.ndarray, *, cost_rate: float, periods_per_year: float, windows: tuple[int, ...] = AUTOCORR_WINDOWS
) -> FittedRule:
    """The rolling-autocorrelation rule with the window and sign of the best training Sharpe."""
    close = _check_training_bars(train_close, 2 * min(windows) + 2)
    r = log_returns(close)
    candidates = []
    for window in windows:
        if window + 2 > len(close):
            continue  # a window longer than the training bars never trades there
        signal = autocorr_signal(r, window)
        for sign in SIGNS:
            candidates.append(_fitted("rolling_autocorr", {"window": float(window), "sign": sign}, close, sign * signal,
                                      cost_rate, periods_per_year))  # fmt: skip
    return _best(candidates)


def fit_zscore(
    train_close: np.ndarray, *, cost_rate: float, periods_per_year: float, windows: tuple[int, ...] = ZSCORE_WINDOWS
) -> FittedRule:
    """The moving-average z-score rule (reversion or momentum) with the best training Sharpe."""
    close = _check_training_bars(train_close, 2 * min(windows) + 2)
    log_price = np.log(close)
    r_next = np.concatenate([log_returns(close)[1:], [0.0]])  # [n] r_{t+1} (0 past the last bar)
    candidates = []
    for window in windows:
        if window + 2 > len(close):
            continue
        z = zscore(log_price, window)
        z_fit, r_fit = z[:-1], r_next[:-1]
        energy = float(z_fit @ z_fit)
        scale = abs(float(z_fit @ r_fit)) / energy if energy > 0.0 else 0.0
        for sign in SIGNS:
            candidates.append(_fitted("zscore", {"window": float(window), "sign": sign, "scale": scale}, close,
                                      sign * scale * z, cost_rate, periods_per_year))  # fmt: skip
    return _best(candidates)


def fit_baselines(train_close: np.ndarray, *, cost_rate: float, periods_per_year: float) -> dict[str, FittedRule]:
    """Every baseline fitted on ``train_close`` (the training bars' closes only), keyed by kind."""
    options = {"cost_rate": cost_rate, "periods_per_year": periods_per_year}
    return {
        "ar5": fit_ar(train_close, **options),
        "rolling_autocorr": fit_rolling_autocorr(train_close, **options),
        "zscore": fit_zscore(train_close, **options),
    }
