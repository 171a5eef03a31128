"""The learning suite: five synthetic markets, the real trainer, and what it should have reached.

For each market × seed (``trainer.data.synthetic``: AR(1), hidden-regime AR, OU around a drifting
mean, GARCH trend, noise) this writes the bars as a CSV, trains with the real trainer
(``trainer.train.loop.train``, the default CPU config with only the data path, periods_per_year
and fee set — not tuned per market) and scores, on exactly the agent's test bars and through the
trainer's own backtester (``trainer.env.accounting.backtest_targets``, the run's fee and slippage;
Sharpe by ``trainer.eval.metrics.sharpe_ratio`` with the run's periods_per_year):

- the feasible oracle (known parameters, unknown hidden state; ``oracle_positions``);
- baselines fitted on the training bars only (``trainer.data.baselines``: AR(5), a rolling
  autocorrelation rule, a moving-average z-score rule).

The agent's number is the test-split Sharpe of the run's ``metrics.json``. Targets (issue 9):
mean agent Sharpe ≥ 70 % of the oracle's (≥ 90 % of the best baseline's where there is no oracle),
at least 80 % of the seeds ≥ 60 %; on noise, a loss no larger than the costs of what it trades and
a turnover that falls over training. A finished cell (its ``result.json`` exists) is not re-run.

    python benchmarks/learning_suite.py --jobs 16                         # 5 markets × 5 seeds, CPU
    python benchmarks/learning_suite.py --jobs 16 --steps-multiplier 4 --out runs/suite-4x
    python benchmarks/learning_suite.py --config config/train/gpu.toml --device cuda --seeds 3
    python benchmarks/learning_suite.py --markets ar1,noise --seeds 1 --set run.steps=200
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from trainer.config import TrainConfig, load_config, parse_overrides
from trainer.data.baselines import fit_baselines
from trainer.data.synthetic import (
    SyntheticMarket,
    make_garch_trend_market,
    make_noise_market,
    make_ou_market,
    make_regime_market,
    make_signal_market,
    oracle_positions,
    write_market_csv,
)
from trainer.env.accounting import backtest_targets
from trainer.errors import UserError
from trainer.eval.health_diag import read_health_diag, silent_monitors
from trainer.eval.metrics import sharpe_ratio
from trainer.files import write_text_atomic

PERIODS_PER_YEAR = 6048.0  # hourly bars, 252 × 24
N_BARS = 8000
COST_RATE = 1e-4  # 1 bp of traded notional: the fee of every run
TARGET_OF_ORACLE = 0.70
TARGET_OF_BASELINE = 0.90
SEED_FLOOR = 0.60
SEEDS_AT_FLOOR = 0.80  # "4 of 5 seeds"
RESULT_FILENAME = "result.json"
SUITE_FILENAME = "suite.json"
REFERENCES_FILENAME = "references.json"  # --references-only: oracle and baselines, nothing trained
WINDOWS = ("train", "validation", "test")

MARKETS: dict[str, Callable[..., SyntheticMarket]] = {
    "ar1": make_signal_market,
    "regime": make_regime_market,
    "ou": make_ou_market,
    "garch_trend": make_garch_trend_market,
    "noise": make_noise_market,
}


@dataclass(frozen=True)
class SuiteOptions:
    """What every cell of one suite invocation shares."""

    config_path: str | None
    overrides: Mapping[str, Mapping[str, Any]]
    steps_multiplier: float
    device: str
    n_bars: int
    out: str
    plots: bool


# ----------------------------------------------------------------------------- configuration


def suite_config(options: SuiteOptions, data_path: Path, *, seed: int) -> TrainConfig:
    """The run's config: the base file with only the data path, periods_per_year, fee, seed and
    device set (and no metric bands), then any ``--set`` overrides, then run.steps × ``steps_multiplier``."""
    config = load_config(options.config_path).replace(
        data={"path": str(data_path), "periods_per_year": PERIODS_PER_YEAR},
        env={"fee_rate": COST_RATE},
        # The shipped metric bands describe default-config runs on EURUSD; synthetic markets leave them
        # legitimately, and the suite measures learning, not regressions.
        run={"seed": seed, "device": options.device, "bands": ""},
    )
    if options.overrides:
        config = config.replace(**options.overrides)
    return config.replace(run={"steps": max(1, round(config.run.steps * options.steps_multiplier))})


# ----------------------------------------------------------------------------- splits and scoring


def run_splits(metrics: Mapping[str, Any], config: TrainConfig) -> dict[str, tuple[int, int]]:
    """The run's train, validation and test windows in global bar indices (rows of the CSV).

    Prefers ``metrics["splits"]`` (what the run driver trained and tested on); for a metrics.json
    without it the driver's own split function is asked the same question (``trainer.train.loop``).
    """
    splits = metrics.get("splits")
    if splits:
        return {name: (int(splits[name][0]), int(splits[name][1])) for name in WINDOWS}
    from trainer.train.loop import prepare_market
    from trainer.train.loop import run_splits as driver_splits

    split = driver_splits(config, prepare_market(config))[0]
    return {name: (getattr(split, name).start, getattr(split, name).stop) for name in WINDOWS}


def scored_bars(test: tuple[int, int]) -> slice:
    """The prices the agent's test backtest covers: the greedy rollout never trades to the last bar
    of its window (``trainer.train.validate.greedy_rollout``), so bars start … stop − 2 are traded
    and the returns run over stop − start − 2 periods."""
    start, stop = test
    return slice(start, stop - 1)


def positions_to_units(positions: np.ndarray, close: np.ndarray, notional: float) -> np.ndarray:
    """Per-bar target units of a −1/0/+1 position series, sized to ``notional`` at each entry or
    flip (held unchanged while the position is, so no order is sent between signals)."""
    units = np.zeros(len(positions))
    held, current = 0.0, 0.0
    for t, position in enumerate(positions):
        if position != current:
            current = float(position)
            held = current * notional / close[t]
        units[t] = held
    return units


def score_positions(
    close: np.ndarray, positions: np.ndarray, *, fee_rate: float, slippage: float, init_cash: float, periods_per_year: float
) -> dict[str, float]:
    """Sharpe, total return and turnover of holding ``positions[t]`` over period t on ``close``
    (one price per bar, the last one only marks the final period), through the trainer's backtester."""
    units = positions_to_units(positions[:-1], close, init_cash)
    targets = np.concatenate([units, units[-1:]])  # the last bar trades nothing
    equity = backtest_targets(close, targets, fee_rate=fee_rate, slippage=slippage, init_cash=init_cash).numpy()
    returns = equity[1:] / equity[:-1] - 1.0  # [n − 1]
    value = sharpe_ratio(returns, periods_per_year)
    exposure = units * close[:-1] / equity[:-1]
    turnover = float(np.abs(np.diff(np.concatenate([[0.0], exposure]))).mean())
    return {
        "sharpe_ratio": float(value) if math.isfinite(value) else 0.0,  # a strategy that never trades
        "total_return": float(equity[-1] / equity[0] - 1.0),
        "turnover": turnover,
        "n_periods": len(returns),
    }


def score_strategies(market: SyntheticMarket, splits: Mapping[str, tuple[int, int]], config: TrainConfig) -> dict[str, Any]:
    """Oracle and fitted baselines on the agent's test bars, with the run's costs."""
    env = config.env
    cost = env.fee_rate + env.slippage  # what one unit of position change costs in the backtest
    close = market.close
    train_start, train_stop = splits["train"]
    window = scored_bars(splits["test"])
    options = {"fee_rate": env.fee_rate, "slippage": env.slippage, "init_cash": env.init_cash,
               "periods_per_year": config.data.periods_per_year}  # fmt: skip
    oracle = score_positions(close[window], oracle_positions(market, cost)[window], **options)
    rules = fit_baselines(close[train_start:train_stop], cost_rate=cost, periods_per_year=config.data.periods_per_year)
    baselines = {}
    for name, rule in rules.items():
        baselines[name] = score_positions(close[window], rule.positions(close, cost)[window], **options)
        baselines[name]["train_sharpe"] = rule.train_sharpe
        baselines[name]["params"] = {key: value for key, value in rule.params.items()}
    best = max(baselines, key=lambda name: baselines[name]["sharpe_ratio"])
    return {"oracle": oracle, "baselines": baselines, "best_baseline": best}


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator where the denominator is a positive Sharpe ratio, else None."""
    return numerator / denominator if denominator > 0.0 else None


def never_fired(run_dir: Path) -> list[str]:
    """The adaptive monitors whose value never moved over the run (fire rate 0 in the last HEALTH_DIAG
    record): issue 9 asks every one to fire on every market of the suite."""
    records = read_health_diag(run_dir)
    return silent_monitors(records[-1].monitors) if records else []


def learning_curve(run_dir: Path) -> list[dict[str, float | int | None]]:
    """Validation Sharpe and turnover of the greedy policy per epoch (HEALTH_DIAG)."""
    curve = []
    for record in read_health_diag(run_dir):
        agent = record.validation.get("agent", {})
        curve.append({"epoch": record.epoch, "sharpe_ratio": agent.get("sharpe_ratio"), "turnover": agent.get("turnover")})
    return curve


# ----------------------------------------------------------------------------- one cell


def cell_dir(out: str | Path, market_name: str, seed: int) -> Path:
    return Path(out) / f"{market_name}-seed{seed}"


def run_cell(market_name: str, seed: int, options: SuiteOptions) -> dict[str, Any]:
    """Train and score one market × seed; a cell whose result.json exists is read back instead."""
    from trainer.train.loop import METRICS_FILENAME, train

    directory = cell_dir(options.out, market_name, seed)
    result_path = directory / RESULT_FILENAME
    if result_path.exists():
        return json.loads(result_path.read_text(encoding="utf-8"))
    market = MARKETS[market_name](options.n_bars, seed=seed, cost_rate=COST_RATE)
    run_dir = directory / "run"
    shutil.rmtree(run_dir, ignore_errors=True)  # an unfinished earlier attempt: start it again
    # A name of its own per cell: the feature cache keys its entries by the file's stem.
    data_path = write_market_csv(market, directory / f"{market_name}-seed{seed}.csv")
    config = suite_config(options, data_path, seed=seed)
    started = time.perf_counter()
    train(config, run_dir, make_plots=options.plots)
    train_seconds = time.perf_counter() - started
    metrics = json.loads((run_dir / METRICS_FILENAME).read_text(encoding="utf-8"))
    splits = run_splits(metrics, config)
    scores = score_strategies(market, splits, config)
    agent = metrics["agent"]
    expected_periods = scores["oracle"]["n_periods"]
    if agent.get("n_periods") != expected_periods:
        raise RuntimeError(
            f"the agent's test window and the suite's differ ({agent.get('n_periods')} vs {expected_periods} periods) "
            f"— hint: the run driver changed its split; update run_splits/scored_bars to match metrics.json"
        )
    curve = learning_curve(run_dir)
    selection = metrics.get("selection") or {}
    best = scores["best_baseline"]
    agent_sharpe = float(agent["sharpe_ratio"]) if agent.get("sharpe_ratio") is not None else 0.0
    result = {
        "market": market_name,
        "seed": seed,
        "params": dict(market.params),
        "n_bars": len(market),
        "splits": {name: list(bounds) for name, bounds in splits.items()},
        "steps": config.run.steps,
        "train_seconds": round(train_seconds, 1),
        "agent": {
            "sharpe_ratio": agent_sharpe,
            "total_return": agent.get("total_return"),
            "turnover": agent.get("turnover"),
            "n_periods": agent.get("n_periods"),
        },
        "oracle": scores["oracle"],
        "baselines": scores["baselines"],
        "best_baseline": best,
        "agent_over_oracle": ratio(agent_sharpe, scores["oracle"]["sharpe_ratio"]),
        "agent_over_baseline": ratio(agent_sharpe, scores["baselines"][best]["sharpe_ratio"]),
        "cost_of_agent_trades": (config.env.fee_rate + config.env.slippage) * (agent.get("turnover") or 0.0) * expected_periods,
        "selected_epoch": selection.get("epoch", curve[-1]["epoch"] if curve else None),
        "selection_reported": "epoch" in selection,
        "learning_curve": curve,
        "never_fired": never_fired(run_dir),
    }
    write_text_atomic(result_path, json.dumps(result, indent=2, allow_nan=False) + "\n")
    return result


def reference_cell(market_name: str, seed: int, options: SuiteOptions) -> dict[str, Any]:
    """Oracle and baselines only, on the test bars the run's split would have (nothing trained)."""
    market = MARKETS[market_name](options.n_bars, seed=seed, cost_rate=COST_RATE)
    directory = cell_dir(options.out, market_name, seed)
    data_path = write_market_csv(market, directory / f"{market_name}-seed{seed}.csv")
    config = suite_config(options, data_path, seed=seed)
    splits = run_splits({}, config)
    return {"market": market_name, "seed": seed, "splits": {name: list(bounds) for name, bounds in splits.items()},
            **score_strategies(market, splits, config)}  # fmt: skip


def print_references(cells: Sequence[Mapping[str, Any]], markets: Sequence[str]) -> None:
    """Per market: the oracle's and each baseline's test Sharpe, mean (min) over the seeds."""
    print("\n| market | oracle | ar5 | rolling_autocorr | zscore | oracle turnover |")
    print("|---|---|---|---|---|---|")
    for name in markets:
        rows = [cell for cell in cells if cell["market"] == name]
        columns = [[row["oracle"]["sharpe_ratio"] for row in rows]]
        columns += [[row["baselines"][rule]["sharpe_ratio"] for row in rows] for rule in ("ar5", "rolling_autocorr", "zscore")]
        shown = " | ".join(f"{np.mean(values):.2f} ({min(values):.2f})" for values in columns)
        print(f"| {name} | {shown} | {np.mean([row['oracle']['turnover'] for row in rows]):.3f} |")


def _run_cell_job(job: tuple[str, int, SuiteOptions]) -> dict[str, Any]:
    return run_cell(*job)


# ----------------------------------------------------------------------------- summary


def silent_adaptive_values(results: Sequence[Mapping[str, Any]]) -> dict[str, int] | None:
    """Adaptive monitor → how many of the market's cells it never fired in (None when a cell was
    scored before the suite recorded it)."""
    if any("never_fired" not in r for r in results):
        return None
    counts: dict[str, int] = {}
    for r in results:
        for name in r["never_fired"]:
            counts[name] = counts.get(name, 0) + 1
    return counts


def market_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean / min / count at the seed floor, and pass or fail against the issue's targets; beside
    them, the adaptive values that never fired (issue 9 wants none)."""
    market = results[0]["market"]
    silent = silent_adaptive_values(results)
    if market != "noise":
        by_oracle = all(r["agent_over_oracle"] is not None for r in results)
        key, target = ("agent_over_oracle", TARGET_OF_ORACLE) if by_oracle else ("agent_over_baseline", TARGET_OF_BASELINE)
        fractions = [r[key] if r[key] is not None else 0.0 for r in results]
        at_floor = sum(value >= SEED_FLOOR for value in fractions)
        mean = float(np.mean(fractions))
        passed = mean >= target and at_floor >= math.ceil(SEEDS_AT_FLOOR * len(results))
        return {"market": market, "measure": key, "target": target, "mean": mean, "min": float(min(fractions)),
                "seeds": len(results), "seeds_at_floor": at_floor, "passed": bool(passed), "never_fired": silent}  # fmt: skip
    # Noise: nothing to earn, so the agent must not lose more than its trading costs, and its
    # turnover must fall over training (last epoch ≤ first epoch of the validation curve).
    losses_within_costs = [(r["agent"]["total_return"] or 0.0) >= -r["cost_of_agent_trades"] for r in results]
    falling = []
    for r in results:
        turnovers = [point["turnover"] for point in r["learning_curve"] if point["turnover"] is not None]
        falling.append(len(turnovers) >= 2 and turnovers[-1] <= turnovers[0])
    return {"market": market, "measure": "noise", "losses_within_costs": sum(losses_within_costs),
            "turnover_falling": sum(falling), "seeds": len(results),
            "passed": bool(all(losses_within_costs) and all(falling)), "never_fired": silent}  # fmt: skip


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def print_report(results: Sequence[Mapping[str, Any]], summaries: Sequence[Mapping[str, Any]]) -> None:
    print("\n| market | seed | agent | oracle | best baseline | agent/oracle | agent/baseline | turnover | selected epoch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        best = r["best_baseline"]
        print(f"| {r['market']} | {r['seed']} | {r['agent']['sharpe_ratio']:.2f} | {r['oracle']['sharpe_ratio']:.2f} | "
              f"{r['baselines'][best]['sharpe_ratio']:.2f} ({best}) | {_percent(r['agent_over_oracle'])} | "
              f"{_percent(r['agent_over_baseline'])} | {r['agent']['turnover'] or 0.0:.4f} | "
              f"{r['selected_epoch']}{'' if r['selection_reported'] else ' (last)'} |")  # fmt: skip
    print("\nlearning curves (validation Sharpe per epoch):")
    for r in results:
        values = " → ".join("—" if p["sharpe_ratio"] is None else f"{p['sharpe_ratio']:.1f}" for p in r["learning_curve"])
        print(f"  {r['market']} seed {r['seed']}: {values}")
    print("\nsummary:")
    for s in summaries:
        verdict = "PASS" if s["passed"] else "FAIL"
        if s["measure"] == "noise":
            print(f"  {s['market']}: loss within costs in {s['losses_within_costs']}/{s['seeds']}, "
                  f"turnover falling in {s['turnover_falling']}/{s['seeds']} — {verdict}")  # fmt: skip
        else:
            print(f"  {s['market']}: {s['measure']} mean {s['mean']:.0%} (target ≥ {s['target']:.0%}), min {s['min']:.0%}, "
                  f"≥ {SEED_FLOOR:.0%} in {s['seeds_at_floor']}/{s['seeds']} — {verdict}")  # fmt: skip
        silent = s.get("never_fired")
        fired = ("not recorded" if silent is None else "every one fired" if not silent
                 else ", ".join(f"{name} silent in {count}/{s['seeds']}" for name, count in sorted(silent.items())))
        print(f"    adaptive values: {fired}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None, help="training config (default config/train/default.toml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one config value (repeatable), e.g. --set env.n_envs=256")  # fmt: skip
    parser.add_argument("--steps-multiplier", type=float, default=1.0, help="run.steps × this (4 for the 'longer never hurts' check)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    parser.add_argument("--jobs", type=int, default=1, help="cells trained in parallel processes")
    parser.add_argument("--markets", default=",".join(MARKETS), help=f"comma-separated subset of {','.join(MARKETS)}")
    parser.add_argument("--seeds", type=int, default=5, help="how many seeds per market")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run from here")
    parser.add_argument("--bars", type=int, default=N_BARS, help="bars per market")
    parser.add_argument("--plots", action="store_true", help="let every run write its plots")
    parser.add_argument("--references-only", action="store_true",
                        help="score the oracle and the baselines on each cell's test bars; train nothing")  # fmt: skip
    parser.add_argument("--out", default="runs/learning_suite")
    args = parser.parse_args(argv)
    markets = [name.strip() for name in args.markets.split(",") if name.strip()]
    unknown = [name for name in markets if name not in MARKETS]
    if unknown:
        parser.error(f"unknown market {unknown[0]!r} (vs one of {', '.join(MARKETS)}) — hint: e.g. --markets ar1,noise")
    if args.jobs < 1 or args.seeds < 1 or args.steps_multiplier <= 0:
        parser.error(f"--jobs, --seeds and --steps-multiplier must be positive ({args.jobs}, {args.seeds}, "
                     f"{args.steps_multiplier} vs > 0) — hint: e.g. --jobs 4 --seeds 5")  # fmt: skip
    try:
        overrides = parse_overrides(args.overrides)
    except UserError as error:
        parser.error(str(error))
    options = SuiteOptions(args.config, overrides, args.steps_multiplier, args.device, args.bars, args.out, args.plots)
    try:  # a bad --config or --set fails here, before any run, with the config's own message
        suite_config(options, Path("market.csv"), seed=args.first_seed)
    except UserError as error:
        parser.error(str(error))
    jobs = [(name, seed, options) for name in markets for seed in range(args.first_seed, args.first_seed + args.seeds)]
    if args.references_only:
        cells = [reference_cell(*job) for job in jobs]
        print_references(cells, markets)
        write_text_atomic(Path(args.out) / REFERENCES_FILENAME, json.dumps({"references": cells}, indent=2, allow_nan=False) + "\n")
        return 0
    results: list[dict[str, Any]] = []
    if args.jobs == 1:
        for job in jobs:
            results.append(_run_cell_job(job))
            _print_cell(results[-1])
    else:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            for result in pool.map(_run_cell_job, jobs):
                results.append(result)
                _print_cell(result)
    summaries = [market_summary([r for r in results if r["market"] == name]) for name in markets]
    print_report(results, summaries)
    suite = {"options": {"config": args.config, "overrides": overrides, "steps_multiplier": args.steps_multiplier,
                         "device": args.device, "bars": args.bars, "cost_rate": COST_RATE,
                         "periods_per_year": PERIODS_PER_YEAR},
             "cells": results, "summary": summaries}  # fmt: skip
    write_text_atomic(Path(args.out) / SUITE_FILENAME, json.dumps(suite, indent=2, allow_nan=False) + "\n")
    print(f"\nwrote {Path(args.out) / SUITE_FILENAME}")
    return 0


def _print_cell(result: Mapping[str, Any]) -> None:
    print(f"{result['market']} seed {result['seed']}: agent {result['agent']['sharpe_ratio']:.2f}, "
          f"oracle {result['oracle']['sharpe_ratio']:.2f}, {result['best_baseline']} "
          f"{result['baselines'][result['best_baseline']]['sharpe_ratio']:.2f}, "
          f"{result['train_seconds']:.0f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
