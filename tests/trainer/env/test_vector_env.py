"""VectorEnv on the CPU (the reference path): accounting, Kelly cap, DSR, episodes, limit fills."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.env import VectorEnv, backtest_targets
from trainer.isv import Isv
from trainer.layout import (
    DIRECTION_FLAT,
    DIRECTION_HOLD,
    DIRECTION_LONG,
    DIRECTION_SHORT,
    ISV_KELLY_CAP,
    MAGNITUDE_FULL,
    MAGNITUDE_HALF,
    MAGNITUDE_QUARTER,
    N_JOINT_ACTIONS,
    ORDER_TYPE_LIMIT,
    ORDER_TYPE_MARKET,
    PORTFOLIO_INPUT_POSITION_FRACTION,
    PS_BAR_INDEX,
    PS_CASH,
    PS_DSR_A,
    PS_DSR_B,
    PS_ENTRY_PRICE,
    PS_EPISODE_START,
    PS_EPISODE_STEPS,
    PS_KELLY_LOSSES,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
    URGENCY_AGGRESSIVE,
    URGENCY_NORMAL,
    URGENCY_PASSIVE,
    decode_joint_action,
    encode_joint_action,
)


def _prices(n_bars: int, seed: int = 0, vol: float = 0.01) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (100.0 * torch.exp(torch.cumsum(torch.randn(n_bars, generator=g, dtype=torch.float64) * vol, 0))).float()


def _env(close, n_envs=1, spread=None, seed=3, **config) -> VectorEnv:
    env = VectorEnv(close, n_envs=n_envs, isv=Isv("cpu", config=config), seed=seed, spread=spread)
    return env


def _only(env: VectorEnv, column: int) -> float:
    """The ``column`` of the single env's ps row."""
    return env.ps[:, column].item()


def _pin_start(env: VectorEnv, bar: int) -> None:
    env.ps[:, PS_BAR_INDEX] = float(bar)
    env.ps[:, PS_EPISODE_START] = float(bar)


def _action(direction, magnitude=MAGNITUDE_FULL, order_type=ORDER_TYPE_MARKET, urgency=URGENCY_NORMAL):
    return torch.tensor([encode_joint_action(direction, magnitude, order_type, urgency)], dtype=torch.int32)


@pytest.mark.parametrize("seed", [0, 1])
def test_equity_path_matches_backtest_targets(seed: int):
    """Random joint actions (market and limit, every urgency, a spread): the env's cash and position
    reproduce backtest_targets with each bar's effective slippage."""
    n_bars, steps = 120, 100
    close = _prices(n_bars, seed)
    spread = torch.full((n_bars,), 0.03)
    config = {"FEE_RATE": 5e-4, "SLIPPAGE": 2e-4, "INIT_CASH": 1000.0}
    env = _env(close, spread=spread, seed=seed, **config)
    env.isv.tensor[ISV_KELLY_CAP] = 0.8  # as the Kelly-cap kernel would
    _pin_start(env, 0)
    g = torch.Generator().manual_seed(seed)
    actions = torch.randint(0, N_JOINT_ACTIONS, (steps,), generator=g, dtype=torch.int32)
    positions, cash, slips = [], [], []
    impact, capture = env.isv.read("MARKET_IMPACT"), env.isv.read("LIMIT_SPREAD_CAPTURE")
    for t in range(steps):
        _, done, _ = env.step(actions[t : t + 1])
        assert not bool(done[0])
        positions.append(_only(env, PS_POSITION))
        cash.append(_only(env, PS_CASH))
        _, _, order_type, urgency = decode_joint_action(int(actions[t]))
        half = 0.5 * float(spread[t]) / float(close[t])
        slips.append(-half * capture[urgency] if order_type == ORDER_TYPE_LIMIT else half + 2e-4 * impact[urgency])
    equity = backtest_targets(close[:steps], positions, fee_rate=5e-4, slippage=slips, init_cash=1000.0)
    env_equity = torch.tensor(cash, dtype=torch.float64) + torch.tensor(positions, dtype=torch.float64) * close[:steps].double()
    torch.testing.assert_close(env_equity, equity, rtol=2e-5, atol=1e-3)
    # Final value: marked at the next bar, no trade in between.
    final = backtest_targets(close[: steps + 1], [*positions, positions[-1]], fee_rate=5e-4, slippage=[*slips, 0.0],
                             init_cash=1000.0)[-1]  # fmt: skip
    assert _only(env, PS_PORTFOLIO_VALUE) == pytest.approx(float(final), rel=2e-5)
    assert len({round(p, 4) for p in positions}) > 10  # the sequence really traded


def test_targets_hold_flat_and_kelly_cap():
    close = torch.full((50,), 100.0)
    env = _env(close, FEE_RATE=0.0, SLIPPAGE=0.0, INIT_CASH=1000.0)
    _pin_start(env, 0)
    env.isv.tensor[ISV_KELLY_CAP] = 0.3
    env.step(_action(DIRECTION_LONG, MAGNITUDE_QUARTER))
    assert _only(env, PS_POSITION) == pytest.approx(0.25 * 0.3 * 1000 / 100)  # magnitude × cap
    env.step(_action(DIRECTION_LONG, MAGNITUDE_FULL))  # the full magnitude is the cap
    assert _only(env, PS_POSITION) == pytest.approx(0.3 * 1000 / 100)
    assert float(env.portfolio_inputs()[0, PORTFOLIO_INPUT_POSITION_FRACTION]) == pytest.approx(0.3)
    env.step(_action(DIRECTION_HOLD, MAGNITUDE_QUARTER))
    assert _only(env, PS_POSITION) == pytest.approx(3.0)
    env.step(_action(DIRECTION_SHORT, MAGNITUDE_HALF))
    assert _only(env, PS_POSITION) == pytest.approx(-1.5)
    env.step(_action(DIRECTION_FLAT))
    assert _only(env, PS_POSITION) == 0.0
    assert _only(env, PS_ENTRY_PRICE) == 0.0
    env.isv.tensor[ISV_KELLY_CAP] = -0.5  # a negative cap means no exposure, never a flipped one
    env.step(_action(DIRECTION_LONG))
    assert _only(env, PS_POSITION) == 0.0


def test_every_magnitude_stays_distinct_below_a_quarter_cap():
    # The regression of issue 9: units = min(fraction, cap) made ¼, ½ and 1 the same position
    # whenever the cap was below ¼ (the cap's floor is 0.1), so the magnitude branch learned nothing.
    close = torch.full((20,), 100.0)
    positions = []
    for magnitude in (MAGNITUDE_QUARTER, MAGNITUDE_HALF, MAGNITUDE_FULL):
        env = _env(close, FEE_RATE=0.0, SLIPPAGE=0.0, INIT_CASH=1000.0)
        _pin_start(env, 0)
        env.isv.tensor[ISV_KELLY_CAP] = 0.1
        env.step(_action(DIRECTION_LONG, magnitude))
        positions.append(_only(env, PS_POSITION))
    assert positions == pytest.approx([0.25, 0.5, 1.0])  # fraction × 0.1 × 1000 / 100


def test_dsr_warmup_zero_variance_and_formula():
    close = torch.full((40,), 100.0)
    env = _env(close, DSR_WARMUP_BARS=3.0, DSR_ETA=0.1)
    _pin_start(env, 0)
    for _ in range(10):  # flat prices, no position: zero return, zero variance → reward 0, never NaN
        reward, _, _ = env.step(_action(DIRECTION_HOLD))
        assert float(reward[0]) == 0.0
    close = _prices(60, seed=4, vol=0.02)
    eta, warmup = 0.1, 3
    env = _env(close, DSR_WARMUP_BARS=float(warmup), DSR_ETA=eta, FEE_RATE=0.0, SLIPPAGE=0.0)
    _pin_start(env, 0)
    env.isv.tensor[ISV_KELLY_CAP] = 1.0
    a = b = 0.0
    for step in range(1, 30):
        pv_before = _only(env, PS_PORTFOLIO_VALUE)
        reward, _, _ = env.step(_action(DIRECTION_LONG if step % 4 else DIRECTION_SHORT))
        ret = _only(env, PS_PORTFOLIO_VALUE) / pv_before - 1.0
        var = max(b - a * a, 1e-10)
        expected = 0.0 if step <= warmup else max(-5.0, min(5.0, (b * (ret - a) - 0.5 * a * (ret * ret - b)) / var**1.5))
        assert float(reward[0]) == pytest.approx(expected, rel=2e-3, abs=1e-4), step
        a, b = a + eta * (ret - a), b + eta * (ret * ret - b)
        assert _only(env, PS_DSR_A) == pytest.approx(a, rel=1e-3, abs=1e-7)
        assert _only(env, PS_DSR_B) == pytest.approx(b, rel=1e-3, abs=1e-9)


def test_episode_rollover_at_length_and_at_data_end():
    close = _prices(30)
    env = _env(close, n_envs=4, EPISODE_LENGTH=5.0)
    _pin_start(env, 2)
    env.ps[:, PS_KELLY_WINS] = 7.0
    for step in range(1, 6):
        _, done, obs = env.step(torch.full((4,), encode_joint_action(DIRECTION_LONG, 0, 0, 0), dtype=torch.int32))
        assert bool(done.all()) == (step == 5)
    assert torch.equal(obs.to(torch.int64), env.bar_index())
    assert bool((env.ps[:, PS_EPISODE_STEPS] == 0).all()) and bool((env.ps[:, PS_POSITION] == 0).all())
    assert bool((env.ps[:, PS_BAR_INDEX] <= 30 - 1 - 5).all())  # a new start leaves room for a full episode
    assert bool((env.ps[:, PS_KELLY_WINS] >= 7.0).all())  # Kelly statistics outlive episodes (not back to 2)
    data_end = _env(close, n_envs=2)
    _pin_start(data_end, 27)
    _, done, _ = data_end.step(torch.zeros(2, dtype=torch.int32))
    assert not bool(done.any())
    _, done, obs = data_end.step(torch.zeros(2, dtype=torch.int32))
    assert bool(done.all())  # reached bar 29, the last one
    assert bool((obs <= 28).all())


def test_ruin_ends_the_episode():
    close = torch.tensor([100.0, 400.0, 400.0, 400.0, 400.0, 400.0])
    env = _env(close, FEE_RATE=0.0, SLIPPAGE=0.0)
    _pin_start(env, 0)
    env.isv.tensor[ISV_KELLY_CAP] = 1.0
    _, done, _ = env.step(_action(DIRECTION_SHORT))  # short 1× equity, price ×4 → equity −2
    assert bool(done[0])
    assert _only(env, PS_PORTFOLIO_VALUE) == 1.0  # restarted with the initial cash


def test_kelly_statistics_on_closed_trades():
    close = torch.tensor([100.0, 110.0, 110.0, 99.0, 99.0, 99.0, 99.0, 99.0])
    env = _env(close, FEE_RATE=0.0, SLIPPAGE=0.0, KELLY_PRIOR_WINS=2.0, KELLY_PRIOR_LOSSES=2.0, KELLY_PRIOR_MEAN_RETURN=0.01)
    _pin_start(env, 0)
    assert _only(env, PS_KELLY_WIN_SUM) == pytest.approx(0.02)
    env.isv.tensor[ISV_KELLY_CAP] = 1.0
    env.step(_action(DIRECTION_LONG))  # buy at 100
    env.step(_action(DIRECTION_SHORT))  # at 110: close the long (+10 %), open a short at 110
    assert _only(env, PS_KELLY_WINS) == 3.0
    assert _only(env, PS_KELLY_WIN_SUM) == pytest.approx(0.02 + 0.1, rel=1e-5)
    assert _only(env, PS_ENTRY_PRICE) == pytest.approx(110.0)
    env.step(_action(DIRECTION_HOLD))
    env.step(_action(DIRECTION_FLAT))  # cover at 99: short gained 10 %
    assert _only(env, PS_KELLY_WINS) == 4.0
    env.step(_action(DIRECTION_LONG))
    env.step(_action(DIRECTION_FLAT))  # flat price: a zero return counts as a loss
    assert _only(env, PS_KELLY_LOSSES) == 3.0


@pytest.mark.parametrize(("urgency", "probability"), [(URGENCY_PASSIVE, 0.3), (URGENCY_NORMAL, 0.6), (URGENCY_AGGRESSIVE, 0.9)])
def test_limit_orders_fill_with_their_urgency_probability(urgency: int, probability: float):
    close = torch.full((10,), 100.0)
    n_envs = 20_000
    env = _env(close, n_envs=n_envs, spread=torch.full((10,), 0.2), FEE_RATE=0.0)
    _pin_start(env, 0)
    action = encode_joint_action(DIRECTION_LONG, MAGNITUDE_QUARTER, ORDER_TYPE_LIMIT, urgency)
    env.step(torch.full((n_envs,), action, dtype=torch.int32))
    filled = env.ps[:, PS_POSITION] != 0
    assert abs(float(filled.float().mean()) - probability) < 4 * math.sqrt(probability * (1 - probability) / n_envs)
    capture = env.isv.read("LIMIT_SPREAD_CAPTURE")[urgency]
    fill_price = 100.0 * (1 - 0.5 * 0.2 / 100.0 * capture)  # a limit buy earns part of the half spread
    assert float(env.ps[filled, PS_ENTRY_PRICE][0]) == pytest.approx(fill_price, rel=1e-6)


def test_same_seed_same_run_and_counter_advances():
    close = _prices(64, seed=9)
    g = torch.Generator().manual_seed(1)
    plan = torch.randint(0, N_JOINT_ACTIONS, (40, 16), generator=g, dtype=torch.int32)
    runs = []
    for _ in range(2):
        env = _env(close, n_envs=16, seed=11, EPISODE_LENGTH=7.0)
        rewards, dones, obs = env.step(plan)
        runs.append((env.ps.clone(), rewards.clone(), dones.clone(), obs.clone(), int(env.counter)))
    assert all(torch.equal(x, y) for x, y in zip(runs[0][:4], runs[1][:4], strict=True))
    assert runs[0][4] == 1 + 40  # one draw for the reset, one per bar
    multi = _env(close, n_envs=16, seed=11, EPISODE_LENGTH=7.0)
    for k in range(40):  # K single-bar steps == one K-bar step
        multi.step(plan[k])
    assert torch.equal(multi.ps, runs[0][0])


def test_bad_inputs_are_explained():
    with pytest.raises(ValueError, match="at least 2 bars"):
        _env(torch.tensor([1.0]))
    with pytest.raises(ValueError, match=r"bar 2: nan"):
        _env(torch.tensor([1.0, 2.0, float("nan")]))
    with pytest.raises(ValueError, match="n_envs must be positive"):
        VectorEnv(_prices(5), n_envs=0, isv=Isv("cpu"), seed=0)
    env = _env(_prices(5))
    with pytest.raises(ValueError, match="int32 joint indices"):
        env.step(torch.zeros(1, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"actions \(2, 3\)"):
        env.step(torch.zeros(2, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="has no features"):
        env.observe()


@pytest.mark.gpu
def test_gpu_env_matches_cpu_env_end_to_end():
    """Reset (torch Philox on each device) and K-bar steps through the kernel agree with the CPU env."""
    close = _prices(300, seed=5)
    features = torch.randn(300, 7)
    g = torch.Generator().manual_seed(2)
    plan = torch.randint(0, N_JOINT_ACTIONS, (50, 1000), generator=g, dtype=torch.int32)
    envs = []
    for device in ("cpu", "cuda"):
        isv = Isv(device, config={"EPISODE_LENGTH": 9.0, "FEE_RATE": 2e-4})
        env = VectorEnv(close, n_envs=1000, isv=isv, seed=21, spread=torch.full((300,), 0.02), features=features)
        envs.append((env, env.step(plan.to(device))))
    (cpu_env, (r_cpu, d_cpu, o_cpu)), (gpu_env, (r_gpu, d_gpu, o_gpu)) = envs
    assert torch.equal(o_gpu.cpu(), o_cpu) and torch.equal(d_gpu.cpu(), d_cpu)
    torch.testing.assert_close(r_gpu.cpu(), r_cpu, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(gpu_env.ps.cpu(), cpu_env.ps, atol=1e-5, rtol=1e-5)
    assert torch.equal(gpu_env.observe().cpu(), cpu_env.observe())
    torch.testing.assert_close(gpu_env.portfolio_inputs().cpu(), cpu_env.portfolio_inputs(), atol=1e-5, rtol=1e-5)
    assert int(gpu_env.counter) == int(cpu_env.counter) == 51
