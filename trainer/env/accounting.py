"""Backtest accounting reference: the semantics the environment kernel must reproduce.

This is vectorbt's ``Portfolio.from_orders`` with target-amount orders (FIELD-NOTES, "Backtest
accounting"): at every bar the position is moved to its target at the bar's close, buys fill at
close × (1 + slippage) and sells at close × (1 − slippage), each order pays
fee_rate × |units| × fill price, and equity = cash + position × close. It is a plain loop on
purpose — an independent statement of the rules that the vectorised env and the CUDA kernel are
tested against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch


def _floats(values: torch.Tensor | Sequence[float] | float) -> list[float]:
    if isinstance(values, torch.Tensor):
        return values.detach().to("cpu", torch.float64).reshape(-1).tolist()
    return np.asarray(values, dtype=np.float64).reshape(-1).tolist()


def backtest_targets(
    close: torch.Tensor | Sequence[float],
    target_units: torch.Tensor | Sequence[float],
    *,
    fee_rate: float,
    slippage: float | torch.Tensor | Sequence[float],
    init_cash: float,
) -> torch.Tensor:
    """Per-bar equity [T] (float64) after trading to ``target_units[t]`` at ``close[t]``.

    ``slippage`` is a fraction of price, either one value or one per bar (the env's effective
    slippage depends on the order type, urgency and spread of each bar; a negative value is a
    price improvement, as for a limit order that earns part of the spread).
    """
    closes, targets = _floats(close), _floats(target_units)
    if len(closes) != len(targets):
        raise ValueError(
            f"close and target_units differ in length ({len(closes)} vs {len(targets)}) — hint: one target per bar"
        )
    if isinstance(slippage, int | float):
        slips = [float(slippage)] * len(closes)
    else:
        slips = _floats(slippage)
        if len(slips) != len(closes):
            raise ValueError(
                f"slippage has {len(slips)} values (vs {len(closes)} bars) — hint: pass one value or one per bar"
            )
    bad = [i for i, c in enumerate(closes) if not (math.isfinite(c) and c > 0)]
    if bad:
        raise ValueError(
            f"close must be finite and positive (bar {bad[0]}: {closes[bad[0]]} vs > 0) — hint: clean the price series"
        )
    cash, position = float(init_cash), 0.0
    equity = []
    for price, target, slip in zip(closes, targets, slips, strict=True):
        delta = target - position
        if delta != 0.0:
            fill = price * (1.0 + slip) if delta > 0 else price * (1.0 - slip)
            cash -= delta * fill + fee_rate * abs(delta) * fill
            position = target
        equity.append(cash + position * price)
    return torch.tensor(equity, dtype=torch.float64)
