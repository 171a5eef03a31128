"""adaptive_learning_health: learning health ∈ [0, 1] and the EMAs it is made of (the envs' Sharpe
EMA, the gradient-norm EMA; the Q-mean drift EMA comes from adaptive_atom_support).

Why one number: τ's floor, γ per branch, ε and the Kelly cap all couple to "is learning going
well?". Computing it on the device, once per update, from signals that are already there (the
envs' DSR EMAs in ``ps``, the global gradient norm, the drift of the value scale) lets every
schedule react inside the captured step, with no host round trip. Formulas:
``cuda/adaptive_learning_health.cu`` header and docs/trainer-adaptive.md.

``adaptive_learning_health(ps, grad_norm, isv, params)`` launches on CUDA and runs
``adaptive_learning_health_reference`` (same signature) on the CPU; a population passes a leading
agent dimension on ps, grad_norm and the ISV (one launch, one block per agent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.layout import (
    ISV_ATOM_HALF_WIDTH,
    ISV_DSR_VARIANCE_FLOOR,
    ISV_GRAD_NORM_EMA,
    ISV_LEARNING_HEALTH,
    ISV_Q_MEAN_DRIFT_EMA,
    ISV_SHARPE_EMA,
    ISV_STRIDE,
    N_BRANCHES,
    PS_DSR_A,
    PS_DSR_B,
    PS_STRIDE,
)
from trainer.ops import loader
from trainer.ops.adaptive_atom_support import strided_tree_sum

OP = "adaptive_learning_health"
KERNEL = "learning_health_update"
ADAPTIVE_BLOCK = 256  # mirrors ADAPTIVE_BLOCK in cuda/adaptive_learning_health.cu


@dataclass(frozen=True)
class HealthParams:
    """EMA horizons and scales of learning health."""

    sharpe_decay_bars: int = 500
    """EMA horizon of the Sharpe EMA in updates (α = 2 / (decay_bars + 1))."""
    grad_decay_bars: int = 100
    """EMA horizon of the gradient-norm EMA."""
    health_decay_bars: int = 50
    """EMA horizon of learning health itself."""
    spike_tolerance: float = 2.0
    """A gradient norm up to this multiple of its EMA is not a spike."""
    drift_fraction: float = 0.25
    """Q-mean drift (per update) that halves health's drift factor, as a fraction of the mean half-width."""
    sharpe_scale: float = 0.05
    """Per-bar Sharpe at which the profitability factor is tanh(1) of the way to its bound."""
    sharpe_clip: float = 1.0
    """Bound on one env's per-bar Sharpe (warm-up EMAs can make the ratio explode)."""

    def __post_init__(self) -> None:
        horizons = (self.sharpe_decay_bars, self.grad_decay_bars, self.health_decay_bars)
        if min(horizons) < 1 or min(self.spike_tolerance, self.drift_fraction, self.sharpe_scale, self.sharpe_clip) <= 0:
            raise ValueError(
                f"invalid learning-health parameters (horizons {horizons}, scales "
                f"{self.spike_tolerance}/{self.drift_fraction}/{self.sharpe_scale}/{self.sharpe_clip} vs "
                f"horizons ≥ 1 and scales > 0) — hint: keep the defaults unless you know why"
            )

    @staticmethod
    def rate(decay_bars: int) -> float:
        return 2.0 / (decay_bars + 1.0)


def _check(ps: torch.Tensor, grad_norm: torch.Tensor, isv: torch.Tensor) -> None:
    """Shapes with the agent dimension: ps [agents, n_envs, PS_STRIDE], grad_norm [agents], isv [agents, ISV_STRIDE]."""
    problems = []
    if ps.dim() != 3 or ps.shape[2] != PS_STRIDE or ps.shape[1] < 1 or ps.dtype != torch.float32:
        problems.append(f"ps {tuple(ps.shape)} {ps.dtype} vs [agents, n_envs ≥ 1, {PS_STRIDE}] float32")
    if isv.dim() != 2 or isv.shape[1] != ISV_STRIDE or isv.dtype != torch.float32:
        problems.append(f"isv {tuple(isv.shape)} {isv.dtype} vs [agents, {ISV_STRIDE}] float32")
    if grad_norm.dtype != torch.float32 or (isv.dim() == 2 and grad_norm.shape != (isv.shape[0],)):
        problems.append(f"grad_norm {tuple(grad_norm.shape)} {grad_norm.dtype} vs one float32 per agent")
    if ps.dim() == 3 and isv.dim() == 2 and ps.shape[0] != isv.shape[0]:
        problems.append(f"{ps.shape[0]} agents of ps vs {isv.shape[0]} ISV rows")
    if problems:
        raise ValueError(
            "learning-health inputs are malformed (" + "; ".join(problems) + ") — hint: pass the "
            "env's ps, the device gradient norm and the ISV (with a leading agent dimension for a population); "
            "shapes shown with their leading agent dimension"
        )


def _with_agents(ps: torch.Tensor, grad_norm: torch.Tensor, isv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ps, grad_norm, isv with the leading agent dimension (one agent's grad_norm may be [] or [1])."""
    rows = loader.agent_rows(isv, 1)
    return loader.agent_rows(ps, 2), grad_norm.reshape(-1) if isv.dim() == 1 else grad_norm, rows


def adaptive_learning_health(
    ps: torch.Tensor, grad_norm: torch.Tensor, isv: torch.Tensor, params: HealthParams = HealthParams()
) -> None:
    """Update SHARPE_EMA, GRAD_NORM_EMA and LEARNING_HEALTH in place (no host read).

    One agent: ps [n_envs, PS_STRIDE], grad_norm [1], isv [ISV_STRIDE]; a population: [agents, n_envs,
    PS_STRIDE], [agents], [agents, ISV_STRIDE] (one launch, one block per agent)."""
    ps, grad_norm, isv = _with_agents(ps, grad_norm, isv)
    _check(ps, grad_norm, isv)
    if not ps.is_cuda:
        adaptive_learning_health_reference(ps, grad_norm, isv, params)
        return
    kernel = loader.load_kernel(OP, KERNEL, ps.device)
    args = (
        loader.pointer(ps), np.int32(ps.shape[1]), loader.pointer(grad_norm.contiguous()), loader.pointer(isv),
        np.float32(params.rate(params.sharpe_decay_bars)), np.float32(params.rate(params.grad_decay_bars)),
        np.float32(params.rate(params.health_decay_bars)), np.float32(params.spike_tolerance),
        np.float32(params.drift_fraction), np.float32(params.sharpe_scale), np.float32(params.sharpe_clip),
    )  # fmt: skip
    loader.launch(kernel, ADAPTIVE_BLOCK, args, ps.device, agents=isv.shape[0])


def env_sharpe(ps: torch.Tensor, isv: torch.Tensor) -> torch.Tensor:
    """Per-env per-bar Sharpe from the DSR EMAs [*agents, n_envs], bounded as in the kernel (before
    the clip); ``isv`` [ISV_STRIDE] for one agent, [agents, 1, ISV_STRIDE] for a population."""
    a, b = ps[..., PS_DSR_A], ps[..., PS_DSR_B]  # [*agents, n]
    floor = isv[..., ISV_DSR_VARIANCE_FLOOR].to(ps.device)
    return a / torch.sqrt(torch.maximum(b - a * a, floor))


def adaptive_learning_health_reference(
    ps: torch.Tensor, grad_norm: torch.Tensor, isv: torch.Tensor, params: HealthParams = HealthParams()
) -> None:
    """PyTorch twin of the kernel (f32, the kernel's summation order), every agent at once.

    The kernel's branches on the gradient norm (not finite, cold start, spike) are ``torch.where``
    over the agents."""
    ps, grad_norm, isv = _with_agents(ps, grad_norm, isv)
    f32 = torch.float32
    before = isv.to("cpu").clone()  # [P, ISV_STRIDE]: values before this update (the writes below alias on the CPU)
    sharpe = env_sharpe(ps, isv.unsqueeze(1)).to("cpu")  # [P, n]
    clip = torch.tensor(params.sharpe_clip, dtype=f32)
    bounded = torch.where(torch.isfinite(sharpe), torch.minimum(torch.maximum(sharpe, -clip), clip), torch.zeros_like(sharpe))
    mean_sharpe = strided_tree_sum(bounded) / float(max(ps.shape[1], 1))  # [P]
    previous_sharpe = before[:, ISV_SHARPE_EMA]
    sharpe_ema = previous_sharpe + torch.tensor(params.rate(params.sharpe_decay_bars), dtype=f32) * (mean_sharpe - previous_sharpe)

    g = grad_norm.to("cpu")  # [P]
    grad_ema = before[:, ISV_GRAD_NORM_EMA]
    finite, cold = torch.isfinite(g), grad_ema <= 0.0
    excess = torch.clamp(g / grad_ema - torch.tensor(params.spike_tolerance, dtype=f32), min=0.0)
    spike_factor = 1.0 / (1.0 + excess)
    grad_factor = torch.where(finite, torch.where(cold, torch.ones_like(g), spike_factor), torch.zeros_like(g))
    followed = grad_ema + torch.tensor(params.rate(params.grad_decay_bars), dtype=f32) * (g - grad_ema)
    new_grad_ema = torch.where(finite, torch.where(cold, g, followed), grad_ema)

    mean_half_width = torch.zeros(isv.shape[0], dtype=f32)  # [P]
    for branch in range(N_BRANCHES):
        mean_half_width = mean_half_width + before[:, ISV_ATOM_HALF_WIDTH + branch]
    mean_half_width = mean_half_width / float(N_BRANCHES)
    drift_scale = torch.clamp(torch.tensor(params.drift_fraction, dtype=f32) * mean_half_width, min=1e-6)
    drift_factor = 1.0 / (1.0 + torch.clamp(before[:, ISV_Q_MEAN_DRIFT_EMA], min=0.0) / drift_scale)
    sharpe_factor = 0.75 + 0.25 * torch.tanh(sharpe_ema / torch.tensor(params.sharpe_scale, dtype=f32))

    raw = grad_factor * drift_factor * sharpe_factor
    previous = before[:, ISV_LEARNING_HEALTH]
    previous = torch.where(torch.isfinite(previous), previous, torch.zeros_like(previous))
    health = previous + torch.tensor(params.rate(params.health_decay_bars), dtype=f32) * (raw - previous)

    isv[:, ISV_SHARPE_EMA] = sharpe_ema.to(isv.device)
    isv[:, ISV_GRAD_NORM_EMA] = new_grad_ema.to(isv.device)
    isv[:, ISV_LEARNING_HEALTH] = health.clamp(0.0, 1.0).to(isv.device)
