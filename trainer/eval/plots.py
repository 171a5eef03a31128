"""PNG plots of a run: test equity against buy-and-hold, drawdown, action distribution, losses, learning curve.

Why files, not a dashboard: a run directory must be self-explaining on a headless machine; the
Agg backend renders without a display. matplotlib is imported here only (the training step
never needs it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainer.eval.backtest import EquityCurve
from trainer.eval.health_diag import (
    HEALTH_DIAG_FILENAME,
    HealthDiagError,
    read_health_diag,
    series,
)
from trainer.files import atomic_path

PLOT_FILES = ("equity.png", "drawdown.png", "actions.png", "losses.png", "learning_curve.png")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure, path: Path) -> None:
    """Render to a temp file in the same directory, then move it into place (atomic)."""
    with atomic_path(path, suffix=".png") as temporary:
        figure.savefig(temporary, dpi=110, bbox_inches="tight")


def drawdown(equity: np.ndarray) -> np.ndarray:
    """Fractional drawdown from the running peak (≤ 0), anchored at the first value."""
    peak = np.maximum.accumulate(equity)
    return equity / peak - 1.0


def plot_equity(curves: Mapping[str, EquityCurve], path: Path) -> None:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    for name, curve in curves.items():
        axis.plot(curve.equity / curve.equity[0], label=name.replace("_", " "))
    axis.set_xlabel("test bar")
    axis.set_ylabel("equity (× initial)")
    axis.set_title("Out-of-sample equity (test window, selected checkpoint)")
    axis.legend()
    axis.grid(alpha=0.3)
    _save(figure, path)
    plt.close(figure)


def plot_drawdown(curves: Mapping[str, EquityCurve], path: Path) -> None:
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(9, 3))
    for name, curve in curves.items():
        axis.plot(100.0 * drawdown(curve.equity), label=name.replace("_", " "))
    axis.set_xlabel("test bar")
    axis.set_ylabel("drawdown (%)")
    axis.set_title("Drawdown (test window)")
    axis.legend()
    axis.grid(alpha=0.3)
    _save(figure, path)
    plt.close(figure)


def plot_actions(actions: Mapping[str, Mapping[str, float]], path: Path) -> None:
    """One bar chart per branch: the share of each sub-action in the greedy test run."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, max(len(actions), 1), figsize=(3 * max(len(actions), 1), 3), squeeze=False)
    for axis, (branch, fractions) in zip(axes[0], actions.items(), strict=False):
        axis.bar(list(fractions), list(fractions.values()), color="tab:blue")
        axis.set_ylim(0, 1)
        axis.set_title(branch.replace("_", " "))
        axis.tick_params(axis="x", labelrotation=45)
    figure.suptitle("Action distribution per branch (test window, greedy)", y=1.05)
    _save(figure, path)
    plt.close(figure)


def plot_losses(run_dir: Path, path: Path) -> None:
    """Losses per epoch from the run's HEALTH_DIAG log (log scale where positive)."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    try:
        records = read_health_diag(run_dir / HEALTH_DIAG_FILENAME)
        loss_series = series(records, "losses")
    except HealthDiagError:
        loss_series = {}
    for name, values in loss_series.items():
        xs = [i for i, v in enumerate(values) if v is not None]
        axis.plot(xs, [values[i] for i in xs], marker="o", label=name)
    axis.set_xlabel("epoch")
    axis.set_ylabel("mean loss")
    axis.set_title("Training losses")
    if loss_series:
        axis.legend(fontsize=7)
    axis.grid(alpha=0.3)
    _save(figure, path)
    plt.close(figure)


def plot_learning_curve(curve: Sequence[Mapping[str, Any]], selected_epoch: int | None, metric: str, path: Path) -> None:
    """Training-window and validation score per epoch, the selected epoch marked (over-fitting shows
    as the two lines parting)."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    epochs = [point["epoch"] for point in curve]
    for key, label in (("training", "training window (last bars, greedy)"), ("validation", "validation window (greedy)")):
        xs = [point["epoch"] for point in curve if point.get(key) is not None]
        axis.plot(xs, [point[key] for point in curve if point.get(key) is not None], marker="o", label=label)
    if selected_epoch is not None and selected_epoch in epochs:
        axis.axvline(selected_epoch, color="tab:green", linestyle="--", label=f"selected epoch {selected_epoch}")
    axis.set_xlabel("epoch")
    axis.set_ylabel(f"agent {metric.replace('_', ' ')}")
    axis.set_title("Learning curve")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    _save(figure, path)
    plt.close(figure)


def write_run_plots(
    run_dir: str | Path,
    curves: Mapping[str, EquityCurve],
    learning_curve: Sequence[Mapping[str, Any]] = (),
    selected_epoch: int | None = None,
    metric: str = "sharpe_ratio",
) -> list[Path]:
    """Every PNG of a run into ``run_dir/plots``; returns their paths."""
    plots = Path(run_dir) / "plots"
    paths = [plots / name for name in PLOT_FILES]
    plot_equity(curves, paths[0])
    plot_drawdown(curves, paths[1])
    plot_actions(curves["agent"].actions if "agent" in curves else {}, paths[2])
    plot_losses(Path(run_dir), paths[3])
    plot_learning_curve(learning_curve, selected_epoch, metric, paths[4])
    return paths
