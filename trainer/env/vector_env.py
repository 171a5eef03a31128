"""The vectorised trading environment: n_envs portfolios over one bar series, on the GPU or the CPU.

Why this shape: the learner acts for thousands of envs at once and the whole step is captured in a
CUDA graph, so every buffer (portfolio state ``ps``, rewards, dones, observation indices, the RNG
counter) is allocated once here and the step writes into it in place. ``step`` runs the
``env_step`` kernel on CUDA and its PyTorch reference on the CPU — same semantics.

Observations are *indices* (``obs_index``: the bar each env sits at), so the learner gathers the
feature rows it needs (``observe``) and the replay buffer stores a 4-byte index, not a feature row.

Terminal vs truncated (Pardo et al. 2018): an episode that ends at ruin is terminal (no value
follows); one that ends at the time limit or the data end is truncated — the env restarts, but the
value of the state the episode reached goes on, and the learner bootstraps from it. ``terminals``
tells the two apart, and ``final_bar_index`` / ``final_portfolio_inputs`` are that reached state
(before the restart) for every env, done or not (the kernel writes ``final_ps`` only for the bars
that end an episode, so a running env costs no extra memory traffic).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from trainer.isv import Isv
from trainer.layout import (
    ISV_EPISODE_LENGTH,
    ISV_INIT_CASH,
    ISV_KELLY_CAP,
    MAX_BARS_F32_EXACT,
    PORTFOLIO_INPUT_DSR_A,
    PORTFOLIO_INPUT_DSR_SIGMA,
    PORTFOLIO_INPUT_EPISODE_PROGRESS,
    PORTFOLIO_INPUT_KELLY_CAP,
    PORTFOLIO_INPUT_POSITION_FRACTION,
    PORTFOLIO_INPUT_STRIDE,
    PORTFOLIO_INPUT_UNREALIZED_RETURN,
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
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
    PS_STRIDE,
    RNG_STREAM_ENV_RESET,
)
from trainer.ops.adaptive_kelly_cap import write_kelly_prior
from trainer.ops.env_step import env_step
from trainer.ops.rng import draw_uniform, new_counter

KELLY_COLUMNS = [PS_KELLY_WINS, PS_KELLY_LOSSES, PS_KELLY_WIN_SUM, PS_KELLY_LOSS_SUM]


def _validate_market(close: torch.Tensor, spread: torch.Tensor, features: torch.Tensor | None) -> None:
    n_bars = close.shape[0]
    if close.dim() != 1 or n_bars < 2:
        raise ValueError(f"close must be a series of at least 2 bars ({tuple(close.shape)} vs [T ≥ 2]) — hint: load more data")
    if n_bars >= MAX_BARS_F32_EXACT:
        raise ValueError(
            f"too many bars for the f32 time cursor ({n_bars} vs < {MAX_BARS_F32_EXACT}) — hint: split the series into folds"
        )
    finite = torch.isfinite(close) & (close > 0)
    if not bool(finite.all()):
        bad = int((~finite).nonzero()[0, 0])
        raise ValueError(f"close must be finite and positive (bar {bad}: {float(close[bad])} vs > 0) — hint: clean the data")
    if spread.shape != close.shape:
        raise ValueError(f"spread shape {tuple(spread.shape)} vs close {tuple(close.shape)} — hint: one spread per bar")
    if not bool((torch.isfinite(spread) & (spread >= 0)).all()):
        raise ValueError("spread must be finite and ≥ 0 (found a negative or non-finite value vs ≥ 0) — hint: clean the data")
    if features is not None and (features.dim() != 2 or features.shape[0] != n_bars):
        raise ValueError(
            f"features shape {tuple(features.shape)} vs [{n_bars}, F] — hint: one feature row per bar"
        )


class VectorEnv:
    """``n_envs`` trading environments over ``close`` (and ``spread``, ``features``) on ``isv.device``."""

    def __init__(
        self,
        close: torch.Tensor,
        *,
        n_envs: int,
        isv: Isv,
        seed: int,
        spread: torch.Tensor | None = None,
        features: torch.Tensor | None = None,
        counter: torch.Tensor | None = None,
    ):
        if n_envs < 1:
            raise ValueError(f"n_envs must be positive ({n_envs} vs ≥ 1) — hint: set env.n_envs in the config")
        device = isv.device
        self.device = device
        self.isv = isv
        self.seed = int(seed)
        self.n_envs = n_envs
        self.close = torch.as_tensor(close, dtype=torch.float32).to(device).contiguous()  # [T]
        self.spread = (torch.zeros_like(self.close) if spread is None
                       else torch.as_tensor(spread, dtype=torch.float32).to(device).contiguous())  # fmt: skip
        self.features = None if features is None else torch.as_tensor(features, dtype=torch.float32).to(device)
        _validate_market(self.close, self.spread, self.features)
        self.n_bars = self.close.shape[0]
        self.ps = torch.zeros(n_envs, PS_STRIDE, dtype=torch.float32, device=device)
        self.counter = new_counter(device) if counter is None else counter
        self._outputs: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self._bootstrap: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.reset()

    # -- buffers -----------------------------------------------------------------------------
    def outputs(self, k_steps: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Preallocated (rewards f32 [K, n], dones f32 [K, n], obs_index i32 [K, n]) for K-bar steps."""
        buffers = self._outputs.get(k_steps)
        if buffers is None:
            shape = (k_steps, self.n_envs)
            buffers = (
                torch.zeros(shape, dtype=torch.float32, device=self.device),
                torch.zeros(shape, dtype=torch.float32, device=self.device),
                torch.zeros(shape, dtype=torch.int32, device=self.device),
            )
            self._outputs[k_steps] = buffers
        return buffers

    def bootstrap_outputs(self, k_steps: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """Preallocated (terminals f32 [K, n], final_ps f32 [K, n, PS_STRIDE]) for K-bar steps."""
        buffers = self._bootstrap.get(k_steps)
        if buffers is None:
            buffers = (
                torch.zeros(k_steps, self.n_envs, dtype=torch.float32, device=self.device),
                torch.zeros(k_steps, self.n_envs, PS_STRIDE, dtype=torch.float32, device=self.device),
            )
            self._bootstrap[k_steps] = buffers
        return buffers

    # -- lifecycle ---------------------------------------------------------------------------
    def reset(self, keep_kelly: bool = False) -> None:
        """Start a fresh episode in every env at a random bar; Kelly statistics back to their priors
        unless ``keep_kelly``. Pure tensor ops (no host reads): usable inside a captured graph."""
        cfg = self.isv.tensor.to(self.device)
        episode_length = cfg[ISV_EPISODE_LENGTH]
        max_start = torch.where(
            episode_length > 0,
            torch.clamp(self.n_bars - 1 - episode_length.to(torch.int64), min=0),
            torch.full_like(episode_length, self.n_bars - 2, dtype=torch.int64),
        )
        u_start = draw_uniform(self.seed, self.counter, RNG_STREAM_ENV_RESET, self.n_envs)  # [n]
        start = torch.minimum((u_start * (max_start + 1).to(torch.float32)).to(torch.int64), max_start)
        ps = self.ps
        kelly = ps[:, KELLY_COLUMNS].clone()  # [n, 4]
        ps.zero_()
        ps[:, PS_CASH] = cfg[ISV_INIT_CASH]
        ps[:, PS_PORTFOLIO_VALUE] = cfg[ISV_INIT_CASH]
        ps[:, PS_BAR_INDEX] = start.to(torch.float32)
        ps[:, PS_EPISODE_START] = start.to(torch.float32)
        if keep_kelly:
            ps[:, KELLY_COLUMNS] = kelly
        else:
            write_kelly_prior(ps, cfg)

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Apply joint actions (int32 [n] for one bar, or [K, n] for K bars with a fixed plan).

        Returns views of the preallocated (rewards, dones, obs_index) buffers, shaped like actions;
        finished episodes restart at a random bar (their obs_index is the new start). ``terminals``
        and the ``final_*`` observations of the last bar are read with the methods below.
        """
        single = actions.dim() == 1
        plan = actions.reshape(1, -1) if single else actions  # [K, n]
        if plan.dtype != torch.int32:
            raise ValueError(f"actions must be int32 joint indices ({plan.dtype} vs torch.int32) — hint: .to(torch.int32)")
        rewards, dones, obs_index = self.outputs(plan.shape[0])
        terminals, final_ps = self.bootstrap_outputs(plan.shape[0])
        env_step(self.ps, self.isv.tensor, plan, self.close, self.spread, self.counter, self.seed,
                 rewards, dones, obs_index, terminals, final_ps)  # fmt: skip
        if single:
            return rewards[0], dones[0], obs_index[0]
        return rewards, dones, obs_index

    # -- observations ------------------------------------------------------------------------
    def bar_index(self) -> torch.Tensor:
        """int64 [n]: the bar each env acts at next."""
        return self.ps[:, PS_BAR_INDEX].to(torch.int64)

    def observe(self, obs_index: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
        """Feature rows [n, F] at ``obs_index`` (default: each env's cursor), into ``out`` if given."""
        if self.features is None:
            raise ValueError("this env has no features (None vs [T, F]) — hint: pass features= to VectorEnv")
        index = self.bar_index() if obs_index is None else obs_index.to(torch.int64)
        if out is None:
            return self.features[index]
        return torch.index_select(self.features, 0, index, out=out)

    def terminals(self) -> torch.Tensor:
        """f32 [n]: 1 where the last one-bar step ended its episode in ruin (no bootstrap), else 0."""
        return self.bootstrap_outputs(1)[0][0]

    def reached_state(self) -> torch.Tensor:
        """ps rows [n, PS_STRIDE] of the state each env reached in the last one-bar step, before any
        restart: ``final_ps`` where the episode ended, the live row where it goes on."""
        _, dones, _ = self.outputs(1)
        return reached_state(dones[0], self.bootstrap_outputs(1)[1][0], self.ps)

    def final_bar_index(self) -> torch.Tensor:
        """int64 [n]: the bar each env reached in the last one-bar step, before any restart."""
        return self.reached_state()[:, PS_BAR_INDEX].to(torch.int64)

    def final_portfolio_inputs(self) -> torch.Tensor:
        """Portfolio inputs [n, PORTFOLIO_INPUT_STRIDE] of the state each env reached in the last
        one-bar step, before any restart (what a truncated episode bootstraps from)."""
        return self.portfolio_inputs(ps=self.reached_state())

    def portfolio_inputs(self, out: torch.Tensor | None = None, ps: torch.Tensor | None = None) -> torch.Tensor:
        """Portfolio inputs to the network [n, PORTFOLIO_INPUT_STRIDE] (named in trainer.layout), into ``out`` if given.

        ``ps``: the portfolio rows to describe (default: the envs' current state).
        """
        return portfolio_inputs(self.ps if ps is None else ps, self.close, self.isv.tensor.to(self.device), out)


class StackedEnvs:
    """A population's environments as one batch: every agent's ``VectorEnv`` state in [P, …] rows.

    ``ps`` [P, n, PS_STRIDE], the Philox counters [P, 1] and the one-bar outputs (rewards, dones,
    terminals, obs_index [P, 1, n]; final_ps [P, 1, n, PS_STRIDE]) are stacked, and each agent's env
    is re-pointed at its row (views: its checkpoints, resets, warm-up steps and validation read and
    write the stacked storage). The agents must trade one market (the same bars and spreads, which
    they then share): a population's data config is shared. The ops on the stacked rows
    (``bar_index``, ``portfolio_inputs``, ``reached_state``) are the single env's functions,
    broadcast over the agent dimension, and ``step`` is one env kernel over every agent's envs (its
    population form: each agent's envs on its ISV row, seed and counter).

    ``isv``: the population's ISV bus [P, ISV_STRIDE] (``Isv.stacked``), each env's ISV its row i."""

    def __init__(self, envs: Sequence[VectorEnv], isv: torch.Tensor) -> None:
        first = envs[0]
        for agent, env in enumerate(envs):
            if env.isv.tensor.data_ptr() != isv[agent].data_ptr():
                raise ValueError(
                    f"agent {agent}'s env reads another ISV than row {agent} of the population's bus (its own vs "
                    f"row {agent}) — hint: stack the agents' ISVs with Isv.stacked before their environments"
                )
        for agent, env in enumerate(envs):
            if env.n_envs != first.n_envs or not (torch.equal(env.close, first.close) and torch.equal(env.spread, first.spread)):
                raise ValueError(
                    f"agent {agent}'s environments differ from agent 0's ({env.n_envs} envs over {env.n_bars} bars vs "
                    f"{first.n_envs} over {first.n_bars}, or other prices) — hint: a population's agents share env.n_envs "
                    f"and the data config (only POPULATION_GRID_KEYS may vary)"
                )
        self.envs = list(envs)
        self.isv = isv  # [P, ISV_STRIDE]
        self.seeds = torch.tensor([env.seed for env in envs], dtype=torch.int64, device=first.device)  # [P]: Philox keys
        self.close, self.spread = first.close, first.spread  # [T], shared
        for env in envs:
            env.close, env.spread = first.close, first.spread  # one copy of the bars for every agent
        self.ps = adopt_rows([env.ps for env in envs], envs, "ps")  # [P, n, PS_STRIDE]
        self.counter = adopt_rows([env.counter for env in envs], envs, "counter")  # [P, 1]
        outputs = [torch.stack(parts) for parts in zip(*(env.outputs(1) for env in envs), strict=True)]
        bootstrap = [torch.stack(parts) for parts in zip(*(env.bootstrap_outputs(1) for env in envs), strict=True)]
        for agent, env in enumerate(envs):
            env._outputs[1] = tuple(rows[agent] for rows in outputs)  # type: ignore[assignment]
            env._bootstrap[1] = tuple(rows[agent] for rows in bootstrap)  # type: ignore[assignment]
        self.rewards, self.dones, self.obs_index = outputs  # [P, 1, n]
        self.terminals, self.final_ps = bootstrap  # [P, 1, n], [P, 1, n, PS_STRIDE]

    def step(self, actions: torch.Tensor) -> None:
        """Step every agent's envs one bar with its joint actions int32 [P, n] (its own ISV row, seed
        and counter; every counter += 1): one kernel launch for the population."""
        env_step(self.ps, self.isv, actions.unsqueeze(1), self.close, self.spread, self.counter, self.seeds,
                 self.rewards, self.dones, self.obs_index, self.terminals, self.final_ps)  # fmt: skip

    def bar_index(self) -> torch.Tensor:
        """int64 [P, n]: the bar each env acts at next."""
        return self.ps[..., PS_BAR_INDEX].to(torch.int64)

    def reached_state(self) -> torch.Tensor:
        """[P, n, PS_STRIDE]: the state each env reached in the last step, before any restart."""
        return reached_state(self.dones[:, 0], self.final_ps[:, 0], self.ps)

    def portfolio_inputs(self, isv: torch.Tensor, ps: torch.Tensor | None = None) -> torch.Tensor:
        """[P, n, PORTFOLIO_INPUT_STRIDE] of ``ps`` (default: the current state), ``isv`` [P, ISV_STRIDE]
        the agents' ISV rows."""
        return portfolio_inputs(self.ps if ps is None else ps, self.close, isv.unsqueeze(1))


def adopt_rows(tensors: Sequence[torch.Tensor], owners: Sequence[object], attribute: str) -> torch.Tensor:
    """Stack ``tensors`` into [P, …] and point each owner's ``attribute`` at its row (a view): how a
    population takes over its agents' buffers, so their own code keeps working on the stacked storage."""
    rows = torch.stack(list(tensors))
    for agent, owner in enumerate(owners):
        setattr(owner, attribute, rows[agent])
    return rows


def reached_state(dones: torch.Tensor, final_ps: torch.Tensor, ps: torch.Tensor) -> torch.Tensor:
    """The state each env reached in its last one-bar step, before any restart: ``final_ps`` rows
    where ``dones`` says the episode ended, the live ``ps`` row where it goes on.

    Shapes [*agents, n] and [*agents, n, PS_STRIDE]: one env batch, or a population's [P, n, …]
    (``trainer.train.population`` steps every agent's envs with the same function)."""
    return torch.where(dones.unsqueeze(-1) > 0, final_ps, ps)


#: Portfolio inputs whose sign flips in the mirrored market (replay.mirror): the position's
#: direction. Its unrealised return is signed by the position (a winning short is positive), the
#: DSR statistics are of the portfolio's own returns: the mirror leaves them as they are.
PORTFOLIO_MIRROR_ODD: tuple[str, ...] = ("POSITION_FRACTION",)


def portfolio_inputs(ps: torch.Tensor, close: torch.Tensor, cfg: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Portfolio inputs to the network [*agents, n, PORTFOLIO_INPUT_STRIDE] of the portfolio rows
    ``ps`` [*agents, n, PS_STRIDE] over the bars ``close`` [T], into ``out`` if given.

    ``cfg`` is the ISV: [ISV_STRIDE] for one env batch; a population passes its [P, 1, ISV_STRIDE]
    rows, so ``cfg[..., slot]`` is one value per agent that broadcasts over its envs (the same ops,
    element for element, as each agent alone).
    """
    price = close[ps[..., PS_BAR_INDEX].to(torch.int64)]  # [*agents, n]
    position, entry = ps[..., PS_POSITION], ps[..., PS_ENTRY_PRICE]
    if out is None:
        out = torch.empty(*ps.shape[:-1], PORTFOLIO_INPUT_STRIDE, dtype=torch.float32, device=ps.device)
    out[..., PORTFOLIO_INPUT_POSITION_FRACTION] = position * price / ps[..., PS_PORTFOLIO_VALUE]
    unrealized = torch.where(entry > 0, (price / torch.where(entry > 0, entry, price) - 1.0) * torch.sign(position),
                             torch.zeros_like(price))  # fmt: skip
    out[..., PORTFOLIO_INPUT_UNREALIZED_RETURN] = unrealized
    out[..., PORTFOLIO_INPUT_DSR_A] = ps[..., PS_DSR_A]
    out[..., PORTFOLIO_INPUT_DSR_SIGMA] = torch.sqrt(torch.clamp(ps[..., PS_DSR_B] - ps[..., PS_DSR_A] ** 2, min=0.0))
    length = cfg[..., ISV_EPISODE_LENGTH]
    progress = ps[..., PS_EPISODE_STEPS] / torch.clamp(length, min=1.0)
    out[..., PORTFOLIO_INPUT_EPISODE_PROGRESS] = torch.where(length > 0, progress, torch.zeros_like(progress))
    out[..., PORTFOLIO_INPUT_KELLY_CAP] = cfg[..., ISV_KELLY_CAP]
    return out
