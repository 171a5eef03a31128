"""The validation report: per-cell results, aggregates with bootstrap intervals, paired tests, tiers.

Statistics (over the seeds × folds of one variant and grid point):

- mean, standard deviation (ddof 1) and a percentile-bootstrap 95 % interval of the mean of every
  test metric of every strategy (``BOOTSTRAP_RESAMPLES`` resamples, fixed seed: the report is
  reproducible);
- the agent against buy-and-hold and against flat, paired by cell (same seed, fold and test
  window): the mean Sharpe difference, its bootstrap interval and the one-sided p-value of a
  paired sign-flip permutation test (under "no difference" each cell's difference is as likely
  positive as negative; exact for ≤ 16 cells, 10,000 random sign flips beyond — numpy only, so
  the report runs where scipy is not installed). An undefined Sharpe (a strategy that never
  trades, e.g. flat) is taken as 0, the Sharpe of holding cash.

Tiers (each PASS/FAIL with the reason; all PASS → exit status 0):

1. **convergence** — every cell finished (none failed, none stopped by its bands), no NaN in any
   epoch's losses or gradient norm, every cell's last epoch inside the metric bands, every adaptive
   value fired (its monitor's fire rate > 0) in every cell;
2. **out of sample** — the agent's paired Sharpe difference against buy-and-hold and against flat
   has a 95 % interval above 0;
3. **robustness** — the same cells with costs × 2 and a held-out seed set: how much the agent's
   mean Sharpe degrades, and whether it still beats buy-and-hold (interval above 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainer.eval.bands import UNDEFINED_IS_NEUTRAL, MetricBands, metric_value
from trainer.eval.health_diag import (
    HEALTH_DIAG_FILENAME,
    HealthDiagError,
    read_health_diag,
    silent_monitors,
)
from trainer.validate.cells import FINISHED

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20_261_201
CONFIDENCE = 0.95
METRICS = ("sharpe_ratio", "sortino_ratio", "max_drawdown", "annual_return", "trade_count")
STRATEGIES = ("agent", "buy_and_hold", "flat")
CLAIM_SEEDS, CLAIM_FOLDS = 5, 6
NOT_A_CLAIM = f"not a validation claim (needs ≥ {CLAIM_SEEDS} × {CLAIM_FOLDS})"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def bootstrap_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (None without values; a point for one value)."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return None
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = data[rng.integers(0, data.size, size=(BOOTSTRAP_RESAMPLES, data.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    return float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))


def describe(values: Sequence[float | None]) -> dict[str, Any]:
    finite = [value for value in (_number(item) for item in values) if value is not None]
    interval = bootstrap_interval(finite)
    return {
        "n": len(finite),
        "mean": float(np.mean(finite)) if finite else None,
        "std": float(np.std(finite, ddof=1)) if len(finite) > 1 else None,
        "ci95": list(interval) if interval else None,
    }


def _sharpe_or_cash(metrics: Mapping[str, Any], strategy: str) -> float:
    value = _number(metrics.get(strategy, {}).get("sharpe_ratio"))
    return 0.0 if value is None else value


EXACT_PERMUTATION_CELLS = 16


def sign_flip_p_value(differences: Sequence[float]) -> float | None:
    """One-sided p-value that the mean paired difference is > 0 (None without a non-zero one)."""
    data = np.asarray(differences, dtype=np.float64)
    if data.size == 0 or not np.any(data != 0.0):
        return None
    if data.size <= EXACT_PERMUTATION_CELLS:
        signs = 1.0 - 2.0 * ((np.arange(2**data.size)[:, None] >> np.arange(data.size)) & 1)  # [2^n, n] every flip
    else:
        signs = np.random.default_rng(BOOTSTRAP_SEED).choice((-1.0, 1.0), size=(BOOTSTRAP_RESAMPLES, data.size))
    means = (signs * data).mean(axis=1)
    observed = data.mean()
    return float(np.mean(means >= observed - 1e-12 * max(1.0, abs(observed))))


def paired_test(cells: Sequence[Mapping[str, Any]], baseline: str) -> dict[str, Any]:
    """Agent minus ``baseline`` Sharpe, paired by cell: mean, bootstrap interval, permutation p."""
    differences = [_sharpe_or_cash(cell["metrics"], "agent") - _sharpe_or_cash(cell["metrics"], baseline) for cell in cells]
    return {"baseline": baseline, "metric": "sharpe_ratio", **describe(differences), "p_greater": sign_flip_p_value(differences)}


def aggregate(cells: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean, std and bootstrap interval of every metric of every strategy over the finished cells."""
    return {
        strategy: {metric: describe([cell["metrics"].get(strategy, {}).get(metric) for cell in cells]) for metric in METRICS}
        for strategy in STRATEGIES
    }


def per_fold(cells: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    folds = sorted({cell["fold"] for cell in cells})
    rows = []
    for fold in folds:
        members = [cell for cell in cells if cell["fold"] == fold]
        rows.append({
            "fold": fold, "cells": len(members),
            **{strategy: describe([_sharpe_or_cash(cell["metrics"], strategy) for cell in members]) for strategy in STRATEGIES},
        })  # fmt: skip
    return rows


def cell_history(cell_dir: Path) -> list[dict[str, Any]]:
    """The cell's HEALTH_DIAG records as dicts ([] when it has none or they are unreadable)."""
    records: list[dict[str, Any]] = []
    # A single-split cell logs in its directory, a walk-forward fold cell in its fold-KK/ run directory.
    for log in sorted(cell_dir.glob(f"**/{HEALTH_DIAG_FILENAME}")):
        try:
            records.extend(record.to_dict() for record in read_health_diag(log))
        except (HealthDiagError, OSError):
            continue
    return records


def _interval_text(summary: Mapping[str, Any]) -> str:
    interval = summary.get("ci95")
    if summary.get("mean") is None or not interval:
        return "n/a"
    return f"{summary['mean']:+.3f} [{interval[0]:+.3f}, {interval[1]:+.3f}]"


def tier_convergence(
    cells: Sequence[Mapping[str, Any]], histories: Mapping[str, list[dict[str, Any]]], bands: MetricBands | None
) -> dict[str, Any]:
    reasons = []
    failed = [cell["id"] for cell in cells if cell["status"] == "failed"]
    stopped = [cell["id"] for cell in cells if cell["status"] == "stopped"]
    if failed:
        reasons.append(f"{len(failed)} cell(s) failed: {', '.join(failed)}")
    if stopped:
        reasons.append(f"{len(stopped)} cell(s) stopped by their metric bands: {', '.join(stopped)}")
    unlogged = [cell["id"] for cell in cells if cell["status"] in FINISHED and not histories.get(cell["id"])]
    if unlogged:  # a check over no epochs proves nothing
        reasons.append(f"{len(unlogged)} finished cell(s) without HEALTH_DIAG records: {', '.join(unlogged[:8])}")
    nan_cells = []
    for cell in cells:
        for record in histories.get(cell["id"], []):
            if metric_value(record, "loss.total") is None or metric_value(record, "grad_norm.global") is None:
                nan_cells.append(f"{cell['id']} (epoch {record['epoch']})")
                break
    if nan_cells:
        reasons.append(f"non-finite loss or gradient norm in {', '.join(nan_cells)}")
    if bands is not None:
        outside = []
        for cell in cells:
            history = histories.get(cell["id"], [])
            if not history:
                continue
            last = history[-1]
            for metric, band in bands.bands.items():
                value = metric_value(last, metric)
                if value is None and metric in UNDEFINED_IS_NEUTRAL:
                    continue
                if value is None or not band.contains(value):
                    outside.append(f"{cell['id']}: {metric} = {value} vs [{band.low:.4g}, {band.high:.4g}]")
        if outside:
            reasons.append(f"last epoch outside its band: {'; '.join(outside[:8])}" + (" …" if len(outside) > 8 else ""))
    silent: dict[str, list[str]] = {}
    for cell in cells:
        history = histories.get(cell["id"], [])
        if not history:
            continue
        for name in silent_monitors(history[-1].get("monitors", {})):
            silent.setdefault(name, []).append(cell["id"])
    if silent:
        reasons.append("adaptive value(s) never fired: " + ", ".join(f"{name} in {len(ids)} cell(s)" for name, ids in silent.items()))
    detail = "every cell finished, no NaN, " + ("inside the bands, " if bands is not None else "no bands applied (--no-bands, or no shipped bands of this scope), ")
    return {"tier": 1, "name": "convergence", "passed": not reasons, "reason": "; ".join(reasons) or detail + "every adaptive value fired"}


def tier_out_of_sample(tests: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    reasons, passes = [], []
    for baseline, test in tests.items():
        interval = test.get("ci95")
        text = f"agent − {baseline} Sharpe {_interval_text(test)}"
        (passes if interval and interval[0] > 0.0 else reasons).append(text + ("" if interval else " (no finished cells)"))
    return {"tier": 2, "name": "out of sample", "passed": not reasons,
            "reason": ("; ".join(reasons) + " — interval not above 0") if reasons else "; ".join(passes) + " — above 0"}  # fmt: skip


def tier_robustness(base: Sequence[Mapping[str, Any]], variants: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    base_mean = describe([_sharpe_or_cash(cell["metrics"], "agent") for cell in base])["mean"]
    reasons, notes, degradation = [], [], {}
    for name, cells in variants.items():
        finished = [cell for cell in cells if cell["status"] in ("ok", "stopped")]
        if not finished:
            reasons.append(f"{name}: no finished cells")
            continue
        mean = describe([_sharpe_or_cash(cell["metrics"], "agent") for cell in finished])["mean"]
        test = paired_test(finished, "buy_and_hold")
        drop = None if base_mean is None or mean is None else base_mean - mean
        degradation[name] = {"agent_sharpe_mean": mean, "degradation": drop, "vs_buy_and_hold": test}
        text = f"{name}: agent Sharpe {mean:+.3f} (degrades by {drop:+.3f}), vs buy-and-hold {_interval_text(test)}"
        (notes if test["ci95"] and test["ci95"][0] > 0.0 else reasons).append(text)
    return {"tier": 3, "name": "robustness", "passed": not reasons, "degradation": degradation,
            "reason": ("; ".join(reasons) + " — does not beat buy-and-hold") if reasons else "; ".join(notes)}  # fmt: skip


def build_report(
    cells: Sequence[Mapping[str, Any]],
    histories: Mapping[str, list[dict[str, Any]]],
    plan: Mapping[str, Any],
    bands: MetricBands | None,
) -> dict[str, Any]:
    """report.json's content: the plan, every cell, per grid point the aggregates and tiers."""
    grid_points = []
    for index, point in enumerate(plan["grid"]):
        group = [cell for cell in cells if cell["grid"] == index]
        base = [cell for cell in group if cell["variant"] == "base"]
        finished = [cell for cell in base if cell["status"] in ("ok", "stopped")]
        tests = {baseline: paired_test(finished, baseline) for baseline in ("buy_and_hold", "flat")}
        tiers = []
        if 1 in plan["tiers"]:
            tiers.append(tier_convergence(base, histories, bands))
        if 2 in plan["tiers"]:
            tiers.append(tier_out_of_sample(tests))
        if 3 in plan["tiers"]:
            variants = {name: [cell for cell in group if cell["variant"] == name] for name in ("costs_x2", "held_out_seeds")}
            tiers.append(tier_robustness(finished, variants))
        grid_points.append({
            "index": index, "overrides": point, "cells": len(base), "finished": len(finished),
            "stopped_by_bands": sum(cell["status"] == "stopped" for cell in base),
            "failed": sum(cell["status"] == "failed" for cell in base),
            "aggregate": aggregate(finished), "paired_tests": tests, "per_fold": per_fold(finished), "tiers": tiers,
        })  # fmt: skip
    claim = plan["seeds"] >= CLAIM_SEEDS and plan["folds"] >= CLAIM_FOLDS
    passed = all(tier["passed"] for point in grid_points for tier in point["tiers"])
    return {
        "schema": 1, "plan": dict(plan), "validation_claim": claim, "claim_note": None if claim else NOT_A_CLAIM,
        "passed": passed, "grid_points": grid_points, "cells": [dict(cell) for cell in cells],
    }  # fmt: skip


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def report_markdown(report: Mapping[str, Any]) -> str:
    plan = report["plan"]
    lines = [
        f"# Validation report — {plan['seeds']} seeds × {plan['folds']} folds",
        "",
        f"Config: `{plan['config_source']}`; executor {plan['executor']}; tiers {', '.join(map(str, plan['tiers']))}.",
        "",
        f"**{'PASS' if report['passed'] else 'FAIL'}**" + (f" — {report['claim_note']}" if report["claim_note"] else " — a validation claim (≥ 5 × 6)"),
        "",
    ]
    for point in report["grid_points"]:
        title = ", ".join(f"{key} = {value}" for key, value in point["overrides_flat"].items()) if point.get("overrides_flat") else "base config"
        lines += [f"## Grid point {point['index']}: {title}", ""]
        lines.append(f"{point['finished']}/{point['cells']} cells finished, {point['stopped_by_bands']} stopped by bands, {point['failed']} failed.")
        lines += ["", "| tier | result | reason |", "| --- | --- | --- |"]
        for tier in point["tiers"]:
            lines.append(f"| {tier['tier']} {tier['name']} | {'PASS' if tier['passed'] else 'FAIL'} | {tier['reason']} |")
        lines += ["", "| strategy | metric | mean | std | 95 % interval | n |", "| --- | --- | --- | --- | --- | --- |"]
        for strategy, metrics in point["aggregate"].items():
            for metric, summary in metrics.items():
                interval = summary["ci95"]
                shown = f"[{interval[0]:.4g}, {interval[1]:.4g}]" if interval else "n/a"
                lines.append(f"| {strategy} | {metric} | {_fmt(summary['mean'])} | {_fmt(summary['std'])} | {shown} | {summary['n']} |")
        lines += ["", "| paired test (Sharpe) | mean difference | 95 % interval | p (agent greater, sign-flip) |", "| --- | --- | --- | --- |"]
        for baseline, test in point["paired_tests"].items():
            interval = test["ci95"]
            shown = f"[{interval[0]:+.4g}, {interval[1]:+.4g}]" if interval else "n/a"
            lines.append(f"| agent − {baseline} | {_fmt(test['mean'])} | {shown} | {_fmt(test['p_greater'])} |")
        lines += ["", "| fold | cells | agent Sharpe | buy-and-hold Sharpe | flat Sharpe |", "| --- | --- | --- | --- | --- |"]
        for row in point["per_fold"]:
            lines.append(f"| {row['fold']} | {row['cells']} | {_interval_text(row['agent'])} | {_interval_text(row['buy_and_hold'])} | {_interval_text(row['flat'])} |")
        lines.append("")
    lines += ["## Cells", "", "| cell | status | agent Sharpe | buy-and-hold Sharpe | selected epoch | wall s | termination |",
              "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for cell in report["cells"]:
        metrics = cell.get("metrics") or {}
        termination = (cell.get("termination") or {}).get("message") or (cell.get("error") or "")
        lines.append(
            f"| {cell['id']} | {cell['status']} | {_fmt(metrics.get('agent', {}).get('sharpe_ratio'))} | "
            f"{_fmt(metrics.get('buy_and_hold', {}).get('sharpe_ratio'))} | {_fmt(cell.get('selected_epoch'))} | "
            f"{_fmt(cell.get('wall_time_s'))} | {termination.replace('|', '/')} |"
        )
    lines += ["", report.get("plots_note") or "Plots: `plots/sharpe_strip.png` (Sharpe per fold × seed), "
              "`plots/median_cell_equity.png` (equity of the median cell), `plots/learning_curves.png`.", ""]
    return "\n".join(lines)
