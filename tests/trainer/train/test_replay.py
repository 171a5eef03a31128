"""Replay ring buffer and n-step window: wraparound, sampling range, transition assembly."""

from __future__ import annotations

import torch

from trainer.train.replay import NStepWindow, ReplayBuffer, Transitions


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
