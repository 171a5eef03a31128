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
import sys
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
from trainer.eval.bands import BandChoice, BandScope, band_watcher, choose_bands
from trainer.eval.health_diag import (
    HEALTH_DIAG_FILENAME,
    HealthDiagRecord,
    HealthDiagWriter,
    iter_health_diag,
)
from trainer.eval.metrics import periods_per_year_from_timestamps
from trainer.eval.tensorboard import TensorBoardMirror
from trainer.files import write_text_atomic
from trainer.layout import (
    BRANCH_CHOICES,
    BRANCH_SIZES,
    BRANCHES,
    METRIC_C51,
    METRIC_CQL,
    METRIC_GRAD_NORM,
    METRIC_IQN,
    METRIC_RETURN,
    METRIC_STRIDE,
    METRIC_TOTAL,
    METRIC_UPDATES,
)
from trainer.monitors import adaptive_monitors
from trainer.registry import StateResetRegistry, build_trainer_registry
from trainer.train.checkpoint import (
    CHECKPOINT_PREFIX,
    MANIFEST_SUFFIX,
    CheckpointWriter,
    latest_checkpoint,
    load_checkpoint,
)
from trainer.train.grad_diag import component_grad_norms, grad_norm_section, optional_components
from trainer.train.graph import StepRunner, pin_cublas_workspace
from trainer.train.host import prepare_cpu_process
from trainer.train.selection import ModelSelection
from trainer.train.splits import Split, fold_splits, single_split
from trainer.train.step import N_SUB_ACTIONS, MarketWindow, TrainerState, TrainStep
from trainer.train.stop import RunControl
from trainer.train.validate import GreedyRollouts

CONFIG_FILENAME = "config.toml"
METRICS_FILENAME = "metrics.json"
CHECKPOINT_DIRNAME = "checkpoints"
PLOTS_DIRNAME = "plots"
PROGRESS_CHUNK = 25  # steps between progress-bar refreshes (host-side only; nothing is read back)


@dataclass(frozen=True)
class PreparedMarket:
    """The bars of a run with their features (global bar indices throughout)."""

    close: torch.Tensor  # [T] f32
    spread: torch.Tensor  # [T] f32
    features: torch.Tensor  # [T, F] f32
    first: int  # first bar with every feature defined and a full history window
    periods_per_year: float
    source: str
    timestamps: np.ndarray | None = None  # [T] int64 ns, bar starts (dates on the plots' time axes)
    source_sha256: str = ""  # content hash of the data file (what metric bands are scoped to)

    @property
    def n_bars(self) -> int:
        return int(self.close.shape[0])

    def window(self, bars: slice) -> MarketWindow:
        """The environments' market: the bars of one window, with the whole feature history."""
        return MarketWindow(close=self.close[bars], spread=self.spread[bars], features=self.features, offset=bars.start)


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
    """Load bars and features (through the feature cache)."""
    from trainer.data.cache import prepare

    prepared = prepare(config.data.path or "default")
    bars, feature_set = prepared.bars, prepared.features
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
        first=max(feature_set.valid_from, config.model.window - 1),
        periods_per_year=float(periods),
        source=bars.source,
        timestamps=np.asarray(bars.timestamps, dtype=np.int64),
        source_sha256=prepared.source_sha256,
    )


def run_splits(config: TrainConfig, market: PreparedMarket) -> list[Split]:
    """The run's windows: one train | validation | test split, or the walk-forward folds it trains."""
    data = config.data
    min_train = config.env.episode_length + config.loss.n_step + 2
    if data.folds == 0:
        return [
            single_split(
                market.n_bars, market.first, validation_fraction=data.validation_fraction,
                test_fraction=data.test_fraction, embargo=data.embargo_bars, min_train_bars=min_train,
            )
        ]  # fmt: skip
    splits = fold_splits(
        market.n_bars, market.first, data.folds, train_fraction=data.fold_train_fraction, embargo=data.embargo_bars,
        min_train_bars=min_train,
    )  # fmt: skip
    return splits if data.fold < 0 else [splits[data.fold]]


def config_text(config: TrainConfig, splits: list[Split]) -> str:
    """config.toml of a run: the resolved configuration, then the windows it trains and tests on."""
    lines = [config.to_toml().rstrip(), "", "# Windows of this run (global bar indices [start, stop), embargo between each):"]
    for split in splits:
        sizes = split.to_dict()["bars"]
        lines.append(
            f"# fold {split.index}: train {split.train.start}:{split.train.stop} ({sizes['train']} bars) | "
            f"validation {split.validation.start}:{split.validation.stop} ({sizes['validation']}) | "
            f"test {split.test.start}:{split.test.stop} ({sizes['test']}), embargo {split.embargo}"
        )
    return "\n".join(lines) + "\n"


def epoch_summary(step: TrainStep) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(losses, grad_norms, actions) of the epoch, from one host read: the metric sums, the action
    counts and the per-component gradient-norm matrix (``trainer.train.grad_diag``) are computed on
    the device and packed into one tensor first, so the boundary waits for the device once."""
    state = step.state
    norms = component_grad_norms(step)  # [C, G], on the device
    packed = torch.cat((state.metrics.detach(), state.action_counts.detach(), norms.detach().reshape(-1)))
    values = packed.to("cpu", torch.float64).tolist()  # the epoch's one transfer (f32 → f64 is exact)
    sums = values[:METRIC_STRIDE]  # the METRICS layout
    counts = values[METRIC_STRIDE : METRIC_STRIDE + N_SUB_ACTIONS]
    flat_norms = values[METRIC_STRIDE + N_SUB_ACTIONS :]
    groups = norms.shape[1]
    rows = [flat_norms[row * groups : (row + 1) * groups] for row in range(norms.shape[0])]
    updates = max(sums[METRIC_UPDATES], 1.0)
    losses = {
        "c51": {slot.name.lower(): sums[METRIC_C51 + branch] / updates for branch, slot in enumerate(BRANCHES.slots)},
        "iqn": sums[METRIC_IQN] / updates,
        "cql": sums[METRIC_CQL] / updates,
        "return": sums[METRIC_RETURN] / updates,
        "total": sums[METRIC_TOTAL] / updates,
    }
    grad_norms = grad_norm_section(sums[METRIC_GRAD_NORM] / updates, rows, optional_components(step))
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
STRATEGIES = ("agent", "buy_and_hold", "flat")
BEST_CHECKPOINT = "best"  # checkpoints/best.{safetensors,json}: the selected epoch
SELECTED_TENSORS = ("online.", "target.", "isv")  # what the test backtest of the selected epoch needs


@dataclass
class SplitRun:
    """Everything one split trains with (exposed so tests can inspect a run's state)."""

    split: Split
    state: TrainerState
    step: TrainStep
    registry: StateResetRegistry
    boundary: dict[str, str]
    rollouts: GreedyRollouts  # the epoch boundaries' greedy rollouts (captured once per shape on CUDA)


def start_split(config: TrainConfig, market: PreparedMarket, split: Split, device: torch.device,
                previous: TrainerState | None) -> SplitRun:  # fmt: skip
    """Fresh buffers for the split's training window, then the registry's fold boundary: carry the
    learned state from ``previous`` (a walk-forward run's earlier fold) and reset everything else."""
    state = TrainerState(config, market.window(split.train), device)
    step = TrainStep(state)
    registry = build_trainer_registry(state, state.adaptive)
    boundary = registry.start_fold(previous)
    return SplitRun(split, state, step, registry, boundary, GreedyRollouts(state, step))


def evaluate(
    run: SplitRun, market: PreparedMarket, windows: list[slice]
) -> list[tuple[dict[str, Any], dict[str, EquityCurve]]]:
    """Greedy backtests of the current network on each window (one batched rollout where the windows
    are equally long), each with buy-and-hold and flat on the same bars."""
    curves = run.rollouts.validation_curves(market.close, market.spread, windows)
    return [
        (backtest_report(c["agent"], c["buy_and_hold"], c["flat"], market.periods_per_year), c) for c in curves
    ]


def training_tail(split: Split, validation_bars: int) -> slice:
    """The last training bars, as many as the validation window holds (fewer only when training is
    shorter): the learning curve's in-sample twin of the validation score, rolled out beside it."""
    length = max(min(validation_bars, split.train.stop - split.train.start), 3)
    return slice(split.train.stop - length, split.train.stop)


def train(
    config: TrainConfig,
    out_dir: str | Path,
    *,
    resume: bool = False,
    resume_from: str | Path | None = None,
    progress: ProgressCallback | None = None,
    stop_after_epochs: int | None = None,
    make_plots: bool = True,
    adjust: Callable[[SplitRun], None] | None = None,
    control: RunControl | None = None,
    tensorboard: bool = False,
) -> dict[str, Any]:
    """Run (or resume) training; returns the final metrics.json content (``{}`` when interrupted).

    One driver for every kind of run: a single train | validation | test split trains in
    ``out_dir``; walk-forward folds (``data.folds``) train one after another in
    ``out_dir/fold-KK/`` (each a complete run directory) and ``out_dir/metrics.json`` holds their
    mean. ``stop_after_epochs`` ends the call after that many epochs (an interruption, as when a job
    is killed after a checkpoint); ``resume=True`` continues from the newest checkpoints (a
    single-split run: from the manifest ``resume_from`` when given). ``control``
    (``trainer.train.stop``) saves checkpoints between step chunks on a signal or a timer and
    stops the run there; ``tensorboard`` mirrors every HEALTH_DIAG record as TensorBoard scalars.
    ``adjust`` is called with every split's freshly built run before it trains (experiments that
    change an object the configuration does not reach, e.g. ``benchmarks/ablations.py``).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.run.device)
    if device.type == "cpu":
        prepare_cpu_process(config.run.cpu_threads)
    else:
        pin_cublas_workspace()  # before the first GEMM: a resumed process must pick the same algorithms
    market = prepare_market(config)
    splits = run_splits(config, market)
    write_text_atomic(out / CONFIG_FILENAME, config_text(config, splits))
    bands = run_bands(config, market)
    if bands.note is not None:
        print(bands.note, file=sys.stderr)  # once per run, before any epoch
    if config.data.folds == 0:
        result = train_split(config, market, splits[0], out, device, resume=resume or resume_from is not None,
                             resume_from=resume_from, progress=progress, stop_after_epochs=stop_after_epochs,
                             make_plots=make_plots, control=control, tensorboard=tensorboard, adjust=adjust,
                             bands=bands)  # fmt: skip
        return result.metrics

    carry = config.data.fold < 0  # the agent walks forward through the folds
    previous: TrainerState | None = None
    per_fold: list[dict[str, Any]] = []
    budget = stop_after_epochs
    for position, split in enumerate(splits):
        fold_dir = out / f"fold-{split.index:02d}"
        offset = position * config.run.steps
        result = train_split(
            config, market, split, fold_dir, device, previous=previous, resume=resume and has_checkpoint(fold_dir),
            progress=progress, progress_offset=offset, progress_total=len(splits) * config.run.steps,
            stop_after_epochs=budget, make_plots=make_plots, control=control, tensorboard=tensorboard, adjust=adjust,
            bands=bands,
        )  # fmt: skip
        if not result.metrics:
            return {}  # interrupted inside this fold; --resume continues it
        if budget is not None:
            budget -= result.epochs_this_call
        per_fold.append({"fold": split.index, "boundary": result.run.boundary, **result.metrics})
        if "termination" in result.metrics:  # a metric left its band: the later folds would build on it
            break
        previous = result.run.state if carry else None
        if budget is not None and budget <= 0 and position + 1 < len(splits):
            return {}
    summary = {
        **{strategy: mean_over_folds([fold[strategy] for fold in per_fold]) for strategy in STRATEGIES},
        "validation": {
            strategy: mean_over_folds([fold["validation"].get(strategy, {}) for fold in per_fold]) for strategy in STRATEGIES
        },
        "n_folds": len(per_fold),
        "source": market.source,
        "data_sha256": market.source_sha256,
        "bands": bands.to_dict(),
        "folds": per_fold,
    }  # fmt: skip
    if "termination" in per_fold[-1]:
        summary["termination"] = per_fold[-1]["termination"]
    write_text_atomic(out / METRICS_FILENAME, json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary


def run_bands(config: TrainConfig, market: PreparedMarket) -> BandChoice:
    """The metric bands that watch a run on ``market`` (``run.bands``, scoped: trainer.eval.bands)."""
    return choose_bands(config, BandScope.of(config, market.source, market.source_sha256))


def has_checkpoint(run_dir: Path) -> bool:
    """Whether a run directory holds a periodic checkpoint to resume from."""
    return any((run_dir / CHECKPOINT_DIRNAME).glob(f"{CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX}"))


@dataclass
class SplitResult:
    run: SplitRun
    metrics: dict[str, Any]  # metrics.json of the split; {} when the call was interrupted
    epochs_this_call: int


def train_split(
    config: TrainConfig,
    market: PreparedMarket,
    split: Split,
    out: Path,
    device: torch.device,
    *,
    previous: TrainerState | None = None,
    resume: bool = False,
    resume_from: str | Path | None = None,
    progress: ProgressCallback | None = None,
    progress_offset: int = 0,
    progress_total: int | None = None,
    stop_after_epochs: int | None = None,
    make_plots: bool = True,
    adjust: Callable[[SplitRun], None] | None = None,
    control: RunControl | None = None,
    tensorboard: bool = False,
    bands: BandChoice | None = None,
) -> SplitResult:
    """The epoch driver: train on ``split.train`` in epochs, validate and select after each, then
    backtest the selected checkpoint once on ``split.test``; writes a complete run directory."""
    out.mkdir(parents=True, exist_ok=True)
    run = start_split(config, market, split, device, previous)
    if adjust is not None:
        adjust(run)
    state, step = run.state, run.step
    checkpoints = out / CHECKPOINT_DIRNAME
    fold_start = {"steps": state.steps_done, "epoch": state.epoch}  # a carried walk-forward state counts on
    selection = ModelSelection(config.run.select, config.run.patience)
    epoch_open = False  # resuming a checkpoint saved mid-epoch: its epoch has begun already
    stopped_by: dict[str, Any] | None = None  # the TerminationReason of a metric band, once one fired
    if resume:
        manifest = load_checkpoint(state, Path(resume_from) if resume_from is not None else latest_checkpoint(checkpoints))
        extra = manifest.get("extra", {})
        fold_start = dict(extra.get("fold_start", fold_start))
        selection = ModelSelection.from_dict(extra.get("selection", {}), config.run.select, config.run.patience)
        epoch_open = bool(extra.get("epoch_open", False))
        stopped_by = extra.get("termination")
    if config.data.folds > 0:  # each fold directory is a complete run directory
        write_text_atomic(out / CONFIG_FILENAME, config_text(config, [split]))
    writer = HealthDiagWriter(out / HEALTH_DIAG_FILENAME, mirrors=[TensorBoardMirror(out)] if tensorboard else [])
    runner = StepRunner(step, use_graph=config.run.cuda_graph)
    fold_label = split.index if config.data.folds > 0 else None

    total_steps = fold_start["steps"] + config.run.steps
    # Epoch e covers steps [e·epoch_steps, (e+1)·epoch_steps) of the split, capped at run.steps; a
    # resumed run whose last epoch was cut short by an earlier, smaller --steps continues with the next index.
    done_here = state.steps_done - fold_start["steps"]
    epoch_here = state.epoch - fold_start["epoch"]
    remaining_epochs = math.ceil(max(config.run.steps - done_here, 0) / config.run.epoch_steps)
    total_epochs = max(1, math.ceil(config.run.steps / config.run.epoch_steps), epoch_here + remaining_epochs)
    state.isv.write_input("TOTAL_EPOCHS", float(total_epochs))
    monitors = adaptive_monitors(state.isv)  # read-only observers of the GPU-computed ISV values
    progress_total = progress_total if progress_total is not None else config.run.steps
    log = out / HEALTH_DIAG_FILENAME  # none yet when the run stopped inside its first epoch
    finished = [record for record in iter_health_diag(log) if record.epoch < state.epoch] if resume and log.exists() else []
    if resume:  # continue their fire statistics from the finished epochs' HEALTH_DIAG records
        monitors.restore([record.monitors for record in finished])
    bands = bands if bands is not None else run_bands(config, market)
    watcher = band_watcher(bands, config.run.band_epochs, finished)  # the regression hard-stop, its streaks resumed; None when off
    collects_before_learning = (config.loss.n_step - 1) + math.ceil(config.replay.learning_starts / config.env.n_envs)
    while state.collect_steps < collects_before_learning:
        step.collect()
        if progress is not None:
            progress(progress_offset, progress_total, {"warmup": [state.collect_steps, collects_before_learning]})

    started = time.perf_counter()
    validation_bars = split.validation.stop - split.validation.start
    epochs_this_call = 0
    interrupted = False
    with CheckpointWriter() as saver:  # waits for the last write on leaving (its error, if any, raised here)
        while state.steps_done < total_steps and not selection.should_stop and stopped_by is None:
            epoch_here = state.epoch - fold_start["epoch"]
            if not epoch_open:  # a mid-epoch checkpoint holds the values its epoch began with
                state.adaptive.begin_epoch(epoch_here, total_epochs, state.env.ps)  # epoch index; τ, γ, ε, Kelly cap on the device
            epoch_open = False
            epoch_steps = config.run.epoch_steps
            epoch_end = min(total_steps, state.steps_done + epoch_steps - (state.steps_done - fold_start["steps"]) % epoch_steps)
            while state.steps_done < epoch_end:
                chunk = min(PROGRESS_CHUNK, epoch_end - state.steps_done)
                runner.run(chunk)
                if progress is not None:
                    progress(progress_offset + state.steps_done - fold_start["steps"], progress_total, None)
                if control is not None and state.steps_done < epoch_end and control.checkpoint_due():  # signal or timer
                    extra = {"runner_mode": runner.mode, "selection": selection.to_dict(), "fold_start": fold_start, "epoch_open": True}
                    manifest_path = saver.save(state, checkpoints, extra, config.run.keep_checkpoints)
                    if control.stop_requested:  # the stop reports the checkpoint as saved: it must be on disk
                        saver.wait()
                    control.saved(manifest_path, state.steps_done, total_steps)  # raises RunInterrupted on a stop
            losses, grad_norms, actions = epoch_summary(step)  # the boundary's one read: the device has finished the epoch
            monitors.observe_all()  # the ISV the epoch's kernels wrote (mapped memory, current after that read)
            (validation, _), (training, _) = evaluate(run, market, [split.validation, training_tail(split, validation_bars)])
            record = HealthDiagRecord(
                epoch=state.epoch, fold=fold_label, step=state.steps_done, wall_time_s=time.perf_counter() - started,
                losses=losses, grad_norms=grad_norms, isv=state.isv.snapshot(synchronize=True),
                monitors=monitors.diagnose_all(), actions=actions, validation=validation,
                training={"agent": training["agent"]},
            )  # fmt: skip
            termination = watcher.observe(record) if watcher is not None else None
            if termination is not None:
                record.termination = stopped_by = termination.to_dict()
            writer.write(record)
            if progress is not None:
                progress(progress_offset + state.steps_done - fold_start["steps"], progress_total,
                         {"losses": losses, "validation": validation})  # fmt: skip
            improved = selection.observe(state.epoch, state.steps_done, validation, training)
            run.registry.reset_window()  # the epoch's accumulators (loss sums, action counts) start from zero
            state.epoch += 1
            extra = {"runner_mode": runner.mode, "selection": selection.to_dict(), "fold_start": fold_start,
                     "termination": stopped_by}  # fmt: skip
            # Written by the background thread while the next epoch trains (and "best" beside it when improved).
            manifest_path = saver.save(state, checkpoints, extra, config.run.keep_checkpoints,
                                       best=BEST_CHECKPOINT if improved else None, best_only=SELECTED_TENSORS)  # fmt: skip
            if control is not None:  # raises RunInterrupted on a stop, unless early stopping just ended the run
                if control.stop_requested:
                    saver.wait()
                control.saved(manifest_path, state.steps_done, state.steps_done if selection.should_stop or stopped_by is not None else total_steps)
            epochs_this_call += 1
            if stopped_by is not None:  # a metric left its band: the checkpoint above holds where it stopped
                break
            if stop_after_epochs is not None and epochs_this_call >= stop_after_epochs:
                interrupted = state.steps_done < total_steps and not selection.should_stop
                break
    if interrupted:
        return SplitResult(run, {}, epochs_this_call)

    best = checkpoints / f"{BEST_CHECKPOINT}{MANIFEST_SUFFIX}"
    if best.exists():  # the selected epoch's network and ISV, for the one test backtest
        load_checkpoint(state, best, only=SELECTED_TENSORS)
    ((report, curves),) = evaluate(run, market, [split.test])
    metrics = {
        **report,
        "validation": selection.best_report,
        "selection": selection.summary(stopped_early=selection.should_stop and state.steps_done < total_steps),
        "splits": split.to_dict(),
        "source": market.source,
        "data_sha256": market.source_sha256,
        "bands": bands.to_dict(),
    }
    if stopped_by is not None:
        metrics["termination"] = stopped_by
    write_text_atomic(out / METRICS_FILENAME, json.dumps(metrics, indent=2, allow_nan=False) + "\n")
    if make_plots:
        from trainer.eval.plots import write_run_plots

        write_run_plots(out, curves, selection.curve, selection.best_epoch,
                        "sharpe_ratio" if config.run.select == "last" else config.run.select,
                        None if market.timestamps is None else market.timestamps[split.test])  # fmt: skip
    return SplitResult(run, metrics, epochs_this_call)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def mean_over_folds(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and std across folds of every numeric metric of one strategy (undefined values, e.g. the
    Sharpe ratio of a strategy that never trades, are left out; all undefined → None)."""
    keys: list[str] = []
    for block in blocks:
        for key, value in block.items():
            if key not in keys and (value is None or _number(value) is not None):
                keys.append(key)
    summary: dict[str, Any] = {}
    for key in keys:
        finite = [value for value in (_number(block.get(key)) for block in blocks) if value is not None]
        summary[key] = float(np.mean(finite)) if finite else None
        summary[f"{key}_std"] = float(np.std(finite, ddof=1)) if len(finite) > 1 else None
    return summary
