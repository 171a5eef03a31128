"""The adaptive kernels' leading agent dimension: one call over a population's rows is each agent's
own call, bitwise (references on the CPU; kernel against reference, and against one launch per
agent, on the GPU)."""

from __future__ import annotations

import pytest
import torch
from adaptive_support import assert_close, fresh_isv

from trainer.layout import (
    ISV_EPOCH_INDEX,
    ISV_GAMMA,
    ISV_LEARNING_HEALTH,
    ISV_Q_MEAN_DRIFT_EMA,
    ISV_SHARPE_EMA,
    ISV_TOTAL_EPOCHS,
    N_BRANCHES,
    PS_DSR_A,
    PS_DSR_B,
    PS_KELLY_LOSS_SUM,
    PS_KELLY_LOSSES,
    PS_KELLY_WIN_SUM,
    PS_KELLY_WINS,
    PS_STRIDE,
)
from trainer.ops.adaptive_atom_support import AtomSupportParams, adaptive_atom_support, adaptive_atom_support_reference
from trainer.ops.adaptive_kelly_cap import KellyParams, adaptive_kelly_cap, adaptive_kelly_cap_reference, kelly_cap_workspace
from trainer.ops.adaptive_learning_health import HealthParams, adaptive_learning_health, adaptive_learning_health_reference
from trainer.ops.adaptive_schedule import ScheduleParams, adaptive_schedule, adaptive_schedule_reference

AGENTS = 3
ATOMS = AtomSupportParams(v_min=-10.0, v_max=10.0, decay_bars=9, drift_decay_bars=9, k_sigma=4.0, half_width_floor=1.0, n_step=2)
KELLY = KellyParams(cap_floor=0.0, cap_max=1e6)


def population_isv(agents: int = AGENTS) -> torch.Tensor:
    """[agents, ISV_STRIDE]: fresh ISVs whose adaptive inputs differ per agent (health, drift, γ, epoch)."""
    rows = torch.stack([fresh_isv().host.clone() for _ in range(agents)])
    for agent in range(agents):
        rows[agent, ISV_LEARNING_HEALTH] = 0.2 + 0.3 * agent
        rows[agent, ISV_Q_MEAN_DRIFT_EMA] = 0.1 * agent
        rows[agent, ISV_GAMMA : ISV_GAMMA + N_BRANCHES] = torch.tensor([0.99, 0.9, 0.5, 0.0]) * (1.0 - 0.1 * agent)
        rows[agent, ISV_EPOCH_INDEX] = float(agent)
        rows[agent, ISV_TOTAL_EPOCHS] = 4.0
    return rows


def population_ps(n_envs: int, agents: int = AGENTS) -> torch.Tensor:
    """[agents, n_envs, PS_STRIDE]: DSR EMAs and Kelly records that differ per agent."""
    generator = torch.Generator().manual_seed(n_envs)
    ps = torch.zeros(agents, n_envs, PS_STRIDE)
    ps[..., PS_DSR_A] = torch.randn(agents, n_envs, generator=generator) * 1e-3
    ps[..., PS_DSR_B] = ps[..., PS_DSR_A] ** 2 + torch.rand(agents, n_envs, generator=generator) * 1e-4
    ps[..., PS_KELLY_WINS] = 2.0 + torch.randint(0, 9, (agents, n_envs), generator=generator)
    ps[..., PS_KELLY_LOSSES] = 2.0 + torch.randint(0, 9, (agents, n_envs), generator=generator)
    ps[..., PS_KELLY_WIN_SUM] = ps[..., PS_KELLY_WINS] * 0.006
    ps[..., PS_KELLY_LOSS_SUM] = ps[..., PS_KELLY_LOSSES] * 0.004
    return ps


def population_targets(batch: int, agents: int = AGENTS) -> torch.Tensor:
    generator = torch.Generator().manual_seed(batch)
    return torch.randn(agents, batch, N_BRANCHES, generator=generator) * torch.arange(1, agents + 1).view(agents, 1, 1)


def run_all(rows: torch.Tensor, ps: torch.Tensor, targets: torch.Tensor, grads: torch.Tensor, workspace: torch.Tensor) -> None:
    """Every adaptive op once over the whole population, in the training step's and the epoch's order."""
    adaptive_atom_support(targets, rows, ATOMS)
    adaptive_learning_health(ps, grads, rows, HealthParams())
    adaptive_schedule(rows, ScheduleParams())
    adaptive_kelly_cap(ps, rows, workspace, KELLY)


def run_each(rows: torch.Tensor, ps: torch.Tensor, targets: torch.Tensor, grads: torch.Tensor, workspace: torch.Tensor) -> None:
    """The same ops, one agent at a time on its own rows (the single-run shapes)."""
    for agent in range(rows.shape[0]):
        adaptive_atom_support(targets[agent], rows[agent], ATOMS)
        adaptive_learning_health(ps[agent], grads[agent : agent + 1], rows[agent], HealthParams())
        adaptive_schedule(rows[agent], ScheduleParams())
        adaptive_kelly_cap(ps[agent], rows[agent], workspace[agent], KELLY)


@pytest.mark.parametrize(("n_envs", "batch"), [(1, 1), (257, 300)])
def test_one_call_over_the_population_is_each_agent_alone_bitwise(n_envs: int, batch: int):
    together, alone = population_isv(), population_isv()
    ps, targets, grads = population_ps(n_envs), population_targets(batch), torch.tensor([1.0, 5.0, float("nan")])
    for _ in range(2):
        run_all(together, ps, targets, grads, kelly_cap_workspace(n_envs, "cpu", agents=AGENTS))
        run_each(alone, ps, targets, grads, kelly_cap_workspace(n_envs, "cpu", agents=AGENTS))
    assert torch.equal(together, alone)
    assert not torch.equal(together[0], together[1])  # the agents' rows did not mix


def test_agent_counts_that_disagree_are_explained():
    rows, ps = population_isv(), population_ps(4, agents=2)
    with pytest.raises(ValueError, match=r"atom support inputs are malformed \(2 agents of td_targets vs 3 ISV rows\) — hint"):
        adaptive_atom_support(population_targets(5, agents=2), rows, ATOMS)
    with pytest.raises(ValueError, match=r"learning-health inputs are malformed \(.*2 agents of ps vs 3 ISV rows\) — hint"):
        adaptive_learning_health(ps, torch.zeros(3), rows, HealthParams())
    with pytest.raises(ValueError, match=r"learning-health inputs are malformed \(grad_norm \(2,\) .* per agent\) — hint"):
        adaptive_learning_health(population_ps(4), torch.zeros(2), rows, HealthParams())
    with pytest.raises(ValueError, match=r"Kelly cap inputs are malformed \(.*2 agents of ps vs 3 ISV rows\) — hint"):
        adaptive_kelly_cap(ps, rows, kelly_cap_workspace(4, "cpu", agents=2), KELLY)
    with pytest.raises(ValueError, match=r"Kelly cap inputs are malformed \(workspace \(1, 4, 1\) vs \[3, 4, 1\]\) — hint"):
        adaptive_kelly_cap(population_ps(4), rows, kelly_cap_workspace(4, "cpu"), KELLY)
    with pytest.raises(ValueError, match=r"ISV has the wrong shape .*\[agents, \d+\] float32\) — hint"):
        adaptive_schedule(rows.unsqueeze(0), ScheduleParams())


@pytest.mark.gpu
@pytest.mark.parametrize(("n_envs", "batch"), [(1, 1), (255, 3), (257, 257), (4096 + 3, 4099)])
@pytest.mark.parametrize("agents", [1, 2, 5])
def test_kernels_over_the_population_match_the_references(n_envs: int, batch: int, agents: int):
    rows = population_isv(agents)
    ps, targets = population_ps(n_envs, agents), population_targets(batch, agents)
    grads = torch.linspace(0.5, 3.0, agents)
    expected = rows.clone()
    for _ in range(2):
        adaptive_atom_support_reference(targets, expected, ATOMS)
        adaptive_learning_health_reference(ps, grads, expected, HealthParams())
        adaptive_schedule_reference(expected, ScheduleParams())
        adaptive_kelly_cap_reference(ps, expected, kelly_cap_workspace(n_envs, "cpu", agents=agents), KELLY)
    rows_gpu, workspace = rows.cuda(), kelly_cap_workspace(n_envs, "cuda", agents=agents)
    for _ in range(2):
        run_all(rows_gpu, ps.cuda(), targets.cuda(), grads.cuda(), workspace)
    torch.cuda.synchronize()
    assert_close(f"adaptive kernels agents={agents} n_envs={n_envs} batch={batch}", rows_gpu, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize(("n_envs", "batch"), [(1, 1), (257, 300), (4096 + 3, 4099)])
def test_kernels_over_the_population_are_one_launch_per_agent_bitwise(n_envs: int, batch: int):
    ps, targets, grads = population_ps(n_envs).cuda(), population_targets(batch).cuda(), torch.tensor([1.0, 5.0, 0.3]).cuda()
    together, alone = population_isv().cuda(), population_isv().cuda()
    for _ in range(2):
        run_all(together, ps, targets, grads, kelly_cap_workspace(n_envs, "cuda", agents=AGENTS))
        run_each(alone, ps, targets, grads, kelly_cap_workspace(n_envs, "cuda", agents=AGENTS))
    torch.cuda.synchronize()
    assert torch.equal(together, alone)


@pytest.mark.parametrize("agents", [17, 40])
def test_many_agents_in_one_reference_call_are_each_agent_alone_bitwise(agents: int):
    """More agents than one SIMD register of the CPU holds (16 f32): each agent's rows are still its
    lone call's, bit for bit (the references' elementwise ops, tanh included, round an agent's value
    the same wherever it sits in the [agents] tensor)."""
    generator = torch.Generator().manual_seed(agents)
    together = population_isv(agents)
    together[:, ISV_Q_MEAN_DRIFT_EMA] = torch.rand(agents, generator=generator)
    together[:, ISV_SHARPE_EMA] = torch.randn(agents, generator=generator) * 3.0  # tanh well away from its linear part
    alone = together.clone()
    ps, targets = population_ps(33, agents), population_targets(40, agents)
    grads = torch.rand(agents, generator=generator) * 4.0
    for _ in range(3):
        adaptive_atom_support(targets, together, ATOMS)
        adaptive_learning_health(ps, grads, together, HealthParams())
        for agent in range(agents):
            adaptive_atom_support(targets[agent], alone[agent], ATOMS)
            adaptive_learning_health(ps[agent], grads[agent : agent + 1], alone[agent], HealthParams())
    assert torch.equal(together.view(torch.int32), alone.view(torch.int32))
