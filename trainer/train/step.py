"""One training step — act, step the environments, store, sample, learn — and every tensor it owns.

Why one object: the step is captured once in a CUDA graph and replayed, so every tensor it reads
or writes must exist before capture and stay at the same address (``TrainerState`` owns them and
``named_tensors`` lists every one of them for checkpoints and the StateResetRegistry). Everything
adaptive is read from the ISV on the device (ε, τ, γ per branch, the atom support, CQL α);
everything random comes from the counter-based Philox RNG whose counter the step advances in
place, so graph replays never repeat numbers. Nothing in the step reads a device value on
the host: no ``.item()``, no Python branch on a tensor, so the same code runs eagerly on the CPU,
eagerly on CUDA, and captured on CUDA.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Protocol

import torch

from trainer.config import ReplayConfig, TrainConfig
from trainer.env.vector_env import VectorEnv
from trainer.isv import Isv
from trainer.layout import (
    BRANCH_SIZES,
    FEATURE_LINEAR_FORECAST,
    ISV_ATOM_CENTRE,
    ISV_ATOM_HALF_WIDTH,
    ISV_CQL_ALPHA,
    ISV_EPSILON,
    ISV_GAMMA,
    ISV_STRIDE,
    ISV_TAU,
    JOINT_STRIDES,
    METRIC_STRIDE,
    METRICS,
    N_BRANCHES,
    PORTFOLIO_INPUT_STRIDE,
    REWARD_MODES,
    RNG_STREAM_AUGMENT,
    RNG_STREAM_EXPLORE,
    RNG_STREAM_IQN_TAU,
    RNG_STREAM_REPLAY,
)
from trainer.losses.c51 import (
    C51Terms,
    atom_support,
    branching_c51_loss,
    expected_values,
    greedy_one_hot,
    n_step_returns,
    one_hot,
)
from trainer.losses.cql import CQLTerms, branching_cql_loss
from trainer.losses.iqn import IQNTerms, branching_iqn_loss
from trainer.markers import hot_path
from trainer.model.network import (
    BranchingDistributionalNet,
    NetworkShape,
    greedy_actions,
)
from trainer.ops.adaptive_machinery import AdaptiveMachinery, AdaptiveParams
from trainer.ops.rng import gaussian_from_uniform
from trainer.ops.rng_uniform import rng_uniform
from trainer.train.flat_margin import greedy_with_margin
from trainer.train.mirror import (
    direction_swap,
    feature_signs,
    mirror_averaged_values,
    mirror_batch,
    mirror_coins,
    portfolio_signs,
)
from trainer.train.replay import NStepWindow, ReplayBuffer, Transitions

N_SUB_ACTIONS = sum(BRANCH_SIZES)


class NetworkLike(Protocol):
    """What the update's losses read of a network: a ``BranchingDistributionalNet``, or the
    population's functional view of one agent's rows of the stacked parameters."""

    action_mask: torch.Tensor  # [D, A_max] bool

    def __call__(self, window: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor: ...

    def embed(self, window: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor: ...

    def distributions(self, embedding: torch.Tensor) -> torch.Tensor: ...

    def quantiles(self, embedding: torch.Tensor, taus: torch.Tensor) -> torch.Tensor: ...

    def predicted_return(self, embedding: torch.Tensor) -> torch.Tensor: ...


def isv_supports(isv: torch.Tensor, n_atoms: int) -> torch.Tensor:
    """C51 support per branch [N_BRANCHES, N] from an ISV's atom centre and half-width slots."""
    centre = isv[ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES]  # [D]
    half_width = isv[ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES]  # [D]
    return atom_support(centre, half_width, n_atoms)


def network_shape(config: TrainConfig, n_features: int) -> NetworkShape:
    model = config.model
    return NetworkShape(
        n_features=n_features,
        n_portfolio=PORTFOLIO_INPUT_STRIDE,
        branch_sizes=BRANCH_SIZES,
        window=model.window,
        temporal_encoder=model.temporal_encoder,
        scan_channels=model.scan_channels,
        scan_state=model.scan_state,
        hidden=model.hidden,
        trunk_layers=model.trunk_layers,
        head_hidden=model.head_hidden,
        n_atoms=model.n_atoms,
        iqn_embedding=model.iqn_embedding,
    )


@dataclass(frozen=True)
class MarketWindow:
    """The bars the environments trade: env bar t is global feature row ``offset + t``."""

    close: torch.Tensor  # [T_env] f32
    spread: torch.Tensor  # [T_env] f32
    features: torch.Tensor  # [T_all, F] f32, the whole feature tensor (history for the K-bar window)
    offset: int  # global row of env bar 0 (≥ window − 1 so every window has real history)

    def without_drift(self) -> MarketWindow:
        """These bars with their mean one-bar log return μ taken out of every price: close and spread
        × exp(−μ·t), so bar t's log return is its own less μ and the last close equals the first.

        Why (``env.detrend``): a policy that holds one direction earns the training window's drift,
        which a market need not repeat out of sample (on the suite's regime and noise markets the
        agents that failed had learned it, docs/results.md §0). Without it the envs pay only for
        the timing of the returns; validation and test still trade the real prices. The features
        are untouched: they are what the agent sees, not what it is paid."""
        log_close = torch.log(self.close.double())  # [T_env]
        steps = torch.arange(log_close.shape[0], dtype=torch.float64, device=log_close.device)
        drift = (log_close[-1] - log_close[0]) / max(log_close.shape[0] - 1, 1)
        factor = torch.exp(-drift * steps)
        return replace(self, close=(self.close.double() * factor).to(self.close.dtype),
                                   spread=(self.spread.double() * factor).to(self.spread.dtype))  # fmt: skip


RETURN_TARGET_CLIP = 5.0  # |next return| bound of the auxiliary target, in training volatilities


def return_scale(close: torch.Tensor) -> torch.Tensor:
    """[T] close → the std of its one-bar log returns (f64 scalar; 1 where it is 0 or undefined):
    the unit of the return head's target and of the ``env.reward = "return"`` reward."""
    log_returns = torch.diff(torch.log(close.double()))  # [T − 1]
    scale = log_returns.std() if log_returns.numel() > 1 else torch.ones((), dtype=torch.float64, device=close.device)
    return torch.where(scale > 0, scale, torch.ones_like(scale))


def next_return_targets(close: torch.Tensor) -> torch.Tensor:
    """[T] close → [T] the auxiliary regression target of each env bar: log(close[t+1]/close[t])
    divided by the std of the window's 1-bar log returns, clipped to ±RETURN_TARGET_CLIP; the last
    bar (no next close in the window) is 0.

    Why this scale: the return head's squared error then starts near 1 whatever the market's
    volatility, so ``loss.return_weight`` means the same on every market. Why only the window's
    bars: the training window is all the step may see (the splits' embargo holds the rest back).
    """
    log_returns = torch.diff(torch.log(close.double()))  # [T − 1]
    scale = return_scale(close)
    target = torch.zeros(close.shape[0], dtype=torch.float64, device=close.device)
    target[:-1] = (log_returns / scale).clamp(-RETURN_TARGET_CLIP, RETURN_TARGET_CLIP)
    return target.to(torch.float32)


class TrainerState:
    """Every piece of training state, on one device."""

    def __init__(self, config: TrainConfig, market: MarketWindow, device: torch.device) -> None:
        if config.env.detrend:
            market = market.without_drift()
        self.config = config
        self.device = device
        self.seed = config.run.seed
        torch.manual_seed(config.run.seed)  # network initialisation only; the step uses Philox
        self.isv = Isv(
            device,
            config={
                "FEE_RATE": config.env.fee_rate,
                "SLIPPAGE": config.env.slippage,
                "INIT_CASH": config.env.init_cash,
                "EPISODE_LENGTH": float(config.env.episode_length),
                "DSR_ETA": config.env.dsr_eta,
                "MARKET_IMPACT": config.env.market_impact,
                "LIMIT_FILL_PROB": config.env.limit_fill_prob,
                "LIMIT_SPREAD_CAPTURE": config.env.limit_spread_capture,
                "DSR_WARMUP_BARS": config.env.dsr_warmup_bars,
                "DSR_VARIANCE_FLOOR": config.env.dsr_variance_floor,
                "DSR_CLIP": config.env.dsr_clip,
                "REWARD_MODE": float(REWARD_MODES.index(config.env.reward)),
                "RETURN_SCALE": float(return_scale(market.close)),
                "HOLD_HURDLE": config.env.hold_hurdle,
                "CQL_ALPHA": config.loss.cql_alpha,
            },
        )
        self.counter = torch.zeros(1, dtype=torch.int64, device=device)  # Philox counter of the step
        self.features = market.features.to(device=device, dtype=torch.float32).contiguous()  # [T_all, F]
        self.feature_offset = market.offset
        self.next_return = next_return_targets(market.close.to(device=device, dtype=torch.float32))  # [T_env]
        self.env = VectorEnv(
            market.close, n_envs=config.env.n_envs, isv=self.isv, seed=self.seed, spread=market.spread,
            counter=self.counter,
        )  # fmt: skip
        self.env.outputs(1)  # allocate the one-bar step buffers now (checkpoints list them)
        self.env.bootstrap_outputs(1)
        shape = network_shape(config, self.features.shape[1])
        self.online = BranchingDistributionalNet(shape).to(device)
        self.target = copy.deepcopy(self.online).requires_grad_(False)
        capturable = device.type == "cuda"
        self.lr = torch.tensor(config.optim.lr, dtype=torch.float32, device=device)
        # On CUDA: the fused Adam kernel (a handful of launches for every parameter, capturable,
        # device-tensor learning rate); on the CPU the plain per-parameter loop. Weight decay is
        # decoupled (AdamW); at 0 torch skips it, so the update is plain Adam's, bit for bit.
        self.optimizer = torch.optim.Adam(
            self.online.parameters(), lr=self.lr, eps=config.optim.adam_eps, capturable=capturable,
            fused=capturable, foreach=False, weight_decay=config.optim.weight_decay, decoupled_weight_decay=True,
        )  # fmt: skip
        self.replay = ReplayBuffer(config.replay.capacity, config.loss.n_step, PORTFOLIO_INPUT_STRIDE, N_BRANCHES, device)
        self.window = NStepWindow(config.env.n_envs, config.loss.n_step, PORTFOLIO_INPUT_STRIDE, N_BRANCHES, device)
        self.metrics = torch.zeros(METRIC_STRIDE, dtype=torch.float32, device=device)  # epoch sums, METRICS layout
        self.action_counts = torch.zeros(N_SUB_ACTIONS, dtype=torch.float32, device=device)  # epoch counts
        self.isv_local = torch.zeros(ISV_STRIDE, dtype=torch.float32, device=device)  # per-step ISV copy
        # The adaptive kernels (atom support, learning health, schedules, Kelly cap), the Kelly trade
        # record (the last validation's trades) and the reduction workspace.
        self.adaptive = AdaptiveMachinery(self.isv, params=AdaptiveParams.from_config(config))
        # Scratch for the step's random draws (rewritten every step, allocated once for capture).
        n_envs, batch = config.env.n_envs, config.replay.batch_size
        self.explore_draws = torch.zeros(n_envs * (1 + N_BRANCHES), dtype=torch.float32, device=device)
        self.replay_draws = torch.zeros(batch, dtype=torch.float32, device=device)
        self.tau_draws = torch.zeros(
            batch * (config.loss.iqn_tau_samples + config.loss.iqn_target_samples), dtype=torch.float32, device=device
        )
        # Feature-noise augmentation (replay.feature_noise): one Gaussian per replayed window entry;
        # absent when off, so a run without it draws (and reproduces) exactly what it did before.
        noise_count = batch * config.model.window * self.features.shape[1]
        self.noise_draws = (
            torch.zeros(2 * ((noise_count + 1) // 2), dtype=torch.float32, device=device)
            if config.replay.feature_noise > 0
            else None
        )
        self.noise_scale = feature_noise_scale(config.replay, market).to(device)  # [F]
        # Mirror augmentation (replay.mirror): one coin per replayed transition; absent when off.
        self.mirror_draws = torch.zeros(batch, dtype=torch.float32, device=device) if config.replay.mirror > 0 else None
        self.mirror_features = feature_signs(device)  # [F]
        self.mirror_portfolio = portfolio_signs(device)  # [P_in]
        self._init_optimizer_state()
        # Host-side counters (plain ints: the loop knows them without reading the device).
        self.steps_done = 0  # training steps (collect + update)
        self.collect_steps = 0  # steps that acted in the envs, updates or not
        self.epoch = 0  # epochs finished

    def _init_optimizer_state(self) -> None:
        """Create Adam's moments now (zeros, step 0) so they exist before capture and checkpoints."""
        for group in self.optimizer.param_groups:
            for param in group["params"]:
                state = self.optimizer.state[param]
                if not state:
                    step_device = param.device if group["capturable"] else torch.device("cpu")
                    state["step"] = torch.zeros((), dtype=torch.float32, device=step_device)
                    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)

    def named_tensors(self) -> dict[str, torch.Tensor]:
        """Every tensor of the run by a stable name (checkpoints, the registry, determinism tests)."""
        named: dict[str, torch.Tensor] = {}
        for name, tensor in self.online.state_dict().items():
            named[f"online.{name}"] = tensor
        for name, tensor in self.target.state_dict().items():
            named[f"target.{name}"] = tensor
        param_names = {id(p): n for n, p in self.online.named_parameters()}
        for param, state in self.optimizer.state.items():
            for key, tensor in state.items():
                named[f"optim.{param_names[id(param)]}.{key}"] = tensor
        named["optim.lr"] = self.lr
        named.update(self.replay.named_tensors())
        named.update(self.window.named_tensors())
        named["env.ps"] = self.env.ps
        rewards, dones, obs_index = self.env.outputs(1)
        named["env.rewards"] = rewards
        named["env.dones"] = dones
        named["env.obs_index"] = obs_index
        terminals, final_ps = self.env.bootstrap_outputs(1)
        named["env.terminals"] = terminals
        named["env.final_ps"] = final_ps
        named["rng.counter"] = self.counter
        named["isv"] = self.isv.tensor
        named["isv_local"] = self.isv_local
        named.update(self.adaptive.named_tensors())
        named["scratch.explore_draws"] = self.explore_draws
        named["scratch.replay_draws"] = self.replay_draws
        named["scratch.tau_draws"] = self.tau_draws
        if self.noise_draws is not None:
            named["scratch.noise_draws"] = self.noise_draws
        if self.mirror_draws is not None:
            named["scratch.mirror_draws"] = self.mirror_draws
        named["metrics.sums"] = self.metrics
        named["metrics.action_counts"] = self.action_counts
        return named

    # -- observations ------------------------------------------------------------------------
    def gather_windows(self, env_bar: torch.Tensor, offset: int | None = None) -> torch.Tensor:
        """Feature windows for env bar indices: [M] int64 → [M, K, F] (last row = that bar).

        ``offset`` is the global feature row of env bar 0 (default: the training window's).
        """
        window = self.config.model.window
        offset = self.feature_offset if offset is None else offset
        lags = torch.arange(-window + 1, 1, device=self.device, dtype=torch.int64)  # [K]
        rows = (env_bar.unsqueeze(-1) + offset + lags).clamp(min=0)  # [M, K]
        return self.features[rows]  # [M, K, F]

    def supports(self) -> torch.Tensor:
        """C51 support per branch [N_BRANCHES, N] from the ISV atom centre/half-width."""
        return isv_supports(self.isv_local, self.config.model.n_atoms)


@dataclass(frozen=True)
class StepLosses:
    """The loss terms of one update and the tensors the rest of the update reuses."""

    c51: C51Terms  # per_branch [D], total []
    iqn: IQNTerms  # total []
    cql: CQLTerms  # total [] (unweighted; the total applies α from the ISV)
    next_return: torch.Tensor  # [] squared error of the return head (unweighted)
    total: torch.Tensor  # [] c51 + iqn_weight · iqn + α · cql + return_weight · next_return
    log_probs: torch.Tensor  # [B, D, A, N] online C51 log-probabilities (with graph)
    supports: torch.Tensor  # [D, N]
    mask: torch.Tensor  # [D, A] bool


def metric_update(by_slot: dict[str, torch.Tensor], agents: tuple[int, ...] = ()) -> torch.Tensor:
    """One update's metric vector [METRIC_STRIDE], concatenated in the METRICS layout's slot order
    (``agents`` = (P,): every value carries a leading agent dimension and so does the result).

    The order comes from the layout itself (no position is written down twice), and a slot
    missing from ``by_slot`` or a tensor of the wrong width fails while the step is being built.
    """
    parts = []
    for slot in METRICS.slots:
        value = by_slot[slot.name].reshape(*agents, -1)
        if value.shape[-1] != slot.width:
            raise ValueError(
                f"metric {slot.name} has {value.shape[-1]} values (vs slot width {slot.width}) — hint: match "
                f"trainer.layout.METRICS"
            )
        parts.append(value)
    return torch.cat(parts, dim=-1)  # [*agents, METRIC_STRIDE]


def _branch_one_hots(actions: torch.Tensor) -> torch.Tensor:
    """int64 [B, N_BRANCHES] → float one-hot [B, N_BRANCHES, A_max] (padding never hot)."""
    return one_hot(actions, max(BRANCH_SIZES))


def explore_actions(draws: torch.Tensor, epsilon: torch.Tensor, greedy: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """ε-greedy actions int64 [*agents, E, D] around ``greedy`` [*agents, E, D] from the step's
    exploration uniforms ``draws`` [*agents, E · (1 + D)]: the first E are one coin per env, the
    rest a uniform sub-action per env and branch (``sizes`` [D]: the branches' choices).

    ``epsilon`` is the ISV's ε: a 0-d tensor for one agent, [P, 1] for a population (one per agent,
    broadcast over its envs), so both run the same ops element for element."""
    n_envs = greedy.shape[-2]
    coins = draws[..., :n_envs]  # [*agents, E]
    random = (draws[..., n_envs:].unflatten(-1, (n_envs, N_BRANCHES)) * sizes).to(torch.int64)  # [*agents, E, D]
    random = torch.minimum(random, (sizes - 1).to(torch.int64))
    explore = (coins < epsilon).unsqueeze(-1)  # [*agents, E, 1]
    return torch.where(explore, random, greedy)


def action_counts(actions: torch.Tensor, sub_action_offsets: torch.Tensor) -> torch.Tensor:
    """How often each sub-action was taken: actions int64 [*agents, E, D] → f32 [*agents, ΣA]."""
    return one_hot(actions + sub_action_offsets, N_SUB_ACTIONS).sum((-3, -2))


class TrainStep:
    """The step itself; ``__call__`` runs it eagerly, ``trainer.train.graph`` captures it."""

    def __init__(self, state: TrainerState) -> None:
        self.state = state
        config = state.config
        self.n_envs = config.env.n_envs
        self.batch_size = config.replay.batch_size
        self.n_tau = config.loss.iqn_tau_samples
        self.n_tau_target = config.loss.iqn_target_samples
        self.sizes = torch.tensor(BRANCH_SIZES, dtype=torch.float32, device=state.device)  # [D]
        self.joint_strides = torch.tensor(JOINT_STRIDES, dtype=torch.int64, device=state.device)  # [D]
        self.sub_action_offsets = torch.tensor(
            [sum(BRANCH_SIZES[:branch]) for branch in range(N_BRANCHES)], dtype=torch.int64, device=state.device
        )  # [D]
        self.direction_swap = direction_swap(state.device)  # [A]: SHORT ↔ LONG (run.policy_mirror)

    # -- acting ------------------------------------------------------------------------------
    def greedy(self, windows: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        """Each branch's argmax of expected value: [M, K, F], [M, P] → int64 [M, N_BRANCHES]."""
        state = self.state
        with torch.no_grad():
            log_probs = state.online(windows, portfolio)  # [M, D, A, N]
            return greedy_actions(log_probs, state.supports(), state.online.action_mask)

    def backtest_values(self, windows: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        """The Q-values a backtest chooses by (validation, the training-window backtest, the test
        split, ``trainer eval``): each action's expected value, or with ``run.policy_mirror`` the mean
        of the state's and its mirror image's (``trainer.train.mirror``; one forward pass of both) —
        [M, K, F], [M, P] → [M, D, A], padded actions included (mask them before an argmax)."""
        state = self.state
        with torch.no_grad():
            if not state.config.run.policy_mirror:
                return expected_values(state.online(windows, portfolio).exp(), state.supports())  # [M, D, A]
            rows = windows.shape[0]
            log_probs = state.online(
                torch.cat((windows, windows * state.mirror_features)), torch.cat((portfolio, portfolio * state.mirror_portfolio))
            )  # [2M, D, A, N]: the states, then their mirror images
            values = expected_values(log_probs.exp(), state.supports())  # [2M, D, A]
            return mirror_averaged_values(values[:rows], values[rows:], self.direction_swap)  # [M, D, A]

    def backtest_greedy(self, windows: torch.Tensor, portfolio: torch.Tensor, flat_margin: torch.Tensor | None = None) -> torch.Tensor:
        """The greedy choice a backtest acts with: each branch's argmax of ``backtest_values``, FLAT's
        value first raised by ``flat_margin`` [M] when given (``trainer.train.flat_margin``) —
        [M, K, F], [M, P] → int64 [M, N_BRANCHES]. Training acts with ``greedy`` either way."""
        return greedy_with_margin(self.backtest_values(windows, portfolio), flat_margin, self.state.online.action_mask)

    def act(self, bar: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        """ε-greedy per env (ε from the ISV; one coin per env, uniform random sub-actions)."""
        return self.explore(self.greedy(self.state.gather_windows(bar), portfolio))  # [E, D]

    def explore(self, greedy: torch.Tensor) -> torch.Tensor:
        """The ε-greedy choice around the greedy actions [E, D]: one coin per env, uniform random sub-actions."""
        state = self.state
        rng_uniform(state.seed, state.counter, RNG_STREAM_EXPLORE, state.explore_draws)  # counter += 1
        return explore_actions(state.explore_draws, state.isv_local[ISV_EPSILON], greedy, self.sizes)  # [E, D]

    # -- one step ----------------------------------------------------------------------------
    @hot_path
    def collect(self) -> None:
        """Act in every env, step them, push the n-step window and store its completed transitions.

        The first n − 1 collect steps of a run complete no transition (the window is still
        filling) and store nothing.
        """
        self._collect(store=self.state.collect_steps >= self.state.config.loss.n_step - 1)
        self.state.collect_steps += 1  # host bookkeeping: collect() is never captured

    @hot_path
    def __call__(self) -> None:
        """The whole training step: collect, then one gradient update and the target update.

        Host counters are advanced by the caller (``StepRunner``): a captured replay runs no Python.
        """
        self._collect(store=True)
        self.learn()

    def _collect(self, store: bool) -> None:
        bar, portfolio = self.observe()
        self.act_and_store(bar, portfolio, self.explore(self.greedy(self.state.gather_windows(bar), portfolio)), store)

    def observe(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The step's ISV copy, then the env bars [E] and portfolio inputs [E, P] the agent acts on."""
        state = self.state
        state.isv_local.copy_(state.isv.tensor)  # one read of the mapped ISV per step
        return state.env.bar_index(), state.env.portfolio_inputs()  # [E], [E, P]

    def act_and_store(self, bar: torch.Tensor, portfolio: torch.Tensor, actions: torch.Tensor, store: bool) -> None:
        """Step the envs with ``actions`` [E, D], push the n-step window, store its completed transitions."""
        state = self.state
        joint = (actions * self.joint_strides).sum(-1).to(torch.int32)  # [E]
        rewards, dones, _ = state.env.step(joint)  # advances state.counter by one
        # Only a terminal stops the bootstrap; a time limit is bootstrapped through from the state
        # the episode reached (env.time_limit_terminal restores the old "every end is terminal").
        terminals = dones if state.config.env.time_limit_terminal else state.env.terminals()
        transitions = state.window.push(
            bar, portfolio, actions, rewards, dones, terminals, state.env.final_bar_index(),
            state.env.final_portfolio_inputs(),
        )  # fmt: skip
        if store:
            state.replay.add(transitions)
        state.action_counts.add_(action_counts(actions, self.sub_action_offsets))

    @hot_path
    def learn(self) -> None:
        """Sample a batch, compute the losses, backward, Adam, Polyak target update."""
        state = self.state
        config = state.config
        batch, taus, taus_target, augment = self.sample()
        losses = self.losses(batch, taus, taus_target, augment)

        state.optimizer.zero_grad(set_to_none=False)
        losses.total.backward()
        parameters = [p for p in state.online.parameters()]
        if config.optim.grad_clip > 0:
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, config.optim.grad_clip, foreach=state.device.type == "cuda")
        else:
            grad_norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in parameters]))
        state.optimizer.step()
        state.adaptive.after_update(state.env.ps, losses.c51.target_mean.t(), grad_norm)  # ISV, on the device
        tau = state.isv_local[ISV_TAU]
        with torch.no_grad():
            for target_param, online_param in zip(state.target.parameters(), state.online.parameters(), strict=True):
                target_param.lerp_(online_param, tau)
        state.metrics.add_(update_metrics(losses, grad_norm))

    def sample(self) -> tuple[Transitions, torch.Tensor, torch.Tensor, Augmentation]:
        """The update's random draws and replay batch: (batch, τ [B, N], τ′ [B, N′], its augmentation)."""
        state = self.state
        config = state.config
        rng_uniform(state.seed, state.counter, RNG_STREAM_REPLAY, state.replay_draws)  # counter += 1
        rng_uniform(state.seed, state.counter, RNG_STREAM_IQN_TAU, state.tau_draws)  # counter += 1
        batch = state.replay.sample(state.replay_draws)
        taus = state.tau_draws[: self.batch_size * self.n_tau].view(self.batch_size, self.n_tau)  # [B, N]
        taus_target = state.tau_draws[self.batch_size * self.n_tau :].view(self.batch_size, self.n_tau_target)  # [B, N′]
        noise = mirrored = None
        if state.noise_draws is not None:
            rng_uniform(state.seed, state.counter, RNG_STREAM_AUGMENT, state.noise_draws)  # counter += 1
            count = self.batch_size * config.model.window * state.features.shape[1]
            noise = (gaussian_from_uniform(state.noise_draws)[:count].view(-1, state.features.shape[1]) * state.noise_scale).view(-1)
        if state.mirror_draws is not None:
            rng_uniform(state.seed, state.counter, RNG_STREAM_AUGMENT, state.mirror_draws)  # counter += 1
            mirrored = mirror_coins(state.mirror_draws, config.replay.mirror)  # [B]
        return batch, taus, taus_target, Augmentation(noise=noise, mirrored=mirrored)

    def losses(
        self, batch: Transitions, taus: torch.Tensor, taus_target: torch.Tensor, augment: Augmentation | None = None
    ) -> StepLosses:
        """Every loss term of one update on a replay batch (the step and the gradient diagnostic share it).

        Reads γ, the atom support and CQL α from the step's ISV copy; the targets carry no graph.
        ``augment``: the mirrored transitions are reflected first (windows, portfolio, direction,
        return target: ``trainer.train.mirror``), then the feature noise is added to the online
        network's input windows only; the bootstrap targets see the clean (reflected) windows.
        """
        state = self.state
        windows = state.gather_windows(batch.bar_index)  # [B, K, F]
        next_windows = state.gather_windows(batch.next_bar_index)  # [B, K, F]
        next_return = state.next_return[batch.bar_index]  # [B]
        augment = augment or Augmentation()
        if augment.mirrored is not None:
            batch, windows, next_windows, next_return = mirror_batch(
                augment.mirrored, batch, windows, next_windows, next_return, state.mirror_features, state.mirror_portfolio
            )  # fmt: skip
        if augment.noise is not None:
            windows = windows + augment.noise.view_as(windows)
        return update_losses(
            state.online, state.target, state.isv_local, LossWeights.from_config(state.config), batch, windows,
            next_windows, next_return, taus, taus_target,
        )  # fmt: skip


def feature_noise_scale(replay: ReplayConfig, market: MarketWindow) -> torch.Tensor:
    """σ of the feature noise per column [F] f32 (replay.feature_noise, feature_noise_units,
    forecast_noise_share). With "column_std" each column's σ is scaled by its std over the
    environments' bars (the training window's feature rows), computed in f64 on the host so that
    every device gets the same numbers."""
    n_features = int(market.features.shape[1])
    scale = torch.full((n_features,), replay.feature_noise, dtype=torch.float64)  # [F]
    if replay.feature_noise_units == "column_std":
        rows = market.features[market.offset : market.offset + int(market.close.shape[0])]  # [T_env, F]
        scale *= rows.detach().to(device="cpu", dtype=torch.float64).std(dim=0, correction=0)
    scale[FEATURE_LINEAR_FORECAST] *= replay.forecast_noise_share
    return scale.float()


@dataclass(frozen=True)
class Augmentation:
    """One update's replay augmentation: feature noise [B·K·F] (``replay.feature_noise``) and the
    mirrored transitions bool [B] (``replay.mirror``); None where off."""

    noise: torch.Tensor | None = None
    mirrored: torch.Tensor | None = None


@dataclass(frozen=True)
class LossWeights:
    """The loss's per-agent constants: Python floats for one agent, [P] tensors for a stacked
    population (whose agents may differ in them along ``run.agent_grid``); plus the shared switches."""

    reward_scale: float | torch.Tensor
    huber_kappa: float | torch.Tensor
    iqn_weight: float | torch.Tensor
    return_weight: float | torch.Tensor
    n_atoms: int
    double_q: bool
    iqn_normalise: bool

    @staticmethod
    def from_config(config: TrainConfig) -> LossWeights:
        loss = config.loss
        return LossWeights(reward_scale=loss.reward_scale, huber_kappa=loss.huber_kappa, iqn_weight=loss.iqn_weight,
                           return_weight=loss.return_weight, n_atoms=config.model.n_atoms, double_q=loss.double_q,
                           iqn_normalise=loss.iqn_normalise)  # fmt: skip


def update_losses(
    online: NetworkLike,
    target: NetworkLike,
    isv: torch.Tensor,
    weights: LossWeights,
    batch: Transitions,
    windows: torch.Tensor,
    next_windows: torch.Tensor,
    next_return: torch.Tensor,
    taus: torch.Tensor,
    taus_target: torch.Tensor,
) -> StepLosses:
    """Every loss term of one agent's update, a pure function of its networks and tensors.

    One agent's shapes: isv [ISV_STRIDE], windows / next_windows [B, K, F] (the online input may
    carry feature noise), next_return [B] (the return head's targets), taus [B, N], taus_target
    [B, N′]. ``TrainStep.losses`` calls it with the agent's modules; the stacked population
    (``trainer.train.population``) calls it under ``torch.func.vmap`` over the agent dimension with
    functional views of the stacked parameters, so both compute the same terms with the same ops.
    """
    gammas = isv[ISV_GAMMA : ISV_GAMMA + N_BRANCHES]  # [D]
    returns, discounts = n_step_returns(batch.rewards * weights.reward_scale, batch.dones, batch.terminals,
                                        gammas)  # [D, B]  # fmt: skip
    supports = isv_supports(isv, weights.n_atoms)  # [D, N]
    taken = _branch_one_hots(batch.actions)

    mask = online.action_mask  # [D, A]
    embedding = online.embed(windows, batch.portfolio)  # [B, H]
    log_probs = online.distributions(embedding)  # [B, D, A, N]
    with torch.no_grad():
        next_online = online(next_windows, batch.next_portfolio).exp()  # [B, D, A, N]
        next_embedding_target = target.embed(next_windows, batch.next_portfolio)
        next_target = target.distributions(next_embedding_target).exp()  # [B, D, A, N]
        next_one_hot = greedy_one_hot(expected_values(next_online, supports), mask)  # [B, D, A]
        next_quantiles = target.quantiles(next_embedding_target, taus_target)  # [B, N′, D, A]

    c51 = branching_c51_loss(log_probs, taken, next_online, next_target, returns, discounts, supports, mask,
                             double_q=weights.double_q)  # fmt: skip
    quantiles = online.quantiles(embedding, taus)  # [B, N, D, A]
    # Normalised IQN: TD errors per unit of the branch's atom half-width, so its gradient into
    # the trunk is on C51's scale whatever the return scale.
    scale = isv[ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES] if weights.iqn_normalise else None
    iqn = branching_iqn_loss(quantiles, taken, taus, next_quantiles, next_one_hot, returns, discounts,
                             weights.huber_kappa, scale=scale)  # fmt: skip
    cql = branching_cql_loss(expected_values(log_probs.exp(), supports), taken, mask)
    # The auxiliary regression: the bar's realised next return (a training-window bar: the
    # same price move its reward is made of), predicted from the same (noisy) input.
    error = online.predicted_return(embedding) - next_return  # [B]
    next_return_loss = (error * error).mean()
    total = (c51.total + weights.iqn_weight * iqn.total + isv[ISV_CQL_ALPHA] * cql.total
             + weights.return_weight * next_return_loss)  # fmt: skip
    return StepLosses(c51=c51, iqn=iqn, cql=cql, next_return=next_return_loss, total=total, log_probs=log_probs,
                      supports=supports, mask=mask)  # fmt: skip


def update_metrics(losses: StepLosses | StackedLossTerms, grad_norm: torch.Tensor) -> torch.Tensor:
    """One update's metric vector [METRIC_STRIDE] (or [P, METRIC_STRIDE] for a stacked population,
    whose terms and gradient norm carry a leading agent dimension)."""
    agents = grad_norm.shape[:1] if grad_norm.dim() == 1 else ()
    c51 = losses.c51.per_branch if isinstance(losses, StepLosses) else losses.c51_per_branch
    iqn = losses.iqn.total if isinstance(losses, StepLosses) else losses.iqn
    cql = losses.cql.total if isinstance(losses, StepLosses) else losses.cql
    by_slot = {
        "C51": c51.detach(), "IQN": iqn.detach(), "CQL": cql.detach(), "RETURN": losses.next_return.detach(),
        "TOTAL": losses.total.detach(), "GRAD_NORM": grad_norm.detach().to(torch.float32),
        "UPDATES": torch.ones(agents, device=grad_norm.device),
    }  # fmt: skip
    return metric_update(by_slot, agents)


@dataclass(frozen=True)
class StackedLossTerms:
    """A stacked population's loss terms, every one with a leading agent dimension."""

    total: torch.Tensor  # [P]
    c51_per_branch: torch.Tensor  # [P, D]
    iqn: torch.Tensor  # [P]
    cql: torch.Tensor  # [P]
    next_return: torch.Tensor  # [P]
