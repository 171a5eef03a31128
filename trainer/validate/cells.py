"""The cells of a validation sweep and how one cell runs (the same code path as ``trainer train``).

A cell is one independent training run: (variant, grid point, seed, fold). ``cell_config`` is the
one place that turns the sweep's base config into a cell's config. ``run_cell`` is what an
executor (a Ray task or a local process) calls: it never re-runs a finished cell (its
``cell.json`` is the proof), resumes a cell that an earlier, killed driver left half-trained
(from the newest checkpoint), and turns any exception into a ``failed`` result so one bad cell
never stops the others.

Cell directory ``DIR/cells/<id>/``: the run directory of ``trainer train`` (config.toml,
health_diag.jsonl, checkpoints/, metrics.json) plus ``progress.json`` (live progress, polled by
the driver), ``cell.lock`` (pid and host of the process running it) and ``cell.json`` (the result,
written last and atomically).
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trainer.config import TrainConfig, config_from_mapping
from trainer.files import write_text_atomic

CELLS_DIRNAME = "cells"
CELL_RESULT = "cell.json"
CELL_PROGRESS = "progress.json"
CELL_LOCK = "cell.lock"
FINISHED = ("ok", "stopped")
"""Statuses of a finished cell (a band-stopped cell finished: its stop is a result)."""
PROGRESS_PERIOD_S = 1.0
COSTS_FACTOR = 2.0
HELD_OUT_SEED_OFFSET = 1_000
"""Held-out seeds are base seed + 1000 + i: disjoint from the sweep's seeds for any N < 1000."""

VARIANTS = ("base", "costs_x2", "held_out_seeds")
"""base: the sweep itself; costs_x2: the same cells with fee and slippage doubled (Tier 3);
held_out_seeds: the same folds with another seed set (Tier 3)."""


@dataclass(frozen=True)
class Cell:
    """One (variant, grid point, seed, fold) of a sweep."""

    variant: str
    grid: int
    seed: int
    fold: int

    @property
    def id(self) -> str:
        return f"{self.variant}-g{self.grid}-s{self.seed}-f{self.fold}"


def cell_config(base: TrainConfig, cell: Cell, n_folds: int, grid_point: Mapping[str, Any]) -> TrainConfig:
    """The one place a cell's config is made: the grid point's overrides, the cell's seed and
    fold, and the variant's change (doubled costs)."""
    from trainer.config import deep_merge

    sections: dict[str, Any] = deep_merge(
        dict(grid_point), {"run": {"seed": cell.seed, "agents": 1, "agent_grid": ""}, "data": {"folds": n_folds, "fold": cell.fold}}
    )  # a cell is one agent: the sweep packs cells into populations itself
    config = base.replace(**sections)
    if cell.variant == "costs_x2":
        config = config.replace(env={"fee_rate": config.env.fee_rate * COSTS_FACTOR, "slippage": config.env.slippage * COSTS_FACTOR})
    return config


def plan_cells(n_seeds: int, n_folds: int, n_grid: int, base_seed: int, robustness: bool) -> list[Cell]:
    """Every cell of a sweep, the base variant first (it is what the report is about)."""
    folds = range(max(n_folds, 1))
    seeds = [base_seed + index for index in range(n_seeds)]
    cells = [Cell("base", grid, seed, fold) for grid in range(n_grid) for seed in seeds for fold in folds]
    if robustness:
        cells += [Cell("costs_x2", grid, seed, fold) for grid in range(n_grid) for seed in seeds for fold in folds]
        held_out = [base_seed + HELD_OUT_SEED_OFFSET + index for index in range(n_seeds)]
        cells += [Cell("held_out_seeds", grid, seed, fold) for grid in range(n_grid) for seed in held_out for fold in folds]
    return cells


def read_result(cell_dir: Path) -> dict[str, Any] | None:
    """The cell's result, or None when it has none (never started, killed, or unreadable)."""
    try:
        return json.loads((cell_dir / CELL_RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_finished(cell_dir: Path) -> bool:
    result = read_result(cell_dir)
    return result is not None and result.get("status") in FINISHED


def out_of_sample_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The out-of-sample (test) metrics of a run's metrics.json: the three strategies at the top
    level (today's shape and the test split of the train/validation/test shape)."""
    return {key: dict(metrics[key]) for key in ("agent", "buy_and_hold", "flat") if isinstance(metrics.get(key), Mapping)}


def pid_alive(pid: int) -> bool:
    """Whether a process of this host still runs (a lock's owner)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _acquire(cell_dir: Path, wait_s: float = 600.0) -> None:
    """Take the cell's lock; a lock left by a dead process (a killed sweep) is taken over, a live
    holder (a worker of a killed driver that is still finishing) is waited for."""
    lock = cell_dir / CELL_LOCK
    me = f"{os.getpid()} {socket.gethostname()}"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid_text, _, host = lock.read_text(encoding="utf-8").partition(" ")
                holder_alive = host.strip() != socket.gethostname() or pid_alive(int(pid_text))
            except (OSError, ValueError):
                holder_alive = False
            if not holder_alive or time.monotonic() > deadline:
                lock.unlink(missing_ok=True)
                continue
            time.sleep(0.5)
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(me)
        return


class _ProgressFile:
    """The cell's progress callback: writes progress.json at most once a second (and at epochs)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last = 0.0
        self.started = time.time()
        self.latest = ""

    def __call__(self, done: int, total: int, info: dict[str, Any] | None) -> None:
        now = time.monotonic()
        if info is not None:
            sharpe = info.get("validation", {}).get("agent", {}).get("sharpe_ratio")
            self.latest = f"val sharpe {sharpe:.3g}" if isinstance(sharpe, (int, float)) else "val sharpe n/a"
        elif now - self.last < PROGRESS_PERIOD_S:
            return
        self.last = now
        payload = {"done": done, "total": total, "latest": self.latest, "started": self.started, "pid": os.getpid()}
        write_text_atomic(self.path, json.dumps(payload) + "\n")


def run_cell(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Run one cell to its end and return its result (also written to ``cell.json``).

    ``spec``: ``cell`` (a Cell as a dict), ``config`` (the cell's config as ``to_dict()``),
    ``dir`` (the cell directory), ``threads`` (torch CPU threads)."""
    (result,) = run_pack([spec])
    return result


def run_task(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What an executor runs: one cell (a cell spec), or a population of cells (``{"pack": [cell specs]}``)."""
    return run_pack(spec["pack"]) if "pack" in spec else [run_cell(spec)]


def has_checkpoint(cell_dir: Path) -> bool:
    """Whether an earlier, killed driver left the cell half-trained (it resumes from there)."""
    return resume_point(cell_dir) is not None


def resume_point(cell_dir: Path) -> str | None:
    """Where a half-trained cell resumes: its newest periodic checkpoint manifest, relative to the
    cell directory (``fold-02/checkpoints/step-00006000.json``), or None for a cell never checkpointed.
    Cells with the same resume point stand at the same fold and step, so they can resume as one
    population (their agents must share every step from there)."""
    from trainer.train.checkpoint import CHECKPOINT_PREFIX, MANIFEST_SUFFIX
    from trainer.train.loop import CHECKPOINT_DIRNAME

    manifests = sorted(cell_dir.glob(f"**/{CHECKPOINT_DIRNAME}/{CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX}"),
                       key=lambda path: (path.parent.as_posix(), path.name))  # fmt: skip
    return manifests[-1].relative_to(cell_dir).as_posix() if manifests else None


def run_pack(specs: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Run cells that differ only in their seed as one population (``trainer.train.loop.train_agents``:
    every cell's steps in one step, each cell directory exactly its single run's); returns their
    results in order, each also written to its ``cell.json``. One cell is a population of one.

    A cell finished by an earlier driver is never re-run; the others resume together from their
    checkpoints when every one of them has one (the sweep packs only cells in the same state)."""
    from trainer.train.loop import train_agents

    dirs = [Path(spec["dir"]) for spec in specs]
    acquired: list[Path] = []
    try:
        for cell_dir in dirs:
            cell_dir.mkdir(parents=True, exist_ok=True)
            _acquire(cell_dir)
            acquired.append(cell_dir)
        results: list[dict[str, Any] | None] = []
        todo = []
        for spec, cell_dir in zip(specs, dirs, strict=True):
            done = read_result(cell_dir)
            finished = done is not None and done.get("status") in FINISHED
            results.append(done if finished else None)  # finished by an earlier driver: never re-run
            if not finished:
                todo.append((len(results) - 1, spec, cell_dir))
        if not todo:
            return [result for result in results if result is not None]
        started = time.perf_counter()
        running = [{**spec["cell"], "id": Cell(**spec["cell"]).id, "dir": str(cell_dir)} for _, spec, cell_dir in todo]
        resume = all(has_checkpoint(cell_dir) for _, _, cell_dir in todo)
        try:
            configs = [config_from_mapping(spec["config"], source=f"cell {result['id']}", stored=True)
                       for (_, spec, _), result in zip(todo, running, strict=True)]  # fmt: skip
            # A fold cell trains in cell_dir/fold-KK/ (a complete run directory), a single split in cell_dir.
            progress = _ProgressFiles([cell_dir / CELL_PROGRESS for _, _, cell_dir in todo])
            outcomes = train_agents(configs, [cell_dir for _, _, cell_dir in todo], resume=resume, progress=progress)
            for result, metrics in zip(running, outcomes, strict=True):
                if len(metrics.get("folds", ())) == 1:  # one fold of a walk-forward: its own block, selection included
                    metrics = metrics["folds"][0]
                termination = metrics.get("termination")
                result.update(
                    status="stopped" if termination else "ok", resumed=resume, metrics=out_of_sample_metrics(metrics),
                    validation=out_of_sample_metrics(metrics.get("validation", {})), selection=metrics.get("selection"),
                    termination=termination, bands=metrics.get("bands"), error=None,
                )  # fmt: skip
        except Exception as error:  # a failed cell (or population) is a result, not the end of the sweep
            for result in running:
                result.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc(limit=8))
        wall_time = time.perf_counter() - started
        for (index, _, cell_dir), result in zip(todo, running, strict=True):
            result["wall_time_s"] = wall_time  # a population's cells share one wall time
            if len(todo) > 1:
                result["population"] = len(todo)
            write_text_atomic(cell_dir / CELL_RESULT, json.dumps(result, indent=2, allow_nan=False) + "\n")
            results[index] = result
        return [result for result in results if result is not None]
    finally:
        for cell_dir in acquired:
            (cell_dir / CELL_LOCK).unlink(missing_ok=True)


class _ProgressFiles:
    """The population's progress, written to every cell's progress file (the driver polls each)."""

    def __init__(self, paths: list[Path]) -> None:
        self.files = [_ProgressFile(path) for path in paths]

    def __call__(self, done: int, total: int, info: dict[str, Any] | None) -> None:
        for file in self.files:
            file(done, total, info)


def cell_spec(cell: Cell, config: TrainConfig, root: Path) -> dict[str, Any]:
    return {"cell": asdict(cell), "config": config.to_dict(), "dir": str(root / CELLS_DIRNAME / cell.id)}
