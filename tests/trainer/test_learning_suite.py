"""The learning suite (benchmarks/learning_suite.py): config, splits, scoring, verdicts, resume,
and a test-sized learning check on two markets through the real trainer."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from trainer.data.synthetic import make_ou_market, make_signal_market, write_market_csv
from trainer.env.accounting import backtest_targets
from trainer.errors import UserError
from trainer.eval.metrics import sharpe_ratio
from trainer.train.loop import prepare_market, run_splits

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "learning_suite.py"


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("learning_suite", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("learning_suite", module)
    spec.loader.exec_module(module)
    return module


def _options(suite, out: Path, *overrides: str, n_bars: int = 2000):
    return suite.SuiteOptions(None, suite.parse_overrides(overrides), 1.0, "cpu", n_bars, str(out), False)


def test_overrides_are_read_as_toml_values(suite):
    parsed = suite.parse_overrides(["run.steps=2400", "env.fee_rate=2e-4", "model.temporal_encoder=false", "data.path=x.csv"])
    assert parsed == {"run": {"steps": 2400}, "env": {"fee_rate": 2e-4}, "model": {"temporal_encoder": False},
                      "data": {"path": "x.csv"}}  # fmt: skip
    nested = suite.parse_overrides(["adaptive.schedule.gamma_low=[0.8, 0.8, 0.7, 0.7]"])
    assert nested == {"adaptive": {"schedule": {"gamma_low": [0.8, 0.8, 0.7, 0.7]}}}
    with pytest.raises(UserError, match=r"--set 'steps=3' \(vs section.key=value"):
        suite.parse_overrides(["steps=3"])


def test_suite_config_sets_only_data_costs_seed_device_and_steps(suite, tmp_path):
    config = suite.suite_config(_options(suite, tmp_path), tmp_path / "m.csv", seed=3)
    from trainer.config import load_config

    default = load_config(None)
    assert config.data.path == str(tmp_path / "m.csv") and config.data.periods_per_year == 6048.0
    assert config.env.fee_rate == 1e-4 and config.run.seed == 3 and config.run.device == "cpu"
    assert config.replace(data={"path": "", "periods_per_year": 0.0}, env={"fee_rate": default.env.fee_rate},
                          run={"seed": 0, "device": default.run.device, "bands": default.run.bands}) == default  # fmt: skip
    assert config.run.bands == ""  # the shipped bands describe EURUSD runs, not the suite's markets
    longer = suite.suite_config(suite.SuiteOptions(None, {}, 4.0, "cpu", 100, str(tmp_path), False), tmp_path / "m.csv", seed=0)
    assert longer.run.steps == 4 * default.run.steps


def test_splits_prefer_the_run_report_and_otherwise_match_the_driver(suite, tmp_path):
    path = write_market_csv(make_signal_market(1500, seed=0), tmp_path / "ar1.csv")
    config = suite.suite_config(_options(suite, tmp_path), path, seed=0)
    reported = {"fold": 0, "train": [24, 900], "validation": [924, 1100], "test": [1124, 1500], "embargo": 24, "bars": {}}
    assert suite.run_splits({"splits": reported}, config) == {"train": (24, 900), "validation": (924, 1100),
                                                              "test": (1124, 1500)}  # fmt: skip
    split = run_splits(config, prepare_market(config))[0]
    windows = suite.run_splits({}, config)
    assert windows == {"train": (split.train.start, split.train.stop), "validation": (split.validation.start, split.validation.stop),
                       "test": (split.test.start, split.test.stop)}  # fmt: skip
    assert windows["train"][1] < windows["validation"][0] < windows["validation"][1] < windows["test"][0]
    assert suite.scored_bars((1124, 1500)) == slice(1124, 1499)


def test_positions_are_scored_through_the_trainers_backtester(suite):
    close = 100.0 * np.exp(np.cumsum(np.random.default_rng(0).normal(0, 0.005, 300)))
    positions = np.sign(np.sin(np.arange(300) / 9.0))
    units = suite.positions_to_units(positions, close, 1000.0)
    changes = np.flatnonzero(np.diff(np.concatenate([[0.0], positions])))
    np.testing.assert_allclose(units[changes], positions[changes] * 1000.0 / close[changes])  # sized at each entry
    assert len(np.unique(units[changes[0] : changes[1]])) == 1  # and held, sending no order
    score = suite.score_positions(close, positions, fee_rate=1e-4, slippage=1e-5, init_cash=1000.0, periods_per_year=6048)
    equity = backtest_targets(close, np.concatenate([units[:-1], units[-2:-1]]), fee_rate=1e-4, slippage=1e-5, init_cash=1000.0).numpy()
    assert score["sharpe_ratio"] == pytest.approx(sharpe_ratio(equity[1:] / equity[:-1] - 1.0, 6048), rel=1e-12)
    assert score["n_periods"] == 299
    flat = suite.score_positions(close, np.zeros(300), fee_rate=1e-4, slippage=0.0, init_cash=1000.0, periods_per_year=6048)
    assert flat == {"sharpe_ratio": 0.0, "total_return": 0.0, "turnover": 0.0, "n_periods": 299}


def _cell(market, fraction_of_oracle, *, total_return=0.01, cost=0.001, turnovers=(0.1, 0.05)):
    # An epoch of turnover 0 never traded: its Sharpe is undefined (None), as the run reports it.
    return {"market": market, "agent_over_oracle": fraction_of_oracle, "agent_over_baseline": None,
            "agent": {"total_return": total_return}, "cost_of_agent_trades": cost,
            "learning_curve": [{"epoch": e, "sharpe_ratio": None if t == 0 else 0.0, "turnover": t} for e, t in enumerate(turnovers)]}  # fmt: skip


def test_market_verdicts_follow_the_issue_targets(suite):
    passing = suite.market_summary([_cell("ou", f) for f in (0.9, 0.8, 0.7, 0.65, 0.5)])
    assert passing["passed"] and passing["seeds_at_floor"] == 4 and passing["mean"] == pytest.approx(0.71)
    low, high = passing["ci95"]  # the mean's bootstrap interval over the five seeds: inside their range, seeded
    assert 0.5 <= low < 0.71 < high <= 0.9 and passing == suite.market_summary([_cell("ou", f) for f in (0.9, 0.8, 0.7, 0.65, 0.5)])
    assert suite.market_summary([_cell("ou", 0.8)] * 3)["ci95"] == [pytest.approx(0.8), pytest.approx(0.8)]
    low_mean = suite.market_summary([_cell("ou", f) for f in (0.7, 0.7, 0.65, 0.65, 0.6)])
    assert not low_mean["passed"]  # every seed ≥ 60 %, but the mean is below 70 %
    two_misses = suite.market_summary([_cell("ou", f) for f in (1.0, 1.0, 1.0, 0.5, 0.5)])
    assert not two_misses["passed"] and two_misses["seeds_at_floor"] == 3
    noise = suite.market_summary([_cell("noise", None), _cell("noise", None, total_return=-0.0005)])
    assert noise["passed"]
    assert not suite.market_summary([_cell("noise", None, total_return=-0.002)])["passed"]  # lost more than its costs
    assert not suite.market_summary([_cell("noise", None, turnovers=(0.01, 0.02))])["passed"]  # trades more with training


def test_the_noise_summary_counts_the_validation_epochs_that_never_traded(suite, capsys):
    # Flicker around flat (flat, a little, flat, a little) fails "turnover falling" on its last epoch;
    # the count of flat epochs says it is flicker, not an agent trading noise more and more.
    flicker = _cell("noise", None, turnovers=(0.0, 0.03, 0.0, 0.03))
    churn = _cell("noise", None, turnovers=(0.01, 0.02, 0.04, 0.08))
    summary = suite.market_summary([flicker, churn])
    assert (summary["turnover_falling"], summary["flat_epochs"], summary["epochs"]) == (0, 2, 8)
    suite.print_report([dict(flicker, seed=1, agent={"sharpe_ratio": 0.0, "turnover": 0.0}, oracle={"sharpe_ratio": 0.0},
                             baselines={"ar5": {"sharpe_ratio": 0.0}}, best_baseline="ar5", selected_epoch=0,
                             selection_reported=True, flat_margin={"margin": 0.02, "level": 0.7})], [summary])  # fmt: skip
    out = capsys.readouterr().out
    assert "| noise | 1 | 0.00 | 0.00 | 0.00 (ar5) | — | — | 0.0000 | 0 | q0.7 |" in out  # the flat margin's level
    assert suite.margin_level({"flat_margin": {"margin": 0.0, "level": 0.0}}) == "0" and suite.margin_level({}) == "—"
    assert "noise seed 1: — (0.000) → 0.0 (0.030) → — (0.000) → 0.0 (0.030)" in out
    assert "validation epochs that never traded: 2/8" in out


def test_the_summary_counts_the_adaptive_values_that_never_fired(suite):
    cells = [dict(_cell("ou", 0.8), never_fired=names) for names in ([], ["atom_half_width_direction"],
                                                                    ["atom_half_width_direction", "kelly_cap"])]  # fmt: skip
    assert suite.market_summary(cells)["never_fired"] == {"atom_half_width_direction": 2, "kelly_cap": 1}
    assert suite.market_summary(cells[:1])["never_fired"] == {}
    assert suite.market_summary([_cell("ou", 0.8)])["never_fired"] is None  # a result.json from before the field


def test_silent_monitors_are_those_whose_value_never_moved():
    from trainer.eval.health_diag import silent_monitors

    monitors = {"tau": {"value": 0.004, "fire_rate": 0.66}, "kelly_cap": {"value": 0.1, "fire_rate": 0.0},
                "atom_centre": {"value": 0.0, "fire_rate": None}, "epsilon": {"value": 0.5}}  # fmt: skip
    assert silent_monitors(monitors) == ["kelly_cap", "atom_centre", "epsilon"]
    assert silent_monitors({}) == []


def test_a_finished_cell_is_not_run_again(suite, tmp_path):
    options = _options(suite, tmp_path)
    directory = suite.cell_dir(tmp_path, "ou", 4)
    directory.mkdir(parents=True)
    (directory / suite.RESULT_FILENAME).write_text(json.dumps({"market": "ou", "seed": 4, "finished": True}))
    assert suite.run_cell("ou", 4, options) == {"market": "ou", "seed": 4, "finished": True}
    assert not (directory / "run").exists()


def test_oracle_and_baselines_are_scored_on_the_test_bars_only(suite, tmp_path):
    market = make_ou_market(3000, seed=5)
    config = suite.suite_config(_options(suite, tmp_path), tmp_path / "ou.csv", seed=0)
    splits = {"train": (16, 2000), "test": (2100, 3000)}
    scores = suite.score_strategies(market, splits, config)
    assert scores["oracle"]["n_periods"] == 3000 - 2100 - 2
    assert scores["oracle"]["sharpe_ratio"] > 3.0
    # Bars before the test window may change the rules' fit, never the test window's prices.
    assert set(scores["baselines"]) == {"ar5", "rolling_autocorr", "zscore"}
    assert scores["baselines"]["zscore"]["params"]["sign"] == -1.0


# Small enough for one core in about half a minute per market, the same shape as the learning
# proof's (no temporal encoder, myopic γ, 1-step returns); the suite's default-config numbers come
# from the benchmark, not from this check. Measured at this size (2,400 bars, 400 steps; 2026-12-01,
# seeds 0 / 1): ar1 100 % / 103 % of the oracle, ou 102 % / 49 %. The thresholds below are
# deliberately modest: 440 test bars carry a sampling error of about ±3.7 in annualised Sharpe.
# No feature noise at this size: with one bar of input (window 1) σ = 0.3 cut ar1 seed 0 to 31 % of
# the oracle (2026-12-01); the default's noise is measured at the default size (docs/results.md §0).
# No return head either: at this size (a 64-wide trunk over one bar, 400 updates) it cut ar1 seed 0
# from 100 % to 30 % of the oracle (2026-12-02; the cause is not isolated); at the default size it
# lifts ar1 and regime (docs/results.md §0). No weight decay: at this size (lr 1e-3, 400 updates of a
# one-bar network) the default W = 1.0 cut ou seed 0 from 102 % to 0 % of the oracle (2026-12-02); at the default
# size it lifts garch_trend and ou on fresh seeds (docs/results.md §0, session 20). No mirror: at this
# size the default's 0.5 cut ar1 seed 0 from ≥ 50 % to 34 % of the oracle (2026-12-03; half of 400
# updates learn a reflected market); at the default size it lifts regime (docs/results.md §0, session 29).
TEST_SIZE = (
    "replay.feature_noise=0", "replay.mirror=0", "loss.return_weight=0", "optim.weight_decay=0",
    "model.temporal_encoder=false", "model.window=1", "model.hidden=64", "model.head_hidden=32",
    "loss.gamma=0.5", "loss.n_step=1", "loss.iqn_weight=0.25", "loss.iqn_tau_samples=8", "loss.iqn_target_samples=8",
    "optim.lr=1e-3", "replay.learning_starts=256", "env.episode_length=1024", "env.slippage=0.0",
    "data.embargo_bars=4", "run.steps=400", "run.epoch_steps=200", "schedule.horizon_steps=0", "run.patience=0",
)  # fmt: skip


@pytest.mark.slow
def test_the_agent_learns_two_markets_of_the_suite(suite, tmp_path):
    options = _options(suite, tmp_path, *TEST_SIZE, n_bars=2400)
    ar1 = suite.run_cell("ar1", 0, options)
    ou = suite.run_cell("ou", 0, options)
    for cell in (ar1, ou):
        assert cell["agent"]["n_periods"] == cell["oracle"]["n_periods"]  # the same test bars
        assert len(cell["learning_curve"]) == 2
        assert cell["selection_reported"]
        assert cell["yardstick"] == suite.YARDSTICK  # scored against the oracle with its fitted flat band
    assert ar1["agent_over_oracle"] >= 0.5, ar1
    assert ou["agent_over_oracle"] >= 0.35, ou


def test_a_market_variant_is_its_generator_with_those_arguments_judged_like_its_kind(suite, tmp_path):
    variant = suite.make_market("ar1:sigma=0.02:start_price=1.1", 600, seed=3)
    direct = make_signal_market(600, sigma=0.02, start_price=1.1, seed=3, cost_rate=suite.COST_RATE)
    assert variant.params == direct.params == {"phi": 0.4, "sigma": 0.02}
    np.testing.assert_array_equal(variant.close, direct.close)
    assert suite.market_spec("ou") == ("ou", {}) and suite.market_kind("noise:sigma=0.01") == "noise"
    assert suite.cell_dir(tmp_path, "ar1:sigma=0.02", 3) == tmp_path / "ar1+sigma=0.02-seed3"
    noisy = [dict(_cell("noise:sigma=0.01", None), seed=s) for s in (0, 1)]
    assert suite.market_summary(noisy)["measure"] == "noise"  # no oracle ratio asked of a noise variant
    assert suite.paired_comparison({("noise:sigma=0.01", 0): noisy[0]}, {("noise:sigma=0.01", 0): noisy[1]}, "noise:sigma=0.01")["measure"] == "noise"


def test_user_mistakes_are_one_line_errors_before_any_run(suite, tmp_path, capsys):
    cases = {
        ("--markets", "ar1,bogus"): "unknown market 'bogus' (bogus vs one of ar1, regime, ou, garch_trend, noise) — hint",
        ("--markets", "ar1:bogus=1"): "unknown parameter 'bogus' of market 'ar1' (ar1:bogus=1 vs one of phi, sigma, start_price) — hint",
        ("--markets", "ou:half_life=long"): "market parameter half_life is not a number (long vs a number) — hint",
        ("--markets", "regime:stay=2"): "market 'regime:stay=2' cannot be built: regime stay probability out of range (2.0 vs",
        ("--set", "env.n_envs=0"): "env.n_envs = 0 out of range",
        ("--set", "steps"): "--set 'steps' (vs section.key=value, e.g. run.steps=100)",
        ("--jobs", "0"): "--jobs, --seeds and --steps-multiplier must be positive (0, 5, 1.0 vs > 0)",
    }
    for arguments, message in cases.items():
        with pytest.raises(SystemExit) as stopped:
            suite.main([*arguments, "--out", str(tmp_path)])
        assert stopped.value.code == 2
        error = capsys.readouterr().err
        assert message in error and "Traceback" not in error
    assert not list(tmp_path.iterdir())  # nothing was trained or written


def test_the_step_multiplier_applies_after_the_overrides(suite, tmp_path):
    options = suite.SuiteOptions(None, suite.parse_overrides(["run.steps=600"]), 4.0, "cpu", 100, str(tmp_path), False)
    assert suite.suite_config(options, tmp_path / "m.csv", seed=0).run.steps == 2400


def _curve(*sharpes):
    return [{"epoch": e, "sharpe_ratio": v, "turnover": 0.01} for e, v in enumerate(sharpes)]


def test_the_decay_is_the_last_validation_epoch_over_the_best(suite):
    assert suite.curve_retention({"learning_curve": _curve(8.0, 10.0, 5.0)}) == pytest.approx(0.5)
    assert suite.curve_retention({"learning_curve": _curve(4.0, 2.0, 4.0)}) == pytest.approx(1.0)  # recovered: no loss
    assert suite.curve_retention({"learning_curve": _curve(8.0, -2.0)}) == pytest.approx(-0.25)  # ends losing
    assert suite.curve_retention({"learning_curve": _curve(6.0, None)}) == 0.0  # a last epoch that never traded scores 0
    assert suite.curve_retention({"learning_curve": _curve(None, -1.0)}) is None  # nothing learned, nothing to lose
    assert suite.curve_retention({"learning_curve": _curve(5.0)}) is None  # one epoch: no curve
    cells = [dict(_cell("ou", 0.8), learning_curve=_curve(*c)) for c in ((10.0, 2.0), (10.0, 9.0), (10.0, 5.0), (None, None))]
    summary = suite.market_summary(cells)
    assert summary["retention"] == [pytest.approx(0.2), pytest.approx(0.9), pytest.approx(0.5), None]
    assert summary["median_retention"] == pytest.approx(0.5)  # the median of the cells that have one
    assert "median_retention" not in suite.market_summary([_cell("noise", None)])  # on noise a peak is the window's luck


def _write_arm(suite, root: Path, cells) -> Path:
    for cell in cells:
        directory = suite.cell_dir(root, cell["market"], cell["seed"])
        directory.mkdir(parents=True)
        (directory / suite.RESULT_FILENAME).write_text(json.dumps(cell))
    return root


def test_the_paired_comparison_reports_each_seeds_difference_with_its_statistics(suite, tmp_path, capsys):
    base_values, other_values = (0.5, 0.6, 0.7, 0.8, 0.9), (0.7, 0.7, 0.8, 0.8, 1.2)
    base = [dict(_cell("regime", v), seed=s) for s, v in enumerate(base_values)]
    other = [dict(_cell("regime", v), seed=s) for s, v in enumerate(other_values)]
    base += [dict(_cell("noise", None), seed=0), dict(_cell("noise", None, total_return=-0.01), seed=1)]
    other += [dict(_cell("noise", None, turnovers=(0.0, 0.02)), seed=0), dict(_cell("noise", None), seed=1),
              dict(_cell("noise", None), seed=7)]  # seed 7: in one arm only, left out  # fmt: skip
    a = suite.load_cells([_write_arm(suite, tmp_path / "a", base)])
    b = suite.load_cells([_write_arm(suite, tmp_path / "b1", other[:5]), _write_arm(suite, tmp_path / "b2", other[5:])])
    regime = suite.paired_comparison(a, b, "regime")
    d = np.array(other_values) - np.array(base_values)
    assert regime["seeds"] == [0, 1, 2, 3, 4] and regime["measure"] == "agent_over_oracle"
    assert regime["difference"]["mean"] == pytest.approx(d.mean()) and regime["difference"]["sd"] == pytest.approx(d.std(ddof=1))
    assert regime["difference"]["t"] == pytest.approx(d.mean() / (d.std(ddof=1) / np.sqrt(5)))
    assert (regime["difference"]["better"], regime["difference"]["worse"]) == (4, 0)  # seed 3 is a tie
    assert regime["difference"]["sign_test_p"] == pytest.approx(2 / 16)  # 4 of 4 untied seeds: 2 · (1/2)^4
    low, high = regime["difference"]["ci95"]
    assert d.min() <= low < d.mean() < high <= d.max()
    assert suite.paired_comparison(a, b, "regime") == regime  # the bootstrap is seeded: the same table every time
    assert regime["base"]["seeds_at_floor"] == 4 and regime["other"]["seeds_at_floor"] == 5
    noise = suite.paired_comparison(a, b, "noise")
    assert noise["seeds"] == [0, 1] and noise["verdict_changed"] == 2  # seed 0 passed → fails, seed 1 the reverse
    assert noise["base"] == {"losses_within_costs": 1, "turnover_falling": 2, "flat_epochs": 0, "epochs": 4}
    assert noise["other"] == {"losses_within_costs": 2, "turnover_falling": 1, "flat_epochs": 1, "epochs": 4}
    assert suite.paired_comparison(a, b, "ou") is None
    assert suite.main(["--compare", str(tmp_path / "a"), f"{tmp_path / 'b1'},{tmp_path / 'b2'}"]) == 0
    table = capsys.readouterr().out
    assert "| regime | 5 (0–4) | 70%, 4/5 | 84%, 5/5 | +14 (11) |" in table and "| 4 / 0 | 0.12 |" in table
    assert ("| noise | 2 (0–1) | within costs 1, turnover falling 2, flat epochs 0/4 | within costs 2, turnover falling 1, "
            "flat epochs 1/4 | verdict changed on 2 |") in table
    assert "cells in only one arm, left out: 1" in table
    assert regime["retention"] == {"base": None, "other": None, "seeds": 0, "better": 0, "worse": 0}  # flat curves at 0
    decaying = [dict(_cell("ou", 0.8), seed=s, learning_curve=_curve(10.0, last)) for s, last in enumerate((2.0, 4.0, 9.0))]
    held = [dict(_cell("ou", 0.8), seed=s, learning_curve=_curve(10.0, last)) for s, last in enumerate((9.0, 9.0, 5.0))]
    ou = suite.paired_comparison({("ou", c["seed"]): c for c in decaying}, {("ou", c["seed"]): c for c in held}, "ou")
    assert ou["retention"] == {"base": pytest.approx(0.4), "other": pytest.approx(0.9), "seeds": 3, "better": 2, "worse": 1}
    assert "| market | decay: base, median last ÷ best validation epoch | other |" in table and "| regime | — | — | 0: 0 / 0 |" in table
    assert suite.sign_test_p(0, 0) == 1.0 and suite.sign_test_p(3, 3) == 1.0
    assert suite.seed_ranges([15, 16, 17, 35, 37]) == "15–17, 35, 37"


def test_comparison_mistakes_are_one_line_errors(suite, tmp_path, capsys):
    arm = _write_arm(suite, tmp_path / "arm", [dict(_cell("ou", 0.8), seed=1)])
    twin = _write_arm(suite, tmp_path / "twin", [dict(_cell("ou", 0.9), seed=1)])
    other_market = _write_arm(suite, tmp_path / "ar1", [dict(_cell("ar1", 0.9), seed=1)])
    current = _write_arm(suite, tmp_path / "current", [dict(_cell("ou", 0.7), seed=1, yardstick=suite.YARDSTICK)])
    broken = tmp_path / "broken" / "ou-seed2"
    broken.mkdir(parents=True)
    (broken / suite.RESULT_FILENAME).write_text("{not json")
    cases = {
        (str(tmp_path / "missing"), str(arm)): f"no finished suite cells to compare ({tmp_path / 'missing'} vs a suite --out directory",
        (f"{arm},{twin}", str(arm)): "one cell twice in one arm (ou seed 1 in",
        (str(tmp_path / "broken"), str(arm)): "unreadable suite cell (",
        (str(arm), str(other_market)): "the two arms share no cell (1 and 1 cells vs the same market and seed in both)",
        # a cell scored before session 34 (no key: the plain oracle) against one scored by this suite
        (str(arm), str(current)): "the cells were scored against different oracles and baselines (flat_band (1 cells), plain (1 cells)",
    }
    for (base, other), message in cases.items():
        with pytest.raises(SystemExit) as stopped:
            suite.main(["--compare", base, other])
        assert stopped.value.code == 2
        error = capsys.readouterr().err
        assert message in error and "hint:" in error and "Traceback" not in error
