"""Run directories: where a run writes, what it refuses, and which checkpoint a resume continues.

Why a gate before training: a run directory holds the only copy of a run's results, so the
trainer must never mix two runs in one directory or overwrite a finished one by accident, and a
mistake the file system can reveal (a read-only directory, a missing checkpoint, a resume with
another config) must surface before the first step rather than after an hour of training.

Rules (``open_run_directory``):

* A new run needs a new or empty directory (empty subdirectories allowed); one holding files is refused unless ``--resume``
  (continue it) or ``--overwrite`` (remove the trainer's own outputs first; other files stay).
* Without ``--out`` the directory is ``runs/<UTC timestamp>``, created with ``mkdir`` (atomic: of
  two runs started in the same second, one gets ``<timestamp>-2``).
* A resume continues the newest complete checkpoint, or the one ``--resume-from`` names, says
  which, removes the checkpoints after it (another history: a later resume must not pick them)
  and cuts ``health_diag.jsonl`` back to the checkpoint's step, so no epoch appears twice.
* A resume runs the config stored in the run directory; a config that differs in anything but
  the settings that cannot change results (``run.steps``, which may only grow,
  ``run.keep_checkpoints``, ``run.checkpoint_minutes``) is refused with every difference listed.
* A population (``run.agents`` > 1) resumes every ``agent-KK/`` from its own newest checkpoint,
  each rewound like a single run's; ``--resume-from`` is refused (it names one agent's checkpoint).
* Before training, the directory, ``checkpoints/`` and ``plots/`` are probed with a real write.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import count
from pathlib import Path
from typing import Any

from trainer.config import TrainConfig, agent_config, config_from_mapping, load_config
from trainer.errors import UserError, os_error_help
from trainer.eval.diag import DIAG_DIRNAME
from trainer.eval.health_diag import HEALTH_DIAG_FILENAME, iter_health_diag
from trainer.eval.tensorboard import TENSORBOARD_DIRNAME
from trainer.files import write_text_atomic
from trainer.train.checkpoint import (
    CHECKPOINT_PREFIX,
    MANIFEST_SUFFIX,
    TENSORS_SUFFIX,
    CheckpointError,
    latest_checkpoint,
    read_manifest,
)
from trainer.train.loop import (
    AGENT_DIR_PREFIX,
    BEST_CHECKPOINT,
    CHECKPOINT_DIRNAME,
    CONFIG_FILENAME,
    METRICS_FILENAME,
    PLOTS_DIRNAME,
    agent_dirname,
)

DEFAULT_RUNS_ROOT = Path("runs")
# Everything `trainer train` / `trainer diag` write into a run directory (what --overwrite removes).
TRAINER_OUTPUTS = (
    CONFIG_FILENAME, HEALTH_DIAG_FILENAME, METRICS_FILENAME, CHECKPOINT_DIRNAME, PLOTS_DIRNAME, DIAG_DIRNAME,
    TENSORBOARD_DIRNAME,
)  # fmt: skip
# Settings a resume may change: they decide how long the run is and what is kept, not what a step computes.
RESUMABLE_CHANGES = frozenset({("run", "steps"), ("run", "keep_checkpoints"), ("run", "checkpoint_minutes")})


@dataclass(frozen=True)
class RunDirectory:
    """A run directory checked for the run about to start (``resume_from`` set when resuming)."""

    path: Path
    config: TrainConfig | None
    resume_from: Path | None = None
    notes: list[str] = field(default_factory=list)  # what the gate did, one line each, for the user


def new_run_directory(root: Path = DEFAULT_RUNS_ROOT, now: datetime | None = None) -> Path:
    """Create ``root/<UTC timestamp>`` (or ``-2``, ``-3`` … when taken) and return it.

    ``mkdir`` either creates the directory or fails because it exists, so two processes can never
    both believe they own the same one.
    """
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    for attempt in count(1):
        candidate = root / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise AssertionError("unreachable: count() never ends")


def probe_writable(directory: Path) -> None:
    """Create ``directory`` and write (then remove) a file in it; a UserError naming it if either fails."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=directory, prefix=".write-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        expected, hint = os_error_help(error)
        raise UserError(
            "run directory is not writable", got=f"{directory}: {error.strerror}", expected=expected,
            hint=f"{hint} (pass another --out)",
        ) from error


def config_differences(stored: TrainConfig, requested: TrainConfig) -> list[str]:
    """``section.key: stored vs requested`` for every setting a resume may not change."""
    before, after = stored.to_dict(), requested.to_dict()
    differences = []
    for section, values in after.items():
        for key, value in values.items():
            old = before.get(section, {}).get(key)
            if old == value:
                continue
            if (section, key) == ("run", "steps") and isinstance(old, int) and value > old:
                continue
            if (section, key) in RESUMABLE_CHANGES - {("run", "steps")}:
                continue
            suffix = " (run.steps may only grow)" if (section, key) == ("run", "steps") else ""
            differences.append(f"{section}.{key}: {old!r} in the run vs {value!r} now{suffix}")
    return differences


def stored_config(run_dir: Path, manifest: dict[str, Any]) -> TrainConfig:
    """The config the run was started with: its ``config.toml``, else the checkpoint's copy."""
    path = run_dir / CONFIG_FILENAME
    if path.exists():
        return load_config(path, stored=True)
    return config_from_mapping(manifest.get("config", {}), source=f"the checkpoint's config ({run_dir})", stored=True)


def checkpoint_manifest(path: Path) -> Path:
    """A checkpoint named by either of its files (the manifest or the tensors)."""
    if path.name.endswith(TENSORS_SUFFIX):
        path = path.with_suffix(MANIFEST_SUFFIX)
    if not path.is_file():
        raise CheckpointError(
            "checkpoint not found", got=str(path), expected=f"a {CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX} manifest file",
            hint=f"pass one of the manifests in RUN_DIR/{CHECKPOINT_DIRNAME}/",
        )  # fmt: skip
    return path


def _checkpoint_step(path: Path) -> int | None:
    digits = path.name.removeprefix(CHECKPOINT_PREFIX).split(".")[0]
    return int(digits) if path.name.startswith(CHECKPOINT_PREFIX) and digits.isdigit() else None


def _remove_later_checkpoints(checkpoints: Path, step: int) -> list[str]:
    """Delete every checkpoint file after ``step`` (complete or not), the selected-epoch ``best``
    one too when it was chosen after ``step``; returns their names."""
    removed = []
    for path in sorted(checkpoints.glob(f"{CHECKPOINT_PREFIX}*")):
        later = _checkpoint_step(path)
        if later is not None and later > step:
            path.unlink()
            removed.append(path.name)
    best = checkpoints / f"{BEST_CHECKPOINT}{MANIFEST_SUFFIX}"
    if best.exists() and int(json.loads(best.read_text(encoding="utf-8")).get("steps_done", 0)) > step:
        for path in (best, best.with_suffix(TENSORS_SUFFIX)):
            path.unlink(missing_ok=True)
            removed.append(path.name)
    return removed


def _cut_health_diag(run_dir: Path, step: int) -> int:
    """Keep the HEALTH_DIAG lines of epochs that ended at or before ``step``; returns how many went."""
    path = run_dir / HEALTH_DIAG_FILENAME
    if not path.exists():
        return 0
    records = list(iter_health_diag(path))
    kept = [record for record in records if record.step <= step]
    if len(kept) < len(records):
        text = "".join(json.dumps(record.to_dict(), allow_nan=False) + "\n" for record in kept)
        write_text_atomic(path, text)
    return len(records) - len(kept)


def _holds_files(path: Path) -> bool:
    """Whether anything but empty directories is inside (empty ``checkpoints/`` made ahead lose nothing)."""
    return any(not entry.is_dir() or entry.is_symlink() for entry in path.rglob("*"))


def _refuse_non_empty(path: Path) -> None:
    entries = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in path.iterdir())
    shown = ", ".join(entries[:4]) + (f" and {len(entries) - 4} more" if len(entries) > 4 else "")
    raise UserError(
        "run directory is not empty", got=f"{path} holds {shown}", expected="a new or empty directory",
        hint=f"continue that run with --resume --out {path}, replace it with --overwrite, or pass another --out",
    )  # fmt: skip


FOLD_DIR_GLOB = "fold-[0-9][0-9]"  # a walk-forward run's fold directories (each a complete run directory)
AGENT_DIR_GLOB = f"{AGENT_DIR_PREFIX}[0-9][0-9]*"  # a population's agent directories (each a complete run directory)


def _overwrite(path: Path) -> list[str]:
    removed = []
    nested = sorted(entry.name for pattern in (FOLD_DIR_GLOB, AGENT_DIR_GLOB) for entry in path.glob(pattern))
    for name in (*TRAINER_OUTPUTS, *nested):
        target = path / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        else:
            continue
        removed.append(name)
    return removed


def _resumed_directory(path: Path, stored: TrainConfig) -> Path:
    """The directory whose checkpoints a resume continues: the run's own, or for a walk-forward run
    the last fold directory that holds a checkpoint (earlier folds are finished)."""
    if stored.data.folds == 0:
        return path
    started = [fold for fold in sorted(path.glob(FOLD_DIR_GLOB)) if any((fold / CHECKPOINT_DIRNAME).glob(f"{CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX}"))]
    return started[-1] if started else path / "fold-00"


def _prepare_resume(path: Path, config: TrainConfig, resume_from: Path | None) -> RunDirectory:
    if (path / CONFIG_FILENAME).exists():
        differences = config_differences(load_config(path / CONFIG_FILENAME, stored=True), config)
        if differences:
            _refuse_differences(path, differences)
    if config.run.agents > 1:
        return _prepare_population_resume(path, config, resume_from)
    run_dir = _resumed_directory(path, config)
    if resume_from is not None and run_dir != path:
        raise UserError(
            "--resume-from applies to single-split runs", got=f"a walk-forward run ({config.data.folds} folds)",
            expected="--resume (each fold continues from its own newest checkpoint)", hint=f"use --resume --out {path}",
        )  # fmt: skip
    checkpoints = run_dir / CHECKPOINT_DIRNAME
    manifest_path = checkpoint_manifest(resume_from) if resume_from is not None else latest_checkpoint(checkpoints)
    if manifest_path.resolve().parent != checkpoints.resolve():
        raise UserError(
            "checkpoint is not one of this run's", got=str(manifest_path), expected=f"a manifest in {checkpoints}",
            hint="pass --resume-from a checkpoint of the --out run (or omit --out: it is taken from the checkpoint)",
        )  # fmt: skip
    manifest = read_manifest(manifest_path)
    if manifest.get("only"):
        raise UserError(
            "checkpoint cannot be resumed", got=f"{manifest_path} holds only the selected network",
            expected=f"a periodic {CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX} checkpoint", hint="pass one of the step-* manifests",
        )  # fmt: skip
    if not (path / CONFIG_FILENAME).exists():  # a run directory without its config.toml: the checkpoint keeps a copy
        differences = config_differences(stored_config(path, manifest), config)
        if differences:
            _refuse_differences(path, differences)
    return RunDirectory(path, config, manifest_path, _rewind(run_dir, manifest_path, manifest))


def _rewind(run_dir: Path, manifest_path: Path, manifest: dict[str, Any]) -> list[str]:
    """Take a run directory back to the checkpoint a resume continues; returns the notes."""
    step, epoch = int(manifest["steps_done"]), int(manifest["epoch"])
    notes = [f"resuming from {manifest_path} (step {step:,}, {epoch} epoch{'s' if epoch != 1 else ''} finished)"]
    removed = _remove_later_checkpoints(run_dir / CHECKPOINT_DIRNAME, step)
    if removed:
        notes.append(f"removed the checkpoint files after step {step:,}: {', '.join(removed)}")
    dropped = _cut_health_diag(run_dir, step)
    if dropped:
        notes.append(f"{HEALTH_DIAG_FILENAME}: dropped {dropped} record{'s' if dropped != 1 else ''} after step {step:,}")
    return notes


def _prepare_population_resume(path: Path, config: TrainConfig, resume_from: Path | None) -> RunDirectory:
    """A population resumes every agent from its own newest checkpoint (each agent directory is
    rewound like a single run's); ``--resume-from`` names one checkpoint, so it is refused here."""
    if resume_from is not None:
        raise UserError(
            "--resume-from applies to single runs", got=f"a population ({config.run.agents} agents)",
            expected="--resume (each agent continues from its own newest checkpoint)",
            hint=f"use --resume --out {path}, or resume one agent as a single run: --resume-from {path}/agent-KK/checkpoints/…",
        )  # fmt: skip
    notes: list[str] = []
    for agent in range(config.run.agents):
        agent_root = path / agent_dirname(agent)
        run_dir = _resumed_directory(agent_root, agent_config(config, agent))
        manifest_path = latest_checkpoint(run_dir / CHECKPOINT_DIRNAME)
        notes.extend(f"{agent_root.name}: {note}" for note in _rewind(run_dir, manifest_path, read_manifest(manifest_path)))
    return RunDirectory(path, config, None, notes)


def _refuse_differences(path: Path, differences: list[str]) -> None:
    raise UserError(
        "resume config differs from the run's", got="; ".join(differences), expected=f"the config in {path / CONFIG_FILENAME}",
        hint="resume without --config (the run's own config is used) or start a new run with another --out",
    )  # fmt: skip


def run_directory_of(checkpoint: Path) -> Path:
    """The run directory a checkpoint belongs to (``RUN_DIR/checkpoints/step-….json``)."""
    manifest = checkpoint_manifest(checkpoint)
    if manifest.parent.name != CHECKPOINT_DIRNAME:
        raise UserError(
            "cannot tell which run the checkpoint belongs to", got=str(manifest),
            expected=f"RUN_DIR/{CHECKPOINT_DIRNAME}/{manifest.name}", hint="pass --out RUN_DIR as well",
        )  # fmt: skip
    return manifest.parent.parent


def open_run_directory(
    out: str | Path | None,
    config: TrainConfig | Callable[[Path | None], TrainConfig] | None = None,
    *,
    resume: bool = False,
    resume_from: str | Path | None = None,
    overwrite: bool = False,
    subdirectories: tuple[str, ...] = (CHECKPOINT_DIRNAME, PLOTS_DIRNAME),
) -> RunDirectory:
    """Check (and create) the run directory for a new run or a resume; see the module docstring.

    ``config`` may be a function of the run directory to resume (``None`` for a new run): the CLI
    builds a resume's config on top of the one stored there. A resume needs one (it compares
    it with the stored one). ``subdirectories`` are probed for writability with the directory.
    """
    if resume and overwrite:
        raise UserError("--resume and --overwrite contradict each other", got="both", expected="one of them",
                        hint="--resume continues the run, --overwrite replaces it")  # fmt: skip
    checkpoint = Path(resume_from) if resume_from is not None else None
    resume = resume or checkpoint is not None
    if resume:
        if out is None and checkpoint is None:
            raise UserError("--resume needs the run to continue", got="no --out", expected="--out RUN_DIR",
                            hint="pass the run directory of the stopped run")  # fmt: skip
        path = Path(out) if out is not None else run_directory_of(checkpoint)  # type: ignore[arg-type]
        if not path.is_dir():
            raise UserError("run directory to resume does not exist", got=str(path), expected="the --out directory of an earlier run",
                            hint="check the path; start a new run without --resume")  # fmt: skip
        resolved = config(path) if callable(config) else config
        if resolved is None:
            raise TypeError("open_run_directory: a resume needs the config to compare with the stored one")
        run = _prepare_resume(path, resolved, checkpoint)
    else:
        notes: list[str] = []
        if out is None:
            path = new_run_directory()
        else:
            path = Path(out)
            if path.exists() and not path.is_dir():
                raise UserError("run directory is a file", got=str(path), expected="a directory", hint="pass another --out")
            if path.is_dir() and _holds_files(path):
                if not overwrite:
                    _refuse_non_empty(path)
                removed = _overwrite(path)
                if removed:
                    notes.append(f"--overwrite: removed {', '.join(removed)} from {path}")
                if _holds_files(path):
                    notes.append(f"--overwrite: left the other files in {path} untouched")
        resolved = config(None) if callable(config) else config
        run = RunDirectory(path, resolved, None, notes)
    if run.config is not None and (run.config.data.folds > 0 or run.config.run.agents > 1):  # fold-KK/, agent-KK/ below
        subdirectories = ()
    for directory in (run.path, *(run.path / name for name in subdirectories)):
        probe_writable(directory)
    return run
