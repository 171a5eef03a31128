"""adaptive_schedule: progress, τ, γ per branch and ε — reference semantics (CPU) and GPU parity."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
import torch
from adaptive_support import assert_close, fresh_isv

from trainer.layout import (
    ISV_EPOCH_INDEX,
    ISV_EPSILON,
    ISV_GAMMA,
    ISV_LEARNING_HEALTH,
    ISV_TAU,
    ISV_TOTAL_EPOCHS,
    ISV_TRAINING_PROGRESS,
    N_BRANCHES,
)
from trainer.ops.adaptive_schedule import (
    ScheduleParams,
    adaptive_schedule,
    adaptive_schedule_reference,
)

PARAMS = ScheduleParams()


def run(epoch: float, total: float, health: float, params: ScheduleParams = PARAMS) -> torch.Tensor:
    isv = fresh_isv().host
    isv[ISV_EPOCH_INDEX], isv[ISV_TOTAL_EPOCHS], isv[ISV_LEARNING_HEALTH] = epoch, total, health
    adaptive_schedule(isv, params)
    return isv


def test_progress_runs_from_zero_at_the_first_epoch_to_one_at_the_last():
    assert run(0, 10, 1.0)[ISV_TRAINING_PROGRESS].item() == 0.0
    assert run(9, 10, 1.0)[ISV_TRAINING_PROGRESS].item() == pytest.approx(1.0)
    assert run(0, 1, 1.0)[ISV_TRAINING_PROGRESS].item() == 0.0  # a one-epoch run never divides by 0
    assert run(50, 10, 1.0)[ISV_TRAINING_PROGRESS].item() == 1.0  # clamped


def test_tau_follows_the_cosine_from_start_to_end_when_healthy():
    taus = [run(epoch, 11, 1.0)[ISV_TAU].item() for epoch in range(11)]
    assert taus[0] == pytest.approx(PARAMS.tau_start, rel=1e-6)
    assert taus[-1] == pytest.approx(PARAMS.tau_end, rel=1e-6)
    assert all(later <= earlier for earlier, later in pairwise(taus))
    middle = PARAMS.tau_end + 0.5 * (PARAMS.tau_start - PARAMS.tau_end)
    assert taus[5] == pytest.approx(middle, rel=1e-5)


def test_tau_floor_rises_as_health_falls():
    at_end = [run(10, 11, health)[ISV_TAU].item() for health in (1.0, 0.75, 0.5, 0.25, 0.0)]
    assert all(later >= earlier for earlier, later in pairwise(at_end))
    assert at_end[-1] == pytest.approx(PARAMS.tau_floor_hi, rel=1e-6)  # full collapse: the top floor


def test_gamma_per_branch_is_coupled_to_health_within_its_bounds():
    healthy = run(3, 10, 1.0)[ISV_GAMMA : ISV_GAMMA + N_BRANCHES]
    sick = run(3, 10, 0.0)[ISV_GAMMA : ISV_GAMMA + N_BRANCHES]
    half = run(3, 10, 0.5)[ISV_GAMMA : ISV_GAMMA + N_BRANCHES]
    assert_close("γ at health 1", healthy, torch.tensor(PARAMS.gamma_high))
    assert_close("γ at health 0", sick, torch.tensor(PARAMS.gamma_low))
    assert bool(((sick <= half) & (half <= healthy)).all())


def test_epsilon_decays_with_progress_and_rises_when_learning_is_sick():
    healthy = [run(epoch, 11, 1.0)[ISV_EPSILON].item() for epoch in range(11)]
    assert healthy[0] == pytest.approx(PARAMS.epsilon_start)
    assert all(later <= earlier for earlier, later in pairwise(healthy))
    assert healthy[-1] == pytest.approx(PARAMS.epsilon_end, rel=1e-6)
    sick_end = run(10, 11, 0.0)[ISV_EPSILON].item()
    assert sick_end == pytest.approx(PARAMS.epsilon_end + PARAMS.epsilon_boost, rel=1e-6)
    assert run(0, 11, 0.0)[ISV_EPSILON].item() <= PARAMS.epsilon_start  # the boost never exceeds the start


def test_non_finite_health_counts_as_sick():
    nan_health = run(10, 11, math.nan)
    sick = run(10, 11, 0.0)
    for slot in (ISV_TAU, ISV_EPSILON, ISV_GAMMA):
        assert nan_health[slot].item() == sick[slot].item()


def test_launcher_on_cpu_is_the_reference():
    isv_a, isv_b = fresh_isv().host, fresh_isv().host
    for isv in (isv_a, isv_b):
        isv[ISV_EPOCH_INDEX], isv[ISV_TOTAL_EPOCHS], isv[ISV_LEARNING_HEALTH] = 4, 9, 0.3
    adaptive_schedule(isv_a)
    adaptive_schedule_reference(isv_b)
    assert torch.equal(isv_a, isv_b)


def test_bad_parameters_are_explained():
    with pytest.raises(ValueError, match=r"invalid schedule parameters \(.*τ schedule.*\) — hint"):
        ScheduleParams(tau_start=0.001, tau_end=0.01)
    with pytest.raises(ValueError, match=r"γ bounds.*vs 0 ≤ low ≤ high ≤ 1"):
        ScheduleParams(gamma_low=(0.99,) * N_BRANCHES, gamma_high=(0.9,) * N_BRANCHES)


def test_wrong_isv_shape_is_explained():
    with pytest.raises(ValueError, match=r"ISV has the wrong shape.*hint"):
        adaptive_schedule(torch.zeros(3))


@pytest.mark.gpu
@pytest.mark.parametrize("health", [0.0, 0.37, 1.0, math.nan])
@pytest.mark.parametrize("epoch,total", [(0, 1), (0, 10), (4, 10), (9, 10), (12, 10)])
def test_kernel_matches_reference(health: float, epoch: int, total: int):
    bus = fresh_isv("cuda")
    bus.host[ISV_EPOCH_INDEX], bus.host[ISV_TOTAL_EPOCHS], bus.host[ISV_LEARNING_HEALTH] = epoch, total, health
    expected = bus.host.clone()
    adaptive_schedule_reference(expected, PARAMS)
    adaptive_schedule(bus.tensor, PARAMS)
    torch.cuda.synchronize()
    assert_close(f"schedule epoch {epoch}/{total} health {health}", bus.host, expected)
