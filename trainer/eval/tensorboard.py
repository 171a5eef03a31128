"""TensorBoard scalars mirrored from HEALTH_DIAG records (``trainer train --tensorboard``).

Why a mirror: HEALTH_DIAG (``health_diag.jsonl``) stays the source of truth — validated, one line
per epoch, what ``trainer diag`` and resume read. Users of CleanRL and Stable-Baselines3 watch runs
in TensorBoard, so every record the log accepts is also written as scalars, at the record's
training step, under ``RUN_DIR/tensorboard``: ``losses/…``, ``grad_norms/global``,
``validation/<strategy>/<metric>``, ``adaptive/<monitor>`` (the GPU-computed values) and
``actions/<branch>/<choice>`` (shares of the epoch's actions). The ``tensorboard`` package is
optional (the ``tensorboard`` extra); asking for the mirror without it is a user error.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from trainer.errors import UserError

TENSORBOARD_DIRNAME = "tensorboard"


def require_tensorboard() -> None:
    """A UserError unless the optional ``tensorboard`` package is importable."""
    try:
        import tensorboard  # noqa: F401  (only whether it imports matters here)
    except ImportError as error:
        raise UserError(
            "TensorBoard is not installed", got="--tensorboard without the tensorboard package",
            expected="the package installed", hint="python3 -m pip install 'foxhunt[tensorboard]' (or drop --tensorboard)",
        ) from error  # fmt: skip


def _numbers(prefix: str, section: Any) -> Iterator[tuple[str, float]]:
    """(tag, value) of every finite number in a nested section (None and strings are skipped)."""
    if isinstance(section, Mapping):
        for key, value in section.items():
            yield from _numbers(f"{prefix}/{key}", value)
    elif isinstance(section, (int, float)) and not isinstance(section, bool) and math.isfinite(section):
        yield prefix, float(section)


def record_scalars(record: Mapping[str, Any]) -> dict[str, float]:
    """The scalars of one HEALTH_DIAG record, by TensorBoard tag."""
    scalars: dict[str, float] = dict(_numbers("losses", record.get("losses", {})))
    grad_norms = record.get("grad_norms", {})
    if isinstance(grad_norms, Mapping) and "global" in grad_norms:
        scalars.update(_numbers("grad_norms/global", grad_norms["global"]))
    scalars.update(_numbers("validation", record.get("validation", {})))
    for name, monitor in record.get("monitors", {}).items():
        scalars.update(_numbers(f"adaptive/{name}", monitor.get("value") if isinstance(monitor, Mapping) else None))
    scalars.update(_numbers("actions", record.get("actions", {})))
    return scalars


class TensorBoardMirror:
    """Writes each HEALTH_DIAG record's scalars to TensorBoard event files (``torch.utils.tensorboard``)."""

    def __init__(self, run_dir: str | Path) -> None:
        require_tensorboard()
        from torch.utils.tensorboard import SummaryWriter

        self.directory = Path(run_dir) / TENSORBOARD_DIRNAME
        self._writer = SummaryWriter(log_dir=str(self.directory))

    def write(self, record: Mapping[str, Any]) -> None:
        step = int(record["step"])
        for tag, value in record_scalars(record).items():
            self._writer.add_scalar(tag, value, global_step=step)
        self._writer.flush()  # an epoch's scalars are visible as soon as its HEALTH_DIAG line is

    def close(self) -> None:
        self._writer.close()
