"""Model selection on the validation window: which epoch's checkpoint a run reports, and when it stops.

Why: a Q-learning agent's out-of-sample quality is not monotone in training time (it can peak and
then decay), so the network a run reports must be chosen on bars it did not train on — and not on
the test bars, which score the choice once at the end. After every epoch the greedy validation
backtest's ``run.select`` metric is compared with the best so far; a strict improvement makes
this epoch the selected one (ties keep the earlier epoch, so the choice is deterministic), and
``run.patience`` epochs without one stop the run early. ``select = "last"`` keeps the last epoch
(the behaviour before selection existed, kept for ablations). ``select = "timing_sharpe_ratio"``
scores the Sharpe ratio less what a constant position at the policy's mean exposure earned
(``trainer.eval.backtest.timing_sharpe_ratio``), so the validation window's own drift cannot
choose the epoch. ``select = "sharpe_lower_bound"`` scores the Sharpe ratio less 1.645 of its standard
errors (``trainer.eval.metrics.sharpe_lower_bound``): an epoch that never trades scores 0, so one
that trades is chosen over it only if its gain is unlikely to be the window's luck.

The selection's whole state is a small JSON-ready dict stored in every checkpoint manifest, so a
resumed run continues the same comparison and stops at the same epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

SELECT_LAST = "last"
SELECTABLE_METRICS = ("sharpe_ratio", "timing_sharpe_ratio", "sharpe_lower_bound", "sortino_ratio", "annual_return", SELECT_LAST)


def criterion_value(report: dict[str, Any], metric: str) -> float:
    """The agent's ``metric`` in a backtest report; an undefined value (a policy that never trades
    has no Sharpe ratio) counts as 0 — the score of staying flat — and a non-finite one as −inf."""
    value = report.get("agent", {}).get(metric)
    if value is None:
        return 0.0
    value = float(value)
    return value if math.isfinite(value) else -math.inf


def scored_metric(select: str) -> str:
    """The report metric ``run.select`` compares: itself, or the Sharpe ratio for "last" (which keeps
    the last epoch but still records a score)."""
    return "sharpe_ratio" if select == SELECT_LAST else select


@dataclass
class ModelSelection:
    """Best validation score so far, its epoch, and the patience counter."""

    metric: str
    patience: int = 0
    best_value: float | None = None
    best_epoch: int | None = None
    best_step: int | None = None
    best_report: dict[str, Any] = field(default_factory=dict)
    epochs_seen: int = 0
    epochs_since_best: int = 0
    curve: list[dict[str, Any]] = field(default_factory=list)  # per epoch: epoch, step, train and validation score

    def observe(self, epoch: int, step: int, validation: dict[str, Any], training: dict[str, Any]) -> bool:
        """Record one epoch's validation (and training-window) report; True when it becomes the selected one."""
        metric = scored_metric(self.metric)
        value = criterion_value(validation, metric)
        self.curve.append({
            "epoch": epoch, "step": step, "validation": value, "training": criterion_value(training, metric),
        })  # fmt: skip
        self.epochs_seen += 1
        improved = self.best_value is None or self.metric == SELECT_LAST or value > self.best_value
        if improved:
            self.best_value, self.best_epoch, self.best_step = value, epoch, step
            self.best_report = validation
            self.epochs_since_best = 0
        else:
            self.epochs_since_best += 1
        return improved

    @property
    def should_stop(self) -> bool:
        """Early stopping: ``patience`` epochs in a row without a better validation score."""
        return self.patience > 0 and self.metric != SELECT_LAST and self.epochs_since_best >= self.patience

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "patience": self.patience, "best_value": _finite(self.best_value),
            "best_epoch": self.best_epoch, "best_step": self.best_step, "best_report": self.best_report,
            "epochs_seen": self.epochs_seen, "epochs_since_best": self.epochs_since_best,
            "curve": [{key: _finite(value) for key, value in point.items()} for point in self.curve],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any], metric: str, patience: int) -> ModelSelection:
        """Continue a stored selection (a checkpoint's); the metric and patience come from the config,
        which resume has already checked against the stored one."""
        best = data.get("best_value")
        return cls(
            metric=metric,
            patience=patience,
            best_value=None if data.get("best_epoch") is None else (-math.inf if best is None else float(best)),
            best_epoch=data.get("best_epoch"),
            best_step=data.get("best_step"),
            best_report=dict(data.get("best_report") or {}),
            epochs_seen=int(data.get("epochs_seen", 0)),
            epochs_since_best=int(data.get("epochs_since_best", 0)),
            curve=[dict(point) for point in data.get("curve", [])],
        )

    def summary(self, *, stopped_early: bool) -> dict[str, Any]:
        """The ``selection`` block of metrics.json."""
        return {
            "criterion": f"validation {self.metric}" if self.metric != SELECT_LAST else "last epoch",
            "epoch": self.best_epoch, "step": self.best_step, "value": _finite(self.best_value),
            "epochs_run": self.epochs_seen, "patience": self.patience, "stopped_early": stopped_early,
        }  # fmt: skip


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
