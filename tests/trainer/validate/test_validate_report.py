"""The report's statistics and tiers on hand-made cells (no training)."""

from __future__ import annotations

import numpy as np
import pytest

from trainer.eval.bands import Band, MetricBands
from trainer.validate.cells import Cell, cell_config, out_of_sample_metrics, plan_cells
from trainer.validate.report import (
    NOT_A_CLAIM,
    bootstrap_interval,
    build_report,
    paired_test,
    report_markdown,
)
from trainer.validate.sweep import flatten, parse_grid


def cell(seed: int, fold: int, agent: float | None, hold: float = 0.0, status: str = "ok", variant: str = "base") -> dict:
    return {
        "id": Cell(variant, 0, seed, fold).id, "variant": variant, "grid": 0, "seed": seed, "fold": fold, "status": status,
        "metrics": {"agent": {"sharpe_ratio": agent, "trade_count": 3}, "buy_and_hold": {"sharpe_ratio": hold},
                    "flat": {"sharpe_ratio": None}},
        "wall_time_s": 1.0,
    }  # fmt: skip


def history(total: float = 1.0, fire_rate: float = 0.5) -> list[dict]:
    return [{"epoch": 0, "losses": {"total": total}, "grad_norms": {"global": 1.0}, "isv": {"TAU": 0.004},
             "monitors": {"tau": {"fire_rate": fire_rate}}, "validation": {"agent": {"sharpe_ratio": 0.5}}}]  # fmt: skip


PLAN = {"seeds": 2, "folds": 2, "grid": [{}], "tiers": [1, 2], "config_source": "t.toml", "executor": "local"}


def test_bootstrap_interval_covers_the_mean_and_is_reproducible():
    values = list(np.random.default_rng(0).normal(1.0, 0.5, size=30))
    low, high = bootstrap_interval(values)
    assert low < np.mean(values) < high
    assert bootstrap_interval(values) == (low, high)
    assert bootstrap_interval([2.0]) == (2.0, 2.0) and bootstrap_interval([]) is None


def test_paired_test_counts_an_undefined_sharpe_as_cash():
    cells = [cell(0, 0, 1.0), cell(0, 1, 2.0), cell(1, 0, 1.5), cell(1, 1, None)]
    test = paired_test(cells, "flat")
    assert test["mean"] == pytest.approx(1.125)  # (1 + 2 + 1.5 + 0) / 4
    assert test["p_greater"] == pytest.approx(2 / 16)  # exact: 2 of the 16 sign flips reach the observed mean
    from scipy import (
        stats,  # the exact sign-flip test agrees with scipy's permutation test
    )

    reference = stats.permutation_test(([1.0, 2.0, 1.5, 0.0],), np.mean, permutation_type="samples", alternative="greater")
    assert test["p_greater"] == pytest.approx(reference.pvalue)


def test_tiers_pass_and_fail_with_reasons():
    cells = [cell(s, f, 1.0 + 0.1 * s + 0.05 * f, hold=0.2) for s in range(2) for f in range(2)]
    histories = {c["id"]: history() for c in cells}
    bands = MetricBands({"loss.total": Band("loss.total", 0.0, 2.0, 1.0, 0.3, 4)})
    report = build_report(cells, histories, PLAN, bands)
    tiers = report["grid_points"][0]["tiers"]
    assert [tier["passed"] for tier in tiers] == [True, True], tiers
    assert report["passed"] and report["claim_note"] == NOT_A_CLAIM

    cells[1]["status"] = "failed"
    cells[2]["status"] = "stopped"
    histories[cells[3]["id"]] = history(total=5.0, fire_rate=0.0)
    report = build_report(cells, histories, PLAN, bands)
    convergence = report["grid_points"][0]["tiers"][0]
    assert not convergence["passed"] and not report["passed"]
    assert f"1 cell(s) failed: {cells[1]['id']}" in convergence["reason"]
    assert f"1 cell(s) stopped by their metric bands: {cells[2]['id']}" in convergence["reason"]
    assert "loss.total = 5.0 vs [0, 2]" in convergence["reason"]
    assert "adaptive value(s) never fired: tau in 1 cell(s)" in convergence["reason"]
    markdown = report_markdown(report | {"grid_points": [dict(point, overrides_flat={}) for point in report["grid_points"]]})
    assert "**FAIL** — not a validation claim (needs ≥ 5 × 6)" in markdown and "| 1 convergence | FAIL |" in markdown


def test_out_of_sample_fails_when_the_agent_does_not_beat_buy_and_hold():
    cells = [cell(s, f, 0.1, hold=1.0) for s in range(2) for f in range(2)]
    report = build_report(cells, {}, {**PLAN, "tiers": [2]}, None)
    tier = report["grid_points"][0]["tiers"][0]
    assert not tier["passed"] and "agent − buy_and_hold Sharpe -0.900 [-0.900, -0.900]" in tier["reason"]


def test_robustness_reports_the_degradation():
    base = [cell(s, 0, 1.0, hold=0.1) for s in range(3)]
    costly = [cell(s, 0, 0.6, hold=0.1, variant="costs_x2") for s in range(3)]
    held_out = [cell(1000 + s, 0, -0.5, hold=0.1, variant="held_out_seeds") for s in range(3)]
    report = build_report(base + costly + held_out, {}, {**PLAN, "tiers": [3]}, None)
    tier = report["grid_points"][0]["tiers"][0]
    assert tier["degradation"]["costs_x2"]["degradation"] == pytest.approx(0.4)
    assert not tier["passed"] and "held_out_seeds: agent Sharpe -0.500 (degrades by +1.500)" in tier["reason"]


def test_plan_and_cell_config():
    cells = plan_cells(2, 3, 2, base_seed=7, robustness=True)
    assert len(cells) == 3 * 2 * 2 * 3
    assert {c.seed for c in cells if c.variant == "base"} == {7, 8}
    assert {c.seed for c in cells if c.variant == "held_out_seeds"} == {1007, 1008}
    grid = parse_grid(["optim.lr=1e-4,3e-4", "adaptive.kelly.cap_floor=0.1,0.2"])
    assert len(grid) == 4 and flatten(grid[3]) == {"optim.lr": 3e-4, "adaptive.kelly.cap_floor": 0.2}
    from trainer.config import TrainConfig

    config = cell_config(TrainConfig(), Cell("costs_x2", 3, 8, 2), 3, grid[3])
    assert (config.run.seed, config.data.folds, config.data.fold, config.optim.lr) == (8, 3, 2, 3e-4)
    assert config.env.fee_rate == 2 * TrainConfig().env.fee_rate and config.adaptive.kelly.cap_floor == 0.2


def test_test_metrics_accepts_both_metrics_shapes():
    today = {"agent": {"sharpe_ratio": 1.0}, "buy_and_hold": {}, "flat": {}}
    split = {**today, "validation": {"agent": {"sharpe_ratio": 2.0}}, "selection": {"epoch": 3}, "termination": None}
    assert out_of_sample_metrics(today) == out_of_sample_metrics(split) == {"agent": {"sharpe_ratio": 1.0}, "buy_and_hold": {}, "flat": {}}


def test_bad_grid_names_the_format():
    from trainer.errors import UserError

    with pytest.raises(UserError, match=r"bad --grid \('optim.lr' vs section.key=v1,v2,...\) — hint: e.g. --grid"):
        parse_grid(["optim.lr"])
