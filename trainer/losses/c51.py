"""C51 (categorical distributional) targets and loss, for one or many branches at once.

Why the dense Eq. 7 form: the literal Algorithm 1 of Bellemare et al. (2017) loses all the mass of
a target atom whose projected position b_j lands exactly on an integer (reward on an atom, every
atom clipped to v_min/v_max, γ = 1 with r = 0), and its scatter form needs atomics on a GPU (not
deterministic). The dense form m_i = Σ_j clip(1 − |T̂z_j − z_i|/Δz, 0, 1)·p_j is one batched matmul:
mass-conserving in every edge case, deterministic, and free of data-dependent control flow, so it
is captured by a CUDA graph unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class C51Terms:
    """Named terms of the branching C51 loss (device tensors, never read inside the step)."""

    per_branch: torch.Tensor  # [n_branches] mean cross-entropy of each branch
    total: torch.Tensor  # [] sum over branches
    target_mean: torch.Tensor  # [n_branches, B] mean of r + γⁿ·Z′ before the projection (no graph)


def atom_support(centre: torch.Tensor, half_width: torch.Tensor, n_atoms: int) -> torch.Tensor:
    """Uniform support per branch from the ISV's centre and half-width: [n_branches] → [n_branches, N]."""
    unit = torch.linspace(-1.0, 1.0, n_atoms, device=centre.device, dtype=centre.dtype)  # [N]
    return centre.unsqueeze(-1) + half_width.unsqueeze(-1) * unit  # [n_branches, N]


def project_distribution(
    next_probs: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    support: torch.Tensor,
) -> torch.Tensor:
    """Project r + γⁿ(1−done)·Z onto ``support`` (dense Eq. 7; mass-conserving, deterministic).

    Shapes: next_probs [B, N], rewards [B], discounts [B] (γⁿ·(1−done)), support [N] (or [B, N]
    for a per-row support) → [B, N]. The support must be uniform and increasing.
    """
    support_rows = support if support.dim() == 2 else support.unsqueeze(0)  # [B or 1, N]
    v_min = support_rows[:, :1]  # [B or 1, 1]
    v_max = support_rows[:, -1:]  # [B or 1, 1]
    n_atoms = support_rows.shape[-1]
    delta_z = (v_max - v_min) / (n_atoms - 1)  # [B or 1, 1]
    target_atoms = rewards.unsqueeze(-1) + discounts.unsqueeze(-1) * support_rows  # [B, N] (T̂z_j)
    target_atoms = torch.minimum(torch.maximum(target_atoms, v_min), v_max)
    # weight[b, i, j] = clip(1 − |T̂z_j − z_i| / Δz, 0, 1): how much of atom j lands on atom i.
    # Computed in place on one [B, N, N] buffer (the largest tensor of a CPU update; a fresh one
    # per operation would be four more passes over fresh memory); −x + 1 rounds exactly as 1 − x.
    # 1 − |·|/Δz never exceeds 1, so only the lower clip is applied: the same values as a clip to
    # [0, 1], and an op torch.func.vmap batches (the stacked population maps this over its agents;
    # an in-place two-sided clamp_ has no batching rule and would run agent by agent).
    weight = target_atoms.unsqueeze(1) - support_rows.unsqueeze(-1)  # [B, N_i, N_j]
    weight.abs_().div_(delta_z.unsqueeze(-1)).neg_().add_(1.0).clamp_min_(0.0)
    return torch.bmm(weight, next_probs.unsqueeze(-1)).squeeze(-1)  # [B, N]


def n_step_returns(
    rewards: torch.Tensor, dones: torch.Tensor, terminals: torch.Tensor, gammas: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-branch n-step returns and bootstrap discounts from raw per-step rewards.

    rewards, dones, terminals: [B, n] (dones[:, i] = 1 when the episode ended after step i,
    terminals[:, i] = 1 when that end has nothing after it); gammas: [n_branches] →
    returns [n_branches, B] = Σ_i γ^i·alive_i·r_i with alive_i = Π_{j<i}(1−done_j), and
    discounts [n_branches, B] = γ^m·(1 − terminal at the first end), m = the steps taken up to the
    first episode end (n without one). A truncated episode (time limit, data end) is bootstrapped
    from the state it reached, m steps on (Pardo et al. 2018); only a terminal stops the bootstrap.
    Storing raw rewards lets γ (an ISV slot a GPU kernel may change between steps) apply at
    sampling time.
    """
    n = rewards.shape[1]
    not_done = 1.0 - dones  # [B, n]
    alive_after = torch.cumprod(not_done, dim=1)  # [B, n]: episode still running after step i
    alive = torch.cat([torch.ones_like(alive_after[:, :1]), alive_after[:, :-1]], dim=1)  # [B, n]
    powers = torch.arange(n, device=rewards.device, dtype=rewards.dtype)  # [n]
    gamma_powers = gammas.unsqueeze(-1) ** powers  # [n_branches, n]
    returns = (alive * rewards).unsqueeze(0).mul(gamma_powers.unsqueeze(1)).sum(-1)  # [n_branches, B]
    steps = alive.sum(1)  # [B]: m
    ended_terminal = (alive * dones * terminals).sum(1)  # [B]: 1 when the first end is a terminal
    discounts = gammas.unsqueeze(-1) ** steps.unsqueeze(0) * (1.0 - ended_terminal).unsqueeze(0)  # [n_branches, B]
    return returns, discounts


def expected_values(probs: torch.Tensor, supports: torch.Tensor) -> torch.Tensor:
    """Q(s, a) = Σ_i z_i p_i(s, a) per branch: probs [B, D, A, N], supports [D, N] → [B, D, A]."""
    return (probs * supports.unsqueeze(1)).sum(-1)


def one_hot(indices: torch.Tensor, size: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """One-hot by comparison with an arange: [...] int64 → [..., size].

    ``torch.nn.functional.one_hot`` validates the index range, which reads the device on some
    backends; a comparison never does, so this is safe inside a captured graph.
    """
    classes = torch.arange(size, device=indices.device, dtype=indices.dtype)  # [size]
    return (indices.unsqueeze(-1) == classes).to(dtype)


def greedy_one_hot(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One-hot of each branch's argmax over its real actions (first on ties): q [B, D, A], mask [D, A] → [B, D, A]."""
    return one_hot(q.masked_fill(~mask, float("-inf")).argmax(-1), q.shape[-1], q.dtype)


def select_actions(values: torch.Tensor, one_hot_actions: torch.Tensor) -> torch.Tensor:
    """The chosen action's slice via a one-hot contraction (a gather's backward would scatter-add).

    values [B, D, A, ...], one_hot_actions [B, D, A] → [B, D, ...].
    """
    weights = one_hot_actions.reshape(*one_hot_actions.shape, *([1] * (values.dim() - 3)))
    return (values * weights).sum(2)


def branching_c51_loss(
    online_log_probs: torch.Tensor,
    taken_one_hot: torch.Tensor,
    next_online_probs: torch.Tensor,
    next_target_probs: torch.Tensor,
    returns: torch.Tensor,
    discounts: torch.Tensor,
    supports: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor | None = None,
    double_q: bool = True,
) -> C51Terms:
    """Cross-entropy between each branch's predicted distribution and its projected target.

    online_log_probs [B, D, A, N] (log-softmax at s), taken_one_hot [B, D, A],
    next_online_probs / next_target_probs [B, D, A, N] at s′; returns, discounts [D, B];
    supports [D, N]; mask [D, A] (real sub-actions of each padded branch); weights [B] optional.
    The next action per branch is the argmax of the online expected value (double Q) or of the
    target's; the target distribution carries no gradient. All branches in one batched projection.
    """
    batch, n_branches, _, n_atoms = online_log_probs.shape
    with torch.no_grad():
        chooser = next_online_probs if double_q else next_target_probs
        next_one_hot = greedy_one_hot(expected_values(chooser, supports), mask)  # [B, D, A]
        next_dist = select_actions(next_target_probs, next_one_hot)  # [B, D, N]
        # The unprojected target mean: what the adaptive support tracks (a target beyond the
        # support still pulls it outwards; the projection would clip it to the end atom).
        next_mean = (next_dist * supports.unsqueeze(0)).sum(-1).transpose(0, 1)  # [D, B]
        target_mean = returns + discounts * next_mean  # [D, B]
        target = project_distribution(
            next_dist.transpose(0, 1).reshape(n_branches * batch, n_atoms),
            returns.reshape(-1),
            discounts.reshape(-1),
            supports.repeat_interleave(batch, dim=0),  # [D·B, N]
        ).view(n_branches, batch, n_atoms)  # [D, B, N]
    chosen_log_probs = select_actions(online_log_probs, taken_one_hot).transpose(0, 1)  # [D, B, N]
    cross_entropy = -(target * chosen_log_probs).sum(-1)  # [D, B]
    if weights is not None:
        cross_entropy = cross_entropy * weights
    per_branch = cross_entropy.mean(1)  # [D]
    return C51Terms(per_branch=per_branch, total=per_branch.sum(), target_mean=target_mean)
