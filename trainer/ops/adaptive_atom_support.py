"""adaptive_atom_support: each branch's C51 support [centre − half-width, centre + half-width],
tracked from EMAs of that branch's Q statistics, plus the Q-mean drift EMA.

Why: a fixed [v_min, v_max] either clips the returns (mass piles on the end atoms and the
distribution says nothing) or wastes atoms on values never reached. Following the batch's Q mean
and spread keeps the atoms where the values are; a floor stops the support collapsing to a point
and the config bounds stop it running away. The drift of the mean Q feeds learning health (a value
scale that keeps moving is a symptom of divergence). Formulas: ``cuda/adaptive_atom_support.cu``.

``adaptive_atom_support(q_mean, q_var, isv, params)`` launches on CUDA and runs
``adaptive_atom_support_reference`` (same signature) on the CPU. ``q_mean`` and ``q_var`` are
[batch, N_BRANCHES]: per sample, the mean and variance of the return distribution of each branch's
greedy action (``greedy_return_moments`` builds them from the C51 distributions). The support
covers k_σ standard deviations of the *returns* (between-sample variance of the means plus the
mean within-sample variance), not just the spread of their means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.layout import (
    ISV_ATOM_CENTRE,
    ISV_ATOM_HALF_WIDTH,
    ISV_Q_MEAN_DRIFT_EMA,
    ISV_STRIDE,
    N_BRANCHES,
)
from trainer.ops import loader

OP = "adaptive_atom_support"
KERNEL = "atom_support_update"
ADAPTIVE_BLOCK = 256  # mirrors ADAPTIVE_BLOCK in cuda/adaptive_atom_support.cu


@dataclass(frozen=True)
class AtomSupportParams:
    """EMA rates and bounds of the per-branch support."""

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
    """Half-width target in standard deviations of the returns of the greedy actions."""
    half_width_floor: float = 1.0
    """Smallest half-width (the support never collapses to a point)."""

    def __post_init__(self) -> None:
        problems = []
        if not self.v_max > self.v_min:
            problems.append(f"v_max {self.v_max} vs > v_min {self.v_min}")
        if self.decay_bars < 1 or self.drift_decay_bars < 1:
            problems.append(f"decay horizons {self.decay_bars}/{self.drift_decay_bars} vs ≥ 1")
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


def greedy_return_moments(
    probs: torch.Tensor, supports: torch.Tensor, action_mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, variance) [batch, N_BRANCHES] of each branch's greedy-action return distribution.

    ``probs``: C51 probabilities [batch, N_BRANCHES, A_max, n_atoms] (padded sub-actions masked out by
    ``action_mask`` [N_BRANCHES, A_max]); ``supports``: atom values [N_BRANCHES, n_atoms].
    """
    if probs.dim() != 4 or probs.shape[1] != N_BRANCHES or supports.shape != (N_BRANCHES, probs.shape[-1]):
        raise ValueError(
            f"C51 distributions and supports do not fit ({tuple(probs.shape)} and {tuple(supports.shape)} vs "
            f"[batch, {N_BRANCHES}, A_max, N] and [{N_BRANCHES}, N]) — hint: pass log_probs.exp() and "
            f"TrainerState.supports()"
        )
    atoms = supports[None, :, None, :]  # [1, D, 1, N]
    means = (probs * atoms).sum(-1)  # [B, D, A]
    second = (probs * atoms * atoms).sum(-1)  # [B, D, A]
    ranked = means if action_mask is None else means.masked_fill(~action_mask.to(torch.bool), float("-inf"))
    greedy = ranked.argmax(dim=-1, keepdim=True)  # [B, D, 1]
    mean = means.gather(-1, greedy).squeeze(-1)  # [B, D]
    variance = (second.gather(-1, greedy).squeeze(-1) - mean * mean).clamp(min=0.0)  # [B, D]
    return mean.contiguous(), variance.contiguous()


def _check(q_mean: torch.Tensor, q_var: torch.Tensor, isv: torch.Tensor) -> None:
    problems = []
    for name, values in (("q_mean", q_mean), ("q_var", q_var)):
        if values.dim() != 2 or values.shape[1] != N_BRANCHES or values.dtype != torch.float32:
            problems.append(f"{name} {tuple(values.shape)} {values.dtype} vs [batch, {N_BRANCHES}] float32")
    if q_mean.shape != q_var.shape:
        problems.append(f"q_mean {tuple(q_mean.shape)} vs q_var {tuple(q_var.shape)}")
    if isv.shape != (ISV_STRIDE,) or isv.dtype != torch.float32:
        problems.append(f"isv {tuple(isv.shape)} {isv.dtype} vs [{ISV_STRIDE}] float32")
    if problems:
        raise ValueError(
            "atom support inputs are malformed (" + "; ".join(problems) + ") — hint: build them with "
            "greedy_return_moments"
        )


def adaptive_atom_support(
    q_mean: torch.Tensor, q_var: torch.Tensor, isv: torch.Tensor, params: AtomSupportParams = AtomSupportParams()
) -> None:
    """Update ATOM_CENTRE, ATOM_HALF_WIDTH (per branch) and Q_MEAN_DRIFT_EMA in place."""
    _check(q_mean, q_var, isv)
    if not q_mean.is_cuda:
        adaptive_atom_support_reference(q_mean, q_var, isv, params)
        return
    q_mean, q_var = q_mean.contiguous(), q_var.contiguous()
    kernel = loader.load_kernel(OP, KERNEL, q_mean.device)
    args = (
        loader.pointer(q_mean), loader.pointer(q_var), np.int32(q_mean.shape[0]), loader.pointer(isv),
        np.float32(params.ema_rate), np.float32(params.drift_rate), np.float32(params.k_sigma),
        np.float32(params.half_width_floor), np.float32(params.v_min), np.float32(params.v_max),
    )  # fmt: skip
    loader.launch(kernel, ADAPTIVE_BLOCK, args, q_mean.device)


def strided_tree_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum of a 1-D tensor in the kernels' order: lane t adds items t, t+256, ... then a halving tree."""
    rounds = max((values.shape[0] + ADAPTIVE_BLOCK - 1) // ADAPTIVE_BLOCK, 1)
    padded = torch.zeros(rounds * ADAPTIVE_BLOCK, dtype=values.dtype, device=values.device)
    padded[: values.shape[0]] = values
    rows = padded.view(rounds, ADAPTIVE_BLOCK)  # [rounds, 256]
    lanes = rows[0].clone()
    for row in rows[1:]:
        lanes = lanes + row
    while lanes.shape[0] > 1:
        half = lanes.shape[0] // 2
        lanes = lanes[:half] + lanes[half:]
    return lanes[0]


def adaptive_atom_support_reference(
    q_mean: torch.Tensor, q_var: torch.Tensor, isv: torch.Tensor, params: AtomSupportParams = AtomSupportParams()
) -> None:
    """PyTorch twin of the kernel (f32, the kernel's summation order)."""
    f32 = torch.float32
    batch = q_mean.shape[0]
    inv_batch = torch.tensor(1.0, dtype=f32) / float(max(batch, 1))
    rate = torch.tensor(params.ema_rate, dtype=f32)
    floor = torch.tensor(params.half_width_floor, dtype=f32)
    v_min, v_max = torch.tensor(params.v_min, dtype=f32), torch.tensor(params.v_max, dtype=f32)
    cap = torch.maximum(0.5 * (v_max - v_min), floor)
    drift_total = torch.zeros((), dtype=f32)
    drift_branches = 0
    for branch in range(N_BRANCHES):
        column = q_mean[:, branch].to(device="cpu")
        within = q_var[:, branch].to(device="cpu").clamp(min=0.0)
        mean = strided_tree_sum(column) * inv_batch
        variance = strided_tree_sum((column - mean) * (column - mean) + within) * inv_batch
        if batch == 0 or not bool(torch.isfinite(mean)) or not bool(torch.isfinite(variance)):
            continue  # the kernel skips a diverged branch in the same way
        centre = isv[ISV_ATOM_CENTRE + branch].to(device="cpu").clone()
        half_width = isv[ISV_ATOM_HALF_WIDTH + branch].to(device="cpu").clone()
        next_centre = centre + rate * (mean - centre)
        next_half = half_width + rate * (torch.tensor(params.k_sigma, dtype=f32) * torch.sqrt(variance) - half_width)
        bounded_half = torch.minimum(torch.maximum(next_half, floor), cap)
        bounded_centre = torch.minimum(torch.maximum(next_centre, v_min + bounded_half), v_max - bounded_half)
        isv[ISV_ATOM_HALF_WIDTH + branch] = bounded_half.to(isv.device)
        isv[ISV_ATOM_CENTRE + branch] = bounded_centre.to(isv.device)
        drift_total = drift_total + torch.abs(mean - centre)
        drift_branches += 1
    if drift_branches:
        drift = isv[ISV_Q_MEAN_DRIFT_EMA].to(device="cpu").clone()
        updated = drift + torch.tensor(params.drift_rate, dtype=f32) * (drift_total / float(drift_branches) - drift)
        isv[ISV_Q_MEAN_DRIFT_EMA] = updated.to(isv.device)


def support_bounds(isv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(v_min [N_BRANCHES], v_max [N_BRANCHES]) of the current supports, as device tensors."""
    centre = isv[ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES]
    half_width = isv[ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES]
    return centre - half_width, centre + half_width
