"""The branching distributional network: shared trunk → dueling C51 heads per branch + IQN head.

Why this shape:
- Branching (Tavakoli et al., BDQ): the joint action space (4 × 3 × 2 × 3 = 72) factorises into
  four branches with their own heads, so the output grows with the sum of sub-actions, not their
  product; the joint action is each branch's argmax of expected value.
- Per-atom dueling (Rainbow): p_i(s, a) = softmax_i(v_i(s) + a_i(s, a) − mean_a′ a_i(s, a′)) per
  branch, so state value and action advantage are learned separately for every atom.
- IQN head (Dabney et al.): a cosine embedding of τ (64 features) multiplies the trunk embedding
  (Hadamard product); its quantile loss sends a second, denser gradient into the shared trunk.
- Return head: one linear unit on the trunk embedding regresses the bar's next return (an
  auxiliary task, ``loss.return_weight``): the supervised signal that teaches the trunk the
  forecast a position's edge is made of, far less noisy than the TD targets it is buried in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from trainer.model.encoder import SelectiveScanEncoder


@dataclass(frozen=True)
class NetworkShape:
    """Sizes the network is built for (from the data, the layout and ``ModelConfig``)."""

    n_features: int
    n_portfolio: int
    branch_sizes: tuple[int, ...]
    window: int = 16
    temporal_encoder: bool = True
    scan_channels: int = 32
    scan_state: int = 16
    hidden: int = 256
    trunk_layers: int = 2
    head_hidden: int = 128
    n_atoms: int = 51
    iqn_embedding: int = 64


def dueling_distribution(value: torch.Tensor, advantage: torch.Tensor, action_weights: torch.Tensor | None = None) -> torch.Tensor:
    """Per-atom dueling combination → log-probabilities.

    value [..., N], advantage [..., A, N] → log p [..., A, N] with
    p_i(s, a) = softmax_i(v_i + a_i(a) − mean_a′ a_i(a′)). ``action_weights`` [..., A] (1/A_d on a
    branch's real actions, 0 on padding) restricts the mean to the real actions of a padded branch.
    """
    if action_weights is None:
        mean_advantage = advantage.mean(dim=-2, keepdim=True)  # [..., 1, N]
    else:
        mean_advantage = (advantage * action_weights.unsqueeze(-1)).sum(dim=-2, keepdim=True)  # [..., 1, N]
    logits = value.unsqueeze(-2) + advantage - mean_advantage  # [..., A, N]
    return torch.log_softmax(logits, dim=-1)


def action_mask(branch_sizes: tuple[int, ...]) -> torch.Tensor:
    """[n_branches, A_max] bool: True on each branch's real sub-actions, False on padding."""
    widest = max(branch_sizes)
    return torch.arange(widest).unsqueeze(0) < torch.tensor(branch_sizes).unsqueeze(1)


class BranchingDistributionalNet(nn.Module):
    """Shared trunk with four dueling C51 heads and an IQN head.

    The branches are evaluated together: every head tensor carries a branch axis and the action
    axis is padded to the widest branch (``action_mask`` marks the real sub-actions), so a forward
    pass costs the same handful of kernels whatever the number of branches — what keeps the
    captured training step short.
    """

    def __init__(self, shape: NetworkShape) -> None:
        super().__init__()
        self.shape = shape
        self.encoder = (
            SelectiveScanEncoder(shape.n_features, shape.scan_channels, shape.scan_state)
            if shape.temporal_encoder
            else None
        )
        trunk_in = shape.n_features + shape.n_portfolio + (shape.scan_channels if self.encoder else 0)
        layers: list[nn.Module] = []
        width = trunk_in
        for _ in range(shape.trunk_layers):
            layers += [nn.Linear(width, shape.hidden), nn.ReLU()]
            width = shape.hidden
        self.trunk = nn.Sequential(*layers)
        n_branches = len(shape.branch_sizes)
        widest = max(shape.branch_sizes)
        self.n_branches, self.widest = n_branches, widest
        # Value and advantage streams of all branches: one wide hidden layer each, then a
        # per-branch output layer stored as a stacked weight [n_branches, head_hidden, out].
        self.value_hidden = nn.Linear(shape.hidden, n_branches * shape.head_hidden)
        self.advantage_hidden = nn.Linear(shape.hidden, n_branches * shape.head_hidden)
        self.value_out = nn.Parameter(_stacked_init(n_branches, shape.head_hidden, shape.n_atoms))
        self.value_bias = nn.Parameter(torch.zeros(n_branches, shape.n_atoms))
        self.advantage_out = nn.Parameter(_stacked_init(n_branches, shape.head_hidden, widest * shape.n_atoms))
        self.advantage_bias = nn.Parameter(torch.zeros(n_branches, widest * shape.n_atoms))
        self.tau_embedding = nn.Linear(shape.iqn_embedding, shape.hidden)
        self.quantile_head = nn.Sequential(
            nn.Linear(shape.hidden, shape.head_hidden), nn.ReLU(), nn.Linear(shape.head_hidden, n_branches * widest)
        )
        self.return_head = nn.Linear(shape.hidden, 1)
        mask = action_mask(shape.branch_sizes)
        sizes = torch.tensor(shape.branch_sizes, dtype=torch.float32).unsqueeze(1)
        self.register_buffer("action_mask", mask, persistent=False)  # [D, A_max] bool
        self.register_buffer("action_weights", mask.float() / sizes, persistent=False)  # [D, A_max]
        self.register_buffer(
            "cosine_index", torch.arange(shape.iqn_embedding, dtype=torch.float32), persistent=False
        )

    def embed(self, window: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        """window [B, K, F] (last row = current bar), portfolio [B, P] → trunk embedding [B, H]."""
        parts = [window[:, -1, :], portfolio]
        if self.encoder is not None:
            parts.append(self.encoder(window))  # [B, D]
        return self.trunk(torch.cat(parts, dim=-1))

    def distributions(self, embedding: torch.Tensor) -> torch.Tensor:
        """Log-probabilities [B, n_branches, A_max, N] of the dueling C51 heads (padding included)."""
        batch = embedding.shape[0]
        d, hh, n = self.n_branches, self.shape.head_hidden, self.shape.n_atoms
        value_h = torch.relu(self.value_hidden(embedding)).view(batch, d, hh)  # [B, D, Hh]
        advantage_h = torch.relu(self.advantage_hidden(embedding)).view(batch, d, hh)  # [B, D, Hh]
        value = torch.einsum("bdh,dhn->bdn", value_h, self.value_out) + self.value_bias  # [B, D, N]
        advantage = torch.einsum("bdh,dho->bdo", advantage_h, self.advantage_out) + self.advantage_bias  # [B, D, A·N]
        advantage = advantage.view(batch, d, self.widest, n)  # [B, D, A_max, N]
        return dueling_distribution(value, advantage, self.action_weights)

    def quantiles(self, embedding: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """IQN quantile values [B, T, n_branches, A_max] at fractions taus [B, T]."""
        cosines = torch.cos(torch.pi * taus.unsqueeze(-1) * self.cosine_index)  # [B, T, 64]
        phi = torch.relu(self.tau_embedding(cosines))  # [B, T, H]
        values = self.quantile_head(embedding.unsqueeze(1) * phi)  # [B, T, D·A_max]
        return values.view(taus.shape[0], taus.shape[1], self.n_branches, self.widest)

    def predicted_return(self, embedding: torch.Tensor) -> torch.Tensor:
        """The return head's forecast [B] of each state's next return (training-volatility units)."""
        return self.return_head(embedding).squeeze(-1)

    def forward(self, window: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        return self.distributions(self.embed(window, portfolio))

    def parameter_groups(self, branch_names: Sequence[str] | None = None) -> dict[str, list[ParameterSlice]]:
        """Every parameter element in exactly one named group: ``trunk``, one per branch, ``iqn_head``,
        ``return_head``.

        Why slices: the branches share wide layers for speed (``value_hidden`` holds every branch's
        rows, ``value_out`` stacks them), so a branch head is a set of rows of shared tensors, not
        a set of modules. ``trunk`` is the temporal encoder plus the shared MLP; a branch group is
        every element only that branch's outputs depend on (its value/advantage rows and its rows
        of the quantile output layer); ``iqn_head`` is the τ embedding and the quantile hidden layer
        all branches share. Gradient diagnostics compute one norm per group from these slices.
        """
        names = tuple(branch_names) if branch_names is not None else tuple(f"branch_{d}" for d in range(self.n_branches))
        reserved = {"trunk", "iqn_head", "return_head"}
        if len(names) != self.n_branches or len(set(names) | reserved) != self.n_branches + len(reserved):
            raise ValueError(
                f"branch names do not fit the network ({names!r} vs {self.n_branches} distinct names other than "
                f"'trunk', 'iqn_head' and 'return_head') — hint: pass one name per branch, in branch order"
            )
        trunk_modules = [self.trunk] if self.encoder is None else [self.encoder, self.trunk]
        groups: dict[str, list[ParameterSlice]] = {
            "trunk": [ParameterSlice(param) for module in trunk_modules for param in module.parameters()]
        }
        hh, widest = self.shape.head_hidden, self.widest
        quantile_out = self.quantile_head[-1]
        for branch, name in enumerate(names):
            hidden_rows = slice(branch * hh, (branch + 1) * hh)
            quantile_rows = slice(branch * widest, (branch + 1) * widest)
            groups[name] = [
                ParameterSlice(self.value_hidden.weight, hidden_rows),
                ParameterSlice(self.value_hidden.bias, hidden_rows),
                ParameterSlice(self.advantage_hidden.weight, hidden_rows),
                ParameterSlice(self.advantage_hidden.bias, hidden_rows),
                ParameterSlice(self.value_out, slice(branch, branch + 1)),
                ParameterSlice(self.value_bias, slice(branch, branch + 1)),
                ParameterSlice(self.advantage_out, slice(branch, branch + 1)),
                ParameterSlice(self.advantage_bias, slice(branch, branch + 1)),
                ParameterSlice(quantile_out.weight, quantile_rows),
                ParameterSlice(quantile_out.bias, quantile_rows),
            ]
        groups["iqn_head"] = [ParameterSlice(param) for param in self.tau_embedding.parameters()] + [
            ParameterSlice(param) for param in self.quantile_head[0].parameters()
        ]
        groups["return_head"] = [ParameterSlice(param) for param in self.return_head.parameters()]
        return groups


@dataclass(frozen=True, eq=False)
class ParameterSlice:
    """A parameter, or the leading-dimension rows ``rows`` of it (None: all), that belong to one group."""

    parameter: nn.Parameter
    rows: slice | None = None

    def of(self, tensor: torch.Tensor) -> torch.Tensor:
        """The same rows of a tensor shaped like the parameter (its gradient, say)."""
        return tensor if self.rows is None else tensor[self.rows]


def _stacked_init(n_branches: int, fan_in: int, fan_out: int) -> torch.Tensor:
    """nn.Linear's default init for a stack of per-branch weights [n_branches, fan_in, fan_out]."""
    bound = 1.0 / math.sqrt(fan_in)
    return torch.empty(n_branches, fan_in, fan_out).uniform_(-bound, bound)


def masked_values(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Q-values with padded actions at −inf (never an argmax, zero weight in a logsumexp): [..., D, A]."""
    return q.masked_fill(~mask, float("-inf"))


def greedy_actions(log_probs: torch.Tensor, supports: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each branch's argmax of expected value: log_probs [B, D, A, N], supports [D, N], mask [D, A] → [B, D] int64."""
    q = (log_probs.exp() * supports.unsqueeze(1)).sum(-1)  # [B, D, A]
    return masked_values(q, mask).argmax(-1)
