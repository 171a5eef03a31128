"""Device-resident replay: an n-step window per environment feeding a ring buffer of transitions.

Why this shape: every tensor lives on the training device and every operation is a fixed-shape
tensor op driven by device-side pointers (``write_position``, ``size``), so storing and sampling
are captured in the training step's CUDA graph with no host reads. A transition stores the bar
index of its states instead of the K-bar feature window (the window is gathered from the feature
tensor at sampling time: K× less memory), and the n raw rewards plus done flags instead of a
discounted sum, so the per-branch γ (an ISV slot that GPU kernels may change) applies when the
batch is drawn.

Terminal vs truncated (Pardo et al. 2018): ``dones`` marks every episode end (it cuts the n-step
sum), ``terminals`` only the ends with nothing after them (ruin); a transition whose window holds
an episode end takes the state that episode *reached* as its next state (the env's final
observation, not the restart), so a time limit is bootstrapped through.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class Transitions:
    """A batch of n-step transitions (device tensors)."""

    bar_index: torch.Tensor  # [M] int64: bar of the start state
    portfolio: torch.Tensor  # [M, P] f32: portfolio inputs of the start state
    actions: torch.Tensor  # [M, n_branches] int64
    rewards: torch.Tensor  # [M, n] f32: raw per-step rewards
    dones: torch.Tensor  # [M, n] f32: 1 where the episode ended after that step (terminal or truncated)
    terminals: torch.Tensor  # [M, n] f32: 1 where it ended with nothing after it (no bootstrap)
    next_bar_index: torch.Tensor  # [M] int64: bar of the bootstrap state (n steps later, or the episode's end)
    next_portfolio: torch.Tensor  # [M, P] f32


_FIELDS = ("bar_index", "portfolio", "actions", "rewards", "dones", "terminals", "next_bar_index", "next_portfolio")


class NStepWindow:
    """The last n (state, action, reward, done, terminal, reached state) of every env, oldest first.

    ``push`` shifts the window by one step (fixed-shape copies, capture-safe) and returns the
    completed transition that starts at the oldest step; its next state is the state reached at
    the window's first episode end, or at its last step. Its first n − 1 outputs after a fresh
    start are incomplete; the training loop fills the window with n − 1 steps before storing
    (``filled_steps`` tracks that on the host, and it is checkpointed with the window).
    """

    def __init__(self, n_envs: int, n_step: int, n_portfolio: int, n_branches: int, device: torch.device) -> None:
        self.n_step = n_step
        self.step_dim = 0  # the buffers' step dimension: 1 in a population's stacked window ([P, n, E, …])
        self.bar_index = torch.zeros(n_step, n_envs, dtype=torch.int64, device=device)  # [n, E]
        self.portfolio = torch.zeros(n_step, n_envs, n_portfolio, device=device)  # [n, E, P]
        self.actions = torch.zeros(n_step, n_envs, n_branches, dtype=torch.int64, device=device)  # [n, E, D]
        self.rewards = torch.zeros(n_step, n_envs, device=device)  # [n, E]
        self.dones = torch.zeros(n_step, n_envs, device=device)  # [n, E]
        self.terminals = torch.zeros(n_step, n_envs, device=device)  # [n, E]
        self.next_bar_index = torch.zeros(n_step, n_envs, dtype=torch.int64, device=device)  # [n, E]
        self.next_portfolio = torch.zeros(n_step, n_envs, n_portfolio, device=device)  # [n, E, P]
        last = torch.zeros(n_step, 1, device=device)
        last[-1] = 1.0
        self._last_step = last  # [n, 1] constant: the window's last step is a bootstrap point

    @classmethod
    def stacked(cls, windows: Sequence[NStepWindow]) -> NStepWindow:
        """One window over a population's agents: its buffers [P, n, E, …] hold every agent's window
        as row i, and each agent's window is re-pointed at its row (a view: checkpoints, resets and
        the agent's own ``push`` read and write the stacked storage). ``push`` on the result shifts
        every agent's window with one set of ops."""
        first = windows[0]
        window = copy.copy(first)
        window.step_dim = 1
        for name in _FIELDS:
            rows = torch.stack([getattr(agent, name) for agent in windows])  # [P, n, E, …]
            setattr(window, name, rows)
            for agent, owner in enumerate(windows):
                setattr(owner, name, rows[agent])
        return window

    def named_tensors(self) -> dict[str, torch.Tensor]:
        return {
            "nstep.bar_index": self.bar_index,
            "nstep.portfolio": self.portfolio,
            "nstep.actions": self.actions,
            "nstep.rewards": self.rewards,
            "nstep.dones": self.dones,
            "nstep.terminals": self.terminals,
            "nstep.next_bar_index": self.next_bar_index,
            "nstep.next_portfolio": self.next_portfolio,
        }

    def push(
        self,
        bar_index: torch.Tensor,
        portfolio: torch.Tensor,
        actions: torch.Tensor,
        rewards: torch.Tensor,
        dones: torch.Tensor,
        terminals: torch.Tensor,
        next_bar_index: torch.Tensor,
        next_portfolio: torch.Tensor,
    ) -> Transitions:
        """One step of every env: its state, action, reward, done, terminal and the state it
        reached (before any restart: ``VectorEnv.final_bar_index`` / ``final_portfolio_inputs``)."""
        steps = self.step_dim  # 0: [n, E, …]; 1: a population's [P, n, E, …]
        for buffer, value in (
            (self.bar_index, bar_index),
            (self.portfolio, portfolio),
            (self.actions, actions),
            (self.rewards, rewards),
            (self.dones, dones),
            (self.terminals, terminals),
            (self.next_bar_index, next_bar_index),
            (self.next_portfolio, next_portfolio),
        ):
            if self.n_step > 1:
                buffer.narrow(steps, 0, self.n_step - 1).copy_(buffer.narrow(steps, 1, self.n_step - 1).clone())
            buffer.select(steps, -1).copy_(value)
        # The bootstrap state: the first step whose episode ended, else the last (one-hot over n).
        alive = torch.cumprod(1.0 - self.dones, dim=steps)  # [*, n, E]: still running after step i
        alive_before = torch.cat([torch.ones_like(alive.narrow(steps, 0, 1)), alive.narrow(steps, 0, self.n_step - 1)],
                                 dim=steps)  # [*, n, E]  # fmt: skip
        pick = alive_before * torch.maximum(self.dones, self._last_step)  # [*, n, E], one 1 per env
        return Transitions(
            bar_index=self.bar_index.select(steps, 0),
            portfolio=self.portfolio.select(steps, 0),
            actions=self.actions.select(steps, 0),
            rewards=self.rewards.transpose(steps, steps + 1),  # [*, E, n]
            dones=self.dones.transpose(steps, steps + 1),  # [*, E, n]
            terminals=self.terminals.transpose(steps, steps + 1),  # [*, E, n]
            next_bar_index=(pick.to(torch.int64) * self.next_bar_index).sum(steps),  # [*, E]
            next_portfolio=(pick.unsqueeze(-1) * self.next_portfolio).sum(steps),  # [*, E, P]
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
            terminals=torch.zeros(capacity, n_step, device=device),
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
        count = batch.bar_index.shape[-1]
        slots = self._claim(count)  # [M]
        for name in _FIELDS:
            getattr(self.storage, name).index_copy_(0, slots, getattr(batch, name))
        self._advance(count)

    def _claim(self, count: int) -> torch.Tensor:
        """The ring slots of the next ``count`` writes: [*agents, M], unique per agent since M ≤ capacity."""
        offsets = torch.arange(count, device=self.device, dtype=torch.int64)  # [M]
        return (self.write_position + offsets) % self.capacity

    def _advance(self, count: int) -> None:
        self.write_position.copy_((self.write_position + count) % self.capacity)
        self.size.copy_(torch.clamp(self.size + count, max=self.capacity))

    def sample_indices(self, uniforms: torch.Tensor) -> torch.Tensor:
        """Uniform over filled slots: uniforms [*agents, B] in [0, 1) → int64 [*agents, B] in [0, size)."""
        scaled = (uniforms.to(torch.float64) * self.size.to(torch.float64)).to(torch.int64)  # [*agents, B]
        return torch.minimum(scaled, torch.clamp(self.size - 1, min=0))

    def gather(self, indices: torch.Tensor) -> Transitions:
        return Transitions(**{name: getattr(self.storage, name).index_select(0, indices) for name in _FIELDS})

    def sample(self, uniforms: torch.Tensor) -> Transitions:
        return self.gather(self.sample_indices(uniforms))


class StackedReplay(ReplayBuffer):
    """A population's replay rings as one: storage [P, capacity, …], write_position and size [P, 1],
    agent i's ring row i. Each agent's ``ReplayBuffer`` is re-pointed at its row (views: its
    checkpoints, resets, gradient diagnostic and warm-up ``add`` use the stacked storage), and one
    ``add`` / ``sample`` here stores and draws for every agent: the ring arithmetic is the single
    ring's, broadcast over the agents, and the rows of agent i are addressed as i · capacity + slot
    in the flattened storage, so no agent reads or writes another's slots."""

    def __init__(self, buffers: Sequence[ReplayBuffer]) -> None:
        first = buffers[0]
        self.capacity = first.capacity
        self.device = first.device
        self.agents = len(buffers)
        fields = {}
        for name in _FIELDS:
            rows = torch.stack([getattr(buffer.storage, name) for buffer in buffers])  # [P, capacity, …]
            fields[name] = rows
            for agent, buffer in enumerate(buffers):
                setattr(buffer.storage, name, rows[agent])
        self.storage = Transitions(**fields)
        self.write_position = torch.stack([buffer.write_position for buffer in buffers])  # [P, 1]
        self.size = torch.stack([buffer.size for buffer in buffers])  # [P, 1]
        for agent, buffer in enumerate(buffers):
            buffer.write_position, buffer.size = self.write_position[agent], self.size[agent]
        self.row_base = (torch.arange(self.agents, device=self.device, dtype=torch.int64) * self.capacity).unsqueeze(1)  # [P, 1]

    def _flat(self, name: str) -> torch.Tensor:
        return getattr(self.storage, name).flatten(0, 1)  # [P · capacity, …], a view

    def add(self, batch: Transitions) -> None:
        """Every agent's M transitions (fields [P, M, …]) into its own ring."""
        count = batch.bar_index.shape[-1]
        rows = (self._claim(count) + self.row_base).view(-1)  # [P · M]
        for name in _FIELDS:
            self._flat(name).index_copy_(0, rows, getattr(batch, name).flatten(0, 1))
        self._advance(count)

    def gather(self, indices: torch.Tensor) -> Transitions:
        """indices [P, B] (each agent's slots) → fields [P, B, …]."""
        rows = (indices + self.row_base).view(-1)  # [P · B]
        agents, batch = indices.shape
        return Transitions(**{name: self._flat(name).index_select(0, rows).unflatten(0, (agents, batch)) for name in _FIELDS})
