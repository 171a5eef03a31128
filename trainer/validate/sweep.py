"""The validation driver: plan the cells, run the missing ones, show progress, write the report.

Resumable and safe: the plan is stored in ``DIR/sweep.json`` on the first run; the same command
again continues it (finished cells are skipped, half-trained cells resume from their checkpoint,
failed cells are tried again), a different plan in the same directory is refused, and
``DIR/sweep.lock`` (pid and host of the driver) keeps two live sweeps out of one directory — a
lock left by a killed driver is taken over.

Outputs: ``DIR/cells/<id>/`` (one run directory per cell), ``DIR/report.json``,
``DIR/report.md`` and ``DIR/plots/``.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.config import TrainConfig, config_from_mapping, deep_merge, parse_overrides
from trainer.errors import UserError
from trainer.eval.bands import (
    BandScope,
    MetricBands,
    bands_from_records,
    load_bands,
    write_bands,
)
from trainer.files import write_text_atomic
from trainer.validate.cells import (
    CELL_PROGRESS,
    CELLS_DIRNAME,
    FINISHED,
    Cell,
    cell_config,
    cell_spec,
    pid_alive,
    plan_cells,
    read_result,
    resume_point,
)
from trainer.validate.executors import make_executor
from trainer.validate.report import build_report, cell_history, report_markdown

PLAN_FILENAME = "sweep.json"
LOCK_FILENAME = "sweep.lock"
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
PLOTS_DIRNAME = "plots"
POLL_S = 0.5


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs; stored in sweep.json so a re-run can check it is the same sweep."""

    config: TrainConfig
    config_source: str
    seeds: int
    folds: int
    grid: tuple[dict[str, Any], ...]
    """One override table per grid point ({} = the base config alone)."""
    tiers: tuple[int, ...]
    executor: str

    def identity(self) -> dict[str, Any]:
        """The part of the plan that decides what each cell is. Neither the executor nor the tiers
        belong to it: tiers 1 and 2 read the base cells, tier 3 adds cells of their own, so a finished
        sweep re-read with other tiers trains only the cells it lacks."""
        return {"config": self.config.to_dict(), "seeds": self.seeds, "folds": self.folds, "grid": list(self.grid)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.identity(), "tiers": list(self.tiers), "config_source": self.config_source, "executor": self.executor}


def parse_grid(specs: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """``["optim.lr=1e-4,3e-4", "run.seed=..."]`` → the cartesian product as override tables."""
    axes: list[list[dict[str, Any]]] = []
    for spec in specs:
        key, sep, values = spec.partition("=")
        choices = [value for value in values.split(",") if value.strip()]
        if not sep or not choices:
            raise UserError("bad --grid", got=repr(spec), expected="section.key=v1,v2,...", hint="e.g. --grid optim.lr=1e-4,3e-4")
        axes.append([parse_overrides([f"{key}={value}"]) for value in choices])
    if not axes:
        return ({},)
    points = []
    for combination in itertools.product(*axes):
        point: dict[str, Any] = {}
        for table in combination:
            point = deep_merge(point, table)
        points.append(point)
    return tuple(points)


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


class SweepLock:
    """``DIR/sweep.lock``: one live driver per sweep directory."""

    def __init__(self, root: Path) -> None:
        self.path = root / LOCK_FILENAME

    def __enter__(self) -> SweepLock:
        for _ in range(2):
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pid_text, _, host = self.path.read_text(encoding="utf-8").partition(" ")
                alive = host.strip() != socket.gethostname() or (pid_text.strip().isdigit() and pid_alive(int(pid_text)))
                if alive:
                    raise UserError(
                        f"another sweep is running in {self.path.parent}", got=f"{LOCK_FILENAME}: pid {pid_text.strip()} on {host.strip()}",
                        expected="no live sweep in the directory", hint="wait for it, or pass another --out",
                    ) from None  # fmt: skip
                self.path.unlink(missing_ok=True)  # left by a killed driver
                continue
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()} {socket.gethostname()}")
            return self
        raise UserError(f"cannot lock {self.path}", got="a lock that reappears", expected="one driver", hint="pass another --out")

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)


def _check_plan(root: Path, plan: SweepPlan) -> None:
    stored_path = root / PLAN_FILENAME
    if not stored_path.exists():
        write_text_atomic(stored_path, json.dumps(plan.to_dict(), indent=2) + "\n")
        return
    stored = json.loads(stored_path.read_text(encoding="utf-8"))
    identity = json.loads(json.dumps(plan.identity()))  # tuples → lists, as stored
    different = [key for key in identity if stored.get(key) != identity[key]]
    if different:
        raise UserError(
            f"{root} holds a different sweep", got=f"{', '.join(different)} differ from {PLAN_FILENAME}",
            expected="the same config, seeds, folds and grid to resume", hint="pass another --out for a new sweep",
        )  # fmt: skip
    if stored != json.loads(json.dumps(plan.to_dict())):  # other tiers or executor: the plan of the newest report
        write_text_atomic(stored_path, json.dumps(plan.to_dict(), indent=2) + "\n")


class _Display:
    """One live line per running cell and an overall bar with ETA (rich), or plain lines."""

    def __init__(self, total: int, already: int, live: bool) -> None:
        self.total, self.done, self.live = total, already, live
        self.started = time.monotonic()
        self.finished_here = 0
        self.progress = None
        self.rows: dict[str, int] = {}
        if live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description:<28}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[latest]}"), console=Console(stderr=True),
            )  # fmt: skip
            self.progress.start()
            self.overall = self.progress.add_task("sweep", total=total, completed=already, latest=f"{already}/{total} cells")

    def poll(self, root: Path, running: Sequence[str]) -> None:
        if self.progress is None:
            return
        for cell_id in running:
            try:
                state = json.loads((root / CELLS_DIRNAME / cell_id / CELL_PROGRESS).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if cell_id not in self.rows:
                self.rows[cell_id] = self.progress.add_task(cell_id, total=max(state["total"], 1), latest="")
            self.progress.update(self.rows[cell_id], completed=state["done"], total=max(state["total"], 1), latest=state["latest"])

    def finished(self, result: Mapping[str, Any]) -> None:
        self.done += 1
        self.finished_here += 1
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.finished_here * (self.total - self.done)
        sharpe = (result.get("metrics") or {}).get("agent", {}).get("sharpe_ratio")
        note = result.get("error") or (result.get("termination") or {}).get("message") or f"test sharpe {sharpe if sharpe is None else round(sharpe, 3)}"
        line = f"[{self.done}/{self.total}] {result['id']} {result['status']} in {result.get('wall_time_s', 0.0):.1f} s — {note} — ETA {eta:.0f} s"
        if self.progress is None:
            print(line, flush=True)
            return
        row = self.rows.pop(result["id"], None)
        if row is not None:
            self.progress.remove_task(row)
        self.progress.console.print(line)
        self.progress.update(self.overall, completed=self.done, latest=f"{self.done}/{self.total} cells")

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _uses_gpu(config: TrainConfig) -> bool:
    if config.run.device == "cuda":
        return True
    if config.run.device == "cpu":
        return False
    import torch

    return torch.cuda.is_available()


def run_sweep(
    plan: SweepPlan, out: Path, *, jobs: int, address: str | None = None, gpu_fraction: float = 0.25, live: bool = False,
    population: int = 0,
) -> dict[str, Any]:
    """Run every missing cell of ``plan`` in ``out`` and write the report; returns report.json.

    ``population``: cells that differ only in their seed train together as one population of at
    most this many agents (``trainer.train.loop.train_agents``; each cell directory is exactly its
    single run's); 0 = automatic: every seed of a (variant, grid point, fold) together on a GPU,
    one cell per task on the CPU (where agents would only run one after another)."""
    out.mkdir(parents=True, exist_ok=True)
    with SweepLock(out):
        _check_plan(out, plan)
        cells = plan_cells(plan.seeds, plan.folds, len(plan.grid), plan.config.run.seed, robustness=3 in plan.tiers)
        configs = {cell.id: cell_config(plan.config, cell, plan.folds, plan.grid[cell.grid]) for cell in cells}
        missing = [cell for cell in cells if not _finished(out, cell)]
        display = _Display(len(cells), len(cells) - len(missing), live)
        try:
            if missing:
                executor = make_executor(plan.executor, jobs=jobs, address=address, gpu_fraction=gpu_fraction)
                tasks: dict[str, list[str]] = {}  # task id → the ids of its cells
                try:
                    for pack in pack_cells(missing, out, population or _auto_population(plan, configs[missing[0].id])):
                        uses_gpu = _uses_gpu(configs[pack[0].id])
                        specs = [cell_spec(cell, configs[cell.id], out) for cell in pack]
                        task_id = pack[0].id if len(pack) == 1 else f"{pack[0].id}+{len(pack) - 1}"
                        tasks[task_id] = [cell.id for cell in pack]
                        executor.submit(task_id, specs[0] if len(pack) == 1 else {"pack": specs}, uses_gpu,
                                        min(1.0, gpu_fraction * len(pack)))  # fmt: skip
                    while executor.pending:
                        for task_id, outcome in executor.wait(POLL_S):
                            for cell_id, result in zip(tasks[task_id], _outcome_results(out, tasks[task_id], outcome, cells), strict=True):
                                display.finished(result)
                        display.poll(out, [cell_id for task_id in executor.pending.values() for cell_id in tasks[task_id]])
                finally:
                    executor.close()
        finally:
            display.close()
        return write_report(plan, out, cells)


def _auto_population(plan: SweepPlan, config: TrainConfig) -> int:
    return plan.seeds if _uses_gpu(config) else 1


def pack_cells(cells: Sequence[Cell], out: Path, population: int) -> list[list[Cell]]:
    """The sweep's tasks: cells of one (variant, grid point, fold) that differ only in their seed, in
    populations of at most ``population``. Cells an earlier driver left half-trained are packed only
    with cells that resume from the same point (the same checkpoint step: a killed population's
    agents resume together, as one population again); fresh cells only with fresh ones."""
    if population < 1:
        raise UserError("bad --population", got=str(population), expected="≥ 1 agents per task (0 = automatic)",
                        hint="e.g. --population 5: the five seeds of a fold in one step")  # fmt: skip
    groups: dict[tuple[str, int, int, str | None], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.variant, cell.grid, cell.fold, resume_point(out / CELLS_DIRNAME / cell.id)), []).append(cell)
    packs: list[list[Cell]] = []
    for group in groups.values():
        packs.extend(group[start : start + population] for start in range(0, len(group), population))
    return packs


def _finished(out: Path, cell: Cell) -> bool:
    result = read_result(out / CELLS_DIRNAME / cell.id)
    return result is not None and result.get("status") in FINISHED


def _outcome_results(out: Path, cell_ids: list[str], outcome: list[dict[str, Any]] | BaseException,
                     cells: Sequence[Cell]) -> list[dict[str, Any]]:  # fmt: skip
    """A task's results, one per cell; the cells of a task whose process died are recorded as failed."""
    if not isinstance(outcome, BaseException):
        return outcome
    results = []
    for cell_id in cell_ids:
        cell = next(item for item in cells if item.id == cell_id)
        result = {**cell.__dict__, "id": cell_id, "dir": str(out / CELLS_DIRNAME / cell_id), "status": "failed",
                  "error": f"{type(outcome).__name__}: {outcome}", "wall_time_s": 0.0}  # fmt: skip
        write_text_atomic(out / CELLS_DIRNAME / cell_id / "cell.json", json.dumps(result, indent=2) + "\n")
        results.append(result)
    return results


def load_results(out: Path, cells: Sequence[Cell]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    results, histories = [], {}
    for cell in cells:
        cell_dir = out / CELLS_DIRNAME / cell.id
        result = read_result(cell_dir) or {**cell.__dict__, "id": cell.id, "dir": str(cell_dir), "status": "missing"}
        history = cell_history(cell_dir)
        selection = result.get("selection") or {}
        result["selected_epoch"] = selection.get("epoch", history[-1]["epoch"] if history else None)
        results.append(result)
        histories[cell.id] = history
    return results, histories


def _plan_bands(config: TrainConfig, results: Sequence[Mapping[str, Any]]) -> MetricBands | None:
    """The bands the report checks the cells' last epochs against: the ones their runs applied
    (``run.bands = "default"`` applies a shipped file only to runs of its scope, trainer.eval.bands)."""
    choice = config.run.bands
    if not choice:
        return None
    if choice != "default":
        return load_bands(choice)
    applied = {result["bands"]["path"] for result in results if (result.get("bands") or {}).get("applied")}
    return load_bands(applied.pop()) if len(applied) == 1 else None


def write_report(plan: SweepPlan, out: Path, cells: Sequence[Cell]) -> dict[str, Any]:
    from trainer.validate.plots import write_report_plots

    results, histories = load_results(out, cells)
    report = build_report(results, histories, plan.to_dict(), _plan_bands(plan.config, results))
    for point in report["grid_points"]:
        point["overrides_flat"] = flatten(point["overrides"])
    try:
        write_report_plots(out / PLOTS_DIRNAME, results, histories)
    except ImportError as error:  # a machine without matplotlib still gets its report
        report["plots_note"] = f"Plots skipped: {error} (install matplotlib and re-run the command to draw them)."
    write_text_atomic(out / REPORT_JSON, json.dumps(report, indent=2, allow_nan=False) + "\n")
    write_text_atomic(out / REPORT_MD, report_markdown(report))
    return report


def write_bands_from_report(out: Path, destination: Path) -> Path:
    """``--write-bands``: bands from every epoch of the base cells of a PASSING report, written
    atomically with the report they came from (copied beside the bands file)."""
    report_path = out / REPORT_JSON
    try:
        report = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"no report to write bands from in {out}", got=str(error), expected=f"{REPORT_JSON} of a finished sweep",
                        hint="run `trainer validate` first") from error  # fmt: skip
    if not report.get("passed"):
        failing = [f"tier {tier['tier']}: {tier['reason']}" for point in report["grid_points"] for tier in point["tiers"] if not tier["passed"]]
        raise UserError(
            "bands come from a passing validation only", got="; ".join(failing) or "a failing report", expected="every tier PASS",
            hint="fix the failures, or validate with fewer tiers (--tiers) to see which pass",
        )  # fmt: skip
    records = []
    base_cells = [cell for cell in report["cells"] if cell["variant"] == "base" and cell["status"] in FINISHED]
    for cell in base_cells:
        records.extend(cell_history(Path(cell["dir"])))
    plan = report["plan"]
    bands = bands_from_records(records, source=str(report_path), scope=_report_scope(plan, base_cells))
    header = (
        "Metric bands of the regression hard-stop: [mean − 3σ, mean + 3σ] over every epoch of the\n"
        f"{len(base_cells)} base cells ({plan['seeds']} seeds × {plan['folds']} folds, {len(records)} epochs) of the\n"
        f"passing validation {report_path} (config {plan['config_source']}, {plan['config']['run']['steps']} steps per cell).\n"
        + (f"{report['claim_note']}.\n" if report.get("claim_note") else "")
        + "Written by `trainer validate --write-bands`; unknown metrics are errors (trainer/eval/bands.py)."
    )
    write_text_atomic(destination.with_name(destination.stem + ".report.json"), report_path.read_text(encoding="utf-8"))
    return write_bands(bands, destination, header)


def _report_scope(plan: Mapping[str, Any], cells: list[dict[str, Any]]) -> BandScope:
    """The scope of bands written from a sweep: its base configuration and the cells' data."""
    config = config_from_mapping(plan["config"], source=f"the report's plan ({plan['config_source']})", stored=True)
    for cell in cells:
        try:
            metrics = json.loads((Path(cell["dir"]) / "metrics.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if metrics.get("data_sha256"):
            return BandScope.of(config, str(metrics.get("source", config.data.path or "default")), metrics["data_sha256"])
    raise UserError(
        "cannot scope the bands: no finished base cell records its data's sha256", got=f"{len(cells)} base cells",
        expected="metrics.json with data_sha256 (written since the bands were scoped)",
        hint="re-run the sweep with this version of the trainer",
    )


def load_plan_config(path: str | None, overrides: Sequence[str]) -> tuple[TrainConfig, str]:
    from trainer.config import DEFAULT_CONFIG_PATH, load_config

    return load_config(path, overrides=list(overrides)), str(path or DEFAULT_CONFIG_PATH)
