"""Out-of-sample backtest report: the agent's equity curve against buy-and-hold and flat.

Why baselines: a Sharpe ratio alone says little about a trading agent on one market year; the same
validation window traded by buy-and-hold (the market's own return) and by staying flat (zero risk,
zero return) says whether the agent added anything. All three curves come from the same
accounting (the environment's fills, fees and slippage), so the comparison is fair; this module
only turns curves into metrics (``trainer.eval.metrics.summarize``) and the ``metrics.json``
structure ``{"agent": {...}, "buy_and_hold": {...}, "flat": {...}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainer.eval.metrics import json_ready, summarize, trade_count


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


def backtest_report(
    agent: EquityCurve, buy_and_hold: EquityCurve, flat: EquityCurve, periods_per_year: float
) -> dict[str, dict[str, float | int | None]]:
    """The three strategies' metrics, keyed as metrics.json stores them."""
    report = {
        "agent": strategy_metrics(agent, periods_per_year),
        "buy_and_hold": strategy_metrics(buy_and_hold, periods_per_year),
        "flat": strategy_metrics(flat, periods_per_year),
    }
    report["agent"]["final_equity"] = float(agent.equity[-1])
    report["buy_and_hold"]["final_equity"] = float(buy_and_hold.equity[-1])
    report["flat"]["final_equity"] = float(flat.equity[-1])
    return report
