"""Read-only monitors of the GPU-computed adaptive values (invariant 1: GPU drives, CPU reads).

Why read-only: an adaptive value (τ, γ per branch, ε, Kelly cap, atom support, learning health,
the EMAs) is computed by a kernel and written into the ISV. If host code could also write it, two
writers would race and the value in a checkpoint would depend on who wrote last. A monitor
therefore only *reads* ISV slots: ``read()`` returns the current value, ``observe()`` records it at
an epoch boundary, ``fire_rate()`` says how often it changed between observations (a schedule
fires every epoch by design; a value that never fires is a wiring bug), and ``diagnose()`` returns
the snapshot that HEALTH_DIAG stores. No method of this module writes to the ISV.

The ISV is reached through any object with ``read(name) -> float`` (the ISV bus); nothing here
depends on the device, so monitors run unchanged on the CPU and the GPU path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from trainer.layout import BRANCHES, ISV


class IsvReader(Protocol):
    """The read half of the ISV bus (``trainer.isv.Isv``): a slot's value, a tuple for sub-arrays."""

    def read(self, name: str) -> float | tuple[float, ...]: ...


def read_slot(isv: IsvReader, name: str) -> float:
    """One scalar: ``"TAU"`` or an element of a sub-array, ``"GAMMA[2]"`` (the snapshot's naming)."""
    if name.endswith("]") and "[" in name:
        base, index = name[:-1].split("[", 1)
        values = isv.read(base)
        if not isinstance(values, tuple) or not index.isdigit() or int(index) >= len(values):
            raise KeyError(
                f"ISV element {name!r} does not exist ({base} has "
                f"{len(values) if isinstance(values, tuple) else 1} element(s) vs index {index}) — hint: "
                f"index sub-array slots from 0"
            )
        return float(values[int(index)])
    value = isv.read(name)
    if isinstance(value, tuple):
        raise KeyError(
            f"ISV slot {name!r} is a sub-array ({len(value)} elements vs 1) — hint: name one element, "
            f"e.g. {name}[0]"
        )
    return float(value)


@dataclass
class AdaptiveMonitor:
    """Observer of one adaptive value: ``slots[0]`` is the value, the rest are its components
    (e.g. an atom support's half-width beside its centre); ``context`` names the inputs that
    explain it (progress, health) and is reported, never judged."""

    name: str
    isv: IsvReader
    slots: tuple[str, ...]
    context: tuple[str, ...] = ()
    tolerance: float = 0.0  # a change smaller than this (absolute) does not count as a fire
    _last: tuple[float, ...] | None = field(default=None, init=False, repr=False)
    _observations: int = field(default=0, init=False)
    _fires: int = field(default=0, init=False)
    _history: list[float] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.slots:
            raise ValueError(
                f"monitor '{self.name}' watches no slot (0 vs at least 1) — hint: name the ISV "
                f"slot(s) it reads"
            )
        self._last = self._read_all()  # the bootstrap value: the first change is measured from it

    def _read_all(self) -> tuple[float, ...]:
        return tuple(read_slot(self.isv, slot) for slot in self.slots)

    def read(self) -> float:
        """The adaptive value as the GPU last wrote it."""
        return read_slot(self.isv, self.slots[0])

    def observe(self) -> bool:
        """Record the value at an epoch boundary; True when it changed since the last observation."""
        return self._record(self._read_all())

    def restore(self, baseline: Sequence[float], snapshots: Sequence[Mapping[str, object]]) -> None:
        """Rebuild the observation history of a resumed run from its HEALTH_DIAG snapshots.

        ``baseline``: the watched slots' values when the run started (their layout bootstraps);
        ``snapshots``: this monitor's ``diagnose()`` output of every finished epoch, in order. After
        it, fire statistics continue exactly as if the run had never stopped. Reads the log only.
        """
        self._last, self._observations, self._fires, self._history = tuple(float(v) for v in baseline), 0, 0, []
        for snapshot in snapshots:
            slots = snapshot.get("slots")
            if not isinstance(slots, Mapping) or any(slot not in slots for slot in self.slots):
                raise ValueError(
                    f"monitor '{self.name}' cannot be restored from a snapshot without its slots "
                    f"({sorted(slots) if isinstance(slots, Mapping) else slots!r} vs {list(self.slots)}) — hint: "
                    f"resume with the HEALTH_DIAG log the run wrote"
                )
            self._record(tuple(float(slots[slot]) for slot in self.slots))

    def _record(self, current: tuple[float, ...]) -> bool:
        changed = self._last is not None and any(
            not _same(now, before, self.tolerance) for now, before in zip(current, self._last, strict=True)
        )
        self._observations += 1
        self._fires += int(changed)
        self._last = current
        self._history.append(current[0])
        return changed

    def fire_rate(self) -> float:
        """Fraction of observations at which the value had changed (0 before any observation)."""
        return self._fires / self._observations if self._observations else 0.0

    @property
    def observations(self) -> int:
        return self._observations

    @property
    def history(self) -> list[float]:
        return list(self._history)

    def diagnose(self) -> dict[str, object]:
        """Snapshot for HEALTH_DIAG: value, every watched slot, its context, fire statistics."""
        values = self._read_all()
        return {
            "value": values[0],
            "slots": dict(zip(self.slots, values, strict=True)),
            "context": {slot: read_slot(self.isv, slot) for slot in self.context},
            "fire_rate": self.fire_rate(),
            "observations": self._observations,
            "fires": self._fires,
        }


def _same(now: float, before: float, tolerance: float) -> bool:
    if math.isnan(now) and math.isnan(before):
        return True
    return abs(now - before) <= tolerance


def bootstrap_value(name: str) -> float:
    """The layout bootstrap of one slot or sub-array element (``"GAMMA[2]"``), rounded to f32 as
    the ISV stores it (so it compares equal to what a monitor read at the start of the run)."""
    if name.endswith("]") and "[" in name:
        base, index = name[:-1].split("[", 1)
        value = ISV.slot(base).values()[int(index)]
    else:
        value = ISV.slot(name).values()[0]
    return float(np.float32(value))


@dataclass(frozen=True)
class MonitorSpec:
    """Which slots one monitor reads; the adaptive-value table lives beside the ISV layout names."""

    name: str
    slots: tuple[str, ...]
    context: tuple[str, ...] = ()


class MonitorSet:
    """All monitors of a run, observed together at each epoch boundary."""

    def __init__(self, isv: IsvReader, specs: Sequence[MonitorSpec]) -> None:
        names = [spec.name for spec in specs]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(
                f"duplicate monitor names ({', '.join(duplicates)} vs unique) — hint: one monitor "
                f"per adaptive value"
            )
        self.monitors: dict[str, AdaptiveMonitor] = {
            spec.name: AdaptiveMonitor(spec.name, isv, spec.slots, spec.context) for spec in specs
        }

    def __getitem__(self, name: str) -> AdaptiveMonitor:
        try:
            return self.monitors[name]
        except KeyError:
            raise KeyError(
                f"unknown monitor ({name!r} vs one of {', '.join(self.monitors)}) — hint: monitors "
                f"are named after the adaptive value they watch"
            ) from None

    def __iter__(self):
        return iter(self.monitors.values())

    def __len__(self) -> int:
        return len(self.monitors)

    def restore(self, history: Sequence[Mapping[str, Mapping[str, object]]]) -> None:
        """Replay the ``monitors`` sections of a resumed run's HEALTH_DIAG records (oldest first),
        from the watched slots' layout bootstraps (the values every run starts from)."""
        for name, monitor in self.monitors.items():
            baseline = [bootstrap_value(slot) for slot in monitor.slots]
            monitor.restore(baseline, [snapshot[name] for snapshot in history if name in snapshot])

    def observe_all(self) -> dict[str, bool]:
        return {name: monitor.observe() for name, monitor in self.monitors.items()}

    def diagnose_all(self) -> dict[str, Mapping[str, object]]:
        return {name: monitor.diagnose() for name, monitor in self.monitors.items()}

    def fire_rates(self) -> dict[str, float]:
        return {name: monitor.fire_rate() for name, monitor in self.monitors.items()}


_BRANCH_NAMES = tuple(slot.name.lower() for slot in BRANCHES.slots)
_SCHEDULE_CONTEXT = ("TRAINING_PROGRESS", "LEARNING_HEALTH")

ADAPTIVE_MONITORS: tuple[MonitorSpec, ...] = (
    MonitorSpec("training_progress", ("TRAINING_PROGRESS",), ("EPOCH_INDEX", "TOTAL_EPOCHS")),
    MonitorSpec("tau", ("TAU",), _SCHEDULE_CONTEXT),
    *(MonitorSpec(f"gamma_{name}", (f"GAMMA[{index}]",), ("LEARNING_HEALTH",)) for index, name in enumerate(_BRANCH_NAMES)),
    MonitorSpec("epsilon", ("EPSILON",), _SCHEDULE_CONTEXT),
    MonitorSpec("kelly_cap", ("KELLY_CAP",), ("LEARNING_HEALTH",)),
    *(
        MonitorSpec(f"atom_support_{name}", (f"ATOM_CENTRE[{index}]", f"ATOM_HALF_WIDTH[{index}]"))
        for index, name in enumerate(_BRANCH_NAMES)
    ),
    MonitorSpec("learning_health", ("LEARNING_HEALTH",), ("SHARPE_EMA", "Q_MEAN_DRIFT_EMA", "GRAD_NORM_EMA")),
    MonitorSpec("sharpe_ema", ("SHARPE_EMA",)),
    MonitorSpec("q_mean_drift_ema", ("Q_MEAN_DRIFT_EMA",)),
    MonitorSpec("grad_norm_ema", ("GRAD_NORM_EMA",)),
)
"""One monitor per GPU-computed adaptive value of the ISV (a test checks none is missing)."""


def adaptive_monitors(isv: IsvReader) -> MonitorSet:
    """The run's monitors over its ISV bus."""
    return MonitorSet(isv, ADAPTIVE_MONITORS)
