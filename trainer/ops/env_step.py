"""env_step: advance every trading environment by K bars — CuPy kernel (cuda/env_step.cu) + PyTorch reference.

Both have the same signature and semantics (the reference mirrors the kernel operation for
operation, in f32, so parity holds to rounding); the CPU backend runs the reference. Inputs and
outputs are preallocated tensors so a captured CUDA graph can replay the step with no allocation
and no host read. The counter advances by K in place: replays never repeat random numbers.

Physics (see docs/trainer-env.md): target position from the joint action, the magnitude fraction
times the ISV Kelly cap; fills at close moved against the trader (market: half spread + slippage × impact per
urgency; limit: earns a share of the half spread and fills with a probability per urgency);
fee = fee_rate × |units| × fill; equity = cash + position × close (trainer.env.accounting); reward
(ISV REWARD_MODE) = differential Sharpe ratio of the per-bar net return with warm-up and variance
floor, or that net return ÷ RETURN_SCALE (the training bars' return std); either is clipped and
computed from the return less HOLD_HURDLE × RETURN_SCALE × the exposure held over the bar (the
EMAs keep the true return). Episodes end at the data end, at the time limit or at ruin; only ruin is a terminal
(``terminals``), and ``final_ps`` keeps, for the bars that end an episode, the state it reached
before the restart — what a truncated episode bootstraps from (Pardo et al. 2018); its other rows
are left as they were.
"""

from __future__ import annotations

import numpy as np
import torch

from trainer.layout import (
    DIRECTION_FLAT,
    DIRECTION_HOLD,
    DIRECTION_LONG,
    ISV_DSR_CLIP,
    ISV_DSR_ETA,
    ISV_DSR_VARIANCE_FLOOR,
    ISV_DSR_WARMUP_BARS,
    ISV_EPISODE_LENGTH,
    ISV_FEE_RATE,
    ISV_HOLD_HURDLE,
    ISV_INIT_CASH,
    ISV_KELLY_CAP,
    ISV_LIMIT_FILL_PROB,
    ISV_LIMIT_FILL_PROB_WIDTH,
    ISV_LIMIT_SPREAD_CAPTURE,
    ISV_LIMIT_SPREAD_CAPTURE_WIDTH,
    ISV_MARKET_IMPACT,
    ISV_MARKET_IMPACT_WIDTH,
    ISV_RETURN_SCALE,
    ISV_REWARD_MODE,
    ISV_SLIPPAGE,
    ISV_STRIDE,
    MAGNITUDE_FRACTIONS,
    ORDER_TYPE_LIMIT,
    PS_BAR_INDEX,
    PS_CASH,
    PS_DSR_A,
    PS_DSR_B,
    PS_ENTRY_PRICE,
    PS_EPISODE_START,
    PS_EPISODE_STEPS,
    PS_KELLY_LOSS_SUM,
    PS_KELLY_LOSSES,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_LAST_COST,
    PS_LAST_RETURN,
    PS_LAST_REWARD,
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
    PS_STRIDE,
    PS_TRADE_COUNT,
    PS_TRIP_BASIS,
    PS_TRIP_PNL,
    RNG_STREAM_ENV,
    decode_joint_action,
)
from trainer.ops import loader
from trainer.ops.rng import philox_words, words_to_uniform

OP = "env_step"
AGENTS_KERNEL = "env_step_agents"


def _check_inputs(ps, isv, actions, close, spread, counter, seed, rewards, dones, obs_index, terminals, final_ps) -> None:
    """Shape/dtype/device checks on host metadata only (no device reads: capture-safe). One env
    batch, or a population's (every tensor but close and spread with a leading agent dimension,
    ``seed`` an int64 [agents] tensor)."""
    problems = []
    agents = (ps.shape[0],) if isinstance(seed, torch.Tensor) and ps.dim() == 3 else ()
    lead = "".join(f"{extent}, " for extent in agents)
    if ps.dim() != 2 + len(agents) or ps.shape[-1] != PS_STRIDE or ps.dtype != torch.float32:
        problems.append(f"ps {tuple(ps.shape)} {ps.dtype} vs [{lead}n_envs, {PS_STRIDE}] float32")
    n_envs = ps.shape[-2] if ps.dim() >= 2 else -1
    if isv.shape != (*agents, ISV_STRIDE) or isv.dtype != torch.float32:
        problems.append(f"isv {tuple(isv.shape)} {isv.dtype} vs [{lead}{ISV_STRIDE}] float32")
    if actions.dim() != 2 + len(agents) or actions.shape[-1] != n_envs or actions.shape[:-2] != agents or actions.dtype != torch.int32:
        problems.append(f"actions {tuple(actions.shape)} {actions.dtype} vs [{lead}K, {n_envs}] int32")
    if close.dim() != 1 or close.shape[0] < 2 or close.dtype != torch.float32:
        problems.append(f"close {tuple(close.shape)} {close.dtype} vs [n_bars ≥ 2] float32")
    if spread.shape != close.shape or spread.dtype != torch.float32:
        problems.append(f"spread {tuple(spread.shape)} {spread.dtype} vs {tuple(close.shape)} float32")
    if counter.shape != (*agents, 1) or counter.dtype != torch.int64:
        problems.append(f"counter {tuple(counter.shape)} {counter.dtype} vs [{lead}1] int64")
    if isinstance(seed, torch.Tensor) and (seed.shape != agents or seed.dtype != torch.int64):
        problems.append(f"seed {tuple(seed.shape)} {seed.dtype} vs [{lead.rstrip(', ')}] int64 (one per agent, with ps [agents, n_envs, …])")
    for name, tensor, dtype in (("rewards", rewards, torch.float32), ("dones", dones, torch.float32),
                                ("obs_index", obs_index, torch.int32)):  # fmt: skip
        if tensor.shape != actions.shape or tensor.dtype != dtype:
            problems.append(f"{name} {tuple(tensor.shape)} {tensor.dtype} vs {tuple(actions.shape)} {dtype}")
    if terminals.shape != actions.shape or terminals.dtype != torch.float32:
        problems.append(f"terminals {tuple(terminals.shape)} {terminals.dtype} vs {tuple(actions.shape)} float32")
    if final_ps.shape != (*actions.shape, PS_STRIDE) or final_ps.dtype != torch.float32:
        problems.append(f"final_ps {tuple(final_ps.shape)} {final_ps.dtype} vs {(*actions.shape, PS_STRIDE)} float32")
    devices = {t.device for t in (ps, actions, close, spread, counter, rewards, dones, obs_index, terminals, final_ps)}
    if len(devices) != 1:
        problems.append(f"tensors on {sorted(map(str, devices))} vs one device")
    if problems:
        raise ValueError("env_step inputs are inconsistent (" + "; ".join(problems) + ") — hint: build them "
                         "with trainer.env.VectorEnv (or StackedEnvs for a population), which allocates every "
                         "buffer with the right shape")  # fmt: skip


def env_step(
    ps: torch.Tensor,
    isv: torch.Tensor,
    actions: torch.Tensor,
    close: torch.Tensor,
    spread: torch.Tensor,
    counter: torch.Tensor,
    seed: int | torch.Tensor,
    rewards: torch.Tensor,
    dones: torch.Tensor,
    obs_index: torch.Tensor,
    terminals: torch.Tensor,
    final_ps: torch.Tensor,
) -> None:
    """Step every env K = actions.shape[-2] bars; writes ps, rewards, dones, obs_index, terminals and
    final_ps in place; counter += K.

    A population (one launch for every agent's envs): ``seed`` int64 [P] (each agent's key), ps
    [P, n_envs, PS_STRIDE], isv [P, ISV_STRIDE], actions and the outputs [P, K, n_envs], final_ps
    [P, K, n_envs, PS_STRIDE], counter [P, 1]; close and spread shared. Agent p's rows are exactly
    what its own call gives."""
    _check_inputs(ps, isv, actions, close, spread, counter, seed, rewards, dones, obs_index, terminals, final_ps)
    if not ps.is_cuda:
        env_step_reference(ps, isv, actions, close, spread, counter, seed, rewards, dones, obs_index, terminals, final_ps)
        return
    n_envs, k_steps = ps.shape[-2], actions.shape[-2]
    agents = isinstance(seed, torch.Tensor)
    if agents:
        kernel = loader.load_kernel(OP, AGENTS_KERNEL, ps.device)
    else:
        kernel = loader.load_kernel(OP, OP, ps.device)
    seed_arg = loader.pointer(seed) if agents else np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    args = (
        loader.pointer(ps), loader.pointer(isv), loader.pointer(actions), loader.pointer(close),
        loader.pointer(spread), loader.pointer(counter), seed_arg,
        np.int32(n_envs), np.int32(close.shape[0]), np.int32(k_steps),
        loader.pointer(rewards), loader.pointer(dones), loader.pointer(obs_index), loader.pointer(terminals),
        loader.pointer(final_ps),
    )  # fmt: skip
    loader.launch(kernel, n_envs, args, ps.device, agents=ps.shape[0] if agents else 1)
    counter.add_(k_steps)


def _per_urgency(values: torch.Tensor, urgency: torch.Tensor) -> torch.Tensor:
    """values[urgency]: one cost parameter per urgency [U] indexed by [n] (one env batch), or a
    population's [P, 1, U] per agent indexed by its envs' [P, n]."""
    if values.dim() == 1:
        return values[urgency]
    return torch.take_along_dim(values, urgency.unsqueeze(-1), dim=-1).squeeze(-1)


def env_step_reference(
    ps: torch.Tensor,
    isv: torch.Tensor,
    actions: torch.Tensor,
    close: torch.Tensor,
    spread: torch.Tensor,
    counter: torch.Tensor,
    seed: int | torch.Tensor,
    rewards: torch.Tensor,
    dones: torch.Tensor,
    obs_index: torch.Tensor,
    terminals: torch.Tensor,
    final_ps: torch.Tensor,
) -> None:
    """Vectorised PyTorch twin of the kernel (whole batches, a loop over the K bars only).

    A population (``seed`` an int64 [P] tensor, every state tensor with a leading agent dimension)
    runs the same ops on [P, n] tensors: each agent's ISV values broadcast over its envs as [P, 1]
    (``cfg`` [P, 1, ISV_STRIDE]), its seed and counter key its draws, env ids count within the agent."""
    device = ps.device
    n_envs, k_steps = ps.shape[-2], actions.shape[-2]
    n_bars = close.shape[0]
    if isinstance(seed, torch.Tensor):
        cfg = isv.unsqueeze(-2)  # [P, 1, ISV_STRIDE]
        seed = seed.view(-1, 1)  # [P, 1]: one Philox key per agent
    else:
        cfg = isv.to(device)
    zero = torch.zeros((), dtype=torch.float32, device=device)
    one = torch.ones((), dtype=torch.float32, device=device)
    kelly_cap = torch.clamp(cfg[..., ISV_KELLY_CAP], min=0.0)
    fee_rate, slippage = cfg[..., ISV_FEE_RATE], cfg[..., ISV_SLIPPAGE]
    eta, warmup = cfg[..., ISV_DSR_ETA], cfg[..., ISV_DSR_WARMUP_BARS]
    var_floor, clip = cfg[..., ISV_DSR_VARIANCE_FLOOR], cfg[..., ISV_DSR_CLIP]
    return_reward, return_scale = cfg[..., ISV_REWARD_MODE] != 0, cfg[..., ISV_RETURN_SCALE]
    hold_hurdle = cfg[..., ISV_HOLD_HURDLE]
    init_cash, episode_length = cfg[..., ISV_INIT_CASH], cfg[..., ISV_EPISODE_LENGTH]
    has_length = episode_length > 0
    max_start = torch.where(
        has_length, torch.clamp(n_bars - 1 - episode_length.to(torch.int64), min=0), torch.full_like(
            episode_length, n_bars - 2, dtype=torch.int64)
    )  # fmt: skip
    fill_prob = cfg[..., ISV_LIMIT_FILL_PROB : ISV_LIMIT_FILL_PROB + ISV_LIMIT_FILL_PROB_WIDTH]  # per urgency
    capture = cfg[..., ISV_LIMIT_SPREAD_CAPTURE : ISV_LIMIT_SPREAD_CAPTURE + ISV_LIMIT_SPREAD_CAPTURE_WIDTH]
    impact = cfg[..., ISV_MARKET_IMPACT : ISV_MARKET_IMPACT + ISV_MARKET_IMPACT_WIDTH]
    magnitude_fraction = torch.tensor(MAGNITUDE_FRACTIONS, dtype=torch.float32, device=device)
    env_ids = torch.arange(n_envs, dtype=torch.int64, device=device)

    pos, cash, pv = ps[..., PS_POSITION].clone(), ps[..., PS_CASH].clone(), ps[..., PS_PORTFOLIO_VALUE].clone()
    entry, dsr_a, dsr_b = ps[..., PS_ENTRY_PRICE].clone(), ps[..., PS_DSR_A].clone(), ps[..., PS_DSR_B].clone()
    trip_pnl, trip_basis = ps[..., PS_TRIP_PNL].clone(), ps[..., PS_TRIP_BASIS].clone()
    wins, losses = ps[..., PS_KELLY_WINS].clone(), ps[..., PS_KELLY_LOSSES].clone()
    win_sum, loss_sum = ps[..., PS_KELLY_WIN_SUM].clone(), ps[..., PS_KELLY_LOSS_SUM].clone()
    bar, episode_start, steps = ps[..., PS_BAR_INDEX].clone(), ps[..., PS_EPISODE_START].clone(), ps[..., PS_EPISODE_STEPS].clone()
    last_reward, last_return = ps[..., PS_LAST_REWARD].clone(), ps[..., PS_LAST_RETURN].clone()
    last_cost, trades = ps[..., PS_LAST_COST].clone(), ps[..., PS_TRADE_COUNT].clone()

    for k in range(k_steps):
        t = bar.to(torch.int64)  # [n]
        direction, magnitude, order_type, urgency = decode_joint_action(actions[..., k, :].to(torch.int64))
        price = close[t]
        half_spread = 0.5 * spread[t] / price
        units = magnitude_fraction[magnitude] * kelly_cap * pv / price
        target = torch.where(direction == DIRECTION_LONG, units, -units)
        target = torch.where(direction == DIRECTION_FLAT, zero, target)
        target = torch.where(direction == DIRECTION_HOLD, pos, target)
        delta = target - pos

        words = philox_words(seed, counter + k, RNG_STREAM_ENV, env_ids)  # [n, 4]
        u_fill, u_start, _, _ = words_to_uniform(words).unbind(dim=-1)  # words w0, w1 as in the kernel
        is_limit = order_type == ORDER_TYPE_LIMIT
        unfilled = is_limit & ~(u_fill < _per_urgency(fill_prob, urgency))
        delta = torch.where(unfilled, zero, delta)
        slip = torch.where(is_limit, -half_spread * _per_urgency(capture, urgency), half_spread + slippage * _per_urgency(impact, urgency))
        side = torch.where(delta > 0, one, -one)
        fill = price * (1.0 + side * slip)
        traded = delta.abs()
        fee = fee_rate * traded * fill
        cash = cash - delta * fill - fee
        last_cost = delta * (fill - price) + fee

        # Round trips, each counted once when the fill that closes the position records it (kernel).
        closing = (delta != 0) & (pos != 0) & ((delta > 0) != (pos > 0)) & (entry > 0)
        closed = torch.minimum(traded, pos.abs())
        trip_pnl = torch.where(closing, trip_pnl + closed * torch.where(pos > 0, fill - entry, entry - fill), trip_pnl)
        trip_ends = closing & (closed == pos.abs()) & (trip_basis > 0)
        trade_return = trip_pnl / trip_basis  # read only where trip_ends (trip_basis > 0)
        won, lost = trip_ends & (trade_return > 0), trip_ends & ~(trade_return > 0)
        wins = torch.where(won, wins + 1.0, wins)
        win_sum = torch.where(won, win_sum + trade_return, win_sum)
        losses = torch.where(lost, losses + 1.0, losses)
        loss_sum = torch.where(lost, loss_sum - trade_return, loss_sum)
        new_pos = pos + delta
        averaged = (entry * pos.abs() + fill * traded) / new_pos.abs()
        grows = new_pos.abs() > pos.abs()
        opens = (pos == 0) | ((new_pos > 0) != (pos > 0))
        entry = torch.where(grows, averaged, entry)
        trip_basis = torch.where(grows, trip_basis + traded * fill, trip_basis)
        entry = torch.where(opens, fill, entry)
        trip_pnl = torch.where(opens, zero, trip_pnl)
        trip_basis = torch.where(opens, new_pos.abs() * fill, trip_basis)
        flat = new_pos == 0
        entry = torch.where(flat, zero, entry)
        trip_pnl = torch.where(flat, zero, trip_pnl)
        trip_basis = torch.where(flat, zero, trip_basis)
        trades = torch.where(delta != 0, trades + 1.0, trades)

        t_next = t + 1
        pv_next = cash + new_pos * close[t_next]
        ret = pv_next / pv - 1.0
        charged = ret - hold_hurdle * return_scale * (new_pos.abs() * price / pv)  # the reward's return (kernel)
        delta_a = ret - dsr_a
        delta_b = ret * ret - dsr_b
        variance = torch.maximum(dsr_b - dsr_a * dsr_a, var_floor)
        dsr = (dsr_b * (charged - dsr_a) - 0.5 * dsr_a * (charged * charged - dsr_b)) / (variance * torch.sqrt(variance))
        steps = steps + 1.0
        raw = torch.where(return_reward, charged / return_scale, dsr)
        warming = ~return_reward & (steps <= warmup)  # only the DSR's EMAs need a warm-up
        reward = torch.where(warming, zero, torch.minimum(torch.maximum(raw, -clip), clip))
        dsr_a = dsr_a + eta * delta_a
        dsr_b = dsr_b + eta * delta_b
        last_reward, last_return = reward, ret
        bar = t_next.to(torch.float32)
        reached = {
            PS_POSITION: new_pos, PS_CASH: cash, PS_PORTFOLIO_VALUE: pv_next, PS_ENTRY_PRICE: entry,
            PS_TRIP_PNL: trip_pnl, PS_TRIP_BASIS: trip_basis, PS_DSR_A: dsr_a, PS_DSR_B: dsr_b, PS_KELLY_WINS: wins, PS_KELLY_LOSSES: losses,
            PS_KELLY_WIN_SUM: win_sum, PS_KELLY_LOSS_SUM: loss_sum, PS_BAR_INDEX: bar,
            PS_EPISODE_START: episode_start, PS_EPISODE_STEPS: steps, PS_LAST_REWARD: last_reward,
            PS_LAST_RETURN: last_return, PS_LAST_COST: last_cost, PS_TRADE_COUNT: trades,
        }  # fmt: skip
        terminal = ~(pv_next > 0)  # ruin: nothing follows
        done = terminal | (t_next >= n_bars - 1) | (has_length & (steps >= episode_length))
        for column, values in reached.items():  # the state an ended episode reached (bootstrap source)
            final_ps[..., k, :, column] = torch.where(done, values, final_ps[..., k, :, column])
        rewards[..., k, :] = reward
        dones[..., k, :] = done.to(torch.float32)
        terminals[..., k, :] = terminal.to(torch.float32)
        start = torch.minimum((u_start * (max_start + 1).to(torch.float32)).to(torch.int64), max_start)
        start_f = start.to(torch.float32)
        pos = torch.where(done, zero, new_pos)
        cash = torch.where(done, init_cash, cash)
        pv = torch.where(done, init_cash, pv_next)
        entry = torch.where(done, zero, entry)
        trip_pnl = torch.where(done, zero, trip_pnl)
        trip_basis = torch.where(done, zero, trip_basis)
        dsr_a = torch.where(done, zero, dsr_a)
        dsr_b = torch.where(done, zero, dsr_b)
        steps = torch.where(done, zero, steps)
        trades = torch.where(done, zero, trades)
        bar = torch.where(done, start_f, bar)
        episode_start = torch.where(done, start_f, episode_start)
        obs_index[..., k, :] = bar.to(torch.int32)

    columns = {
        PS_POSITION: pos, PS_CASH: cash, PS_PORTFOLIO_VALUE: pv, PS_ENTRY_PRICE: entry,
        PS_TRIP_PNL: trip_pnl, PS_TRIP_BASIS: trip_basis, PS_DSR_A: dsr_a, PS_DSR_B: dsr_b, PS_KELLY_WINS: wins, PS_KELLY_LOSSES: losses,
        PS_KELLY_WIN_SUM: win_sum, PS_KELLY_LOSS_SUM: loss_sum, PS_BAR_INDEX: bar,
        PS_EPISODE_START: episode_start, PS_EPISODE_STEPS: steps, PS_LAST_REWARD: last_reward,
        PS_LAST_RETURN: last_return, PS_LAST_COST: last_cost, PS_TRADE_COUNT: trades,
    }  # fmt: skip
    for column, values in columns.items():
        ps[..., column] = values
    counter.add_(k_steps)
