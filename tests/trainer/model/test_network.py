"""Branching dueling C51 network: dueling combination, shapes, IQN gradient into the trunk."""

from __future__ import annotations

import torch

from trainer.model.network import (
    BranchingDistributionalNet,
    NetworkShape,
    action_mask,
    dueling_distribution,
    greedy_actions,
)

SHAPE = NetworkShape(n_features=5, n_portfolio=3, branch_sizes=(4, 3, 2, 3), window=4, scan_channels=8,
                     scan_state=4, hidden=16, head_hidden=8, n_atoms=7, iqn_embedding=64)  # fmt: skip


def test_dueling_combination_matches_formula_and_is_shift_invariant():
    generator = torch.Generator().manual_seed(0)
    value = torch.randn(2, 5, generator=generator)
    advantage = torch.randn(2, 3, 5, generator=generator)
    log_p = dueling_distribution(value, advantage)
    expected = torch.softmax(value[:, None, :] + advantage - advantage.mean(1, keepdim=True), -1)
    torch.testing.assert_close(log_p.exp(), expected)
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(2, 3))
    # adding the same per-atom offset to every action's advantage changes nothing
    shifted = dueling_distribution(value, advantage + torch.randn(2, 1, 5, generator=generator))
    torch.testing.assert_close(shifted, log_p)


def test_padded_dueling_mean_uses_only_real_actions():
    generator = torch.Generator().manual_seed(4)
    value = torch.randn(2, 5, generator=generator)
    advantage = torch.randn(2, 4, 5, generator=generator)
    weights = torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0])
    padded = dueling_distribution(value, advantage, weights)
    real = dueling_distribution(value, advantage[:, :3])
    torch.testing.assert_close(padded[:, :3], real)


def test_shapes_and_greedy_actions_never_pick_padding():
    torch.manual_seed(0)
    net = BranchingDistributionalNet(SHAPE)
    window, portfolio = torch.randn(64, 4, 5), torch.randn(64, 3)
    embedding = net.embed(window, portfolio)
    log_probs = net.distributions(embedding)
    assert log_probs.shape == (64, 4, 4, 7)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(64, 4, 4))
    assert net.quantiles(embedding, torch.rand(64, 9)).shape == (64, 9, 4, 4)
    mask = action_mask((4, 3, 2, 3))
    assert mask.tolist() == [[True] * 4, [True, True, True, False], [True, True, False, False], [True, True, True, False]]
    # make the padded action look best: it must still never be chosen
    boosted = log_probs.clone()
    boosted[:, :, -1, :] = torch.log_softmax(torch.linspace(-10, 10, 7), -1)
    supports = torch.linspace(-1, 1, 7).expand(4, 7)
    actions = greedy_actions(boosted, supports, mask)
    assert actions.shape == (64, 4)
    for branch, size in enumerate((4, 3, 2, 3)):
        assert int(actions[:, branch].max()) < size


def test_iqn_gradient_reaches_the_trunk_and_encoder():
    torch.manual_seed(1)
    net = BranchingDistributionalNet(SHAPE)
    embedding = net.embed(torch.randn(3, 4, 5), torch.randn(3, 3))
    sum(q.sum() for q in net.quantiles(embedding, torch.rand(3, 2))).backward()
    assert net.trunk[0].weight.grad.abs().sum() > 0
    assert net.encoder.in_proj.weight.grad.abs().sum() > 0
    assert net.value_out.grad is None and net.advantage_out.grad is None


def test_encoder_off_uses_current_bar_only():
    shape = NetworkShape(**{**SHAPE.__dict__, "temporal_encoder": False})
    torch.manual_seed(2)
    net = BranchingDistributionalNet(shape)
    window = torch.randn(2, 4, 5)
    changed = window.clone()
    changed[:, :-1] += 10.0  # older bars must not matter without the encoder
    portfolio = torch.randn(2, 3)
    torch.testing.assert_close(net.embed(window, portfolio), net.embed(changed, portfolio))
