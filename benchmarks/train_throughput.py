"""Training-step throughput: CUDA-graph replay vs eager on the GPU vs the CPU path, in one run.

One step = every environment advances one bar (n_envs env-steps) + one gradient update + one
Polyak target update — the unit ``trainer train`` repeats. Each mode builds the same default
network (config/train/default.toml) and the same env count on a synthetic market (throughput
does not depend on the prices), fills the replay to ``learning_starts``, warms up, then times
``--steps`` steps between two device synchronisations.

    python benchmarks/train_throughput.py                 # 4,096 envs, all modes available
    python benchmarks/train_throughput.py --envs 64 --steps 20 --modes cpu

Prints a table and, with ``--json PATH``, writes the numbers. Needs torch (+ CuPy for the GPU
modes) and numpy only: no data files, no optional dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.config import load_config
from trainer.layout import FEATURE_STRIDE
from trainer.train.graph import StepRunner
from trainer.train.host import prepare_cpu_process
from trainer.train.step import MarketWindow, TrainerState, TrainStep

MODES = ("gpu-graph", "gpu-eager", "cpu")
TARGET_ENV_STEPS_PER_S = 2_000_000  # issue #5, at 4,096 envs and one update per step
TARGET_GRAPH_OVER_EAGER = 4.0


def synthetic_market(n_bars: int, window: int, seed: int = 0) -> MarketWindow:
    """A geometric random walk and standard-normal features (shape-faithful, content-free)."""
    generator = torch.Generator().manual_seed(seed)
    log_returns = torch.randn(n_bars, generator=generator, dtype=torch.float64) * 1e-3
    close = (100.0 * torch.exp(torch.cumsum(log_returns, 0))).to(torch.float32)
    features = torch.randn(n_bars, FEATURE_STRIDE, generator=generator).clamp(-5, 5)
    offset = window
    return MarketWindow(close=close[offset:], spread=torch.zeros(n_bars - offset), features=features, offset=offset)


def measure(mode: str, envs: int, steps: int, warmup: int, batch: int | None, cpu_threads: int) -> dict[str, float | int | str]:
    config = load_config()
    replay = {"capacity": max(envs * 16, 65_536), "learning_starts": envs * 2}
    if batch is not None:
        replay["batch_size"] = batch
    config = config.replace(env={"n_envs": envs}, replay=replay)
    device = torch.device("cuda" if mode.startswith("gpu") else "cpu")
    if device.type == "cpu":
        prepare_cpu_process(cpu_threads)  # as `trainer train` sets up a CPU run
    state = TrainerState(config, synthetic_market(20_000, config.model.window), device)
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 2):
        step.collect()
    runner = StepRunner(step, use_graph=mode == "gpu-graph")
    runner.run(warmup)  # graph mode: eager warm-up + capture happen here
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    runner.run(steps)
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    return {
        "mode": mode,
        "envs": envs,
        "batch": config.replay.batch_size,
        "threads": torch.get_num_threads() if device.type == "cpu" else 0,
        "steps": steps,
        "seconds": elapsed,
        "ms_per_step": 1e3 * elapsed / steps,
        "updates_per_s": steps / elapsed,
        "env_steps_per_s": steps * envs / elapsed,
    }


def profile_eager(envs: int, steps: int, batch: int | None) -> str:
    """Kernel count per step and the heaviest CUDA kernels of eager steps (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    config = load_config()
    replay = {"capacity": max(envs * 16, 65_536), "learning_starts": envs * 2}
    if batch is not None:
        replay["batch_size"] = batch
    config = config.replace(env={"n_envs": envs}, replay=replay)
    state = TrainerState(config, synthetic_market(20_000, config.model.window), torch.device("cuda"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 2):
        step.collect()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy_us = sum(e.device_time for e in kernels) / steps
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
    return f"CUDA kernels per step: {len(kernels) / steps:.0f}, GPU busy {busy_us:.0f} us per step\n{table}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=4096, help="environments (default 4096)")
    parser.add_argument("--steps", type=int, default=500, help="timed steps per GPU mode (default 500)")
    parser.add_argument("--eager-steps", type=int, default=100, help="timed steps in gpu-eager mode (default 100)")
    parser.add_argument("--cpu-steps", type=int, default=3, help="timed steps in cpu mode (default 3)")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1, help="torch threads in cpu mode (default: all cores)")
    parser.add_argument("--batch", type=int, default=None, help="replay batch per update (default: the config's)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--profile", default=None, metavar="PATH", help="also profile 5 eager GPU steps into PATH")
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
        result = measure(mode, args.envs, steps, warmup, args.batch, args.cpu_threads)
        results.append(result)
        print(
            f"{mode:<10} envs={result['envs']:>6} batch={result['batch']:>5} "
            f"{result['ms_per_step']:9.3f} ms/step  {result['updates_per_s']:10.1f} updates/s  "
            f"{result['env_steps_per_s']:14,.0f} env-steps/s",
            flush=True,
        )
    by_mode = {r["mode"]: r for r in results}
    ratios = {}
    if "gpu-graph" in by_mode and "gpu-eager" in by_mode:
        ratios["graph_over_eager"] = by_mode["gpu-graph"]["updates_per_s"] / by_mode["gpu-eager"]["updates_per_s"]
    if "gpu-graph" in by_mode and "cpu" in by_mode:
        ratios["graph_over_cpu"] = by_mode["gpu-graph"]["updates_per_s"] / by_mode["cpu"]["updates_per_s"]
    if "gpu-eager" in by_mode and "cpu" in by_mode:
        ratios["eager_over_cpu"] = by_mode["gpu-eager"]["updates_per_s"] / by_mode["cpu"]["updates_per_s"]
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x")
    if "gpu-graph" in by_mode:
        graph = by_mode["gpu-graph"]
        fast_enough = graph["env_steps_per_s"] >= TARGET_ENV_STEPS_PER_S
        verdict = "met" if fast_enough else "not met"
        verdicts = [f"env-steps/s {graph['env_steps_per_s']:,.0f} vs target {TARGET_ENV_STEPS_PER_S:,} ({verdict})"]
        if "graph_over_eager" in ratios:
            met = ratios["graph_over_eager"] >= TARGET_GRAPH_OVER_EAGER
            verdicts.append(f"graph/eager {ratios['graph_over_eager']:.2f}x vs target {TARGET_GRAPH_OVER_EAGER}x ({'met' if met else 'not met'})")
        print("targets: " + "; ".join(verdicts))
    if args.json:
        device_name = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        Path(args.json).write_text(json.dumps({"device": device_name, "results": results, "ratios": ratios}, indent=2))
    if args.profile and torch.cuda.is_available():
        report = profile_eager(args.envs, 5, args.batch)
        Path(args.profile).write_text(report)
        print(report.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
