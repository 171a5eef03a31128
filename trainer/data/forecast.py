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

Two options widen what it regresses on and choose how hard it shrinks (``data.forecast_signals``,
``data.forecast_ridge_cv``; both off by default — see the end):

* the feature row **and a bank of classic signals** (:func:`signal_bank`): the lag-1
  autocorrelation of the last w returns times the last return, and the z-score of the log price
  against its last w bars, at the windows the fitted baselines search (``trainer.data.baselines``),
  each column divided by its std over the training rows. Why: the feature row holds these signals
  at two windows (16 and 64 bars); a market whose signal lives at another horizon — a regime that
  lasts ≈ 50 bars, a reversion over a few bars — was left to the network, and a one-window rule
  fitted on the same training bars beat both the linear read-out and the agent there;
* with the ridge penalty **chosen on the training bars** (:func:`choose_ridge`): the early rows
  (those the check fits) are cut into ``CV_BLOCKS`` blocks in time order, each block after the first
  is predicted by a fit on every row before it less an embargo, and the penalty of ``RIDGE_GRID``
  with the smallest out-of-sample squared error wins. Why: a fixed, tiny penalty over some fifty
  columns fits noise worth about columns ÷ rows of R² — on a weak market as much as the signal
  itself; the cross-validated penalty shrinks hard where the edge is weak and barely where it is
  strong. The check's held-out rows take no part in choosing it.

Measured (docs/results.md §0, session 36): as a linear read-out — the forecast column as the run
fits it, traded by the oracle's rule, no RL — on 12 fresh seeds per market the two options together
lift the weak OU variant from 9 to 66 % of the oracle (the check passes on 10 seeds, not 4) and
garch_trend from 25 to 41 %, and never switch the column on for noise; but the agent reading that
column is no better: regime 84 → 71 % of the oracle on 12 paired seeds, the weak variants level
or worse. So they stay off; they are kept to re-run that ablation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer.data.baselines import AUTOCORR_WINDOWS, ZSCORE_WINDOWS, autocorr_signal, log_returns, zscore

HOLDOUT_FRACTION = 0.25
"""Share of the training rows (the latest) that checks the fit of the earlier ones."""
MIN_FIT_ROWS = 64
"""Fewer fitting rows than this (or than 2 × the columns) leave the forecast off."""
RIDGE_GRID: tuple[float, ...] = (1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
"""Penalties per row (unit-scale columns) ``data.forecast_ridge_cv`` chooses from."""
CV_BLOCKS = 4
"""Blocks of the early training rows, in time order, that choose the penalty: each after the first
is predicted by a fit on the rows before it."""
SIGNAL_NAMES: tuple[str, ...] = tuple(f"autocorr_signal_{w}" for w in AUTOCORR_WINDOWS) + tuple(
    f"zscore_{w}" for w in ZSCORE_WINDOWS
)


def signal_bank(close: np.ndarray) -> np.ndarray:
    """The classic signals of every bar from its own past [T, len(SIGNAL_NAMES)]: the rolling lag-1
    autocorrelation × the last return at ``AUTOCORR_WINDOWS``, the z-score of the log price at
    ``ZSCORE_WINDOWS`` (0 until a window is full). Bar t reads closes up to t only."""
    close = np.asarray(close, dtype=np.float64)
    returns, log_price = log_returns(close), np.log(close)
    columns = [autocorr_signal(returns, w) for w in AUTOCORR_WINDOWS] + [zscore(log_price, w) for w in ZSCORE_WINDOWS]
    return np.column_stack(columns)


@dataclass(frozen=True)
class LinearForecast:
    """A fitted forecast: ``column = clip((design @ weights + intercept) × scale)``, the design the
    feature row and, with ``signals``, the signal bank divided by ``signal_scale``."""

    weights: tuple[float, ...]  # one per feature column, then one per signal of the bank (with signals)
    intercept: float
    scale: float  # 1 / std of the forecast over the training rows (0: off)
    holdout_corr: float  # the check: correlation of the early fit with the held-out rows' next returns
    holdout_rows: int
    min_z: float
    signals: bool = False  # the design holds the signal bank
    signal_scale: tuple[float, ...] = ()  # each bank column's std over the training rows
    ridge: float | None = None  # the penalty used (None: records from before it was stored)

    @property
    def active(self) -> bool:
        return self.scale > 0.0

    def column(self, features: np.ndarray, close: np.ndarray, clip: float) -> np.ndarray:
        """The forecast column of a ``[T, F]`` feature block and its ``[T]`` closes (zeros when off)."""
        if not self.active:
            return np.zeros(features.shape[0], dtype=np.float32)
        design = _design(features, close, self.signal_scale if self.signals else None)
        if design.shape[1] != len(self.weights):
            raise ValueError(
                f"the forecast has {len(self.weights)} weights but its design {design.shape[1]} columns — hint: the "
                f"run's feature layout changed since it was fitted; re-run it"
            )
        raw = design @ np.asarray(self.weights) + self.intercept  # [T]
        return np.clip(raw * self.scale, -clip, clip).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        return {"active": self.active, "weights": list(self.weights), "intercept": self.intercept, "scale": self.scale,
                "holdout_corr": self.holdout_corr, "holdout_rows": self.holdout_rows, "min_z": self.min_z,
                "signals": self.signals, "signal_scale": list(self.signal_scale), "ridge": self.ridge}  # fmt: skip

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LinearForecast:
        """A stored fit; one stored before the signal bank existed has none."""
        ridge = raw.get("ridge")
        return cls(tuple(float(w) for w in raw["weights"]), float(raw["intercept"]), float(raw["scale"]),
                   float(raw["holdout_corr"]), int(raw["holdout_rows"]), float(raw["min_z"]),
                   bool(raw.get("signals", False)), tuple(float(s) for s in raw.get("signal_scale", ())),
                   None if ridge is None else float(ridge))  # fmt: skip


def _design(features: np.ndarray, close: np.ndarray, signal_scale: tuple[float, ...] | np.ndarray | None,
            bank: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """[T, F] features, then (with a scale) the signal bank in its training units → float64 design;
    ``bank``: ``signal_bank(close)`` when the caller already has it."""
    design = features.astype(np.float64)
    if signal_scale is None:
        return design
    bank = signal_bank(close) if bank is None else bank
    return np.column_stack([design, bank / np.asarray(signal_scale, dtype=np.float64)])


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


def choose_ridge(design: np.ndarray, target: np.ndarray, *, embargo: int, min_rows: int) -> float:
    """The penalty of ``RIDGE_GRID`` whose fits predict later rows best: the rows are cut into
    ``CV_BLOCKS`` blocks in time order, block b ≥ 1 is predicted by a fit on the rows before it but
    the last ``embargo``, and the pooled squared error decides (the smallest penalty on ties). A
    block whose fit would have fewer than ``min_rows`` rows is not predicted; with none predicted the
    largest penalty is taken (nothing shows the columns carry more than noise)."""
    bounds = np.linspace(0, len(target), CV_BLOCKS + 1).astype(int)
    folds = [(start, stop) for start, stop in zip(bounds[1:-1], bounds[2:], strict=True) if start - embargo >= min_rows]
    if not folds:
        return RIDGE_GRID[-1]
    errors = []
    for ridge in RIDGE_GRID:
        squared = 0.0
        for start, stop in folds:
            weights, intercept = _ridge(design[: start - embargo], target[: start - embargo], ridge)
            squared += float(np.sum((design[start:stop] @ weights + intercept - target[start:stop]) ** 2))
        errors.append(squared)
    return RIDGE_GRID[int(np.argmin(errors))]


def fit_linear_forecast(features: np.ndarray, close: np.ndarray, train: slice, *, ridge: float, min_z: float,
                        exclude: int | None = None, signals: bool = False, ridge_cv: bool = False,
                        embargo: int = 0) -> LinearForecast:  # fmt: skip
    """Fit on the bars of ``train`` (global indices into ``features [T, F]`` and ``close [T]``)
    whose next close is inside it; see the module docstring for the check, the design and the units.
    Column ``exclude`` (the forecast's own) gets weight 0. ``signals``: add the signal bank;
    ``ridge_cv``: choose the penalty (``choose_ridge``, ``embargo`` rows between a fit and what it
    predicts) instead of ``ridge``."""
    if exclude is not None:
        features = features.copy()
        features[:, exclude] = 0.0  # a constant column: centred away, its ridge weight is exactly 0
    rows = np.arange(train.start, train.stop - 1)  # [N] bars whose next close is a training bar
    signal_scale: tuple[float, ...] | None = None
    bank = signal_bank(close) if signals else None  # [T, S], once: it scales and fills the design
    if bank is not None:
        spread = bank[rows].std(axis=0) if len(rows) else np.ones(len(SIGNAL_NAMES))
        signal_scale = tuple(float(s) if s > 0.0 else 1.0 for s in spread)  # a constant column: centred away
    n_columns = features.shape[1] + (len(SIGNAL_NAMES) if signals else 0)

    def off(holdout_corr: float = 0.0, holdout_rows: int = 0, chosen: float | None = None) -> LinearForecast:
        return LinearForecast((0.0,) * n_columns, 0.0, 0.0, holdout_corr, holdout_rows, min_z, signals,
                              signal_scale or (), chosen)  # fmt: skip

    min_rows = max(MIN_FIT_ROWS, 2 * n_columns)
    if len(rows) < min_rows:
        return off()
    design = _design(features, close, signal_scale, bank)[rows]  # [N, F (+ signals)]
    next_return = np.diff(np.log(close.astype(np.float64)))[rows]  # [N] log(close[t+1] / close[t])
    scale = next_return.std()
    if not math.isfinite(scale) or scale == 0.0:
        return off()
    target = next_return / scale  # in units of the training bars' return std
    split = int(len(rows) * (1.0 - HOLDOUT_FRACTION))
    chosen = choose_ridge(design[:split], target[:split], embargo=embargo, min_rows=min_rows) if ridge_cv else ridge
    early_w, early_b = _ridge(design[:split], target[:split], chosen)
    held = len(rows) - split
    holdout_corr = _corr(design[split:] @ early_w + early_b, target[split:])
    if held < 2 or holdout_corr * math.sqrt(held) < min_z:
        return off(holdout_corr, held, chosen)
    weights, intercept = _ridge(design, target, chosen)
    fitted_std = float((design @ weights + intercept).std())
    if fitted_std == 0.0:
        return off(holdout_corr, held, chosen)
    return LinearForecast(tuple(float(w) for w in weights), intercept, 1.0 / fitted_std, holdout_corr, held, min_z,
                          signals, signal_scale or (), chosen)  # fmt: skip
