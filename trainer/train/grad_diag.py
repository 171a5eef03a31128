"""Gradient norms per loss component and parameter group: the HEALTH_DIAG ``grad_norms`` section.

Why at the epoch boundary and not in the step: splitting the gradient by component needs one
backward per component, which would multiply the cost of the captured step. Once per epoch, on the
cold path, one diagnostic pass recomputes every loss term with the step's own loss code
(``TrainStep.losses``) on the step's last replay batch and differentiates each term separately
with ``torch.autograd.grad`` — nothing accumulates into ``.grad``, no parameter, optimizer moment,
ISV slot or RNG counter changes, so a run with the diagnostic is bitwise identical to one without.

Why the last batch: it is rebuilt from the replay draws and IQN fractions the step left in its
scratch buffers, and the step stores its transitions before it samples, so after the step the
buffer still holds what it sampled. No new random numbers are drawn.

The norms land in one device tensor [components, groups]; the training loop reads them together
with the epoch's loss sums and action counts in one transfer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from trainer.layout import BRANCHES, ISV_CQL_ALPHA
from trainer.model.network import ParameterSlice
from trainer.train.step import TrainStep

BRANCH_NAMES: tuple[str, ...] = tuple(slot.name.lower() for slot in BRANCHES.slots)
# Parameter groups, in column order of the norm matrix (see BranchingDistributionalNet.parameter_groups).
GROUP_NAMES: tuple[str, ...] = ("trunk", *BRANCH_NAMES, "iqn_head", "return_head")


def component_names(optional: Sequence[str] = ()) -> tuple[tuple[str, str | None], ...]:
    """Rows of the norm matrix as (component, branch or None): C51 per branch, IQN, then the
    ``optional`` components that are on (``optional_components``), in that order."""
    rows: list[tuple[str, str | None]] = [("c51", name) for name in BRANCH_NAMES]
    rows.append(("iqn", None))
    rows.extend((name, None) for name in OPTIONAL_COMPONENTS if name in optional)
    return tuple(rows)


OPTIONAL_COMPONENTS: tuple[str, ...] = ("cql", "return")  # terms that a zero weight switches off


def optional_components(step: TrainStep) -> tuple[str, ...]:
    """The optional loss terms whose configured weight is positive (CQL α is a CPU-born ISV input;
    the return weight a plain config value): only those get a row of gradient norms."""
    loss = step.state.config.loss
    weights = {"cql": loss.cql_alpha, "return": loss.return_weight}
    return tuple(name for name in OPTIONAL_COMPONENTS if weights[name] > 0)


def component_grad_norms(step: TrainStep) -> torch.Tensor:
    """[components, groups] L2 norms of each weighted loss term's gradient, on the device.

    A term's norm is that of its contribution to the total loss the step minimises (C51 branch
    losses as they are, IQN times ``loss.iqn_weight``, CQL times α from the ISV, the return head's
    term times ``loss.return_weight``), before clipping.
    """
    state = step.state
    batch_size, n_tau = step.batch_size, step.n_tau
    batch = state.replay.sample(state.replay_draws)  # the step's last batch, no new draws
    taus = state.tau_draws[: batch_size * n_tau].view(batch_size, n_tau)  # [B, N]
    taus_target = state.tau_draws[batch_size * n_tau :].view(batch_size, step.n_tau_target)  # [B, N′]
    groups = state.online.parameter_groups(BRANCH_NAMES)
    parameters = list(state.online.parameters())
    position = {id(param): index for index, param in enumerate(parameters)}
    with torch.enable_grad():
        losses = step.losses(batch, taus, taus_target)
        terms = [losses.c51.per_branch[branch] for branch in range(len(BRANCH_NAMES))]
        terms.append(state.config.loss.iqn_weight * losses.iqn.total)
        optional = optional_components(step)
        if "cql" in optional:
            terms.append(state.isv_local[ISV_CQL_ALPHA] * losses.cql.total)
        if "return" in optional:
            terms.append(state.config.loss.return_weight * losses.next_return)
        rows = []
        for index, term in enumerate(terms):
            grads = torch.autograd.grad(term, parameters, retain_graph=index + 1 < len(terms), allow_unused=True)
            rows.append(_group_norms(grads, groups, position))
    return torch.stack(rows)  # [C, G]


def _group_norms(
    grads: tuple[torch.Tensor | None, ...], groups: dict[str, list[ParameterSlice]], position: dict[int, int]
) -> torch.Tensor:
    """One gradient split into the groups: [G] L2 norms (an unused parameter contributes zero)."""
    norms = []
    for name in GROUP_NAMES:
        parts = groups[name]
        squares = [torch.zeros((), device=parts[0].parameter.device)]  # a group no term reaches has norm 0
        for part in parts:
            grad = grads[position[id(part.parameter)]]
            if grad is not None:
                squares.append(part.of(grad).detach().square().sum())
        norms.append(torch.stack(squares).sum().sqrt())
    return torch.stack(norms)  # [G]


def grad_norm_section(global_mean: float, rows: Sequence[Sequence[float]], optional: Sequence[str]) -> dict:
    """The whole ``grad_norms`` section from host values: the epoch's mean global norm (clipped-to
    input of the optimizer, from the step's metric sums) and the norm matrix's rows, nested as the
    HEALTH_DIAG schema wants them.

    ``{"global": .., "c51": {"direction": {"trunk": .., "direction": .., ...}, ...}, "iqn": {"trunk": ..,
    ...}, "cql": {...}, "return": {...}}`` — component → (branch →) parameter group → norm.
    """
    section: dict = {"global": global_mean}
    for (component, branch), row in zip(component_names(optional), rows, strict=True):
        by_group = dict(zip(GROUP_NAMES, row, strict=True))
        if branch is None:
            section[component] = by_group
        else:
            section.setdefault(component, {})[branch] = by_group
    return section


def epoch_grad_norms(step: TrainStep, global_mean: float) -> dict:
    """``grad_norm_section`` of the step's last batch, the matrix read from the device in one transfer
    (the training loop packs it into the epoch's one read instead: ``trainer.train.loop.epoch_summary``)."""
    rows = component_grad_norms(step).detach().to("cpu", torch.float64).tolist()
    return grad_norm_section(global_mean, rows, optional_components(step))
