"""Greedy out-of-sample backtest on the validation window, through the training environment.

Why through the env: the agent's validation equity must come from exactly the fills, fees,
slippage and limit-fill rules it trained under (the ``env_step`` kernel or its reference), and
the baselines from the same accounting (``trainer.env.accounting.backtest_targets``), or the
comparison would measure the accounting instead of the agent.

The rollout is one environment walking the window bar by bar with ε = 0, on a copy of the ISV
(episode length 0 = to the data end) and its own RNG counter, so validating never perturbs the
training state. Per-bar results are written into preallocated device tensors and read once at
the end (a cold point).
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
    device = state.device
    n_bars = int(close.shape[0])
    isv = Isv(device)
    isv.load_state(state.isv.state())
    isv.write_config("EPISODE_LENGTH", 0.0)
    env = VectorEnv(close, n_envs=1, isv=isv, seed=state.seed, spread=spread, counter=new_counter(device))
    env.ps[:, PS_BAR_INDEX] = 0.0
    env.ps[:, PS_EPISODE_START] = 0.0
    init_cash = float(state.config.env.init_cash)
    # The env ends an episode when its cursor reaches the last bar and restarts the portfolio in
    # the same step, so the last bar is never traded to: the curve covers bars 0 … n − 2.
    n_steps = n_bars - 2
    equity = torch.zeros(n_steps, device=device)  # [n − 2] value at close_{t+1}
    units = torch.zeros(n_steps, device=device)  # [n − 2] position held over period t
    actions = torch.zeros(n_steps, N_BRANCHES, dtype=torch.int64, device=device)
    strides = torch.tensor(JOINT_STRIDES, dtype=torch.int64, device=device)
    state.isv_local.copy_(state.isv.tensor)
    was_training = state.online.training
    state.online.eval()
    with torch.no_grad():
        for t in range(n_steps):
            bar = env.bar_index()  # [1]
            chosen = step.greedy(state.gather_windows(bar, feature_offset), env.portfolio_inputs())  # [1, D]
            env.step((chosen * strides).sum(-1).to(torch.int32))
            equity[t : t + 1] = env.ps[:, PS_PORTFOLIO_VALUE]
            units[t : t + 1] = env.ps[:, PS_POSITION]
            actions[t : t + 1] = chosen
    state.online.train(was_training)
    equity_np = np.concatenate(([init_cash], equity.double().cpu().numpy()))  # [n − 1]
    close_np = close.double().cpu().numpy()[: n_bars - 1]
    units_np = units.double().cpu().numpy()
    exposure = exposure_from_units(units_np, close_np[:-1], equity_np[:-1])
    return EquityCurve(equity=equity_np, exposure=exposure, units=units_np, actions=action_fractions(actions.cpu().numpy()))


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
    state: TrainerState, step: TrainStep, close: torch.Tensor, spread: torch.Tensor, feature_offset: int
) -> dict[str, EquityCurve]:
    """The agent's greedy rollout and both baselines over the same bars (``close[:-1]``, see
    ``greedy_rollout``), keyed as metrics.json stores them."""
    agent = greedy_rollout(state, step, close, spread, feature_offset)
    env = state.config.env
    hold, flat = baseline_curves(close[:-1], fee_rate=env.fee_rate, slippage=env.slippage, init_cash=env.init_cash)
    return {"agent": agent, "buy_and_hold": hold, "flat": flat}
