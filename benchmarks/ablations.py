"""Ablations of the learner, one change at a time: named variants × markets × seeds, in parallel.

Each run is one ``benchmarks/learning_proof.py`` run (the real trainer: features, environment,
captured step, adaptive kernels, fold machinery; greedy backtest on the held-out 30 %) with one
change against the current defaults. The table reports, per variant and market, the agent's
fraction of the oracle's Sharpe (signal markets) or its Sharpe and return (noise), and what the
adaptive machinery did: the final Kelly cap, the direction branch's atom half-width, the smallest
monitor fire rate (and which adaptive values never moved), the IQN / C51 gradient ratio into the
trunk, and the largest greedy share of one sub-action in the magnitude, order-type and urgency
branches on the validation rollout.

    python benchmarks/ablations.py --list
    python benchmarks/ablations.py --ablations current,iqn_off --seeds 3 --jobs 2
    python benchmarks/ablations.py --seeds 5 --jobs 16 --steps 2400 --json runs/ablations.jsonl

``--steps`` lengthens every run (epochs of ``steps / 3``) for the "longer training never hurts"
question; the default is the test size of ``learning_proof.py`` (600 steps, ≈ 25 s on one core).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCHMARKS = Path(__file__).resolve().parent
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from learning_proof import CPU_SIZE, run_proof  # noqa: E402  (benchmarks/ is not a package)

from trainer.data.synthetic import make_noise_market, make_signal_market  # noqa: E402
from trainer.eval.health_diag import read_health_diag  # noqa: E402
from trainer.train.loop import SplitRun  # noqa: E402

MARKETS = {"signal": make_signal_market, "noise": make_noise_market}
EXECUTION_BRANCHES = ("magnitude", "order_type", "urgency")


def _adaptive(**groups: dict[str, Any]) -> Callable[[SplitRun], None]:
    """An ``adjust`` hook that replaces fields of the fold's adaptive-kernel parameters."""

    def adjust(run: SplitRun) -> None:
        params = run.state.adaptive.params
        changed = {name: dataclasses.replace(getattr(params, name), **values) for name, values in groups.items()}
        run.state.adaptive.params = dataclasses.replace(params, **changed)

    return adjust


@dataclass(frozen=True)
class Ablation:
    """One change against the current defaults: config overrides and/or adaptive parameters."""

    name: str
    doc: str
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    adaptive: dict[str, dict[str, Any]] = field(default_factory=dict)

    def adjust(self) -> Callable[[SplitRun], None] | None:
        return _adaptive(**self.adaptive) if self.adaptive else None


ABLATIONS = {
    ablation.name: ablation
    for ablation in (
        Ablation("current", "the defaults as they are"),
        Ablation("kelly_pinned_floor", "Kelly cap pinned at its 0.1 floor (cap_max = 0.1)",
                 adaptive={"kelly": {"cap_max": 0.1}}),
        Ablation("kelly_point_estimate", "Kelly edge without the confidence bound (confidence_z = 0)",
                 adaptive={"kelly": {"confidence_z": 0.0}}),
        Ablation("atoms_frozen", "atom support frozen at the config bounds (EMA horizon 10⁹ updates)",
                 adaptive={"atoms": {"decay_bars": 10**9}}),
        Ablation("iqn_off", "no IQN term (loss.iqn_weight = 0)", overrides={"loss": {"iqn_weight": 0.0}}),
        Ablation("iqn_weight_1", "IQN term at weight 1 (the default config's)", overrides={"loss": {"iqn_weight": 1.0}}),
        Ablation("iqn_raw_scale", "IQN quantile loss on the raw return scale (not per unit of half-width)",
                 overrides={"loss": {"iqn_normalise": False}}),
        Ablation("time_limit_terminal", "episode time limits treated as terminals (no bootstrap through them)",
                 overrides={"env": {"time_limit_terminal": True}}),
        Ablation("episodes_128", "128-bar training episodes (at the test size 1,024-bar episodes never end)",
                 overrides={"env": {"episode_length": 128}}),
        Ablation("episodes_128_terminal", "128-bar episodes with their time limits treated as terminals",
                 overrides={"env": {"episode_length": 128, "time_limit_terminal": True}}),
        Ablation("gamma_0.9", "γ = 0.9 (a ten-bar horizon)", overrides={"loss": {"gamma": 0.9}}),
        Ablation("gamma_0.99", "γ = 0.99 (the default's horizon; the support wants more than ±10)",
                 overrides={"loss": {"gamma": 0.99}}),
        Ablation("gamma_0.99_v25", "γ = 0.99 with the support bounds at ±25 (room for the DSR returns)",
                 overrides={"loss": {"gamma": 0.99, "v_min": -25.0, "v_max": 25.0}}),
        Ablation("reward_scale_0.25", "rewards × 0.25 before the targets", overrides={"loss": {"reward_scale": 0.25}}),
    )
}


def _max_share(shares: dict[str, float]) -> float | None:
    return max(shares.values()) if shares else None


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one run that the table shows (from its result and its HEALTH_DIAG)."""
    records = read_health_diag(Path(result["health_diag"]))
    last = records[-1]
    fire_rates = {name: snapshot.get("fire_rate") for name, snapshot in last.monitors.items()}
    never = sorted(name for name, rate in fire_rates.items() if rate is not None and rate <= 0.0)
    grad = last.grad_norms
    c51_trunk = [groups.get("trunk", 0.0) for groups in grad.get("c51", {}).values()]
    iqn_trunk = grad.get("iqn", {}).get("trunk", 0.0)
    c51_mean = statistics.fmean(c51_trunk) if c51_trunk else 0.0
    iqn_losses = [record.losses.get("iqn") for record in records]
    actions = result.get("validation_actions", {})
    return {
        "fraction_of_oracle": result["fraction_of_oracle"],
        "agent_sharpe": result["agent_sharpe"],
        "agent_return": result["agent_total_return"],
        "final_turnover": (result["agent_turnover_by_epoch"] or [None])[-1],
        "kelly_cap": last.isv.get("KELLY_CAP"),
        "half_width_direction": last.isv.get("ATOM_HALF_WIDTH[0]"),
        "centre_direction": last.isv.get("ATOM_CENTRE[0]"),
        "min_fire_rate": min((rate for rate in fire_rates.values() if rate is not None), default=None),
        "never_fired": never,
        "iqn_over_c51_trunk": iqn_trunk / c51_mean if c51_mean > 0 else None,
        "iqn_loss_by_epoch": iqn_losses,
        "max_execution_share": max((_max_share(actions.get(branch, {})) or 0.0) for branch in EXECUTION_BRANCHES),
        "train_seconds": result["train_seconds"],
    }


def run_one(task: tuple[str, str, int, int, str]) -> dict[str, Any]:
    """One ablation × market × seed (a worker process: one torch thread)."""
    name, market_name, seed, steps, out = task
    ablation = ABLATIONS[name]
    size = CPU_SIZE if steps <= 0 else dataclasses.replace(CPU_SIZE, steps=steps, epoch_steps=max(steps // 3, 1))
    market = MARKETS[market_name](size.n_bars, seed=seed)
    result = run_proof(market, size, Path(out) / name / f"{market_name}-seed{seed}", seed=seed,
                       overrides=ablation.overrides or None, adjust=ablation.adjust())  # fmt: skip
    return {"ablation": name, "market": market_name, "seed": seed, "steps": result["steps"], **summarise(result)}


def _spread(values: list[float]) -> str:
    if not values:
        return "—"
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.2f} ± {std:.2f}"


def _fmt(value: Any, pattern: str = "{:.2f}") -> str:
    return "—" if value is None else pattern.format(value)


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per run, then the per-variant means ± std over seeds."""
    lines = [
        "| ablation | market | seed | agent/oracle | agent Sharpe | return | turnover | Kelly cap | half-width[dir] "
        "| min fire rate | never fired | IQN/C51 trunk | max exec share |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=lambda r: (r["ablation"], r["market"], r["seed"])):
        lines.append(
            f"| {row['ablation']} | {row['market']} | {row['seed']} | {_fmt(row['fraction_of_oracle'], '{:.0%}')} "
            f"| {row['agent_sharpe']:.2f} | {row['agent_return']:+.2%} | {_fmt(row['final_turnover'], '{:.4f}')} "
            f"| {_fmt(row['kelly_cap'], '{:.3f}')} | {_fmt(row['half_width_direction'])} "
            f"| {_fmt(row['min_fire_rate'])} | {', '.join(row['never_fired']) or '—'} "
            f"| {_fmt(row['iqn_over_c51_trunk'], '{:.1f}')} | {_fmt(row['max_execution_share'], '{:.0%}')} |"
        )
    lines += ["", "| ablation | market | seeds | agent/oracle (mean ± std) | agent Sharpe (mean ± std) | ≥ 70 % |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["ablation"], row["market"]), []).append(row)
    for (name, market), group in sorted(groups.items()):
        fractions = [r["fraction_of_oracle"] for r in group if r["fraction_of_oracle"] is not None]
        passing = f"{sum(f >= 0.7 for f in fractions)}/{len(fractions)}" if fractions else "—"
        lines.append(
            f"| {name} | {market} | {len(group)} | {_spread(fractions)} "
            f"| {_spread([r['agent_sharpe'] for r in group])} | {passing} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ablations", default=",".join(ABLATIONS), help="comma-separated names (--list shows them)")
    parser.add_argument("--markets", default=",".join(MARKETS), help="comma-separated: signal, noise")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per ablation and market")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=0, help="training steps per run (0 = the test size, 600)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel worker processes (one torch thread each)")
    parser.add_argument("--out", default="runs/ablations")
    parser.add_argument("--json", default="", help="also append every run's numbers to this JSON-lines file")
    parser.add_argument("--list", action="store_true", help="print the ablations and exit")
    args = parser.parse_args(argv)
    if args.list:
        for ablation in ABLATIONS.values():
            print(f"{ablation.name:24s} {ablation.doc}")
        return 0
    names = [name for name in args.ablations.split(",") if name]
    markets = [name for name in args.markets.split(",") if name]
    unknown = [name for name in names if name not in ABLATIONS] + [name for name in markets if name not in MARKETS]
    if unknown:
        print(f"unknown ablation or market ({', '.join(unknown)} vs {', '.join([*ABLATIONS, *MARKETS])}) — hint: "
              f"see --list", file=sys.stderr)  # fmt: skip
        return 2
    tasks = [(name, market, seed, args.steps, args.out) for name in names for market in markets
             for seed in range(args.first_seed, args.first_seed + args.seeds)]  # fmt: skip
    rows = []
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for row in pool.map(run_one, tasks):
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                with open(args.json, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
