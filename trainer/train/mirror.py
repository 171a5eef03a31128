"""Mirror augmentation (``replay.mirror``): a replayed transition learned in the reflected market.

Why: an agent trained on one window of a market learns that window's drift. On the regime market
the selected policy's direction bias had the sign of the training window's drift in 8 of 10 seeds,
and its size correlated −0.87 with the test Sharpe (docs/results.md §0, session 23): a trend the
test window does not share. Reflect the price path — every log return negated, bids and asks
swapped — and the same transition is as plausible a piece of experience: a long that caught a
rise is a short that caught the fall, with the same reward (costs are symmetric). Training on
both halves makes direction a function of the signal, never of the window's drift.

The mirrored transition negates the odd feature columns (``trainer.data.features.MIRROR_ODD``)
of the start and bootstrap windows and the odd portfolio inputs
(``trainer.env.vector_env.PORTFOLIO_MIRROR_ODD``), swaps the direction branch's SHORT and LONG
(HOLD and FLAT keep their meaning), negates the return head's target, and keeps the rewards, the
done flags and the other branches. Which transitions are mirrored is one uniform per replayed
transition on the AUGMENT stream (a coin below ``replay.mirror``); a run with it off draws
nothing, so its random numbers are the ones it had before the option existed.

The same reflection can act (``run.policy_mirror``): the greedy backtests choose by the mean of a
state's Q-values and its mirror image's, the mirror's direction read back with SHORT and LONG
swapped (:func:`mirror_averaged_values`). A Q-function fitted on finitely many bars keeps some
preference for one direction that no signal explains — the training window's drift, which
mirrored replay halves but cannot cancel exactly (docs/results.md §0, session 30); that part is
the same in a state and its reflection, so it cancels in the mean, and only direction choices
that flip with the reflected signal remain. The policy is mirror-equivariant by construction.
"""

from __future__ import annotations

import dataclasses

import torch

from trainer.data.features import MIRROR_ODD
from trainer.env.vector_env import PORTFOLIO_MIRROR_ODD
from trainer.layout import (
    BRANCH_DIRECTION,
    BRANCH_SIZES,
    DIRECTION_LONG,
    DIRECTION_SHORT,
    FEATURE,
    FEATURE_STRIDE,
    PORTFOLIO_INPUT,
    PORTFOLIO_INPUT_STRIDE,
)
from trainer.train.replay import Transitions


def _signs(layout_offsets: dict[str, int], widths: dict[str, int], odd: frozenset[str] | tuple[str, ...], stride: int,
           device: torch.device) -> torch.Tensor:  # fmt: skip
    signs = torch.ones(stride, dtype=torch.float32, device=device)
    for name in odd:
        signs[layout_offsets[name] : layout_offsets[name] + widths[name]] = -1.0
    return signs


def feature_signs(device: torch.device) -> torch.Tensor:
    """[FEATURE_STRIDE] f32: −1 on the columns the mirror negates, 1 elsewhere."""
    widths = {slot.name: slot.width for slot in FEATURE.slots}
    return _signs(FEATURE.offsets, widths, MIRROR_ODD, FEATURE_STRIDE, device)


def portfolio_signs(device: torch.device) -> torch.Tensor:
    """[PORTFOLIO_INPUT_STRIDE] f32: −1 on the portfolio inputs the mirror negates, 1 elsewhere."""
    widths = {slot.name: slot.width for slot in PORTFOLIO_INPUT.slots}
    return _signs(PORTFOLIO_INPUT.offsets, widths, PORTFOLIO_MIRROR_ODD, PORTFOLIO_INPUT_STRIDE, device)


def mirror_coins(draws: torch.Tensor, probability: float | torch.Tensor) -> torch.Tensor:
    """Which replayed transitions are mirrored: uniforms [*agents, B] below ``probability`` (a float,
    or a population's [P, 1] per agent; an agent at 0 mirrors nothing) → bool [*agents, B]."""
    return draws < probability


def mirror_batch(
    mirrored: torch.Tensor,
    batch: Transitions,
    windows: torch.Tensor,
    next_windows: torch.Tensor,
    next_return: torch.Tensor,
    features: torch.Tensor,
    portfolio: torch.Tensor,
) -> tuple[Transitions, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The batch with the ``mirrored`` [*agents, B] transitions reflected (the others unchanged).

    windows / next_windows [*agents, B, K, F], next_return [*agents, B], the batch's fields
    [*agents, B, …]; ``features`` [F] and ``portfolio`` [P_in] are the sign vectors above.
    Fixed-shape ``where`` ops only: capture-safe, and the same ops for one agent and a population.
    """
    window_flag = mirrored.unsqueeze(-1).unsqueeze(-1)  # [*, B, 1, 1]
    row_flag = mirrored.unsqueeze(-1)  # [*, B, 1]
    direction = batch.actions[..., BRANCH_DIRECTION]  # [*, B]
    swappable = mirrored & ((direction == DIRECTION_SHORT) | (direction == DIRECTION_LONG))
    swapped = torch.where(swappable, (DIRECTION_SHORT + DIRECTION_LONG) - direction, direction)
    actions = torch.cat(
        [batch.actions[..., :BRANCH_DIRECTION], swapped.unsqueeze(-1), batch.actions[..., BRANCH_DIRECTION + 1 :]], dim=-1
    )  # [*, B, D]
    reflected = dataclasses.replace(
        batch,
        portfolio=torch.where(row_flag, batch.portfolio * portfolio, batch.portfolio),
        next_portfolio=torch.where(row_flag, batch.next_portfolio * portfolio, batch.next_portfolio),
        actions=actions,
    )
    return (
        reflected,
        torch.where(window_flag, windows * features, windows),
        torch.where(window_flag, next_windows * features, next_windows),
        torch.where(mirrored, -next_return, next_return),
    )


def direction_swap(device: torch.device) -> torch.Tensor:
    """[A] int64 (A = the widest branch): sub-action i of the direction branch in the mirrored
    market is sub-action ``swap[i]`` in the actual one — SHORT ↔ LONG, HOLD and FLAT unchanged."""
    swap = torch.arange(max(BRANCH_SIZES), dtype=torch.int64, device=device)
    swap[DIRECTION_SHORT], swap[DIRECTION_LONG] = DIRECTION_LONG, DIRECTION_SHORT
    return swap


def mirror_averaged_values(values: torch.Tensor, mirrored_values: torch.Tensor, swap: torch.Tensor) -> torch.Tensor:
    """The mean of a state's Q-values [..., D, A] and its mirror image's (the mirror's direction
    branch re-indexed by ``swap`` from :func:`direction_swap`, so both are values of the actual
    state's actions) → [..., D, A]. Each term enters as the other does for the mirrored state, so
    the mean of a mirrored state is exactly the mean of the state with SHORT and LONG swapped."""
    direction = mirrored_values[..., BRANCH_DIRECTION, :].index_select(-1, swap).unsqueeze(-2)  # [..., 1, A]
    read_back = torch.cat(
        (mirrored_values[..., :BRANCH_DIRECTION, :], direction, mirrored_values[..., BRANCH_DIRECTION + 1 :, :]), dim=-2
    )  # [..., D, A]
    return 0.5 * (values + read_back)
