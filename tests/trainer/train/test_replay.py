"""Replay ring buffer and n-step window: wraparound, sampling range, transition assembly; a
population's stacked ring and window are each agent's own, bitwise, on views of the stacked rows."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from trainer.train.replay import NStepWindow, ReplayBuffer, StackedReplay, Transitions


def batch(start: int, count: int, n_step: int = 2) -> Transitions:
    ids = torch.arange(start, start + count, dtype=torch.int64)
    return Transitions(
        bar_index=ids, portfolio=ids.float().unsqueeze(-1).repeat(1, 3), actions=ids.unsqueeze(-1).repeat(1, 4),
        rewards=ids.float().unsqueeze(-1).repeat(1, n_step), dones=torch.zeros(count, n_step),
        terminals=torch.zeros(count, n_step), next_bar_index=ids + 1, next_portfolio=ids.float().unsqueeze(-1).repeat(1, 3),
    )  # fmt: skip


def test_ring_wraps_and_overwrites_oldest():
    replay = ReplayBuffer(capacity=10, n_step=2, n_portfolio=3, n_branches=4, device=torch.device("cpu"))
    replay.add(batch(0, 6))
    assert int(replay.size) == 6 and int(replay.write_position) == 6
    replay.add(batch(6, 6))  # slots 6..9 then 0..1
    assert int(replay.size) == 10 and int(replay.write_position) == 2
    assert replay.storage.bar_index.tolist() == [10, 11, 2, 3, 4, 5, 6, 7, 8, 9]
    assert torch.equal(replay.storage.next_bar_index, replay.storage.bar_index + 1)


def test_sampling_covers_only_filled_slots():
    replay = ReplayBuffer(capacity=100, n_step=2, n_portfolio=3, n_branches=4, device=torch.device("cpu"))
    replay.add(batch(0, 7))
    uniforms = torch.linspace(0.0, 0.999999, 1000)
    indices = replay.sample_indices(uniforms)
    assert int(indices.min()) == 0 and int(indices.max()) == 6
    counts = torch.bincount(indices, minlength=7)
    assert int(counts.min()) > 100  # roughly uniform over the 7 filled slots
    sampled = replay.sample(uniforms[:5])
    assert torch.equal(sampled.bar_index, indices[:5])


def test_window_emits_the_transition_that_started_n_steps_ago():
    window = NStepWindow(n_envs=2, n_step=3, n_portfolio=1, n_branches=4, device=torch.device("cpu"))
    out = None
    for t in range(4):
        bar = torch.tensor([t, 100 + t])
        done = torch.tensor([0.0, float(t == 2)])
        out = window.push(bar, bar.float().unsqueeze(-1), torch.full((2, 4), t), torch.tensor([float(t), -float(t)]),
                          done, torch.zeros(2), bar + 1, (bar + 1).float().unsqueeze(-1))  # fmt: skip
    # after 4 pushes the window holds steps 1, 2, 3: the transition starts at step 1
    assert out.bar_index.tolist() == [1, 101]
    assert out.actions[:, 0].tolist() == [1, 1]
    assert out.rewards.tolist() == [[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]]
    assert out.dones.tolist() == [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    # env 0: no episode end, the state 3 steps on; env 1: its episode ended at step 2 (truncated):
    # the state that episode reached (bar 103), not the restart and not the bar after it
    assert out.next_bar_index.tolist() == [4, 103]
    assert out.next_portfolio[:, 0].tolist() == [4.0, 103.0]
    assert out.terminals.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def stack(batches: list[Transitions]) -> Transitions:
    """Agents' batches [M, …] → one batch [P, M, …]."""
    return Transitions(**{field.name: torch.stack([getattr(b, field.name) for b in batches])
                          for field in dataclasses.fields(Transitions)})  # fmt: skip


def rings(agents: int) -> list[ReplayBuffer]:
    return [ReplayBuffer(capacity=10, n_step=2, n_portfolio=3, n_branches=4, device=torch.device("cpu")) for _ in range(agents)]


def test_stacked_ring_is_every_agents_ring_bitwise():
    """One add and one sample over three agents whose rings stand at different positions: each
    agent's storage, pointers and sampled batch are what its ring alone gives, and its own ring
    object reads the stacked rows."""
    alone, together = rings(3), rings(3)
    for agent in range(3):  # different fill levels before stacking (a resumed ring is not empty)
        alone[agent].add(batch(100 * agent, 3 * agent + 1))
        together[agent].add(batch(100 * agent, 3 * agent + 1))
    stacked = StackedReplay(together)
    uniforms = torch.rand(3, 5, generator=torch.Generator().manual_seed(0))
    for start in (0, 6):  # the second add wraps every ring
        step = [batch(100 * agent + 50 + start, 6) for agent in range(3)]
        stacked.add(stack(step))
        for agent in range(3):
            alone[agent].add(step[agent])
    sampled = stacked.sample(uniforms)
    for agent in range(3):
        assert together[agent].storage.bar_index.data_ptr() == stacked.storage.bar_index[agent].data_ptr()
        for field in dataclasses.fields(Transitions):
            name = field.name
            assert torch.equal(getattr(together[agent].storage, name), getattr(alone[agent].storage, name)), name
            assert torch.equal(getattr(sampled, name)[agent], getattr(alone[agent].sample(uniforms[agent]), name)), name
        assert torch.equal(together[agent].write_position, alone[agent].write_position)
        assert torch.equal(together[agent].size, alone[agent].size)


def test_stacked_window_is_every_agents_window_bitwise():
    device = torch.device("cpu")
    alone = [NStepWindow(n_envs=2, n_step=3, n_portfolio=1, n_branches=4, device=device) for _ in range(2)]
    together = [NStepWindow(n_envs=2, n_step=3, n_portfolio=1, n_branches=4, device=device) for _ in range(2)]
    stacked = NStepWindow.stacked(together)
    for t in range(5):
        inputs = []
        for agent in range(2):
            bar = torch.tensor([t, 100 + t]) + 1000 * agent
            done = torch.tensor([float(t == 1 + agent), float(t == 2)])
            inputs.append((bar, bar.float().unsqueeze(-1), torch.full((2, 4), t + agent), torch.tensor([float(t), -float(agent)]),
                           done, done * agent, bar + 1, (bar + 1).float().unsqueeze(-1)))  # fmt: skip
        out = stacked.push(*(torch.stack(parts) for parts in zip(*inputs, strict=True)))
        for agent in range(2):
            expected = alone[agent].push(*inputs[agent])
            for field in dataclasses.fields(Transitions):
                assert torch.equal(getattr(out, field.name)[agent], getattr(expected, field.name)), (t, field.name)
    for agent in range(2):
        assert together[agent].named_tensors().keys() == alone[agent].named_tensors().keys()
        for name, tensor in together[agent].named_tensors().items():
            assert torch.equal(tensor, alone[agent].named_tensors()[name]), name


@pytest.mark.parametrize("n_step", [1, 2])
def test_stacked_window_of_short_horizons(n_step: int):
    window = NStepWindow.stacked([NStepWindow(n_envs=3, n_step=n_step, n_portfolio=1, n_branches=4, device=torch.device("cpu"))
                                  for _ in range(2)])  # fmt: skip
    bar = torch.arange(6).view(2, 3)
    out = window.push(bar, bar.float().unsqueeze(-1), torch.zeros(2, 3, 4, dtype=torch.int64), torch.ones(2, 3),
                      torch.zeros(2, 3), torch.zeros(2, 3), bar + 1, (bar + 1).float().unsqueeze(-1))  # fmt: skip
    assert out.rewards.shape == (2, 3, n_step)
    assert torch.equal(out.next_bar_index, bar + 1) if n_step == 1 else torch.equal(out.bar_index, torch.zeros(2, 3, dtype=torch.int64))
