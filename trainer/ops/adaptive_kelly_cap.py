"""adaptive_kelly_cap: the position cap from the environments' own win/loss record.

Why: the cap on |position| must grow only as the agent proves an edge, and shrink while learning
is sick. The closed trades (round trips: env_step) of every env (with a Bayesian prior of 2 wins and 2 losses per env so a
cold start is neither zero nor reckless) are pooled; the mean trade return enters at its lower
confidence bound (so the sampling noise of a market without an edge does not look like one); the
continuous Kelly position μ/E[r²] — the binary stake p − q/b divided by the loss per unit of
position — is the size; half of it, scaled by (0.5 + 0.5·health), is the cap. The pooled sums are a
two-pass deterministic reduction (per-block partials, then one block) — never atomics — so a rerun
is bitwise identical. Formulas: ``cuda/adaptive_kelly_cap.cu`` header and docs/trainer-adaptive.md.

An earlier version averaged each env's half-Kelly p − q/b and used it directly as the position
fraction: f* is the fraction of capital *at risk* (a lost bet loses the stake), while a lost trade
here loses only about 0.5 % of the position, so the cap was ~200× too small and sat on its floor
in every run (docs/results.md, 2026-12-01).

``kelly_cap_workspace(n_envs, device)`` allocates the partials scratch once (at construction);
``adaptive_kelly_cap(ps, isv, workspace, params)`` launches on CUDA tensors and runs
``adaptive_kelly_cap_reference`` (same signature) on CPU tensors; a population passes a leading
agent dimension on ps, the ISV and the workspace (``kelly_cap_workspace(..., agents=P)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.layout import (
    ISV_KELLY_CAP,
    ISV_KELLY_PRIOR_LOSSES,
    ISV_KELLY_PRIOR_MEAN_RETURN,
    ISV_KELLY_PRIOR_WINS,
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
KELLY_STATS = 4  # pooled sums, in this order: wins, losses, win sum, loss sum (rows of the workspace)


@dataclass(frozen=True)
class KellyParams:
    """Bounds and safety margins of the Kelly cap (a fraction of equity)."""

    cap_floor: float = 0.1
    """Lowest cap: a cold-started agent (no proven edge) must still trade to learn."""
    cap_max: float = 1.0
    """Highest cap (1 = fully invested; the env's magnitude fractions never exceed 1)."""
    kelly_fraction: float = 0.5
    """Share of the full Kelly position (½: half-Kelly keeps ¾ of the growth at far less variance)."""
    confidence_z: float = 2.0
    """The mean trade return enters z standard errors low: an edge must be clear of sampling noise."""

    def __post_init__(self) -> None:
        problems = []
        if not 0.0 <= self.cap_floor <= self.cap_max:
            problems.append(f"cap bounds {self.cap_floor}..{self.cap_max} vs 0 ≤ floor ≤ max")
        if not 0.0 < self.kelly_fraction <= 1.0:
            problems.append(f"kelly_fraction {self.kelly_fraction} vs (0, 1]")
        if self.confidence_z < 0.0:
            problems.append(f"confidence_z {self.confidence_z} vs ≥ 0")
        if problems:
            raise ValueError(
                "invalid Kelly cap parameters (" + "; ".join(problems) + ") — hint: e.g. "
                "KellyParams(cap_floor=0.1, cap_max=1.0, kelly_fraction=0.5, confidence_z=2.0)"
            )


def write_kelly_prior(ps: torch.Tensor, cfg: torch.Tensor) -> None:
    """Every row's Kelly record of ``ps`` [n, PS_STRIDE] back to the prior the ISV ``cfg`` holds
    (KELLY_PRIOR_WINS wins and KELLY_PRIOR_LOSSES losses of KELLY_PRIOR_MEAN_RETURN each), in place.
    Pure tensor ops (no host reads): usable inside a captured graph."""
    ps[:, PS_KELLY_WINS] = cfg[ISV_KELLY_PRIOR_WINS]
    ps[:, PS_KELLY_LOSSES] = cfg[ISV_KELLY_PRIOR_LOSSES]
    ps[:, PS_KELLY_WIN_SUM] = cfg[ISV_KELLY_PRIOR_WINS] * cfg[ISV_KELLY_PRIOR_MEAN_RETURN]
    ps[:, PS_KELLY_LOSS_SUM] = cfg[ISV_KELLY_PRIOR_LOSSES] * cfg[ISV_KELLY_PRIOR_MEAN_RETURN]


def n_partials(n_envs: int) -> int:
    return max((n_envs + ADAPTIVE_BLOCK - 1) // ADAPTIVE_BLOCK, 1)


def kelly_cap_workspace(n_envs: int, device: torch.device | str, agents: int | None = None) -> torch.Tensor:
    """The per-block partial sums [KELLY_STATS, ceil(n_envs / 256)] f32 (with ``agents``: [agents,
    KELLY_STATS, ceil(n_envs / 256)], one block of rows per agent), allocated once outside any capture."""
    if n_envs < 1:
        raise ValueError(f"Kelly cap needs at least one env ({n_envs} vs ≥ 1) — hint: set env.n_envs ≥ 1")
    shape = (KELLY_STATS, n_partials(n_envs)) if agents is None else (agents, KELLY_STATS, n_partials(n_envs))
    return torch.zeros(shape, dtype=torch.float32, device=device)


def _check(ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor) -> None:
    """Shapes with the agent dimension: ps [agents, n_envs, PS_STRIDE], isv [agents, ISV_STRIDE], workspace [agents, 4, blocks]."""
    problems = []
    if ps.dim() != 3 or ps.shape[2] != PS_STRIDE or ps.shape[1] < 1 or ps.dtype != torch.float32:
        problems.append(f"ps {tuple(ps.shape)} {ps.dtype} vs [agents, n_envs ≥ 1, {PS_STRIDE}] float32")
    if isv.dim() != 2 or isv.shape[1] != ISV_STRIDE or isv.dtype != torch.float32:
        problems.append(f"isv {tuple(isv.shape)} {isv.dtype} vs [agents, {ISV_STRIDE}] float32")
    if ps.dim() == 3 and workspace.shape != (ps.shape[0], KELLY_STATS, n_partials(ps.shape[1])):
        problems.append(f"workspace {tuple(workspace.shape)} vs [{ps.shape[0]}, {KELLY_STATS}, {n_partials(ps.shape[1])}]")
    if ps.dim() == 3 and isv.dim() == 2 and ps.shape[0] != isv.shape[0]:
        problems.append(f"{ps.shape[0]} agents of ps vs {isv.shape[0]} ISV rows")
    if problems:
        raise ValueError(
            "Kelly cap inputs are malformed (" + "; ".join(problems) + ") — hint: allocate the "
            "workspace with kelly_cap_workspace(n_envs, device) (agents=P for a population); shapes shown with "
            "their leading agent dimension"
        )


def _with_agents(ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return loader.agent_rows(ps, 2), loader.agent_rows(isv, 1), loader.agent_rows(workspace, 2)


def adaptive_kelly_cap(
    ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor, params: KellyParams = KellyParams()
) -> None:
    """Write ISV[KELLY_CAP] from ps's Kelly statistics and ISV health, in place (no host read).

    One agent: ps [n_envs, PS_STRIDE], isv [ISV_STRIDE], workspace [4, blocks]; a population: the
    same with a leading agent dimension (two launches for all agents, a grid row per agent)."""
    ps, isv, workspace = _with_agents(ps, isv, workspace)
    _check(ps, isv, workspace)
    if not ps.is_cuda:
        adaptive_kelly_cap_reference(ps, isv, workspace, params)
        return
    agents, n_envs = ps.shape[0], ps.shape[1]
    partials = loader.load_kernel(OP, PARTIALS_KERNEL, ps.device)
    finalize = loader.load_kernel(OP, FINALIZE_KERNEL, ps.device)
    loader.launch(
        partials, n_envs, (loader.pointer(ps), np.int32(n_envs), loader.pointer(workspace)),
        ps.device, agents=agents,
    )  # fmt: skip
    loader.launch(
        finalize, ADAPTIVE_BLOCK,
        (loader.pointer(workspace), np.int32(workspace.shape[2]), loader.pointer(isv),
         np.float32(params.cap_floor), np.float32(params.cap_max), np.float32(params.kelly_fraction),
         np.float32(params.confidence_z)),
        ps.device, agents=agents,
    )  # fmt: skip


def env_statistics(ps: torch.Tensor) -> torch.Tensor:
    """Each env's Kelly record [KELLY_STATS, n_envs] (wins, losses, win sum, loss sum; prior included, ≥ 0)."""
    return torch.stack([ps[:, column].clamp(min=0.0) for column in (PS_KELLY_WINS, PS_KELLY_LOSSES,
                                                                    PS_KELLY_WIN_SUM, PS_KELLY_LOSS_SUM)])  # fmt: skip


def kelly_position(totals: torch.Tensor, params: KellyParams = KellyParams()) -> torch.Tensor:
    """The Kelly position size (fraction of equity, before health and bounds) of pooled sums [KELLY_STATS].

    n = W + L, μ = (WS − LS)/n (mean return per unit of position), m₂ = (WS²/W + LS²/L)/n (second
    moment, each trade at its side's mean), μ_lcb = max(μ − z·sqrt(m₂/n), 0),
    position = κ·μ_lcb/m₂ (continuous Kelly; for wins and losses of one size m it is (p − q)/m,
    the binary f* = p − q/b divided by the loss per unit). 0, never NaN.
    """
    f32 = torch.float32
    tiny = torch.tensor(TINY, dtype=f32, device=totals.device)
    wins, losses, win_sum, loss_sum = totals.unbind(0)
    trades = torch.maximum(wins + losses, tiny)
    mean = (win_sum - loss_sum) / trades
    second = (win_sum * win_sum / torch.maximum(wins, tiny) + loss_sum * loss_sum / torch.maximum(losses, tiny)) / trades
    standard_error = torch.sqrt(second / trades)
    edge = torch.clamp(mean - torch.tensor(params.confidence_z, dtype=f32) * standard_error, min=0.0)
    position = torch.tensor(params.kelly_fraction, dtype=f32) * edge / torch.maximum(second, tiny)
    return torch.where(torch.isfinite(position), position, torch.zeros_like(position))


def _tree_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum of [k·ADAPTIVE_BLOCK] values per row in the kernel's order: halve, add, repeat."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = values[..., :half] + values[..., half:]
    return values[..., 0]


def adaptive_kelly_cap_reference(
    ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor, params: KellyParams = KellyParams()
) -> None:
    """PyTorch twin of the two kernels, summing in the kernels' order (so CPU and GPU agree), agent by agent."""
    ps, isv, workspace = _with_agents(ps, isv, workspace)
    for agent in range(isv.shape[0]):
        _kelly_cap_one_agent_reference(ps[agent], isv[agent], workspace[agent], params)


def _kelly_cap_one_agent_reference(ps: torch.Tensor, isv: torch.Tensor, workspace: torch.Tensor, params: KellyParams) -> None:
    """One agent: ps [n_envs, PS_STRIDE], isv [ISV_STRIDE] and workspace [4, blocks] (views, written in place)."""
    n_envs = ps.shape[0]
    blocks = workspace.shape[1]
    padded = torch.zeros(KELLY_STATS, blocks * ADAPTIVE_BLOCK, dtype=torch.float32, device=ps.device)
    padded[:, :n_envs] = env_statistics(ps)
    workspace.copy_(_tree_sum(padded.view(KELLY_STATS, blocks, ADAPTIVE_BLOCK)))  # [KELLY_STATS, blocks]
    rounds = (blocks + ADAPTIVE_BLOCK - 1) // ADAPTIVE_BLOCK
    lanes = torch.zeros(KELLY_STATS, rounds * ADAPTIVE_BLOCK, dtype=torch.float32, device=ps.device)
    lanes[:, :blocks] = workspace
    strided = lanes.view(KELLY_STATS, rounds, ADAPTIVE_BLOCK)  # lane t sums rounds in index order
    running = strided[:, 0].clone()
    for index in range(1, rounds):
        running = running + strided[:, index]
    totals = _tree_sum(running)  # [KELLY_STATS]
    raw_health = isv[ISV_LEARNING_HEALTH].to(ps.device)
    health = torch.where(torch.isfinite(raw_health), raw_health.clamp(0.0, 1.0), torch.zeros_like(raw_health))
    cap = kelly_position(totals, params) * (0.5 + 0.5 * health)
    isv[ISV_KELLY_CAP] = torch.clamp(cap, params.cap_floor, params.cap_max).to(isv.device)
