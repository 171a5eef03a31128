"""IQN quantile Huber loss against a hand-written reference; CQL gap."""

from __future__ import annotations

import torch

from trainer.losses.cql import branching_cql_loss
from trainer.losses.iqn import branching_iqn_loss, quantile_huber_loss


def hand_written_quantile_huber(current, taus, target, kappa):
    batch, n, n_prime = current.shape[0], current.shape[1], target.shape[1]
    total = 0.0
    for b in range(batch):
        per_sample = 0.0
        for i in range(n):
            inner = 0.0
            for j in range(n_prime):
                u = float(target[b, j] - current[b, i])
                huber = 0.5 * u * u if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
                inner += abs(float(taus[b, i]) - (1.0 if u < 0 else 0.0)) * huber / kappa
            per_sample += inner / n_prime  # average over target τ′
        total += per_sample  # sum over current τ
    return total / batch


def test_quantile_huber_matches_hand_written_reference():
    generator = torch.Generator().manual_seed(1)
    current = torch.randn(3, 5, generator=generator, dtype=torch.float64) * 2
    taus = torch.rand(3, 5, generator=generator, dtype=torch.float64)
    target = torch.randn(3, 7, generator=generator, dtype=torch.float64) * 2
    for kappa in (1.0, 0.5):
        got = quantile_huber_loss(current, taus, target, kappa)
        assert abs(float(got) - hand_written_quantile_huber(current, taus, target, kappa)) < 1e-12


def test_quantile_loss_is_zero_at_the_target_and_pushes_towards_it():
    taus = torch.full((1, 1), 0.5)
    assert float(quantile_huber_loss(torch.ones(1, 1), taus, torch.ones(1, 3))) == 0.0
    current = torch.zeros(1, 1, requires_grad=True)
    quantile_huber_loss(current, taus, torch.ones(1, 3)).backward()
    assert float(current.grad) < 0  # descending the gradient raises the quantile toward the target


def test_branching_iqn_uses_chosen_actions_and_bootstrap():
    current = torch.tensor([[[[0.0, 5.0]]]])  # [B=1, N=1, D=1, A=2]
    taken = torch.tensor([[[1.0, 0.0]]])
    next_quantiles = torch.tensor([[[[3.0, 100.0]]]])
    next_one_hot = torch.tensor([[[1.0, 0.0]]])
    terms = branching_iqn_loss(current, taken, torch.full((1, 1), 0.5), next_quantiles, next_one_hot,
                               torch.tensor([[1.0]]), torch.tensor([[0.5]]))  # fmt: skip
    # target = 1 + 0.5·3 = 2.5; u = 2.5 > κ → κ(|u| − κ/2) · |0.5 − 0| = 0.5 · 2.0 = 1.0
    torch.testing.assert_close(terms.total, torch.tensor(1.0))


def test_branching_iqn_equals_per_branch_reference():
    generator = torch.Generator().manual_seed(2)
    batch, n, n_prime, branches, actions = 3, 4, 5, 2, 3
    current = torch.randn(batch, n, branches, actions, generator=generator, dtype=torch.float64)
    taus = torch.rand(batch, n, generator=generator, dtype=torch.float64)
    next_q = torch.randn(batch, n_prime, branches, actions, generator=generator, dtype=torch.float64)
    taken = torch.nn.functional.one_hot(torch.tensor([[0, 2]] * batch), actions).double()
    next_one_hot = torch.nn.functional.one_hot(torch.tensor([[1, 1]] * batch), actions).double()
    returns = torch.randn(branches, batch, generator=generator, dtype=torch.float64)
    discounts = torch.rand(branches, batch, generator=generator, dtype=torch.float64)
    terms = branching_iqn_loss(current, taken, taus, next_q, next_one_hot, returns, discounts)
    for d in range(branches):
        chosen = (current[:, :, d] * taken[:, d].unsqueeze(1)).sum(-1)
        target = returns[d].unsqueeze(-1) + discounts[d].unsqueeze(-1) * (next_q[:, :, d] * next_one_hot[:, d].unsqueeze(1)).sum(-1)
        expected = hand_written_quantile_huber(chosen, taus, target, 1.0)
        assert abs(float(terms.per_branch[d]) - expected) < 1e-12


def test_normalised_iqn_measures_td_errors_per_unit_of_scale():
    # Issue 9: the raw IQN term's gradient into the trunk was ~150× C51's. Normalised, the loss of
    # returns and quantiles scaled by s per branch equals the raw loss of the unscaled ones.
    generator = torch.Generator().manual_seed(4)
    batch, n, n_prime, branches, actions = 3, 4, 5, 2, 3
    current = torch.randn(batch, n, branches, actions, generator=generator, dtype=torch.float64)
    taus = torch.rand(batch, n, generator=generator, dtype=torch.float64)
    next_q = torch.randn(batch, n_prime, branches, actions, generator=generator, dtype=torch.float64)
    taken = torch.nn.functional.one_hot(torch.tensor([[0, 2]] * batch), actions).double()
    next_one_hot = torch.nn.functional.one_hot(torch.tensor([[1, 1]] * batch), actions).double()
    returns = torch.randn(branches, batch, generator=generator, dtype=torch.float64)
    discounts = torch.rand(branches, batch, generator=generator, dtype=torch.float64)
    raw = branching_iqn_loss(current, taken, taus, next_q, next_one_hot, returns, discounts)
    scale = torch.tensor([7.0, 0.5], dtype=torch.float64)  # [D]
    per_action = scale.unsqueeze(-1)  # [D, 1]: broadcast over [B, N, D, A]
    scaled = branching_iqn_loss(current * per_action, taken, taus, next_q * per_action, next_one_hot,
                                returns * scale.unsqueeze(-1), discounts, scale=scale)  # fmt: skip
    torch.testing.assert_close(scaled.per_branch, raw.per_branch)


def test_cql_gap_is_zero_for_a_dominant_data_action_and_ignores_padding():
    q = torch.tensor([[[100.0, 0.0, 500.0]]])  # [B=1, D=1, A=3]; action 2 is padding
    mask = torch.tensor([[True, True, False]])
    assert float(branching_cql_loss(q, torch.tensor([[[1.0, 0.0, 0.0]]]), mask).total) < 1e-6
    assert float(branching_cql_loss(q, torch.tensor([[[0.0, 1.0, 0.0]]]), mask).total) > 99.0
