"""adaptive_kelly_cap: the position cap from the environments' own win/loss record.

Why: the cap on |position| must grow only as the agent proves an edge, and shrink while learning
is sick. Half-Kelly of each env's closed trades (with a Bayesian prior of 2 wins and 2 losses so a
cold start is neither zero nor reckless), averaged over envs and scaled by (0.5 + 0.5·health),
does that. The average over thousands of envs is a two-pass deterministic reduction (per-block
partials, then one block) — never atomics — so a rerun is bitwise identical. Formulas:
``cuda/adaptive_kelly_cap.cu`` header and docs/trainer-adaptive.md.

``kelly_cap_workspace(n_envs, device)`` allocates the partials scratch once (at construction);
``adaptive_kelly_cap(ps, isv, workspace, params)`` launches on CUDA tensors and runs
``adaptive_kelly_cap_reference`` (same signature) on CPU tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.layout import (
    ISV_KELLY_CAP,
    ISV_LEARNING_HEALTH,
    ISV_STRIDE,
    PS_KELLY_LOSS_SUM,
    PS_KELLY_LOSSES,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_STRIDE,
)
from trainer.ops import loader

OP = "adaptive_kelly_cap"
PARTIALS_KERNEL = "kelly_cap_partials"
FINALIZE_KERNEL = "kelly_cap_finalize"
ADAPTIVE_BLOCK = 256  # mirrors ADAPTIVE_BLOCK in cuda/adaptive_kelly_cap.cu
TINY = 1e-12


@dataclass(frozen=True)
class KellyParams:
    """Bounds of the Kelly cap (fraction of equity)."""

    cap_floor: float = 0.1
    """Lowest cap: a cold-started agent (half-Kelly 0 at p = ½, b = 1) must still trade to learn."""
    cap_max: float = 1.0
    """Highest cap (1 = fully invested; the env's magnitude fractions never exceed 1)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.cap_floor <= self.cap_max:
            raise ValueError(
                f"invalid Kelly cap bounds ({self.cap_floor}..{self.cap_max} vs 0 ≤ floor ≤ max) — "
                f"hint: e.g. KellyParams(cap_floor=0.1, cap_max=1.0)"
            )


def n_partials(n_envs: int) -> int:
    return max((n_envs + ADAPTIVE_BLOCK - 1) // ADAPTIVE_BLOCK, 1)


def kelly_cap_workspace(n_envs: int, device: torch.device | str) -> torch.Tensor:
    """The per-block partial sums [ceil(n_envs / 256)] f32, allocated once outside any capture."""
    if n_envs < 1:
        raise ValueError(f"Kelly cap needs at least one env ({n_envs} vs ≥ 1) — hint: set env.n_envs ≥ 1")
    return torch.zeros(n_partials(n_envs), dtype=torch.float32, device=device)


def _check(ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor) -> None:
    problems = []
    if ps.dim() != 2 or ps.shape[1] != PS_STRIDE or ps.shape[0] < 1 or ps.dtype != torch.float32:
        problems.append(f"ps {tuple(ps.shape)} {ps.dtype} vs [n_envs ≥ 1, {PS_STRIDE}] float32")
    if isv.shape != (ISV_STRIDE,) or isv.dtype != torch.float32:
        problems.append(f"isv {tuple(isv.shape)} {isv.dtype} vs [{ISV_STRIDE}] float32")
    if ps.dim() == 2 and workspace.shape != (n_partials(ps.shape[0]),):
        problems.append(f"workspace {tuple(workspace.shape)} vs [{n_partials(ps.shape[0])}]")
    if problems:
        raise ValueError(
            "Kelly cap inputs are malformed (" + "; ".join(problems) + ") — hint: allocate the "
            "workspace with kelly_cap_workspace(n_envs, device)"
        )


def adaptive_kelly_cap(
    ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor, params: KellyParams = KellyParams()
) -> None:
    """Write ISV[KELLY_CAP] from ps's Kelly statistics and ISV health, in place (no host read)."""
    _check(ps, isv, workspace)
    if not ps.is_cuda:
        adaptive_kelly_cap_reference(ps, isv, workspace, params)
        return
    n_envs = ps.shape[0]
    partials = loader.load_kernel(OP, PARTIALS_KERNEL, ps.device)
    finalize = loader.load_kernel(OP, FINALIZE_KERNEL, ps.device)
    loader.launch(
        partials, n_envs, (loader.pointer(ps), np.int32(n_envs), loader.pointer(workspace)),
        ps.device,
    )  # fmt: skip
    loader.launch(
        finalize, ADAPTIVE_BLOCK,
        (loader.pointer(workspace), np.int32(workspace.shape[0]), np.int32(n_envs), loader.pointer(isv),
         np.float32(params.cap_floor), np.float32(params.cap_max)),
        ps.device,
    )  # fmt: skip


def env_half_kelly(ps: torch.Tensor) -> torch.Tensor:
    """Half-Kelly fraction per env [n_envs] from ps's statistics (which carry the env's prior)."""
    tiny = torch.tensor(TINY, dtype=torch.float32, device=ps.device)
    wins = ps[:, PS_KELLY_WINS].clamp(min=0.0)  # [n]
    losses = ps[:, PS_KELLY_LOSSES].clamp(min=0.0)  # [n]
    win_sum = ps[:, PS_KELLY_WIN_SUM].clamp(min=0.0)  # [n]
    loss_sum = ps[:, PS_KELLY_LOSS_SUM].clamp(min=0.0)  # [n]
    p = wins / torch.maximum(wins + losses, tiny)
    odds = (win_sum / torch.maximum(wins, tiny)) / torch.maximum(loss_sum / torch.maximum(losses, tiny), tiny)
    kelly = p - (1.0 - p) / torch.maximum(odds, tiny)
    half = 0.5 * kelly.clamp(min=0.0)
    return torch.where(torch.isfinite(half), half, torch.zeros_like(half))


def _tree_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum of [k·ADAPTIVE_BLOCK] values per row in the kernel's order: halve, add, repeat."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = values[..., :half] + values[..., half:]
    return values[..., 0]


def adaptive_kelly_cap_reference(
    ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor, params: KellyParams = KellyParams()
) -> None:
    """PyTorch twin of the two kernels, summing in the kernels' order (so CPU and GPU agree)."""
    n_envs = ps.shape[0]
    blocks = workspace.shape[0]
    half = env_half_kelly(ps)  # [n]
    padded = torch.zeros(blocks * ADAPTIVE_BLOCK, dtype=torch.float32, device=ps.device)
    padded[:n_envs] = half
    workspace.copy_(_tree_sum(padded.view(blocks, ADAPTIVE_BLOCK)))  # [blocks]
    lanes = torch.zeros(((blocks + ADAPTIVE_BLOCK - 1) // ADAPTIVE_BLOCK) * ADAPTIVE_BLOCK, dtype=torch.float32,
                        device=ps.device)  # fmt: skip
    lanes[:blocks] = workspace
    strided = lanes.view(-1, ADAPTIVE_BLOCK)  # [rounds, 256]: lane t sums rounds in index order
    running = strided[0].clone()
    for row in strided[1:]:
        running = running + row
    total = _tree_sum(running)
    raw_health = isv[ISV_LEARNING_HEALTH].to(ps.device)
    health = torch.where(torch.isfinite(raw_health), raw_health.clamp(0.0, 1.0), torch.zeros_like(raw_health))
    cap = total / float(max(n_envs, 1)) * (0.5 + 0.5 * health)
    isv[ISV_KELLY_CAP] = torch.clamp(cap, params.cap_floor, params.cap_max).to(isv.device)
