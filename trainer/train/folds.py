"""Walk-forward training: fold by fold over ``walk_forward_folds``, validated out of sample per fold.

Why folds: one train/validation split can flatter an agent by luck of the window. Walk-forward
folds validate on consecutive, later windows, each trained only on bars before its validation
window (minus an embargo). The agent carries over from fold to fold what it is meant to learn
(network, target, optimizer, RNG counter: the registry's TrainingPersist entries) and nothing
else: each fold gets fresh buffers for its own market, and ``StateResetRegistry.start_fold``
resets every FoldReset / WindowReset entry and writes the SoftReset bootstraps, so statistics of
fold N (replay, Kelly record, DSR EMAs, learning health, atom support) cannot steer fold N+1.

Outputs in the run directory: ``health_diag.jsonl`` (every epoch of every fold, ``fold`` set),
``folds.json`` (per-fold out-of-sample metrics of the agent, buy-and-hold and flat, the reset
actions taken at each boundary, and their mean and std across folds), ``config.toml``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.config import TrainConfig
from trainer.data.folds import Fold, walk_forward_folds
from trainer.errors import UserError
from trainer.eval.backtest import EquityCurve, backtest_report
from trainer.eval.health_diag import (
    HEALTH_DIAG_FILENAME,
    HealthDiagRecord,
    HealthDiagWriter,
)
from trainer.files import write_text_atomic
from trainer.monitors import MonitorSet, adaptive_monitors
from trainer.ops.adaptive_machinery import AdaptiveMachinery, AdaptiveParams
from trainer.registry import StateResetRegistry, build_trainer_registry
from trainer.train.graph import StepRunner
from trainer.train.loop import (
    CONFIG_FILENAME,
    PreparedMarket,
    epoch_summary,
    prepare_market,
    resolve_device,
)
from trainer.train.step import MarketWindow, TrainerState, TrainStep
from trainer.train.validate import baseline_curves, greedy_rollout

FOLDS_FILENAME = "folds.json"
PROGRESS_CHUNK = 25
STRATEGIES = ("agent", "buy_and_hold", "flat")


@dataclass
class FoldRun:
    """Everything one fold trains with (exposed so tests can inspect a fold's state)."""

    fold: Fold
    state: TrainerState
    step: TrainStep
    machinery: AdaptiveMachinery
    registry: StateResetRegistry
    monitors: MonitorSet
    boundary: dict[str, str]


def fold_windows(market: PreparedMarket, config: TrainConfig, n_folds: int, train_frac: float = 0.5) -> list[Fold]:
    """Walk-forward folds over the usable bars, in global bar indices (features defined throughout)."""
    first = market.train.start  # first bar with every feature defined and a full history window
    usable = int(market.close.shape[0]) - first
    local = walk_forward_folds(
        usable, n_folds, train_frac=train_frac, embargo=config.data.embargo_bars,
        min_train_bars=config.env.episode_length + config.loss.n_step + 2,
    )  # fmt: skip
    return [
        Fold(f.index, slice(first + f.train.start, first + f.train.stop), slice(first + f.val.start, first + f.val.stop), f.embargo)
        for f in local
    ]


def machinery_of(state: TrainerState, config: TrainConfig) -> AdaptiveMachinery:
    """The state's own adaptive machinery when the step owns one, else a fresh one on its ISV."""
    owned = getattr(state, "adaptive", None)
    if isinstance(owned, AdaptiveMachinery):
        return owned
    return AdaptiveMachinery(state.isv, config.env.n_envs, AdaptiveParams.from_config(config))


def start_fold(
    config: TrainConfig, market: PreparedMarket, fold: Fold, device: torch.device, previous: TrainerState | None
) -> FoldRun:
    """Fresh buffers for the fold's market, then the registry's fold boundary (carry + resets)."""
    window = MarketWindow(
        close=market.close[fold.train], spread=market.spread[fold.train], features=market.features, offset=fold.train.start
    )
    state = TrainerState(config, window, device)
    step = TrainStep(state)
    machinery = machinery_of(state, config)
    registry = build_trainer_registry(state, machinery)
    boundary = registry.start_fold(previous)
    return FoldRun(fold, state, step, machinery, registry, adaptive_monitors(state.isv), boundary)


def fold_validation(run: FoldRun, market: PreparedMarket) -> tuple[dict[str, Any], dict[str, EquityCurve]]:
    """Greedy out-of-sample backtest on the fold's validation window, with the baselines."""
    val = run.fold.val
    close, spread = market.close[val], market.spread[val]
    agent = greedy_rollout(run.state, run.step, close, spread, val.start)
    env = run.state.config.env
    hold, flat = baseline_curves(close, fee_rate=env.fee_rate, slippage=env.slippage, init_cash=env.init_cash)
    return backtest_report(agent, hold, flat, market.periods_per_year), {"agent": agent, "buy_and_hold": hold, "flat": flat}


def train_fold(
    run: FoldRun,
    market: PreparedMarket,
    writer: HealthDiagWriter,
    *,
    started: float,
    progress_offset: int = 0,
    progress_total: int = 0,
    progress=None,
) -> dict[str, Any]:
    """Train one fold for ``run.steps`` steps in epochs; HEALTH_DIAG per epoch; returns its OOS report."""
    state, step, config = run.state, run.step, run.state.config
    runner = StepRunner(step, use_graph=config.run.cuda_graph)
    collects_before_learning = (config.loss.n_step - 1) + math.ceil(config.replay.learning_starts / config.env.n_envs)
    while state.collect_steps < collects_before_learning:
        step.collect()
    total_steps = config.run.steps
    epochs = max(1, math.ceil(total_steps / config.run.epoch_steps))
    report: dict[str, Any] = {}
    done = 0
    for epoch in range(epochs):
        run.machinery.begin_epoch(epoch, epochs, state.env.ps)  # τ, γ, ε, progress, Kelly cap on the device
        epoch_end = min(total_steps, (epoch + 1) * config.run.epoch_steps)
        while done < epoch_end:
            chunk = min(PROGRESS_CHUNK, epoch_end - done)
            runner.run(chunk)
            done += chunk
            if progress is not None:
                progress(progress_offset + done, progress_total, None)
        if state.device.type == "cuda":
            torch.cuda.synchronize(state.device)
        run.monitors.observe_all()
        losses, grad_norms, actions = epoch_summary(step)
        report, _ = fold_validation(run, market)
        writer.write(
            HealthDiagRecord(
                epoch=state.epoch, fold=run.fold.index, step=state.steps_done, wall_time_s=time.perf_counter() - started,
                losses=losses, grad_norms=grad_norms, isv=state.isv.snapshot(synchronize=True),
                monitors=run.monitors.diagnose_all(), actions=actions, validation=report,
            )
        )  # fmt: skip
        if progress is not None:
            progress(progress_offset + done, progress_total, {"losses": losses, "validation": report})
        run.registry.reset_window()  # the epoch's accumulators start from zero
        state.epoch += 1
    return report


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def summarise(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and std across folds of every numeric metric, per strategy (undefined values, e.g. the
    Sharpe ratio of a strategy that never trades, are left out of the statistics; all undefined →
    None)."""
    summary: dict[str, Any] = {}
    for strategy in STRATEGIES:
        keys: list[str] = []
        for report in reports:
            for key, value in report.get(strategy, {}).items():
                if key not in keys and (value is None or _number(value) is not None):
                    keys.append(key)
        block: dict[str, Any] = {}
        for key in keys:
            values = [_number(report.get(strategy, {}).get(key)) for report in reports]
            finite = [value for value in values if value is not None]
            block[key] = float(np.mean(finite)) if finite else None
            block[f"{key}_std"] = float(np.std(finite, ddof=1)) if len(finite) > 1 else None
        summary[strategy] = block
    return summary


def train_folds(
    config: TrainConfig,
    out_dir: str | Path,
    *,
    n_folds: int,
    resume: bool = False,
    progress=None,
    train_frac: float = 0.5,
) -> dict[str, Any]:
    """Train fold by fold; returns the across-fold mean report (``{"agent": ..., "buy_and_hold": ...,
    "flat": ...}``, each metric with a ``_std`` twin) and writes ``folds.json``."""
    if resume:
        raise UserError(
            "walk-forward training cannot resume", got="--resume with --folds", expected="one of them",
            hint="rerun the folds from the start (each fold is short), or resume a single-window run",
        )  # fmt: skip
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.run.device)
    if device.type == "cpu":
        torch.set_num_threads(max(1, config.run.cpu_threads))
    market = prepare_market(config)
    folds = fold_windows(market, config, n_folds, train_frac)
    write_text_atomic(out / CONFIG_FILENAME, config.to_toml())
    writer = HealthDiagWriter(out / HEALTH_DIAG_FILENAME)
    started = time.perf_counter()
    previous: TrainerState | None = None
    per_fold: list[dict[str, Any]] = []
    reports: list[dict[str, Any]] = []
    for fold in folds:
        run = start_fold(config, market, fold, device, previous)
        report = train_fold(
            run, market, writer, started=started, progress_offset=fold.index * config.run.steps,
            progress_total=len(folds) * config.run.steps, progress=progress,
        )  # fmt: skip
        reports.append(report)
        per_fold.append({
            "fold": fold.index,
            "train": [fold.train.start, fold.train.stop],
            "val": [fold.val.start, fold.val.stop],
            "steps": run.state.steps_done,
            "boundary": run.boundary,
            "metrics": report,
        })  # fmt: skip
        previous = run.state
    summary = summarise(reports)
    payload = {"n_folds": len(folds), "source": market.source, "folds": per_fold, "mean": summary}
    write_text_atomic(out / FOLDS_FILENAME, json.dumps(payload, indent=2, allow_nan=False) + "\n")
    return summary
