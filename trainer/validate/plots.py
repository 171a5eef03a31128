"""The report's plots: Sharpe per fold × seed (strip plot), the median cell's equity, learning curves."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainer.eval.bands import metric_value
from trainer.eval.plots import pyplot, save_png
from trainer.files import atomic_path

STRIP_PLOT = "sharpe_strip.png"
MEDIAN_EQUITY = "median_cell_equity.png"
LEARNING_CURVES = "learning_curves.png"


def _agent_sharpe(cell: Mapping[str, Any]) -> float | None:
    value = (cell.get("metrics") or {}).get("agent", {}).get("sharpe_ratio")
    return float(value) if isinstance(value, (int, float)) else None


def median_cell(cells: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The finished base cell whose agent Sharpe is the median (the lower one of an even count)."""
    ranked = sorted((cell for cell in cells if _agent_sharpe(cell) is not None), key=_agent_sharpe)  # type: ignore[arg-type]
    return ranked[(len(ranked) - 1) // 2] if ranked else None


def write_report_plots(out: Path, cells: Sequence[Mapping[str, Any]], histories: Mapping[str, list[dict[str, Any]]]) -> list[Path]:
    plt = pyplot()
    out.mkdir(parents=True, exist_ok=True)
    base = [cell for cell in cells if cell["variant"] == "base" and cell["status"] in ("ok", "stopped")]
    written = []

    figure, axes = plt.subplots(figsize=(7, 4))
    seeds = sorted({cell["seed"] for cell in base})
    for offset, seed in enumerate(seeds):
        members = [cell for cell in base if cell["seed"] == seed and _agent_sharpe(cell) is not None]
        jitter = (offset - (len(seeds) - 1) / 2) * 0.08
        axes.scatter([cell["fold"] + jitter for cell in members], [_agent_sharpe(cell) for cell in members], label=f"seed {seed}", s=22)
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xlabel("fold")
    axes.set_ylabel("test Sharpe (agent)")
    axes.set_title("Sharpe per fold × seed")
    if seeds:
        axes.legend(fontsize=7, ncol=2)
    save_png(figure, out / STRIP_PLOT)
    plt.close(figure)
    written.append(out / STRIP_PLOT)

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for cell in base:
        history = histories.get(cell["id"], [])
        epochs = [record["epoch"] for record in history]
        top.plot(epochs, [metric_value(record, "loss.total") for record in history], linewidth=0.8, alpha=0.7)
        bottom.plot(epochs, [metric_value(record, "validation.sharpe_ratio") for record in history], linewidth=0.8, alpha=0.7)
    top.set_ylabel("total loss")
    bottom.set_ylabel("validation Sharpe")
    bottom.set_xlabel("epoch")
    top.set_title("learning curves (one line per cell)")
    save_png(figure, out / LEARNING_CURVES)
    plt.close(figure)
    written.append(out / LEARNING_CURVES)

    median = median_cell(base)
    # A single-split cell plots in its directory, a walk-forward fold cell in its fold-KK/ run directory.
    found = sorted(Path(median["dir"]).glob("**/plots/equity.png")) if median else []
    source = found[0] if found else None
    if source is not None:
        with atomic_path(out / MEDIAN_EQUITY, suffix=".png") as temporary:
            shutil.copyfile(source, temporary)
        written.append(out / MEDIAN_EQUITY)
    return written
