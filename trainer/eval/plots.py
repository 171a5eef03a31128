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


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(figure, path: Path) -> None:
    """Render to a temp file in the same directory, then move it into place (atomic)."""
    with atomic_path(path, suffix=".png") as temporary:
        figure.savefig(temporary, dpi=110, bbox_inches="tight")


def _legend_outside(axis, **options) -> None:
    """A legend beside the axes, never over the lines it names."""
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **options)


def drawdown(equity: np.ndarray) -> np.ndarray:
    """Fractional drawdown from the running peak (≤ 0), anchored at the first value."""
    peak = np.maximum.accumulate(equity)
    return equity / peak - 1.0


def _time_axis(curve: EquityCurve, timestamps: np.ndarray | None):
    """x values of a curve: the bars' UTC dates when known (``timestamps`` in ns, one per bar of
    the window, the curve covering its first ``len(equity)``), else bar numbers."""
    if timestamps is None:
        return np.arange(curve.equity.shape[0]), "test bar"
    return np.asarray(timestamps[: curve.equity.shape[0]], dtype="datetime64[ns]"), "time (UTC)"


def _date_ticks(axis, dated: bool) -> None:
    if dated:
        import matplotlib.dates as mdates

        locator = mdates.AutoDateLocator()
        axis.xaxis.set_major_locator(locator)
        axis.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def equity_figure(curves: Mapping[str, EquityCurve], timestamps: np.ndarray | None = None):
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(10, 4), layout="constrained")
    label = "test bar"
    for name, curve in curves.items():
        x, label = _time_axis(curve, timestamps)
        axis.plot(x, curve.equity / curve.equity[0], label=name.replace("_", " "))
    _date_ticks(axis, timestamps is not None)
    axis.set_xlabel(label)
    axis.set_ylabel("equity (× initial)")
    axis.set_title("Out-of-sample equity (test window, selected checkpoint)")
    _legend_outside(axis)
    axis.grid(alpha=0.3)
    return figure


def drawdown_figure(curves: Mapping[str, EquityCurve], timestamps: np.ndarray | None = None):
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(10, 3), layout="constrained")
    label = "test bar"
    for name, curve in curves.items():
        x, label = _time_axis(curve, timestamps)
        axis.plot(x, 100.0 * drawdown(curve.equity), label=name.replace("_", " "))
    _date_ticks(axis, timestamps is not None)
    axis.set_xlabel(label)
    axis.set_ylabel("drawdown (%)")
    axis.set_title("Drawdown (test window)")
    _legend_outside(axis)
    axis.grid(alpha=0.3)
    return figure


def _write(figure, path: Path) -> None:
    save_png(figure, path)
    pyplot().close(figure)


def plot_equity(curves: Mapping[str, EquityCurve], path: Path, timestamps: np.ndarray | None = None) -> None:
    _write(equity_figure(curves, timestamps), path)


def plot_drawdown(curves: Mapping[str, EquityCurve], path: Path, timestamps: np.ndarray | None = None) -> None:
    _write(drawdown_figure(curves, timestamps), path)


def actions_figure(actions: Mapping[str, Mapping[str, float]]):
    """One bar chart per branch: the share of each sub-action in the greedy test run."""
    plt = pyplot()
    figure, axes = plt.subplots(1, max(len(actions), 1), figsize=(3 * max(len(actions), 1), 3.4), squeeze=False,
                                layout="constrained")  # fmt: skip
    for axis, (branch, fractions) in zip(axes[0], actions.items(), strict=False):
        axis.bar(list(fractions), [100.0 * share for share in fractions.values()], color="tab:blue")
        axis.set_ylim(0, 100)
        axis.set_ylabel("share of bars (%)")
        axis.set_title(branch.replace("_", " "))
        axis.tick_params(axis="x", labelrotation=45)
    figure.suptitle("Action distribution per branch (test window, greedy)")
    return figure


def plot_actions(actions: Mapping[str, Mapping[str, float]], path: Path) -> None:
    _write(actions_figure(actions), path)


def unweighted_terms(records) -> list[str]:
    """Loss terms whose weight was 0 in every epoch (CQL at α = 0): computed, but not in the total."""
    alphas = [record.isv.get("CQL_ALPHA") for record in records]
    return ["cql"] if alphas and all(alpha == 0.0 for alpha in alphas) else []


def plot_losses(run_dir: Path, path: Path) -> list[str]:
    """Losses per epoch from the run's HEALTH_DIAG log; returns the series drawn.

    A term whose weight is 0 (CQL at α = 0) is left out and named in the title: drawn beside
    the others it would look as if it counted.
    """
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    try:
        records = read_health_diag(run_dir / HEALTH_DIAG_FILENAME)
        loss_series = series(records, "losses")
        left_out = unweighted_terms(records)
    except HealthDiagError:
        loss_series, left_out = {}, []
    drawn = [name for name in loss_series if name.split(".")[0] not in left_out]
    for name in drawn:
        values = loss_series[name]
        xs = [i for i, v in enumerate(values) if v is not None]
        axis.plot(xs, [values[i] for i in xs], marker="o", label=name)
    axis.set_xlabel("epoch")
    axis.set_ylabel("mean loss per update")
    title = "Training losses"
    if left_out:
        title += f" ({', '.join(left_out)} not drawn: weight 0)"
    axis.set_title(title)
    if drawn:
        _legend_outside(axis, fontsize=7)
    axis.grid(alpha=0.3)
    save_png(figure, path)
    plt.close(figure)
    return drawn


def plot_learning_curve(curve: Sequence[Mapping[str, Any]], selected_epoch: int | None, metric: str, path: Path) -> None:
    """Training-window and validation score per epoch, the selected epoch marked (over-fitting shows
    as the two lines parting)."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(9, 4))
    epochs = [point["epoch"] for point in curve]
    for key, label in (("training", "training window (last bars, greedy)"), ("validation", "validation window (greedy)")):
        xs = [point["epoch"] for point in curve if point.get(key) is not None]
        axis.plot(xs, [point[key] for point in curve if point.get(key) is not None], marker="o", label=label)
    if selected_epoch is not None and selected_epoch in epochs:
        axis.axvline(selected_epoch, color="tab:green", linestyle="--", label=f"selected epoch {selected_epoch}")
    from matplotlib.ticker import MaxNLocator

    axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole numbers
    axis.set_xlabel("epoch")
    axis.set_ylabel(f"agent {metric.replace('_', ' ')}")
    axis.set_title("Learning curve")
    _legend_outside(axis, fontsize=8)
    axis.grid(alpha=0.3)
    save_png(figure, path)
    plt.close(figure)


def write_run_plots(
    run_dir: str | Path,
    curves: Mapping[str, EquityCurve],
    learning_curve: Sequence[Mapping[str, Any]] = (),
    selected_epoch: int | None = None,
    metric: str = "sharpe_ratio",
    timestamps: np.ndarray | None = None,
) -> list[Path]:
    """Every PNG of a run into ``run_dir/plots``; returns their paths (``timestamps``: the bar times
    of the curves' window in ns, for dates on the time axes)."""
    plots = Path(run_dir) / "plots"
    paths = [plots / name for name in PLOT_FILES]
    plot_equity(curves, paths[0], timestamps)
    plot_drawdown(curves, paths[1], timestamps)
    plot_actions(curves["agent"].actions if "agent" in curves else {}, paths[2])
    plot_losses(Path(run_dir), paths[3])
    plot_learning_curve(learning_curve, selected_epoch, metric, paths[4])
    return paths
