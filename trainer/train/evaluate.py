"""``trainer eval CHECKPOINT``: backtest a saved policy, on its own validation window or on any data.

Why from the checkpoint alone: a checkpoint carries the resolved config of its run (manifest) and
every tensor, so a policy can be judged later, elsewhere, on other bars, with the very rollout
and metrics a run reports (``trainer.train.loop.validation_report``: greedy, through the training
environment's accounting, against buy-and-hold and flat) — no second implementation to drift.

Windows: without ``data`` the run's own validation window (the result equals the run's
``metrics.json`` for its final checkpoint); with ``data`` every usable bar of that series (from
the first bar with all features defined and a full history window to the last).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch

from trainer.config import TrainConfig, config_from_mapping
from trainer.files import write_text_atomic
from trainer.train.checkpoint import load_checkpoint, read_manifest
from trainer.train.loop import METRICS_FILENAME, PLOTS_DIRNAME, prepare_market, resolve_device, validation_report
from trainer.train.rundir import checkpoint_manifest
from trainer.train.step import TrainerState, TrainStep

EVAL_FILENAME = "eval.json"  # what was evaluated: checkpoint, data, window, device


def evaluation_config(manifest: dict[str, Any], data: str | None, device: str) -> TrainConfig:
    """The checkpoint's run config, on ``data`` when given, on the device that will run."""
    config = config_from_mapping(manifest.get("config", {}), source="the checkpoint's config")
    if data is not None:
        config = config.replace(data={"path": data})
    return config.replace(run={"device": resolve_device(device).type})


def evaluate_checkpoint(
    checkpoint: str | Path, out_dir: str | Path, *, data: str | None = None, device: str = "auto", make_plots: bool = True
) -> dict[str, Any]:
    """Backtest the checkpoint's policy; writes ``metrics.json``, ``eval.json`` and ``plots/`` into
    ``out_dir``; returns the metrics (agent, buy_and_hold, flat)."""
    manifest_path = checkpoint_manifest(Path(checkpoint))
    config = evaluation_config(read_manifest(manifest_path), data, device)
    torch_device = torch.device(config.run.device)
    if torch_device.type == "cpu":
        torch.set_num_threads(max(1, config.run.cpu_threads))
    market = prepare_market(config)
    if data is not None:  # another series: judge the policy on all of it
        market = dataclasses.replace(market, val=slice(market.train.start, int(market.close.shape[0])))
    state = TrainerState(config, market.training_window(), torch_device)
    step = TrainStep(state)
    load_checkpoint(state, manifest_path)
    report, curves = validation_report(state, step, market)
    out = Path(out_dir)
    write_text_atomic(out / METRICS_FILENAME, json.dumps(report, indent=2, allow_nan=False) + "\n")
    described = {
        "checkpoint": str(manifest_path), "steps_done": state.steps_done, "data": market.source,
        "window": [market.val.start, market.val.stop], "device": torch_device.type,
        "periods_per_year": market.periods_per_year,
    }  # fmt: skip
    write_text_atomic(out / EVAL_FILENAME, json.dumps(described, indent=2) + "\n")
    if make_plots:
        from trainer.eval.plots import plot_actions, plot_drawdown, plot_equity

        plots = out / PLOTS_DIRNAME
        timestamps = None if market.timestamps is None else market.timestamps[market.val]
        plot_equity(curves, plots / "equity.png", timestamps)
        plot_drawdown(curves, plots / "drawdown.png", timestamps)
        plot_actions(curves["agent"].actions, plots / "actions.png")
    return report
