"""HEALTH_DIAG: one JSON-lines record per epoch — the trainer's audit trail.

Why a fixed schema: ``trainer diag``, the fold driver, the learning benchmark and humans reading a
run directory all consume the same file. A record that drifts (a missing section, a string where a
number belongs) would silently blank a plot, so the writer validates every record before it reaches
disk and the reader names the file and line of anything it cannot trust.

Record (``SCHEMA_VERSION`` = 2), every section present, numbers are finite-or-null floats::

    {
      "schema": 1,
      "epoch": 3,                      # 0-based epoch index within the run (across folds)
      "fold": 0,                       # walk-forward fold index, null for a single-window run
      "step": 12000,                   # optimizer steps taken so far
      "wall_time_s": 41.7,             # seconds since the run started
      "losses": {"c51": {"direction": .., "magnitude": .., "order_type": .., "urgency": ..},
                 "iqn": .., "cql": .., "return": .., "total": ..},
      "grad_norms": {"global": ..,                             # epoch mean of the step's norm
                     "c51": {"direction": {"trunk": .., "direction": .., "magnitude": ..,
                                           "order_type": .., "urgency": .., "iqn_head": ..,
                                           "return_head": ..}, ...},
                     "iqn": {"trunk": .., "direction": .., ..., "iqn_head": .., "return_head": ..},
                     "cql": {...},                             # cql only when CQL α > 0
                     "return": {...}},                         # return only when loss.return_weight > 0
      "isv": {"tau": .., "gamma_direction": .., ...},           # every ISV slot by name
      "monitors": {"tau": {"value": .., "fire_rate": .., ...}}, # AdaptiveMonitor.diagnose()
      "actions": {"direction": {"short": .., "hold": .., ...}, ...},  # fractions per branch
      "validation": {"agent": {"sharpe_ratio": .., ...}, ...},   # greedy backtest, validation window
      "training": {"agent": {"sharpe_ratio": .., ...}},         # the same on the training window's tail
      "termination": {"metric": .., "values": [..], "band": [lo, hi], ...}  # only on the epoch
    }                                                           # a metric band stopped the run

``losses`` nests component → branch → float. ``grad_norms`` holds ``global`` (the mean over the
epoch of the norm the optimizer step saw, before clipping) and, per loss component, the L2 norm of
that component's weighted gradient on the epoch's last replay batch split into parameter groups
(``trunk`` = temporal encoder + shared MLP, one group per branch head, ``iqn_head`` = the shared τ
embedding): component → group → float for ``iqn`` and ``cql``, component → branch → group → float
for ``c51`` (see ``trainer.train.grad_diag``); a group a component does not reach reads 0. ``actions``
is branch → sub-action → fraction; ``validation`` is metric → float or a nested group such as
``{"agent": {...}, "buy_and_hold": {...}}``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trainer.errors import UserError

SCHEMA_VERSION = 2
HEALTH_DIAG_FILENAME = "health_diag.jsonl"


def silent_monitors(monitors: Mapping[str, Any]) -> list[str]:
    """Names of the adaptive monitors in a record's ``monitors`` section whose fire rate is 0 or
    missing: values that never changed over the run (invariant 2 — a mechanism whose value never
    moves is a wiring bug). Read from a run's last record, whose fire rate covers the whole run."""
    silent = []
    for name, snapshot in monitors.items():
        rate = snapshot.get("fire_rate") if isinstance(snapshot, Mapping) else None
        if not isinstance(rate, int | float) or isinstance(rate, bool) or not math.isfinite(rate) or rate == 0:
            silent.append(name)
    return silent


REQUIRED_SECTIONS: tuple[str, ...] = (
    "losses",
    "grad_norms",
    "isv",
    "monitors",
    "actions",
    "validation",
    "training",
)


class HealthDiagError(UserError, ValueError):
    """A HEALTH_DIAG record or file that does not follow the schema."""


NestedFloats = dict[str, Any]


@dataclass
class HealthDiagRecord:
    """One epoch of diagnostics; ``to_dict`` is exactly what lands on one line of the log."""

    epoch: int
    fold: int | None = None
    step: int = 0
    wall_time_s: float = 0.0
    losses: NestedFloats = field(default_factory=dict)
    grad_norms: NestedFloats = field(default_factory=dict)
    isv: dict[str, float] = field(default_factory=dict)
    monitors: NestedFloats = field(default_factory=dict)
    actions: NestedFloats = field(default_factory=dict)
    validation: NestedFloats = field(default_factory=dict)
    training: NestedFloats = field(default_factory=dict)
    termination: NestedFloats | None = None
    """Set on the last epoch of a run its metric bands stopped (``TerminationReason.to_dict()``)."""

    def to_dict(self) -> dict[str, Any]:
        record = {
            "schema": SCHEMA_VERSION,
            "epoch": self.epoch,
            "fold": self.fold,
            "step": self.step,
            "wall_time_s": self.wall_time_s,
            "losses": _clean(self.losses),
            "grad_norms": _clean(self.grad_norms),
            "isv": _clean(self.isv),
            "monitors": _clean(self.monitors),
            "actions": _clean(self.actions),
            "validation": _clean(self.validation),
            "training": _clean(self.training),
        }
        if self.termination is not None:
            record["termination"] = _clean(self.termination)
        validate_record(record)
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> HealthDiagRecord:
        validate_record(record)
        return cls(
            epoch=int(record["epoch"]),
            fold=None if record["fold"] is None else int(record["fold"]),
            step=int(record["step"]),
            wall_time_s=float(record["wall_time_s"]),
            losses=dict(record["losses"]),
            grad_norms=dict(record["grad_norms"]),
            isv=dict(record["isv"]),
            monitors=dict(record["monitors"]),
            actions=dict(record["actions"]),
            validation=dict(record["validation"]),
            training=dict(record["training"]),
            termination=dict(record["termination"]) if record.get("termination") is not None else None,
        )


def _clean(value: Any) -> Any:
    """Turn tensors/numpy scalars into floats and NaN/inf into null so the line is valid JSON."""
    if isinstance(value, Mapping):
        return {str(key): _clean(item) for key, item in value.items()}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if hasattr(value, "item") and callable(value.item):
        value = value.item()  # a 0-d tensor or numpy scalar read once per epoch (cold path)
    if isinstance(value, (list, tuple)):
        return [_clean(item) for item in value]
    number = float(value)
    return number if math.isfinite(number) else None


def _check_leaves(section: str, value: Any, depth: int, where: str) -> None:
    if isinstance(value, Mapping):
        if depth > 3:
            raise HealthDiagError(
                f"HEALTH_DIAG section '{section}' nests too deep at '{where}' (depth {depth} vs at "
                f"most 3) — hint: flatten it to component → branch → value"
            )
        for key, item in value.items():
            if not isinstance(key, str):
                raise HealthDiagError(
                    f"HEALTH_DIAG key in '{section}' is not a string ({key!r} vs str) — hint: name "
                    f"every entry"
                )
            _check_leaves(section, item, depth + 1, f"{where}.{key}" if where else key)
        return
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and not math.isfinite(value):
            raise HealthDiagError(
                f"HEALTH_DIAG value '{section}.{where}' is not finite ({value} vs a finite float "
                f"or null) — hint: write null for an undefined value"
            )
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check_leaves(section, item, depth + 1, f"{where}[{index}]")
        return
    raise HealthDiagError(
        f"HEALTH_DIAG value '{section}.{where}' has type {type(value).__name__} (vs number, "
        f"string, null or mapping) — hint: convert tensors with float() before recording"
    )


def validate_record(record: Mapping[str, Any]) -> None:
    """Raise ``HealthDiagError`` naming the first problem; the writer and reader share it."""
    if not isinstance(record, Mapping):
        raise HealthDiagError(
            f"HEALTH_DIAG record is a {type(record).__name__} (vs a JSON object) — hint: write one "
            f"object per line"
        )
    schema = record.get("schema")
    if schema != SCHEMA_VERSION:
        raise HealthDiagError(
            f"HEALTH_DIAG schema version mismatch ({schema!r} vs {SCHEMA_VERSION}) — hint: read it "
            f"with the trainer version that wrote it, or re-run training"
        )
    missing = [key for key in ("epoch", "fold", "step", "wall_time_s", *REQUIRED_SECTIONS) if key not in record]
    if missing:
        raise HealthDiagError(
            f"HEALTH_DIAG record lacks {', '.join(missing)} (vs all of epoch, fold, step, "
            f"wall_time_s, {', '.join(REQUIRED_SECTIONS)}) — hint: build records with "
            f"HealthDiagRecord"
        )
    if not isinstance(record["epoch"], int) or isinstance(record["epoch"], bool) or record["epoch"] < 0:
        raise HealthDiagError(
            f"HEALTH_DIAG epoch is invalid ({record['epoch']!r} vs an integer ≥ 0) — hint: pass the "
            f"0-based epoch index"
        )
    if record["fold"] is not None and (not isinstance(record["fold"], int) or record["fold"] < 0):
        raise HealthDiagError(
            f"HEALTH_DIAG fold is invalid ({record['fold']!r} vs null or an integer ≥ 0) — hint: "
            f"pass the fold index or None"
        )
    for section in REQUIRED_SECTIONS:
        value = record[section]
        if not isinstance(value, Mapping):
            raise HealthDiagError(
                f"HEALTH_DIAG section '{section}' is a {type(value).__name__} (vs a JSON object) — "
                f"hint: pass a dict, empty if there is nothing to report"
            )
        _check_leaves(section, value, 1, "")
    _check_grad_norms(record["grad_norms"])


GRAD_NORM_COMPONENTS: dict[str, int] = {"c51": 2, "iqn": 1, "cql": 1, "return": 1}  # component → mapping levels above the norms


def _check_grad_norms(section: Mapping[str, Any]) -> None:
    """``global`` is one number; each component is (branch →) group → number, per the schema."""
    for key, value in section.items():
        levels = 0 if key == "global" else GRAD_NORM_COMPONENTS.get(key)
        if levels is None:
            raise HealthDiagError(
                f"HEALTH_DIAG grad_norms has an unknown component ({key!r} vs global, "
                f"{', '.join(GRAD_NORM_COMPONENTS)}) — hint: name components as the losses section does"
            )
        _check_grad_norm_depth(key, value, levels)


def _check_grad_norm_depth(where: str, value: Any, levels: int) -> None:
    if levels == 0:
        if isinstance(value, bool) or not (value is None or isinstance(value, (int, float))):
            raise HealthDiagError(
                f"HEALTH_DIAG grad_norms.{where} is not a norm ({type(value).__name__} vs a number or "
                f"null) — hint: component → (branch →) group → norm"
            )
        return
    if not isinstance(value, Mapping):
        raise HealthDiagError(
            f"HEALTH_DIAG grad_norms.{where} is not a mapping ({type(value).__name__} vs "
            f"{levels} more level(s) of names) — hint: component → (branch →) group → norm"
        )
    for key, item in value.items():
        _check_grad_norm_depth(f"{where}.{key}", item, levels - 1)


class DiagMirror(Protocol):
    """Something that shows HEALTH_DIAG records elsewhere (the JSON lines stay the source of truth)."""

    def write(self, record: Mapping[str, Any]) -> None: ...


class HealthDiagWriter:
    """Appends one validated line per epoch; each line is written whole and flushed, so a killed
    run leaves every finished epoch readable."""

    def __init__(self, path: str | os.PathLike[str], mirrors: Sequence[DiagMirror] = ()) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.mirrors = tuple(mirrors)  # e.g. TensorBoard scalars; they get each record once it is on disk

    def write(self, record: HealthDiagRecord | Mapping[str, Any]) -> dict[str, Any]:
        payload = record.to_dict() if isinstance(record, HealthDiagRecord) else _clean(dict(record))
        validate_record(payload)
        line = json.dumps(payload, sort_keys=False, allow_nan=False) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:  # a failed write() names no file; the user needs to know which
            raise OSError(error.errno, error.strerror, str(self.path)) from error
        for mirror in self.mirrors:
            mirror.write(payload)
        return payload


def resolve_log_path(run_dir_or_file: str | os.PathLike[str]) -> Path:
    """Accept a run directory or the log file itself."""
    path = Path(run_dir_or_file)
    if path.is_dir():
        path = path / HEALTH_DIAG_FILENAME
    if not path.exists():
        raise HealthDiagError(
            f"HEALTH_DIAG log not found ({path} vs an existing {HEALTH_DIAG_FILENAME}) — hint: pass "
            f"the --out directory of a `trainer train` run"
        )
    return path


def iter_health_diag(run_dir_or_file: str | os.PathLike[str]) -> Iterator[HealthDiagRecord]:
    path = resolve_log_path(run_dir_or_file)
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                payload = json.loads(line)
            except json.JSONDecodeError as error:
                raise HealthDiagError(
                    f"HEALTH_DIAG line is not JSON ({path}:{line_number}: {error.msg} vs one JSON "
                    f"object per line) — hint: the run may have been killed mid-write; delete "
                    f"that line"
                ) from error
            try:
                yield HealthDiagRecord.from_dict(payload)
            except HealthDiagError as error:
                raise HealthDiagError(f"{path}:{line_number}: {error}") from error


def read_health_diag(run_dir_or_file: str | os.PathLike[str]) -> list[HealthDiagRecord]:
    records = list(iter_health_diag(run_dir_or_file))
    if not records:
        raise HealthDiagError(
            f"HEALTH_DIAG log is empty ({resolve_log_path(run_dir_or_file)} vs at least one "
            f"record) — hint: let the run finish at least one epoch"
        )
    return records


def flatten(section: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """``{"c51": {"direction": 1.0}}`` → ``{"c51.direction": 1.0}``; non-numbers are dropped."""
    flat: dict[str, float] = {}
    for key, value in section.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            flat.update(flatten(value, name))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[name] = float(value)
    return flat


def series(records: Iterable[HealthDiagRecord], section: str) -> dict[str, list[float | None]]:
    """Per flattened key of one section, the value at every epoch (None where a record lacks it)."""
    records = list(records)
    if section not in REQUIRED_SECTIONS:
        raise HealthDiagError(
            f"unknown HEALTH_DIAG section ({section!r} vs one of {', '.join(REQUIRED_SECTIONS)}) — "
            f"hint: pick a section from the schema"
        )
    flats = [flatten(getattr(record, section)) for record in records]
    keys: list[str] = []
    for flat in flats:
        keys.extend(key for key in flat if key not in keys)
    return {key: [flat.get(key) for flat in flats] for key in keys}
