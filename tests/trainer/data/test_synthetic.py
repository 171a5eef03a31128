"""The synthetic market suite: generators, their exact filters, and the feasible oracles."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from trainer.data.synthetic import (
    SyntheticMarket,
    drift_filter,
    expected_next_return,
    fit_flat_band,
    garch_variance,
    hysteresis_positions,
    make_garch_trend_market,
    make_noise_market,
    make_ou_market,
    make_regime_market,
    make_signal_market,
    oracle_positions,
    ou_deviation_filter,
    position_returns,
    regime_probabilities,
    sharpe,
    turnover,
)

COST = 1.1e-4  # the suite's fee (1 bp) plus the default slippage (0.1 bp)
GENERATORS = {
    "ar1": make_signal_market,
    "regime": make_regime_market,
    "ou": make_ou_market,
    "garch_trend": make_garch_trend_market,
    "noise": make_noise_market,
}


def _lag1(x: np.ndarray) -> float:
    return float(np.corrcoef(x[:-1], x[1:])[0, 1])


@pytest.mark.parametrize("kind", GENERATORS)
def test_generators_give_hourly_ohlcv_reproducibly_with_a_realistic_bar_volatility(kind):
    market = GENERATORS[kind](3000, seed=5)
    assert market.kind == kind and len(market) == 3000
    for name, column in market.columns.items():
        assert column.shape == (3000,), name
    for name, state in market.hidden.items():
        assert state.shape == (3000,), name
    assert np.all(np.diff(market.columns["timestamp"]) == np.timedelta64(1, "h"))
    np.testing.assert_allclose(np.log(market.close[1:] / market.close[:-1]), market.log_returns[1:], rtol=1e-9, atol=1e-15)
    assert market.log_returns[0] == 0.0
    assert 0.003 <= market.log_returns[1:].std() <= 0.006  # per-bar σ of hourly bars, 0.3–0.6 %
    again = GENERATORS[kind](3000, seed=5)
    np.testing.assert_array_equal(again.close, market.close)
    assert not np.array_equal(GENERATORS[kind](3000, seed=6).close, market.close)


def test_the_ar1_market_is_unchanged_by_the_generalised_record():
    # The learning proof's numbers (docs/results.md) were measured on these exact bars.
    market = make_signal_market(50, seed=0)
    assert market.kind == "ar1" and market.params == {"phi": 0.4, "sigma": 0.005} and market.sigma == 0.005
    assert market.log_returns[1] == pytest.approx(1.0938028561372805e-4, rel=1e-12)
    assert make_noise_market(50).kind == "noise"


def test_regime_market_autocorrelation_flips_with_the_hidden_regime():
    market = make_regime_market(60_000, phi=0.3, stay=0.99, seed=1)
    r, regime = market.log_returns, market.hidden["regime"]
    pairs = np.arange(2, len(r))
    for sign in (1.0, -1.0):
        inside = pairs[regime[pairs] == sign]
        rho = float(np.sum(r[inside] * r[inside - 1]) / np.sum(r[inside - 1] ** 2))
        assert rho == pytest.approx(0.3 * sign, abs=0.03)
    assert abs(_lag1(r[1:])) < 0.05  # on average the two regimes cancel out
    switches = np.count_nonzero(np.diff(regime))
    assert len(r) / switches == pytest.approx(100.0, rel=0.2)  # mean regime length 1 / (1 − stay)


def test_ou_market_deviation_has_the_requested_half_life_around_a_wandering_mean():
    market = make_ou_market(60_000, half_life=8.0, deviation_sigma=0.012, mean_sigma=0.001, seed=2)
    deviation, mean = market.hidden["deviation"], market.hidden["mean"]
    a = _lag1(deviation)
    assert -math.log(2.0) / math.log(a) == pytest.approx(8.0, rel=0.05)
    assert deviation.std() == pytest.approx(0.012, rel=0.05)
    assert np.diff(mean).std() == pytest.approx(0.001, rel=0.02)
    np.testing.assert_allclose(np.log(market.close), market.params["log_start"] + mean + deviation, atol=1e-9)
    assert _lag1(market.log_returns[1:]) < -0.01  # reversion shows as negative autocorrelation


def test_garch_trend_market_clusters_volatility_under_a_persistent_drift():
    market = make_garch_trend_market(60_000, seed=3)
    r, drift = market.log_returns[1:], market.hidden["drift"]
    assert _lag1(r**2) > 0.05  # volatility clustering
    assert abs(_lag1(r)) < 0.05  # the drift is too small for a one-bar autocorrelation
    assert _lag1(drift) == pytest.approx(0.995, abs=0.003)
    assert drift.std() == pytest.approx(0.0008, rel=0.25)


def test_user_mistakes_in_the_new_generators_are_explained():
    with pytest.raises(ValueError, match=r"regime stay probability out of range \(0\.3 vs 0\.5 ≤ stay < 1\) — hint"):
        make_regime_market(100, stay=0.3)
    with pytest.raises(ValueError, match=r"regime AR coefficient out of range \(1\.2 vs −1 < φ < 1\)"):
        make_regime_market(100, phi=1.2)
    with pytest.raises(ValueError, match=r"OU half-life must be positive \(0\.0 bars vs > 0\) — hint"):
        make_ou_market(100, half_life=0.0)
    with pytest.raises(ValueError, match=r"OU mean_sigma must be positive \(-1\.0 vs > 0\)"):
        make_ou_market(100, mean_sigma=-1.0)
    with pytest.raises(ValueError, match=r"GARCH\(1,1\) coefficients not stationary \(α \+ β = 1\.0 vs"):
        make_garch_trend_market(100, alpha=0.1, beta=0.9)
    with pytest.raises(ValueError, match=r"drift persistence out of range \(1\.0 vs"):
        make_garch_trend_market(100, drift_persistence=1.0)
    with pytest.raises(ValueError, match=r"drift_sigma must be positive \(0\.0 vs > 0\)"):
        make_garch_trend_market(100, drift_sigma=0.0)
    bogus = dataclasses.replace(make_noise_market(50), kind="bogus")
    with pytest.raises(ValueError, match=r"unknown synthetic market kind \('bogus' vs one of ar1, regime"):
        expected_next_return(bogus)


# ----------------------------------------------------------------------------- filters against brute force


def _normal_pdf(x: float, mean: float, var: float) -> float:
    return math.exp(-0.5 * (x - mean) ** 2 / var) / math.sqrt(2.0 * math.pi * var)


def test_regime_filter_matches_the_posterior_summed_over_every_regime_path():
    phi, stay, sigma = 0.5, 0.9, 0.01
    r = np.array([0.0, 0.012, 0.008, -0.011, 0.009, -0.004, 0.015, 0.01])
    variance = sigma**2 * (1 - phi**2)
    filtered = regime_probabilities(r, phi=phi, stay=stay, sigma=sigma)
    for t in range(len(r)):
        up = total = 0.0
        for path in itertools.product((1.0, -1.0), repeat=t + 1):
            weight = 0.5
            for k in range(1, t + 1):
                weight *= stay if path[k] == path[k - 1] else 1.0 - stay
                weight *= _normal_pdf(r[k], path[k] * phi * r[k - 1], variance)
            total += weight
            up += weight if path[-1] == 1.0 else 0.0
        assert filtered[t] == pytest.approx(up / total, rel=1e-9), t


def _gaussian_posterior_mean(observation_map: np.ndarray, target_map: np.ndarray, observed: np.ndarray) -> float:
    """E[target | observations] for target = b·w, observations = A·w, w ~ N(0, I)."""
    cov_xx = observation_map @ observation_map.T
    cov_tx = target_map @ observation_map.T
    return float(cov_tx @ np.linalg.solve(cov_xx, observed))


def test_ou_kalman_filter_is_the_exact_gaussian_posterior_of_the_deviation():
    a, dev_sigma, mean_sigma, n = 0.8, 0.01, 0.004, 7
    q = dev_sigma * math.sqrt(1 - a * a)
    # White noise w = (d_0 / σ_d, η_1 … η_{n−1}, ε_1 … ε_{n−1}); rows: d_t and m_t as maps of w.
    width = 1 + 2 * (n - 1)
    d_map, m_map = np.zeros((n, width)), np.zeros((n, width))
    d_map[0, 0] = dev_sigma
    for t in range(1, n):
        d_map[t] = a * d_map[t - 1]
        d_map[t, n + t - 1] = q
        m_map[t] = m_map[t - 1]
        m_map[t, t] = mean_sigma
    x_map = d_map + m_map
    rng = np.random.default_rng(0)
    x = x_map @ rng.standard_normal(width) + 4.6  # log prices
    filtered = ou_deviation_filter(x, a=a, deviation_sigma=dev_sigma, mean_sigma=mean_sigma, log_start=4.6)
    for t in range(n):
        exact = _gaussian_posterior_mean(x_map[: t + 1], d_map[t], x[: t + 1] - 4.6)
        assert filtered[t] == pytest.approx(exact, rel=1e-8, abs=1e-14), t


def test_drift_kalman_filter_is_the_exact_gaussian_posterior_under_a_changing_variance():
    rho, drift_sigma, n = 0.9, 0.002, 7
    h = np.array([1.0, 4.0, 1.0, 0.25, 9.0, 1.0, 2.0]) * 1e-5
    q = drift_sigma * math.sqrt(1 - rho * rho)
    width = 1 + 2 * n  # (μ_0 / σ_μ, ν_1 … ν_n−1, z_1 … z_n−1) padded
    mu_map = np.zeros((n, width))
    mu_map[0, 0] = drift_sigma
    r_map = np.zeros((n, width))
    for t in range(1, n):
        mu_map[t] = rho * mu_map[t - 1]
        mu_map[t, t] = q
        r_map[t] = mu_map[t]
        r_map[t, n + t] = math.sqrt(h[t])
    rng = np.random.default_rng(1)
    r = r_map @ rng.standard_normal(width)
    filtered = drift_filter(r, h, persistence=rho, drift_sigma=drift_sigma)
    assert filtered[0] == 0.0  # r_0 is not an observation
    for t in range(1, n):
        exact = _gaussian_posterior_mean(r_map[1 : t + 1], mu_map[t], r[1 : t + 1])
        assert filtered[t] == pytest.approx(exact, rel=1e-8), t


def test_garch_recursion_rebuilds_the_generator_variance_and_its_closed_form():
    market = make_garch_trend_market(2000, seed=4)
    p = market.params
    h = garch_variance(market.log_returns, omega=p["omega"], alpha=p["alpha"], beta=p["beta"], sigma=p["sigma"])
    np.testing.assert_allclose(h, market.hidden["variance"], rtol=1e-12)
    # α = 0: h_t = ω/(1 − β) + β^t·(σ² − ω/(1 − β)), whatever the returns.
    flat = garch_variance(market.log_returns[:20], omega=2e-6, alpha=0.0, beta=0.9, sigma=0.01)
    level = 2e-6 / 0.1
    np.testing.assert_allclose(flat, level + 0.9 ** np.arange(20) * (1e-4 - level), rtol=1e-12)


# ----------------------------------------------------------------------------- oracles


def _with_future_replaced(market: SyntheticMarket, t: int, seed: int) -> SyntheticMarket:
    """The same market with every bar after t replaced by unrelated returns."""
    r = market.log_returns.copy()
    r[t + 1 :] = np.random.default_rng(seed).standard_normal(len(r) - t - 1) * 0.02
    close = market.close[0] * np.exp(np.cumsum(r))
    return dataclasses.replace(market, log_returns=r, columns={**market.columns, "close": close})


@pytest.mark.parametrize("kind", GENERATORS)
def test_oracle_uses_no_future_bar(kind):
    market = GENERATORS[kind](600, seed=7)
    positions = oracle_positions(market, COST)
    expected = expected_next_return(market)
    for t in (50, 311, 598):
        changed = _with_future_replaced(market, t, seed=t)
        np.testing.assert_array_equal(oracle_positions(changed, COST)[: t + 1], positions[: t + 1])
        np.testing.assert_array_equal(expected_next_return(changed)[: t + 1], expected[: t + 1])


@pytest.mark.parametrize("kind", GENERATORS)
def test_the_oracle_with_a_fitted_flat_band_reads_no_bar_after_the_fitting_window_or_after_t(kind):
    market = GENERATORS[kind](900, seed=5)
    fit = slice(0, 400)
    positions = oracle_positions(market, COST, fit_bars=fit)
    for t in (420, 650, 898):  # every bar after t replaced, the fitting window untouched
        changed = _with_future_replaced(market, t, seed=t)
        np.testing.assert_array_equal(oracle_positions(changed, COST, fit_bars=fit)[: t + 1], positions[: t + 1])


def test_the_flat_band_keeps_a_rule_flat_where_its_edge_is_small():
    edges = np.array([0.5, 2.0, 1.5, -0.2, -2.5, -1.0, 0.0, 3.0])
    # Band 1.2 at cost 1.0: 0.5 flat; 2.0 enters long; 1.5 holds it; −0.2 is inside the band: flat;
    # −2.5 enters short; −1.0 inside: flat; 0 flat; 3.0 enters long. Band 0 is the plain hysteresis.
    np.testing.assert_array_equal(hysteresis_positions(edges, 1.0, 1.2), [0, 1, 1, 0, -1, 0, 0, 1])
    np.testing.assert_array_equal(hysteresis_positions(edges, 1.0, 0.0), hysteresis_positions(edges, 1.0))


@pytest.mark.parametrize("kind", ["ar1", "regime", "ou", "garch_trend"])
def test_the_fitted_flat_band_never_scores_below_the_plain_rule_on_its_fitting_bars(kind):
    market = GENERATORS[kind](6000, seed=3)
    expected, close = expected_next_return(market), market.close
    band = fit_flat_band(close, expected, COST)
    assert band >= 0.0  # 0 (never flat on purpose) is one of the candidates, so the fit cannot lose
    plain = sharpe(position_returns(close, hysteresis_positions(expected, COST), COST))
    gated = sharpe(position_returns(close, hysteresis_positions(expected, COST, band), COST))
    assert gated >= plain
    assert fit_flat_band(close, np.zeros(len(close)), COST) == 0.0  # no edge anywhere (noise): no band


def test_a_weak_regime_market_is_traded_better_with_the_flat_band_out_of_sample():
    # φ 0.2, regimes of 50 bars: the filter's edge is ≈ 0 on many bars; holding through them adds
    # variance and no return. Fitted on the first 60 % of the bars, scored on the last 20 %.
    gains = []
    for seed in (100, 102, 103):
        market = make_regime_market(8000, phi=0.2, stay=0.98, seed=seed)
        test = slice(6400, 8000)
        plain = oracle_positions(market, COST)[test]
        gated = oracle_positions(market, COST, fit_bars=slice(0, 4800))[test]
        gains.append(sharpe(position_returns(market.close[test], gated, COST)) - sharpe(position_returns(market.close[test], plain, COST)))
    assert min(gains) > 0.0, gains


@pytest.mark.parametrize("kind", ["ar1", "regime", "ou", "garch_trend"])
def test_oracle_beats_noise_level_sharpe_on_its_market(kind):
    sharpes = []
    for seed in (0, 1):
        market = GENERATORS[kind](6000, seed=seed)
        sharpes.append(sharpe(position_returns(market.close, oracle_positions(market, COST), COST)))
    # Over 6,000 hourly bars a strategy without an edge has an annualised Sharpe of 0 ± ≈ 1.
    assert min(sharpes) > 4.0, sharpes


def test_oracle_is_flat_on_noise():
    noise = make_noise_market(6000, seed=0)
    assert turnover(oracle_positions(noise, COST)) == 0.0
    assert np.all(expected_next_return(noise) == 0.0)


def test_hysteresis_pays_for_a_switch_only_when_the_edge_covers_it():
    edges = np.array([0.5, 2.0, -1.5, -2.5, 0.0, 1.2, 3.0])
    # Entering costs 1 unit × 1.0, flipping 2 units × 1.0: 0.5 stays flat, 2.0 enters long, −1.5
    # does not flip, −2.5 does, 0 keeps the short, 1.2 does not flip back, 3.0 does.
    np.testing.assert_array_equal(hysteresis_positions(edges, 1.0), [0, 1, 1, -1, -1, -1, 1])


def test_regime_oracle_follows_the_regime_it_has_inferred():
    market = make_regime_market(20_000, seed=8)
    p = market.params
    up = regime_probabilities(market.log_returns, phi=p["phi"], stay=p["stay"], sigma=p["sigma"])
    guessed = np.where(up > 0.5, 1.0, -1.0)
    assert (guessed == market.hidden["regime"]).mean() > 0.75  # it cannot see the regime, only infer it
