"""env.detrend: the training envs trade the training window's prices without its drift."""

from __future__ import annotations

import torch
from train_helpers import drifting_market, greedy_direction_bias, synthetic_market, tiny_config

from trainer.train.step import TrainerState

CPU = torch.device("cpu")


def test_without_drift_takes_the_mean_log_return_out_of_every_bar():
    market = drifting_market()
    market = type(market)(close=market.close, spread=market.close * 1e-4, features=market.features, offset=market.offset)
    flat = market.without_drift()
    returns = torch.diff(torch.log(market.close.double()))
    drift = returns.mean()
    assert float(drift) > 2e-3  # the market rises ≈ 0.3 % a bar
    torch.testing.assert_close(torch.diff(torch.log(flat.close.double())), returns - drift, rtol=0, atol=2e-6)
    torch.testing.assert_close(flat.close[-1], flat.close[0], rtol=1e-5, atol=0)  # no net drift left
    assert float(flat.close[0]) == float(market.close[0])  # bar 0 keeps its price
    torch.testing.assert_close(flat.spread / flat.close, market.spread / market.close)  # the same relative spread
    assert flat.features is market.features and flat.offset == market.offset  # what the agent sees is unchanged


def test_the_training_envs_trade_the_detrended_prices_only_when_asked():
    market = drifting_market()
    plain = TrainerState(tiny_config(), market, CPU)
    detrended = TrainerState(tiny_config(env={"detrend": True}), market, CPU)
    assert torch.equal(plain.env.close, market.close)
    assert torch.equal(detrended.env.close, market.without_drift().close)
    assert torch.equal(detrended.features, plain.features)


def test_detrend_changes_nothing_on_a_market_without_drift_beyond_its_sampling_noise():
    market = synthetic_market()
    returns = torch.diff(torch.log(market.close.double()))
    shift = torch.diff(torch.log(market.without_drift().close.double())) - returns
    assert float(shift.abs().max()) < 1e-5 + float(returns.mean().abs())  # only the sample mean is taken out


def direction_bias(detrend: bool) -> float:
    """The greedy direction bias after a few hundred updates on the rising market (costs on: a
    position that earns nothing loses)."""
    # No mirror either (the default's 0.5): it takes the drift out of the training data by itself,
    # and this test is about what detrending alone does.
    return greedy_direction_bias(tiny_config(env={"detrend": detrend}, replay={"feature_noise": 0.0, "mirror": 0.0}), drifting_market())


def test_a_detrended_rising_market_teaches_no_long_bias():
    """On a market whose only edge is its drift the plain agent learns to be long on every bar;
    trained on the same bars without the drift it has nothing to be long for (what is left is
    noise, so whatever bias it keeps is not the drift's: −0.4 here). A detrend that left the
    rewards paid on the real prices would learn the same long bias."""
    plain, detrended = direction_bias(False), direction_bias(True)
    assert plain > 0.5, plain
    assert detrended < 0.0, detrended
