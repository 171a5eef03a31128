"""Small configs and synthetic markets shared by the training-core tests (no data files needed), and the
greedy rollout as it was written before it was captured (the reference every rollout path must equal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from trainer.config import TrainConfig
from trainer.env.vector_env import VectorEnv
from trainer.isv import Isv
from trainer.layout import (
    BRANCH_DIRECTION,
    DIRECTION_LONG,
    DIRECTION_SHORT,
    FEATURE_STRIDE,
    JOINT_STRIDES,
    PORTFOLIO_INPUT_STRIDE,
    PS_BAR_INDEX,
    PS_EPISODE_START,
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
)
from trainer.ops.rng import new_counter
from trainer.train.graph import StepRunner
from trainer.train.loop import PreparedMarket
from trainer.train.step import MarketWindow, TrainerState, TrainStep

TINY = {
    "env": {"n_envs": 8, "episode_length": 48},
    "model": {"window": 4, "scan_channels": 8, "scan_state": 4, "hidden": 32, "head_hidden": 16, "n_atoms": 11,
              "iqn_embedding": 16},
    "loss": {"n_step": 3, "iqn_tau_samples": 4, "iqn_target_samples": 4},
    "replay": {"capacity": 256, "batch_size": 16, "learning_starts": 32},
    "schedule": {"horizon_steps": 0},  # the schedules span each test's own run.steps
    "run": {"steps": 20, "epoch_steps": 10, "device": "cpu", "patience": 0},
}  # fmt: skip


def tiny_config(**sections: dict) -> TrainConfig:
    merged = {name: dict(values) for name, values in TINY.items()}
    for name, values in sections.items():
        merged.setdefault(name, {}).update(values)
    return TrainConfig().replace(**merged)


def synthetic_market(n_bars: int = 400, window: int = 4, seed: int = 0) -> MarketWindow:
    generator = torch.Generator().manual_seed(seed)
    log_returns = torch.randn(n_bars, generator=generator, dtype=torch.float64) * 2e-3
    close = (100.0 * torch.exp(torch.cumsum(log_returns, 0))).to(torch.float32)
    features = torch.randn(n_bars, FEATURE_STRIDE, generator=generator).clamp(-5, 5)
    return MarketWindow(close=close[window:], spread=torch.zeros(n_bars - window), features=features, offset=window)


def drifting_market(n_bars: int = 400, window: int = 4) -> MarketWindow:
    """A market that only rises (+0.3 % a bar, ± 0.1 %): long is right on every bar."""
    generator = torch.Generator().manual_seed(11)
    log_returns = 3e-3 + torch.randn(n_bars, generator=generator, dtype=torch.float64) * 1e-3
    close = (100.0 * torch.exp(torch.cumsum(log_returns, 0))).to(torch.float32)
    features = torch.randn(n_bars, FEATURE_STRIDE, generator=generator).clamp(-5, 5)
    return MarketWindow(close=close[window:], spread=torch.zeros(n_bars - window), features=features, offset=window)


def greedy_direction_bias(config: TrainConfig, market: MarketWindow, updates: int = 300) -> float:
    """Long share − short share of the greedy direction over every bar of ``market``, flat portfolio,
    after ``updates`` training steps of ``config`` on it."""
    state, step = collected_state(config, market)
    StepRunner(step, use_graph=True).run(updates)
    bars = torch.arange(0, market.close.shape[0] - 1)
    portfolio = torch.zeros(bars.shape[0], PORTFOLIO_INPUT_STRIDE)
    direction = step.greedy(state.gather_windows(bars), portfolio)[:, BRANCH_DIRECTION]
    return float((direction == DIRECTION_LONG).float().mean() - (direction == DIRECTION_SHORT).float().mean())


def synthetic_prepared_market(n_bars: int = 400, window: int = 4, seed: int = 0) -> PreparedMarket:
    """A synthetic market as ``trainer.train.loop.prepare_market`` returns it (the run's splits come
    from its config), without files, pandas or the feature cache (the GPU machine lacks the loaders' deps)."""
    market = synthetic_market(n_bars, window, seed)
    close = torch.cat([torch.full((window,), float(market.close[0])), market.close])  # [n_bars] global bars
    return PreparedMarket(
        close=close, spread=torch.zeros(n_bars), features=market.features, first=window,
        periods_per_year=252.0 * 24, source="synthetic",
    )  # fmt: skip


FILE_TINY = {
    "data": {"embargo_bars": 3, "periods_per_year": 6048},
    "env": {"n_envs": 4, "episode_length": 32},
    "model": {"window": 2, "temporal_encoder": False, "hidden": 16, "head_hidden": 8, "n_atoms": 11, "iqn_embedding": 8},
    "loss": {"n_step": 2, "iqn_tau_samples": 2, "iqn_target_samples": 2},
    "replay": {"capacity": 64, "batch_size": 8, "learning_starts": 8},
    "schedule": {"horizon_steps": 0},
    "run": {"steps": 6, "epoch_steps": 3, "device": "cpu", "cuda_graph": False, "patience": 0},
}  # fmt: skip


def file_config(path, **overrides: dict) -> TrainConfig:
    """A tiny config that trains on the bars of a market file (the run driver's whole path: loader,
    feature cache, splits)."""
    sections = {name: dict(values) for name, values in FILE_TINY.items()}
    sections["data"]["path"] = str(path)
    for name, values in overrides.items():
        sections.setdefault(name, {}).update(values)
    return TrainConfig().replace(**sections)


def reference_rollout(state: TrainerState, step: TrainStep, close: torch.Tensor, spread: torch.Tensor,
                      feature_offset: int, starts: list[int], n_bars: int,
                      margins: list[float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The rollout as it was written before it was captured: a fresh env and ISV copy, a Python loop
    writing bar t's row — (equity, units, actions) [n − 2, W(, D)], the semantics every path must keep
    (with ``margins``, each window's flat margin given to ``backtest_greedy``)."""
    isv = Isv(state.device)
    isv.load_state(state.isv.state())
    isv.write_config("EPISODE_LENGTH", 0.0)
    env = VectorEnv(close, n_envs=len(starts), isv=isv, seed=state.seed, spread=spread, counter=new_counter(state.device))
    start_bars = torch.tensor(starts, dtype=torch.float32, device=state.device)
    env.ps[:, PS_BAR_INDEX] = start_bars
    env.ps[:, PS_EPISODE_START] = start_bars
    strides = torch.tensor(JOINT_STRIDES, dtype=torch.int64, device=state.device)
    state.isv_local.copy_(state.isv.tensor)
    equity, units, actions = [], [], []
    state.online.eval()
    with torch.inference_mode():
        for _ in range(n_bars - 2):
            flat_margin = None if margins is None else torch.tensor(margins, dtype=torch.float32, device=state.device)
            chosen = step.backtest_greedy(state.gather_windows(env.bar_index(), feature_offset), env.portfolio_inputs(), flat_margin)
            env.step((chosen * strides).sum(-1).to(torch.int32))
            equity.append(env.ps[:, PS_PORTFOLIO_VALUE].double().cpu().numpy())
            units.append(env.ps[:, PS_POSITION].double().cpu().numpy())
            actions.append(chosen.cpu().numpy())
    state.online.train()
    return np.stack(equity), np.stack(units), np.stack(actions)


@contextmanager
def online_holding_target(state: TrainerState) -> Iterator[None]:
    """The reference of ``run.policy_weights = "target"``: the online network holding its target's
    weights (copied in, and the online weights copied back on exit)."""
    kept = [parameter.detach().clone() for parameter in state.online.parameters()]
    with torch.no_grad():
        for online, target in zip(state.online.parameters(), state.target.parameters(), strict=True):
            online.copy_(target)
    try:
        yield
    finally:
        with torch.no_grad():
            for online, saved in zip(state.online.parameters(), kept, strict=True):
                online.copy_(saved)


def perturb_network(state: TrainerState, seed: int) -> None:
    """Add N(0, 0.5²) to every weight in place (as an update does): a greedy policy that trades."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in state.online.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator).to(parameter.device) * 0.5)


# A stacked population agent against its single run (trainer.train.population): every forward is
# bitwise on the CPU, the batched layer-norm backward and the per-row clip norm reduce in another
# order (≈ 1e-7 after a few steps, measured), so float state is compared within these bounds and
# everything discrete (actions, replay indices, counters, RNG) exactly.
POPULATION_RTOL = 1e-4
POPULATION_ATOL = 1e-5


def close_state_differences(expected: dict, got: dict, rtol: float = POPULATION_RTOL, atol: float = POPULATION_ATOL) -> list[str]:
    """Names of tensors that differ beyond the population tolerance (floats) or at all (integers, bools)."""
    assert expected.keys() == got.keys(), sorted(set(expected) ^ set(got))[:5]
    different = []
    for name, want in expected.items():
        have = got[name]
        if want.shape != have.shape:
            different.append(f"{name} shape {tuple(have.shape)} vs {tuple(want.shape)}")
        elif want.is_floating_point():
            error = (have.double() - want.double()).abs()
            if bool((error > atol + rtol * want.double().abs()).any()):
                different.append(f"{name} max error {float(error.max()):.3e}")
        elif not torch.equal(want, have):
            different.append(f"{name} (exact)")
    return different


def close_json_differences(expected, got, path: str = "", rtol: float = POPULATION_RTOL, atol: float = POPULATION_ATOL) -> list[str]:
    """Where two JSON values differ: numbers beyond the population tolerance, anything else at all."""
    if isinstance(expected, dict) and isinstance(got, dict):
        if expected.keys() != got.keys():
            return [f"{path}: keys {sorted(set(expected) ^ set(got))[:5]}"]
        return [d for key in expected for d in close_json_differences(expected[key], got[key], f"{path}.{key}", rtol, atol)]
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            return [f"{path}: length {len(got)} vs {len(expected)}"]
        return [d for i, (e, g) in enumerate(zip(expected, got, strict=True)) for d in close_json_differences(e, g, f"{path}[{i}]", rtol, atol)]
    if isinstance(expected, float) and isinstance(got, float | int) and not isinstance(got, bool):
        if expected != expected and got != got:  # both NaN
            return []
        return [] if abs(got - expected) <= atol + rtol * abs(expected) else [f"{path}: {got!r} vs {expected!r}"]
    return [] if expected == got else [f"{path}: {got!r} vs {expected!r}"]


def collected_state(config: TrainConfig, market: MarketWindow | None = None) -> tuple[TrainerState, TrainStep]:
    """A CPU training state whose n-step window is full and whose replay holds a few steps: ready for updates."""
    torch.set_num_threads(1)
    state = TrainerState(config, market or synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    return state, step
