"""Honest splits and model selection: the test window never reaches training or selection; the
selected checkpoint is chosen deterministically on validation, survives resume, and stops early."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from trainer.data.synthetic import make_signal_market, write_market_csv
from trainer.errors import UserError
from trainer.eval.health_diag import read_health_diag
from trainer.train.loop import prepare_market, run_splits, train
from trainer.train.selection import ModelSelection
from trainer.train.splits import single_split
from train_helpers import file_config

def tiny_config(path, **overrides):
    """The shared file config, trained a little longer (four epochs to select from)."""
    return file_config(path, **{"run": {"steps": 12}, **overrides})


def report(sharpe):
    return {"agent": {"sharpe_ratio": sharpe}}


def test_selection_keeps_the_first_best_epoch_and_counts_patience():
    selection = ModelSelection("sharpe_ratio", patience=2)
    assert selection.observe(0, 10, report(1.0), report(2.0))
    assert not selection.observe(1, 20, report(1.0), report(2.0))  # a tie keeps the earlier epoch
    assert selection.observe(2, 30, report(1.5), report(2.0))
    assert not selection.observe(3, 40, report(None), report(2.0))  # never traded: scores 0 (flat)
    assert not selection.should_stop
    assert not selection.observe(4, 50, report(float("nan")), report(2.0))
    assert selection.should_stop and (selection.best_epoch, selection.best_step, selection.best_value) == (2, 30, 1.5)
    restored = ModelSelection.from_dict(json.loads(json.dumps(selection.to_dict())), "sharpe_ratio", 2)
    assert restored.to_dict() == selection.to_dict()
    summary = selection.summary(stopped_early=True)
    assert summary == {"criterion": "validation sharpe_ratio", "epoch": 2, "step": 30, "value": 1.5, "epochs_run": 5,
                       "patience": 2, "stopped_early": True}  # fmt: skip


def test_select_last_reports_the_last_epoch_and_never_stops():
    selection = ModelSelection("last", patience=1)
    for epoch, value in enumerate((3.0, 1.0, -2.0)):
        assert selection.observe(epoch, epoch, report(value), report(value))
    assert selection.best_epoch == 2 and not selection.should_stop
    assert not math.isinf(selection.best_value)


def _curve(positions: np.ndarray, market_returns: np.ndarray):
    from trainer.eval.backtest import EquityCurve

    returns = positions * market_returns
    return EquityCurve(np.concatenate(([1.0], np.cumprod(1.0 + returns))), positions.astype(np.float64))


def test_the_timing_sharpe_takes_the_windows_drift_out_of_a_mostly_long_policy():
    """A policy long on every bar of a rising window has a high Sharpe there and a timing Sharpe
    of 0; a policy that trades the sign of an AR(1) signal keeps its Sharpe; a flat one has none."""
    from trainer.eval.backtest import backtest_report, timing_sharpe_ratio
    from trainer.eval.metrics import sharpe_ratio

    rng = np.random.default_rng(3)
    n, periods = 1_500, 6_240.0
    rising = rng.normal(0.0006, 0.005, n)  # a window with drift
    market = _curve(np.ones(n), rising)
    always_long = _curve(np.ones(n), rising)
    assert sharpe_ratio(always_long.equity[1:] / always_long.equity[:-1] - 1.0, periods) > 4.0
    assert abs(timing_sharpe_ratio(always_long, market, periods)) < 1e-9
    mostly_long = _curve(np.where(rng.random(n) < 0.8, 1.0, 0.0), rising)  # long 80 % of bars, at random
    plain = sharpe_ratio(mostly_long.equity[1:] / mostly_long.equity[:-1] - 1.0, periods)
    assert timing_sharpe_ratio(mostly_long, market, periods) < plain - 3.0

    ar = np.zeros(n)
    shocks = rng.normal(0.0, 0.005, n)
    for t in range(1, n):
        ar[t] = 0.3 * ar[t - 1] + shocks[t]
    signal = np.sign(np.concatenate(([0.0], ar[:-1])))  # the sign of the last return: no net exposure
    timed = _curve(signal, ar)
    plain = sharpe_ratio(signal * ar, periods)
    assert plain > 10.0 and timing_sharpe_ratio(timed, _curve(np.ones(n), ar), periods) == pytest.approx(plain, rel=0.02)

    flat = _curve(np.zeros(n), rising)
    assert math.isnan(timing_sharpe_ratio(flat, market, periods))
    report_ = backtest_report(always_long, market, flat, periods)
    assert report_["agent"]["timing_sharpe_ratio"] == pytest.approx(0.0, abs=1e-9)
    assert backtest_report(flat, market, flat, periods)["agent"]["timing_sharpe_ratio"] is None  # strict JSON


def test_selection_by_timing_sharpe_passes_over_an_epoch_that_rode_the_drift():
    """Epoch 0 rode the window's drift (higher Sharpe, no timing), epoch 1 traded the signal: the
    plain Sharpe selects epoch 0, the timing Sharpe epoch 1."""
    epochs = [{"agent": {"sharpe_ratio": 8.8, "timing_sharpe_ratio": 0.4}}, {"agent": {"sharpe_ratio": 5.2, "timing_sharpe_ratio": 4.9}}]
    chosen = {}
    for metric in ("sharpe_ratio", "timing_sharpe_ratio"):
        selection = ModelSelection(metric)
        for epoch, validation in enumerate(epochs):
            selection.observe(epoch, epoch, validation, validation)
        chosen[metric] = selection.best_epoch
    assert chosen == {"sharpe_ratio": 0, "timing_sharpe_ratio": 1}


def test_the_sharpe_lower_bound_takes_its_standard_errors_off():
    from trainer.eval.backtest import backtest_report
    from trainer.eval.metrics import SHARPE_LOWER_BOUND_Z, sharpe_lower_bound, sharpe_ratio

    periods = 6048.0
    returns = np.random.default_rng(5).normal(2e-4, 1e-3, 1500)
    plain = sharpe_ratio(returns, periods)
    per_period = plain / math.sqrt(periods)
    expected = plain - SHARPE_LOWER_BOUND_Z * math.sqrt(periods * (1 + per_period**2 / 2) / returns.size)
    assert sharpe_lower_bound(returns, periods) == pytest.approx(expected, rel=1e-12)
    assert expected < plain - 3.0  # ≈ 1.645 × √(6048 / 1500) ≈ 3.3 off an annualised Sharpe
    # Four times the periods halve the penalty: a longer window proves more.
    longer = np.tile(returns, 4)
    assert plain - sharpe_lower_bound(longer, periods) == pytest.approx((plain - expected) / 2, rel=0.01)
    assert math.isnan(sharpe_lower_bound(np.zeros(100), periods))  # flat: no Sharpe, no bound
    flat, market = _curve(np.zeros(returns.size), returns), _curve(np.ones(returns.size), returns)
    assert backtest_report(flat, market, flat, periods)["agent"]["sharpe_lower_bound"] is None  # strict JSON
    long = backtest_report(market, market, flat, periods)["agent"]
    assert long["sharpe_lower_bound"] == pytest.approx(expected, rel=1e-9) and long["sharpe_ratio"] == pytest.approx(plain, rel=1e-9)


def test_selection_by_the_sharpe_lower_bound_prefers_flat_to_a_gain_that_may_be_luck():
    """Epoch 0 never traded (no Sharpe), epoch 1 gained a little, epoch 2 gained a lot: the plain
    Sharpe takes any gain over staying flat; the lower bound keeps flat over the small gain and
    takes the large one."""
    never_traded = {"agent": {"sharpe_ratio": None, "sharpe_lower_bound": None}}
    small_gain = {"agent": {"sharpe_ratio": 1.2, "sharpe_lower_bound": -2.1}}
    large_gain = {"agent": {"sharpe_ratio": 9.0, "sharpe_lower_bound": 5.6}}
    chosen = {}
    for metric in ("sharpe_ratio", "sharpe_lower_bound"):
        for name, epochs in (("small", [never_traded, small_gain]), ("large", [never_traded, small_gain, large_gain])):
            selection = ModelSelection(metric)
            for epoch, validation in enumerate(epochs):
                selection.observe(epoch, epoch, validation, validation)
            chosen[metric, name] = selection.best_epoch
    assert chosen == {("sharpe_ratio", "small"): 1, ("sharpe_ratio", "large"): 2,
                      ("sharpe_lower_bound", "small"): 0, ("sharpe_lower_bound", "large"): 2}  # fmt: skip


def test_run_select_names_its_choices():
    from trainer.config import ConfigError, load_config

    assert load_config(overrides=["run.select=timing_sharpe_ratio"]).run.select == "timing_sharpe_ratio"
    with pytest.raises(ConfigError) as error:
        load_config(overrides=["run.select=timing"])
    assert "run.select" in str(error.value) and "'timing'" in str(error.value) and "timing_sharpe_ratio" in str(error.value)


def test_single_split_orders_train_validation_test_with_embargoes():
    split = single_split(1000, 10, validation_fraction=0.2, test_fraction=0.1, embargo=5, min_train_bars=50)
    assert split.train == slice(10, 10 + 990 - 198 - 99 - 10)
    assert split.validation.start == split.train.stop + 5 and split.validation.stop - split.validation.start == 198
    assert split.test == slice(1000 - 99, 1000) and split.test.start == split.validation.stop + 5
    with pytest.raises(UserError, match=r"too few bars for a train \| validation \| test split \(100 bars leave 10 "
                       r"training bars .* vs 518 training bars \(env.episode_length \+ loss.n_step \+ 2\): at least "
                       r"948 bars in all\)"):  # fmt: skip
        single_split(100, 4, validation_fraction=0.2, test_fraction=0.2, embargo=24, min_train_bars=518)


@pytest.fixture(scope="module")
def market(tmp_path_factory):
    return make_signal_market(700, seed=5)


def test_no_bar_of_the_test_window_reaches_training_or_selection(market, tmp_path):
    """Rewrite every test-window bar: training, validation and selection are bit for bit the same;
    only the test metrics move. (Features are causal, so earlier bars cannot see later prices.)"""
    original = write_market_csv(market, tmp_path / "original.csv")
    config = tiny_config(original)
    split = run_splits(config, prepare_market(config))[0]
    changed_market = make_signal_market(700, seed=5)
    close = changed_market.columns["close"]
    rng = np.random.default_rng(99)
    for column in ("open", "high", "low", "close"):
        values = changed_market.columns[column]
        values[split.test.start :] = values[split.test.start :] * np.exp(rng.normal(0.0, 0.05, len(values) - split.test.start))
    changed_market.columns["high"][:] = np.maximum.reduce([changed_market.columns[c] for c in ("open", "high", "low", "close")])
    changed_market.columns["low"][:] = np.minimum.reduce([changed_market.columns[c] for c in ("open", "high", "low", "close")])
    assert close[split.test.start - 1] == market.columns["close"][split.test.start - 1]
    changed = write_market_csv(changed_market, tmp_path / "changed.csv")

    first = train(config, tmp_path / "a", make_plots=False)
    second = train(tiny_config(changed), tmp_path / "b", make_plots=False)
    assert first["validation"] == second["validation"] and first["selection"] == second["selection"]
    assert first["flat_margin"] == second["flat_margin"] is not None  # chosen on validation alone
    assert first["splits"] == second["splits"] == split.to_dict()
    diag_a = [record.to_dict() for record in read_health_diag(tmp_path / "a")]
    diag_b = [record.to_dict() for record in read_health_diag(tmp_path / "b")]
    for a, b in zip(diag_a, diag_b, strict=True):
        a.pop("wall_time_s"), b.pop("wall_time_s")
        assert a == b
    best_a = (tmp_path / "a" / "checkpoints" / "best.safetensors").read_bytes()
    assert best_a == (tmp_path / "b" / "checkpoints" / "best.safetensors").read_bytes()
    assert first["buy_and_hold"] != second["buy_and_hold"]  # the test window itself did change


def test_early_stopping_and_resume_keep_the_selection(market, tmp_path):
    path = write_market_csv(market, tmp_path / "m.csv")
    config = tiny_config(path, run={"steps": 30, "patience": 1})
    whole = train(config, tmp_path / "whole", make_plots=False)
    selection = whole["selection"]
    curve = [record.validation["agent"]["sharpe_ratio"] for record in read_health_diag(tmp_path / "whole")]
    assert selection["epochs_run"] == len(curve) and selection["stopped_early"] == (len(curve) < 10)
    if selection["stopped_early"]:  # stopped one epoch after the last improvement
        assert selection["epoch"] == len(curve) - 2
    assert train(config, tmp_path / "cut", stop_after_epochs=1, make_plots=False) in ({}, whole)
    resumed = train(config, tmp_path / "cut", resume=True, make_plots=False)
    assert resumed == whole
    for name in ("best.safetensors", "best.json"):
        a = (tmp_path / "whole" / "checkpoints" / name).read_bytes()
        assert a == (tmp_path / "cut" / "checkpoints" / name).read_bytes(), name


def _diag_without_wall_time(run_dir):
    records = [record.to_dict() for record in read_health_diag(run_dir)]
    for record in records:
        record.pop("wall_time_s")
    return records


def test_a_fixed_schedule_horizon_makes_a_longer_run_continue_the_shorter_one(market, tmp_path):
    """schedule.horizon_steps: ε and τ span the horizon whatever run.steps is, so 4× the steps repeats
    the shorter run's epochs bit for bit (then holds ε and τ at their end values); with the run's own
    length as the span (0) the same two runs already differ in their second epoch."""
    path = write_market_csv(market, tmp_path / "m.csv")
    short = train(tiny_config(path, schedule={"horizon_steps": 12}), tmp_path / "short", make_plots=False)
    train(tiny_config(path, schedule={"horizon_steps": 12}, run={"steps": 48}), tmp_path / "long", make_plots=False)
    short_diag, long_diag = _diag_without_wall_time(tmp_path / "short"), _diag_without_wall_time(tmp_path / "long")
    assert len(short_diag) == 4 and len(long_diag) == 16
    assert long_diag[:4] == short_diag
    assert short["selection"]["epoch"] <= 3
    train(tiny_config(path, run={"steps": 12}), tmp_path / "own", make_plots=False)
    train(tiny_config(path, run={"steps": 48}), tmp_path / "own-long", make_plots=False)
    own, own_long = _diag_without_wall_time(tmp_path / "own"), _diag_without_wall_time(tmp_path / "own-long")
    assert own == short_diag  # a horizon equal to the run's length is the default schedule
    train(tiny_config(path, schedule={"horizon_steps": 48}), tmp_path / "shorter", make_plots=False)
    assert _diag_without_wall_time(tmp_path / "shorter") == own  # a run shorter than its horizon spans its own length
    assert own_long[0]["isv"]["EPSILON"] == own[0]["isv"]["EPSILON"]
    assert own_long[1]["isv"]["EPSILON"] > own[1]["isv"]["EPSILON"]  # ε decays over 16 epochs instead of 4
