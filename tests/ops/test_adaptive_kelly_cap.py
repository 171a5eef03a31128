"""adaptive_kelly_cap: half-Kelly from the envs' win/loss statistics × (0.5 + 0.5·health)."""

from __future__ import annotations

import pytest
import torch
from adaptive_support import assert_close, fresh_isv

from trainer.layout import (
    ISV_KELLY_CAP,
    ISV_KELLY_PRIOR_LOSSES,
    ISV_KELLY_PRIOR_MEAN_RETURN,
    ISV_KELLY_PRIOR_WINS,
    ISV_LEARNING_HEALTH,
    PS_KELLY_LOSS_SUM,
    PS_KELLY_LOSSES,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_STRIDE,
)
from trainer.ops.adaptive_kelly_cap import (
    KellyParams,
    adaptive_kelly_cap,
    adaptive_kelly_cap_reference,
    env_half_kelly,
    kelly_cap_workspace,
)

WIDE = KellyParams(cap_floor=0.0, cap_max=1.0)  # no clamp: the formula itself is visible


def prior_ps(n_envs: int, isv: torch.Tensor) -> torch.Tensor:
    """ps as VectorEnv.reset leaves it: the Bayesian prior of 2 wins and 2 losses per env."""
    ps = torch.zeros(n_envs, PS_STRIDE)
    ps[:, PS_KELLY_WINS] = isv[ISV_KELLY_PRIOR_WINS]
    ps[:, PS_KELLY_LOSSES] = isv[ISV_KELLY_PRIOR_LOSSES]
    ps[:, PS_KELLY_WIN_SUM] = isv[ISV_KELLY_PRIOR_WINS] * isv[ISV_KELLY_PRIOR_MEAN_RETURN]
    ps[:, PS_KELLY_LOSS_SUM] = isv[ISV_KELLY_PRIOR_LOSSES] * isv[ISV_KELLY_PRIOR_MEAN_RETURN]
    return ps


def record(ps: torch.Tensor, wins: float, losses: float, mean_win: float, mean_loss: float) -> torch.Tensor:
    ps[:, PS_KELLY_WINS] += wins
    ps[:, PS_KELLY_LOSSES] += losses
    ps[:, PS_KELLY_WIN_SUM] += wins * mean_win
    ps[:, PS_KELLY_LOSS_SUM] += losses * mean_loss
    return ps


def cap_of(ps: torch.Tensor, health: float, params: KellyParams = WIDE) -> float:
    isv = fresh_isv().host
    isv[ISV_LEARNING_HEALTH] = health
    adaptive_kelly_cap(ps, isv, kelly_cap_workspace(ps.shape[0], "cpu"), params)
    return isv[ISV_KELLY_CAP].item()


def test_the_prior_alone_gives_no_edge_so_the_floor_applies():
    isv = fresh_isv().host
    ps = prior_ps(10, isv)
    assert env_half_kelly(ps).abs().max().item() < 1e-6  # p = ½, b = 1 → f* = 0
    assert cap_of(ps, 1.0, KellyParams(cap_floor=0.1)) == pytest.approx(0.1)


def test_half_kelly_of_a_binary_bet():
    isv = fresh_isv().host
    ps = record(prior_ps(4, isv), wins=58, losses=38, mean_win=0.01, mean_loss=0.01)  # W = 60, L = 40, b = 1
    assert env_half_kelly(ps)[0].item() == pytest.approx(0.5 * (0.6 - 0.4 / 1.0), rel=1e-5)
    assert cap_of(ps, 1.0) == pytest.approx(0.1, rel=1e-5)
    odds = record(prior_ps(4, isv), wins=8, losses=8, mean_win=0.02, mean_loss=0.01)  # p = ½
    b = (0.02 + 8 * 0.02) / 10 / ((0.02 + 8 * 0.01) / 10)
    assert env_half_kelly(odds)[0].item() == pytest.approx(0.5 * (0.5 - 0.5 / b), rel=1e-5)


def test_health_scales_the_cap_by_half_to_one():
    ps = record(prior_ps(7, fresh_isv().host), wins=58, losses=38, mean_win=0.01, mean_loss=0.01)
    full, half = cap_of(ps, 1.0), cap_of(ps, 0.0)
    assert half == pytest.approx(0.5 * full, rel=1e-5)
    assert cap_of(ps, 0.5) == pytest.approx(0.75 * full, rel=1e-5)


def test_losing_envs_pull_the_mean_down_and_bounds_hold():
    isv = fresh_isv().host
    ps = prior_ps(4, isv)
    winners = 2  # envs 0 and 1 win every trade, envs 2 and 3 lose every trade
    record(ps[:winners], wins=98, losses=0, mean_win=0.05, mean_loss=0.0)
    record(ps[winners:], wins=0, losses=98, mean_win=0.0, mean_loss=0.05)
    halves = env_half_kelly(ps)
    assert halves[winners:].max().item() == 0.0  # a losing record never goes negative
    assert cap_of(ps, 1.0) == pytest.approx(halves.mean().item(), rel=1e-5)
    assert cap_of(ps, 1.0, KellyParams(cap_floor=0.0, cap_max=0.2)) == pytest.approx(0.2)


def test_all_zero_statistics_give_the_floor_not_nan():
    ps = torch.zeros(3, PS_STRIDE)
    assert cap_of(ps, 1.0, KellyParams(cap_floor=0.05)) == pytest.approx(0.05)


def test_reduction_follows_the_kernel_order_and_is_deterministic():
    generator = torch.Generator().manual_seed(3)
    ps = prior_ps(1000, fresh_isv().host)
    record(ps, wins=0, losses=0, mean_win=0, mean_loss=0)
    ps[:, PS_KELLY_WINS] += torch.randint(0, 50, (1000,), generator=generator).float()
    ps[:, PS_KELLY_WIN_SUM] += torch.rand(1000, generator=generator)
    caps = {cap_of(ps, 0.8) for _ in range(3)}
    assert len(caps) == 1
    exact = env_half_kelly(ps).double().mean().item() * 0.9
    assert caps.pop() == pytest.approx(exact, rel=1e-5)


def test_malformed_inputs_are_explained():
    isv = fresh_isv().host
    with pytest.raises(ValueError, match=r"Kelly cap inputs are malformed \(.*workspace.*\) — hint"):
        adaptive_kelly_cap(torch.zeros(300, PS_STRIDE), isv, torch.zeros(1))
    with pytest.raises(ValueError, match=r"at least one env \(0 vs ≥ 1\)"):
        kelly_cap_workspace(0, "cpu")
    with pytest.raises(ValueError, match=r"invalid Kelly cap bounds"):
        KellyParams(cap_floor=0.5, cap_max=0.1)


@pytest.mark.gpu
@pytest.mark.parametrize("n_envs", [1, 255, 256, 257, 1000, 65_536 + 7])
@pytest.mark.parametrize("health", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("zero_stats", [False, True])
def test_kernel_matches_reference(n_envs: int, health: float, zero_stats: bool):
    bus = fresh_isv("cuda")
    bus.host[ISV_LEARNING_HEALTH] = health
    generator = torch.Generator().manual_seed(n_envs)
    ps = torch.zeros(n_envs, PS_STRIDE) if zero_stats else prior_ps(n_envs, bus.host)
    if not zero_stats:
        ps[:, PS_KELLY_WINS] += torch.randint(0, 40, (n_envs,), generator=generator).float()
        ps[:, PS_KELLY_LOSSES] += torch.randint(0, 40, (n_envs,), generator=generator).float()
        ps[:, PS_KELLY_WIN_SUM] += torch.rand(n_envs, generator=generator)
        ps[:, PS_KELLY_LOSS_SUM] += torch.rand(n_envs, generator=generator)
    expected_isv = bus.host.clone()
    expected_ws = kelly_cap_workspace(n_envs, "cpu")
    adaptive_kelly_cap_reference(ps, expected_isv, expected_ws, WIDE)
    workspace = kelly_cap_workspace(n_envs, "cuda")
    adaptive_kelly_cap(ps.cuda(), bus.tensor, workspace, WIDE)
    torch.cuda.synchronize()
    assert_close(f"partials n={n_envs}", workspace, expected_ws, atol=1e-6, rtol=1e-5)
    assert_close(f"Kelly cap n={n_envs} health={health}", bus.host[ISV_KELLY_CAP], expected_isv[ISV_KELLY_CAP])
    again = bus.host[ISV_KELLY_CAP].clone()
    adaptive_kelly_cap(ps.cuda(), bus.tensor, workspace, WIDE)
    torch.cuda.synchronize()
    assert torch.equal(bus.host[ISV_KELLY_CAP], again)  # bitwise reproducible: no atomics
