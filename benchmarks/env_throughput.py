"""Env-steps per second of the trading environment: CuPy kernel vs PyTorch reference (GPU, CPU).

One run, side by side:
- kernel: ``env_step`` with K bars per launch and L launches captured in one CUDA graph, so a
  replay steps K·L bars of every env (the "many bars per replay" mode of the benchmark);
- reference on the GPU: the same step through ``env_step_reference`` (eager torch ops);
- reference on the CPU: the CPU backend of the trainer.

The achieved memory-bandwidth fraction is printed beside the kernel rate: bytes moved per env-step
(actions, close[t], close[t+1], spread, rewards, dones, obs_index, plus the ps row amortised over
K) × rate / peak, with the peak measured in the same run by a large device-to-device copy.

    PYTHONPATH=. python3 benchmarks/env_throughput.py            # defaults: 65,536 envs
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from trainer.isv import Isv
from trainer.layout import (
    ISV_KELLY_CAP,
    N_JOINT_ACTIONS,
    PS_BAR_INDEX,
    PS_CASH,
    PS_EPISODE_START,
    PS_PORTFOLIO_VALUE,
    PS_STRIDE,
)
from trainer.ops.env_step import env_step, env_step_reference
from trainer.ops.rng import new_counter


def make_market(n_bars: int, device: torch.device, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    close = (100.0 * torch.exp(torch.cumsum(torch.randn(n_bars, generator=g, dtype=torch.float64) * 1e-3, 0))).float()
    spread = torch.full((n_bars,), 0.01)
    return close.to(device), spread.to(device)


def make_state(n_envs: int, k_steps: int, n_bars: int, device: torch.device, isv: Isv):
    close, spread = make_market(n_bars, device)
    g = torch.Generator().manual_seed(1)
    ps = torch.zeros(n_envs, PS_STRIDE, device=device)
    start = torch.randint(0, n_bars - 1, (n_envs,), generator=g).float().to(device)
    ps[:, PS_CASH] = 1.0
    ps[:, PS_PORTFOLIO_VALUE] = 1.0
    ps[:, PS_BAR_INDEX] = start
    ps[:, PS_EPISODE_START] = start
    actions = torch.randint(0, N_JOINT_ACTIONS, (k_steps, n_envs), generator=g, dtype=torch.int32).to(device)
    outputs = {"rewards": torch.zeros(k_steps, n_envs, device=device), "dones": torch.zeros(k_steps, n_envs, device=device),
                   "obs_index": torch.zeros(k_steps, n_envs, dtype=torch.int32, device=device),
                   "terminals": torch.zeros(k_steps, n_envs, device=device),
                   "final_ps": torch.zeros(k_steps, n_envs, PS_STRIDE, device=device)}  # fmt: skip
    return dict(ps=ps, isv=isv.tensor, actions=actions, close=close, spread=spread, counter=new_counter(device),
                seed=12345, **outputs)  # fmt: skip


def bytes_per_env_step(k_steps: int) -> float:
    per_bar = 4 * 8  # actions, close[t], close[t+1], spread[t] read; rewards, dones, obs_index, terminals
    # written (the final_ps row of an ending episode, once per episode, is left out)
    return per_bar + 2 * 4 * PS_STRIDE / k_steps  # ps row read once and written once per launch


def measure_peak_bandwidth(device: torch.device, n_bytes: int = 4 << 30, repeats: int = 10) -> float:
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    torch.cuda.synchronize(device)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        dst.copy_(src)
    stop.record()
    torch.cuda.synchronize(device)
    seconds = start.elapsed_time(stop) / 1e3
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n_bytes * repeats / seconds  # read + write


def bench_kernel(n_envs: int, k_steps: int, launches: int, replays: int, n_bars: int, device: torch.device) -> dict:
    isv = Isv(device, config={"EPISODE_LENGTH": 2048.0})
    isv.tensor[ISV_KELLY_CAP] = 0.5
    state = make_state(n_envs, k_steps, n_bars, device, isv)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        env_step(**state)  # compile + load outside the capture
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            env_step(**state)
    graph.replay()
    torch.cuda.synchronize(device)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    stop.record()
    torch.cuda.synchronize(device)
    seconds = start.elapsed_time(stop) / 1e3
    steps = n_envs * k_steps * launches * replays
    finite = bool(torch.isfinite(state["rewards"]).all())
    return {"backend": f"cupy kernel ({k_steps} bar/launch)", "n_envs": n_envs, "bars_per_replay": k_steps * launches,
                "env_steps": steps, "seconds": seconds, "rate": steps / seconds, "rewards_finite": finite}  # fmt: skip


def bench_reference(n_envs: int, k_steps: int, repeats: int, n_bars: int, device: torch.device) -> dict:
    isv = Isv("cpu", config={"EPISODE_LENGTH": 2048.0})
    isv.tensor[ISV_KELLY_CAP] = 0.5
    state = make_state(n_envs, k_steps, n_bars, device, isv)
    state["isv"] = isv.tensor.to(device)
    env_step_reference(**state)  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    begin = time.perf_counter()
    for _ in range(repeats):
        env_step_reference(**state)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - begin
    steps = n_envs * k_steps * repeats
    return {"backend": f"torch reference ({device.type})", "n_envs": n_envs, "bars_per_replay": k_steps, "env_steps": steps,
                "seconds": seconds, "rate": steps / seconds}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-envs", type=int, default=65_536)
    parser.add_argument("--k-steps", type=int, default=256, help="bars per kernel launch")
    parser.add_argument("--launches", type=int, default=8, help="kernel launches captured per CUDA graph")
    parser.add_argument("--replays", type=int, default=50)
    parser.add_argument("--single-bar-launches", type=int, default=256,
                        help="also time the training-shaped mode: 1 bar per launch, this many launches per graph")
    parser.add_argument("--bars", type=int, default=100_000, help="length of the synthetic bar series")
    parser.add_argument("--reference-k-steps", type=int, default=8)
    parser.add_argument("--cpu-n-envs", type=int, default=65_536)
    parser.add_argument("--json", type=str, default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)

    results = []
    gpu = torch.cuda.is_available()
    if gpu:
        device = torch.device("cuda", torch.cuda.current_device())
        peak = measure_peak_bandwidth(device)
        kernel = bench_kernel(args.n_envs, args.k_steps, args.launches, args.replays, args.bars, device)
        kernel["bytes_per_env_step"] = bytes_per_env_step(args.k_steps)
        kernel["bandwidth_fraction"] = kernel["rate"] * kernel["bytes_per_env_step"] / peak
        kernel["peak_copy_bandwidth_gbs"] = peak / 1e9
        results.append(kernel)
        if args.single_bar_launches:
            results.append(bench_kernel(args.n_envs, 1, args.single_bar_launches, args.replays, args.bars, device))
        results.append(bench_reference(args.n_envs, args.reference_k_steps, 3, args.bars, device))
    results.append(bench_reference(args.cpu_n_envs, 2, 1, args.bars, torch.device("cpu")))

    name = torch.cuda.get_device_name() if gpu else "no GPU"
    print(f"env throughput — {name}, torch {torch.__version__}")
    print(f"{'backend':32} {'envs':>8} {'bars/replay':>11} {'env-steps/s':>14} {'vs CPU':>9}")
    cpu_rate = results[-1]["rate"]
    for r in results:
        print(f"{r['backend']:32} {r['n_envs']:>8} {r['bars_per_replay']:>11} {r['rate']:>14.4g} {r['rate'] / cpu_rate:>8.1f}×")
    if gpu:
        k = results[0]
        print(f"kernel: {k['bytes_per_env_step']:.1f} B/env-step × {k['rate']:.3g}/s = "
              f"{k['rate'] * k['bytes_per_env_step'] / 1e9:.1f} GB/s = {100 * k['bandwidth_fraction']:.2f} % of the "
              f"measured copy peak {k['peak_copy_bandwidth_gbs']:.0f} GB/s; rewards finite: {k['rewards_finite']}")  # fmt: skip
        print(f"kernel vs torch reference on the GPU: {k['rate'] / results[-2]['rate']:.1f}×; "
              f"target ≥ 1e9 env-steps/s: {'met' if k['rate'] >= 1e9 else 'NOT met'}")  # fmt: skip
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
