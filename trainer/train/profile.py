"""`trainer profile`: time per epoch split by phase (collect, learn, validation, checkpoint), in
torch profiler ranges, against a stored baseline (> 20 % slower in any phase fails, naming it).

Why these phases: they are what an epoch of ``trainer.train.loop.train`` spends its time on — acting
in the environments, the gradient update, the validation backtest and the checkpoint. The harness
builds the run with the loop's own parts (``prepare_market``, ``run_splits``, ``start_split``,
``boundary_backtests``, ``save_checkpoint``) and wraps each phase in a ``torch.profiler.record_function``
range timed by the wall clock (``--trace`` adds the full per-op torch profiler and its Chrome trace);
the phases run eagerly, because a captured CUDA graph fuses collect and learn into one replay that
has no phase boundary to measure. On CUDA each phase ends with a device synchronisation, so its
time covers the kernels it launched.

Baseline file (JSON): the config it was measured with, the device, torch version, epochs and
seconds per epoch for every phase. Comparing against a baseline of another config is an error.
"""

from __future__ import annotations

import contextlib
import json
import math
import platform
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from trainer.config import TrainConfig
from trainer.errors import UserError
from trainer.files import write_text_atomic

PHASES = ("collect", "learn", "validation", "checkpoint")
TOLERANCE = 0.20
"""A phase more than 20 % slower per epoch than its baseline fails the comparison."""
BASELINE_SCHEMA = 1


def profile_epochs(config: TrainConfig, epochs: int, trace: Path | None = None) -> dict[str, float]:
    """Seconds per epoch of every phase over ``epochs`` epochs of ``run.epoch_steps`` steps.

    Each phase is a ``torch.profiler.record_function`` range timed by the wall clock (after a
    device synchronisation on CUDA). ``trace``: also run the torch profiler over every op and write
    its Chrome trace there (the per-op recording multiplies the run time: for drill-down only)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from trainer.train.checkpoint import save_checkpoint
    from trainer.train.host import prepare_cpu_process
    from trainer.train.loop import boundary_backtests, prepare_market, resolve_device, run_splits, start_split

    device = resolve_device(config.run.device)
    if device.type == "cpu":
        prepare_cpu_process(config.run.cpu_threads)
    market = prepare_market(config)
    split = run_splits(config, market)[0]
    run = start_split(config, market, split, device, None)  # the driver's own start: registry fold boundary
    state, step = run.state, run.step
    warm_up = (config.loss.n_step - 1) + math.ceil(config.replay.learning_starts / config.env.n_envs)  # as the loop does
    while state.collect_steps < warm_up:
        step.collect()
    seconds = dict.fromkeys(PHASES, 0.0)

    @contextlib.contextmanager
    def phase(name: str) -> Iterator[None]:
        started = time.perf_counter()
        with record_function(f"phase/{name}"):
            yield
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        seconds[name] += time.perf_counter() - started

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    profiler = profile(activities=activities) if trace is not None else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as scratch, profiler:
        for epoch in range(epochs):
            state.adaptive.begin_epoch(epoch, epochs)
            for _ in range(config.run.epoch_steps):
                with phase("collect"):
                    step.collect()
                with phase("learn"):
                    step.learn()
            with phase("validation"):
                boundary_backtests(run, market, split)  # as the driver runs them
            state.epoch += 1
            with phase("checkpoint"):
                save_checkpoint(state, Path(scratch), extra={"runner_mode": "eager"}, keep=1)
    if trace is not None:
        profiler.export_chrome_trace(str(trace))
    return {name: total / epochs for name, total in seconds.items()}


def baseline_payload(config: TrainConfig, source: str, epochs: int, phases: dict[str, float]) -> dict[str, Any]:
    path = Path(source).resolve()
    if path.is_relative_to(Path.cwd()):  # the repository's own configs by their repository path
        source = str(path.relative_to(Path.cwd()))
    return {
        "schema": BASELINE_SCHEMA, "config_source": source, "config": config.to_dict(), "epochs": epochs,
        "device": str(torch.cuda.get_device_name(0)) if config.run.device != "cpu" and torch.cuda.is_available() else f"cpu ({platform.processor() or platform.machine()})",
        "torch": torch.__version__, "seconds_per_epoch": phases,
    }  # fmt: skip


def compare(phases: dict[str, float], baseline: dict[str, Any], config: TrainConfig) -> list[str]:
    """The phases more than ``TOLERANCE`` slower than the baseline, as readable lines."""
    if baseline.get("schema") != BASELINE_SCHEMA:
        raise UserError("profile baseline has another schema", got=repr(baseline.get("schema")), expected=str(BASELINE_SCHEMA),
                        hint="record it again with --write-baseline")  # fmt: skip
    if baseline.get("config") != json.loads(json.dumps(config.to_dict())):
        raise UserError(
            "profile baseline was measured with another config", got=str(baseline.get("config_source")),
            expected="the config being profiled", hint="profile with the baseline's config, or record a new one with --write-baseline",
        )  # fmt: skip
    slower = []
    for phase in PHASES:
        before = float(baseline["seconds_per_epoch"].get(phase, 0.0))
        now = phases[phase]
        if before > 0.0 and now > before * (1.0 + TOLERANCE):
            slower.append(f"{phase}: {now:.3f} s/epoch vs baseline {before:.3f} s (+{now / before - 1.0:.0%} > +{TOLERANCE:.0%})")
    return slower


def load_baseline(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read profile baseline {path}", got=str(error), expected="a JSON file written by --write-baseline",
                        hint="record one with `trainer profile --write-baseline FILE`") from error  # fmt: skip


def write_baseline(path: Path, payload: dict[str, Any]) -> Path:
    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")
    return path


def top_level_aten_ops(events: Any) -> list[Any]:
    """The CPU ATen ops of a torch profiler's ``events()`` with no ATen op above them: each is one
    dispatch from Python, the CPU's counterpart of a kernel launch (the ops they call inside —
    views, copies — are not counted). The population benchmark and its test count these."""

    def has_aten_parent(event: Any) -> bool:
        parent = event.cpu_parent
        while parent is not None:
            if parent.name.startswith("aten::"):
                return True
            parent = parent.cpu_parent
        return False

    return [event for event in events if event.name.startswith("aten::") and event.device_type == torch.autograd.DeviceType.CPU
            and not has_aten_parent(event)]  # fmt: skip
