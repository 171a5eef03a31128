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
a turnover that falls over training. Each market's summary carries a 95 % bootstrap interval of
its mean over the seeds, and the decay of its learning curves: each seed's last validation epoch
÷ its best (``curve_retention``; 100 % = nothing lost by training on, which the selected test
number cannot show because the selection keeps the early epoch). A finished cell (its ``result.json`` exists) is not re-run, so running the
suite again on an ``--out`` directory re-reports its cells.

    python benchmarks/learning_suite.py --jobs 16                         # 5 markets × 5 seeds, CPU
    python benchmarks/learning_suite.py --jobs 16 --steps-multiplier 4 --out runs/suite-4x
    python benchmarks/learning_suite.py --config config/train/gpu.toml --device cuda --seeds 3
    python benchmarks/learning_suite.py --markets ar1,noise --seeds 1 --set run.steps=200
    python benchmarks/learning_suite.py --compare runs/base runs/change   # paired, seed by seed
    python benchmarks/learning_suite.py --markets "ar1:sigma=0.02:start_price=1.1,ou:half_life=30"

A market may be a variant of a suite generator, ``kind:key=value:…`` with the generator's own
keyword arguments (``trainer.data.synthetic``; ``market_spec``): the same oracle and baselines,
judged like its kind. The defaults were tuned on the five suite markets only, so variants are how a
claim is checked on markets nobody tuned for.

``--compare BASE OTHER`` trains nothing: it pairs two arms' finished cells by market and seed and
prints, per market, both arms' mean ratio and seeds at the floor, the mean paired difference with
its sd, a 95 % bootstrap interval (seeds resampled; fixed seed, so the table is reproducible), the
paired t and an exact sign test — the statistics every ablation in docs/results.md reports.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import shutil
import sys
import time
from collections import Counter
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
# What the cells' oracle and baselines are: "flat_band" since session 34 (each goes flat where its
# edge is inside a band fitted on the training bars, trainer.data.synthetic.fit_flat_band); a
# result.json without the key was scored against the plain rule ("plain"), 7–16 % weaker on the
# default markets. --compare refuses to pair cells of different yardsticks.
YARDSTICK = "flat_band"
REFERENCES_FILENAME = "references.json"  # --references-only: oracle and baselines, nothing trained
WINDOWS = ("train", "validation", "test")
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0  # intervals are a pure function of the cells: the same cells print the same numbers

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
    fit = slice(train_start, train_stop)  # the oracle's flat band, like the baselines, is chosen on the training bars
    oracle = score_positions(close[window], oracle_positions(market, cost, fit_bars=fit)[window], **options)
    rules = fit_baselines(close[train_start:train_stop], cost_rate=cost, periods_per_year=config.data.periods_per_year)
    baselines = {}
    for name, rule in rules.items():
        baselines[name] = score_positions(close[window], rule.positions(close, cost)[window], **options)
        baselines[name]["train_sharpe"] = rule.train_sharpe
        baselines[name]["params"] = {key: value for key, value in rule.params.items()} | {"flat_band": rule.flat_band}
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


# ----------------------------------------------------------------------------- markets and cells


def market_kind(market_name: str) -> str:
    """The suite generator a market (or a variant ``kind:key=value:…``) is built by."""
    return market_name.split(":", 1)[0]


def market_spec(market_name: str) -> tuple[str, dict[str, float]]:
    """``"ar1:sigma=0.02:start_price=1.1"`` → ``("ar1", {"sigma": 0.02, "start_price": 1.1})``.

    The keys are the generator's keyword arguments but the seed and the cost, which every cell
    sets; a mistake is a UserError naming the keys there are."""
    kind, *pairs = market_name.split(":")
    if kind not in MARKETS:
        raise UserError(f"unknown market {kind!r}", got=market_name, expected=f"one of {', '.join(MARKETS)}",
                        hint="e.g. --markets ar1,noise or ar1:sigma=0.02")  # fmt: skip
    allowed = [name for name, parameter in inspect.signature(MARKETS[kind]).parameters.items()
               if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in ("seed", "cost_rate")]  # fmt: skip
    params: dict[str, float] = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        if key not in allowed:
            raise UserError(f"unknown parameter {key!r} of market {kind!r}", got=market_name, expected=f"one of {', '.join(allowed)}",
                            hint=f"e.g. {kind}:{allowed[0]}=<number>")  # fmt: skip
        try:
            params[key] = float(text)
        except ValueError:
            raise UserError(f"market parameter {key} is not a number", got=text, expected="a number",
                            hint=f"e.g. {kind}:{key}=0.5") from None  # fmt: skip
    return kind, params


def make_market(market_name: str, n_bars: int, seed: int) -> SyntheticMarket:
    """The market of one cell: its generator, its variant's parameters, the cell's seed and the suite's cost."""
    kind, params = market_spec(market_name)
    try:
        return MARKETS[kind](n_bars, seed=seed, cost_rate=COST_RATE, **params)
    except ValueError as error:  # the generator's own check of a parameter's range, with its hint
        raise UserError(f"market {market_name!r} cannot be built: {error}") from None


def cell_dir(out: str | Path, market_name: str, seed: int) -> Path:
    return Path(out) / f"{market_name.replace(':', '+')}-seed{seed}"


def run_cell(market_name: str, seed: int, options: SuiteOptions) -> dict[str, Any]:
    """Train and score one market × seed; a cell whose result.json exists is read back instead."""
    from trainer.train.loop import METRICS_FILENAME, train

    directory = cell_dir(options.out, market_name, seed)
    result_path = directory / RESULT_FILENAME
    if result_path.exists():
        return json.loads(result_path.read_text(encoding="utf-8"))
    market = make_market(market_name, options.n_bars, seed)
    run_dir = directory / "run"
    shutil.rmtree(run_dir, ignore_errors=True)  # an unfinished earlier attempt: start it again
    # A name of its own per cell: the feature cache keys its entries by the file's stem.
    data_path = write_market_csv(market, directory / f"{directory.name}.csv")
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
        "yardstick": YARDSTICK,
        "agent_over_oracle": ratio(agent_sharpe, scores["oracle"]["sharpe_ratio"]),
        "agent_over_baseline": ratio(agent_sharpe, scores["baselines"][best]["sharpe_ratio"]),
        "cost_of_agent_trades": (config.env.fee_rate + config.env.slippage) * (agent.get("turnover") or 0.0) * expected_periods,
        "selected_epoch": selection.get("epoch", curve[-1]["epoch"] if curve else None),
        "selection_reported": "epoch" in selection,
        "flat_margin": metrics.get("flat_margin"),
        "learning_curve": curve,
        "never_fired": never_fired(run_dir),
    }
    write_text_atomic(result_path, json.dumps(result, indent=2, allow_nan=False) + "\n")
    return result


def reference_cell(market_name: str, seed: int, options: SuiteOptions) -> dict[str, Any]:
    """Oracle and baselines only, on the test bars the run's split would have (nothing trained)."""
    market = make_market(market_name, options.n_bars, seed)
    directory = cell_dir(options.out, market_name, seed)
    data_path = write_market_csv(market, directory / f"{directory.name}.csv")
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


def bootstrap_ci95(values: Sequence[float]) -> list[float]:
    """95 % bootstrap interval of the mean over seeds (BOOTSTRAP_RESAMPLES resamples of the seeds,
    a fixed RNG seed: the same cells give the same interval). Why: a suite mean over five seeds
    moves by tens of points between seed sets (docs/results.md §0); the interval says how far."""
    x = np.asarray(values, dtype=np.float64)
    means = x[np.random.default_rng(BOOTSTRAP_SEED).integers(0, len(x), size=(BOOTSTRAP_RESAMPLES, len(x)))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return [float(low), float(high)]


def signal_measure(results: Sequence[Mapping[str, Any]]) -> tuple[str, float]:
    """The ratio a signal market is judged by, and its target: agent ÷ oracle where every cell has a
    positive oracle Sharpe, else agent ÷ best baseline."""
    by_oracle = all(r["agent_over_oracle"] is not None for r in results)
    return ("agent_over_oracle", TARGET_OF_ORACLE) if by_oracle else ("agent_over_baseline", TARGET_OF_BASELINE)


def cell_fraction(result: Mapping[str, Any], key: str) -> float:
    """One cell's ratio; a cell whose denominator was not positive counts as 0 (no credit)."""
    value = result[key]
    return 0.0 if value is None else float(value)


def loss_within_costs(result: Mapping[str, Any]) -> bool:
    """Noise: the agent lost no more than what its trades cost."""
    return (result["agent"]["total_return"] or 0.0) >= -result["cost_of_agent_trades"]


def turnover_falling(result: Mapping[str, Any]) -> bool:
    """Noise: the validation turnover of the last epoch is at most the first epoch's."""
    turnovers = [point["turnover"] for point in result["learning_curve"] if point["turnover"] is not None]
    return len(turnovers) >= 2 and turnovers[-1] <= turnovers[0]


def curve_retention(result: Mapping[str, Any]) -> float | None:
    """The decay of one run, read from its own validation curve: the last epoch's validation Sharpe
    ÷ the best epoch's. An epoch that never traded scores 0, as the selection counts it
    (``trainer.train.selection.criterion_value``); None with fewer than two epochs, or when no
    epoch scored above 0 (nothing learned, so nothing to lose).

    Why: issue 9's first symptom is that training longer loses what earlier epochs had. The
    selected checkpoint hides it (the test number is the early epoch's), so a remedy for the decay
    itself is judged here: 100 % = the last network is as good as the best, 0 % = all of it lost,
    below 0 = the last network loses on the validation window."""
    scores = [0.0 if point["sharpe_ratio"] is None else float(point["sharpe_ratio"]) for point in result["learning_curve"]]
    if len(scores) < 2 or max(scores) <= 0.0:
        return None
    return scores[-1] / max(scores)


def median_retention(results: Sequence[Mapping[str, Any]]) -> float | None:
    """The median ``curve_retention`` over the cells that have one (None when none has)."""
    values = [value for r in results if (value := curve_retention(r)) is not None]
    return float(np.median(values)) if values else None


def noise_counts(results: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Noise: on how many cells the loss stayed within costs, and the turnover fell."""
    return {"losses_within_costs": sum(map(loss_within_costs, results)), "turnover_falling": sum(map(turnover_falling, results))}


def flat_epochs(results: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Noise: how many validation epochs, over every cell, had a greedy policy that never traded
    (its Sharpe undefined), of how many.

    Why: "turnover falling" compares one cell's last epoch with its first. An agent that stays flat
    on most epochs and trades a little on a few scattered ones fails it whenever the last epoch is one
    of those, and passes it otherwise; this count says whether a failure is such flicker around flat
    or an agent that trades noise more and more."""
    curves = [point for r in results for point in r["learning_curve"]]
    return {"flat_epochs": sum(point["sharpe_ratio"] is None for point in curves), "epochs": len(curves)}


def market_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean / min / count at the seed floor, and pass or fail against the issue's targets; beside
    them, the adaptive values that never fired (issue 9 wants none)."""
    market = results[0]["market"]
    silent = silent_adaptive_values(results)
    if market_kind(market) != "noise":
        key, target = signal_measure(results)
        fractions = [cell_fraction(r, key) for r in results]
        at_floor = sum(value >= SEED_FLOOR for value in fractions)
        mean = float(np.mean(fractions))
        passed = mean >= target and at_floor >= math.ceil(SEEDS_AT_FLOOR * len(results))
        return {"market": market, "measure": key, "target": target, "mean": mean, "ci95": bootstrap_ci95(fractions),
                "min": float(min(fractions)), "seeds": len(results), "seeds_at_floor": at_floor, "passed": bool(passed),
                "never_fired": silent, "retention": [curve_retention(r) for r in results],
                "median_retention": median_retention(results)}  # fmt: skip
    # Noise: nothing to earn, so the agent must not lose more than its trading costs, and its
    # turnover must fall over training (last epoch ≤ first epoch of the validation curve).
    counts = noise_counts(results)
    return {"market": market, "measure": "noise", **counts, **flat_epochs(results), "seeds": len(results),
            "passed": counts["losses_within_costs"] == counts["turnover_falling"] == len(results), "never_fired": silent}  # fmt: skip


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def margin_level(result: Mapping[str, Any]) -> str:
    """The flat margin the cell's test acted with, as its quantile level of the validation gaps
    (``trainer.train.flat_margin``): "0" = none chosen, "—" = run.flat_margin off or a cell from before it."""
    chosen = result.get("flat_margin")
    if not chosen:
        return "—"
    return "0" if chosen["margin"] == 0.0 else f"q{chosen['level']:.1f}"


def print_report(results: Sequence[Mapping[str, Any]], summaries: Sequence[Mapping[str, Any]]) -> None:
    print("\n| market | seed | agent | oracle | best baseline | agent/oracle | agent/baseline | turnover | selected epoch | flat margin |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        best = r["best_baseline"]
        print(f"| {r['market']} | {r['seed']} | {r['agent']['sharpe_ratio']:.2f} | {r['oracle']['sharpe_ratio']:.2f} | "
              f"{r['baselines'][best]['sharpe_ratio']:.2f} ({best}) | {_percent(r['agent_over_oracle'])} | "
              f"{_percent(r['agent_over_baseline'])} | {r['agent']['turnover'] or 0.0:.4f} | "
              f"{r['selected_epoch']}{'' if r['selection_reported'] else ' (last)'} | {margin_level(r)} |")  # fmt: skip
    print("\nlearning curves (validation Sharpe per epoch, — = never traded; on noise with its turnover):")
    for r in results:
        noise = market_kind(r["market"]) == "noise"
        values = " → ".join(("—" if p["sharpe_ratio"] is None else f"{p['sharpe_ratio']:.1f}")
                            + (f" ({p['turnover'] or 0.0:.3f})" if noise else "") for p in r["learning_curve"])  # fmt: skip
        print(f"  {r['market']} seed {r['seed']}: {values}")
    print("\nsummary:")
    for s in summaries:
        verdict = "PASS" if s["passed"] else "FAIL"
        if s["measure"] == "noise":
            print(f"  {s['market']}: loss within costs in {s['losses_within_costs']}/{s['seeds']}, "
                  f"turnover falling in {s['turnover_falling']}/{s['seeds']} — {verdict}")  # fmt: skip
            print(f"    validation epochs that never traded: {s['flat_epochs']}/{s['epochs']}")
        else:
            low, high = s["ci95"]
            print(f"  {s['market']}: {s['measure']} mean {s['mean']:.0%} (95 % CI {low:.0%} … {high:.0%}; target ≥ {s['target']:.0%}), min {s['min']:.0%}, "
                  f"≥ {SEED_FLOOR:.0%} in {s['seeds_at_floor']}/{s['seeds']} — {verdict}")  # fmt: skip
            per_seed = " / ".join(_percent(value) for value in s["retention"])
            print(f"    last ÷ best validation epoch: median {_percent(s['median_retention'])} ({per_seed})")
        silent = s.get("never_fired")
        fired = ("not recorded" if silent is None else "every one fired" if not silent
                 else ", ".join(f"{name} silent in {count}/{s['seeds']}" for name, count in sorted(silent.items())))
        print(f"    adaptive values: {fired}")


# ----------------------------------------------------------------------------- paired comparison

def load_cells(directories: Sequence[str | Path]) -> dict[tuple[str, int], dict[str, Any]]:
    """Every finished cell (``<dir>/<market>-seed<k>/result.json``) of one arm, by (market, seed)."""
    cells: dict[tuple[str, int], dict[str, Any]] = {}
    sources: dict[tuple[str, int], Path] = {}
    for directory in directories:
        root = Path(directory)
        found = sorted(root.glob(f"*/{RESULT_FILENAME}")) if root.is_dir() else []
        if not found:
            raise UserError(
                "no finished suite cells to compare", got=str(root), expected=f"a suite --out directory with */{RESULT_FILENAME}",
                hint="pass the directories two suite runs wrote (--out), several per arm joined by commas",
            )
        for path in found:
            try:
                result = json.loads(path.read_text(encoding="utf-8"))
                key = (str(result["market"]), int(result["seed"]))
            except (OSError, ValueError, KeyError, TypeError) as error:
                raise UserError("unreadable suite cell", got=f"{path}: {error}", expected="a result.json the suite wrote",
                                hint="delete the cell's directory and run the suite again to re-score it") from error  # fmt: skip
            if key in cells:
                raise UserError("one cell twice in one arm", got=f"{key[0]} seed {key[1]} in {sources[key]} and {path}",
                                expected="each (market, seed) once per arm", hint="give one arm directories of distinct seeds")  # fmt: skip
            cells[key], sources[key] = result, path
    return cells


def sign_test_p(better: int, worse: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven if either arm were as
    likely to win each seed (ties dropped)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(better, worse) + 1)) / 2**n
    return min(1.0, 2.0 * tail)


def paired_comparison(base: Mapping[tuple[str, int], Mapping[str, Any]], other: Mapping[tuple[str, int], Mapping[str, Any]],
                      market: str) -> dict[str, Any] | None:  # fmt: skip
    """The two arms on the seeds both ran of one market (None when they share none).

    Signal markets: each seed's ratio (the suite's own measure) in both arms, the difference other −
    base per seed, its mean, sd, paired t, a 95 % bootstrap interval of the mean (resampling seeds)
    and an exact sign test. Noise: each arm's count of losses within costs, of falling turnovers
    and of validation epochs that never traded, and on how many seeds the verdict (both tests)
    differs."""
    seeds = sorted(seed for (name, seed) in base if name == market and (name, seed) in other)
    if not seeds:
        return None
    a_cells, b_cells = [base[(market, seed)] for seed in seeds], [other[(market, seed)] for seed in seeds]
    if market_kind(market) == "noise":
        def verdicts(cells: Sequence[Mapping[str, Any]]) -> list[bool]:
            return [loss_within_costs(r) and turnover_falling(r) for r in cells]

        return {"market": market, "measure": "noise", "seeds": seeds,
                "base": {**noise_counts(a_cells), **flat_epochs(a_cells)}, "other": {**noise_counts(b_cells), **flat_epochs(b_cells)},
                "verdict_changed": sum(x != y for x, y in zip(verdicts(a_cells), verdicts(b_cells), strict=True))}  # fmt: skip
    key, _ = signal_measure([*a_cells, *b_cells])
    a = np.array([cell_fraction(r, key) for r in a_cells])
    b = np.array([cell_fraction(r, key) for r in b_cells])
    d = b - a
    n = len(d)
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    better, worse = int((d > 0).sum()), int((d < 0).sum())
    kept = [(x, y) for x, y in zip(map(curve_retention, a_cells), map(curve_retention, b_cells), strict=True)
            if x is not None and y is not None]  # fmt: skip
    retention = {"base": median_retention(a_cells), "other": median_retention(b_cells), "seeds": len(kept),
                 "better": sum(y > x for x, y in kept), "worse": sum(y < x for x, y in kept)}  # fmt: skip
    return {"market": market, "measure": key, "seeds": seeds, "retention": retention,
            "base": {"values": a.tolist(), "mean": float(a.mean()), "seeds_at_floor": int((a >= SEED_FLOOR).sum())},
            "other": {"values": b.tolist(), "mean": float(b.mean()), "seeds_at_floor": int((b >= SEED_FLOOR).sum())},
            "difference": {"mean": float(d.mean()), "sd": sd, "t": float(d.mean() / (sd / math.sqrt(n))) if sd > 0 else None,
                           "ci95": bootstrap_ci95(d), "better": better, "worse": worse,
                           "sign_test_p": sign_test_p(better, worse)}}  # fmt: skip


def seed_ranges(seeds: Sequence[int]) -> str:
    """Sorted seeds as runs: [15, 16, 17, 35, 36] → "15–17, 35–36"."""
    runs: list[list[int]] = []
    for seed in seeds:
        if runs and seed == runs[-1][1] + 1:
            runs[-1][1] = seed
        else:
            runs.append([seed, seed])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)


def print_comparison(comparisons: Sequence[Mapping[str, Any]], unpaired: int) -> None:
    print("\n| market | seeds | base: mean, ≥ 60 % | other: mean, ≥ 60 % | Δ mean (sd), points | 95 % CI of Δ | t | better / worse | sign test p |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in comparisons:
        seeds = f"{len(c['seeds'])} ({seed_ranges(c['seeds'])})"
        if c["measure"] == "noise":
            a, b = c["base"], c["other"]
            print(f"| noise | {seeds} | within costs {a['losses_within_costs']}, turnover falling {a['turnover_falling']}, "
                  f"flat epochs {a['flat_epochs']}/{a['epochs']} | within costs {b['losses_within_costs']}, "
                  f"turnover falling {b['turnover_falling']}, flat epochs {b['flat_epochs']}/{b['epochs']} | "
                  f"verdict changed on {c['verdict_changed']} | — | — | — | — |")  # fmt: skip
            continue
        a, b, d = c["base"], c["other"], c["difference"]
        n = len(c["seeds"])
        t = "—" if d["t"] is None else f"{d['t']:+.1f}"
        print(f"| {c['market']} | {seeds} | {a['mean']:.0%}, {a['seeds_at_floor']}/{n} | {b['mean']:.0%}, {b['seeds_at_floor']}/{n} | "
              f"{100 * d['mean']:+.0f} ({100 * d['sd']:.0f}) | {100 * d['ci95'][0]:+.0f} … {100 * d['ci95'][1]:+.0f} | {t} | "
              f"{d['better']} / {d['worse']} | {d['sign_test_p']:.2f} |")  # fmt: skip
    signal = [c for c in comparisons if c["measure"] != "noise"]
    if signal:
        print("\n| market | decay: base, median last ÷ best validation epoch | other | seeds with both: other kept more / less |")
        print("|---|---|---|---|")
        for c in signal:
            r = c["retention"]
            print(f"| {c['market']} | {_percent(r['base'])} | {_percent(r['other'])} | {r['seeds']}: {r['better']} / {r['worse']} |")
    measures = sorted({c["measure"] for c in signal})
    print(f"\nper seed: {' and '.join(measures) or 'no signal market'} (other − base); cells in only one arm, left out: {unpaired}")


def compare(base_dirs: str, other_dirs: str) -> int:
    """``--compare``: the paired table of two arms (nothing is trained)."""
    base = load_cells([d for d in base_dirs.split(",") if d])
    other = load_cells([d for d in other_dirs.split(",") if d])
    yardsticks = Counter(cell.get("yardstick", "plain") for cell in (*base.values(), *other.values()))
    if len(yardsticks) > 1:  # a ratio to a weaker oracle is not comparable with one to a stronger
        counts = ", ".join(f"{name} ({count} cells)" for name, count in sorted(yardsticks.items()))
        raise UserError("the cells were scored against different oracles and baselines", got=counts,
                        expected=f"every cell of both arms scored by one version of the suite (now {YARDSTICK!r})",
                        hint="re-run the older arm's cells with this suite (delete their directories), or compare arms of one version")  # fmt: skip
    names = sorted({name for name, _ in (*base, *other)}, key=lambda name: (list(MARKETS).index(market_kind(name)), name))
    comparisons = [c for name in names if (c := paired_comparison(base, other, name)) is not None]
    if not comparisons:
        raise UserError("the two arms share no cell", got=f"{len(base)} and {len(other)} cells",
                        expected="the same market and seed in both", hint="compare runs of the same --markets and seeds")  # fmt: skip
    paired = sum(len(c["seeds"]) for c in comparisons)
    print_comparison(comparisons, len(base) + len(other) - 2 * paired)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None, help="training config (default config/train/default.toml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one config value (repeatable), e.g. --set env.n_envs=256")  # fmt: skip
    parser.add_argument("--steps-multiplier", type=float, default=1.0, help="run.steps × this (4 for the 'longer never hurts' check)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    parser.add_argument("--jobs", type=int, default=1, help="cells trained in parallel processes")
    parser.add_argument("--markets", default=",".join(MARKETS),
                        help=f"comma-separated subset of {','.join(MARKETS)}, or variants kind:key=value:… (e.g. ar1:sigma=0.02)")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=5, help="how many seeds per market")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run from here")
    parser.add_argument("--bars", type=int, default=N_BARS, help="bars per market")
    parser.add_argument("--plots", action="store_true", help="let every run write its plots")
    parser.add_argument("--references-only", action="store_true",
                        help="score the oracle and the baselines on each cell's test bars; train nothing")  # fmt: skip
    parser.add_argument("--out", default="runs/learning_suite")
    parser.add_argument("--compare", nargs=2, metavar=("BASE", "OTHER"),
                        help="train nothing: compare two arms' finished cells seed by seed (each a suite --out "
                             "directory, or several joined by commas)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.compare:
        try:
            return compare(*args.compare)
        except UserError as error:
            parser.error(str(error))
    markets = [name.strip() for name in args.markets.split(",") if name.strip()]
    try:  # a bad market or variant fails here, before any run: build each once
        for name in markets:
            make_market(name, args.bars, args.first_seed)
    except UserError as error:
        parser.error(str(error))
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
