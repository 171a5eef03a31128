"""The linear forecast: a ridge regression of the next bar's return on the bar's own feature row,
fitted on one run's training bars only.

Why: a linear read-out of the trainer's own features, fitted on the training bars, reaches 89–98 %
of the feasible oracle on every market of the learning suite, while the RL update, which has to
extract a one-bar edge of a few tenths of a volatility from TD targets that carry the noise of every
later reward, reached 0–93 % (docs/results.md, "the agent sees the signal but does not learn it").
Given as one input column, that edge is what the network reads — the situation of the AR(1) market,
where one column (``AR1_FORECAST_*``) carries the whole signal and the agent reaches ≈ 90 %.

Honest by construction:

* fitted on ``train`` only, and only on bars whose next close is inside it (the last training bar's
  next close lies in the embargo); validation and test bars never enter the fit;
* checked before it is used: a fit on the first ``1 − HOLDOUT_FRACTION`` of the training rows must
  predict the held-out last rows with a correlation of at least ``min_z / √n`` (``min_z`` standard
  errors above 0), else the forecast is off (all zeros) — a market without a linear edge, pure
  noise, gets no invented signal;
* in units the network can use: the final fit on every training row, divided by its own standard
  deviation over those rows, clipped like every other column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

HOLDOUT_FRACTION = 0.25
"""Share of the training rows (the latest) that checks the fit of the earlier ones."""
MIN_FIT_ROWS = 64
"""Fewer fitting rows than this (or than 2 × the columns) leave the forecast off."""


@dataclass(frozen=True)
class LinearForecast:
    """A fitted forecast: ``column(features) = clip((features @ weights + intercept) × scale)``."""

    weights: tuple[float, ...]  # one per feature column
    intercept: float
    scale: float  # 1 / std of the forecast over the training rows (0: off)
    holdout_corr: float  # the check: correlation of the early fit with the held-out rows' next returns
    holdout_rows: int
    min_z: float

    @property
    def active(self) -> bool:
        return self.scale > 0.0

    def column(self, features: np.ndarray, clip: float) -> np.ndarray:
        """The forecast column of a ``[T, F]`` feature block (zeros when off)."""
        if not self.active:
            return np.zeros(features.shape[0], dtype=np.float32)
        raw = features.astype(np.float64) @ np.asarray(self.weights) + self.intercept  # [T]
        return np.clip(raw * self.scale, -clip, clip).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        return {"active": self.active, "weights": list(self.weights), "intercept": self.intercept, "scale": self.scale,
                "holdout_corr": self.holdout_corr, "holdout_rows": self.holdout_rows, "min_z": self.min_z}  # fmt: skip

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LinearForecast:
        return cls(tuple(float(w) for w in raw["weights"]), float(raw["intercept"]), float(raw["scale"]),
                   float(raw["holdout_corr"]), int(raw["holdout_rows"]), float(raw["min_z"]))  # fmt: skip


def _ridge(design: np.ndarray, target: np.ndarray, ridge: float) -> tuple[np.ndarray, float]:
    """Ridge weights and intercept (the intercept unpenalised: columns and target centred first)."""
    mean_x, mean_y = design.mean(axis=0), target.mean()
    x, y = design - mean_x, target - mean_y
    gram = x.T @ x + ridge * len(y) * np.eye(x.shape[1])  # [F, F]; the penalty scales with the rows
    weights = np.linalg.lstsq(gram, x.T @ y, rcond=None)[0]  # lstsq: all-zero columns with ridge 0 (no book)
    return weights, float(mean_y - mean_x @ weights)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = a.std(), b.std()
    return 0.0 if sa == 0.0 or sb == 0.0 else float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def fit_linear_forecast(features: np.ndarray, close: np.ndarray, train: slice, *, ridge: float, min_z: float,
                        exclude: int | None = None) -> LinearForecast:  # fmt: skip
    """Fit on the bars of ``train`` (global indices into ``features [T, F]`` and ``close [T]``)
    whose next close is inside it; see the module docstring for the check and the units. Column
    ``exclude`` (the forecast's own) gets weight 0."""
    if exclude is not None:
        features = features.copy()
        features[:, exclude] = 0.0  # a constant column: centred away, its ridge weight is exactly 0
    n_columns = features.shape[1]

    def off(holdout_corr: float = 0.0, holdout_rows: int = 0) -> LinearForecast:
        return LinearForecast((0.0,) * n_columns, 0.0, 0.0, holdout_corr, holdout_rows, min_z)

    rows = np.arange(train.start, train.stop - 1)  # [N] bars whose next close is a training bar
    if len(rows) < max(MIN_FIT_ROWS, 2 * n_columns):
        return off()
    design = features[rows].astype(np.float64)  # [N, F]
    next_return = np.diff(np.log(close.astype(np.float64)))[rows]  # [N] log(close[t+1] / close[t])
    scale = next_return.std()
    if not math.isfinite(scale) or scale == 0.0:
        return off()
    target = next_return / scale  # in units of the training bars' return std
    split = int(len(rows) * (1.0 - HOLDOUT_FRACTION))
    early_w, early_b = _ridge(design[:split], target[:split], ridge)
    held = len(rows) - split
    holdout_corr = _corr(design[split:] @ early_w + early_b, target[split:])
    if held < 2 or holdout_corr * math.sqrt(held) < min_z:
        return off(holdout_corr, held)
    weights, intercept = _ridge(design, target, ridge)
    fitted_std = float((design @ weights + intercept).std())
    if fitted_std == 0.0:
        return off(holdout_corr, held)
    return LinearForecast(tuple(float(w) for w in weights), intercept, 1.0 / fitted_std, holdout_corr, held, min_z)
