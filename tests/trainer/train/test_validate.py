"""Out-of-sample backtest: baselines through the reference accounting, the greedy rollout's curve, and the
reused rollout walking exactly as the uncaptured loop did."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from train_helpers import online_holding_target, perturb_network, reference_rollout, synthetic_market, tiny_config

from trainer.env.accounting import backtest_targets
from trainer.eval.backtest import EquityCurve, backtest_report
from trainer.train.step import MarketWindow, TrainerState, TrainStep
from trainer.train.validate import GreedyRollouts, action_fractions, baseline_curves, greedy_rollout, greedy_rollouts


def test_buy_and_hold_uses_the_reference_accounting_and_flat_never_trades():
    close = torch.tensor([100.0, 101.0, 99.0, 103.0, 104.0])
    hold, flat = baseline_curves(close, fee_rate=1e-3, slippage=1e-3, init_cash=1000.0)
    units = 1000.0 / (100.0 * 1.001 * 1.001)
    expected = backtest_targets(close, [units] * 5, fee_rate=1e-3, slippage=1e-3, init_cash=1000.0).numpy()
    np.testing.assert_allclose(hold.equity[1:], expected[1:])
    assert hold.equity[0] == 1000.0 and float(expected[0]) < 1000.0  # buying costs fee and slippage
    report = backtest_report(hold, hold, flat, periods_per_year=252)
    assert report["buy_and_hold"]["trade_count"] == 1
    assert report["flat"]["trade_count"] == 0 and report["flat"]["total_return"] == 0.0
    assert report["flat"]["final_equity"] == 1000.0


def test_equity_curve_rejects_misaligned_lengths():
    try:
        EquityCurve(equity=np.ones(3), exposure=np.zeros(3))
    except ValueError as error:
        assert "hint" in str(error)
    else:
        raise AssertionError("misaligned curve accepted")


def test_greedy_rollout_walks_every_validation_bar_from_the_start():
    torch.set_num_threads(1)
    market = synthetic_market(600)
    state = TrainerState(tiny_config(), market, torch.device("cpu"))
    step = TrainStep(state)
    close = market.close[400:560]
    counter_before = state.counter.clone()
    curve = greedy_rollout(state, step, close, torch.zeros_like(close), feature_offset=market.offset + 400)
    assert curve.equity.shape == (159,) and curve.exposure.shape == (158,) and curve.units.shape == (158,)
    assert curve.equity[0] == state.config.env.init_cash
    assert np.isfinite(curve.equity).all()
    assert torch.equal(state.counter, counter_before)  # validating never touches the training RNG
    assert curve.equity[-1] != state.config.env.init_cash or not curve.units.any()  # no episode reset at the end
    for branch, fractions in curve.actions.items():
        assert abs(sum(fractions.values()) - 1.0) < 1e-9, branch


def test_action_fractions_names_every_sub_action():
    fractions = action_fractions(np.array([[0, 0, 0, 0], [2, 1, 1, 2]]))
    assert fractions["direction"] == {"short": 0.5, "hold": 0.0, "long": 0.5, "flat": 0.0}
    assert fractions["order_type"] == {"market": 0.5, "limit": 0.5}


def test_windows_rolled_out_together_trade_as_they_would_alone():
    torch.set_num_threads(1)
    market = synthetic_market(600)
    state = TrainerState(tiny_config(), market, torch.device("cpu"))
    step = TrainStep(state)
    close, spread = market.close, torch.zeros_like(market.close)
    # Env i draws its limit fills from Philox stream i, so the window in env 0 must trade exactly as
    # it does alone: whatever the other window does never leaks into it (either order).
    for starts in ([100, 400], [400, 100]):
        curve = greedy_rollouts(state, step, close, spread, market.offset, starts, 160)[0]
        alone = greedy_rollout(state, step, close[starts[0] : starts[0] + 160], spread[:160],
                               feature_offset=market.offset + starts[0])  # fmt: skip
        assert curve.actions == alone.actions  # the same greedy decisions, bar by bar
        np.testing.assert_allclose(curve.equity, alone.equity, rtol=1e-6)
    with pytest.raises(ValueError, match=r"rollout windows do not fit the series \(starts \[500\], 160 bars each vs a "
                       r"series of 596 bars"):  # fmt: skip
        greedy_rollouts(state, step, close, spread, market.offset, [500], 160)


def trading_state(seed: int = 0) -> tuple[TrainerState, TrainStep, MarketWindow]:
    """A tiny CPU state whose greedy policy trades (its random weights scaled up)."""
    torch.set_num_threads(1)
    market = synthetic_market(700)
    state = TrainerState(tiny_config(run={"seed": seed}), market, torch.device("cpu"))
    step = TrainStep(state)
    perturb_network(state, seed)
    return state, step, market


def test_a_reused_rollout_walks_exactly_as_the_uncaptured_loop_did_epoch_after_epoch():
    state, step, market = trading_state()
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])  # limit fills and spread costs vary
    rollouts = GreedyRollouts(state, step)
    starts, n_bars = [120, 380], 100
    for epoch in range(2):  # the second walk reuses the env, buffers and ISV copy of the first
        if epoch:
            perturb_network(state, seed=epoch)  # the network changed in place, as Adam changes it between epochs
        expected = reference_rollout(state, step, close, spread, market.offset, starts, n_bars)
        rollout = rollouts.rollout(close, spread, market.offset, len(starts), n_bars)
        trace = rollout.run(starts)
        assert np.array_equal(trace.equity, expected[0]) and np.array_equal(trace.units, expected[1])
        assert np.array_equal(trace.actions, expected[2])
        assert len(np.unique(trace.actions[:, :, 0])) > 1, "the policy never changed its direction: a weak comparison"
    curves = rollouts.curves(close, spread, market.offset, starts, n_bars)  # a third walk, through the curves
    assert np.array_equal(curves[1].equity[1:], expected[0][:, 1]) and curves[1].equity[0] == state.config.env.init_cash
    assert rollouts.rollout(close, spread, market.offset, len(starts), n_bars) is rollout  # one per shape and series
    assert rollouts.rollout(close.clone(), spread, market.offset, len(starts), n_bars) is not rollout


def test_a_rollout_leaves_the_training_state_alone():
    state, step, market = trading_state()
    before = {name: tensor.clone() for name, tensor in state.named_tensors().items() if name != "isv_local"}
    GreedyRollouts(state, step).curves(market.close, torch.zeros_like(market.close), market.offset, [10, 300], 150)
    changed = [name for name, tensor in state.named_tensors().items() if name in before and not torch.equal(before[name], tensor)]
    assert not changed
    assert state.online.training  # the network is back in training mode


def test_the_target_policy_acts_with_the_target_weights_and_gives_the_online_ones_back():
    """run.policy_weights = "target": every greedy backtest is the Polyak average's, and training's
    own weights (and every other tensor) come back bit for bit."""
    torch.set_num_threads(1)
    market = synthetic_market(700)
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])
    by_policy = {}
    for policy in ("online", "target"):
        state = TrainerState(tiny_config(run={"policy_weights": policy}), market, torch.device("cpu"))
        step = TrainStep(state)
        perturb_network(state, seed=0)  # online ≠ target: the target is the network before this "update"
        with torch.no_grad():
            for target in state.target.parameters():
                target.mul_(-3.0)  # a target that trades (the fresh network's scale barely does)
        before = {name: tensor.clone() for name, tensor in state.named_tensors().items() if name != "isv_local"}
        rollouts = GreedyRollouts(state, step)
        by_policy[policy] = [rollouts.rollout(close, spread, market.offset, 2, 120).run([50, 400]) for _ in range(2)]
        changed = [name for name, tensor in state.named_tensors().items() if name in before and not torch.equal(before[name], tensor)]
        assert not changed, f"{policy}: a rollout changed {changed}"
        if policy == "target":
            with online_holding_target(state):
                expected = reference_rollout(state, step, close, spread, market.offset, [50, 400], 120)
    online, target = by_policy["online"], by_policy["target"]
    assert np.array_equal(target[0].actions, target[1].actions)  # repeatable: the swap leaves nothing behind
    assert np.array_equal(target[0].equity, expected[0]) and np.array_equal(target[0].actions, expected[2])
    assert not np.array_equal(online[0].actions, target[0].actions), "both policies acted alike: a weak comparison"
    assert len(np.unique(target[0].actions[:, :, 0])) > 1, "the target policy never changed its direction"


def test_a_rollout_refuses_starts_it_has_no_env_for_and_bars_past_its_window():
    state, step, market = trading_state()
    rollout = GreedyRollouts(state, step).rollout(market.close, torch.zeros_like(market.close), market.offset, 2, 50)
    with pytest.raises(ValueError, match=r"rollout starts or margins do not match its environments \(1 starts, 1 "
                       r"margins vs 2\) — hint: pass one start and one margin per window"):  # fmt: skip
        rollout.begin([0])
    with pytest.raises(ValueError, match=r"\(2 starts, 3 margins vs 2\)"):
        rollout.begin([0, 100], [0.0, 0.1, 0.2])
    rollout.begin([0, 100])
    rollout.advance(40)
    with pytest.raises(ValueError, match=r"rollout walks past its window \(40 \+ 9 bars vs 48\) — hint: call begin\(\)"):
        rollout.advance(9)
    rollout.advance(8)
    assert rollout.read().equity.shape == (48, 2)


def test_the_kelly_cap_sizes_from_the_validation_trades_never_the_training_envs():
    """The training envs' trades are in-sample (the greedy policy on the bars it fits); the cap must
    come from the validation rollout's closed trades, recorded at the boundary that walked them."""
    from train_helpers import synthetic_prepared_market

    from trainer.layout import ISV_KELLY_CAP, PS_KELLY_LOSSES, PS_KELLY_WIN_SUM, PS_KELLY_WINS
    from trainer.ops.adaptive_kelly_cap import KellyParams
    from trainer.train.loop import boundary_backtests, run_splits, start_split

    config = tiny_config()
    market = synthetic_prepared_market(400)
    split = run_splits(config, market)[0]
    run = start_split(config, market, split, torch.device("cpu"), None)
    state, floor = run.state, KellyParams().cap_floor
    perturb_network(state, seed=3)  # a greedy policy that trades
    state.env.ps[:, PS_KELLY_WINS] = 1_000.0  # an in-sample record of a huge edge, which must not count
    state.env.ps[:, PS_KELLY_WIN_SUM] = 1_000.0 * 0.05
    state.adaptive.begin_epoch(0, 2)
    assert float(state.isv.tensor[ISV_KELLY_CAP]) == pytest.approx(floor)  # the prior alone: the floor

    boundary_backtests(run, market, split)
    walked = run.rollouts.final_portfolio(0)  # the validation window's env row
    assert torch.equal(state.adaptive.kelly_record, walked)
    trades = float(walked[0, PS_KELLY_WINS] + walked[0, PS_KELLY_LOSSES])
    assert trades > 4.0  # the prior's 2 + 2 and the validation's closed trades
    state.adaptive.begin_epoch(1, 2)  # the next epoch sizes from the same record: the same cap
    recorded_cap = float(state.isv.tensor[ISV_KELLY_CAP])

    edge = walked.clone()
    edge[0, PS_KELLY_WINS], edge[0, PS_KELLY_WIN_SUM] = 400.0, 400.0 * 0.01  # an out-of-sample edge
    state.adaptive.record_trades(edge)
    assert float(state.isv.tensor[ISV_KELLY_CAP]) > max(floor, recorded_cap)  # it leaves the floor at once
    with pytest.raises(ValueError, match=r"trade record rows do not match \(\(2, "):
        state.adaptive.record_trades(torch.cat([edge, edge]))
    with pytest.raises(ValueError, match=r"no window 5 in the last validation rollout"):
        run.rollouts.final_portfolio(5)
