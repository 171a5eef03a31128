"""Out-of-sample backtest report: the agent's equity curve against buy-and-hold and flat.

Why baselines: a Sharpe ratio alone says little about a trading agent on one market year; the same
validation window traded by buy-and-hold (the market's own return) and by staying flat (zero risk,
zero return) says whether the agent added anything. All three curves come from the same
accounting (the environment's fills, fees and slippage), so the comparison is fair; this module
only turns curves into metrics (``trainer.eval.metrics.summarize``) and the ``metrics.json``
structure ``{"agent": {...}, "buy_and_hold": {...}, "flat": {...}}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from trainer.eval.metrics import json_ready, returns_from_equity, sharpe_lower_bound, summarize, trade_count


@dataclass(frozen=True)
class EquityCurve:
    """One strategy over the validation window."""

    equity: np.ndarray  # [n + 1] equity before the first bar, then after each bar
    exposure: np.ndarray  # [n] signed position value / equity held over each period
    units: np.ndarray | None = None  # [n] position in units held over each period (orders = its changes)
    actions: dict[str, dict[str, float]] = field(default_factory=dict)  # branch → sub-action → fraction

    def __post_init__(self) -> None:
        if self.equity.ndim != 1 or self.exposure.ndim != 1 or self.equity.shape[0] != self.exposure.shape[0] + 1:
            raise ValueError(
                f"equity/exposure lengths disagree ({self.equity.shape} / {self.exposure.shape} vs [n + 1] / [n]) "
                f"— hint: equity starts with the initial value, exposure has one value per period"
            )


def exposure_from_units(units: np.ndarray, close: np.ndarray, equity: np.ndarray) -> np.ndarray:
    """Signed exposure per period: units held over period t × close_t / equity_t → [n]."""
    return np.asarray(units, dtype=np.float64) * np.asarray(close, dtype=np.float64) / np.asarray(equity, dtype=np.float64)


def strategy_metrics(curve: EquityCurve, periods_per_year: float) -> dict[str, float | int | None]:
    """summarize() of one curve, strict-JSON ready.

    Turnover comes from the exposure (fraction of equity traded per period); the trade count from
    the units held when known, since a constant position's exposure drifts with the price without
    any order being sent.
    """
    summary = summarize(equity=curve.equity, positions=curve.exposure, periods_per_year=periods_per_year)
    if curve.units is not None:
        summary["trade_count"] = trade_count(curve.units)
    return json_ready(summary)


def timing_sharpe_ratio(agent: EquityCurve, market: EquityCurve, periods_per_year: float) -> float:
    """The agent's Sharpe ratio with the return of its static beta taken out of the numerator:
    (mean return − mean exposure × the market's mean return per unit) / std of the return,
    annualised — what it earned by *timing* its position, on its own risk. NaN for a flat agent.

    Why: a window's drift is a property of the window, not of the policy. A policy long on most
    bars of a validation window that happened to rise scores a high Sharpe there and none on the
    next window; selected by the plain Sharpe, such an epoch can win over one that trades the
    signal. (As a selection criterion it was measured and not adopted: docs/results.md §0, session
    23 — the same epoch on 10 of 10 regime seeds, a worse one on 1 of 5 garch_trend seeds.) A constant position scores ≈ 0 whatever
    the drift; a policy with no net exposure keeps its Sharpe. Only the numerator changes: the
    Sharpe of the residual returns would be scale-free and give a near-constant position's tiny
    residue any value.
    """
    returns = returns_from_equity(agent.equity)
    if returns.size < 2 or returns.max() == returns.min():
        return math.nan
    market_returns = returns_from_equity(market.equity) / _unit_exposure(market)
    static = float(np.mean(agent.exposure))
    excess = float(np.mean(returns)) - static * float(np.mean(market_returns))
    return excess / float(np.std(returns, ddof=1)) * math.sqrt(periods_per_year)


def _unit_exposure(market: EquityCurve) -> np.ndarray:
    """Buy-and-hold's exposure per period (≈ 1, less its fees); 1 where it is 0 (no division by 0)."""
    exposure = np.asarray(market.exposure, dtype=np.float64)
    return np.where(exposure != 0.0, exposure, 1.0)


def backtest_report(
    agent: EquityCurve, buy_and_hold: EquityCurve, flat: EquityCurve, periods_per_year: float
) -> dict[str, dict[str, float | int | None]]:
    """The three strategies' metrics, keyed as metrics.json stores them; the agent's also hold its
    ``timing_sharpe_ratio`` (against buy-and-hold's per-unit returns) and its ``sharpe_lower_bound``
    (``trainer.eval.metrics.sharpe_lower_bound``)."""
    report = {
        "agent": strategy_metrics(agent, periods_per_year),
        "buy_and_hold": strategy_metrics(buy_and_hold, periods_per_year),
        "flat": strategy_metrics(flat, periods_per_year),
    }
    report["agent"].update(json_ready({
        "timing_sharpe_ratio": timing_sharpe_ratio(agent, buy_and_hold, periods_per_year),
        "sharpe_lower_bound": sharpe_lower_bound(returns_from_equity(agent.equity), periods_per_year),
    }))  # fmt: skip
    report["agent"]["final_equity"] = float(agent.equity[-1])
    report["buy_and_hold"]["final_equity"] = float(buy_and_hold.equity[-1])
    report["flat"]["final_equity"] = float(flat.equity[-1])
    return report
