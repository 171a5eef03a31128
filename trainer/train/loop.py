"""A training run end to end: data → state → epochs of captured steps → validation → outputs.

Why epochs: everything that needs the host — reading the loss sums, HEALTH_DIAG, the validation
backtest, checkpoints, the CPU-born ISV inputs (epoch index) — happens at an epoch boundary, a
cold point with one synchronisation; between boundaries the device runs graph replays back to
back with nothing read back.

Outputs in the run directory: ``config.toml`` (resolved), ``health_diag.jsonl`` (one record per
epoch), ``checkpoints/`` (safetensors + manifest, newest ``run.keep_checkpoints`` kept),
``metrics.json`` (agent vs buy-and-hold vs flat on the validation window) and ``plots/``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.config import TrainConfig
from trainer.errors import UserError
from trainer.eval.backtest import EquityCurve, backtest_report
from trainer.eval.bands import TerminationReason, band_watcher
from trainer.eval.health_diag import (
    HEALTH_DIAG_FILENAME,
    HealthDiagRecord,
    HealthDiagWriter,
    read_health_diag,
)
from trainer.eval.metrics import periods_per_year_from_timestamps
from trainer.files import write_text_atomic
from trainer.layout import (
    BRANCH_CHOICES,
    BRANCH_SIZES,
    BRANCHES,
    METRIC_C51,
    METRIC_CQL,
    METRIC_GRAD_NORM,
    METRIC_IQN,
    METRIC_TOTAL,
    METRIC_UPDATES,
)
from trainer.monitors import adaptive_monitors
from trainer.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trainer.train.grad_diag import epoch_grad_norms
from trainer.train.graph import StepRunner, pin_cublas_workspace
from trainer.train.step import MarketWindow, TrainerState, TrainStep
from trainer.train.validate import validation_curves

CONFIG_FILENAME = "config.toml"
METRICS_FILENAME = "metrics.json"
CHECKPOINT_DIRNAME = "checkpoints"
PLOTS_DIRNAME = "plots"
PROGRESS_CHUNK = 25  # steps between progress-bar refreshes (host-side only; nothing is read back)


@dataclass(frozen=True)
class PreparedMarket:
    """The bars of a run split into a training and a validation window (global bar indices)."""

    close: torch.Tensor  # [T] f32
    spread: torch.Tensor  # [T] f32
    features: torch.Tensor  # [T, F] f32
    train: slice
    val: slice
    periods_per_year: float
    source: str

    def training_window(self) -> MarketWindow:
        return MarketWindow(
            close=self.close[self.train], spread=self.spread[self.train], features=self.features, offset=self.train.start
        )


def resolve_device(requested: str) -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise UserError(
            "CUDA device requested but not available", got="--device cuda", expected="a CUDA GPU visible to torch",
            hint="use --device cpu, or install a CUDA build of torch",
        )
    return torch.device(requested)


def prepare_market(config: TrainConfig) -> PreparedMarket:
    """Load bars and features (through the feature cache) and split train | embargo | validation."""
    from trainer.data.cache import prepare
    from trainer.data.folds import walk_forward_folds

    prepared = prepare(config.data.path or "default")
    bars, feature_set = prepared.bars, prepared.features
    first = max(feature_set.valid_from, config.model.window - 1)
    usable = len(bars) - first
    val_bars = int(usable * config.data.validation_fraction)
    min_train = config.env.episode_length + config.loss.n_step + 2
    fold = walk_forward_folds(
        usable, 1, val_bars=max(val_bars, 2), embargo=config.data.embargo_bars, min_train_bars=min_train
    )[0]
    train = slice(first + fold.train.start, first + fold.train.stop)
    val = slice(first + fold.val.start, first + fold.val.stop)
    if bars.book is not None:
        spread = np.nan_to_num(bars.book.ask_px[:, 0] - bars.book.bid_px[:, 0], nan=0.0).clip(min=0.0)
    else:
        spread = np.zeros(len(bars))
    periods = config.data.periods_per_year or periods_per_year_from_timestamps(bars.timestamps)
    if not math.isfinite(periods) or periods <= 0:
        periods = 252.0
    return PreparedMarket(
        close=torch.tensor(bars.close, dtype=torch.float32),
        spread=torch.tensor(spread, dtype=torch.float32),
        features=torch.from_numpy(np.ascontiguousarray(feature_set.values, dtype=np.float32)),
        train=train,
        val=val,
        periods_per_year=float(periods),
        source=bars.source,
    )


def epoch_summary(step: TrainStep) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(losses, grad_norms, actions) of the epoch: one host read each of the metric sums, the action
    counts and the per-component gradient-norm matrix (``trainer.train.grad_diag``)."""
    state = step.state
    sums = state.metrics.detach().cpu().tolist()  # [METRIC_STRIDE], the METRICS layout
    updates = max(sums[METRIC_UPDATES], 1.0)
    losses = {
        "c51": {slot.name.lower(): sums[METRIC_C51 + branch] / updates for branch, slot in enumerate(BRANCHES.slots)},
        "iqn": sums[METRIC_IQN] / updates,
        "cql": sums[METRIC_CQL] / updates,
        "total": sums[METRIC_TOTAL] / updates,
    }
    grad_norms = epoch_grad_norms(step, sums[METRIC_GRAD_NORM] / updates)
    counts = state.action_counts.detach().cpu().tolist()
    actions: dict[str, dict[str, float]] = {}
    offset = 0
    for branch_slot, choices, size in zip(BRANCHES.slots, BRANCH_CHOICES, BRANCH_SIZES, strict=True):
        branch_counts = counts[offset : offset + size]
        total = max(sum(branch_counts), 1.0)
        actions[branch_slot.name.lower()] = {
            choice.name.lower(): value / total for choice, value in zip(choices.slots, branch_counts, strict=True)
        }
        offset += size
    return losses, grad_norms, actions


ProgressCallback = Callable[[int, int, dict[str, Any] | None], None]


def train(
    config: TrainConfig,
    out_dir: str | Path,
    *,
    resume: bool = False,
    progress: ProgressCallback | None = None,
    stop_after_epochs: int | None = None,
    make_plots: bool = True,
) -> dict[str, Any]:
    """Run (or resume) training; returns the final metrics.json content.

    ``stop_after_epochs`` ends the run early after that many epochs of *this call* (an
    interruption, as when a job is killed after a checkpoint); ``resume=True`` continues from the
    newest checkpoint in ``out_dir``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.run.device)
    if device.type == "cpu":
        torch.set_num_threads(max(1, config.run.cpu_threads))
    else:
        pin_cublas_workspace()  # before the first GEMM: a resumed process must pick the same algorithms
    market = prepare_market(config)
    state = TrainerState(config, market.training_window(), device)
    step = TrainStep(state)
    checkpoints = out / CHECKPOINT_DIRNAME
    if resume:
        load_checkpoint(state, latest_checkpoint(checkpoints))
    write_text_atomic(out / CONFIG_FILENAME, config.to_toml())
    writer = HealthDiagWriter(out / HEALTH_DIAG_FILENAME)
    runner = StepRunner(step, use_graph=config.run.cuda_graph)
    termination: TerminationReason | None = None

    total_steps = config.run.steps
    # Epoch e covers steps [e·epoch_steps, (e+1)·epoch_steps) capped at run.steps; a resumed run
    # whose last epoch was cut short by an earlier, smaller --steps continues with the next index.
    remaining_epochs = math.ceil(max(total_steps - state.steps_done, 0) / config.run.epoch_steps)
    total_epochs = max(1, math.ceil(total_steps / config.run.epoch_steps), state.epoch + remaining_epochs)
    state.isv.write_input("TOTAL_EPOCHS", float(total_epochs))
    monitors = adaptive_monitors(state.isv)  # read-only observers of the GPU-computed ISV values
    finished = [record for record in read_health_diag(out) if record.epoch < state.epoch] if resume else []
    if resume:  # continue their fire statistics from the finished epochs' HEALTH_DIAG records
        monitors.restore([record.monitors for record in finished])
    watcher = band_watcher(config, finished)  # the regression hard-stop (run.bands), its streaks resumed; None when off
    collects_before_learning = (config.loss.n_step - 1) + math.ceil(config.replay.learning_starts / config.env.n_envs)
    while state.collect_steps < collects_before_learning:
        step.collect()

    started = time.perf_counter()
    report: dict[str, Any] = {}
    curves: dict[str, EquityCurve] = {}
    epochs_this_call = 0
    while state.steps_done < total_steps:
        state.adaptive.begin_epoch(state.epoch, total_epochs, state.env.ps)  # epoch index; τ, γ, ε, Kelly cap on the device
        epoch_end = min(total_steps, state.steps_done + config.run.epoch_steps - state.steps_done % config.run.epoch_steps)
        while state.steps_done < epoch_end:
            chunk = min(PROGRESS_CHUNK, epoch_end - state.steps_done)
            runner.run(chunk)
            if progress is not None:
                progress(state.steps_done, total_steps, None)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        monitors.observe_all()
        losses, grad_norms, actions = epoch_summary(step)
        report, curves = validation_report(state, step, market)
        record = HealthDiagRecord(
            epoch=state.epoch,
            fold=None,
            step=state.steps_done,
            wall_time_s=time.perf_counter() - started,
            losses=losses,
            grad_norms=grad_norms,
            isv=state.isv.snapshot(synchronize=True),
            monitors=monitors.diagnose_all(),
            actions=actions,
            validation=report,
        )
        termination = watcher.observe(record) if watcher is not None else None
        record.termination = termination.to_dict() if termination is not None else None
        writer.write(record)
        if progress is not None:
            progress(state.steps_done, total_steps, {"losses": losses, "validation": report})
        state.metrics.zero_()
        state.action_counts.zero_()
        state.epoch += 1
        save_checkpoint(state, checkpoints, extra={"runner_mode": runner.mode}, keep=config.run.keep_checkpoints)
        epochs_this_call += 1
        if termination is not None or (stop_after_epochs is not None and epochs_this_call >= stop_after_epochs):
            break

    if not report:
        report, curves = validation_report(state, step, market)
    if termination is not None:  # the checkpoint above holds the state it stopped in
        report = {**report, "termination": termination.to_dict()}
    write_text_atomic(out / METRICS_FILENAME, json.dumps(report, indent=2, allow_nan=False) + "\n")
    if make_plots:
        from trainer.eval.plots import write_run_plots

        write_run_plots(out, curves)
    return report


def validation_report(
    state: TrainerState, step: TrainStep, market: PreparedMarket
) -> tuple[dict[str, Any], dict[str, EquityCurve]]:
    """Greedy backtest of the current network on the validation window, with the baselines."""
    curves = validation_curves(state, step, market.close[market.val], market.spread[market.val], market.val.start)
    report = backtest_report(curves["agent"], curves["buy_and_hold"], curves["flat"], market.periods_per_year)
    return report, curves
