"""Performance metrics of a return series, with empyrical's conventions (checked against it).

Conventions (those of empyrical-reloaded, = quantstats on daily data): zero risk-free rate; simple
(not log) per-period returns; NaN returns are ignored (treated as missing, and as 0 when
compounding); sample standard deviation (ddof=1); Sortino's downside deviation is
sqrt(mean(min(r, 0)²)) over *all* N periods; drawdown is measured from a running peak anchored
at the starting value (a loss in the first period is a drawdown); annual return is the CAGR
Π(1+r)^(periods_per_year/N) − 1. Edge cases follow empyrical too: fewer than 2 returns → NaN for
Sharpe/Sortino/volatility, none → NaN everywhere; zero dispersion → ±inf Sharpe (NaN when the
mean is also 0); no downside → +inf Sortino; Calmar is NaN without a drawdown.

``periods_per_year``: 252 for daily bars. For hourly FX use :data:`HOURLY_FX_PERIODS_PER_YEAR`
= 24 × 5 × 52 = 6,240: the market trades around the clock on weekdays, and the embedded EURUSD
file has 6,225 hourly bars in 2017 (weekends are gaps), i.e. 6,240 per year less a few
holiday hours. :func:`periods_per_year_from_timestamps` estimates it for any series.

Position-series metrics take ``positions[t]``, the exposure (fraction of equity, signed) held
over period t; the position before the first period is flat (0).
"""

from __future__ import annotations

import math

import numpy as np

HOURLY_FX_PERIODS_PER_YEAR = 24 * 5 * 52
DAILY_PERIODS_PER_YEAR = 252
_NS_PER_YEAR = 365.25 * 86400 * 1e9


def _returns(returns: object) -> np.ndarray:
    return np.asarray(returns, dtype=np.float64).reshape(-1)


def sharpe_ratio(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """mean / std(ddof=1) × √periods_per_year (zero risk-free rate)."""
    r = _returns(returns)
    if r.size < 2:
        return math.nan
    present = r[~np.isnan(r)]
    if present.size < 2:
        return math.nan
    mean = float(present.mean())
    std = 0.0 if present.max() == present.min() else float(present.std(ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(mean) / np.float64(std) * math.sqrt(periods_per_year))


#: One-sided 95 % normal quantile: how many standard errors ``sharpe_lower_bound`` takes off.
SHARPE_LOWER_BOUND_Z = 1.645


def sharpe_lower_bound(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR, z: float = SHARPE_LOWER_BOUND_Z) -> float:
    """The Sharpe ratio less ``z`` standard errors of its estimate, annualised: SR − z·√(ppy·(1 + SR_p²/2)/n)
    with SR_p the per-period Sharpe and n the periods (Lo 2002, iid returns).

    Why: choosing the best of several epochs by the plain Sharpe ratio on one validation window
    rewards luck — on a market with nothing to earn, a policy holding a small position beats one
    that stays flat whenever the window happened to move its way. The lower bound of a policy that
    trades pays for the uncertainty of its estimate, while a flat policy's return is known (its
    Sharpe is undefined: NaN here, scored 0 by the selection), so flat wins unless the gain is
    real. Between policies that trade over the same window the penalty is nearly the same, so the
    order among them barely changes."""
    sharpe = sharpe_ratio(returns, periods_per_year)
    n = int(np.count_nonzero(~np.isnan(_returns(returns))))
    if not math.isfinite(sharpe) or n < 2:
        return math.nan
    per_period = sharpe / math.sqrt(periods_per_year)
    return float(sharpe - z * math.sqrt(periods_per_year * (1.0 + 0.5 * per_period**2) / n))


def downside_risk(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """Annualised downside deviation: sqrt(mean over all periods of min(r, 0)²)."""
    r = _returns(returns)
    present = r[~np.isnan(r)]
    if present.size < 1:
        return math.nan
    downside = np.minimum(present, 0.0)
    return float(np.sqrt(np.mean(downside * downside)) * math.sqrt(periods_per_year))


def sortino_ratio(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """Annualised mean return / annualised downside deviation."""
    r = _returns(returns)
    if r.size < 2:
        return math.nan
    present = r[~np.isnan(r)]
    if present.size < 1:
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(present.mean() * periods_per_year) / np.float64(downside_risk(present, periods_per_year)))


def cumulative_wealth(returns: object, starting_value: float = 1.0) -> np.ndarray:
    """Wealth after each period, ``starting_value × Π(1 + r)`` (NaN returns count as 0)."""
    r = np.nan_to_num(_returns(returns), nan=0.0)
    return starting_value * np.cumprod(1.0 + r)


def max_drawdown(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """Most negative (wealth / running peak − 1), the peak starting at the initial wealth; ≤ 0.

    ``periods_per_year`` is accepted for a uniform signature; a drawdown does not annualise.
    """
    r = _returns(returns)
    if r.size < 1:
        return math.nan
    wealth = np.concatenate(([1.0], cumulative_wealth(r)))  # [N+1], anchored at the start
    peak = np.fmax.accumulate(wealth)
    return float(np.nanmin((wealth - peak) / peak))


def annual_return(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """CAGR: Π(1 + r)^(periods_per_year / N) − 1."""
    r = _returns(returns)
    if r.size < 1:
        return math.nan
    ending = np.nanprod(r + 1.0)  # np.float64: a negative ending value gives NaN, not a complex
    with np.errstate(invalid="ignore", over="ignore"):  # like empyrical: NaN or inf, not an exception
        return float(ending ** (periods_per_year / r.size) - 1.0)


def annual_volatility(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """std(ddof=1) × √periods_per_year."""
    r = _returns(returns)
    if r.size < 2:
        return math.nan
    present = r[~np.isnan(r)]
    if present.size < 2:
        return math.nan
    return float(present.std(ddof=1) * math.sqrt(periods_per_year))


def calmar_ratio(returns: object, periods_per_year: float = DAILY_PERIODS_PER_YEAR) -> float:
    """annual_return / |max_drawdown|; NaN without a drawdown (or when infinite)."""
    drawdown = max_drawdown(returns)
    if not drawdown < 0:
        return math.nan
    ratio = annual_return(returns, periods_per_year) / abs(drawdown)
    return math.nan if math.isinf(ratio) else ratio


def win_rate(returns: object) -> float:
    """Winning periods / periods with a non-zero return (quantstats' definition); NaN if none."""
    r = _returns(returns)
    r = r[~np.isnan(r)]
    active = np.count_nonzero(r)
    return math.nan if active == 0 else float(np.count_nonzero(r > 0) / active)


def profit_factor(returns: object) -> float:
    """Sum of positive returns / |sum of negative returns|; inf without losses, NaN if flat."""
    r = _returns(returns)
    r = r[~np.isnan(r)]
    gains = float(r[r > 0].sum())
    losses = float(-r[r < 0].sum())
    if losses == 0.0:
        return math.inf if gains > 0 else math.nan
    return gains / losses


def _position_changes(positions: object) -> np.ndarray:
    p = np.asarray(positions, dtype=np.float64).reshape(-1)
    return np.abs(np.diff(np.concatenate(([0.0], p))))  # [N], flat before the first period


def turnover(positions: object) -> float:
    """Mean |positions[t] − positions[t−1]| per period (fraction of equity traded); NaN if empty.

    Going from flat to fully long counts 1.0, a flip from long to short 2.0.
    """
    changes = _position_changes(positions)
    return math.nan if changes.size == 0 else float(changes.mean())


def trade_count(positions: object) -> int:
    """Periods in which the position changes (each change is one order, resizes included)."""
    return int(np.count_nonzero(_position_changes(positions)))


def periods_per_year_from_timestamps(timestamps_ns: object) -> float:
    """Bars per calendar year of a series: (N − 1) / its span in years; NaN under 2 bars."""
    ts = np.asarray(timestamps_ns, dtype=np.int64).reshape(-1)
    if ts.size < 2 or ts[-1] <= ts[0]:
        return math.nan
    return float((ts.size - 1) / ((ts[-1] - ts[0]) / _NS_PER_YEAR))


def returns_from_equity(equity: object) -> np.ndarray:
    """Simple per-period returns of an equity curve whose first element is the starting value."""
    e = np.asarray(equity, dtype=np.float64).reshape(-1)
    return e[1:] / e[:-1] - 1.0


def summarize(
    returns: object = None,
    *,
    equity: object = None,
    positions: object = None,
    periods_per_year: float = DAILY_PERIODS_PER_YEAR,
) -> dict[str, float | int]:
    """Every metric of one run, as plain Python numbers (the learner's metrics.json).

    Pass either per-period ``returns`` or an ``equity`` curve (first element = starting value).
    ``positions`` (one per return period) adds turnover and trade count. NaN/inf are kept as
    floats (``json.dump`` writes them as NaN/Infinity; :func:`json_ready` maps them to None).
    """
    if (returns is None) == (equity is None):
        given = "both" if returns is not None else "neither"
        raise ValueError(f"summarize needs returns or equity ({given} vs exactly one) — hint: pass one of them")
    r = _returns(returns) if returns is not None else returns_from_equity(equity)
    out: dict[str, float | int] = {
        "n_periods": int(r.size),
        "periods_per_year": float(periods_per_year),
        "total_return": float(np.nanprod(r + 1.0) - 1.0) if r.size else math.nan,
        "annual_return": annual_return(r, periods_per_year),
        "annual_volatility": annual_volatility(r, periods_per_year),
        "sharpe_ratio": sharpe_ratio(r, periods_per_year),
        "sortino_ratio": sortino_ratio(r, periods_per_year),
        "max_drawdown": max_drawdown(r),
        "calmar_ratio": calmar_ratio(r, periods_per_year),
        "win_rate": win_rate(r),
        "profit_factor": profit_factor(r),
    }
    if positions is not None:
        p = np.asarray(positions, dtype=np.float64).reshape(-1)
        if p.size != r.size:
            raise ValueError(f"positions and returns differ in length ({p.size} vs {r.size}) — hint: one position per return period")
        out["turnover"] = turnover(p)
        out["trade_count"] = trade_count(p)
        out["exposure"] = float(np.count_nonzero(p) / p.size) if p.size else math.nan
    return out


def json_ready(summary: dict[str, float | int]) -> dict[str, float | int | None]:
    """The summary with NaN/inf replaced by None (strict JSON)."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in summary.items()}
