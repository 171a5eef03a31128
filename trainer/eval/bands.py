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

Scope: bands describe runs of one configuration on one dataset, and a run elsewhere can leave
them legitimately (another market's Sharpe, another learning rate's losses). A bands file
therefore records its :class:`BandScope` — the data's sha256 and every configuration value
that shapes the metrics (``SCOPE_EXCLUDED`` are the ones that do not: seeds, lengths,
devices, cadences). The shipped bands (``run.bands = "default"``) only watch a run of their own
scope (the CPU default's or the GPU config's, ``SHIPPED_BANDS_PATHS``); any other run is told
once, with the differences from the nearest, that no bands watch it. A bands file
named explicitly (``run.bands = PATH``) always applies — the user chose it — and the
differences are reported beside it.
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
GPU_BANDS_PATH = DEFAULT_BANDS_PATH.with_name("metric-bands-gpu.toml")
SHIPPED_BANDS_PATHS = (DEFAULT_BANDS_PATH, GPU_BANDS_PATH)
"""What ``run.bands = "default"`` chooses from: the bands of ``config/train/default.toml``'s and of
``config/train/gpu.toml``'s passing validations (each file's header says how it was written)."""
BAND_WIDTH_SIGMAS = 3.0
BANDS_SCHEMA = 2
"""2: with the [scope] table; schema-1 files (no scope) still load and apply to every run."""

SCOPE_EXCLUDED = frozenset({"data.path", "data.folds", "data.fold", "data.fold_train_fraction", "schedule.horizon_steps"})
"""Configuration keys outside a band's scope (besides the ``run.*`` keys): where the data lives
(its content is compared instead), how a validation folds it, and the schedules' span (a length,
like ``run.steps``, which it defaults to)."""

SCOPE_RUN_KEYS = frozenset({"run.policy_weights", "run.policy_mirror"})
"""The ``run.*`` keys inside a band's scope: how the greedy backtests act, which shapes every
epoch's validation metrics. The other ``run.*`` keys (seeds, lengths, devices, cadences, the
selection, which picks among epochs without changing them) are outside it."""

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


def _flat_config(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat_config(value, f"{name}."))
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


@dataclass(frozen=True)
class BandScope:
    """The data and the configuration values the bands were measured on."""

    data: str
    """The data's name, for messages."""
    data_sha256: str
    """Content hash of the data file (the feature cache's source key)."""
    config: dict[str, Any]
    """Flat ``section.key`` → value of every configuration key inside the scope."""

    @classmethod
    def of(cls, config: Any, data: str, data_sha256: str) -> BandScope:
        """The scope of a run: its resolved configuration (a TrainConfig) and its data."""
        flat = _flat_config(config.to_dict())
        kept = {key: value for key, value in flat.items()
                if (not key.startswith("run.") or key in SCOPE_RUN_KEYS) and key not in SCOPE_EXCLUDED}  # fmt: skip
        return cls(data, data_sha256, kept)

    def differences(self, run: BandScope) -> list[str]:
        """What separates ``run`` from this scope, one line each (empty: the same scope)."""
        out = []
        if run.data_sha256 != self.data_sha256:
            out.append(f"data ({run.data} vs {self.data} the bands were measured on)")
        for key in sorted(set(self.config) | set(run.config)):
            mine, theirs = self.config.get(key, "absent"), run.config.get(key, "absent")
            if mine != theirs:
                out.append(f"{key} ({theirs!r} vs {mine!r})")
        return out

    def to_toml(self) -> list[str]:
        lines = ["[scope]", f"data = {json.dumps(self.data)}", f"data_sha256 = {json.dumps(self.data_sha256)}", "",
                 "[scope.config]"]  # fmt: skip
        lines += [f"{json.dumps(key)} = {json.dumps(value)}" for key, value in self.config.items()]
        return lines + [""]


@dataclass(frozen=True)
class MetricBands:
    """Every band of a bands file, by metric."""

    bands: dict[str, Band]
    source: str = ""
    """Where the bands came from (the report they were written from)."""
    scope: BandScope | None = None
    """What the bands describe; None (a schema-1 file) applies to every run."""

    def to_toml(self, header: str) -> str:
        lines = [f"# {line}".rstrip() for line in header.splitlines()]
        lines += ["", f"schema = {BANDS_SCHEMA}", f"source = {json.dumps(self.source)}", ""]
        if self.scope is not None:
            lines += self.scope.to_toml()
        for metric, band in self.bands.items():
            lines.append(f"[bands.{json.dumps(metric)}]")
            for key in ("low", "high", "mean", "std"):
                lines.append(f"{key} = {getattr(band, key)!r}")
            lines.append(f"samples = {band.samples}")
            lines.append("")
        return "\n".join(lines)


def bands_from_records(records: Iterable[Mapping[str, Any]], source: str, scope: BandScope | None = None) -> MetricBands:
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
    return MetricBands(bands, source, scope)


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
        if key not in ("schema", "source", "scope", "bands"):
            problems.append(f"unknown top-level key {key!r} (vs schema, source, scope, bands)")
    if raw.get("schema") not in (1, BANDS_SCHEMA):
        problems.append(f"schema = {raw.get('schema')!r} (vs 1 or {BANDS_SCHEMA})")
    scope = _read_scope(raw.get("scope"), problems)
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
    return MetricBands(bands, str(raw.get("source", "")), scope)


def _read_scope(table: Any, problems: list[str]) -> BandScope | None:
    if table is None:
        return None
    if not isinstance(table, Mapping):
        problems.append(f"scope is a {type(table).__name__} (vs a table with data, data_sha256, config)")
        return None
    unknown = sorted(set(table) - {"data", "data_sha256", "config"})
    if unknown:
        problems.append(f"unknown scope keys {', '.join(map(repr, unknown))} (vs data, data_sha256, config)")
    data, sha, config = table.get("data"), table.get("data_sha256"), table.get("config")
    if not isinstance(data, str) or not isinstance(sha, str) or not isinstance(config, Mapping):
        problems.append("scope needs data and data_sha256 strings and a config table (vs what the file has)")
        return None
    return BandScope(data, sha, dict(config))


@dataclass(frozen=True)
class BandChoice:
    """Which bands watch a run, and what the run is told about them."""

    bands: MetricBands | None
    path: str
    """The bands file ("" when none)."""
    differences: tuple[str, ...] = ()
    """How the run's scope differs from the bands' (empty: the same scope, or no scope)."""

    @property
    def note(self) -> str | None:
        """One line for the user when the run and the bands' scope differ."""
        if not self.differences:
            return None
        shown = "; ".join(self.differences[:6]) + (f"; … {len(self.differences) - 6} more" if len(self.differences) > 6 else "")
        if self.bands is None:
            return (f"metric bands not applied: {self.path} describes another setting ({shown}) — hint: write bands "
                    f"for this one with `trainer validate --write-bands PATH` and pass --set run.bands=PATH")  # fmt: skip
        return f"metric bands {self.path} applied although this run differs from their scope ({shown})"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "applied": self.bands is not None, "differences": list(self.differences)}


def choose_bands(config: Any, scope: BandScope) -> BandChoice:
    """The bands of a run: ``run.bands`` = "default" → the shipped file of the run's scope
    (``SHIPPED_BANDS_PATHS``; none when no file is, and the run is told how the nearest differs),
    "" → none, a path → that file (always)."""
    choice = config.run.bands
    if not choice:
        return BandChoice(None, "")
    if choice != "default":
        bands = load_bands(choice)
        return BandChoice(bands, choice, tuple(bands.scope.differences(scope)) if bands.scope is not None else ())
    nearest: BandChoice | None = None
    for path in SHIPPED_BANDS_PATHS:
        bands = load_bands(path)
        differences = tuple(bands.scope.differences(scope)) if bands.scope is not None else ()
        if not differences:
            return BandChoice(bands, str(path))
        if nearest is None or len(differences) < len(nearest.differences):
            nearest = BandChoice(None, str(path), differences)
    assert nearest is not None  # SHIPPED_BANDS_PATHS is not empty
    return nearest


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


def band_watcher(choice: BandChoice, patience: int, finished: Iterable[Any] = ()) -> BandWatcher | None:
    """The watcher a run uses (None when no bands apply, see :func:`choose_bands`).

    ``finished``: the HEALTH_DIAG records of the epochs a resumed run has already done (oldest
    first), so its out-of-band streaks continue where the stopped run left them — a resumed run
    stops at the same epoch as an uninterrupted one."""
    if choice.bands is None:
        return None
    watcher = BandWatcher(choice.bands, patience)
    for record in finished:
        watcher.observe(record)
    return watcher
