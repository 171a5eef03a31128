"""Metric bands and the regression hard-stop (invariant 6).

Why bands: a run that has left the behaviour of the last good runs — a loss that explodes, an
adaptive value pinned at a bound, a validation Sharpe far below anything seen — wastes the rest of
its budget and, worse, may end up in a report. ``config/metric-bands.toml`` holds one band per
metric, ``[mean − 3σ, mean + 3σ]`` over the epochs of a passing validation (``trainer validate
--write-bands`` writes it); inside a run, :class:`BandWatcher` sees every epoch's HEALTH_DIAG
record and stops the run when one metric stays outside its band for 2N consecutive epochs
(N = ``run.band_epochs``), with a :class:`TerminationReason` naming the metric, its values and
the band.

The metrics (``KNOWN_METRICS``): the agent's validation Sharpe, the epoch-mean losses, the global
gradient norm, and every GPU-computed adaptive ISV value (``isv.TAU``, ``isv.GAMMA[0]``, ...). A
non-finite loss, gradient norm or ISV value (null in the record) counts as out of band — that is
what a divergence looks like; an undefined validation Sharpe (the agent never traded) is not
evidence either way and neither advances nor resets the count.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.errors import UserError
from trainer.files import write_text_atomic
from trainer.layout import ISV, Writer

DEFAULT_BANDS_PATH = Path(__file__).resolve().parent.parent.parent / "config" / "metric-bands.toml"
BAND_WIDTH_SIGMAS = 3.0
BANDS_SCHEMA = 1

_FIXED_METRICS = ("validation.sharpe_ratio", "loss.total", "loss.c51", "loss.iqn", "loss.cql", "grad_norm.global")


def _isv_metric_names() -> tuple[str, ...]:
    names = []
    for slot in ISV.slots:
        if slot.writer is not Writer.GPU_COMPUTED:
            continue
        names.extend([f"isv.{slot.name}"] if slot.width == 1 else [f"isv.{slot.name}[{i}]" for i in range(slot.width)])
    return tuple(names)


KNOWN_METRICS: tuple[str, ...] = _FIXED_METRICS + _isv_metric_names()
"""Every metric a band may name (unknown names in a bands file are errors)."""

UNDEFINED_IS_NEUTRAL = frozenset({"validation.sharpe_ratio"})
"""Metrics whose null value means "undefined" (not diverged): skipped by the watcher."""


class BandsError(UserError):
    """A metric-bands file that cannot be used."""


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def metric_value(record: Mapping[str, Any], metric: str) -> float | None:
    """The value of ``metric`` in one HEALTH_DIAG record (a ``to_dict()`` mapping); None when it is
    null, non-finite or absent."""
    if metric == "validation.sharpe_ratio":
        validation = record.get("validation", {})
        agent = validation.get("agent", validation)  # nested per strategy, or flat
        return _finite(agent.get("sharpe_ratio")) if isinstance(agent, Mapping) else None
    if metric == "loss.c51":
        c51 = record.get("losses", {}).get("c51")
        if isinstance(c51, Mapping):
            values = [_finite(value) for value in c51.values()]
            return None if not values or None in values else float(sum(values))  # type: ignore[arg-type]
        return _finite(c51)
    if metric.startswith("loss."):
        return _finite(record.get("losses", {}).get(metric.removeprefix("loss.")))
    if metric == "grad_norm.global":
        return _finite(record.get("grad_norms", {}).get("global"))
    if metric.startswith("isv."):
        return _finite(record.get("isv", {}).get(metric.removeprefix("isv.")))
    raise KeyError(f"unknown metric ({metric!r} vs one of {', '.join(KNOWN_METRICS)}) — hint: see trainer.eval.bands")


@dataclass(frozen=True)
class Band:
    """The allowed range of one metric and the statistics it came from."""

    metric: str
    low: float
    high: float
    mean: float
    std: float
    samples: int

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class MetricBands:
    """Every band of a bands file, by metric."""

    bands: dict[str, Band]
    source: str = ""
    """Where the bands came from (the report they were written from)."""

    def to_toml(self, header: str) -> str:
        lines = [f"# {line}".rstrip() for line in header.splitlines()]
        lines += ["", f"schema = {BANDS_SCHEMA}", f"source = {json.dumps(self.source)}", ""]
        for metric, band in self.bands.items():
            lines.append(f"[bands.{json.dumps(metric)}]")
            for key in ("low", "high", "mean", "std"):
                lines.append(f"{key} = {getattr(band, key)!r}")
            lines.append(f"samples = {band.samples}")
            lines.append("")
        return "\n".join(lines)


def bands_from_records(records: Iterable[Mapping[str, Any]], source: str) -> MetricBands:
    """mean ± 3σ of every known metric over the given epochs (metrics with < 2 finite values and
    metrics that never vary are left out: a band of zero width would stop every other run)."""
    series: dict[str, list[float]] = {metric: [] for metric in KNOWN_METRICS}
    for record in records:
        for metric in KNOWN_METRICS:
            value = metric_value(record, metric)
            if value is not None:
                series[metric].append(value)
    bands: dict[str, Band] = {}
    for metric, values in series.items():
        if len(values) < 2 or max(values) == min(values):
            continue
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1))
        half = BAND_WIDTH_SIGMAS * std
        bands[metric] = Band(metric, mean - half, mean + half, mean, std, len(values))
    return MetricBands(bands, source)


def load_bands(path: str | Path) -> MetricBands:
    """Read and check a bands file; every problem is reported at once."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BandsError(
            f"cannot read metric bands {path}", got=error.strerror or "unreadable", expected="a readable TOML file",
            hint="write it with `trainer validate --write-bands`, or run with --no-bands",
        ) from error
    except tomllib.TOMLDecodeError as error:
        raise BandsError(f"metric bands {path} are not TOML", got=str(error), expected="valid TOML",
                         hint="rewrite it with `trainer validate --write-bands`") from error  # fmt: skip
    problems: list[str] = []
    for key in raw:
        if key not in ("schema", "source", "bands"):
            problems.append(f"unknown top-level key {key!r} (vs schema, source, bands)")
    if raw.get("schema") != BANDS_SCHEMA:
        problems.append(f"schema = {raw.get('schema')!r} (vs {BANDS_SCHEMA})")
    tables = raw.get("bands", {})
    if not isinstance(tables, Mapping):
        problems.append(f"bands is a {type(tables).__name__} (vs a table of metric → band)")
        tables = {}
    bands: dict[str, Band] = {}
    for metric, table in tables.items():
        if metric not in KNOWN_METRICS:
            problems.append(f"unknown metric {metric!r} (vs one of {', '.join(KNOWN_METRICS)})")
            continue
        numbers = {key: _finite(table.get(key)) if isinstance(table, Mapping) else None for key in ("low", "high", "mean", "std")}
        missing = [key for key, value in numbers.items() if value is None]
        if missing:
            problems.append(f"band {metric!r} lacks finite {', '.join(missing)} (vs low, high, mean, std numbers)")
            continue
        if numbers["low"] > numbers["high"]:  # type: ignore[operator]
            problems.append(f"band {metric!r} has low {numbers['low']} > high {numbers['high']} (vs low ≤ high)")
            continue
        samples = table.get("samples", 0)
        bands[metric] = Band(metric, numbers["low"], numbers["high"], numbers["mean"], numbers["std"], int(samples))  # type: ignore[arg-type]
    if problems:
        lines = "\n".join(f"  - {problem}" for problem in problems)
        raise BandsError(
            f"invalid metric bands in {path}", got=f"{len(problems)} problem{'s' if len(problems) != 1 else ''}",
            expected="none", hint=f"fix every entry below (or rewrite the file with `trainer validate --write-bands`)\n{lines}",
        )  # fmt: skip
    return MetricBands(bands, str(raw.get("source", "")))


def write_bands(bands: MetricBands, path: str | Path, header: str) -> Path:
    """Write a bands file atomically (``header`` becomes its leading comment)."""
    path = Path(path)
    write_text_atomic(path, bands.to_toml(header) + "\n")
    load_bands(path)  # what was written must read back
    return path


@dataclass(frozen=True)
class TerminationReason:
    """Why a run stopped itself: which metric left its band, its last values, the band."""

    metric: str
    values: tuple[float | None, ...]
    low: float
    high: float
    epoch: int
    epochs: int
    kind: str = "metric_out_of_band"

    def message(self) -> str:
        shown = ", ".join("null" if value is None else f"{value:.4g}" for value in self.values)
        return (
            f"{self.metric} outside its band [{self.low:.4g}, {self.high:.4g}] for {self.epochs} consecutive "
            f"epochs (last: {shown}) — stopped after epoch {self.epoch}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "metric": self.metric, "values": list(self.values), "band": [self.low, self.high],
            "epoch": self.epoch, "consecutive_epochs": self.epochs, "message": self.message(),
        }  # fmt: skip


@dataclass
class BandWatcher:
    """Per-run watcher: feed it each epoch's HEALTH_DIAG record; it answers with a
    :class:`TerminationReason` once a metric has been out of band for ``2 · patience`` epochs."""

    bands: MetricBands
    patience: int
    """N: the run stops after 2N consecutive out-of-band epochs of one metric."""
    recent: dict[str, list[float | None]] = field(default_factory=dict)

    def observe(self, record: Any) -> TerminationReason | None:
        data = record.to_dict() if hasattr(record, "to_dict") else record
        limit = 2 * self.patience
        for metric, band in self.bands.bands.items():
            value = metric_value(data, metric)
            if value is None and metric in UNDEFINED_IS_NEUTRAL:
                continue
            if value is not None and band.contains(value):
                self.recent.pop(metric, None)
                continue
            streak = self.recent.setdefault(metric, [])
            streak.append(value)
            if len(streak) >= limit:
                return TerminationReason(metric, tuple(streak[-limit:]), band.low, band.high, int(data["epoch"]), limit)
        return None


def band_watcher(config: Any, finished: Iterable[Any] = ()) -> BandWatcher | None:
    """The watcher a run uses: ``run.bands`` = "default" → ``config/metric-bands.toml``, "" → none.

    ``finished``: the HEALTH_DIAG records of the epochs a resumed run has already done (oldest
    first), so its out-of-band streaks continue where the stopped run left them — a resumed run
    stops at the same epoch as an uninterrupted one."""
    choice = config.run.bands
    if not choice:
        return None
    path = DEFAULT_BANDS_PATH if choice == "default" else Path(choice)
    watcher = BandWatcher(load_bands(path), config.run.band_epochs)
    for record in finished:
        watcher.observe(record)
    return watcher
