"""The flat margin: how much better than FLAT a position must look before the greedy policy takes it.

Why: the Q-values of a distributional agent trained on a few thousand noisy updates rank the
direction of the next move well but carry a bias between FLAT and the positions that nothing in the
data pins down — on a bar whose edge is too small to pay for its variance, the expected reward of a
position and of FLAT differ by a few hundredths of the reward's noise. Seed to seed the greedy
policy then either trades nearly every bar (measured: a regime-market agent that agreed with the
feasible oracle's direction on 93 % of the oracle's trading bars was never flat, where the oracle
was flat on 46 %) or stays out sensibly. A policy that goes flat where its preference for a
position is weakest has the higher Sharpe ratio on such bars — the feasible oracle and the fitted
baselines of the learning suite get exactly this, a flat band fitted on their training bars
(``trainer.data.synthetic.fit_flat_band``).

What: after training, the selected epoch's network walks the **validation** window once as it is
(margin 0) and records, per bar, its direction gap — the best of SHORT, HOLD and LONG less FLAT, in
the values the backtest chooses by (``TrainStep.backtest_values``). The candidate margins are 0 and
the non-negative quantiles of those gaps at ``MARGIN_LEVELS``; one batched validation rollout scores
each (FLAT's value raised by the margin before the argmax), and the one with the best ``run.select``
score is kept, the smallest on ties, so a margin must beat the plain policy to be chosen. The test
window is then backtested once, with it. Training, the epoch selection and every epoch's validation
are untouched: the margin is part of how the selected policy acts, chosen on the split that chooses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainer.layout import BRANCH_DIRECTION, DIRECTION_FLAT, DIRECTION_HOLD, DIRECTION_LONG, DIRECTION_SHORT
from trainer.model.network import masked_values
from trainer.train.selection import criterion_value, scored_metric

#: Quantile levels of the validation window's direction gaps that give the candidate margins (0 is
#: always a candidate besides them): a margin at level q keeps the policy flat on roughly the share
#: q of the bars where it preferred a position least.
MARGIN_LEVELS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)

_POSITIONS = (DIRECTION_SHORT, DIRECTION_HOLD, DIRECTION_LONG)


def direction_gap(values: torch.Tensor) -> torch.Tensor:
    """The best of SHORT, HOLD and LONG less FLAT per row: values [M, D, A] → [M]."""
    direction = values[:, BRANCH_DIRECTION]  # [M, A]
    positions = torch.stack([direction[:, action] for action in _POSITIONS], dim=-1)  # [M, 3]
    return positions.amax(-1) - direction[:, DIRECTION_FLAT]


def with_flat_margin(values: torch.Tensor, margins: torch.Tensor) -> torch.Tensor:
    """``values`` [M, D, A] with FLAT's value raised by each row's margin [M] (a margin of 0 leaves
    every value exactly as it was). Out of place: the caller's values are not changed."""
    raised = values.clone()
    raised[:, BRANCH_DIRECTION, DIRECTION_FLAT] += margins
    return raised


def greedy_with_margin(values: torch.Tensor, margins: torch.Tensor | None, mask: torch.Tensor) -> torch.Tensor:
    """Each branch's argmax over its real actions [M, D] of ``values`` [M, D, A], FLAT's value first
    raised by each row's margin [M] (None: no margin) — how every backtest chooses."""
    raised = values if margins is None else with_flat_margin(values, margins)
    return masked_values(raised, mask).argmax(-1)


@dataclass(frozen=True)
class MarginCandidate:
    level: float  # quantile level of the gaps (0 = no margin)
    margin: float  # added to FLAT's value
    validation: float | None = None  # the run.select score of the validation rollout with it
    flat_share: float | None = None  # share of the validation bars it held no position


def margin_candidates(gaps: np.ndarray) -> list[MarginCandidate]:
    """Margin 0, then the distinct positive quantiles of ``gaps`` at ``MARGIN_LEVELS`` (a quantile
    at or below 0 would make FLAT less attractive than the plain policy finds it: left out)."""
    finite = np.asarray(gaps, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    candidates = [MarginCandidate(0.0, 0.0)]
    if finite.size == 0:
        return candidates
    seen: set[float] = set()
    for level in MARGIN_LEVELS:
        margin = float(np.quantile(finite, level))
        if margin > 0.0 and margin not in seen:
            seen.add(margin)
            candidates.append(MarginCandidate(level, margin))
    return candidates


@dataclass(frozen=True)
class FlatMarginChoice:
    """The margin a run's test backtest acts with, and how the validation window chose it."""

    margin: float
    level: float
    metric: str
    candidates: tuple[MarginCandidate, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin, "level": self.level, "criterion": f"validation {self.metric}",
            "candidates": [
                {"level": c.level, "margin": c.margin, "validation": c.validation, "flat_share": c.flat_share}
                for c in self.candidates
            ],
        }  # fmt: skip


def choose_margin(candidates: Sequence[MarginCandidate], reports: Sequence[dict[str, Any]], flat_shares: Sequence[float],
                  select: str) -> FlatMarginChoice:  # fmt: skip
    """The candidate whose validation report scores best by ``select`` (``run.select``; "last" scores
    the Sharpe ratio), the earliest — the smallest margin — on ties."""
    if len(candidates) != len(reports) or len(reports) != len(flat_shares) or not candidates:
        raise ValueError(
            f"margin candidates and their reports differ ({len(candidates)} candidates, {len(reports)} reports, "
            f"{len(flat_shares)} flat shares) — hint: score every candidate once"
        )
    metric = scored_metric(select)
    values = [criterion_value(report, metric) for report in reports]
    scored = [
        MarginCandidate(c.level, c.margin, _finite(value), float(share))
        for c, value, share in zip(candidates, values, flat_shares, strict=True)
    ]
    best = max(range(len(scored)), key=lambda i: (values[i], -i))
    return FlatMarginChoice(scored[best].margin, scored[best].level, metric, tuple(scored))


def recorded_margin(extra: dict[str, Any]) -> float:
    """The margin a checkpoint manifest's ``extra`` records (0 when it records none)."""
    found = extra.get("flat_margin")
    return float(found["margin"]) if isinstance(found, dict) and "margin" in found else 0.0


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None
