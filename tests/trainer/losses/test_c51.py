"""C51 projection: mass conservation in every edge case, agreement with a brute-force reference."""

from __future__ import annotations

import itertools

import pytest
import torch

from trainer.losses.c51 import (
    atom_support,
    branching_c51_loss,
    n_step_returns,
    project_distribution,
)

N_ATOMS = 11
SUPPORT = torch.linspace(-5.0, 5.0, N_ATOMS, dtype=torch.float64)


def brute_force_projection(probs, rewards, discounts, support):
    """Algorithm 1 of Bellemare et al. with the l == u fix, one atom at a time (float64 loops)."""
    v_min, v_max = float(support[0]), float(support[-1])
    delta_z = (v_max - v_min) / (len(support) - 1)
    out = torch.zeros_like(probs)
    for b in range(probs.shape[0]):
        for j in range(len(support)):
            tz = min(max(float(rewards[b]) + float(discounts[b]) * float(support[j]), v_min), v_max)
            position = (tz - v_min) / delta_z
            lower, upper = int(position // 1), int(-(-position // 1))
            if lower == upper:
                out[b, lower] += probs[b, j]
            else:
                out[b, lower] += probs[b, j] * (upper - position)
                out[b, upper] += probs[b, j] * (position - lower)
    return out


def random_probs(batch, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(batch, N_ATOMS, generator=generator, dtype=torch.float64), -1)


EDGE_CASES = {
    "terminal": (0.7, 0.0),
    "reward_on_atom": (1.0, 0.0),
    "reward_on_atom_bootstrap": (2.0, 1.0),
    "all_clipped_to_v_max": (100.0, 0.99),
    "all_clipped_to_v_min": (-100.0, 0.99),
    "gamma_one_zero_reward": (0.0, 1.0),
    "gamma_one_shift": (0.3, 1.0),
    "ordinary": (0.37, 0.9),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_projection_conserves_mass_and_matches_brute_force(case):
    reward, discount = EDGE_CASES[case]
    probs = random_probs(4)
    rewards = torch.full((4,), reward, dtype=torch.float64)
    discounts = torch.full((4,), discount, dtype=torch.float64)
    projected = project_distribution(probs, rewards, discounts, SUPPORT)
    torch.testing.assert_close(projected.sum(-1), torch.ones(4, dtype=torch.float64), atol=1e-12, rtol=0)
    assert (projected >= 0).all()
    torch.testing.assert_close(projected, brute_force_projection(probs, rewards, discounts, SUPPORT))


def test_projection_random_rewards_against_brute_force_float32():
    generator = torch.Generator().manual_seed(3)
    probs = random_probs(64, seed=3)
    rewards = torch.randn(64, generator=generator, dtype=torch.float64) * 4
    discounts = torch.rand(64, generator=generator, dtype=torch.float64)
    expected = brute_force_projection(probs, rewards, discounts, SUPPORT)
    got = project_distribution(probs.float(), rewards.float(), discounts.float(), SUPPORT.float())
    torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.sum(-1), torch.ones(64), atol=1e-5, rtol=0)


def test_terminal_target_is_the_reward_alone():
    probs = random_probs(1)
    projected = project_distribution(probs, torch.tensor([1.0], dtype=torch.float64), torch.zeros(1, dtype=torch.float64), SUPPORT)
    expected = torch.zeros(1, N_ATOMS, dtype=torch.float64)
    expected[0, 6] = 1.0  # the atom at +1.0
    torch.testing.assert_close(projected, expected)


def test_per_row_support_equals_per_call_support():
    probs = random_probs(2)
    supports = torch.stack([SUPPORT, SUPPORT * 2 + 1])
    rewards = torch.tensor([0.5, -0.5], dtype=torch.float64)
    discounts = torch.tensor([0.9, 0.8], dtype=torch.float64)
    rows = project_distribution(probs, rewards, discounts, supports)
    for row in range(2):
        single = project_distribution(probs[row : row + 1], rewards[row : row + 1], discounts[row : row + 1], supports[row])
        torch.testing.assert_close(rows[row : row + 1], single)


def test_n_step_returns_mask_after_done_and_discount_per_branch():
    rewards = torch.tensor([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    dones = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    gammas = torch.tensor([0.5, 1.0])
    returns, discounts = n_step_returns(rewards, dones, dones, gammas)  # every end a terminal
    torch.testing.assert_close(returns, torch.tensor([[1 + 1 + 1.0, 1 + 1.0], [7.0, 3.0]]))
    torch.testing.assert_close(discounts, torch.tensor([[0.125, 0.0], [1.0, 0.0]]))


def test_a_truncated_episode_is_bootstrapped_from_where_it_ended():
    # Pardo et al. 2018 (issue 9): a time limit is no terminal. Row 1 ends after step 1 (two steps
    # taken): its bootstrap discount is γ², not 0; row 2 ends in ruin after step 0: no bootstrap.
    rewards = torch.tensor([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    dones = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    terminals = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    returns, discounts = n_step_returns(rewards, dones, terminals, torch.tensor([0.5]))
    torch.testing.assert_close(returns, torch.tensor([[3.0, 2.0, 1.0]]))
    torch.testing.assert_close(discounts, torch.tensor([[0.125, 0.25, 0.0]]))


def test_double_q_selects_with_online_and_evaluates_with_target():
    supports = torch.tensor([[0.0, 1.0]])
    mask = torch.tensor([[True, True, False]])
    # online prefers action 1, target prefers action 0; the padded action 2 looks best to both
    next_online = torch.tensor([[[[1.0, 0.0], [0.0, 1.0], [0.0, 9.0]]]])  # [B=1, D=1, A=3, N=2]
    next_target = torch.tensor([[[[0.0, 1.0], [1.0, 0.0], [0.0, 9.0]]]])
    log_probs = torch.log(torch.tensor([[[[0.25, 0.75], [0.5, 0.5], [0.5, 0.5]]]]))
    taken = torch.tensor([[[1.0, 0.0, 0.0]]])
    terms = branching_c51_loss(log_probs, taken, next_online, next_target, torch.zeros(1, 1),
                               torch.ones(1, 1), supports, mask, double_q=True)  # fmt: skip
    # double Q: action 1 (online), evaluated by the target → all mass on atom 0 → CE = −log 0.25
    torch.testing.assert_close(terms.total, -torch.log(torch.tensor(0.25)))
    plain = branching_c51_loss(log_probs, taken, next_online, next_target, torch.zeros(1, 1),
                               torch.ones(1, 1), supports, mask, double_q=False)  # fmt: skip
    # plain: target's own argmax is action 0 → all mass on atom 1 → CE = −log 0.75
    torch.testing.assert_close(plain.total, -torch.log(torch.tensor(0.75)))
    assert terms.per_branch.shape == (1,)


def test_branches_are_independent_and_match_single_branch_losses():
    generator = torch.Generator().manual_seed(5)
    batch, branches, actions, atoms = 6, 3, 4, 11
    mask = torch.tensor([[True] * 4, [True, True, False, False], [True, True, True, False]])
    log_probs = torch.log_softmax(torch.randn(batch, branches, actions, atoms, generator=generator), -1)
    next_online = torch.softmax(torch.randn(batch, branches, actions, atoms, generator=generator), -1)
    next_target = torch.softmax(torch.randn(batch, branches, actions, atoms, generator=generator), -1)
    taken = torch.nn.functional.one_hot(torch.tensor([[0, 1, 2]] * batch), actions).float()
    returns = torch.randn(branches, batch, generator=generator)
    discounts = torch.rand(branches, batch, generator=generator)
    supports = torch.stack([torch.linspace(-5, 5, atoms), torch.linspace(-1, 1, atoms), torch.linspace(0, 3, atoms)])
    terms = branching_c51_loss(log_probs, taken, next_online, next_target, returns, discounts, supports, mask)
    for d in range(branches):
        single = branching_c51_loss(log_probs[:, d : d + 1], taken[:, d : d + 1], next_online[:, d : d + 1],
                                    next_target[:, d : d + 1], returns[d : d + 1], discounts[d : d + 1],
                                    supports[d : d + 1], mask[d : d + 1])  # fmt: skip
        torch.testing.assert_close(terms.per_branch[d], single.total)


@pytest.mark.parametrize("centre,half", itertools.product([0.0, -2.0], [1.0, 10.0]))
def test_atom_support_is_uniform_around_centre(centre, half):
    support = atom_support(torch.tensor([centre]), torch.tensor([half]), 5)
    torch.testing.assert_close(support[0], torch.linspace(centre - half, centre + half, 5))
