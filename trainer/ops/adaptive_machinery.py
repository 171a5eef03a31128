"""The adaptive machinery as one object: which kernel runs when, with which parameters.

Why a driver: the four adaptive kernels have an order (atom support before learning health, which
reads the drift it writes; health before the schedules and the Kelly cap, which couple to it) and
two cadences. ``after_update`` runs inside the training step, right after the optimizer step —
captured in the CUDA graph, no host reads. ``begin_epoch`` runs at the epoch boundary (cold path):
it writes the CPU-born inputs (epoch index, total epochs — the only host writes besides static
config and reset bootstraps) and launches the schedule and Kelly kernels, which the next steps
read through the ISV.

Why the Kelly cap sizes from out-of-sample trades: the training envs' own trades are, once ε has
decayed, the greedy policy's trades on the very bars it is fitted to — in-sample, biased upward
by whatever the network memorised — so on a market without an edge any positive lower confidence
bound sent the cap from its floor to ``cap_max`` (noise, docs/results.md). The machinery keeps
instead the *trade record* of the last validation rollout (``record_trades``: the validation
env's final portfolio row, its closed trades on bars no update has seen), starting from the
prior; the cap is computed from it at the boundary that recorded it (so a checkpoint written
there holds the cap its own validation sized) and at each epoch start.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from trainer.isv import Isv
from trainer.layout import PS_STRIDE
from trainer.ops.adaptive_atom_support import AtomSupportParams, adaptive_atom_support
from trainer.ops.adaptive_kelly_cap import (
    KellyParams,
    adaptive_kelly_cap,
    kelly_cap_workspace,
    write_kelly_prior,
)
from trainer.ops.adaptive_learning_health import HealthParams, adaptive_learning_health
from trainer.ops.adaptive_schedule import ScheduleParams, adaptive_schedule


@dataclass(frozen=True)
class AdaptiveParams:
    """Parameters of every adaptive kernel (static for a run)."""

    schedule: ScheduleParams = field(default_factory=ScheduleParams)
    kelly: KellyParams = field(default_factory=KellyParams)
    atoms: AtomSupportParams = field(default_factory=AtomSupportParams)
    health: HealthParams = field(default_factory=HealthParams)

    @classmethod
    def from_config(cls, config) -> AdaptiveParams:
        """The run's parameters: ``config.adaptive`` (the [adaptive.*] tables) with the bootstrap
        τ/γ/ε of [schedule]/[loss] and the support bounds of [loss]; the half-width floor is capped
        at a quarter of the support range so a narrow support can still adapt."""
        base = config.adaptive
        v_min, v_max = config.loss.v_min, config.loss.v_max
        return cls(
            schedule=base.schedule.with_bootstrap(
                tau=config.schedule.tau, gamma=config.loss.gamma, epsilon=config.schedule.epsilon
            ),
            kelly=base.kelly,
            atoms=dataclasses.replace(
                base.atoms, n_step=config.loss.n_step, v_min=v_min, v_max=v_max,
                half_width_floor=min(base.atoms.half_width_floor, 0.25 * (v_max - v_min)),
            ),
            health=base.health,
        )


KELLY_RECORD_ROWS = 1  # the validation rollout's one env (a run's validation window is one series)


class AdaptiveMachinery:
    """Owns the Kelly trade record and its reduction workspace; launches the adaptive kernels on
    the run's ISV. ``kelly_rows``: the portfolio rows ``record_trades`` is given (one per
    validation env)."""

    def __init__(self, isv: Isv, kelly_rows: int = KELLY_RECORD_ROWS, params: AdaptiveParams | None = None) -> None:
        self.isv = isv
        self.params = params or AdaptiveParams()
        # The out-of-sample trade record the Kelly cap sizes from [kelly_rows, PS_STRIDE] (portfolio
        # rows; the kernel reads their Kelly columns): the prior until the first validation.
        self.kelly_record = torch.zeros(kelly_rows, PS_STRIDE, dtype=torch.float32, device=isv.device)
        self.kelly_workspace = kelly_cap_workspace(kelly_rows, isv.device)  # [4, ceil(kelly_rows / 256)]
        self.reset_kelly_record()

    def named_tensors(self) -> dict[str, torch.Tensor]:
        return {"adaptive.kelly_record": self.kelly_record, "adaptive.kelly_workspace": self.kelly_workspace}

    def reset_kelly_record(self) -> None:
        """Back to the prior alone (a fold's start): no out-of-sample trade seen yet."""
        self.kelly_record.zero_()
        write_kelly_prior(self.kelly_record, self.isv.tensor.to(self.kelly_record.device))

    def record_trades(self, portfolios: torch.Tensor) -> None:
        """Keep a validation rollout's final portfolio rows [kelly_rows, PS_STRIDE] (their closed
        trades, prior included) as the trade record, and size the Kelly cap from it now. Cold path."""
        if portfolios.shape != self.kelly_record.shape:
            raise ValueError(
                f"trade record rows do not match ({tuple(portfolios.shape)} vs {tuple(self.kelly_record.shape)}) "
                f"— hint: pass the validation env's portfolio rows, one per validation window"
            )
        self.kelly_record.copy_(portfolios)
        adaptive_kelly_cap(self.kelly_record, self.isv.tensor, self.kelly_workspace, self.params.kelly)

    def after_update(self, ps: torch.Tensor, td_targets: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """Inside the step, after the optimizer: support per branch, drift EMA, Sharpe/grad EMAs, health.

        ``td_targets``: per sample of the training batch, the mean of each branch's TD target
        r + γⁿ·E[Z′] [B, N_BRANCHES] (``C51Terms.target_mean`` transposed); ``grad_norm``: the
        global gradient norm of this update (a device scalar).
        """
        adaptive_after_update(self.isv.tensor, self.params, ps, td_targets, grad_norm)

    def begin_epoch(self, epoch: int, total_epochs: int) -> None:
        """Cold path at an epoch start: CPU-born inputs, then τ, γ, ε, progress and the Kelly cap
        (from the trade record: the prior, or the last validation's trades). ``total_epochs`` is the
        schedules' span; an epoch past it (a run longer than ``schedule.horizon_steps``) holds
        progress at 1."""
        if total_epochs < 1 or epoch < 0:
            raise ValueError(
                f"epoch index out of range ({epoch} of {total_epochs} vs epoch ≥ 0, total ≥ 1) — hint: "
                f"count epochs from 0"
            )
        self.isv.write_input("EPOCH_INDEX", float(epoch))
        self.isv.write_input("TOTAL_EPOCHS", float(total_epochs))
        adaptive_schedule(self.isv.tensor, self.params.schedule)
        adaptive_kelly_cap(self.kelly_record, self.isv.tensor, self.kelly_workspace, self.params.kelly)


def adaptive_after_update(isv: torch.Tensor, params: AdaptiveParams, ps: torch.Tensor, td_targets: torch.Tensor,
                 grad_norm: torch.Tensor) -> None:  # fmt: skip
    """The in-step adaptive kernels on ``isv``: atom support (and drift), then learning health.

    One agent: isv [ISV_STRIDE], ps [E, PS_STRIDE], td_targets [B, N_BRANCHES], grad_norm []; a
    population (one launch each for every agent, agents never mixed): isv [P, ISV_STRIDE], ps [P,
    E, PS_STRIDE], td_targets [P, B, N_BRANCHES], grad_norm [P] — with one ``params`` for all."""
    adaptive_atom_support(td_targets.detach().to(torch.float32).contiguous(), isv, params.atoms)
    adaptive_learning_health(ps, grad_norm.detach().to(torch.float32).reshape(-1), isv, params.health)
