"""``trainer diag RUN_DIR``: what a run's HEALTH_DIAG says, as a terminal table and PNG plots.

Why: the adaptive machinery makes decisions every epoch (τ, γ, ε, Kelly cap, atom support,
learning health); a user debugging a run needs to see them beside the losses and the
out-of-sample result without writing a notebook. The table shows one row per epoch with the
values that explain a run at a glance, and the monitors' fire rates (a schedule that never fires
is a wiring bug); the plots show every ISV slot and every loss over the epochs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trainer.eval.health_diag import (
    HealthDiagRecord,
    flatten,
    read_health_diag,
    resolve_log_path,
    series,
)
from trainer.files import atomic_path

if TYPE_CHECKING:  # rich is imported where a table is printed, so the trainer imports without it
    from rich.console import Console
    from rich.table import Table

DIAG_DIRNAME = "diag"
ISV_PLOT = "isv_slots.png"
LOSS_PLOT = "losses.png"
VALIDATION_PLOT = "validation.png"

TABLE_COLUMNS = 120  # every table fits a terminal this wide (a test renders them from a real run)
CONTEXT_WIDTH = 52  # the monitor table's free-text column wraps at this width to keep the table inside it
# (column title, section, flattened key) of the two per-epoch tables (each fits 80 columns).
LEARNING_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("loss", "losses", "total"),
    ("c51 dir", "losses", "c51.direction"),
    ("iqn", "losses", "iqn"),
    ("|grad|", "grad_norms", "global"),
    ("val SR", "validation", "agent.sharpe_ratio"),
    ("b&h SR", "validation", "buy_and_hold.sharpe_ratio"),
    ("turnover", "validation", "agent.turnover"),
)
ADAPTIVE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("τ", "isv", "TAU"),
    ("ε", "isv", "EPSILON"),
    ("γ dir", "isv", "GAMMA[0]"),
    ("kelly", "isv", "KELLY_CAP"),
    ("health", "isv", "LEARNING_HEALTH"),
    ("sharpe", "isv", "SHARPE_EMA"),
    ("atom w", "isv", "ATOM_HALF_WIDTH[0]"),
)


def _format(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    magnitude = abs(value)
    if magnitude != 0.0 and (magnitude < 1e-3 or magnitude >= 1e5):
        return f"{value:.1e}"
    return f"{value:.3g}"


def epoch_table(
    records: Sequence[HealthDiagRecord], columns: Sequence[tuple[str, str, str]] = LEARNING_COLUMNS,
    title: str = "HEALTH_DIAG by epoch: learning",
) -> Table:  # fmt: skip
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    table.add_column("epoch", justify="right", no_wrap=True, min_width=5)
    table.add_column("fold", justify="right", no_wrap=True, min_width=4)
    for column_title, _, _ in columns:
        table.add_column(column_title, justify="right", no_wrap=True, min_width=len(column_title))
    for record in records:
        cells = [str(record.epoch), "—" if record.fold is None else str(record.fold)]
        for _, section, key in columns:
            cells.append(_format(flatten(getattr(record, section)).get(key)))
        table.add_row(*cells)
    return table


def monitor_table(record: HealthDiagRecord) -> Table:
    from rich.table import Table

    table = Table(title=f"adaptive monitors at epoch {record.epoch}")
    for column in ("monitor", "value", "fire rate", "obs", "context"):
        table.add_column(column, justify="left" if column in ("monitor", "context") else "right",
                         no_wrap=column != "context", max_width=CONTEXT_WIDTH if column == "context" else None)  # fmt: skip
    for name, snapshot in record.monitors.items():
        if not isinstance(snapshot, dict):
            continue
        context = snapshot.get("context") or {}
        context_text = ", ".join(f"{key}={_format(value)}" for key, value in context.items())
        table.add_row(
            name, _format(snapshot.get("value")), _format(snapshot.get("fire_rate")),
            str(snapshot.get("observations", "—")), context_text,
        )  # fmt: skip
    return table


def grad_norm_table(record: HealthDiagRecord) -> Table | None:
    """Gradient norm of each loss component (rows) in each parameter group (columns), or None
    when the record has no per-component split (runs written before it existed)."""
    from rich.table import Table

    rows: list[tuple[str, dict]] = []
    for component, value in record.grad_norms.items():
        if component == "global" or not isinstance(value, dict):
            continue
        if component == "c51":
            rows.extend((f"c51 {branch}", groups) for branch, groups in value.items() if isinstance(groups, dict))
        else:
            rows.append((component, value))
    if not rows:
        return None
    groups: list[str] = []
    for _, by_group in rows:
        groups.extend(name for name in by_group if name not in groups)
    table = Table(title=f"gradient norms by component and parameter group at epoch {record.epoch}")
    table.add_column("component", justify="left", no_wrap=True)
    for name in groups:
        table.add_column(name, justify="right", no_wrap=True)
    for label, by_group in rows:
        table.add_row(label, *(_format(by_group.get(name)) for name in groups))
    return table


def _save_figure(figure, path: Path) -> None:
    """Atomic PNG write: a reader never sees half a file."""
    with atomic_path(path, suffix=".png") as temporary:
        figure.savefig(temporary, dpi=110, format="png")


def split_constant(data: dict[str, list[float | None]]) -> tuple[dict[str, list[float | None]], dict[str, float]]:
    """(series that change, {name: value} of those that never do); all-None series are dropped.

    A flat line per constant slot (config values, bounds the kernels never move) buried the
    panels that matter; the constants are listed together in one text panel instead.
    """
    varying: dict[str, list[float | None]] = {}
    constant: dict[str, float] = {}
    for name, values in data.items():
        present = [value for value in values if value is not None]
        if not present:
            continue
        if len(values) > 1 and len(present) == len(values) and all(value == present[0] for value in present):
            constant[name] = present[0]
        else:
            varying[name] = values
    return varying, constant


PANEL_TITLE_CHARACTERS = 30  # longer names (grad_norm.c51.direction.order_type) break in two lines


def _panel_title(name: str) -> str:
    """A panel title that stays above its own panel: long dotted names split at a dot."""
    if len(name) <= PANEL_TITLE_CHARACTERS or "." not in name:
        return name
    cut = name.rfind(".", 0, PANEL_TITLE_CHARACTERS) if "." in name[:PANEL_TITLE_CHARACTERS] else name.find(".")
    return f"{name[: cut + 1]}\n{name[cut + 1 :]}"


def series_figure(title: str, data: dict[str, list[float | None]], epochs: list[int], units: dict[str, str] | None = None):
    """One panel per changing series (titles inside their own panel, none overlapping), plus one
    panel listing the constant ones; ``units`` names a series' unit for its y label."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FuncFormatter

    varying, constant = split_constant(data)
    names = list(varying)
    columns = 4
    panels = len(names) + (1 if constant else 0)
    rows = max(1, math.ceil(panels / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.4 * columns, 2.6 * rows + 0.6), squeeze=False, layout="constrained")
    for index, axis in enumerate(axes.flat):
        if index < len(names):
            name = names[index]
            values = [math.nan if v is None else v for v in varying[name]]
            axis.plot(epochs, values, marker="o", markersize=2.5, linewidth=1.2)
            axis.set_title(_panel_title(name), fontsize=8)
            axis.set_xlabel("epoch", fontsize=7)
            axis.set_ylabel((units or {}).get(name, "value"), fontsize=7)
            axis.tick_params(labelsize=7)
            # tick labels carry their own scale: matplotlib's offset text ("1e-5") lands on the panel title
            axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _format(value)))
            axis.grid(alpha=0.3)
        elif index == len(names) and constant:
            lines = [f"{name} = {_format(value)}" for name, value in constant.items()]
            axis.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", fontsize=7, family="monospace", transform=axis.transAxes)
            axis.set_title(f"constant over every epoch ({len(constant)})", fontsize=8)
            axis.axis("off")
        else:
            axis.set_visible(False)
    figure.suptitle(title)
    return figure


def _plot_series(title: str, data: dict[str, list[float | None]], epochs: list[int], path: Path,
                 units: dict[str, str] | None = None) -> Path:  # fmt: skip
    from matplotlib import pyplot as plt

    figure = series_figure(title, data, epochs, units)
    _save_figure(figure, path)
    plt.close(figure)
    return path


def write_plots(records: Sequence[HealthDiagRecord], out_dir: Path) -> list[Path]:
    """PNG plots of every ISV slot, every loss and gradient norm, and the validation Sharpe ratios."""
    out_dir.mkdir(parents=True, exist_ok=True)
    epochs = [record.epoch for record in records]
    losses = series(records, "losses")
    losses.update({f"grad_norm.{key}": values for key, values in series(records, "grad_norms").items()})
    validation: dict[str, list[float | None]] = {}
    units: dict[str, str] = {}
    for key, values in series(records, "validation").items():
        if key.endswith(("max_drawdown", "annual_return")):  # fractions in files, percent on screen (as every plot)
            validation[key] = [None if value is None else 100.0 * value for value in values]
            units[key] = "%"
        elif key.endswith(("sharpe_ratio", "turnover")):
            validation[key] = values
            units[key] = "ratio" if key.endswith("sharpe_ratio") else "fraction of equity per bar"
    isv_series = {key: values for key, values in series(records, "isv").items() if key != "FINGERPRINT"}
    return [
        _plot_series("ISV slots over epochs", isv_series, epochs, out_dir / ISV_PLOT),
        _plot_series("losses and gradient norms over epochs", losses, epochs, out_dir / LOSS_PLOT),
        _plot_series("out-of-sample validation over epochs", validation, epochs, out_dir / VALIDATION_PLOT, units),
    ]


def run_diag(run_dir: str | os.PathLike[str], *, out_dir: str | os.PathLike[str] | None = None,
             console: Console | None = None, plots: bool = True) -> list[Path]:  # fmt: skip
    """Print the tables and write the plots (default ``RUN_DIR/diag/``); returns the PNG paths."""
    if console is None:
        from rich.console import Console

        console = Console()
    log = resolve_log_path(run_dir)
    records = read_health_diag(log)
    console.print(epoch_table(records))
    console.print(epoch_table(records, ADAPTIVE_COLUMNS, "HEALTH_DIAG by epoch: adaptive ISV values"))
    gradients = grad_norm_table(records[-1])
    if gradients is not None:
        console.print(gradients)
    if records[-1].monitors:
        console.print(monitor_table(records[-1]))
    if not plots:
        return []
    target = Path(out_dir) if out_dir is not None else log.parent / DIAG_DIRNAME
    written = write_plots(records, target)
    console.print(f"plots: {', '.join(str(path) for path in written)}")
    return written
