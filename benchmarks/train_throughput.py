"""Training-step throughput: CUDA-graph replay vs eager on the GPU vs the CPU path, and the product
(`trainer train` end to end) beside the step it repeats, in one run.

One step = every environment advances one bar (n_envs env-steps) + one gradient update on a
replay batch (batch samples) + one Polyak target update — the unit ``trainer train`` repeats.
Each row reports the three rates of that unit: updates/s (steps/s), samples/s (batch × updates/s,
what the learner consumes) and env-steps/s (n_envs × updates/s, what the actors produce).

Step rows build the default network (config/train/default.toml) with ``--envs`` environments on a
synthetic market (throughput does not depend on the prices), fill the replay to
``learning_starts``, warm up, then time ``--steps`` steps between two device synchronisations.

``--train`` adds the product: ``trainer train``'s own driver (``trainer.train.loop.train``) on the
embedded EURUSD bars with ``--train-config`` (default: config/train/gpu.toml on CUDA,
config/train/default.toml on the CPU) for ``--train-steps`` steps, epoch boundaries (validation
rollouts, HEALTH_DIAG, checkpoints), the test backtest and the plots included — and, in the same
process, the step of exactly that config alone (its captured replay on CUDA, the eager step on
the CPU). The end-to-end row splits its wall time into start-up (data, state, replay warm-up),
the training loop (steps + epoch boundaries, from the driver's progress calls) and the tail (test
backtest, plots, the last checkpoint write); ``loop ÷ step`` is the issue-11 ratio (target ≤ 1.2).
The epoch boundary is reported on its own twice: measured inside that run (from the device done with
an epoch's steps to its HEALTH_DIAG record, the progress call synchronising first) next to what the
loop spent beyond its steps (loop − steps × step time, checkpoints included), and phase by phase in
the ``boundary`` row (``measure_boundary``: the gradient-norm summary, the captured validation
rollouts beside the same rollouts walked eagerly, the checkpoint and its background write's cost to
the next steps), on the same config and data.

    python benchmarks/train_throughput.py                 # 4,096 envs, all modes available
    python benchmarks/train_throughput.py --envs 64 --steps 20 --modes cpu
    python benchmarks/train_throughput.py --modes gpu-graph --train            # the GPU config, 20,000 steps
    python benchmarks/train_throughput.py --modes cpu --cpu-threads 1 --train --train-steps 200
    python benchmarks/train_throughput.py --modes gpu-graph --population 1,8,32,128   # populations in one graph
    python benchmarks/train_throughput.py --modes cpu --population 1,4,8 --envs 64 --batch 128 --cpu-steps 3 --cpu-threads 1

``--population 1,8,32,128`` adds population rows: P agents of the step config (seeds 0 … P − 1),
stepped by one ``StepRunner`` (the stacked ``PopulationStep``: on CUDA one captured graph whose
kernels serve every agent); updates/s and
samples/s are aggregates over the agents, with the peak GPU memory, the set-up and capture time,
the CUDA kernels and top-level ATen ops one population step launches, and the speed-up over P = 1
(issue-11 targets: ≥ 16× at P = 32, ≥ 40× at P = 128). ``--population-seconds S`` caps each row's
timed steps at S seconds (a large P then stays within a time limit; its set-up is not capped).

``--profile PATH`` records 5 eager steps with the torch profiler (CUDA kernels on a GPU, ATen ops
on the CPU): kernels or ops per step, the GEMMs by shape with their FLOPs, the bytes the ops read,
and the heaviest ops — the inputs of the roofline note in docs/benchmarks.md.

Prints a table and, with ``--json PATH``, writes the numbers. Needs torch (+ CuPy for the GPU
modes) and numpy only, plus matplotlib for the ``--train`` row's plots.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.config import TrainConfig, load_config
from trainer.layout import FEATURE_STRIDE
from trainer.train.graph import StepRunner
from trainer.train.host import prepare_cpu_process
from trainer.train.profile import top_level_aten_ops
from trainer.train.step import MarketWindow, TrainerState, TrainStep

MODES = ("gpu-graph", "gpu-eager", "cpu")
TARGET_ENV_STEPS_PER_S = 2_000_000  # issue #5, at 4,096 envs and one update per step
TARGET_GRAPH_OVER_EAGER = 4.0
TARGET_TRAIN_OVER_STEP = 1.2  # issue #11: `trainer train` within 1.2× the captured step, boundaries included
TARGET_POPULATION_OVER_SINGLE = {32: 16.0, 128: 40.0}  # issue #11: aggregate updates/s over one agent's
GPU_CONFIG = Path(__file__).resolve().parent.parent / "config" / "train" / "gpu.toml"
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def synthetic_market(n_bars: int, window: int, seed: int = 0) -> MarketWindow:
    """A geometric random walk and standard-normal features (shape-faithful, content-free)."""
    generator = torch.Generator().manual_seed(seed)
    log_returns = torch.randn(n_bars, generator=generator, dtype=torch.float64) * 1e-3
    close = (100.0 * torch.exp(torch.cumsum(log_returns, 0))).to(torch.float32)
    features = torch.randn(n_bars, FEATURE_STRIDE, generator=generator).clamp(-5, 5)
    offset = window
    return MarketWindow(close=close[offset:], spread=torch.zeros(n_bars - offset), features=features, offset=offset)


def step_config(envs: int, batch: int | None) -> TrainConfig:
    """The default network with ``envs`` environments (replay sized for them)."""
    replay: dict[str, int] = {"capacity": max(envs * 16, 65_536), "learning_starts": envs * 2}
    if batch is not None:
        replay["batch_size"] = batch
    return load_config().replace(env={"n_envs": envs}, replay=replay)


def rates(mode: str, config: TrainConfig, steps: int, elapsed: float) -> dict[str, Any]:
    """One row: the step's time and its three rates."""
    updates_per_s = steps / elapsed
    return {
        "mode": mode,
        "envs": config.env.n_envs,
        "batch": config.replay.batch_size,
        "threads": torch.get_num_threads() if config.run.device == "cpu" or mode == "cpu" else 0,
        "steps": steps,
        "seconds": elapsed,
        "ms_per_step": 1e3 * elapsed / steps,
        "updates_per_s": updates_per_s,
        "samples_per_s": config.replay.batch_size * updates_per_s,
        "env_steps_per_s": config.env.n_envs * updates_per_s,
    }


def measure(mode: str, config: TrainConfig, steps: int, warmup: int, cpu_threads: int) -> dict[str, Any]:
    """Time ``steps`` steps of ``config`` in ``mode`` on a synthetic market."""
    device = torch.device("cuda" if mode.startswith("gpu") else "cpu")
    if device.type == "cpu":
        prepare_cpu_process(cpu_threads)  # as `trainer train` sets up a CPU run
    state = TrainerState(config, synthetic_market(20_000, config.model.window), device)
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + math.ceil(config.replay.learning_starts / config.env.n_envs)):
        step.collect()
    runner = StepRunner(step, use_graph=mode == "gpu-graph")
    runner.run(warmup)  # graph mode: eager warm-up + capture happen here
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    runner.run(steps)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return rates(mode, config, steps, time.perf_counter() - started)


def measure_population(agents: int, config: TrainConfig, steps: int, warmup: int, cpu_threads: int,
                       seconds: float | None = None) -> dict[str, Any]:  # fmt: skip
    """``agents`` agents (seeds 0 … agents − 1) of ``config`` stepped by one ``StepRunner`` — the stacked
    population step, on CUDA one captured graph; aggregate rates count every agent's updates.

    ``seconds``: a budget for the timed steps (at most ``steps``; timed in chunks, each ended by a
    device synchronisation, until the budget is spent — so a large P stays within a time limit)."""
    device = torch.device("cuda" if torch.cuda.is_available() and config.run.device != "cpu" else "cpu")
    if device.type == "cpu":
        prepare_cpu_process(cpu_threads)
    else:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    market = synthetic_market(20_000, config.model.window)
    built = time.perf_counter()
    steps_of = []
    for agent in range(agents):
        state = TrainerState(config.replace(run={"seed": agent}), market, device)
        step = TrainStep(state)
        for _ in range(config.loss.n_step - 1 + math.ceil(config.replay.learning_starts / config.env.n_envs)):
            step.collect()
        steps_of.append(step)
    runner = StepRunner(steps_of, use_graph=device.type == "cuda")
    runner.run(warmup)  # graph mode: eager warm-up + the one capture of every agent
    if device.type == "cuda":
        torch.cuda.synchronize()
    setup_s = time.perf_counter() - built
    started = time.perf_counter()
    done = 0
    chunk = steps if seconds is None else max(1, min(steps, 10))
    while done < steps:
        runner.run(min(chunk, steps - done))
        done += min(chunk, steps - done)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if seconds is not None and time.perf_counter() - started >= seconds:
            break
    elapsed = time.perf_counter() - started
    row = rates(f"population {agents}", config, done * agents, elapsed)  # aggregate: every agent's updates
    row.update({
        "agents": agents,
        "population_steps": done,
        "setup_s": setup_s,
        "ms_per_population_step": 1e3 * elapsed / done,
        "gpu_peak_memory_gib": torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
        **population_launches(runner, device),
    })  # fmt: skip
    return row


def population_launches(runner: StepRunner, device: torch.device, steps: int = 2) -> dict[str, float | None]:
    """What one population step launches, counted by the torch profiler over ``steps`` eager steps
    (a captured graph replays the same kernels): CUDA kernels on a GPU, and the top-level ATen ops
    (each one dispatch from Python, the CPU's counterpart of a launch) on either device — how far
    the step's launches stay flat in P."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            runner.step_all()
        if device.type == "cuda":
            torch.cuda.synchronize()
    events = prof.events()
    kernels = [event for event in events if event.device_type == torch.autograd.DeviceType.CUDA]
    top = top_level_aten_ops(events)
    return {
        "cuda_kernels_per_population_step": len(kernels) / steps if device.type == "cuda" else None,
        "aten_ops_per_population_step": len(top) / steps,
    }


def population_rows(sizes: list[int], args: argparse.Namespace, results: list[dict[str, Any]]) -> dict[str, float]:
    """The population rows (P agents in one step) and each size's aggregate speed-up over P = 1."""
    config = step_config(args.envs, args.batch).replace(run={"device": "cuda" if torch.cuda.is_available() else "cpu"})
    gpu = config.run.device == "cuda"
    rows = []
    for agents in sizes:
        row = measure_population(agents, config, args.steps if gpu else args.cpu_steps, 10 if gpu else 1, args.cpu_threads,
                                 args.population_seconds)  # fmt: skip
        memory = f"  GPU peak {row['gpu_peak_memory_gib']:.2f} GiB" if row["gpu_peak_memory_gib"] is not None else ""
        kernels = row["cuda_kernels_per_population_step"]
        launches = f"  {kernels:.0f} CUDA kernels" if kernels is not None else ""
        print_row(row)
        print(f"{'':<12} {row['ms_per_population_step']:.3f} ms per population step ({row['population_steps']} timed, "
              f"set-up and capture {row['setup_s']:.1f} s){memory}{launches}  {row['aten_ops_per_population_step']:.0f} "
              f"top-level ATen ops per population step", flush=True)  # fmt: skip
        rows.append(row)
    results.extend(rows)
    single = next((row for row in rows if row["agents"] == 1), None)
    if single is None:
        return {}
    return {f"population_{row['agents']}_over_1": row["updates_per_s"] / single["updates_per_s"] for row in rows if row["agents"] > 1}


def measure_train(config: TrainConfig, steps: int) -> dict[str, Any]:
    """``trainer train`` end to end (the driver the CLI calls), with its phases from the progress calls."""
    from trainer.train.loop import train

    config = config.replace(run={"steps": steps})
    marks: dict[str, float] = {}
    boundaries: list[float] = []  # per epoch: the device done with its steps → its HEALTH_DIAG record written
    cuda = config.run.device == "cuda"

    def progress(done: int, total: int, info: dict[str, Any] | None) -> None:
        if info is None and (done % config.run.epoch_steps == 0 or done >= total):
            if cuda:  # the epoch's last chunk: wait for its steps, so the boundary starts from an idle device
                torch.cuda.synchronize()
            marks["epoch_end"] = time.perf_counter()
            return
        now = time.perf_counter()
        if info is not None and "warmup" in info:
            marks["loop_start"] = now  # the last warm-up collect has just run
        elif info is not None and "losses" in info:
            boundaries.append(now - marks.get("epoch_end", now))
            if done >= total:
                marks["loop_end"] = now  # the last epoch's boundary (validation, HEALTH_DIAG) is done

    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        train(config, out, progress=progress)
        ended = time.perf_counter()
    loop_start = marks.get("loop_start", started)
    loop_end = marks.get("loop_end", ended)
    row = rates(f"train ({config.run.device})", config, steps, ended - started)
    row.update({
        "epoch_steps": config.run.epoch_steps,
        "startup_s": loop_start - started,
        "loop_s": loop_end - loop_start,
        "tail_s": ended - loop_end,
        "loop_ms_per_step": 1e3 * (loop_end - loop_start) / steps,
        "epochs": len(boundaries),
        "boundary_s": sum(boundaries),  # summary, validation rollouts, HEALTH_DIAG (measured)
    })  # fmt: skip
    return row


def measure_boundary(config: TrainConfig, steps: int, repeats: int, shadow_steps: int) -> dict[str, Any]:
    """The epoch boundary of ``trainer train`` phase by phase, built from the loop's own parts on the
    config's real data, after ``steps`` training steps; every phase is timed between two device
    synchronisations, the median of ``repeats`` (the first call, which captures, apart):

    - ``summary_s``: ``epoch_summary`` — the gradient-norm pass and the epoch's one host read;
    - ``validation_s``: the two greedy rollouts (validation + training tail) with their baselines, as
      ``evaluate`` runs them — captured on CUDA (``first_validation_s`` includes the capture) — and
      ``validation_eager_s``, the same rollouts walked bar by bar in Python (as before issue 11);
    - ``checkpoint_s``: ``CheckpointWriter.save`` until its copies to pinned memory are done (the
      snapshot's sync, the copies); ``write_shadow_s``: how much longer ``shadow_steps`` steps take
      while the background thread writes the files than with no write in flight (GIL contention).
    """
    import statistics

    from trainer.train.checkpoint import CheckpointWriter
    from trainer.train.loop import epoch_summary, evaluate, prepare_market, resolve_device, run_splits, start_split, training_tail
    from trainer.train.validate import GreedyRollouts

    device = resolve_device(config.run.device)
    if device.type == "cpu":
        prepare_cpu_process(config.run.cpu_threads)
    market = prepare_market(config)
    split = run_splits(config, market)[0]
    run = start_split(config, market, split, device, None)
    state, step = run.state, run.step
    for _ in range(config.loss.n_step - 1 + math.ceil(config.replay.learning_starts / config.env.n_envs)):
        step.collect()
    runner = StepRunner(step, use_graph=config.run.cuda_graph)
    runner.run(steps)
    windows = [split.validation, training_tail(split, split.validation.stop - split.validation.start)]
    eager = GreedyRollouts(state, step, capture=False)

    def timed(phase: Any) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        phase()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started

    row: dict[str, Any] = {"mode": f"boundary ({device.type})", "envs": config.env.n_envs, "batch": config.replay.batch_size,
                           "validation_bars": windows[0].stop - windows[0].start, "repeats": repeats}  # fmt: skip
    row["first_validation_s"] = timed(lambda: evaluate(run, market, windows))
    samples: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as scratch, CheckpointWriter() as saver:
        for _ in range(repeats):
            samples["summary_s"].append(timed(lambda: epoch_summary(step)))
            samples["validation_s"].append(timed(lambda: evaluate(run, market, windows)))
            samples["validation_eager_s"].append(timed(lambda: eager.validation_curves(market.close, market.spread, windows)))
            samples["checkpoint_s"].append(timed(lambda: saver.save(state, Path(scratch), {}, keep=1)))
            with_write = timed(lambda: runner.run(shadow_steps))
            saver.wait()
            samples["write_shadow_s"].append(with_write - timed(lambda: runner.run(shadow_steps)))
    row.update({name: statistics.median(values) for name, values in samples.items()})
    row["shadow_steps"] = shadow_steps
    row["boundary_s"] = row["summary_s"] + row["validation_s"] + row["checkpoint_s"] + max(row["write_shadow_s"], 0.0)
    return row


def profile_steps(config: TrainConfig, device: torch.device, steps: int) -> str:
    """Kernels (CUDA) or ATen ops (CPU) per eager step, GEMM shapes and FLOPs, bytes read, heaviest ops."""
    from torch.profiler import ProfilerActivity, profile

    state = TrainerState(config, synthetic_market(20_000, config.model.window), device)
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + math.ceil(config.replay.learning_starts / config.env.n_envs)):
        step.collect()
    for _ in range(3):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        for _ in range(steps):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
    events = prof.events()
    lines = []
    if device.type == "cuda":
        kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
        busy_us = sum(e.device_time for e in kernels) / steps
        lines.append(f"CUDA kernels per step: {len(kernels) / steps:.0f}, GPU busy {busy_us:.0f} us per step")
    # Top-level ATen ops (no ATen op above them): one dispatch each from Python — on the CPU the
    # counterpart of a kernel launch (the ops they call inside, views and copies, are not counted).
    aten = [e for e in events if e.name.startswith("aten::") and e.device_type == torch.autograd.DeviceType.CPU]
    top = top_level_aten_ops(events)
    lines.append(f"top-level ATen ops per step: {len(top) / steps:.0f}")
    gemms: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    bytes_read = 0.0
    for event in top:
        shapes = [tuple(s) for s in (event.input_shapes or []) if isinstance(s, (list, tuple)) and s]
        bytes_read += 4.0 * sum(math.prod(s) for s in shapes)  # f32 (int64 indices undercount by 2)
    for event in aten:
        if event.name not in GEMM_OPS or (event.cpu_parent is not None and event.cpu_parent.name in GEMM_OPS):
            continue
        shapes = [tuple(s) for s in (event.input_shapes or []) if isinstance(s, (list, tuple)) and s]
        entry = gemms[(event.name, " × ".join("x".join(map(str, s)) for s in shapes))]
        entry[0] += 1
        entry[1] += _gemm_flops(event.name, shapes)
    lines.append(f"bytes read by top-level ops per step: {bytes_read / steps / 1e6:.1f} MB (from their input shapes, f32)")
    total_flops = sum(flops for _, flops in gemms.values()) / steps
    gemm_calls = sum(count for count, _ in gemms.values()) / steps
    lines.append(f"GEMMs per step: {gemm_calls:.0f}, {total_flops / 1e6:.1f} MFLOP per step")
    lines.append("GEMM shapes (calls per step, MFLOP per step):")
    for (name, shapes), (count, flops) in sorted(gemms.items(), key=lambda item: -item[1][1]):
        lines.append(f"  {name:<14} {shapes:<40} {count / steps:5.1f}  {flops / steps / 1e6:8.2f}")
    sort_by = "cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    lines.append(prof.key_averages().table(sort_by=sort_by, row_limit=25))
    return "\n".join(lines)


def _gemm_flops(name: str, shapes: list[tuple[int, ...]]) -> float:
    """2·M·N·K of one GEMM call from its input shapes (bias of addmm first, batch of bmm leading)."""
    if name == "aten::addmm" and len(shapes) >= 3:
        (m, k), (_, n) = shapes[1][-2:], shapes[2][-2:]
        return 2.0 * m * n * k
    if name in ("aten::bmm", "aten::baddbmm"):
        first, second = (shapes[1], shapes[2]) if name == "aten::baddbmm" and len(shapes) >= 3 else (shapes[0], shapes[1])
        return 2.0 * first[0] * first[1] * first[2] * second[-1]
    m, k = shapes[0][-2:]
    return 2.0 * m * k * shapes[1][-1]


def print_row(result: dict[str, Any]) -> None:
    print(
        f"{result['mode']:<12} envs={result['envs']:>6} batch={result['batch']:>5} "
        f"{result['ms_per_step']:9.3f} ms/step  {result['updates_per_s']:10.1f} updates/s  "
        f"{result['samples_per_s']:12,.0f} samples/s  {result['env_steps_per_s']:14,.0f} env-steps/s",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=4096, help="environments (default 4096)")
    parser.add_argument("--steps", type=int, default=500, help="timed steps per GPU mode (default 500)")
    parser.add_argument("--eager-steps", type=int, default=100, help="timed steps in gpu-eager mode (default 100)")
    parser.add_argument("--cpu-steps", type=int, default=3, help="timed steps in cpu mode (default 3)")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1, help="torch threads in cpu mode (default: all cores)")
    parser.add_argument("--batch", type=int, default=None, help="replay batch per update (default: the config's)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--train", action="store_true", help="also time `trainer train` end to end beside its own step")
    parser.add_argument("--train-config", default=None, metavar="TOML",
                        help="config of the --train row (default: config/train/gpu.toml on CUDA, the default config on the CPU)")
    parser.add_argument("--train-steps", type=int, default=None, help="steps of the --train row (default: the config's run.steps)")
    parser.add_argument("--boundary-repeats", type=int, default=3,
                        help="repeats of each epoch-boundary phase in the --train boundary row (default 3)")
    parser.add_argument("--population", default="", metavar="LIST",
                        help="also time populations of these sizes in one step (e.g. 1,8,32,128): aggregate updates/s, GPU memory")
    parser.add_argument("--population-seconds", type=float, default=None, metavar="S",
                        help="time budget of each population row's timed steps (default: all --steps / --cpu-steps)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--profile", default=None, metavar="PATH", help="also profile 5 eager steps into PATH")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown} (vs {MODES})")
    if not torch.cuda.is_available():
        modes = [m for m in modes if not m.startswith("gpu")]
    results = []
    for mode in modes:
        steps = {"gpu-graph": args.steps, "gpu-eager": args.eager_steps, "cpu": args.cpu_steps}[mode]
        warmup = {"gpu-graph": 10, "gpu-eager": 5, "cpu": 1}[mode]
        result = measure(mode, step_config(args.envs, args.batch), steps, warmup, args.cpu_threads)
        results.append(result)
        print_row(result)
    by_mode = {r["mode"]: r for r in results}
    ratios = {}
    if "gpu-graph" in by_mode and "gpu-eager" in by_mode:
        ratios["graph_over_eager"] = by_mode["gpu-graph"]["updates_per_s"] / by_mode["gpu-eager"]["updates_per_s"]
    if "gpu-graph" in by_mode and "cpu" in by_mode:
        ratios["graph_over_cpu"] = by_mode["gpu-graph"]["updates_per_s"] / by_mode["cpu"]["updates_per_s"]
    if "gpu-eager" in by_mode and "cpu" in by_mode:
        ratios["eager_over_cpu"] = by_mode["gpu-eager"]["updates_per_s"] / by_mode["cpu"]["updates_per_s"]
    if args.train:
        ratios.update(train_rows(args, results))
    if args.population:
        ratios.update(population_rows([int(size) for size in args.population.split(",") if size.strip()], args, results))
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x")
    verdicts = []
    if "gpu-graph" in by_mode:
        graph = by_mode["gpu-graph"]
        fast_enough = graph["env_steps_per_s"] >= TARGET_ENV_STEPS_PER_S
        verdicts.append(f"env-steps/s {graph['env_steps_per_s']:,.0f} vs target {TARGET_ENV_STEPS_PER_S:,} ({'met' if fast_enough else 'not met'})")
        if "graph_over_eager" in ratios:
            met = ratios["graph_over_eager"] >= TARGET_GRAPH_OVER_EAGER
            verdicts.append(f"graph/eager {ratios['graph_over_eager']:.2f}x vs target {TARGET_GRAPH_OVER_EAGER}x ({'met' if met else 'not met'})")
    if "train_loop_over_step" in ratios:
        met = ratios["train_loop_over_step"] <= TARGET_TRAIN_OVER_STEP
        verdicts.append(f"train loop/step {ratios['train_loop_over_step']:.2f}x vs target ≤ {TARGET_TRAIN_OVER_STEP}x ({'met' if met else 'not met'})")
    for agents, target in TARGET_POPULATION_OVER_SINGLE.items():
        ratio = ratios.get(f"population_{agents}_over_1")
        if ratio is not None:
            verdicts.append(f"population {agents}/1 {ratio:.1f}x vs target ≥ {target}x ({'met' if ratio >= target else 'not met'})")
    if verdicts:
        print("targets: " + "; ".join(verdicts))
    if args.json:
        device_name = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        Path(args.json).write_text(json.dumps({"device": device_name, "results": results, "ratios": ratios}, indent=2))
    if args.profile:
        device = torch.device("cuda" if torch.cuda.is_available() and any(m.startswith("gpu") for m in modes) else "cpu")
        if device.type == "cpu":
            prepare_cpu_process(args.cpu_threads)
        report = profile_steps(step_config(args.envs, args.batch), device, 5)
        Path(args.profile).write_text(report + "\n")
        print("\n".join(report.splitlines()[:4]))
    return 0


def train_rows(args: argparse.Namespace, results: list[dict[str, Any]]) -> dict[str, float]:
    """The end-to-end row and, in the same process, the step of the same config; returns their ratios."""
    gpu = torch.cuda.is_available() and any(m.startswith("gpu") for m in args.modes.split(","))
    config = load_config(args.train_config if args.train_config is not None else (GPU_CONFIG if gpu else None))
    config = config.replace(run={"device": "cuda" if gpu else "cpu", "cpu_threads": args.cpu_threads})
    steps = args.train_steps if args.train_steps is not None else config.run.steps
    mode = ("gpu-graph" if config.run.cuda_graph else "gpu-eager") if gpu else "cpu"
    alone = measure(mode, config, args.steps if gpu else args.cpu_steps, 10 if gpu else 1, args.cpu_threads)
    alone["mode"] = f"{mode} (same config)"
    print_row(alone)
    product = measure_train(config, steps)
    print_row(product)
    epochs = max(product["epochs"], 1)
    implied = product["loop_s"] - steps * alone["ms_per_step"] / 1e3  # all boundary work, checkpoints included
    print(
        f"{'':<12} start-up {product['startup_s']:.1f} s · loop {product['loop_s']:.1f} s "
        f"({product['loop_ms_per_step']:.3f} ms/step, epochs of {product['epoch_steps']:,} steps) · "
        f"tail {product['tail_s']:.1f} s (test backtest, plots, last checkpoint)\n"
        f"{'':<12} epoch boundary {1e3 * product['boundary_s'] / epochs:.0f} ms per epoch measured (summary, "
        f"validation, HEALTH_DIAG) · loop − steps × step = {1e3 * implied / epochs:.0f} ms per epoch (with checkpoints)",
        flush=True,
    )
    boundary = measure_boundary(config, args.steps if gpu else args.cpu_steps, args.boundary_repeats,
                                shadow_steps=min(config.run.epoch_steps, 200 if gpu else args.cpu_steps))  # fmt: skip
    print(
        f"{boundary['mode']:<12} per epoch: summary {1e3 * boundary['summary_s']:.1f} ms · validation "
        f"{1e3 * boundary['validation_s']:.1f} ms (eager {1e3 * boundary['validation_eager_s']:.1f} ms, first call "
        f"{1e3 * boundary['first_validation_s']:.1f} ms; {boundary['validation_bars']:,} bars × 2 windows) · checkpoint "
        f"{1e3 * boundary['checkpoint_s']:.1f} ms + {1e3 * boundary['write_shadow_s']:.1f} ms on the next "
        f"{boundary['shadow_steps']} steps · total {1e3 * boundary['boundary_s']:.1f} ms",
        flush=True,
    )
    results.extend([alone, product, boundary])
    return {
        "train_loop_over_step": product["loop_ms_per_step"] / alone["ms_per_step"],
        "train_e2e_over_step": product["ms_per_step"] / alone["ms_per_step"],
        "validation_eager_over_captured": boundary["validation_eager_s"] / boundary["validation_s"],
    }


if __name__ == "__main__":
    sys.exit(main())
