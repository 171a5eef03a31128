"""``trainer eval CHECKPOINT``: backtest a saved policy, on its run's test window or on any data.

Why from the checkpoint alone: a checkpoint carries the resolved config of its run (manifest) and
every tensor it needs, so a policy can be judged later, elsewhere, on other bars, with the very
rollout and metrics a run reports (``trainer.train.validate.validation_curves`` and
``trainer.eval.backtest.backtest_report``: greedy, through the training environment's accounting,
against buy-and-hold and flat) — no second implementation to drift.

Windows: without ``data`` the test window of the checkpoint's own split (for ``best.json``, the
checkpoint a run reports, the result equals the run's ``metrics.json``); with ``data`` every usable
bar of that series (from the first bar with all features defined and a full history window).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from trainer.config import TrainConfig, config_from_mapping
from trainer.data.forecast import LinearForecast
from trainer.eval.backtest import backtest_report
from trainer.files import write_text_atomic
from trainer.train.checkpoint import load_checkpoint, read_manifest
from trainer.train.flat_margin import recorded_margin
from trainer.train.host import prepare_cpu_process
from trainer.train.loop import CHECKPOINT_DIRNAME, METRICS_FILENAME, PLOTS_DIRNAME, PreparedMarket, prepare_market, resolve_device, run_splits
from trainer.train.rundir import checkpoint_manifest
from trainer.train.step import TrainerState, TrainStep
from trainer.train.validate import validation_curves

EVAL_FILENAME = "eval.json"  # what was evaluated: checkpoint, data, window, device


def evaluation_config(manifest: dict[str, Any], data: str | None, device: str) -> TrainConfig:
    """The checkpoint's run config, on ``data`` when given, on the device that will run."""
    config = config_from_mapping(manifest.get("config", {}), source="the checkpoint's config", stored=True)
    if data is not None:
        config = config.replace(data={"path": data})
    return config.replace(run={"device": resolve_device(device).type})


def evaluation_window(config: TrainConfig, market: PreparedMarket, manifest_path: Path, other_data: bool) -> slice:
    """Every usable bar of other data; else the test window of the split the checkpoint trained on
    (a walk-forward run's checkpoints live in ``RUN_DIR/fold-KK/checkpoints/``)."""
    if other_data:
        return slice(market.first, market.n_bars)
    splits = run_splits(config, market)
    run_dir = manifest_path.parent.parent if manifest_path.parent.name == CHECKPOINT_DIRNAME else manifest_path.parent
    fold = int(run_dir.name.removeprefix("fold-")) if config.data.folds > 0 and run_dir.name.startswith("fold-") else None
    chosen = [split for split in splits if split.index == fold] if fold is not None else splits[:1]
    return (chosen or splits[:1])[0].test


def evaluate_checkpoint(
    checkpoint: str | Path, out_dir: str | Path, *, data: str | None = None, device: str = "auto", make_plots: bool = True
) -> dict[str, Any]:
    """Backtest the checkpoint's policy; writes ``metrics.json``, ``eval.json`` and ``plots/`` into
    ``out_dir``; returns the metrics (agent, buy_and_hold, flat)."""
    manifest_path = checkpoint_manifest(Path(checkpoint))
    manifest = read_manifest(manifest_path)
    config = evaluation_config(manifest, data, device)
    torch_device = torch.device(config.run.device)
    if torch_device.type == "cpu":
        prepare_cpu_process(config.run.cpu_threads)
    market = prepare_market(config)
    fitted = manifest.get("extra", {}).get("linear_forecast")
    if fitted is not None:  # the forecast the run fitted on its training bars, applied as it was (also to other data)
        market = market.with_forecast_applied(LinearForecast.from_dict(fitted))
    window = evaluation_window(config, market, manifest_path, data is not None)
    state = TrainerState(config, market.window(window), torch_device)
    step = TrainStep(state)
    only = manifest.get("only")  # a selected-epoch checkpoint holds only what a backtest needs
    load_checkpoint(state, manifest_path, only=tuple(only) if only else None)
    margin = recorded_margin(manifest.get("extra", {}))  # a run's best.json: the flat margin its test acted with
    (curves,) = validation_curves(state, step, market.close, market.spread, [window], [margin])
    report = backtest_report(curves["agent"], curves["buy_and_hold"], curves["flat"], market.periods_per_year)
    out = Path(out_dir)
    write_text_atomic(out / METRICS_FILENAME, json.dumps(report, indent=2, allow_nan=False) + "\n")
    described = {
        "checkpoint": str(manifest_path), "steps_done": int(manifest["steps_done"]), "data": market.source,
        "window": [window.start, window.stop], "device": torch_device.type, "periods_per_year": market.periods_per_year,
        "flat_margin": margin,
    }  # fmt: skip
    write_text_atomic(out / EVAL_FILENAME, json.dumps(described, indent=2) + "\n")
    if make_plots:
        from trainer.eval.plots import plot_actions, plot_drawdown, plot_equity

        plots = out / PLOTS_DIRNAME
        timestamps = None if market.timestamps is None else market.timestamps[window]
        plot_equity(curves, plots / "equity.png", timestamps)
        plot_drawdown(curves, plots / "drawdown.png", timestamps)
        plot_actions(curves["agent"].actions, plots / "actions.png")
    return report
