"""adaptive_atom_support: each branch's C51 support [centre − half-width, centre + half-width],
tracked from EMAs of the branch's TD targets, plus the Q-mean drift EMA.

Why: a fixed [v_min, v_max] either clips the returns (mass piles on the end atoms and the
distribution says nothing) or wastes atoms on values never reached. The support follows the
distribution of the returns the branch is trained towards: its TD targets r + γⁿ·E[Z′] on the
training batch (before the projection, so a target outside the current support still pulls it
outwards). The spread of the targets is only the one-step part of the return's spread; the
stationary solution of the variance recursion Var(G) = Var(target) + γ²ⁿ·Var(G) scales it to the
spread of the return itself. A floor stops the support collapsing to a point and the config bounds
stop it running away. The drift of the mean target feeds learning health (a value scale that keeps
moving is a symptom of divergence). Formulas: ``cuda/adaptive_atom_support.cu``.

An earlier version tracked the moments of the online network's own predicted distribution on the
current support; a fresh network predicts a nearly uniform distribution (σ ≈ w/√3, so k_σ·σ > w),
which made the config bound a fixed point: the support never left it in the default configuration
(docs/results.md, 2026-12-01).

``adaptive_atom_support(td_targets, isv, params)`` launches on CUDA and runs
``adaptive_atom_support_reference`` (same signature) on the CPU. ``td_targets`` is
[batch, N_BRANCHES]: per sample, the mean of each branch's TD target distribution
(``trainer.losses.c51.C51Terms.target_mean``, transposed); γ per branch comes from the ISV. A
population passes a leading agent dimension on both ([agents, batch, N_BRANCHES], [agents,
ISV_STRIDE]): one launch, one block per agent, agents never mixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.layout import (
    ISV_ATOM_CENTRE,
    ISV_ATOM_HALF_WIDTH,
    ISV_GAMMA,
    ISV_Q_MEAN_DRIFT_EMA,
    ISV_STRIDE,
    N_BRANCHES,
)
from trainer.ops import loader

OP = "adaptive_atom_support"
KERNEL = "atom_support_update"
ADAPTIVE_BLOCK = 256  # mirrors ADAPTIVE_BLOCK in cuda/adaptive_atom_support.cu
VARIANCE_GAIN_FLOOR = 1e-6  # mirrors the kernel: γ = 1 gives a huge gain, the config bound caps it


@dataclass(frozen=True)
class AtomSupportParams:
    """EMA rates and bounds of the per-branch support."""

    n_step: int = 1
    """n of the n-step targets (loss.n_step): the variance gain uses γ_b²ⁿ."""

    v_min: float = -10.0
    """Lower config bound of every support (loss.v_min)."""
    v_max: float = 10.0
    """Upper config bound of every support (loss.v_max)."""
    decay_bars: int = 200
    """EMA horizon of centre and half-width in updates (α = 2 / (decay_bars + 1)); the registry's
    SoftReset of these slots uses the same horizon."""
    drift_decay_bars: int = 100
    """EMA horizon of the Q-mean drift."""
    k_sigma: float = 3.0
    """Half-width target in standard deviations of the branch's returns."""
    half_width_floor: float = 1.0
    """Smallest half-width (the support never collapses to a point)."""

    def __post_init__(self) -> None:
        problems = []
        if not self.v_max > self.v_min:
            problems.append(f"v_max {self.v_max} vs > v_min {self.v_min}")
        if self.decay_bars < 1 or self.drift_decay_bars < 1:
            problems.append(f"decay horizons {self.decay_bars}/{self.drift_decay_bars} vs ≥ 1")
        if self.n_step < 1:
            problems.append(f"n_step {self.n_step} vs ≥ 1")
        if self.k_sigma <= 0.0 or self.half_width_floor <= 0.0:
            problems.append(f"k_sigma {self.k_sigma} and floor {self.half_width_floor} vs > 0")
        if problems:
            raise ValueError(
                "invalid atom support parameters (" + "; ".join(problems) + ") — hint: use the "
                "config's v_min/v_max and positive horizons"
            )

    @property
    def ema_rate(self) -> float:
        return 2.0 / (self.decay_bars + 1.0)

    @property
    def drift_rate(self) -> float:
        return 2.0 / (self.drift_decay_bars + 1.0)


def _check(td_targets: torch.Tensor, isv: torch.Tensor) -> None:
    """One agent: td_targets [batch, N_BRANCHES], isv [ISV_STRIDE]; a population: [agents, batch,
    N_BRANCHES], [agents, ISV_STRIDE] (the shapes are reported as given)."""
    problems = []
    population = isv.dim() == 2
    if td_targets.dim() != 2 + population or td_targets.shape[-1] != N_BRANCHES or td_targets.dtype != torch.float32:
        wanted = f"[agents, batch, {N_BRANCHES}]" if population else f"[batch, {N_BRANCHES}]"
        problems.append(f"td_targets {tuple(td_targets.shape)} {td_targets.dtype} vs {wanted} float32")
    if isv.dim() not in (1, 2) or isv.shape[-1] != ISV_STRIDE or isv.dtype != torch.float32:
        problems.append(f"isv {tuple(isv.shape)} {isv.dtype} vs [{ISV_STRIDE}] or [agents, {ISV_STRIDE}] float32")
    elif population and td_targets.dim() == 3 and td_targets.shape[0] != isv.shape[0]:
        problems.append(f"{td_targets.shape[0]} agents of td_targets vs {isv.shape[0]} ISV rows")
    if problems:
        raise ValueError(
            "atom support inputs are malformed (" + "; ".join(problems) + ") — hint: pass the C51 loss's "
            "target_mean transposed to [batch, branches] (with a leading agent dimension for a population)"
        )


def adaptive_atom_support(
    td_targets: torch.Tensor, isv: torch.Tensor, params: AtomSupportParams = AtomSupportParams()
) -> None:
    """Update ATOM_CENTRE, ATOM_HALF_WIDTH (per branch) and Q_MEAN_DRIFT_EMA in place.

    ``td_targets`` [batch, N_BRANCHES] with ``isv`` [ISV_STRIDE] (one agent), or [agents, batch,
    N_BRANCHES] with [agents, ISV_STRIDE] (a population: one launch, each agent on its own rows)."""
    _check(td_targets, isv)
    targets, rows = loader.agent_rows(td_targets, 2), loader.agent_rows(isv, 1)
    if not targets.is_cuda:
        adaptive_atom_support_reference(targets, rows, params)
        return
    targets = targets.contiguous()
    kernel = loader.load_kernel(OP, KERNEL, targets.device)
    args = (
        loader.pointer(targets), np.int32(targets.shape[1]), loader.pointer(rows),
        np.float32(params.ema_rate), np.float32(params.drift_rate), np.float32(params.k_sigma),
        np.float32(params.half_width_floor), np.float32(params.v_min), np.float32(params.v_max),
        np.int32(params.n_step),
    )  # fmt: skip
    loader.launch(kernel, ADAPTIVE_BLOCK, args, targets.device, agents=rows.shape[0])


def strided_tree_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum over the last dimension in the kernels' order: lane t adds items t, t+256, ... then a
    halving tree. values [*, n] → [*] (each row summed on its own, exactly as the kernel's block does)."""
    count = values.shape[-1]
    rounds = max((count + ADAPTIVE_BLOCK - 1) // ADAPTIVE_BLOCK, 1)
    padded = torch.zeros(*values.shape[:-1], rounds * ADAPTIVE_BLOCK, dtype=values.dtype, device=values.device)
    padded[..., :count] = values
    rows = padded.unflatten(-1, (rounds, ADAPTIVE_BLOCK))  # [*, rounds, 256]
    lanes = rows[..., 0, :].clone()
    for extra in range(1, rounds):
        lanes = lanes + rows[..., extra, :]
    while lanes.shape[-1] > 1:
        half = lanes.shape[-1] // 2
        lanes = lanes[..., :half] + lanes[..., half:]
    return lanes[..., 0]


def variance_gain(gamma: torch.Tensor, n_step: int) -> torch.Tensor:
    """1 / max(1 − γ²ⁿ, VARIANCE_GAIN_FLOOR): Var(return) / Var(one n-step target), f32, elementwise.

    γ²ⁿ is a product of 2n factors in order, exactly as the kernel computes it (no pow rounding).
    """
    power = torch.ones((), dtype=torch.float32)
    for _ in range(2 * n_step):
        power = power * gamma
    return 1.0 / torch.clamp(1.0 - power, min=VARIANCE_GAIN_FLOOR)


def adaptive_atom_support_reference(
    td_targets: torch.Tensor, isv: torch.Tensor, params: AtomSupportParams = AtomSupportParams()
) -> None:
    """PyTorch twin of the kernel (f32, the kernel's summation order), every agent and branch at once.

    The kernel's per-branch steps become [agents, N_BRANCHES] tensors: a branch whose statistics
    are not finite keeps its support and adds no drift (``torch.where``, where the kernel skips
    it), and each agent's drift sums its branches in branch order, as the kernel's lane 0 does."""
    targets, rows = loader.agent_rows(td_targets, 2), loader.agent_rows(isv, 1)
    f32 = torch.float32
    batch = targets.shape[1]
    columns = targets.to(device="cpu").transpose(1, 2)  # [P, D, B]
    inv_batch = torch.tensor(1.0, dtype=f32) / float(max(batch, 1))
    mean = strided_tree_sum(columns) * inv_batch  # [P, D]
    deviation = columns - mean.unsqueeze(-1)  # [P, D, B]
    variance = strided_tree_sum(deviation * deviation) * inv_batch  # [P, D]
    valid = torch.isfinite(mean) & torch.isfinite(variance) & (batch > 0)  # [P, D]
    before = rows.to(device="cpu").clone()  # [P, ISV_STRIDE]: the values this update starts from
    rate = torch.tensor(params.ema_rate, dtype=f32)
    floor = torch.tensor(params.half_width_floor, dtype=f32)
    v_min, v_max = torch.tensor(params.v_min, dtype=f32), torch.tensor(params.v_max, dtype=f32)
    cap = torch.maximum(0.5 * (v_max - v_min), floor)
    gain = variance_gain(before[:, ISV_GAMMA : ISV_GAMMA + N_BRANCHES], params.n_step)  # [P, D]
    centre = before[:, ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES]  # [P, D]
    half_width = before[:, ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES]  # [P, D]
    next_centre = centre + rate * (mean - centre)
    spread = torch.tensor(params.k_sigma, dtype=f32) * torch.sqrt(variance * gain)
    next_half = half_width + rate * (spread - half_width)
    bounded_half = torch.minimum(torch.maximum(next_half, floor), cap)
    bounded_centre = torch.minimum(torch.maximum(next_centre, v_min + bounded_half), v_max - bounded_half)
    moved = torch.where(valid, torch.abs(mean - centre), torch.zeros_like(mean))  # [P, D]
    drift_total = torch.zeros(rows.shape[0], dtype=f32)  # [P]
    for branch in range(N_BRANCHES):  # in branch order, as lane 0 adds them (+0 for a skipped branch)
        drift_total = drift_total + moved[:, branch]
    drift_branches = valid.sum(-1).to(f32)  # [P]
    drift = before[:, ISV_Q_MEAN_DRIFT_EMA]  # [P]
    updated = drift + torch.tensor(params.drift_rate, dtype=f32) * (drift_total / drift_branches - drift)
    rows[:, ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES] = torch.where(valid, bounded_half, half_width).to(rows.device)
    rows[:, ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES] = torch.where(valid, bounded_centre, centre).to(rows.device)
    rows[:, ISV_Q_MEAN_DRIFT_EMA] = torch.where(drift_branches > 0, updated, drift).to(rows.device)


def support_bounds(isv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(v_min [N_BRANCHES], v_max [N_BRANCHES]) of the current supports, as device tensors."""
    centre = isv[ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES]
    half_width = isv[ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES]
    return centre - half_width, centre + half_width
