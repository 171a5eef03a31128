"""Greedy out-of-sample backtest on the validation window, through the training environment.

Why through the env: the agent's validation equity must come from exactly the fills, fees,
slippage and limit-fill rules it trained under (the ``env_step`` kernel or its reference), and
the baselines from the same accounting (``trainer.env.accounting.backtest_targets``), or the
comparison would measure the accounting instead of the agent.

The rollout is one environment walking the window bar by bar with ε = 0, on a copy of the ISV
(episode length 0 = to the data end) and its own RNG counter, so validating never perturbs the
training state. Per-bar results are written into preallocated device tensors and read in one
transfer at the end (a cold point).
"""

from __future__ import annotations

import numpy as np
import torch

from trainer.env.accounting import backtest_targets
from trainer.env.vector_env import VectorEnv
from trainer.eval.backtest import EquityCurve, exposure_from_units
from trainer.isv import Isv
from trainer.layout import (
    BRANCH_CHOICES,
    BRANCH_SIZES,
    BRANCHES,
    JOINT_STRIDES,
    N_BRANCHES,
    PS_BAR_INDEX,
    PS_EPISODE_START,
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
)
from trainer.ops.rng import new_counter
from trainer.train.step import TrainerState, TrainStep


def action_fractions(actions: np.ndarray) -> dict[str, dict[str, float]]:
    """Per branch, the share of each sub-action in an int [T, N_BRANCHES] action history."""
    out: dict[str, dict[str, float]] = {}
    total = max(actions.shape[0], 1)
    for branch, (branch_slot, choices) in enumerate(zip(BRANCHES.slots, BRANCH_CHOICES, strict=True)):
        counts = np.bincount(actions[:, branch], minlength=BRANCH_SIZES[branch]) if actions.size else np.zeros(BRANCH_SIZES[branch])
        out[branch_slot.name.lower()] = {
            choice.name.lower(): float(counts[index]) / total for index, choice in enumerate(choices.slots)
        }
    return out


def greedy_rollout(
    state: TrainerState, step: TrainStep, close: torch.Tensor, spread: torch.Tensor, feature_offset: int
) -> EquityCurve:
    """Trade ``close`` (the validation bars; global feature row of bar 0 = ``feature_offset``) greedily.

    Returns the curve over bars 0 … n − 2 (compare baselines on ``close[:-1]``).
    """
    return greedy_rollouts(state, step, close, spread, feature_offset, [0], int(close.shape[0]))[0]


def greedy_rollouts(
    state: TrainerState,
    step: TrainStep,
    close: torch.Tensor,
    spread: torch.Tensor,
    feature_offset: int,
    starts: list[int],
    n_bars: int,
) -> list[EquityCurve]:
    """Trade several windows of ``n_bars`` bars of one series at once, one environment each.

    Env bar b of ``close`` is global feature row ``feature_offset + b``; window i covers env bars
    ``starts[i] … starts[i] + n_bars − 1``. The windows advance in lock-step as one batch (one
    forward pass per bar for all of them: the epoch boundary's validation and training-window
    backtests cost one rollout, not two); each env's trading is independent of the others'. Every
    curve covers its window's bars 0 … n − 2, like ``greedy_rollout``.
    """
    device = state.device
    n_windows = len(starts)
    if n_windows < 1 or n_bars < 3 or min(starts) < 0 or max(starts) + n_bars > int(close.shape[0]):
        raise ValueError(
            f"rollout windows do not fit the series (starts {starts}, {n_bars} bars each vs a series of "
            f"{int(close.shape[0])} bars, ≥ 3 bars per window) — hint: pass windows inside the bars"
        )
    isv = Isv(device)
    isv.load_state(state.isv.state())
    isv.write_config("EPISODE_LENGTH", 0.0)
    env = VectorEnv(close, n_envs=n_windows, isv=isv, seed=state.seed, spread=spread, counter=new_counter(device))
    start_bars = torch.tensor(starts, dtype=torch.float32, device=device)
    env.ps[:, PS_BAR_INDEX] = start_bars
    env.ps[:, PS_EPISODE_START] = start_bars
    init_cash = float(state.config.env.init_cash)
    # The window's last bar is never traded to (a single-window env ends its episode there and
    # restarts the portfolio in the same step): each curve covers bars 0 … n − 2.
    n_steps = n_bars - 2
    equity = torch.zeros(n_steps, n_windows, device=device)  # [n − 2, W] value at close_{t+1}
    units = torch.zeros(n_steps, n_windows, device=device)  # [n − 2, W] position held over period t
    actions = torch.zeros(n_steps, n_windows, N_BRANCHES, dtype=torch.int64, device=device)
    strides = torch.tensor(JOINT_STRIDES, dtype=torch.int64, device=device)
    state.isv_local.copy_(state.isv.tensor)
    was_training = state.online.training
    state.online.eval()
    with torch.inference_mode():
        for t in range(n_steps):
            bar = env.bar_index()  # [W]
            chosen = step.greedy(state.gather_windows(bar, feature_offset), env.portfolio_inputs())  # [W, D]
            env.step((chosen * strides).sum(-1).to(torch.int32))
            equity[t] = env.ps[:, PS_PORTFOLIO_VALUE]
            units[t] = env.ps[:, PS_POSITION]
            actions[t] = chosen
    state.online.train(was_training)
    # One host read for every window and every series (f32 values and small action indices are
    # exact in f64): the rollout waits for the device once.
    packed = torch.cat((equity.reshape(-1).double(), units.reshape(-1).double(), actions.reshape(-1).double()))
    host = packed.cpu().numpy()
    cells = n_steps * n_windows
    equity_all = host[:cells].reshape(n_steps, n_windows)
    units_all = host[cells : 2 * cells].reshape(n_steps, n_windows)
    actions_all = host[2 * cells :].reshape(n_steps, n_windows, N_BRANCHES).astype(np.int64)
    close_all = close.double().cpu().numpy()  # the series the caller passed (host memory in the loop)
    curves = []
    for index, start in enumerate(starts):
        equity_np = np.concatenate(([init_cash], equity_all[:, index]))  # [n − 1]
        close_np = close_all[start : start + n_bars - 1]
        exposure = exposure_from_units(units_all[:, index], close_np[:-1], equity_np[:-1])
        curves.append(EquityCurve(equity=equity_np, exposure=exposure, units=units_all[:, index],
                                  actions=action_fractions(actions_all[:, index])))  # fmt: skip
    return curves


def baseline_curves(close: torch.Tensor, *, fee_rate: float, slippage: float, init_cash: float) -> tuple[EquityCurve, EquityCurve]:
    """(buy-and-hold, flat) over the same bars and accounting as the agent's rollout."""
    close_np = close.double().cpu().numpy()
    n_bars = close_np.shape[0]
    hold_units = init_cash / (close_np[0] * (1.0 + slippage) * (1.0 + fee_rate))  # all-in at bar 0, cash ≥ 0
    per_bar = backtest_targets(close_np, np.full(n_bars, hold_units), fee_rate=fee_rate, slippage=slippage,
                               init_cash=init_cash).numpy()  # fmt: skip
    hold_equity = np.concatenate(([init_cash], per_bar[1:]))  # [n]
    held = np.full(n_bars - 1, hold_units)
    hold = EquityCurve(equity=hold_equity, exposure=exposure_from_units(held, close_np[:-1], hold_equity[:-1]), units=held)
    flat = EquityCurve(equity=np.full(n_bars, init_cash), exposure=np.zeros(n_bars - 1), units=np.zeros(n_bars - 1))
    return hold, flat


def validation_curves(
    state: TrainerState, step: TrainStep, close: torch.Tensor, spread: torch.Tensor, windows: list[slice]
) -> list[dict[str, EquityCurve]]:
    """Per window of ``close`` (global bar indices; equal lengths are rolled out together), the agent's
    greedy rollout and both baselines over the same bars (``close[window][:-1]``, see
    ``greedy_rollout``), keyed as metrics.json stores them."""
    env = state.config.env
    agents: dict[int, EquityCurve] = {}
    by_length: dict[int, list[int]] = {}
    for index, window in enumerate(windows):
        by_length.setdefault(window.stop - window.start, []).append(index)
    for length, members in by_length.items():
        rolled = greedy_rollouts(state, step, close, spread, 0, [windows[i].start for i in members], length)
        agents.update(zip(members, rolled, strict=True))
    out = []
    for index, window in enumerate(windows):
        hold, flat = baseline_curves(close[window][:-1], fee_rate=env.fee_rate, slippage=env.slippage,
                                     init_cash=env.init_cash)  # fmt: skip
        out.append({"agent": agents[index], "buy_and_hold": hold, "flat": flat})
    return out
