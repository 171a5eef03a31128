"""Per-component, per-group gradient norms (HEALTH_DIAG ``grad_norms``) on the CPU."""

from __future__ import annotations

import math

import pytest
import torch
from train_helpers import synthetic_market, tiny_config

from trainer.eval.health_diag import (
    HealthDiagRecord,
    HealthDiagWriter,
    read_health_diag,
)
from trainer.train.grad_diag import (
    BRANCH_NAMES,
    GROUP_NAMES,
    component_grad_norms,
    component_names,
    epoch_grad_norms,
)
from trainer.train.graph import StepRunner
from trainer.train.step import TrainerState, TrainStep


def trained_step(steps: int = 3, **sections: dict) -> TrainStep:
    torch.set_num_threads(1)
    config = tiny_config(**sections)
    state = TrainerState(config, synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    StepRunner(step, use_graph=False).run(steps)
    return step


def test_record_has_finite_norms_for_every_component_and_group(tmp_path):
    step = trained_step(loss={"cql_alpha": 0.5})
    section = epoch_grad_norms(step, 1.5)
    assert section["global"] == 1.5
    assert set(section["c51"]) == set(BRANCH_NAMES)
    for by_group in [*section["c51"].values(), section["iqn"], section["cql"], section["return"]]:
        assert tuple(by_group) == GROUP_NAMES
        assert all(math.isfinite(value) and value >= 0 for value in by_group.values())
        assert by_group["trunk"] > 0
    # the record passes the HEALTH_DIAG schema and reads back unchanged
    writer = HealthDiagWriter(tmp_path / "health_diag.jsonl")
    writer.write(HealthDiagRecord(epoch=0, grad_norms=section))
    assert read_health_diag(tmp_path)[0].grad_norms == section


def test_a_branch_loss_does_not_reach_another_branch_head():
    step = trained_step()
    section = epoch_grad_norms(step, 0.0)
    direction = section["c51"]["direction"]
    assert direction["direction"] > 0
    for other in BRANCH_NAMES[1:]:
        assert direction[other] == 0.0, other
    assert direction["iqn_head"] == 0.0  # C51 never touches the τ embedding
    assert direction["return_head"] == 0.0
    assert all(section["iqn"][name] > 0 for name in GROUP_NAMES if name != "return_head")  # IQN reaches every head
    assert section["iqn"]["return_head"] == 0.0
    # the auxiliary return regression reaches the trunk and its own head, nothing else
    reached = {name for name, value in section["return"].items() if value > 0}
    assert reached == {"trunk", "return_head"}


def test_optional_rows_only_when_enabled():
    assert [name for name, _ in component_names(())].count("cql") == 0
    assert [name for name, _ in component_names(("return",))][-1] == "return"
    step = trained_step(loss={"cql_alpha": 0.0, "return_weight": 0.0})
    section = epoch_grad_norms(step, 0.0)
    assert "cql" not in section and "return" not in section
    norms = component_grad_norms(step)
    assert norms.shape == (len(BRANCH_NAMES) + 1, len(GROUP_NAMES))
    assert component_grad_norms(trained_step(loss={"cql_alpha": 0.5})).shape == (len(BRANCH_NAMES) + 3, len(GROUP_NAMES))


def test_groups_partition_the_gradient():
    """Squared group norms add up to the squared norm of the whole gradient of that term."""
    step = trained_step()
    state = step.state
    norms = component_grad_norms(step)  # [C, G]
    batch = state.replay.sample(state.replay_draws)
    b, n = step.batch_size, step.n_tau
    taus = state.tau_draws[: b * n].view(b, n)
    taus_target = state.tau_draws[b * n :].view(b, step.n_tau_target)
    losses = step.losses(batch, taus, taus_target)
    parameters = list(state.online.parameters())
    grads = torch.autograd.grad(state.config.loss.iqn_weight * losses.iqn.total, parameters, allow_unused=True)
    whole = torch.sqrt(sum(grad.square().sum() for grad in grads if grad is not None))
    assert torch.allclose(norms[len(BRANCH_NAMES)].square().sum().sqrt(), whole, rtol=1e-5)


def test_diagnostic_changes_nothing_the_next_step_uses():
    """Training with the diagnostic between steps is bitwise identical to training without it."""
    plain, diagnosed = trained_step(steps=0), trained_step(steps=0)
    runner_plain, runner_diag = StepRunner(plain, use_graph=False), StepRunner(diagnosed, use_graph=False)
    for _ in range(3):
        runner_plain.run(2)
        runner_diag.run(2)
        epoch_grad_norms(diagnosed, 0.0)
    first, second = plain.state.named_tensors(), diagnosed.state.named_tensors()
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name
    for param in diagnosed.state.online.parameters():
        assert param.grad is not None
    grads_plain = [p.grad for p in plain.state.online.parameters()]
    grads_diag = [p.grad for p in diagnosed.state.online.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(grads_plain, grads_diag, strict=True))


def test_parameter_groups_reject_wrong_branch_names():
    step = trained_step(steps=0)
    with pytest.raises(ValueError, match="branch names do not fit the network"):
        step.state.online.parameter_groups(("a", "b"))
    with pytest.raises(ValueError, match="hint: pass one name per branch"):
        step.state.online.parameter_groups(("trunk", "b", "c", "d"))
