"""Conservative Q-learning regulariser (Kumar et al., 2020) for branching Q-values.

Why: offline-heavy replay over a single market history overestimates actions the data rarely
takes; CQL(H) pushes down logsumexp_a Q(s, a) and up Q(s, a_data) per branch. Pure function,
weighted by ``loss.cql_alpha`` (0 disables it without changing the graph's shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class CQLTerms:
    """Named terms of the CQL regulariser (device tensors)."""

    per_branch: torch.Tensor  # [n_branches]
    total: torch.Tensor  # []


def branching_cql_loss(q_values: torch.Tensor, taken_one_hot: torch.Tensor, mask: torch.Tensor) -> CQLTerms:
    """q_values [B, D, A] (expected values at s), taken_one_hot [B, D, A], mask [D, A] → mean gap per branch."""
    data_q = (q_values * taken_one_hot).sum(-1)  # [B, D]
    logsumexp = torch.logsumexp(q_values.masked_fill(~mask, float("-inf")), dim=-1)  # [B, D]
    per_branch = (logsumexp - data_q).mean(0)  # [D]
    return CQLTerms(per_branch=per_branch, total=per_branch.sum())
