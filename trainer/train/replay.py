"""Device-resident replay: an n-step window per environment feeding a ring buffer of transitions.

Why this shape: every tensor lives on the training device and every operation is a fixed-shape
tensor op driven by device-side pointers (``write_position``, ``size``), so storing and sampling
are captured in the training step's CUDA graph with no host reads. A transition stores the bar
index of its states instead of the K-bar feature window (the window is gathered from the feature
tensor at sampling time: K× less memory), and the n raw rewards plus done flags instead of a
discounted sum, so the per-branch γ (an ISV slot that GPU kernels may change) applies when the
batch is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Transitions:
    """A batch of n-step transitions (device tensors)."""

    bar_index: torch.Tensor  # [M] int64: bar of the start state
    portfolio: torch.Tensor  # [M, P] f32: portfolio inputs of the start state
    actions: torch.Tensor  # [M, n_branches] int64
    rewards: torch.Tensor  # [M, n] f32: raw per-step rewards
    dones: torch.Tensor  # [M, n] f32: 1 where the episode ended after that step
    next_bar_index: torch.Tensor  # [M] int64: bar of the state n steps later
    next_portfolio: torch.Tensor  # [M, P] f32


_FIELDS = ("bar_index", "portfolio", "actions", "rewards", "dones", "next_bar_index", "next_portfolio")


class NStepWindow:
    """The last n (state, action, reward, done) of every env, oldest first.

    ``push`` shifts the window by one step (fixed-shape copies, capture-safe) and returns the
    completed transition that starts at the oldest step. Its first n − 1 outputs after a fresh
    start are incomplete; the training loop fills the window with n − 1 steps before storing
    (``filled_steps`` tracks that on the host, and it is checkpointed with the window).
    """

    def __init__(self, n_envs: int, n_step: int, n_portfolio: int, n_branches: int, device: torch.device) -> None:
        self.n_step = n_step
        self.bar_index = torch.zeros(n_step, n_envs, dtype=torch.int64, device=device)  # [n, E]
        self.portfolio = torch.zeros(n_step, n_envs, n_portfolio, device=device)  # [n, E, P]
        self.actions = torch.zeros(n_step, n_envs, n_branches, dtype=torch.int64, device=device)  # [n, E, D]
        self.rewards = torch.zeros(n_step, n_envs, device=device)  # [n, E]
        self.dones = torch.zeros(n_step, n_envs, device=device)  # [n, E]

    def named_tensors(self) -> dict[str, torch.Tensor]:
        return {
            "nstep.bar_index": self.bar_index,
            "nstep.portfolio": self.portfolio,
            "nstep.actions": self.actions,
            "nstep.rewards": self.rewards,
            "nstep.dones": self.dones,
        }

    def push(
        self,
        bar_index: torch.Tensor,
        portfolio: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        dones: torch.Tensor,
        next_bar_index: torch.Tensor,
        next_portfolio: torch.Tensor,
    ) -> Transitions:
        for buffer, value in (
            (self.bar_index, bar_index),
            (self.portfolio, portfolio),
            (self.actions, actions),
            (self.rewards, rewards),
            (self.dones, dones),
        ):
            if self.n_step > 1:
                buffer[:-1].copy_(buffer[1:].clone())
            buffer[-1].copy_(value)
        return Transitions(
            bar_index=self.bar_index[0],
            portfolio=self.portfolio[0],
            actions=self.actions[0],
            rewards=self.rewards.transpose(0, 1),  # [E, n]
            dones=self.dones.transpose(0, 1),  # [E, n]
            next_bar_index=next_bar_index,
            next_portfolio=next_portfolio,
        )


class ReplayBuffer:
    """Ring buffer of n-step transitions with uniform sampling on the device."""

    def __init__(
        self, capacity: int, n_step: int, n_portfolio: int, n_branches: int, device: torch.device
    ) -> None:
        self.capacity = capacity
        self.device = device
        self.storage = Transitions(
            bar_index=torch.zeros(capacity, dtype=torch.int64, device=device),
            portfolio=torch.zeros(capacity, n_portfolio, device=device),
            actions=torch.zeros(capacity, n_branches, dtype=torch.int64, device=device),
            rewards=torch.zeros(capacity, n_step, device=device),
            dones=torch.zeros(capacity, n_step, device=device),
            next_bar_index=torch.zeros(capacity, dtype=torch.int64, device=device),
            next_portfolio=torch.zeros(capacity, n_portfolio, device=device),
        )
        self.write_position = torch.zeros(1, dtype=torch.int64, device=device)  # next slot to write
        self.size = torch.zeros(1, dtype=torch.int64, device=device)  # filled slots (≤ capacity)

    def named_tensors(self) -> dict[str, torch.Tensor]:
        named = {f"replay.{name}": getattr(self.storage, name) for name in _FIELDS}
        named["replay.write_position"] = self.write_position
        named["replay.size"] = self.size
        return named

    def add(self, batch: Transitions) -> None:
        """Write M transitions at write_position, write_position + 1, … (mod capacity)."""
        count = batch.bar_index.shape[0]
        offsets = torch.arange(count, device=self.device, dtype=torch.int64)  # [M]
        slots = (self.write_position + offsets) % self.capacity  # [M], unique since M ≤ capacity
        for name in _FIELDS:
            getattr(self.storage, name).index_copy_(0, slots, getattr(batch, name))
        self.write_position.copy_((self.write_position + count) % self.capacity)
        self.size.copy_(torch.clamp(self.size + count, max=self.capacity))

    def sample_indices(self, uniforms: torch.Tensor) -> torch.Tensor:
        """Uniform over filled slots: uniforms [B] in [0, 1) → int64 [B] in [0, size)."""
        scaled = (uniforms.to(torch.float64) * self.size.to(torch.float64)).to(torch.int64)  # [B]
        return torch.minimum(scaled, torch.clamp(self.size - 1, min=0))

    def gather(self, indices: torch.Tensor) -> Transitions:
        return Transitions(**{name: getattr(self.storage, name).index_select(0, indices) for name in _FIELDS})

    def sample(self, uniforms: torch.Tensor) -> Transitions:
        return self.gather(self.sample_indices(uniforms))
