"""adaptive_schedule: training progress, τ, γ per branch and ε, written into the ISV by the GPU.

Why a kernel for four scalars: invariant 1 (GPU drives, CPU reads). If the host computed τ and
wrote it, a captured CUDA graph would bake the value in at capture time, and a checkpoint's ISV
would not say which code computed it. The kernel reads the CPU-born epoch index / total epochs and
the GPU-computed learning health from the ISV and writes the schedules back, inside whatever graph
is being captured. Formulas: ``cuda/adaptive_schedule.cu`` header and docs/trainer-adaptive.md.

``adaptive_schedule(isv, params)`` (``isv`` [ISV_STRIDE], or [agents, ISV_STRIDE] for a population
sharing the parameters) launches the kernel on a CUDA ISV and runs
``adaptive_schedule_reference`` (same signature, same semantics, in f32) on a CPU ISV.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import torch

from trainer.layout import (
    ISV_EPOCH_INDEX,
    ISV_EPSILON,
    ISV_GAMMA,
    ISV_LEARNING_HEALTH,
    ISV_STRIDE,
    ISV_TAU,
    ISV_TOTAL_EPOCHS,
    ISV_TRAINING_PROGRESS,
    N_BRANCHES,
)
from trainer.ops import loader

OP = "adaptive_schedule"
KERNEL = "adaptive_schedule_update"
ADAPTIVE_BLOCK = 256  # mirrors ADAPTIVE_BLOCK in the adaptive_*.cu kernels


@dataclass(frozen=True)
class ScheduleParams:
    """Constants of the schedules (static per run; the kernel receives them as arguments)."""

    tau_start: float = 0.005
    """τ at progress 0 (start of the cosine)."""
    tau_end: float = 0.001
    """τ at progress 1 (end of the cosine)."""
    tau_floor_lo: float = 0.0005
    """Floor under τ when learning health is 1."""
    tau_floor_hi: float = 0.01
    """Floor under τ when learning health is 0 (the floor rises as health falls)."""
    gamma_high: tuple[float, ...] = (0.99, 0.99, 0.99, 0.99)
    """γ per branch (BRANCH order) at health 1."""
    gamma_low: tuple[float, ...] = (0.95, 0.95, 0.9, 0.9)
    """γ per branch at health 0: execution branches lose more horizon than direction/size."""
    epsilon_start: float = 1.0
    """ε at progress 0 and the upper bound of ε."""
    epsilon_end: float = 0.02
    """ε after the exploration phase and the lower bound of ε."""
    explore_fraction: float = 0.5
    """Fraction of training over which ε decays linearly from start to end."""
    epsilon_boost: float = 0.1
    """Extra ε at health 0 (scaled by 1 − health)."""

    def __post_init__(self) -> None:
        problems = []
        if len(self.gamma_high) != N_BRANCHES or len(self.gamma_low) != N_BRANCHES:
            problems.append(f"γ bounds have {len(self.gamma_low)}/{len(self.gamma_high)} entries vs {N_BRANCHES}")
        if any(not 0.0 <= low <= high <= 1.0 for low, high in zip(self.gamma_low, self.gamma_high, strict=False)):
            problems.append(f"γ bounds {self.gamma_low}..{self.gamma_high} vs 0 ≤ low ≤ high ≤ 1")
        if not 0.0 < self.tau_end <= self.tau_start <= 1.0:
            problems.append(f"τ schedule {self.tau_start}→{self.tau_end} vs 0 < end ≤ start ≤ 1")
        if not 0.0 <= self.tau_floor_lo <= self.tau_floor_hi <= 1.0:
            problems.append(f"τ floor {self.tau_floor_lo}..{self.tau_floor_hi} vs 0 ≤ lo ≤ hi ≤ 1")
        if not 0.0 <= self.epsilon_end <= self.epsilon_start <= 1.0:
            problems.append(f"ε schedule {self.epsilon_start}→{self.epsilon_end} vs 0 ≤ end ≤ start ≤ 1")
        if not 0.0 < self.explore_fraction <= 1.0:
            problems.append(f"explore_fraction {self.explore_fraction} vs (0, 1]")
        if self.epsilon_boost < 0.0:
            problems.append(f"epsilon_boost {self.epsilon_boost} vs ≥ 0")
        if problems:
            raise ValueError(
                "invalid schedule parameters (" + "; ".join(problems) + ") — hint: fix the values "
                "passed to ScheduleParams"
            )

    def with_bootstrap(self, *, tau: float, gamma: float, epsilon: float) -> ScheduleParams:
        """These schedules started from the run's configured bootstrap τ, γ and ε (the end values
        and the γ floor never exceed the start)."""
        return dataclasses.replace(
            self,
            tau_start=float(tau),
            tau_end=min(self.tau_end, float(tau)),
            gamma_high=(float(gamma),) * N_BRANCHES,
            gamma_low=tuple(min(low, float(gamma)) for low in self.gamma_low),
            epsilon_start=max(float(epsilon), self.epsilon_end),
        )


_gamma_tensors: dict[tuple[tuple[float, ...], str], torch.Tensor] = {}


def _gamma_tensor(values: tuple[float, ...], device: torch.device) -> torch.Tensor:
    """[N_BRANCHES] f32 on the device, made once per (values, device) — before any capture, since
    the trainer warms every kernel up eagerly (compilation cannot happen inside a capture either)."""
    key = (values, str(device))
    tensor = _gamma_tensors.get(key)
    if tensor is None:
        tensor = torch.tensor(values, dtype=torch.float32, device=device)
        _gamma_tensors[key] = tensor
    return tensor


def _check_isv(isv: torch.Tensor) -> None:
    if isv.dim() != 2 or isv.shape[1] != ISV_STRIDE or isv.dtype != torch.float32:
        raise ValueError(
            f"ISV has the wrong shape or dtype ({tuple(isv.shape)} {isv.dtype} vs [{ISV_STRIDE}] or [agents, {ISV_STRIDE}] "
            f"float32) — hint: pass the ISV bus tensor built from trainer.layout"
        )


def adaptive_schedule(isv: torch.Tensor, params: ScheduleParams = ScheduleParams()) -> None:
    """Write TRAINING_PROGRESS, TAU, GAMMA[b] and EPSILON into ``isv`` in place (no host read).

    ``isv`` [ISV_STRIDE] (one agent) or [agents, ISV_STRIDE] (a population sharing ``params``: one
    launch, one block per agent)."""
    rows = loader.agent_rows(isv, 1)
    _check_isv(rows)
    if not rows.is_cuda:
        adaptive_schedule_reference(rows, params)
        return
    kernel = loader.load_kernel(OP, KERNEL, rows.device)
    args = (
        loader.pointer(rows),
        loader.pointer(_gamma_tensor(params.gamma_low, rows.device)),
        loader.pointer(_gamma_tensor(params.gamma_high, rows.device)),
        np.float32(params.tau_start), np.float32(params.tau_end),
        np.float32(params.tau_floor_lo), np.float32(params.tau_floor_hi),
        np.float32(params.epsilon_start), np.float32(params.epsilon_end),
        np.float32(params.explore_fraction), np.float32(params.epsilon_boost),
    )  # fmt: skip
    loader.launch(kernel, ADAPTIVE_BLOCK, args, rows.device, agents=rows.shape[0])


def _health(isv: torch.Tensor) -> torch.Tensor:
    raw = isv[ISV_LEARNING_HEALTH]
    return torch.where(torch.isfinite(raw), raw.clamp(0.0, 1.0), torch.zeros_like(raw))


def adaptive_schedule_reference(isv: torch.Tensor, params: ScheduleParams = ScheduleParams()) -> None:
    """PyTorch twin of the kernel (f32, element for element), agent by agent."""
    rows = loader.agent_rows(isv, 1)
    for agent in range(rows.shape[0]):
        _schedule_one_agent_reference(rows[agent], params)


def _schedule_one_agent_reference(isv: torch.Tensor, params: ScheduleParams) -> None:
    """One agent's schedules: isv [ISV_STRIDE] (a view, written in place)."""
    f32 = torch.float32
    health = _health(isv)
    span = torch.clamp(isv[ISV_TOTAL_EPOCHS] - 1.0, min=1.0)
    ratio = isv[ISV_EPOCH_INDEX] / span
    progress = torch.where(torch.isfinite(ratio), ratio.clamp(0.0, 1.0), torch.zeros_like(ratio))

    gamma_low = torch.tensor(params.gamma_low, dtype=f32, device=isv.device)  # [N_BRANCHES]
    gamma_high = torch.tensor(params.gamma_high, dtype=f32, device=isv.device)  # [N_BRANCHES]
    gamma = gamma_low + (gamma_high - gamma_low) * health  # [N_BRANCHES]

    tau_start, tau_end = torch.tensor(params.tau_start, dtype=f32), torch.tensor(params.tau_end, dtype=f32)
    pi = torch.tensor(math.pi, dtype=f32)
    tau_cosine = tau_end + 0.5 * (tau_start - tau_end) * (1.0 + torch.cos(pi * progress))
    floor_lo, floor_hi = torch.tensor(params.tau_floor_lo, dtype=f32), torch.tensor(params.tau_floor_hi, dtype=f32)
    tau_floor = floor_lo + (floor_hi - floor_lo) * (1.0 - health)
    tau = torch.maximum(tau_cosine, tau_floor)

    eps_start, eps_end = torch.tensor(params.epsilon_start, dtype=f32), torch.tensor(params.epsilon_end, dtype=f32)
    decay = torch.clamp(1.0 - progress / torch.tensor(params.explore_fraction, dtype=f32), min=0.0)
    scheduled = eps_end + (eps_start - eps_end) * decay
    boosted = scheduled + torch.tensor(params.epsilon_boost, dtype=f32) * (1.0 - health)
    epsilon = torch.minimum(torch.maximum(boosted, eps_end), eps_start)

    isv[ISV_GAMMA : ISV_GAMMA + N_BRANCHES] = gamma
    isv[ISV_TRAINING_PROGRESS] = progress
    isv[ISV_TAU] = tau
    isv[ISV_EPSILON] = epsilon
