"""Mirror augmentation (replay.mirror): the reflection of a batch, its draws, and what it teaches; and
the mirror-averaged policy (run.policy_mirror): equivariant, blind to a direction preference no
state explains, and acting only in backtests."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from train_helpers import (
    collected_state,
    drifting_market,
    greedy_direction_bias,
    perturb_network,
    reference_rollout,
    synthetic_market,
    tiny_config,
)

from trainer.data.features import MIRROR_ODD
from trainer.layout import (
    BRANCH_DIRECTION,
    DIRECTION_FLAT,
    DIRECTION_HOLD,
    DIRECTION_LONG,
    DIRECTION_SHORT,
    FEATURE,
    FEATURE_STRIDE,
    N_BRANCHES,
    PORTFOLIO_INPUT_POSITION_FRACTION,
    PORTFOLIO_INPUT_STRIDE,
)
from trainer.train.graph import StepRunner
from trainer.train.mirror import (
    direction_swap,
    feature_signs,
    mirror_averaged_values,
    mirror_batch,
    portfolio_signs,
)
from trainer.train.replay import Transitions
from trainer.train.step import MarketWindow, TrainerState, TrainStep
from trainer.train.validate import GreedyRollouts

CPU = torch.device("cpu")


def test_the_sign_vectors_negate_exactly_the_odd_columns():
    features = feature_signs(CPU)
    odd_columns = sum(slot.width for slot in FEATURE.slots if slot.name in MIRROR_ODD)
    assert features.shape == (FEATURE_STRIDE,) and int((features == -1).sum()) == odd_columns
    for slot in FEATURE.slots:
        block = features[FEATURE.offsets[slot.name] : FEATURE.offsets[slot.name] + slot.width]
        assert bool((block == (-1.0 if slot.name in MIRROR_ODD else 1.0)).all()), slot.name
    portfolio = portfolio_signs(CPU)
    assert portfolio.shape == (PORTFOLIO_INPUT_STRIDE,) and int((portfolio == -1).sum()) == 1
    assert float(portfolio[PORTFOLIO_INPUT_POSITION_FRACTION]) == -1.0


def hand_batch(agents: tuple[int, ...] = ()) -> tuple[Transitions, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    batch, window = 4, 3
    directions = torch.tensor([DIRECTION_SHORT, DIRECTION_LONG, DIRECTION_HOLD, DIRECTION_FLAT]).expand(*agents, batch)
    others = torch.randint(0, 2, (*agents, batch, N_BRANCHES - 1), generator=generator)
    actions = torch.cat([others[..., :BRANCH_DIRECTION], directions.unsqueeze(-1), others[..., BRANCH_DIRECTION:]], -1)
    transitions = Transitions(
        bar_index=torch.arange(batch).expand(*agents, batch), portfolio=torch.randn(*agents, batch, PORTFOLIO_INPUT_STRIDE, generator=generator),
        actions=actions, rewards=torch.randn(*agents, batch, 2, generator=generator), dones=torch.zeros(*agents, batch, 2),
        terminals=torch.zeros(*agents, batch, 2), next_bar_index=torch.arange(batch).expand(*agents, batch) + 2,
        next_portfolio=torch.randn(*agents, batch, PORTFOLIO_INPUT_STRIDE, generator=generator),
    )  # fmt: skip
    windows = torch.randn(*agents, batch, window, FEATURE_STRIDE, generator=generator)
    next_windows = torch.randn(*agents, batch, window, FEATURE_STRIDE, generator=generator)
    next_return = torch.randn(*agents, batch, generator=generator)
    return transitions, windows, next_windows, next_return


@pytest.mark.parametrize("agents", [(), (2,)])
def test_a_mirrored_transition_is_reflected_and_the_others_are_untouched(agents):
    batch, windows, next_windows, next_return = hand_batch(agents)
    mirrored = torch.tensor([True, True, True, False]).expand(*agents, 4)
    signs, portfolio = feature_signs(CPU), portfolio_signs(CPU)
    out, out_windows, out_next, out_return = mirror_batch(mirrored, batch, windows, next_windows, next_return, signs, portfolio)
    direction = out.actions[..., BRANCH_DIRECTION]
    # SHORT ↔ LONG on the mirrored rows; HOLD keeps its place; the unmirrored FLAT row is as it was.
    expected = torch.tensor([DIRECTION_LONG, DIRECTION_SHORT, DIRECTION_HOLD, DIRECTION_FLAT]).expand(*agents, 4)
    assert torch.equal(direction, expected)
    keep = [branch for branch in range(N_BRANCHES) if branch != BRANCH_DIRECTION]
    assert torch.equal(out.actions[..., keep], batch.actions[..., keep])
    for name in ("bar_index", "rewards", "dones", "terminals", "next_bar_index"):  # the same reward: costs are symmetric
        assert getattr(out, name) is getattr(batch, name)
    assert torch.equal(out_windows[..., :3, :, :], windows[..., :3, :, :] * signs)
    assert torch.equal(out_next[..., :3, :, :], next_windows[..., :3, :, :] * signs)
    assert torch.equal(out.portfolio[..., :3, :], batch.portfolio[..., :3, :] * portfolio)
    assert torch.equal(out.next_portfolio[..., :3, :], batch.next_portfolio[..., :3, :] * portfolio)
    assert torch.equal(out_return[..., :3], -next_return[..., :3])
    assert torch.equal(out_windows[..., 3, :, :], windows[..., 3, :, :]) and torch.equal(out_return[..., 3], next_return[..., 3])
    assert torch.equal(out.portfolio[..., 3, :], batch.portfolio[..., 3, :])
    # The reflection is an involution: twice is the identity.
    twice = mirror_batch(mirrored, out, out_windows, out_next, out_return, signs, portfolio)
    assert torch.equal(twice[0].actions, batch.actions) and torch.equal(twice[1], windows)
    assert torch.equal(twice[0].next_portfolio, batch.next_portfolio) and torch.equal(twice[3], next_return)


def mirror_state(mirror: float, seed: int = 0, market: MarketWindow | None = None, **sections: dict) -> tuple[TrainerState, TrainStep]:
    replay = {"mirror": mirror, "feature_noise": 0.0, **sections.pop("replay", {})}
    return collected_state(tiny_config(replay=replay, run={"seed": seed}, **sections), market)


def test_mirror_off_draws_nothing_and_on_draws_one_coin_per_replayed_transition():
    off, step_off = mirror_state(0.0)
    on, step_on = mirror_state(0.25)
    assert off.mirror_draws is None and "scratch.mirror_draws" not in off.named_tensors()
    assert "scratch.mirror_draws" in on.named_tensors()
    before_off, before_on = int(off.counter), int(on.counter)
    shares = []
    for _ in range(40):
        step_off()
        step_on()
        shares.append(float((on.mirror_draws < 0.25).float().mean()))
    assert int(off.counter) - before_off == 40 * 4  # explore, env, replay, IQN τ
    assert int(on.counter) - before_on == 40 * 5  # … and the mirror coins
    assert abs(sum(shares) / len(shares) - 0.25) < 0.05  # 640 coins: ± 4 standard errors
    assert step_on.sample()[3].mirrored.shape == (on.config.replay.batch_size,)
    assert not torch.equal(off.online.trunk[0].weight, on.online.trunk[0].weight)


def test_mirror_runs_are_bitwise_reproducible():
    first, second = mirror_state(0.5), mirror_state(0.5)
    for state, step in (first, second):
        StepRunner(step, use_graph=True).run(3)
    a, b = first[0].named_tensors(), second[0].named_tensors()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[name], b[name]) for name in a)


def direction_bias(mirror: float) -> float:
    """The greedy direction bias after a few hundred updates on the rising market, costs off."""
    config = tiny_config(replay={"mirror": mirror, "feature_noise": 0.0}, run={"seed": 0}, env={"fee_rate": 0.0, "slippage": 0.0})
    return greedy_direction_bias(config, drifting_market())


def test_the_mirror_reaches_the_learning_a_rising_market_mirrored_teaches_short():
    """Every transition mirrored (replay.mirror = 1) is the rising market seen as a falling one:
    the agent learns to short what, unmirrored, it learns to buy. A reflection that left the
    rewards, the direction or the windows inconsistent would not flip the learned direction."""
    plain, mirrored = direction_bias(0.0), direction_bias(1.0)
    assert plain > 0.5, plain
    assert mirrored < -0.5, mirrored


def swapped_direction(values: torch.Tensor) -> torch.Tensor:
    """Q-values [..., D, A] with the direction branch's SHORT and LONG entries exchanged."""
    out = values.clone()
    out[..., BRANCH_DIRECTION, DIRECTION_SHORT] = values[..., BRANCH_DIRECTION, DIRECTION_LONG]
    out[..., BRANCH_DIRECTION, DIRECTION_LONG] = values[..., BRANCH_DIRECTION, DIRECTION_SHORT]
    return out


def test_mirror_averaged_values_are_equivariant_and_blind_to_a_constant_direction_preference():
    generator = torch.Generator().manual_seed(7)
    values, mirrored = torch.randn(2, 5, N_BRANCHES, 4, generator=generator)  # [B, D, A] each
    swap = direction_swap(CPU)
    averaged = mirror_averaged_values(values, mirrored, swap)
    assert torch.equal(averaged, 0.5 * (values + swapped_direction(mirrored)))
    # The mirrored state's mean is the state's mean with SHORT and LONG exchanged, bit for bit.
    assert torch.equal(mirror_averaged_values(mirrored, values, swap), swapped_direction(averaged))
    # A preference for LONG that every state shares (the training window's drift) moves SHORT and
    # LONG alike in the mean: the gap between them, and so the choice, is unchanged.
    biased = torch.zeros_like(values)
    biased[..., BRANCH_DIRECTION, DIRECTION_LONG] = 3.0
    shifted = mirror_averaged_values(values + biased, mirrored + biased, swap)
    gap = shifted[..., BRANCH_DIRECTION, DIRECTION_LONG] - shifted[..., BRANCH_DIRECTION, DIRECTION_SHORT]
    torch.testing.assert_close(gap, averaged[..., BRANCH_DIRECTION, DIRECTION_LONG] - averaged[..., BRANCH_DIRECTION, DIRECTION_SHORT])
    assert torch.equal(direction_swap(CPU)[[DIRECTION_HOLD, DIRECTION_FLAT]], torch.tensor([DIRECTION_HOLD, DIRECTION_FLAT]))


def policy_state(policy_mirror: bool) -> tuple[TrainerState, TrainStep, MarketWindow]:
    """A tiny CPU state whose greedy policy trades (its random weights scaled up)."""
    torch.set_num_threads(1)
    market = synthetic_market(700)
    state = TrainerState(tiny_config(run={"policy_mirror": policy_mirror}), market, CPU)
    perturb_network(state, seed=0)
    return state, TrainStep(state), market


def test_the_mirror_averaged_choice_in_a_mirrored_state_is_the_choice_with_short_and_long_exchanged():
    state, step, _ = policy_state(True)
    state.isv_local.copy_(state.isv.tensor)  # the atom supports the greedy choice reads
    generator = torch.Generator().manual_seed(1)
    bars = torch.arange(0, 600, 3)
    windows = state.gather_windows(bars)  # [M, K, F]
    portfolio = torch.randn(bars.shape[0], PORTFOLIO_INPUT_STRIDE, generator=generator)
    chosen = step.backtest_greedy(windows, portfolio)  # [M, D]
    reflected = step.backtest_greedy(windows * feature_signs(CPU), portfolio * portfolio_signs(CPU))
    direction = chosen[:, BRANCH_DIRECTION]
    assert torch.equal(reflected[:, BRANCH_DIRECTION], direction_swap(CPU)[direction])
    keep = [branch for branch in range(N_BRANCHES) if branch != BRANCH_DIRECTION]
    assert torch.equal(reflected[:, keep], chosen[:, keep])
    assert len(torch.unique(direction)) > 1, "one direction everywhere: a weak comparison"
    # The plain choice is not equivariant: the averaging is what makes it so.
    plain = step.greedy(windows, portfolio)[:, BRANCH_DIRECTION]
    plain_reflected = step.greedy(windows * feature_signs(CPU), portfolio * portfolio_signs(CPU))[:, BRANCH_DIRECTION]
    assert not torch.equal(plain_reflected, direction_swap(CPU)[plain])


def test_the_mirror_averaged_policy_acts_in_backtests_only_and_changes_no_training_tensor():
    """run.policy_mirror: every greedy backtest walks with the mirror-averaged choice (the reference
    rollout's bars, choosing with it); training acts with the plain greedy; no tensor changes."""
    walked = {}
    for policy_mirror in (False, True):
        state, step, market = policy_state(policy_mirror)
        close_spread = (market.close, torch.linspace(0.0, 0.05, market.close.shape[0]))
        before = {name: tensor.clone() for name, tensor in state.named_tensors().items() if name != "isv_local"}
        trace = GreedyRollouts(state, step).rollout(*close_spread, market.offset, 2, 120).run([50, 400])
        changed = [name for name, tensor in state.named_tensors().items() if name in before and not torch.equal(before[name], tensor)]
        assert not changed, f"policy_mirror={policy_mirror}: a rollout changed {changed}"
        walked[policy_mirror] = trace
        if policy_mirror:
            expected = reference_rollout(state, step, *close_spread, market.offset, [50, 400], 120)
            assert np.array_equal(trace.equity, expected[0]) and np.array_equal(trace.actions, expected[2])
    assert not np.array_equal(walked[False].actions, walked[True].actions), "both policies acted alike: a weak comparison"
    assert len(np.unique(walked[True].actions[:, :, BRANCH_DIRECTION])) > 1, "the mirror-averaged policy never changed direction"


def test_training_acts_with_the_plain_greedy_choice_under_the_mirror_averaged_policy():
    """run.policy_mirror changes no step of training: the same config with and without it trains bit for bit."""
    runs = []
    for policy_mirror in (False, True):
        state, step = collected_state(tiny_config(run={"seed": 3, "policy_mirror": policy_mirror}))
        StepRunner(step, use_graph=True).run(5)
        runs.append(state.named_tensors())
    assert runs[0].keys() == runs[1].keys()
    assert all(torch.equal(runs[0][name], runs[1][name]) for name in runs[0])
