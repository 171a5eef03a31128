"""Per-bar feature vectors with no look-ahead: the columns ``trainer.layout.FEATURE`` names.

The column list and the groups come from ``trainer/layout.py`` (the single source of truth the
CUDA header is generated from); this module says how each column is computed. Every step is a
prefix computation — log returns over past bars, trailing rolling windows, coarse bars that have
already closed — so the value at bar t depends on bars 0..t only (a property test alters the bars
after t and checks that nothing at or before t moves).

Normalisation is causal too and makes values comparable across instruments and datasets: each
raw column goes through one of three treatments over a trailing window of ``norm_window`` bars
(at least ``norm_min_periods`` defined values):

* ``scale``  — divide by the rolling RMS; for signed, zero-centred quantities (returns,
  momentum, OFI, book centre of mass), whose sign and zero must survive.
* ``zscore`` — subtract the rolling mean, divide by the rolling std (ddof 0); for positive level
  quantities (volatility, range, spread). A zero std gives 0.
* ``none``   — already unit-free (queue imbalance and return autocorrelation in [-1, 1], the
  volume z-scores, the AR(1) forecast in units of realised volatility, the linear forecast in
  units of its own training-window std — 0 here: a run fills it per split, ``trainer.data.forecast``).

then clipping to ``±clip``. Undefined values (warm-up rows, a one-sided book) become 0 and are
flagged in ``FeatureSet.valid``; ``valid_from`` is the first row with every column defined.
Without MBP-10 data the order-flow group is all zeros (its width is fixed by the layout).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from trainer.data.bars import BOOK_LEVELS, Bars
from trainer.errors import UserError
from trainer.layout import FEATURE, FEATURE_GROUPS, FEATURE_STRIDE

if TYPE_CHECKING:
    import pandas as pd

#: Group names (lower case of the layout's FEATURE_GROUP slots) and their widths.
FEATURE_GROUP_NAMES: tuple[str, ...] = tuple(s.name.lower() for s in FEATURE_GROUPS.slots)
FEATURE_GROUP_WIDTHS: dict[str, int] = {s.name.lower(): s.width for s in FEATURE_GROUPS.slots}
MARKET_GROUP = "market"
ORDER_FLOW_GROUP = "order_flow"
MARKET_WIDTH = FEATURE_GROUP_WIDTHS[MARKET_GROUP]
ORDER_FLOW_WIDTH = FEATURE_GROUP_WIDTHS[ORDER_FLOW_GROUP]
FEATURE_WIDTH = FEATURE_STRIDE

#: Coarse bars of the multi-timeframe columns hold this many base bars; their volatility is the
#: RMS of the last MTF_VOL_COARSE_BARS completed coarse returns.
MTF_FACTORS = (4, 16)
MTF_VOL_COARSE_BARS = 8


def _column_names() -> tuple[str, ...]:
    names: list[str] = []
    for slot in FEATURE.slots:
        base = slot.name.lower()
        names.extend([base] if slot.width == 1 else [f"{base}_{k + 1}" for k in range(slot.width)])
    return tuple(names)


#: One name per column of the [T, FEATURE_WIDTH] array, in layout order.
FEATURE_NAMES: tuple[str, ...] = _column_names()


@dataclass(frozen=True)
class FeatureConfig:
    """How raw features are normalised (part of the feature-cache key)."""

    norm_window: int = 256
    """Trailing window (bars) of the rolling normalisation statistics."""
    norm_min_periods: int = 64
    """Defined values the window needs before a normalised value is emitted (the warm-up)."""
    clip: float = 5.0
    """Normalised values are clipped to [-clip, clip]."""

    def __post_init__(self) -> None:
        problems = []
        if self.norm_window < 2:
            problems.append(f"norm_window={self.norm_window} (>= 2)")
        if not 1 <= self.norm_min_periods <= self.norm_window:
            problems.append(f"norm_min_periods={self.norm_min_periods} (1..norm_window)")
        if not self.clip > 0:
            problems.append(f"clip={self.clip} (> 0)")
        if problems:
            raise UserError(
                "invalid feature config", got="; ".join(problems), expected="the ranges in brackets",
                hint="fix the [features] settings",
            )

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class FeatureSet:
    """The feature tensor of a bar series, ready for ``torch.from_numpy``."""

    values: np.ndarray  # [T, FEATURE_WIDTH] float32
    valid: np.ndarray  # [T] bool: every column defined at this bar
    valid_from: int  # first row with every column defined (len(values) if none)
    has_order_flow: bool
    config: FeatureConfig

    names: tuple[str, ...] = FEATURE_NAMES

    @property
    def groups(self) -> dict[str, slice]:
        return {s.name.lower(): slice(FEATURE_GROUPS.offsets[s.name], FEATURE_GROUPS.offsets[s.name] + s.width) for s in FEATURE_GROUPS.slots}

    def group(self, name: str) -> np.ndarray:
        return self.values[:, self.groups[name]]

    def column(self, name: str) -> np.ndarray:
        return self.values[:, self.names.index(name)]


# --- raw features -----------------------------------------------------------------------------

def _rolling(values: np.ndarray, window: int, min_periods: int | None = None) -> pd.core.window.Rolling:
    import pandas as pd  # only feature computation needs it; the trainer imports without pandas

    return pd.DataFrame(values).rolling(window, min_periods=window if min_periods is None else min_periods)


def _log_return(log_close: np.ndarray, horizon: int) -> np.ndarray:
    out = np.full(log_close.shape, np.nan)
    out[horizon:] = log_close[horizon:] - log_close[:-horizon]
    return out


def _realised_vol(log_close: np.ndarray, window: int) -> np.ndarray:
    r1 = _log_return(log_close, 1)
    return np.sqrt(_rolling(r1 * r1, window).mean().to_numpy()[:, 0])


def _momentum(close: np.ndarray, window: int) -> np.ndarray:
    mean_close = _rolling(close, window).mean().to_numpy()[:, 0]
    return np.log(close / mean_close)


def _autocorrelation(log_close: np.ndarray, window: int) -> np.ndarray:
    """Lag-1 autocorrelation of 1-bar log returns over the last ``window`` bars, Σ r_t·r_{t−1} / Σ r_t²
    (zero-mean form: hourly means are negligible beside the noise), in [−1, 1]. Why a feature: whether
    the market currently trends or reverts is a property of the recent bars' co-movement that a policy
    cannot read off any single return, and it changes sign between regimes."""
    r1 = _log_return(log_close, 1)
    lagged = np.concatenate(([np.nan], r1[:-1]))
    products = _rolling(r1 * lagged, window).sum().to_numpy()[:, 0]
    energy = _rolling(r1 * r1, window).sum().to_numpy()[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(energy > 0.0, products / energy, 0.0)
    return np.where(np.isnan(products) | np.isnan(energy), np.nan, np.clip(value, -1.0, 1.0))


def _ar1_forecast(log_close: np.ndarray, window: int) -> np.ndarray:
    """One-step forecast of a rolling AR(1) fit, ρ̂_w(t)·r_t / σ̂_w(t): the next 1-bar return the
    last ``window`` bars predict, in units of their realised volatility (clipped to ±4). Why a
    feature: when the sign of the autocorrelation changes over time (trending and reverting
    spells), the useful signal is the *product* of the current autocorrelation and the last
    return; a small network fitted on a few thousand updates finds such an interaction of two
    inputs slowly, while every linear rule over this column is the rolling-AR(1) trader."""
    r1 = _log_return(log_close, 1)
    rho = _autocorrelation(log_close, window)
    vol = _realised_vol(log_close, window)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(vol > 0.0, rho * r1 / vol, 0.0)
    return np.where(np.isnan(rho) | np.isnan(vol) | np.isnan(r1), np.nan, np.clip(value, -4.0, 4.0))


def _volume_z(bars: Bars, window: int) -> np.ndarray:
    if not bars.has_volume:
        return np.zeros(len(bars))
    x = np.log1p(bars.volume)
    roll = _rolling(x, window)
    mean = roll.mean().to_numpy()[:, 0]
    std = roll.std(ddof=0).to_numpy()[:, 0]
    return _safe_z(x, mean, std)


def _safe_z(x: np.ndarray, mean: np.ndarray, std: np.ndarray) -> np.ndarray:
    """(x - mean) / std, 0 where the window is constant (std at rounding level)."""
    flat = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (x - mean) / std
    return np.where(flat & np.isfinite(mean), 0.0, z)


def _coarse_bars(bars: Bars, factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Return and volatility of the last *completed* clock-aligned coarse bar, per base bar.

    Coarse bar id = timestamp // (factor × bar_ns): epoch-aligned, so gaps (weekends) never merge
    two coarse bars. At bar t only coarse bars with a smaller id than t's are complete, and their
    closes lie strictly before t.
    """
    span = max(int(bars.bar_ns), 1) * factor
    bucket = bars.timestamps // span  # [T]
    new_run = np.concatenate(([True], bucket[1:] != bucket[:-1]))  # [T]
    run_of = np.cumsum(new_run) - 1  # [T] coarse-bar index of each bar
    run_start = np.flatnonzero(new_run)  # [R]
    run_end = np.concatenate((run_start[1:], [len(bars)])) - 1  # [R]
    log_close = np.log(bars.close[run_end])  # [R]
    coarse_ret = np.concatenate(([np.nan], np.diff(log_close)))  # [R]
    coarse_vol = np.sqrt(_rolling(coarse_ret * coarse_ret, MTF_VOL_COARSE_BARS).mean().to_numpy()[:, 0])  # [R]
    previous = run_of - 1  # [T] last completed coarse bar
    has_previous = previous >= 0
    safe = np.where(has_previous, previous, 0)
    return np.where(has_previous, coarse_ret[safe], np.nan), np.where(has_previous, coarse_vol[safe], np.nan)


def _order_flow(bars: Bars) -> dict[str, np.ndarray]:
    book, flow = bars.book, bars.flow
    n = len(bars)
    if book is None or flow is None:
        return {
            "OFI": np.zeros((n, BOOK_LEVELS)),
            "QUEUE_IMBALANCE": np.zeros(n),
            "QUEUE_IMBALANCE_ALL": np.zeros(n),
            "SPREAD_REL": np.zeros(n),
            "BOOK_COM": np.zeros(n),
        }
    with np.errstate(divide="ignore", invalid="ignore"):
        depth = flow.mean_depth[:, None]  # [T, 1]
        ofi = np.where(depth > 0, flow.ofi / depth, 0.0)  # [T, L] Xu–Gould–Howison depth-normalised
        bid1, ask1 = book.bid_sz[:, 0], book.ask_sz[:, 0]
        total1 = bid1 + ask1
        queue_imbalance = np.where(total1 > 0, (bid1 - ask1) / total1, 0.0)
        bid_depth, ask_depth = book.bid_sz.sum(axis=1), book.ask_sz.sum(axis=1)  # [T] all levels
        total_depth = bid_depth + ask_depth
        queue_imbalance_all = np.where(total_depth > 0, (bid_depth - ask_depth) / total_depth, 0.0)
        mid = 0.5 * (book.bid_px[:, 0] + book.ask_px[:, 0])  # NaN on a one-sided book
        spread = (book.ask_px[:, 0] - book.bid_px[:, 0]) / mid
        notional = np.nansum(book.bid_px * book.bid_sz, axis=1) + np.nansum(book.ask_px * book.ask_sz, axis=1)
        size = book.bid_sz.sum(axis=1) + book.ask_sz.sum(axis=1)
        centre = np.where(size > 0, notional / size / mid - 1.0, np.nan)  # depth-weighted distance from mid
    return {
        "OFI": ofi,
        "QUEUE_IMBALANCE": queue_imbalance,
        "QUEUE_IMBALANCE_ALL": queue_imbalance_all,
        "SPREAD_REL": spread,
        "BOOK_COM": centre,
    }


_SCALE, _ZSCORE, _NONE = "scale", "zscore", "none"

#: Normalisation per layout slot (see the module docstring).
NORMALISATION: dict[str, str] = {
    "RET_1": _SCALE, "RET_4": _SCALE, "RET_16": _SCALE, "RET_64": _SCALE,
    "REALIZED_VOL_16": _ZSCORE, "REALIZED_VOL_64": _ZSCORE, "LOG_RANGE": _ZSCORE,
    "VOLUME_Z_16": _NONE, "VOLUME_Z_64": _NONE, "MOMENTUM_16": _SCALE, "MOMENTUM_64": _SCALE,
    "MTF_RET_4X": _SCALE, "MTF_VOL_4X": _ZSCORE, "MTF_RET_16X": _SCALE, "MTF_VOL_16X": _ZSCORE,
    "AUTOCORR_16": _NONE, "AUTOCORR_64": _NONE, "AR1_FORECAST_16": _NONE, "AR1_FORECAST_64": _NONE,
    "LINEAR_FORECAST": _NONE,
    "OFI": _SCALE, "QUEUE_IMBALANCE": _NONE, "QUEUE_IMBALANCE_ALL": _NONE, "SPREAD_REL": _ZSCORE, "BOOK_COM": _SCALE,
}  # fmt: skip


#: Columns whose sign flips in the mirrored market (every log return negated: the price path
#: reflected, bids and asks swapped), read by the replay's mirror augmentation (replay.mirror).
#: The other columns are even — volatilities, ranges, volumes, autocorrelations, the spread — and
#: stay as they are. Momentum (log of close over its mean) and the linear forecast (its fitted
#: intercept) are odd to first order; a test mirrors bars and checks every column.
MIRROR_ODD: frozenset[str] = frozenset({
    "RET_1", "RET_4", "RET_16", "RET_64", "MOMENTUM_16", "MOMENTUM_64", "MTF_RET_4X", "MTF_RET_16X",
    "AR1_FORECAST_16", "AR1_FORECAST_64", "LINEAR_FORECAST",
    "OFI", "QUEUE_IMBALANCE", "QUEUE_IMBALANCE_ALL", "BOOK_COM",
})  # fmt: skip


def raw_features(bars: Bars) -> dict[str, np.ndarray]:
    """Un-normalised value of every layout slot: ``[T]`` or ``[T, width]``, NaN where undefined."""
    close = bars.close
    log_close = np.log(close)
    out: dict[str, np.ndarray] = {}
    for horizon in (1, 4, 16, 64):
        out[f"RET_{horizon}"] = _log_return(log_close, horizon)
    for window in (16, 64):
        out[f"REALIZED_VOL_{window}"] = _realised_vol(log_close, window)
        out[f"VOLUME_Z_{window}"] = _volume_z(bars, window)
        out[f"MOMENTUM_{window}"] = _momentum(close, window)
        out[f"AUTOCORR_{window}"] = _autocorrelation(log_close, window)
        out[f"AR1_FORECAST_{window}"] = _ar1_forecast(log_close, window)
    out["LOG_RANGE"] = np.log(bars.high / bars.low)
    # Needs a run's training window: 0 here, filled per split (trainer.data.forecast) — the cached,
    # split-free feature set must not depend on where a run puts its windows.
    out["LINEAR_FORECAST"] = np.zeros(len(close))
    for factor in MTF_FACTORS:
        out[f"MTF_RET_{factor}X"], out[f"MTF_VOL_{factor}X"] = _coarse_bars(bars, factor)
    out.update(_order_flow(bars))
    return out


def _normalise(raw: np.ndarray, kind: str, config: FeatureConfig) -> np.ndarray:
    """Causal normalisation of a [T, k] block; NaN stays NaN (undefined)."""
    if kind == _NONE:
        return raw
    if kind == _SCALE:
        rms = np.sqrt(_rolling(raw * raw, config.norm_window, config.norm_min_periods).mean().to_numpy())
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(rms > 0, raw / rms, np.where(np.isnan(rms), np.nan, 0.0))
    roll = _rolling(raw, config.norm_window, config.norm_min_periods)
    return _safe_z(raw, roll.mean().to_numpy(), roll.std(ddof=0).to_numpy())


def compute_features(bars: Bars, config: FeatureConfig | None = None) -> FeatureSet:
    """The [T, FEATURE_WIDTH] float32 feature tensor of ``bars`` (see the module docstring)."""
    config = config or FeatureConfig()
    raw = raw_features(bars)
    missing = [s.name for s in FEATURE.slots if s.name not in raw or s.name not in NORMALISATION]
    if missing:
        raise UserError(
            "feature layout and feature code disagree", got=f"no computation for {missing}",
            expected="one per trainer.layout.FEATURE slot", hint="add the computation in trainer/data/features.py",
        )
    n = len(bars)
    values = np.empty((n, FEATURE_WIDTH), dtype=np.float64)  # [T, F]
    for slot in FEATURE.slots:
        block = raw[slot.name].reshape(n, slot.width)  # [T, width]
        offset = FEATURE.offsets[slot.name]
        values[:, offset : offset + slot.width] = _normalise(block, NORMALISATION[slot.name], config)
    defined = ~np.isnan(values)  # [T, F]
    valid = defined.all(axis=1)  # [T]
    np.clip(values, -config.clip, config.clip, out=values)
    values[~defined] = 0.0
    first = np.flatnonzero(valid)
    return FeatureSet(
        values=values.astype(np.float32),
        valid=valid,
        valid_from=int(first[0]) if first.size else n,
        has_order_flow=bars.has_book,
        config=config,
    )
