"""The stacked population step: P agents' networks, targets and Adam moments in shared [P, N]
buffers, one set of kernels per step for all of them.

Why stacked: one agent's step is hundreds of small kernels (GEMMs of 128–4,096 rows) that keep an
H200 busy for almost the whole step; branches on streams only fill the gaps between them (2.85× at
P = 128, docs/benchmarks.md). Here the network work of every agent — the acting forward, the three
forwards and the backward of the update, gradient clipping, Adam and the Polyak update — runs as
one batched set of kernels over a leading agent dimension, so its launches do not grow with P.

How the agents stay separate:
- ``StackedParameters`` holds one network per agent as row i of a flat [P, N] buffer (each
  parameter a 16-byte-aligned slice of the row). Agent i's ``nn.Module`` parameters are re-pointed
  at views of its row, so its checkpoint, resume, gradient diagnostic, validation rollout and
  HEALTH_DIAG read and write the very storage the stacked step trains (``named_tensors`` is
  unchanged). Adam's moments and step, the device learning rate, the step's ISV copy and the metric
  sums are stacked the same way.
- The losses are ``trainer.train.step.update_losses`` — the single run's function — under
  ``torch.func.vmap`` over the agent dimension, the network a ``functional_call`` of one agent's
  rows. Gradient clipping takes one norm per agent row; Adam, the learning rate, ε, the clip bound
  and the loss constants of ``run.agent_grid`` are per-agent [P] tensors.
- What each agent owns alone — its ISV, Philox seed and counter, environments, n-step window,
  replay ring, the step's random draws and action counts — is stacked too, in [P, …] rows that
  each agent's own objects are re-pointed at (``Isv.stacked``, ``StackedEnvs``,
  ``NStepWindow.stacked``, ``StackedReplay``): the step runs the single run's functions over the
  leading agent dimension (one Philox launch per stream with every agent's seed and counter, one
  env kernel over every agent's envs, one window shift, one replay store and gather, the adaptive
  kernels once over the [P, ISV_STRIDE] bus), so the step's launches do not grow with P either.

Exactness: agents never mix — an agent's result is bitwise the same whatever its neighbours. On the
CPU every forward is bitwise the single run's; the batched backward of the layer norm and the
per-row clip norm reduce in another order (≈ 1e-7 after a few steps), so a population agent
follows its single run within the tolerance ``tests/trainer/train/train_helpers.py`` states
(POPULATION_RTOL / _ATOL), and a population run is bitwise reproducible (same kernels, same order).
P = 1 never comes here: a single run is ``TrainStep`` itself.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import functional_call, vmap

from trainer.env.vector_env import StackedEnvs, adopt_rows
from trainer.isv import Isv
from trainer.layout import (
    ISV_EPSILON,
    ISV_TAU,
    PS_BAR_INDEX,
    RNG_STREAM_AUGMENT,
    RNG_STREAM_EXPLORE,
    RNG_STREAM_IQN_TAU,
    RNG_STREAM_REPLAY,
)
from trainer.markers import hot_path
from trainer.model.network import greedy_actions
from trainer.ops.adaptive_machinery import adaptive_after_update
from trainer.ops.rng import gaussian_from_uniform
from trainer.ops.rng_uniform import rng_uniform
from trainer.train.mirror import mirror_batch, mirror_coins
from trainer.train.replay import NStepWindow, StackedReplay, Transitions
from trainer.train.step import (
    LossWeights,
    StackedLossTerms,
    TrainerState,
    TrainStep,
    action_counts,
    explore_actions,
    isv_supports,
    update_losses,
    update_metrics,
)

# The stacked gradients are row slices of one [P, N] buffer, so autograd's accumulation into them
# (in place, as intended) reports that they are not dense; it says itself that this is not an error.
warnings.filterwarnings("ignore", message="grad and param do not obey the gradient layout contract")

ALIGN_ELEMENTS = 4  # every parameter slice starts on a 16-byte boundary (vectorised f32 loads)
CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s guard: coef = max_norm / (norm + 1e-6)
TRANSITION_FIELDS = tuple(field.name for field in dataclasses.fields(Transitions))
# The loss constants an agent grid may vary (trainer.config.POPULATION_GRID_KEYS); the others are shared.
PER_AGENT_LOSS_KEYS = ("reward_scale", "huber_kappa", "iqn_weight", "return_weight")


def _plain_adam_betas(optimizers: Sequence[torch.optim.Optimizer]) -> tuple[float, float]:
    """The betas the agents' Adam share; the stacked Adam implements Adam with decoupled weight
    decay only (what ``TrainerState`` builds), so anything else is refused rather than silently changed."""
    groups = [optimizer.param_groups for optimizer in optimizers]
    plain = all(
        len(group) == 1 and (group[0]["weight_decay"] == 0 or group[0]["decoupled_weight_decay"])
        and not group[0]["amsgrad"] and not group[0]["maximize"] and group[0]["betas"] == groups[0][0]["betas"]
        for group in groups
    )  # fmt: skip
    if not plain:
        raise ValueError(
            "the agents' optimizers are not one plain Adam (vs one parameter group, weight decay decoupled or none, "
            "no AMSGrad, shared betas) — hint: a stacked population steps TrainerState's Adam only"
        )
    beta1, beta2 = groups[0][0]["betas"]
    return float(beta1), float(beta2)


class StackedParameters:
    """One network per agent as the rows of one flat [P, N] buffer.

    ``stacked[name]`` is the [P, *shape] view of parameter ``name`` over every agent (what the
    vmapped forward reads); after ``repoint`` agent i's module holds [*shape] views of row i. With
    ``requires_grad`` the stacked views are leaf parameters whose gradients accumulate in place
    into the flat [P, N] ``grad`` buffer, so clipping and Adam are a few kernels on two tensors.
    """

    def __init__(self, modules: Sequence[nn.Module], requires_grad: bool) -> None:
        first = dict(modules[0].named_parameters())
        self.names = list(first)
        self.shapes = {name: tuple(param.shape) for name, param in first.items()}
        self.offsets: dict[str, int] = {}
        width = 0
        for name in self.names:
            self.offsets[name] = width
            numel = first[name].numel()
            width += -(-numel // ALIGN_ELEMENTS) * ALIGN_ELEMENTS  # padding stays 0: no gradient, no Adam step
        device = first[self.names[0]].device
        self.flat = torch.zeros(len(modules), width, dtype=torch.float32, device=device)  # [P, N]
        with torch.no_grad():
            for agent, module in enumerate(modules):
                params = dict(module.named_parameters())
                if list(params) != self.names or any(tuple(p.shape) != self.shapes[n] for n, p in params.items()):
                    raise ValueError(
                        f"agent {agent}'s network differs from agent 0's ({len(params)} parameters vs {len(self.names)}) "
                        f"— hint: a population's agents share every shape (only POPULATION_GRID_KEYS may vary)"
                    )
                for name, param in params.items():
                    self.slice(name, self.flat[agent]).copy_(param.detach())
        self.grad = torch.zeros_like(self.flat) if requires_grad else None  # [P, N]
        self.stacked: dict[str, torch.Tensor] = {}
        for name in self.names:
            view = self.slice(name, self.flat)  # [P, *shape]
            if requires_grad:
                view = nn.Parameter(view)  # a leaf on the same storage
                view.grad = self.slice(name, self.grad)  # backward accumulates into the flat buffer in place
            self.stacked[name] = view
        self.repoint(modules, requires_grad)

    def slice(self, name: str, rows: torch.Tensor) -> torch.Tensor:
        """Parameter ``name``'s view of a flat buffer: rows [N] → [*shape], rows [P, N] → [P, *shape]."""
        start = self.offsets[name]
        size = 1
        for extent in self.shapes[name]:
            size *= extent
        return rows[..., start : start + size].view(*rows.shape[:-1], *self.shapes[name])

    def repoint(self, modules: Sequence[nn.Module], requires_grad: bool) -> None:
        """Make agent i's module parameters views of row i (the storage the stacked step trains)."""
        for agent, module in enumerate(modules):
            for name in self.names:
                owner_name, _, leaf = name.rpartition(".")
                owner = module.get_submodule(owner_name) if owner_name else module
                setattr(owner, leaf, nn.Parameter(self.slice(name, self.flat[agent]), requires_grad=requires_grad))


class _MethodCall(nn.Module):
    """``functional_call`` runs ``forward``; this forwards to any method of the network."""

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.net = network

    def forward(self, method: str, *args: torch.Tensor) -> torch.Tensor:
        return getattr(self.net, method)(*args)


class AgentNetwork:
    """One agent's network inside ``vmap``: the template's methods on that agent's parameter rows
    (a ``trainer.train.step.NetworkLike``)."""

    def __init__(self, call: _MethodCall, params: dict[str, torch.Tensor]) -> None:
        self.call = call
        self.params = params
        self.action_mask = call.net.action_mask  # [D, A_max] bool, shared

    def _run(self, method: str, *args: torch.Tensor) -> torch.Tensor:
        return functional_call(self.call, {f"net.{name}": tensor for name, tensor in self.params.items()}, (method, *args))

    def __call__(self, window: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        return self._run("forward", window, portfolio)

    def embed(self, window: torch.Tensor, portfolio: torch.Tensor) -> torch.Tensor:
        return self._run("embed", window, portfolio)

    def distributions(self, embedding: torch.Tensor) -> torch.Tensor:
        return self._run("distributions", embedding)

    def quantiles(self, embedding: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        return self._run("quantiles", embedding, taus)

    def predicted_return(self, embedding: torch.Tensor) -> torch.Tensor:
        return self._run("predicted_return", embedding)


def _per_agent(values: list[float], device: torch.device) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32, device=device)  # [P]


def _adopt_optional_draws(states: Sequence[TrainerState], attribute: str,
                          device: torch.device) -> tuple[torch.Tensor | None, torch.Tensor | None]:  # fmt: skip
    """The stacked scratch [P, count] of a draw only some agents make (``attribute`` None on the
    others: feature noise, mirror coins), each drawing agent's buffer re-pointed at its row; and
    how far each agent's counter moves for it ([P, 1], 0 where the agent does not draw, as alone;
    None when every agent draws). (None, None) when no agent draws it."""
    drawing = [state for state in states if getattr(state, attribute) is not None]
    if not drawing:
        return None, None
    draws = torch.zeros(len(states), getattr(drawing[0], attribute).shape[0], device=device)  # [P, count]
    for agent, state in enumerate(states):
        if getattr(state, attribute) is not None:
            draws[agent].copy_(getattr(state, attribute))
            setattr(state, attribute, draws[agent])
    if len(drawing) == len(states):
        return draws, None
    advance = torch.tensor([[int(getattr(state, attribute) is not None)] for state in states], dtype=torch.int64,
                           device=device)  # fmt: skip
    return draws, advance


class PopulationStep:
    """The training step of P ≥ 2 agents with stacked networks and optimizer state.

    Built from the agents' ``TrainStep``s (each state complete and, when resuming, already loaded);
    takes over their network, target, Adam, learning-rate, ISV-copy and metric storage (see the
    module docstring). ``__call__`` is one step of every agent: capture-safe like ``TrainStep``."""

    def __init__(self, steps: Sequence[TrainStep]) -> None:
        if len(steps) < 2:
            raise ValueError(f"a stacked population needs agents ({len(steps)} vs ≥ 2) — hint: run one agent as a TrainStep")
        self.steps = list(steps)
        states = [step.state for step in self.steps]
        self.states = states
        first = states[0]
        self.device = first.device
        self.agents = len(states)
        configs = [state.config for state in states]
        # The template: shapes, buffers and methods (its own parameters are never read); copied
        # before the agents' parameters become views of the stacked rows, which it must not share.
        self.template = _MethodCall(copy.deepcopy(first.online).requires_grad_(False))
        self.online = StackedParameters([state.online for state in states], requires_grad=True)
        self.target = StackedParameters([state.target for state in states], requires_grad=False)
        # Adam: moments [P, N], step and learning rate [P]; agent i's optimizer holds views of row i.
        self.betas = _plain_adam_betas([state.optimizer for state in states])
        self.exp_avg = torch.zeros_like(self.online.flat)  # [P, N]
        self.exp_avg_sq = torch.zeros_like(self.online.flat)  # [P, N]
        with torch.no_grad():
            self.lr = torch.stack([state.lr.to(torch.float32) for state in states])  # [P]
            steps_taken = []
            for agent, state in enumerate(states):
                params = dict(zip(self.online.names, state.optimizer.param_groups[0]["params"], strict=True))
                step_count = None
                for name, param in params.items():
                    moments = state.optimizer.state[param]
                    self.online.slice(name, self.exp_avg[agent]).copy_(moments["exp_avg"])
                    self.online.slice(name, self.exp_avg_sq[agent]).copy_(moments["exp_avg_sq"])
                    step_count = moments["step"]
                steps_taken.append(step_count.to(device=self.device, dtype=torch.float32))
            self.adam_step = torch.stack(steps_taken)  # [P]: every parameter of an agent shares one count
        self.eps = _per_agent([config.optim.adam_eps for config in configs], self.device)  # [P]
        self.max_norm = _per_agent([config.optim.grad_clip for config in configs], self.device)  # [P], 0 = off
        decay = [config.optim.weight_decay for config in configs]
        # [P] decoupled weight decay, or None when no agent decays (then no op: plain Adam's update).
        self.weight_decay = _per_agent(decay, self.device) if any(decay) else None
        self.isv_local = torch.stack([state.isv_local for state in states])  # [P, ISV_STRIDE]
        self.metrics = torch.stack([state.metrics for state in states])  # [P, METRIC_STRIDE]
        for agent, state in enumerate(states):
            self._adopt(agent, state)
        self._stack_agent_state(states)
        # The loss constants: a Python float where every agent shares it (exactly the single run's
        # op), a [P] tensor mapped over the agents where the grid varies it.
        weights = [LossWeights.from_config(config) for config in configs]
        shared = {key: getattr(weights[0], key) for key in ("n_atoms", "double_q", "iqn_normalise")}
        self.varying: dict[str, torch.Tensor] = {}
        for key in PER_AGENT_LOSS_KEYS:
            values = [getattr(weight, key) for weight in weights]
            if all(value == values[0] for value in values):
                shared[key] = values[0]
            else:
                self.varying[key] = _per_agent(values, self.device)  # [P]
        self.shared_weights = shared
        self._losses = vmap(self._agent_losses)
        self._greedy = vmap(self._agent_greedy)

    def _adopt(self, agent: int, state: TrainerState) -> None:
        """Point agent ``agent``'s state at its rows of the stacked storage (a fresh Adam over the
        re-pointed parameters, its moments the stacked rows: what checkpoints save and load)."""
        state.isv_local = self.isv_local[agent]  # [ISV_STRIDE]
        state.metrics = self.metrics[agent]  # [METRIC_STRIDE]
        state.lr = self.lr[agent]  # []
        group = state.optimizer.param_groups[0]
        optimizer = torch.optim.Adam(
            state.online.parameters(), lr=state.lr, eps=group["eps"], capturable=group["capturable"],
            fused=group["fused"], foreach=False, weight_decay=group["weight_decay"], decoupled_weight_decay=True,
        )  # fmt: skip
        for name, param in state.online.named_parameters():
            optimizer.state[param] = {
                "step": self.adam_step[agent],
                "exp_avg": self.online.slice(name, self.exp_avg[agent]),
                "exp_avg_sq": self.online.slice(name, self.exp_avg_sq[agent]),
            }
        state.optimizer = optimizer

    def _stack_agent_state(self, states: Sequence[TrainerState]) -> None:
        """What each agent owns alone — ISV, environments and their Philox counter, n-step window,
        replay ring, the step's random draws and the action counts — stacked in [P, …] rows too,
        each agent's state re-pointed at its row (``Isv.stacked``, ``StackedEnvs``,
        ``NStepWindow.stacked``, ``StackedReplay``), so the rest of the step is one set of ops for
        every agent. The agents share the market (one feature tensor, next-return targets and bars;
        checked)."""
        first = states[0]
        for agent, state in enumerate(states):
            same = (state.feature_offset == first.feature_offset and torch.equal(state.features, first.features)
                    and torch.equal(state.next_return, first.next_return))  # fmt: skip
            if not same:
                raise ValueError(
                    f"agent {agent}'s market differs from agent 0's (feature rows {tuple(state.features.shape)} from "
                    f"offset {state.feature_offset} vs {tuple(first.features.shape)} from {first.feature_offset}, or "
                    f"other values) — hint: a population's agents share the data config"
                )
            state.features, state.next_return = first.features, first.next_return  # one copy for every agent
        # One ISV bus [P, ISV_STRIDE] (each agent's Isv a row: its monitors, checkpoints and host
        # writes unchanged) and the in-step adaptive kernels once over it; their parameters are
        # config the agents share (the grid's schedule keys only enter at the epoch boundary).
        self.isv = Isv.stacked([state.isv for state in states])  # [P, ISV_STRIDE], device view
        self.adaptive_params = first.adaptive.params
        for agent, state in enumerate(states):
            params = state.adaptive.params
            if (params.atoms, params.health) != (self.adaptive_params.atoms, self.adaptive_params.health):
                raise ValueError(
                    f"agent {agent}'s in-step adaptive parameters differ from agent 0's ({params.atoms}, {params.health} "
                    f"vs {self.adaptive_params.atoms}, {self.adaptive_params.health}) — hint: a population shares "
                    f"[adaptive.atoms], [adaptive.health] and loss.n_step / v_min / v_max"
                )
        self.envs = StackedEnvs([state.env for state in states], self.isv)
        self.seeds = self.envs.seeds  # [P]: each agent's Philox key (its seed), for its draws and its envs'
        for state in states:
            state.counter = state.env.counter  # the step's draws and the env kernel share one counter per agent
        self.window = NStepWindow.stacked([state.window for state in states])
        self.replay = StackedReplay([state.replay for state in states])
        self.action_counts = adopt_rows([state.action_counts for state in states], states, "action_counts")  # [P, ΣA]
        self.explore_draws = adopt_rows([state.explore_draws for state in states], states, "explore_draws")  # [P, E(1+D)]
        self.replay_draws = adopt_rows([state.replay_draws for state in states], states, "replay_draws")  # [P, B]
        self.tau_draws = adopt_rows([state.tau_draws for state in states], states, "tau_draws")  # [P, B(N + N′)]
        # Feature noise: drawn by the agents that have it (an agent without it draws none, as alone:
        # its row of the draws is not its own and its windows are taken unchanged).
        self.noise_draws, self.noise_advance = _adopt_optional_draws(states, "noise_draws", self.device)
        self.noise_scale = torch.stack([state.noise_scale for state in states])  # [P, F]: each agent's σ per column
        self.has_noise = torch.tensor([state.noise_draws is not None for state in states], device=self.device).view(-1, 1, 1, 1)  # [P, 1, 1, 1]
        # Mirror augmentation: as the noise, drawn by the agents that have it (replay.mirror > 0);
        # an agent at 0 compares its row against 0 and mirrors nothing.
        self.mirror_draws, self.mirror_advance = _adopt_optional_draws(states, "mirror_draws", self.device)
        self.mirror_probability = torch.tensor([[state.config.replay.mirror] for state in states], device=self.device)  # [P, 1]
        self.mirror_features, self.mirror_portfolio = first.mirror_features, first.mirror_portfolio
        step = self.steps[0]
        self.sizes, self.joint_strides, self.sub_action_offsets = step.sizes, step.joint_strides, step.sub_action_offsets
        self.time_limit_terminal = first.config.env.time_limit_terminal

    # -- the vmapped per-agent functions --------------------------------------------------------
    def _agent_greedy(self, params: dict[str, torch.Tensor], isv: torch.Tensor, windows: torch.Tensor,
                      portfolio: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """One agent's greedy actions: windows [E, K, F], portfolio [E, P] → int64 [E, D]."""
        network = AgentNetwork(self.template, params)
        supports = isv_supports(isv, self.shared_weights["n_atoms"])  # [D, N]
        return greedy_actions(network(windows, portfolio), supports, network.action_mask)

    def _agent_losses(self, online: dict[str, torch.Tensor], target: dict[str, torch.Tensor], isv: torch.Tensor,
                      varying: dict[str, torch.Tensor], fields: tuple[torch.Tensor, ...], windows: torch.Tensor,
                      next_windows: torch.Tensor, next_return: torch.Tensor, taus: torch.Tensor,
                      taus_target: torch.Tensor) -> tuple[torch.Tensor, ...]:  # fmt: skip
        """One agent's update losses (``update_losses``) as a tuple of tensors vmap can stack."""
        weights = LossWeights(**self.shared_weights, **varying)
        batch = Transitions(*fields)
        losses = update_losses(AgentNetwork(self.template, online), AgentNetwork(self.template, target), isv, weights,
                               batch, windows, next_windows, next_return, taus, taus_target)  # fmt: skip
        return (losses.total, losses.c51.per_branch, losses.c51.target_mean, losses.iqn.total, losses.cql.total,
                losses.next_return)  # fmt: skip

    # -- the step -------------------------------------------------------------------------------
    @hot_path
    def __call__(self) -> None:
        """One training step of every agent: the stacked acting pass, env step, n-step window, replay
        store and sample, one stacked update, the adaptive kernels, the stacked Polyak update."""
        first, envs = self.states[0], self.envs
        self.isv_local.copy_(self.isv)  # [P, ISV_STRIDE]: one read of the mapped ISV per step
        counter = envs.counter  # [P, 1]: each agent's Philox counter, advanced as its single run's
        rng_uniform(self.seeds, counter, RNG_STREAM_EXPLORE, self.explore_draws)  # every counter += 1
        bar = envs.bar_index()  # [P, E]
        portfolio = envs.portfolio_inputs(self.isv_local)  # [P, E, P_in]
        with torch.no_grad():
            greedy = self._greedy(self.online.stacked, self.isv_local, first.gather_windows(bar), portfolio)  # [P, E, D]
        epsilon = self.isv_local[:, ISV_EPSILON].unsqueeze(1)  # [P, 1]
        actions = explore_actions(self.explore_draws, epsilon, greedy, self.sizes)  # [P, E, D]
        joint = (actions * self.joint_strides).sum(-1).to(torch.int32)  # [P, E]
        envs.step(joint)  # every counter += 1
        rng_uniform(self.seeds, counter, RNG_STREAM_REPLAY, self.replay_draws)  # every counter += 1
        rng_uniform(self.seeds, counter, RNG_STREAM_IQN_TAU, self.tau_draws)  # every counter += 1
        if self.noise_draws is not None:  # += 1 for the agents with feature noise (the others draw none)
            rng_uniform(self.seeds, counter, RNG_STREAM_AUGMENT, self.noise_draws, self.noise_advance)
        if self.mirror_draws is not None:  # += 1 for the agents that mirror
            rng_uniform(self.seeds, counter, RNG_STREAM_AUGMENT, self.mirror_draws, self.mirror_advance)
        dones = envs.dones[:, 0]  # [P, E]
        terminals = dones if self.time_limit_terminal else envs.terminals[:, 0]
        reached = envs.reached_state()  # [P, E, PS_STRIDE]
        transitions = self.window.push(bar, portfolio, actions, envs.rewards[:, 0], dones, terminals,
                                       reached[..., PS_BAR_INDEX].to(torch.int64),
                                       envs.portfolio_inputs(self.isv_local, reached))  # fmt: skip
        self.replay.add(transitions)
        self.action_counts.add_(action_counts(actions, self.sub_action_offsets))

        batch = self.replay.sample(self.replay_draws)  # fields [P, B, …]
        step = self.steps[0]
        taus = self.tau_draws[:, : step.batch_size * step.n_tau].unflatten(1, (step.batch_size, step.n_tau))  # [P, B, N]
        taus_target = self.tau_draws[:, step.batch_size * step.n_tau :].unflatten(1, (step.batch_size, step.n_tau_target))
        batch_windows = first.gather_windows(batch.bar_index)  # [P, B, K, F]
        next_windows = first.gather_windows(batch.next_bar_index)  # [P, B, K, F]
        next_return = first.next_return[batch.bar_index]  # [P, B]
        if self.mirror_draws is not None:  # reflected first, then noised: the single run's order
            mirrored = mirror_coins(self.mirror_draws, self.mirror_probability)  # [P, B]
            batch, batch_windows, next_windows, next_return = mirror_batch(
                mirrored, batch, batch_windows, next_windows, next_return, self.mirror_features, self.mirror_portfolio
            )  # fmt: skip
        if self.noise_draws is not None:
            count = math.prod(batch_windows.shape[1:])  # B·K·F Gaussians per agent (its draws are even-sized)
            draws = gaussian_from_uniform(self.noise_draws)[..., :count].view(len(self.noise_scale), -1, self.noise_scale.shape[1])
            noise = draws * self.noise_scale.unsqueeze(1)  # [P, B·K, F]: the single run's product, per agent
            batch_windows = torch.where(self.has_noise, batch_windows + noise.view_as(batch_windows), batch_windows)
        fields = tuple(getattr(batch, name) for name in TRANSITION_FIELDS)
        total, c51_per_branch, target_mean, iqn_total, cql_total, return_loss = self._losses(
            self.online.stacked, self.target.stacked, self.isv_local, self.varying, tuple(fields), batch_windows,
            next_windows, next_return, taus, taus_target,
        )  # fmt: skip  # total [P], c51 [P, D], target_mean [P, D, B]

        grad = self.online.grad  # [P, N]
        grad.zero_()
        total.sum().backward()  # the agents share no parameter: each row gets exactly its own gradient
        grad_norm = torch.linalg.vector_norm(grad, dim=1)  # [P]
        coef = torch.clamp(self.max_norm / (grad_norm + CLIP_EPS), max=1.0)  # [P]
        coef = torch.where(self.max_norm > 0, coef, torch.ones_like(coef))  # grad_clip = 0: that agent unclipped
        grad.mul_(coef.unsqueeze(1))
        self._adam(grad)
        # The agents' support, drift and learning health on their ISV rows, on the device.
        adaptive_after_update(self.isv, self.adaptive_params, self.envs.ps, target_mean.transpose(1, 2), grad_norm)
        tau = self.isv_local[:, ISV_TAU]  # [P]
        with torch.no_grad():
            self.target.flat.lerp_(self.online.flat, tau.unsqueeze(1))
        terms = StackedLossTerms(total=total, c51_per_branch=c51_per_branch, iqn=iqn_total, cql=cql_total,
                                 next_return=return_loss)  # fmt: skip
        self.metrics.add_(update_metrics(terms, grad_norm))  # [P, METRIC_STRIDE]

    def _adam(self, grad: torch.Tensor) -> None:
        """Adam (torch's capturable formulation) over the [P, N] rows: per-agent step, lr, ε and
        decoupled weight decay (AdamW: the weights shrink by 1 − lr · decay before the step)."""
        beta1, beta2 = self.betas
        with torch.no_grad():
            if self.weight_decay is not None:
                self.online.flat.mul_((1 - self.lr * self.weight_decay).unsqueeze(1))  # [P, N]
            self.adam_step.add_(1.0)  # [P]
            bias_correction1 = 1 - torch.pow(beta1, self.adam_step)  # [P]
            bias_correction2 = 1 - torch.pow(beta2, self.adam_step)  # [P]
            step_size_neg = (self.lr / bias_correction1).neg()  # [P]
            bias_correction2_sqrt = bias_correction2.sqrt()  # [P]
            self.exp_avg.lerp_(grad, 1 - beta1)  # [P, N]
            self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)  # [P, N]
            denom = (self.exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg).unsqueeze(1)).add_(
                (self.eps / step_size_neg).unsqueeze(1)
            )  # [P, N]
            self.online.flat.addcdiv_(self.exp_avg, denom)
