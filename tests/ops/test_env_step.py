"""env_step: CuPy kernel vs PyTorch reference on edge cases (GPU), and the CPU launcher path."""

from __future__ import annotations

import pytest
import torch

from trainer.isv import Isv
from trainer.layout import (
    DIRECTION_FLAT,
    DIRECTION_HOLD,
    DIRECTION_LONG,
    DIRECTION_SHORT,
    ISV_DSR_WARMUP_BARS,
    ISV_EPISODE_LENGTH,
    ISV_HOLD_HURDLE,
    ISV_KELLY_CAP,
    ISV_RETURN_SCALE,
    ISV_REWARD_MODE,
    MAGNITUDE_FULL,
    MAGNITUDE_QUARTER,
    N_JOINT_ACTIONS,
    ORDER_TYPE_MARKET,
    PS,
    PS_BAR_INDEX,
    PS_CASH,
    PS_EPISODE_START,
    PS_ENTRY_PRICE,
    PS_EPISODE_STEPS,
    PS_KELLY_LOSS_SUM,
    PS_KELLY_LOSSES,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
    PS_STRIDE,
    PS_TRIP_BASIS,
    PS_TRIP_PNL,
    URGENCY_NORMAL,
    encode_joint_action,
)
from trainer.ops.env_step import env_step, env_step_reference
from trainer.ops.rng import new_counter


def _case(n_envs, k_steps, n_bars, *, seed=0, episode_length=0.0, kelly_cap=0.7, warmup=4.0, flat_prices=False,
          ruin=False, return_reward=False, hold_hurdle=0.0, device="cpu"):  # fmt: skip
    g = torch.Generator().manual_seed(seed)
    if flat_prices:
        close = torch.full((n_bars,), 50.0)
    elif ruin:  # the price doubles then halves, bar after bar: a leveraged short or long is ruined
        close = torch.tensor([100.0 * (2.0 if i % 2 else 1.0) for i in range(n_bars)])
    else:
        close = (100 * torch.exp(torch.cumsum(torch.randn(n_bars, generator=g) * 0.02, 0))).float()
    spread = torch.rand(n_bars, generator=g) * 0.05
    isv = Isv("cpu", config={"EPISODE_LENGTH": episode_length, "DSR_WARMUP_BARS": warmup, "FEE_RATE": 3e-4})
    isv.tensor[ISV_KELLY_CAP] = kelly_cap
    isv.tensor[ISV_HOLD_HURDLE] = hold_hurdle
    isv.tensor[ISV_RETURN_SCALE] = 0.02  # the generated bars' return std (the hurdle's unit)
    if return_reward:
        isv.tensor[ISV_REWARD_MODE] = 1.0
        isv.tensor[ISV_RETURN_SCALE] = 0.004  # small enough that the clip binds on some bars
    ps = torch.zeros(n_envs, PS_STRIDE)
    ps[:, PS_CASH] = 1.0
    ps[:, PS_PORTFOLIO_VALUE] = 1.0
    start = torch.randint(0, n_bars - 1, (n_envs,), generator=g).float()
    ps[:, PS_BAR_INDEX] = start
    ps[:, PS_EPISODE_START] = start
    actions = torch.randint(0, N_JOINT_ACTIONS, (k_steps, n_envs), generator=g, dtype=torch.int32)
    return {"ps": ps, "isv": isv.tensor.clone(), "actions": actions, "close": close, "spread": spread,
                "counter": new_counter("cpu", 12345), "seed": 0xC0FFEE + seed,
                "rewards": torch.zeros(k_steps, n_envs), "dones": torch.zeros(k_steps, n_envs),
                "obs_index": torch.zeros(k_steps, n_envs, dtype=torch.int32),
                "terminals": torch.zeros(k_steps, n_envs), "final_ps": torch.zeros(k_steps, n_envs, PS_STRIDE)}  # fmt: skip


def _to(case, device):
    return {k: (v.to(device).clone() if isinstance(v, torch.Tensor) else v) for k, v in case.items()}


def _compare(name, got, want, atol=1e-5, rtol=1e-5):
    got, want = got.cpu(), want.cpu()
    if got.dtype.is_floating_point:
        bad = ~torch.isclose(got, want, atol=atol, rtol=rtol, equal_nan=True)
    else:
        bad = got != want
    if bool(bad.any()):
        idx = bad.nonzero()[:5].tolist()
        err = float((got.double() - want.double()).abs().nan_to_num(float("inf")).max())
        detail = ", ".join(f"{i}: {got[tuple(i)].item()} vs {want[tuple(i)].item()}" for i in idx)
        columns = ""
        if name in ("ps", "final_ps"):
            columns = " columns " + str(sorted({PS.slots[i[-1]].name for i in idx}))
        raise AssertionError(f"{name}: {int(bad.sum())} mismatches, max error {err:.3g}; first {detail}{columns}")


CASES = {
    "one_env": {"n_envs": 1, "k_steps": 8, "n_bars": 64},
    "not_block_multiple": {"n_envs": 257, "k_steps": 5, "n_bars": 64},
    "below_one_block": {"n_envs": 100, "k_steps": 3, "n_bars": 64},
    "terminal_bars_rollover": {"n_envs": 1000, "k_steps": 40, "n_bars": 6},
    "episode_length_rollover": {"n_envs": 777, "k_steps": 30, "n_bars": 200, "episode_length": 4.0},
    "episode_length_beyond_data": {"n_envs": 300, "k_steps": 20, "n_bars": 8, "episode_length": 50.0},
    "kelly_cap_clipping": {"n_envs": 513, "k_steps": 10, "n_bars": 64, "kelly_cap": 0.1},
    "negative_kelly_cap": {"n_envs": 64, "k_steps": 4, "n_bars": 64, "kelly_cap": -1.0},
    "zero_variance_no_warmup": {"n_envs": 256, "k_steps": 12, "n_bars": 32, "warmup": 0.0, "flat_prices": True},
    "many_bars_per_launch": {"n_envs": 4096, "k_steps": 64, "n_bars": 500, "episode_length": 32.0},
    "ruin_is_terminal": {"n_envs": 64, "k_steps": 6, "n_bars": 32, "kelly_cap": 1.0, "ruin": True},
    "return_reward": {"n_envs": 1000, "k_steps": 24, "n_bars": 64, "episode_length": 8.0, "return_reward": True},
    "hold_hurdle_dsr": {"n_envs": 1000, "k_steps": 24, "n_bars": 64, "episode_length": 8.0, "hold_hurdle": 0.3},
    "hold_hurdle_return": {"n_envs": 1000, "k_steps": 24, "n_bars": 64, "return_reward": True, "hold_hurdle": 0.3},
}


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_reference(name: str):
    case = _case(**CASES[name])
    want = _to(case, "cpu")
    env_step_reference(**want)
    got = _to(case, "cuda")
    got["isv"] = Isv("cuda").tensor  # device-mapped ISV, as in training
    got["isv"].copy_(case["isv"].to("cuda"))
    env_step(**got)
    torch.cuda.synchronize()
    for key in ("dones", "terminals", "obs_index", "rewards", "ps", "final_ps", "counter"):
        _compare(key, got[key], want[key])
    assert int(got["counter"]) == 12345 + CASES[name]["k_steps"]


@pytest.mark.gpu
def test_reference_on_gpu_matches_reference_on_cpu():
    case = _case(n_envs=300, k_steps=16, n_bars=40, episode_length=6.0)
    cpu, gpu = _to(case, "cpu"), _to(case, "cuda")
    env_step_reference(**cpu)
    env_step_reference(**gpu)
    for key in ("dones", "obs_index", "rewards", "ps"):
        _compare(key, gpu[key], cpu[key])


@pytest.mark.gpu
def test_captured_graph_replays_step_like_eager():
    case = _case(n_envs=2048, k_steps=1, n_bars=300, episode_length=10.0)
    eager = _to(case, "cpu")
    graph_case = _to(case, "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    warm = _to(case, "cuda")
    with torch.cuda.stream(stream):
        env_step(**warm)  # compile and load outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        env_step(**graph_case)
    graph_case["ps"].copy_(case["ps"].cuda())  # capture does not run the kernel; reset the state
    graph_case["counter"].fill_(12345)
    for _ in range(25):
        graph.replay()
        env_step_reference(**eager)
    torch.cuda.synchronize()
    for key in ("dones", "obs_index", "rewards", "ps", "counter"):
        _compare(key, graph_case[key], eager[key])


def test_cpu_launcher_runs_the_reference():
    case = _case(n_envs=5, k_steps=3, n_bars=20)
    a, b = _to(case, "cpu"), _to(case, "cpu")
    env_step(**a)
    env_step_reference(**b)
    for key in ("ps", "rewards", "dones", "obs_index", "terminals", "final_ps", "counter"):
        assert torch.equal(a[key], b[key])


def test_long_full_in_one_env_by_hand():
    case = _case(n_envs=1, k_steps=1, n_bars=4)
    case["close"] = torch.tensor([100.0, 110.0, 100.0, 100.0])
    case["spread"] = torch.zeros(4)
    case["ps"][0, PS_BAR_INDEX] = 0.0
    case["isv"][ISV_KELLY_CAP] = 1.0
    case["isv"][ISV_DSR_WARMUP_BARS] = 0.0
    case["isv"][ISV_EPISODE_LENGTH] = 0.0
    case["actions"][0, 0] = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    env_step_reference(**case)
    fill = 100 * (1 + 1e-4)  # slippage 1e-4 × impact 1.0 for Normal urgency
    units = 1.0 / 100.0
    cash = 1.0 - units * fill - 3e-4 * units * fill
    assert float(case["ps"][0, PS_CASH]) == pytest.approx(cash, abs=1e-6)  # f32: 1 − 1.0001 cancels
    assert float(case["ps"][0, PS_PORTFOLIO_VALUE]) == pytest.approx(cash + units * 110.0, abs=1e-6)
    # First step: A = B = 0, so the variance floor (1e-10) bounds the ratio and the clip (5) applies.
    assert float(case["rewards"][0, 0]) == 0.0  # B·ΔA − ½A·ΔB = 0 when A = B = 0


def test_the_return_reward_is_the_net_return_in_training_volatilities_from_the_first_bar():
    """env.reward = "return": reward = net return ÷ RETURN_SCALE, clipped, with no DSR warm-up —
    the same action and bars give the same reward at every point of an episode."""
    case = _case(n_envs=1, k_steps=1, n_bars=5, return_reward=True)
    case["close"] = torch.tensor([100.0, 100.5, 100.0, 130.0, 130.0])
    case["spread"] = torch.zeros(5)
    case["ps"][0, PS_BAR_INDEX] = 0.0
    case["isv"][ISV_KELLY_CAP] = 1.0
    case["isv"][ISV_DSR_WARMUP_BARS] = 16.0  # would zero every reward below in DSR mode
    case["isv"][ISV_RETURN_SCALE] = 0.005
    long_full = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    rewards, returns = [], []
    for _ in range(3):
        case["actions"][0, 0] = long_full
        env_step_reference(**case)
        rewards.append(float(case["rewards"][0, 0]))
        returns.append(float(case["ps"][0, PS_PORTFOLIO_VALUE]))
    equity = [1.0, *returns]
    net = [equity[i + 1] / equity[i] - 1.0 for i in range(3)]
    assert net[0] > 0 > net[1]  # bought at 100 (plus costs), marked at 100.5, then at 100
    assert rewards[0] == pytest.approx(net[0] / 0.005, rel=1e-4)
    assert rewards[1] == pytest.approx(net[1] / 0.005, rel=1e-4)
    assert rewards[2] == 5.0  # +30 %: 60 training volatilities, clipped at DSR_CLIP


def _hurdle_pair(return_reward, hurdle=0.25):
    """The same case stepped with and without the hold hurdle: (without, with)."""
    case = _case(n_envs=400, k_steps=12, n_bars=64, episode_length=10.0, warmup=2.0, return_reward=return_reward)
    plain, charged = _to(case, "cpu"), _to(case, "cpu")
    charged["isv"][ISV_HOLD_HURDLE] = hurdle
    env_step_reference(**plain)
    env_step_reference(**charged)
    return plain, charged


@pytest.mark.parametrize("return_reward", [False, True], ids=["dsr", "return"])
def test_the_hold_hurdle_charges_only_the_reward(return_reward):
    """Equity, positions, the DSR EMAs (portfolio inputs), episodes: identical with the hurdle on;
    only the rewards move."""
    plain, charged = _hurdle_pair(return_reward)
    for key in ("ps", "final_ps"):
        columns = [i for i, slot in enumerate(PS.slots) if slot.name != "LAST_REWARD"]
        assert torch.equal(plain[key][..., columns], charged[key][..., columns]), key
    for key in ("dones", "obs_index", "terminals", "counter"):
        assert torch.equal(plain[key], charged[key]), key
    assert not torch.equal(plain["rewards"], charged["rewards"])


def test_the_hold_hurdle_costs_a_held_position_its_exposure_in_training_volatilities():
    """Return mode, one env held long at full size over flat prices: no return, so the whole
    reward is the charge, −h × exposure, bar after bar (reward unit = RETURN_SCALE); flat, nothing."""
    case = _case(n_envs=1, k_steps=1, n_bars=6, return_reward=True, hold_hurdle=0.25, kelly_cap=0.5)
    case["close"] = torch.full((6,), 80.0)
    case["spread"] = torch.zeros(6)
    case["ps"][0, PS_BAR_INDEX] = 0.0
    case["isv"][ISV_RETURN_SCALE] = 0.01
    long_full = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    flat = encode_joint_action(DIRECTION_FLAT, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    rewards, exposures = [], []
    for action in (long_full, long_full, long_full, flat):
        before = case["ps"][0].clone()
        case["actions"][0, 0] = action
        env_step_reference(**case)
        held = abs(float(case["ps"][0, PS_POSITION])) * 80.0 / float(before[PS_PORTFOLIO_VALUE])
        net = float(case["ps"][0, PS_PORTFOLIO_VALUE]) / float(before[PS_PORTFOLIO_VALUE]) - 1.0
        rewards.append(float(case["rewards"][0, 0]) - net / 0.01)  # what the hurdle took
        exposures.append(held)
    assert exposures[0] == pytest.approx(0.5, rel=1e-3) and exposures[3] == 0.0
    for taken, held in zip(rewards, exposures):
        assert taken == pytest.approx(-0.25 * held, abs=1e-5)


def test_the_hold_hurdle_turns_a_zero_mean_hold_into_a_cost_under_the_dsr():
    """The noise market's failure in miniature: under the DSR a position held on a driftless series
    earns ≈ 0 per bar, as flat does, so nothing tells the agent to leave. Charged, the held envs'
    mean reward falls by about the hurdle per bar (in the DSR's own units, whatever the position's
    size); the flat envs' rewards do not move."""
    n_envs, n_bars, k_steps = 2000, 400, 300
    generator = torch.Generator().manual_seed(7)
    close = (100 * torch.exp(torch.cumsum(torch.randn(n_bars, generator=generator) * 0.01, 0))).float()
    rewards = {}
    for hurdle in (0.0, 0.1):
        case = _case(n_envs=n_envs, k_steps=k_steps, n_bars=n_bars, warmup=16.0, kelly_cap=0.5, hold_hurdle=hurdle)
        case["close"], case["spread"] = close, torch.zeros(n_bars)
        case["isv"][ISV_RETURN_SCALE] = 0.01
        case["isv"][ISV_EPISODE_LENGTH] = 0.0
        case["ps"][:, PS_BAR_INDEX] = 0.0
        long_full = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
        hold = encode_joint_action(DIRECTION_HOLD, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
        case["actions"][:] = hold
        case["actions"][0, : n_envs // 2] = long_full  # half enter once and hold, half stay flat
        env_step_reference(**case)
        rewards[hurdle] = case["rewards"][16:]  # past the warm-up
    held, flat = slice(0, n_envs // 2), slice(n_envs // 2, n_envs)
    assert torch.equal(rewards[0.0][:, flat], rewards[0.1][:, flat])
    assert float(rewards[0.0][:, flat].abs().max()) == 0.0
    drop = float((rewards[0.0][:, held] - rewards[0.1][:, held]).mean())
    assert 0.05 < drop < 0.2  # ≈ the hurdle, per bar, in the DSR's own units


def _one_bar_at_a_time(case, plan):
    """Step one env through ``plan`` (joint actions), one launch per bar; the ps rows after each."""
    rows = [case["ps"][0].clone()]
    for action in plan:
        case["actions"][0, 0] = action
        env_step_reference(**case)
        rows.append(case["ps"][0].clone())
    return rows


def _round_trip_case(n_bars):
    case = _case(n_envs=1, k_steps=1, n_bars=n_bars, kelly_cap=1.0)
    case["close"] = torch.tensor([100.0 + 10.0 * i for i in range(n_bars)])  # rising: a long wins
    case["spread"] = torch.zeros(n_bars)
    case["ps"][0, PS_BAR_INDEX] = 0.0
    case["isv"][ISV_EPISODE_LENGTH] = 0.0
    return case


def test_a_position_scaled_out_in_steps_is_one_round_trip_for_kelly():
    # Before, each reduce counted as one trade at the full return since entry: scaling out of one
    # long in two steps made two "wins" (docs/results.md, session 19).
    case = _round_trip_case(6)
    long_full = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    long_quarter = encode_joint_action(DIRECTION_LONG, MAGNITUDE_QUARTER, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    flat = encode_joint_action(DIRECTION_FLAT, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    before, opened, reduced, closed = _one_bar_at_a_time(case, [long_full, long_quarter, flat])
    entry = float(opened[PS_ENTRY_PRICE])
    assert 0.0 < float(reduced[PS_POSITION]) < float(opened[PS_POSITION])  # the quarter reduces the long
    assert float(reduced[PS_ENTRY_PRICE]) == entry  # a reduce keeps the averaged entry
    assert float(opened[PS_TRIP_BASIS]) == pytest.approx(float(opened[PS_POSITION]) * entry, rel=1e-6)
    assert float(reduced[PS_TRIP_PNL]) > 0.0 and float(reduced[PS_KELLY_WINS]) == float(before[PS_KELLY_WINS])
    # One round trip recorded when the flat closes it: its P&L (both closes) over what it opened.
    slip = 1e-4  # market order, Normal urgency, no spread: fill = close × (1 ∓ slippage)
    units_1 = float(opened[PS_POSITION]) - float(reduced[PS_POSITION])
    units_2 = float(reduced[PS_POSITION])
    pnl = units_1 * (110.0 * (1 - slip) - entry) + units_2 * (120.0 * (1 - slip) - entry)
    trip_return = pnl / (float(opened[PS_POSITION]) * entry)
    assert float(closed[PS_KELLY_WINS]) == float(before[PS_KELLY_WINS]) + 1.0
    assert float(closed[PS_KELLY_LOSSES]) == float(before[PS_KELLY_LOSSES])
    assert float(closed[PS_KELLY_WIN_SUM] - before[PS_KELLY_WIN_SUM]) == pytest.approx(trip_return, rel=1e-4)
    assert float(closed[PS_KELLY_LOSS_SUM]) == float(before[PS_KELLY_LOSS_SUM])
    assert float(closed[PS_TRIP_PNL]) == 0.0 and float(closed[PS_TRIP_BASIS]) == 0.0  # flat: no trip open


def test_a_flip_ends_one_round_trip_and_opens_the_next():
    case = _round_trip_case(5)
    long_full = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    short_full = encode_joint_action(DIRECTION_SHORT, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    before, _, flipped, _ = _one_bar_at_a_time(case, [long_full, short_full, long_full])
    assert float(flipped[PS_KELLY_WINS]) == float(before[PS_KELLY_WINS]) + 1.0  # the long, won
    short_units = -float(flipped[PS_POSITION])
    assert short_units > 0.0 and float(flipped[PS_TRIP_PNL]) == 0.0
    assert float(flipped[PS_TRIP_BASIS]) == pytest.approx(short_units * float(flipped[PS_ENTRY_PRICE]), rel=1e-6)
    after = case["ps"][0]  # the short, flipped back to long as the price rose: a loss
    assert float(after[PS_KELLY_LOSSES]) == float(before[PS_KELLY_LOSSES]) + 1.0
    assert float(after[PS_KELLY_LOSS_SUM]) > float(before[PS_KELLY_LOSS_SUM])


def test_time_limits_truncate_and_ruin_terminates():
    # Pardo et al. 2018: the env must tell a time limit (bootstrap from the state reached) from a
    # terminal (nothing follows); before issue 9 every episode end was a terminal for the targets.
    case = _case(n_envs=3, k_steps=1, n_bars=10, episode_length=1.0, kelly_cap=1.0)
    case["ps"][:, PS_BAR_INDEX] = torch.tensor([2.0, 3.0, 8.0])  # env 2 reaches the data end (bar 9)
    case["actions"][0] = encode_joint_action(DIRECTION_LONG, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    env_step_reference(**case)
    assert case["dones"][0].tolist() == [1.0, 1.0, 1.0]  # every episode ended and restarted
    assert case["terminals"][0].tolist() == [0.0, 0.0, 0.0]  # none of them in ruin
    assert case["final_ps"][0, :, PS_BAR_INDEX].tolist() == [3.0, 4.0, 9.0]  # the bars reached
    assert case["final_ps"][0, :, PS_EPISODE_STEPS].tolist() == [1.0, 1.0, 1.0]  # before the restart
    assert case["ps"][:, PS_EPISODE_STEPS].tolist() == [0.0, 0.0, 0.0]  # after it
    reached_value = case["final_ps"][0, :, PS_PORTFOLIO_VALUE]
    assert bool((reached_value != case["ps"][:, PS_PORTFOLIO_VALUE]).all())  # the restart's cash is not it
    ruin = _case(n_envs=2, k_steps=2, n_bars=8, kelly_cap=1e6, ruin=True)  # short 10⁶× equity as the price doubles
    ruin["ps"][:, PS_BAR_INDEX] = 0.0
    ruin["actions"][:] = encode_joint_action(DIRECTION_SHORT, MAGNITUDE_FULL, ORDER_TYPE_MARKET, URGENCY_NORMAL)
    env_step_reference(**ruin)
    assert ruin["terminals"][0].tolist() == [1.0, 1.0] and ruin["dones"][0].tolist() == [1.0, 1.0]


def test_inconsistent_inputs_are_explained():
    case = _case(n_envs=4, k_steps=2, n_bars=10)
    case["actions"] = case["actions"][:, :3]
    with pytest.raises(ValueError, match=r"actions \(2, 3\) torch.int32 vs \[K, 4\] int32.*hint"):
        env_step(**case)


# -- a population: every agent's envs in one call -------------------------------------------------
def _population(cases: list[dict]) -> dict:
    """Agents' cases (same bars) stacked as a population's call: [P, …] state, seeds [P], shared bars."""
    stacked = {key: torch.stack([case[key] for case in cases]) for key in cases[0] if key not in ("close", "spread", "seed")}
    stacked["seed"] = torch.tensor([case["seed"] for case in cases], dtype=torch.int64)
    stacked["close"], stacked["spread"] = cases[0]["close"], cases[0]["spread"]
    return stacked


def _agent_cases(agents: int, **shape) -> list[dict]:
    """Agents on one market that differ in seed, envs' starts and actions, counter, Kelly cap and episode length."""
    cases = []
    for agent in range(agents):
        case = _case(seed=agent, kelly_cap=0.3 + 0.2 * agent, episode_length=4.0 * agent, **shape)
        case["close"], case["spread"] = _case(seed=0, **shape)["close"], _case(seed=0, **shape)["spread"]
        case["counter"] = new_counter("cpu", 12345 + 1000 * agent)
        cases.append(case)
    return cases


AGENT_CASES = {"one_env": {"n_envs": 1, "k_steps": 6, "n_bars": 64}, "rollover": {"n_envs": 257, "k_steps": 12, "n_bars": 9},
               "one_bar_steps": {"n_envs": 300, "k_steps": 1, "n_bars": 64}}  # fmt: skip


@pytest.mark.parametrize("name", sorted(AGENT_CASES))
def test_population_call_is_each_agent_alone_bitwise(name: str):
    cases = _agent_cases(3, **AGENT_CASES[name])
    together = _population(cases)
    env_step(**together)
    for agent, case in enumerate(cases):
        env_step(**case)
        for key in ("ps", "rewards", "dones", "obs_index", "terminals", "final_ps", "counter"):
            assert torch.equal(together[key][agent], case[key]), (agent, key)
    assert not torch.equal(together["ps"][0], together["ps"][1])  # the agents did differ


def test_population_inputs_that_disagree_are_explained():
    together = _population(_agent_cases(2, n_envs=4, k_steps=2, n_bars=10))
    together["seed"] = together["seed"][:1]
    with pytest.raises(ValueError, match=r"seed \(1,\) torch.int64 vs \[2\] int64 \(one per agent.*hint"):
        env_step(**together)
    together = _population(_agent_cases(2, n_envs=4, k_steps=2, n_bars=10))
    together["isv"] = together["isv"][0]
    with pytest.raises(ValueError, match=r"isv \(\d+,\) torch.float32 vs \[2, \d+\] float32.*hint"):
        env_step(**together)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(AGENT_CASES))
@pytest.mark.parametrize("agents", [1, 4])
def test_population_kernel_matches_reference_and_each_agents_launch(name: str, agents: int):
    cases = _agent_cases(agents, **AGENT_CASES[name])
    want = _population([_to(case, "cpu") for case in cases])
    env_step_reference(**want)
    got = _population([_to(case, "cuda") for case in cases])
    got["seed"] = got["seed"].cuda()
    env_step(**got)
    alone = [_to(case, "cuda") for case in cases]
    for case in alone:
        env_step(**case)  # the single run's kernel, one launch per agent
    torch.cuda.synchronize()
    for key in ("dones", "terminals", "obs_index", "rewards", "ps", "final_ps", "counter"):
        _compare(key, got[key], want[key])
        for agent, case in enumerate(alone):
            assert torch.equal(got[key][agent], case[key]), (agent, key)  # bitwise: the same kernel body
