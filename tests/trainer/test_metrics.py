"""trainer.eval.metrics agrees with empyrical (1e-9) and defines the position metrics precisely."""

from __future__ import annotations

import json
import math
import warnings

import empyrical
import numpy as np
import pytest

from trainer.data import load_default
from trainer.eval import metrics

EMPYRICAL_NAMES = ("sharpe_ratio", "sortino_ratio", "max_drawdown", "annual_return", "annual_volatility", "calmar_ratio")


def reference(name: str, returns: np.ndarray, periods_per_year: float) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "max_drawdown":
            return float(empyrical.max_drawdown(returns))
        return float(getattr(empyrical, name)(returns, annualization=periods_per_year))


def same(a: float, b: float) -> bool:
    if math.isnan(b):
        return math.isnan(a)
    if math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def eurusd_returns() -> np.ndarray:
    close = load_default().close
    return close[1:] / close[:-1] - 1.0


RANDOM = [np.random.default_rng(seed).normal(mu, sd, n) for seed, (mu, sd, n) in enumerate(
    [(0.0005, 0.01, 1000), (-0.001, 0.02, 300), (0.0, 0.001, 50), (0.002, 0.05, 5000)])]  # fmt: skip


@pytest.mark.parametrize("name", EMPYRICAL_NAMES)
@pytest.mark.parametrize("periods_per_year", [252, metrics.HOURLY_FX_PERIODS_PER_YEAR])
def test_agrees_with_empyrical_on_random_and_real_returns(name: str, periods_per_year: float) -> None:
    real = eurusd_returns()
    strategy = real * np.sign(np.sin(np.arange(real.size) / 50.0))  # a real-data long/short series
    for returns in [*RANDOM, real, strategy]:
        ours = getattr(metrics, name)(returns, periods_per_year)
        assert same(ours, reference(name, returns, periods_per_year)), (name, ours)


EDGE_CASES = {
    "empty": np.array([]),
    "single": np.array([0.01]),
    "constant_positive": np.full(20, 0.01),
    "constant_zero": np.zeros(20),
    "with_nan": np.array([0.01, np.nan, -0.02, 0.03, np.nan]),
    "all_up": np.array([0.01, 0.02, 0.005]),
    "all_down": np.array([-0.01, -0.02]),
    "wipe_out": np.array([-1.5, 0.1, 0.2]),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
@pytest.mark.parametrize("name", EMPYRICAL_NAMES)
def test_edge_cases_follow_empyrical(case: str, name: str) -> None:
    returns = EDGE_CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = getattr(metrics, name)(returns)
    assert same(ours, reference(name, returns, 252)), (case, name, ours)


def test_documented_edge_values() -> None:
    assert metrics.sharpe_ratio(np.full(5, 0.01)) == math.inf  # zero dispersion, positive mean
    assert math.isnan(metrics.sharpe_ratio(np.zeros(5)))
    assert metrics.sortino_ratio(np.array([0.01, 0.02])) == math.inf  # no downside
    assert math.isnan(metrics.calmar_ratio(np.array([0.01, 0.02])))  # no drawdown
    assert metrics.max_drawdown(np.array([-0.1, 0.05])) == pytest.approx(-0.1)  # anchored at the start


def test_win_rate_and_profit_factor() -> None:
    r = np.array([0.02, -0.01, 0.0, 0.03, -0.02, np.nan])
    assert metrics.win_rate(r) == pytest.approx(2 / 4)  # zero and NaN periods do not count
    assert metrics.profit_factor(r) == pytest.approx(0.05 / 0.03)
    assert metrics.profit_factor(np.array([0.01, 0.0])) == math.inf
    assert math.isnan(metrics.profit_factor(np.zeros(3))) and math.isnan(metrics.win_rate(np.zeros(3)))


def test_turnover_and_trade_count_on_a_position_series() -> None:
    positions = np.array([0.0, 1.0, 1.0, -1.0, -0.5, 0.0, 0.0])
    # changes from a flat start: 0, 1, 0, 2, 0.5, 0.5, 0 → 4 orders, 4.0 traded over 7 periods
    assert metrics.trade_count(positions) == 4
    assert metrics.turnover(positions) == pytest.approx(4.0 / 7)
    assert metrics.trade_count(np.array([0.5])) == 1 and math.isnan(metrics.turnover(np.array([])))


def test_periods_per_year_of_the_embedded_data() -> None:
    estimate = metrics.periods_per_year_from_timestamps(load_default().timestamps)
    assert abs(estimate - metrics.HOURLY_FX_PERIODS_PER_YEAR) / metrics.HOURLY_FX_PERIODS_PER_YEAR < 0.01
    assert math.isnan(metrics.periods_per_year_from_timestamps(np.array([1])))


def test_summarize_from_returns_or_equity() -> None:
    returns = RANDOM[0][:200]
    positions = np.sign(returns)
    equity = 100.0 * np.concatenate(([1.0], np.cumprod(1.0 + returns)))
    a = metrics.summarize(returns, positions=positions, periods_per_year=6240)
    b = metrics.summarize(equity=equity, positions=positions, periods_per_year=6240)
    assert a.keys() == b.keys() and all(same(b[k], a[k]) for k in a)
    assert a["sharpe_ratio"] == metrics.sharpe_ratio(returns, 6240) and a["trade_count"] == metrics.trade_count(positions)
    assert a["total_return"] == pytest.approx(equity[-1] / equity[0] - 1)
    strict = json.dumps(metrics.json_ready(metrics.summarize(np.full(3, 0.01))), allow_nan=False)
    assert '"sharpe_ratio": null' in strict
    with pytest.raises(ValueError, match=r"summarize needs returns or equity \(both vs exactly one\)"):
        metrics.summarize(returns, equity=equity)
    with pytest.raises(ValueError, match=r"positions and returns differ in length \(3 vs 200\)"):
        metrics.summarize(returns, positions=positions[:3])
