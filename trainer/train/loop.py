"""A training run end to end: data → state → epochs of captured steps → validation → outputs.

Why epochs: everything that needs the host — reading the loss sums, HEALTH_DIAG, the validation
backtest, checkpoints, the CPU-born ISV inputs (epoch index) — happens at an epoch boundary, a
cold point with one synchronisation; between boundaries the device runs graph replays back to
back with nothing read back.

Outputs in the run directory: ``config.toml`` (resolved), ``health_diag.jsonl`` (one record per
epoch), ``checkpoints/`` (safetensors + manifest, newest ``run.keep_checkpoints`` kept),
``metrics.json`` (agent vs buy-and-hold vs flat on the validation window) and ``plots/``.

A population (``run.agents`` > 1) trains its agents in one stacked step (``StepRunner`` over every
agent's step: ``trainer.train.population.PopulationStep``) and gives each agent the run directory,
epoch boundary and outputs of its single run, in ``RUN_DIR/agent-KK/`` (docs/trainer-population.md);
a single run is a population of one.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from trainer.config import DataConfig, TrainConfig, agent_config, agent_grid_point
from trainer.data.features import FeatureConfig
from trainer.data.forecast import LinearForecast, fit_linear_forecast
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
    FEATURE_LINEAR_FORECAST,
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
    annotate_manifest,
    latest_checkpoint,
    load_checkpoint,
)
from trainer.train.flat_margin import FlatMarginChoice, MarginCandidate, choose_margin, margin_candidates
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
AGENT_DIR_PREFIX = "agent-"  # a population's agents train in RUN_DIR/agent-KK/
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

    def with_forecast(self, split: Split, data: DataConfig) -> tuple[PreparedMarket, LinearForecast | None]:
        """This market with its LINEAR_FORECAST column fitted on ``split.train`` (data.linear_forecast;
        trainer.data.forecast), and the fit (None when off). Every bar's column comes from the one fit,
        so the training envs, the validation rollouts and the test backtest read the same forecast."""
        if not data.linear_forecast:
            return self, None
        features = self.features.numpy()
        forecast = fit_linear_forecast(features, self.close.double().numpy(), split.train, ridge=data.forecast_ridge,
                                       min_z=data.forecast_min_z, exclude=FEATURE_LINEAR_FORECAST,
                                       signals=data.forecast_signals, ridge_cv=data.forecast_ridge_cv,
                                       embargo=data.embargo_bars)  # fmt: skip
        return self.with_forecast_applied(forecast), forecast

    def with_forecast_applied(self, forecast: LinearForecast) -> PreparedMarket:
        """This market with the LINEAR_FORECAST column computed by an already fitted ``forecast``."""
        features = self.features.numpy().copy()  # [T, F]
        features[:, FEATURE_LINEAR_FORECAST] = forecast.column(features, self.close.double().numpy(), FeatureConfig().clip)  # the features' own clip
        return dataclasses.replace(self, features=torch.from_numpy(features))

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
    run: SplitRun, market: PreparedMarket, windows: list[slice], margins: list[float] | None = None
) -> list[tuple[dict[str, Any], dict[str, EquityCurve]]]:
    """Greedy backtests of the current network on each window (one batched rollout where the windows
    are equally long; window i with flat margin ``margins[i]``, 0 by default), each with buy-and-hold
    and flat on the same bars."""
    curves = run.rollouts.validation_curves(market.close, market.spread, windows, margins)
    return [
        (backtest_report(c["agent"], c["buy_and_hold"], c["flat"], market.periods_per_year), c) for c in curves
    ]


def boundary_backtests(run: SplitRun, market: PreparedMarket, split: Split) -> tuple[dict[str, Any], dict[str, Any]]:
    """The epoch boundary's greedy backtests — the validation window and the training tail, one
    batched rollout — and the Kelly trade record they leave: the validation env's closed trades,
    out of sample (the cap is sized from them now). Returns (validation, training) reports."""
    validation_bars = split.validation.stop - split.validation.start
    (validation, _), (training, _) = evaluate(run, market, [split.validation, training_tail(split, validation_bars)])
    run.state.adaptive.record_trades(run.rollouts.final_portfolio(0))
    return validation, training


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

    A population (``run.agents`` > 1) trains its agents together (``train_agents``), agent i in
    ``out_dir/agent-KK/`` as the single run of ``agent_config(config, i)``; ``out_dir/config.toml``
    keeps the population's config and ``out_dir/metrics.json`` every agent's test metrics and their mean.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if config.run.agents == 1:
        (metrics,) = train_agents([config], [out], resume=resume, resume_from=resume_from, progress=progress,
                                  stop_after_epochs=stop_after_epochs, make_plots=make_plots, adjust=adjust,
                                  control=control, tensorboard=tensorboard)  # fmt: skip
        return metrics
    if resume_from is not None:
        raise UserError("--resume-from applies to single runs", got=f"a population ({config.run.agents} agents)",
                        expected="--resume", hint="resume the population with --resume, or one agent directory on its own")  # fmt: skip
    configs = [agent_config(config, agent) for agent in range(config.run.agents)]
    roots = [out / agent_dirname(agent) for agent in range(config.run.agents)]
    write_text_atomic(out / CONFIG_FILENAME, config.to_toml())
    agent_metrics = train_agents(configs, roots, resume=resume, progress=progress, stop_after_epochs=stop_after_epochs,
                                 make_plots=make_plots, adjust=adjust, control=control, tensorboard=tensorboard)  # fmt: skip
    if not all(agent_metrics):
        return {}  # interrupted; --resume continues
    summary = population_summary(config, configs, roots, agent_metrics)
    write_text_atomic(out / METRICS_FILENAME, json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary


def lockstep_differences(configs: list[TrainConfig]) -> list[str]:
    """How the agents' configs differ in more than seed and population grid keys (what they must share)."""
    from trainer.config import POPULATION_GRID_KEYS

    def shared(config: TrainConfig) -> dict[str, Any]:
        table = config.to_dict()
        table["run"] = {key: value for key, value in table["run"].items() if key != "seed"}
        for key in POPULATION_GRID_KEYS:
            section, name = key.split(".")
            table[section] = {k: v for k, v in table[section].items() if k != name}
        return table

    first = shared(configs[0])
    differences = []
    for index, config in enumerate(configs[1:], start=1):
        table = shared(config)
        for section in first:
            for key, value in first[section].items() if isinstance(first[section], dict) else ():
                if table[section].get(key) != value:
                    differences.append(f"agent {index} {section}.{key} = {table[section].get(key)!r} (vs {value!r})")
    return differences


def train_agents(
    configs: list[TrainConfig],
    roots: list[Path],
    *,
    resume: bool = False,
    resume_from: str | Path | None = None,
    progress: ProgressCallback | None = None,
    stop_after_epochs: int | None = None,
    make_plots: bool = True,
    adjust: Callable[[SplitRun], None] | None = None,
    control: RunControl | None = None,
    tensorboard: bool = False,
) -> list[dict[str, Any]]:
    """Train agent i with ``configs[i]`` in the run directory ``roots[i]``, every agent in the same
    step; returns each agent's metrics.json content (``{}`` each when interrupted).

    The configs may differ in the seed and the ``POPULATION_GRID_KEYS`` only: the agents share the
    market, its windows and the epoch cadence. Each root becomes the run directory the single run of
    its config writes (``train(configs[i], roots[i])``): one agent is that run itself, bitwise; the
    agents of a stacked population (P ≥ 2) match it within float32 rounding of the batched kernels
    (docs/trainer-population.md, "Exactness")."""
    differences = lockstep_differences(configs)
    if differences:
        raise UserError("agents of one population differ in what they share", got="; ".join(differences[:5]),
                        expected="configs that differ in run.seed and the population grid keys only",
                        hint="train such agents in separate runs")  # fmt: skip
    config = configs[0]
    device = resolve_device(config.run.device)
    if device.type == "cpu":
        prepare_cpu_process(config.run.cpu_threads)
    else:
        pin_cublas_workspace()  # before the first GEMM: a resumed process must pick the same algorithms
    market = prepare_market(config)
    splits = run_splits(config, market)
    for root, agent_cfg in zip(roots, configs, strict=True):
        root.mkdir(parents=True, exist_ok=True)
        write_text_atomic(root / CONFIG_FILENAME, config_text(agent_cfg, splits))
    bands = [run_bands(agent_cfg, market) for agent_cfg in configs]  # scoped to each agent's own config
    if bands[0].note is not None:
        print(bands[0].note, file=sys.stderr)  # once per run, before any epoch
    common = {"progress": progress, "make_plots": make_plots, "control": control, "tensorboard": tensorboard,
              "adjust": adjust, "bands": bands}  # fmt: skip
    if config.data.folds == 0:
        results = train_population_split(configs, market, splits[0], roots, device,
                                         resume=[resume or resume_from is not None] * len(configs),
                                         resume_from=resume_from, stop_after_epochs=stop_after_epochs, **common)  # fmt: skip
        return [result.metrics for result in results]
    return _train_folds(configs, market, splits, roots, device, resume=resume, stop_after_epochs=stop_after_epochs,
                        bands=bands, common=common)  # fmt: skip


def agent_dirname(agent: int) -> str:
    """The run directory of a population's agent ``agent``, below the population's directory."""
    return f"{AGENT_DIR_PREFIX}{agent:02d}"


def population_summary(config: TrainConfig, configs: list[TrainConfig], roots: list[Path],
                       agent_metrics: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """metrics.json of a population: every agent's test metrics (and where they are), and their mean."""
    tests = [{strategy: _test_block(metrics, strategy) for strategy in STRATEGIES} for metrics in agent_metrics]
    agents = [
        {"index": agent, "seed": agent_cfg.run.seed, "grid": agent_grid_point(config, agent), "dir": root.name, **test,
         **({"termination": metrics["termination"]} if "termination" in metrics else {})}
        for agent, (agent_cfg, root, metrics, test) in enumerate(zip(configs, roots, agent_metrics, tests, strict=True))
    ]  # fmt: skip
    return {
        **{strategy: mean_over_folds([test[strategy] for test in tests]) for strategy in STRATEGIES},
        "n_agents": len(agent_metrics),
        "agent_grid": config.run.agent_grid,
        "agents": agents,
    }


def _test_block(metrics: dict[str, Any], strategy: str) -> dict[str, Any]:
    """A strategy's test metrics from an agent's metrics.json (of a walk-forward run: the fold means)."""
    block = metrics.get(strategy, {})
    return {key: value for key, value in block.items() if "folds" not in metrics or not key.endswith("_std")}


def _train_folds(configs: list[TrainConfig], market: PreparedMarket, splits: list[Split], roots: list[Path],
                 device: torch.device, *, resume: bool, stop_after_epochs: int | None, bands: list[BandChoice],
                 common: dict[str, Any]) -> list[dict[str, Any]]:  # fmt: skip
    """Walk-forward folds one after another, every agent in ``roots[i]/fold-KK/``; each agent's
    ``roots[i]/metrics.json`` holds its mean over folds. An agent whose fold hit a metric band walks
    no further (its later folds would build on it); the others go on. ``{}`` per agent when interrupted."""
    config = configs[0]
    carry = config.data.fold < 0  # the agents walk forward through the folds
    previous: dict[int, TrainerState] = {}
    per_fold: list[list[dict[str, Any]]] = [[] for _ in configs]
    walking = list(range(len(configs)))  # agents still walking forward
    budget = stop_after_epochs
    for position, split in enumerate(splits):
        fold_dirs = [roots[agent] / f"fold-{split.index:02d}" for agent in walking]
        results = train_population_split(
            [configs[agent] for agent in walking], market, split, fold_dirs, device,
            previous=[previous[agent] for agent in walking] if carry and previous else None,
            resume=[resume and has_checkpoint(fold_dir) for fold_dir in fold_dirs],
            progress_offset=position * config.run.steps, progress_total=len(splits) * config.run.steps,
            stop_after_epochs=budget, **{**common, "bands": [bands[agent] for agent in walking]},
        )  # fmt: skip
        if not all(result.metrics for result in results):
            return [{} for _ in configs]  # interrupted inside this fold; --resume continues it
        if budget is not None:
            budget -= max(result.epochs_this_call for result in results)
        for agent, result in zip(walking, results, strict=True):
            per_fold[agent].append({"fold": split.index, "boundary": result.run.boundary, **result.metrics})
            previous[agent] = result.run.state
        walking = [agent for agent in walking if "termination" not in per_fold[agent][-1]]
        if not walking:
            break
        if budget is not None and budget <= 0 and position + 1 < len(splits):
            return [{} for _ in configs]
    summaries = []
    for root, folds, agent_bands in zip(roots, per_fold, bands, strict=True):
        summary = {
            **{strategy: mean_over_folds([fold[strategy] for fold in folds]) for strategy in STRATEGIES},
            "validation": {
                strategy: mean_over_folds([fold["validation"].get(strategy, {}) for fold in folds]) for strategy in STRATEGIES
            },
            "n_folds": len(folds),
            "source": market.source,
            "data_sha256": market.source_sha256,
            "bands": agent_bands.to_dict(),
            "folds": folds,
        }  # fmt: skip
        if "termination" in folds[-1]:
            summary["termination"] = folds[-1]["termination"]
        write_text_atomic(root / METRICS_FILENAME, json.dumps(summary, indent=2, allow_nan=False) + "\n")
        summaries.append(summary)
    return summaries


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


class AgentTraining:
    """One agent's side of a split: its state and step, run directory, selection, HEALTH_DIAG, bands.

    Everything an epoch boundary does for an agent lives here, so a population runs exactly the
    boundary a single run does, once per agent; only the steps between boundaries are shared
    (``StepRunner`` over every agent's step)."""

    def __init__(self, config: TrainConfig, market: PreparedMarket, split: Split, out: Path, device: torch.device, *,
                 previous: TrainerState | None, resume: bool, resume_from: str | Path | None, tensorboard: bool,
                 bands: BandChoice, adjust: Callable[[SplitRun], None] | None,
                 forecast: LinearForecast | None = None) -> None:  # fmt: skip
        out.mkdir(parents=True, exist_ok=True)
        self.config, self.market, self.split, self.out = config, market, split, out
        # The split's LINEAR_FORECAST fit as metrics.json and every checkpoint record it (None: off);
        # `trainer eval` re-applies it from the checkpoint.
        self.forecast_record = None if forecast is None else forecast.to_dict()
        self.run = start_split(config, market, split, device, previous)
        if adjust is not None:
            adjust(self.run)
        state = self.run.state
        self.checkpoints = out / CHECKPOINT_DIRNAME
        self.fold_start = {"steps": state.steps_done, "epoch": state.epoch}  # a carried walk-forward state counts on
        self.selection = ModelSelection(config.run.select, config.run.patience)
        self.epoch_open = False  # resuming a checkpoint saved mid-epoch: its epoch has begun already
        self.stopped_by: dict[str, Any] | None = None  # the TerminationReason of a metric band, once one fired
        if resume:
            manifest = load_checkpoint(state, Path(resume_from) if resume_from is not None else latest_checkpoint(self.checkpoints))
            extra = manifest.get("extra", {})
            self.fold_start = dict(extra.get("fold_start", self.fold_start))
            self.selection = ModelSelection.from_dict(extra.get("selection", {}), config.run.select, config.run.patience)
            self.epoch_open = bool(extra.get("epoch_open", False))
            self.stopped_by = extra.get("termination")
        if config.data.folds > 0:  # each fold directory is a complete run directory
            write_text_atomic(out / CONFIG_FILENAME, config_text(config, [split]))
        self.writer = HealthDiagWriter(out / HEALTH_DIAG_FILENAME, mirrors=[TensorBoardMirror(out)] if tensorboard else [])
        self.fold_label = split.index if config.data.folds > 0 else None
        self.total_steps = self.fold_start["steps"] + config.run.steps
        # Epoch e covers steps [e·epoch_steps, (e+1)·epoch_steps) of the split, capped at run.steps; a
        # resumed run whose last epoch was cut short by an earlier, smaller --steps continues with the next index.
        done_here = state.steps_done - self.fold_start["steps"]
        epoch_here = state.epoch - self.fold_start["epoch"]
        remaining_epochs = math.ceil(max(config.run.steps - done_here, 0) / config.run.epoch_steps)
        self.total_epochs = max(1, math.ceil(config.run.steps / config.run.epoch_steps), epoch_here + remaining_epochs)
        # The schedules' span: a fixed horizon that a longer run continues past, or the run's epochs
        # when it is shorter (a short run still completes ε's decay and τ's cosine) or the horizon is 0.
        horizon = config.schedule.horizon_steps
        horizon_epochs = self.total_epochs if horizon == 0 else max(1, math.ceil(horizon / config.run.epoch_steps))
        self.schedule_epochs = min(self.total_epochs, horizon_epochs)
        state.isv.write_input("TOTAL_EPOCHS", float(self.schedule_epochs))
        self.monitors = adaptive_monitors(state.isv)  # read-only observers of the GPU-computed ISV values
        log = out / HEALTH_DIAG_FILENAME  # none yet when the run stopped inside its first epoch
        finished = [record for record in iter_health_diag(log) if record.epoch < state.epoch] if resume and log.exists() else []
        if resume:  # continue their fire statistics from the finished epochs' HEALTH_DIAG records
            self.monitors.restore([record.monitors for record in finished])
        self.bands = bands
        self.watcher = band_watcher(bands, config.run.band_epochs, finished)  # the regression hard-stop, its streaks resumed; None when off
        self.epochs_this_call = 0
        self.result: SplitResult | None = None  # set once the agent's split is finished (metrics.json written)

    @property
    def state(self) -> TrainerState:
        return self.run.state

    @property
    def training(self) -> bool:
        """Whether the agent still trains: steps left, no early stop, no band termination."""
        return (self.state.steps_done < self.total_steps and not self.selection.should_stop
                and self.stopped_by is None)  # fmt: skip

    def collects_before_learning(self) -> int:
        return (self.config.loss.n_step - 1) + math.ceil(self.config.replay.learning_starts / self.config.env.n_envs)

    def begin_epoch(self) -> None:
        state = self.state
        if not self.epoch_open:  # a mid-epoch checkpoint holds the values its epoch began with
            epoch_here = state.epoch - self.fold_start["epoch"]
            state.adaptive.begin_epoch(epoch_here, self.schedule_epochs)  # epoch index; τ, γ, ε, Kelly cap on the device
        self.epoch_open = False

    def epoch_end(self) -> int:
        state, epoch_steps = self.state, self.config.run.epoch_steps
        return min(self.total_steps, state.steps_done + epoch_steps - (state.steps_done - self.fold_start["steps"]) % epoch_steps)

    def extra(self, runner_mode: str, **more: Any) -> dict[str, Any]:
        return {"runner_mode": runner_mode, "selection": self.selection.to_dict(), "fold_start": self.fold_start,
                "linear_forecast": self.forecast_record, **more}  # fmt: skip

    def end_epoch(self, saver: CheckpointWriter, runner_mode: str, started: float) -> tuple[dict[str, Any], dict[str, Any], Path]:
        """The boundary of one agent: one device read, validation, HEALTH_DIAG, selection, checkpoint.

        Returns (losses, validation, the periodic manifest being written)."""
        state, run = self.state, self.run
        losses, grad_norms, actions = epoch_summary(run.step)  # the boundary's one read: the device has finished the epoch
        self.monitors.observe_all()  # the ISV the epoch's kernels wrote (mapped memory, current after that read)
        validation, training = boundary_backtests(run, self.market, self.split)  # and the Kelly record
        record = HealthDiagRecord(
            epoch=state.epoch, fold=self.fold_label, step=state.steps_done, wall_time_s=time.perf_counter() - started,
            losses=losses, grad_norms=grad_norms, isv=state.isv.snapshot(synchronize=True),
            monitors=self.monitors.diagnose_all(), actions=actions, validation=validation,
            training={"agent": training["agent"]},
        )  # fmt: skip
        termination = self.watcher.observe(record) if self.watcher is not None else None
        if termination is not None:
            record.termination = self.stopped_by = termination.to_dict()
        self.writer.write(record)
        improved = self.selection.observe(state.epoch, state.steps_done, validation, training)
        run.registry.reset_window()  # the epoch's accumulators (loss sums, action counts) start from zero
        state.epoch += 1
        self.epochs_this_call += 1
        # Written by the background thread while the next epoch trains (and "best" beside it when improved).
        manifest_path = saver.save(state, self.checkpoints, self.extra(runner_mode, termination=self.stopped_by),
                                   self.config.run.keep_checkpoints, best=BEST_CHECKPOINT if improved else None,
                                   best_only=SELECTED_TENSORS)  # fmt: skip
        return losses, validation, manifest_path

    def choose_flat_margin(self) -> FlatMarginChoice:
        """The selected network's flat margin, chosen on the validation window (``trainer.train.flat_margin``):
        one rollout as it is records its direction gaps, one batched rollout scores every candidate."""
        validation = self.split.validation
        ((plain, curves),) = evaluate(self.run, self.market, [validation])
        if not np.any(curves["agent"].units != 0.0):  # never held a position: a margin can only keep it flat
            return choose_margin([MarginCandidate(0.0, 0.0)], [plain], [1.0], self.config.run.select)
        candidates = margin_candidates(self.run.rollouts.direction_gaps(0))
        scored = evaluate(self.run, self.market, [validation] * len(candidates), [c.margin for c in candidates])
        flat_shares = [float(np.mean(walked["agent"].units == 0.0)) for _, walked in scored]
        return choose_margin(candidates, [report for report, _ in scored], flat_shares, self.config.run.select)

    def finish(self, make_plots: bool) -> SplitResult:
        """The one test backtest, of the selected epoch's network and ISV; writes metrics.json and plots."""
        state, config, split, market = self.state, self.config, self.split, self.market
        best = self.checkpoints / f"{BEST_CHECKPOINT}{MANIFEST_SUFFIX}"
        if best.exists():
            load_checkpoint(state, best, only=SELECTED_TENSORS)
        margin = self.choose_flat_margin() if config.run.flat_margin else None
        if margin is not None and best.exists():  # `trainer eval` of best.json acts with it too
            annotate_manifest(best, "flat_margin", margin.to_dict())
        ((report, curves),) = evaluate(self.run, market, [split.test], [0.0 if margin is None else margin.margin])
        metrics = {
            **report,
            "validation": self.selection.best_report,
            "selection": self.selection.summary(stopped_early=self.selection.should_stop and state.steps_done < self.total_steps),
            "flat_margin": None if margin is None else margin.to_dict(),
            "splits": split.to_dict(),
            "source": market.source,
            "data_sha256": market.source_sha256,
            "bands": self.bands.to_dict(),
            "linear_forecast": self.forecast_record,
        }
        if self.stopped_by is not None:
            metrics["termination"] = self.stopped_by
        write_text_atomic(self.out / METRICS_FILENAME, json.dumps(metrics, indent=2, allow_nan=False) + "\n")
        if make_plots:
            from trainer.eval.plots import write_run_plots

            write_run_plots(self.out, curves, self.selection.curve, self.selection.best_epoch,
                            "sharpe_ratio" if config.run.select == "last" else config.run.select,
                            None if market.timestamps is None else market.timestamps[split.test])  # fmt: skip
        self.result = SplitResult(self.run, metrics, self.epochs_this_call)
        return self.result


def _check_lockstep(agents: list[AgentTraining]) -> None:
    """The agents still training must stand at the same step: they share every step from here."""
    steps = sorted({agent.state.steps_done for agent in agents})
    if len(steps) > 1:
        raise UserError(
            "the population's agents stopped at different steps", got=", ".join(f"{agent.out.name}: {agent.state.steps_done}" for agent in agents),
            expected="one step for every agent still training",
            hint="a checkpoint write was cut short; resume each agent directory on its own (trainer train --resume --out AGENT_DIR)",
        )  # fmt: skip


def train_population_split(
    configs: list[TrainConfig],
    market: PreparedMarket,
    split: Split,
    outs: list[Path],
    device: torch.device,
    *,
    previous: list[TrainerState] | None = None,
    resume: list[bool] | None = None,
    resume_from: str | Path | None = None,
    progress: ProgressCallback | None = None,
    progress_offset: int = 0,
    progress_total: int | None = None,
    stop_after_epochs: int | None = None,
    make_plots: bool = True,
    adjust: Callable[[SplitRun], None] | None = None,
    control: RunControl | None = None,
    tensorboard: bool = False,
    bands: list[BandChoice] | None = None,
) -> list[SplitResult]:
    """The epoch driver of a population: every agent's steps in one ``StepRunner`` (one captured
    graph on CUDA), each agent's epoch boundary and run directory exactly as a single run's.

    Agent i trains ``configs[i]`` in ``outs[i]``. The agents step in lockstep (shared
    ``run.steps`` and ``run.epoch_steps``); one that stops early (patience, a metric band) writes its
    metrics.json at that boundary and writes nothing more, while the captured step keeps stepping
    its state (it cannot be cut out of the graph; its outputs are final). Progress reports the
    first agent still training. Returns one result per agent (metrics ``{}`` when interrupted)."""
    market, forecast = market.with_forecast(split, configs[0].data)  # data.* is shared by a population
    bands = bands if bands is not None else [run_bands(config, market) for config in configs]
    resume = resume if resume is not None else [False] * len(configs)
    agents = [
        AgentTraining(config, market, split, out, device, previous=None if previous is None else previous[index],
                      resume=resume[index], resume_from=resume_from, tensorboard=tensorboard, bands=bands[index],
                      adjust=adjust, forecast=forecast)
        for index, (config, out) in enumerate(zip(configs, outs, strict=True))
    ]  # fmt: skip
    runner = StepRunner([agent.run.step for agent in agents], use_graph=configs[0].run.cuda_graph)
    progress_total = progress_total if progress_total is not None else configs[0].run.steps
    for agent in agents:
        needed = agent.collects_before_learning()
        while agent.state.collect_steps < needed:
            agent.run.step.collect()
            if progress is not None and agent is agents[0]:
                progress(progress_offset, progress_total, {"warmup": [agent.state.collect_steps, needed]})

    started = time.perf_counter()
    interrupted = False
    with contextlib.ExitStack() as writers:  # each waits for its agent's last write on leaving (its error raised there)
        savers = {id(agent): writers.enter_context(CheckpointWriter()) for agent in agents}
        active = [agent for agent in agents if agent.training]
        _check_lockstep(active)
        while active:
            lead = active[0]
            for agent in active:
                agent.begin_epoch()
            epoch_end = lead.epoch_end()
            while lead.state.steps_done < epoch_end:
                chunk = min(PROGRESS_CHUNK, epoch_end - lead.state.steps_done)
                runner.run(chunk)
                if progress is not None:
                    progress(progress_offset + lead.state.steps_done - lead.fold_start["steps"], progress_total, None)
                if control is not None and lead.state.steps_done < epoch_end and control.checkpoint_due():  # signal or timer
                    manifests = [savers[id(agent)].save(agent.state, agent.checkpoints, agent.extra(runner.mode, epoch_open=True),
                                                        agent.config.run.keep_checkpoints) for agent in active]  # fmt: skip
                    if control.stop_requested:  # the stop reports the checkpoints as saved: they must be on disk
                        for agent in active:
                            savers[id(agent)].wait()
                    control.saved(manifests[-1], lead.state.steps_done, lead.total_steps)  # raises RunInterrupted on a stop
            boundary = [(agent, *agent.end_epoch(savers[id(agent)], runner.mode, started)) for agent in active]
            if progress is not None:
                _, losses, validation, _ = boundary[0]
                progress(progress_offset + lead.state.steps_done - lead.fold_start["steps"], progress_total,
                         {"losses": losses, "validation": validation})  # fmt: skip
            if control is not None:  # raises RunInterrupted on a stop, unless every agent's run just ended
                if control.stop_requested:
                    for agent in active:
                        savers[id(agent)].wait()
                ended = all(agent.selection.should_stop or agent.stopped_by is not None for agent in active)
                control.saved(boundary[-1][3], lead.state.steps_done, lead.state.steps_done if ended else lead.total_steps)
            for agent in active:
                if not agent.training:  # finished here: the selected epoch's test backtest, now
                    savers[id(agent)].wait()
                    agent.finish(make_plots)
            active = [agent for agent in active if agent.training]
            if active and stop_after_epochs is not None and lead.epochs_this_call >= stop_after_epochs:
                interrupted = True
                break
    for agent in agents:
        if agent.result is None and not interrupted:
            agent.finish(make_plots)  # nothing left to train (a resumed finished run)
    return [agent.result if agent.result is not None else SplitResult(agent.run, {}, agent.epochs_this_call) for agent in agents]


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
