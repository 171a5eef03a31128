"""Baselines fitted on the training bars only: what they recover, and that they never look ahead."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trainer.data.baselines import (
    FittedRule,
    fit_ar,
    fit_baselines,
    fit_rolling_autocorr,
    fit_zscore,
    log_returns,
)
from trainer.data.synthetic import (
    hysteresis_positions,
    make_noise_market,
    make_ou_market,
    make_regime_market,
    make_signal_market,
    position_returns,
    sharpe,
)

COST = 1.1e-4
OPTIONS = {"cost_rate": COST, "periods_per_year": 6048}


def test_ar5_recovers_the_ar1_coefficient_and_nothing_else():
    market = make_signal_market(20_000, phi=0.3, seed=0)
    rule = fit_ar(market.close, **OPTIONS)
    intercept, *lags = rule.params["coefficients"]
    assert lags[0] == pytest.approx(0.3, abs=0.02)
    assert max(abs(value) for value in lags[1:]) < 0.03
    assert abs(intercept) < 1e-4
    assert rule.train_sharpe > 10.0


def test_each_rule_trades_with_the_flat_band_fitted_on_its_training_bars():
    market = make_regime_market(8000, phi=0.2, stay=0.98, seed=4)
    rule = fit_rolling_autocorr(market.close[:4800], **OPTIONS)
    assert rule.flat_band > 0.0  # a weak, fast-switching regime: flat where the rule's edge is small
    np.testing.assert_array_equal(rule.positions(market.close, COST),
                                  hysteresis_positions(rule.expected(market.close), COST, rule.flat_band))  # fmt: skip
    assert np.mean(rule.positions(market.close, COST) == 0.0) > 0.05


def test_rolling_rules_pick_the_sign_the_market_rewards():
    regime = make_regime_market(8000, seed=1)
    autocorr = fit_rolling_autocorr(regime.close, **OPTIONS)
    assert autocorr.params["sign"] == 1.0 and autocorr.params["window"] <= 96  # follow the local autocorrelation
    ou = make_ou_market(8000, seed=1)
    zscore = fit_zscore(ou.close, **OPTIONS)
    assert zscore.params["sign"] == -1.0  # mean reversion
    assert zscore.train_sharpe > 4.0


def test_fitting_never_reads_beyond_the_training_slice():
    market = make_ou_market(4000, seed=2)
    train = slice(0, 2500)
    fitted = fit_baselines(market.close[train], **OPTIONS)
    changed = market.close.copy()
    changed[train.stop :] = changed[train.stop :] * np.exp(np.random.default_rng(0).normal(0, 0.05, 1500).cumsum())
    refitted = fit_baselines(changed[train], **OPTIONS)
    assert refitted == fitted
    # … and it cannot: the fit receives the training closes only; every prediction is causal.
    for rule in fitted.values():
        before, after = rule.positions(market.close, COST), rule.positions(changed, COST)
        np.testing.assert_array_equal(before[: train.stop], after[: train.stop])
        for t in (2700, 3333):
            future = changed.copy()
            future[t + 1 :] *= 1.5
            np.testing.assert_array_equal(rule.positions(future, COST)[: t + 1], after[: t + 1])


def test_fitted_rules_find_little_on_noise_out_of_sample():
    noise = make_noise_market(8000, seed=3)
    train, test = slice(0, 5600), slice(5600, 8000)
    for rule in fit_baselines(noise.close[train], **OPTIONS).values():
        held = rule.positions(noise.close, COST)[test]
        # 2,400 bars of noise: 0 ± ≈ 1.6 annualised; a rule that leaked the test bars would score far higher.
        assert sharpe(position_returns(noise.close[test], held, COST)) < 5.0, rule


def test_baseline_mistakes_are_explained():
    with pytest.raises(ValueError, match=r"too few training bars to fit a baseline \(\(10,\) vs at least 28\) — hint"):
        fit_ar(np.linspace(100.0, 101.0, 10), **OPTIONS)
    bogus = dataclasses.replace(FittedRule("ar5", {"coefficients": [0.0] * 6}, 0.0), kind="bogus")
    with pytest.raises(ValueError, match=r"unknown baseline rule \('bogus' vs ar5, rolling_autocorr or zscore\)"):
        bogus.expected(np.ones(50))


def test_log_returns_start_with_a_zero_placeholder():
    np.testing.assert_allclose(log_returns(np.array([100.0, 110.0, 99.0])), [0.0, np.log(1.1), np.log(0.9)])
