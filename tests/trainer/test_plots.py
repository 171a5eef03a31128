"""Plots and `trainer diag` layout: tables within 120 columns, titles that do not collide, constant
panels grouped, zero-weight loss terms not drawn, one unit convention on screen."""

from __future__ import annotations

import itertools

from rich.console import Console

from trainer.cli import _percent
from trainer.eval.diag import (
    TABLE_COLUMNS,
    ADAPTIVE_COLUMNS,
    epoch_table,
    grad_norm_table,
    monitor_table,
    series_figure,
    split_constant,
)
from trainer.eval.health_diag import HEALTH_DIAG_FILENAME, HealthDiagRecord, HealthDiagWriter
from trainer.eval.plots import plot_losses
from trainer.monitors import ADAPTIVE_MONITORS


def full_record(epoch: int, fold: int | None = 3, cql_alpha: float = 0.0) -> HealthDiagRecord:
    """A record shaped like a real run's: every monitor, every loss term, long negative numbers."""
    value = -0.001456789 * (epoch + 1)
    monitors = {
        spec.name: {"value": value, "slots": {slot: value for slot in spec.slots}, "context": {slot: value for slot in spec.context},
                    "fire_rate": 0.333333, "observations": 1234, "fires": 411}
        for spec in ADAPTIVE_MONITORS
    }  # fmt: skip
    branches = ("direction", "magnitude", "order_type", "urgency")
    groups = ("trunk", *branches, "iqn_head")
    return HealthDiagRecord(
        epoch=epoch, fold=fold, step=100 * (epoch + 1), wall_time_s=1.0,
        losses={"c51": {b: 2.3 + epoch for b in branches}, "iqn": 3.1, "cql": 4.2 + epoch, "total": 13.0},
        grad_norms={"global": 0.85, "c51": {b: {g: -0.0123456 for g in groups} for b in branches},
                    "iqn": {g: 0.1234567 for g in groups}, "cql": {g: 0.1234567 for g in groups}},
        isv={"TAU": 0.005, "EPSILON": 1.0 - 0.1 * epoch, "CQL_ALPHA": cql_alpha, "GAMMA[0]": 0.99, "KELLY_CAP": 0.1,
             "LEARNING_HEALTH": value, "SHARPE_EMA": value, "ATOM_HALF_WIDTH[0]": 10.0},
        monitors=monitors, actions={"direction": {"short": 0.25, "hold": 0.25, "long": 0.25, "flat": 0.25}},
        validation={"agent": {"sharpe_ratio": value, "turnover": 0.001, "max_drawdown": value},
                    "buy_and_hold": {"sharpe_ratio": -1.2345}},
    )  # fmt: skip


def widest_line(renderable) -> int:
    console = Console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 (closed with the console)
    console.print(renderable)
    return max(len(line.rstrip()) for line in console.export_text().splitlines())


def test_diag_tables_fit_120_columns():
    records = [full_record(epoch) for epoch in range(3)]
    for table in (epoch_table(records), epoch_table(records, ADAPTIVE_COLUMNS, "adaptive"), grad_norm_table(records[-1]),
                  monitor_table(records[-1])):  # fmt: skip
        assert widest_line(table) <= TABLE_COLUMNS, table.title


def test_constant_series_are_grouped_and_empty_ones_dropped():
    varying, constant = split_constant({"TAU": [0.1, 0.2], "V_MIN": [-10.0, -10.0], "NONE": [None, None], "GAP": [1.0, None]})
    assert varying == {"TAU": [0.1, 0.2], "GAP": [1.0, None]} and constant == {"V_MIN": -10.0}


def test_diag_panel_titles_do_not_collide():
    names = ["grad_norm.c51.direction.order_type", "grad_norm.c51.magnitude.iqn_head", "grad_norm.iqn.order_type",
             "grad_norm.c51.order_type.urgency", "losses.c51.order_type", "x", "y", "z", "w"]  # fmt: skip
    data = {name: [1e-5 * i, 1e-5 * (i + 1), 1e-5 * i * i + 1e-7] for i, name in enumerate(names)}  # tiny values
    data["V_MIN"] = [-10.0, -10.0, -10.0]
    figure = series_figure("losses and gradient norms over epochs", data, [0, 1, 2])
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    panels = [axis for axis in figure.axes if axis.get_visible() and axis.get_title()]
    titles = [axis.title.get_window_extent(renderer) for axis in panels]
    assert len(titles) == len(names) + 1  # every changing series and the constants panel
    suptitle = figure._suptitle.get_window_extent(renderer)
    assert all(suptitle.y0 >= title.y1 for title in titles), "the figure title sits among the panel titles"
    for first, second in itertools.combinations(titles, 2):
        assert not first.overlaps(second), (first, second)
    assert not [axis.get_title() for axis in panels if axis.yaxis.get_offset_text().get_text()]  # no "1e-5" on a title


def test_losses_plot_leaves_out_cql_when_its_weight_is_zero(tmp_path):
    for alpha, expected_cql in ((0.0, False), (0.5, True)):
        run = tmp_path / f"alpha-{alpha}"
        writer = HealthDiagWriter(run / HEALTH_DIAG_FILENAME)
        for epoch in range(2):
            writer.write(full_record(epoch, fold=None, cql_alpha=alpha))
        drawn = plot_losses(run, run / "plots" / "losses.png")
        assert ("cql" in drawn) is expected_cql and "total" in drawn and "c51.direction" in drawn
        assert (run / "plots" / "losses.png").read_bytes()[:4] == b"\x89PNG"


def test_returns_and_drawdowns_show_in_percent():
    assert _percent(-0.01234) == "-1.23%" and _percent(0.5) == "+50.00%" and _percent(None) == "n/a"


def curves_and_times(n_bars: int = 200):
    import numpy as np

    from trainer.eval.backtest import EquityCurve

    rng = np.random.default_rng(0)
    equity = 100_000.0 * np.cumprod(1.0 + rng.normal(0, 1e-3, n_bars - 1))  # the rollout covers n − 1 bars
    curves = {name: EquityCurve(equity=equity * scale, exposure=np.zeros(n_bars - 2), units=np.zeros(n_bars - 2))
              for name, scale in (("agent", 1.0), ("buy_and_hold", 1.01), ("flat", 1.0))}  # fmt: skip
    start = np.datetime64("2017-03-01T00:00:00", "ns").astype(np.int64)
    return curves, start + np.arange(n_bars, dtype=np.int64) * 3_600_000_000_000


def test_equity_and_drawdown_plots_have_dates_labels_and_a_legend_beside_the_lines():
    from matplotlib import pyplot as plt

    from trainer.eval.plots import drawdown_figure, equity_figure

    curves, times = curves_and_times()
    for build in (equity_figure, drawdown_figure):
        figure = build(curves, times)
        axis = figure.axes[0]
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        assert axis.get_xlabel() == "time (UTC)" and axis.get_ylabel()
        ticks = " ".join(label.get_text() for label in axis.get_xticklabels())
        assert "Mar" in ticks or "2017" in ticks, ticks  # dates, not bar numbers
        legend = axis.get_legend()
        assert [text.get_text() for text in legend.get_texts()] == ["agent", "buy and hold", "flat"]
        assert not legend.get_window_extent(renderer).overlaps(axis.get_window_extent(renderer))  # hides no line
        plt.close(figure)


def test_action_plot_has_y_labels_in_percent():
    from matplotlib import pyplot as plt

    from trainer.eval.plots import actions_figure

    figure = actions_figure({"direction": {"short": 0.2, "hold": 0.8}, "magnitude": {"small": 1.0}})
    assert [axis.get_ylabel() for axis in figure.axes] == ["share of bars (%)"] * 2
    assert figure.axes[0].patches[1].get_height() == 80.0
    plt.close(figure)
