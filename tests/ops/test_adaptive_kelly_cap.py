"""adaptive_kelly_cap: a half-Kelly position size from the envs' pooled record × (0.5 + 0.5·health)."""

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
    env_statistics,
    kelly_cap_workspace,
    kelly_position,
)

WIDE = KellyParams(cap_floor=0.0, cap_max=1e6)  # no clamp: the formula itself is visible
EXACT = KellyParams(cap_floor=0.0, cap_max=1e6, confidence_z=0.0)  # the point estimate of p


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


def pooled(ps: torch.Tensor) -> torch.Tensor:
    return env_statistics(ps).double().sum(1).float()


def test_the_prior_alone_gives_no_edge_so_the_floor_applies():
    isv = fresh_isv().host
    ps = prior_ps(10, isv)
    assert kelly_position(pooled(ps), EXACT).item() < 1e-6  # p = ½, b = 1 → f* = 0
    assert cap_of(ps, 1.0, KellyParams(cap_floor=0.1)) == pytest.approx(0.1)


def continuous_kelly(wins: float, losses: float, mean_win: float, mean_loss: float, z: float = 0.0) -> float:
    n = wins + losses
    mean = (wins * mean_win - losses * mean_loss) / n
    second = (wins * mean_win**2 + losses * mean_loss**2) / n
    return 0.5 * max(mean - z * (second / n) ** 0.5, 0.0) / second


def test_the_kelly_stake_becomes_a_position_size_through_the_loss_per_unit():
    # The regression of issue 9: f* = p − q/b was used as the position fraction, so a 0.5 % mean
    # loss per trade and a real edge still gave a cap of ~0.05 — always the 0.1 floor.
    one_size = record(torch.zeros(1, PS_STRIDE), wins=60, losses=40, mean_win=0.01, mean_loss=0.01)
    assert kelly_position(pooled(one_size), EXACT).item() == pytest.approx(0.5 * (0.6 - 0.4 / 1.0) / 0.01, rel=1e-5)
    small = torch.zeros(1, PS_STRIDE)
    record(small, wins=600, losses=400, mean_win=0.005, mean_loss=0.005)
    assert cap_of(small, 1.0, KellyParams()) == pytest.approx(1.0)  # ≈ 0.5·0.19/0.005 = 19, capped at 1
    odds = record(torch.zeros(4, PS_STRIDE), wins=8, losses=8, mean_win=0.02, mean_loss=0.01)  # p = ½, b = 2
    assert kelly_position(pooled(odds), EXACT).item() == pytest.approx(continuous_kelly(32, 32, 0.02, 0.01), rel=1e-5)


def test_the_mean_return_enters_at_its_lower_confidence_bound():
    # 55 % wins over 100 trades is within two standard errors of a coin: no edge yet.
    few = record(torch.zeros(1, PS_STRIDE), wins=55, losses=45, mean_win=0.005, mean_loss=0.005)
    assert cap_of(few, 1.0, KellyParams(cap_floor=0.1)) == pytest.approx(0.1)
    # The same rate over 10,000 trades is an edge: μ = 0.1·0.005, se = 0.005/100.
    many = record(torch.zeros(1, PS_STRIDE), wins=5500, losses=4500, mean_win=0.005, mean_loss=0.005)
    want = continuous_kelly(5500, 4500, 0.005, 0.005, z=2.0)
    assert want == pytest.approx(0.5 * (0.0005 - 2 * 0.00005) / 0.005**2)
    assert kelly_position(pooled(many), KellyParams()).item() == pytest.approx(want, rel=1e-4)


def test_noise_trades_stay_on_the_floor():
    # 50 markets without an edge: 64 envs × 30 coin-flip trades of ±0.25…0.75 %. A z = 2 bound
    # lets about 2 % of them through by chance; the point estimate (z = 0) about half.
    def noise_caps(params: KellyParams) -> list[float]:
        caps = []
        for seed in range(50):
            generator = torch.Generator().manual_seed(seed)
            ps = prior_ps(64, fresh_isv().host)
            for _ in range(30):
                won = (torch.rand(64, generator=generator) < 0.5).float()
                size = 0.005 * (0.5 + torch.rand(64, generator=generator))
                record_trades = (won, won * size, 1.0 - won, (1.0 - won) * size)
                for column, value in zip((PS_KELLY_WINS, PS_KELLY_WIN_SUM, PS_KELLY_LOSSES, PS_KELLY_LOSS_SUM),
                                         record_trades, strict=True):  # fmt: skip
                    ps[:, column] += value
            caps.append(cap_of(ps, 1.0, params))
        return caps

    off_floor = sum(cap > 0.1 + 1e-6 for cap in noise_caps(KellyParams()))
    assert off_floor <= 3
    assert sum(cap > 0.1 + 1e-6 for cap in noise_caps(KellyParams(confidence_z=0.0))) > 10


def test_health_scales_the_cap_by_half_to_one():
    ps = record(prior_ps(7, fresh_isv().host), wins=58, losses=38, mean_win=0.01, mean_loss=0.01)
    full, half = cap_of(ps, 1.0, EXACT), cap_of(ps, 0.0, EXACT)
    assert full > 0.0
    assert half == pytest.approx(0.5 * full, rel=1e-5)
    assert cap_of(ps, 0.5, EXACT) == pytest.approx(0.75 * full, rel=1e-5)


def test_losing_envs_pull_the_pooled_record_down_and_bounds_hold():
    isv = fresh_isv().host
    winner = record(prior_ps(1, isv), wins=98, losses=0, mean_win=0.05, mean_loss=0.0)  # wins every trade
    losers = record(prior_ps(3, isv), wins=0, losses=98, mean_win=0.0, mean_loss=0.05)  # lose every one
    assert cap_of(winner, 1.0) > 1.0
    assert cap_of(torch.cat([winner, losers]), 1.0) == 0.0  # a losing record never goes negative
    winners = record(prior_ps(4, isv), wins=98, losses=2, mean_win=0.05, mean_loss=0.01)
    assert cap_of(winners, 1.0, KellyParams(cap_floor=0.0, cap_max=0.2)) == pytest.approx(0.2)


def test_all_zero_statistics_give_the_floor_not_nan():
    ps = torch.zeros(3, PS_STRIDE)
    assert cap_of(ps, 1.0, KellyParams(cap_floor=0.05)) == pytest.approx(0.05)


def test_reduction_follows_the_kernel_order_and_is_deterministic():
    generator = torch.Generator().manual_seed(3)
    ps = prior_ps(1000, fresh_isv().host)
    ps[:, PS_KELLY_WINS] += torch.randint(0, 50, (1000,), generator=generator).float()
    ps[:, PS_KELLY_WIN_SUM] += torch.rand(1000, generator=generator)
    caps = {cap_of(ps, 0.8) for _ in range(3)}
    assert len(caps) == 1
    exact = kelly_position(env_statistics(ps).double().sum(1).float(), WIDE).item() * 0.9
    assert caps.pop() == pytest.approx(exact, rel=1e-5)


def test_malformed_inputs_are_explained():
    isv = fresh_isv().host
    with pytest.raises(ValueError, match=r"Kelly cap inputs are malformed \(.*workspace.*\) — hint"):
        adaptive_kelly_cap(torch.zeros(300, PS_STRIDE), isv, torch.zeros(1))
    with pytest.raises(ValueError, match=r"at least one env \(0 vs ≥ 1\)"):
        kelly_cap_workspace(0, "cpu")
    with pytest.raises(ValueError, match=r"invalid Kelly cap parameters \(cap bounds 0.5..0.1"):
        KellyParams(cap_floor=0.5, cap_max=0.1)
    with pytest.raises(ValueError, match=r"invalid Kelly cap parameters \(kelly_fraction 0.0 vs \(0, 1\]\) — hint"):
        KellyParams(kelly_fraction=0.0)


@pytest.mark.gpu
@pytest.mark.parametrize("n_envs", [1, 255, 256, 257, 1000, 65_536 + 7])
@pytest.mark.parametrize("health", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("zero_stats", [False, True])
@pytest.mark.parametrize("params", [WIDE, KellyParams()], ids=["wide", "default"])
def test_kernel_matches_reference(n_envs: int, health: float, zero_stats: bool, params: KellyParams):
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
    adaptive_kelly_cap_reference(ps, expected_isv, expected_ws, params)
    workspace = kelly_cap_workspace(n_envs, "cuda")
    adaptive_kelly_cap(ps.cuda(), bus.tensor, workspace, params)
    torch.cuda.synchronize()
    assert_close(f"partials n={n_envs}", workspace, expected_ws, atol=1e-6, rtol=1e-5)
    assert_close(f"Kelly cap n={n_envs} health={health}", bus.host[ISV_KELLY_CAP], expected_isv[ISV_KELLY_CAP])
    again = bus.host[ISV_KELLY_CAP].clone()
    adaptive_kelly_cap(ps.cuda(), bus.tensor, workspace, params)
    torch.cuda.synchronize()
    assert torch.equal(bus.host[ISV_KELLY_CAP], again)  # bitwise reproducible: no atomics
