"""The flat margin (trainer.train.flat_margin): its arithmetic, its candidates and choice, the rollout
acting with it, and a run that chooses it on validation, records it and is re-evaluated with it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from test_validate import trading_state
from train_helpers import file_config, reference_rollout

from trainer.data.synthetic import make_regime_market, write_market_csv
from trainer.layout import (
    BRANCH_DIRECTION,
    DIRECTION_FLAT,
    DIRECTION_HOLD,
    DIRECTION_LONG,
    DIRECTION_SHORT,
    N_BRANCHES,
)
from trainer.train.evaluate import evaluate_checkpoint
from trainer.train.flat_margin import (
    MARGIN_LEVELS,
    MarginCandidate,
    choose_margin,
    direction_gap,
    greedy_with_margin,
    margin_candidates,
    recorded_margin,
    with_flat_margin,
)
from trainer.train.loop import train
from trainer.train.validate import GreedyRollouts


def values_with_direction(rows: list[list[float]]) -> torch.Tensor:
    """Q-values [M, D, 4] whose direction branch is ``rows`` (SHORT, HOLD, LONG, FLAT) and every other branch 0."""
    values = torch.zeros(len(rows), N_BRANCHES, 4)
    values[:, BRANCH_DIRECTION] = torch.tensor(rows)
    return values


def test_the_gap_is_the_best_position_less_flat_and_the_margin_raises_flat_alone():
    values = values_with_direction([[0.3, 0.1, -0.2, 0.25], [-1.0, -0.5, -2.0, 0.0]])
    assert DIRECTION_FLAT not in (DIRECTION_SHORT, DIRECTION_HOLD, DIRECTION_LONG)
    assert torch.allclose(direction_gap(values), torch.tensor([0.05, -0.5]))
    raised = with_flat_margin(values, torch.tensor([0.1, 0.0]))
    assert raised[0, BRANCH_DIRECTION, DIRECTION_FLAT] == pytest.approx(0.35)
    assert torch.equal(raised[1], values[1])  # a margin of 0 changes no value
    changed = (raised != values).nonzero().tolist()
    assert changed == [[0, BRANCH_DIRECTION, DIRECTION_FLAT]]  # FLAT of the row with a margin, nothing else
    assert values[0, BRANCH_DIRECTION, DIRECTION_FLAT] == pytest.approx(0.25)  # out of place
    mask = torch.ones(N_BRANCHES, 4, dtype=torch.bool)
    assert greedy_with_margin(values, None, mask)[:, BRANCH_DIRECTION].tolist() == [DIRECTION_SHORT, DIRECTION_FLAT]
    assert greedy_with_margin(values, torch.tensor([0.1, 0.0]), mask)[:, BRANCH_DIRECTION].tolist() == [DIRECTION_FLAT] * 2
    mask[BRANCH_DIRECTION, DIRECTION_FLAT] = False  # a padded action is never chosen, whatever its margin
    assert DIRECTION_FLAT not in greedy_with_margin(values, torch.tensor([9.0, 9.0]), mask)[:, BRANCH_DIRECTION].tolist()


def test_the_candidates_are_zero_and_the_distinct_positive_quantiles_of_the_gaps():
    gaps = np.linspace(-1.0, 1.0, 201)
    candidates = margin_candidates(gaps)
    assert candidates[0] == MarginCandidate(0.0, 0.0)
    # the quantiles at levels 0.1 … 0.5 are ≤ 0 here: only 0.6 … 0.9 make FLAT more attractive
    assert [c.level for c in candidates[1:]] == [level for level in MARGIN_LEVELS if level > 0.5]
    assert [c.margin for c in candidates[1:]] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert margin_candidates(np.full(50, 0.3)) == [MarginCandidate(0.0, 0.0), MarginCandidate(0.1, 0.3)]
    assert margin_candidates(np.array([np.nan, np.inf])) == [MarginCandidate(0.0, 0.0)]


def report(sharpe):
    return {"agent": {"sharpe_ratio": sharpe, "sortino_ratio": None if sharpe is None else -sharpe}}


def test_the_choice_takes_the_best_validation_score_and_the_smallest_margin_on_ties():
    candidates = [MarginCandidate(0.0, 0.0), MarginCandidate(0.5, 0.1), MarginCandidate(0.7, 0.2), MarginCandidate(0.9, 0.3)]
    choice = choose_margin(candidates, [report(1.0), report(2.0), report(2.0), report(None)], [0.0, 0.5, 0.7, 0.9], "sharpe_ratio")
    assert (choice.margin, choice.level, choice.metric) == (0.1, 0.5, "sharpe_ratio")
    assert [c.validation for c in choice.candidates] == [1.0, 2.0, 2.0, 0.0]  # never traded: scores 0
    assert choose_margin(candidates, [report(1.0)] * 4, [0.0] * 4, "sharpe_ratio").margin == 0.0  # no gain: no margin
    by_sortino = choose_margin(candidates, [report(1.0), report(2.0), report(3.0), report(0.5)], [0.0] * 4, "sortino_ratio")
    assert by_sortino.margin == 0.3  # the run.select metric decides
    assert choose_margin(candidates, [report(1.0), report(3.0), report(2.0), report(0.5)], [0.0] * 4, "last").margin == 0.1
    recorded = json.loads(json.dumps(choice.to_dict()))
    assert recorded["criterion"] == "validation sharpe_ratio" and recorded_margin({"flat_margin": recorded}) == 0.1
    assert recorded_margin({}) == 0.0
    with pytest.raises(ValueError, match=r"margin candidates and their reports differ \(4 candidates, 1 reports, 4 flat "
                       r"shares\) — hint: score every candidate once"):  # fmt: skip
        choose_margin(candidates, [report(1.0)], [0.0] * 4, "sharpe_ratio")


def test_a_rollout_goes_flat_exactly_where_its_gap_is_below_the_margin():
    state, step, market = trading_state()
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])
    rollout = GreedyRollouts(state, step).rollout(close, spread, market.offset, 3, 150)
    plain = rollout.run([100, 100, 100])
    margin = float(np.quantile(plain.gaps[:, 0], 0.5))
    assert margin > 0.0, "the random network never preferred a position: a weak comparison"
    trace = rollout.run([100, 100, 100], [0.0, margin, 1e6])
    # margin 0 is the plain policy, bit for bit, and the loop before margins existed walks it too
    assert np.array_equal(trace.actions[:, 0], plain.actions[:, 0]) and np.array_equal(trace.equity[:, 0], plain.equity[:, 0])
    expected = reference_rollout(state, step, close, spread, market.offset, [100, 100, 100], 150, [0.0, margin, 1e6])
    assert np.array_equal(trace.equity, expected[0]) and np.array_equal(trace.actions, expected[2])
    direction = trace.actions[:, 1, BRANCH_DIRECTION]
    below = trace.gaps[:, 1] < margin
    assert np.all(direction[below] == DIRECTION_FLAT) and np.all(direction[~below] != DIRECTION_FLAT)
    assert below.any() and (~below).any()
    assert np.all(trace.units[:, 2] == 0.0) and np.any(trace.units[:, 0] != 0.0)  # an unreachable margin never trades


@pytest.fixture(scope="module")
def margin_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("flat-margin")
    path = write_market_csv(make_regime_market(900, seed=3), root / "regime.csv")
    config = file_config(path, run={"steps": 12, "flat_margin": True})
    return config, root / "run", train(config, root / "run", make_plots=False)


def test_a_run_chooses_its_margin_on_validation_and_its_test_and_eval_act_with_it(margin_run):
    _, run_dir, metrics = margin_run
    chosen = metrics["flat_margin"]
    candidates = chosen["candidates"]
    assert candidates[0]["margin"] == 0.0 and chosen["criterion"] == "validation sharpe_ratio"
    assert len(candidates) > 1, "no positive gap on validation: a weak run"
    scores = [c["validation"] for c in candidates]
    best = scores.index(max(scores))
    assert (chosen["margin"], chosen["level"]) == (candidates[best]["margin"], candidates[best]["level"])
    assert candidates[0]["validation"] == pytest.approx(metrics["validation"]["agent"]["sharpe_ratio"] or 0.0, rel=1e-5)
    manifest = json.loads((run_dir / "checkpoints" / "best.json").read_text())
    assert manifest["extra"]["flat_margin"] == chosen
    evaluated = evaluate_checkpoint(run_dir / "checkpoints" / "best.json", run_dir.parent / "eval", make_plots=False)
    assert evaluated["agent"] == metrics["agent"]  # the run's test number, reproduced from the checkpoint alone
    described = json.loads((run_dir.parent / "eval" / "eval.json").read_text())
    assert described["flat_margin"] == chosen["margin"]


def test_without_the_margin_the_run_reports_none_and_acts_plainly(margin_run, tmp_path):
    config, _, with_margin = margin_run
    plain = train(config.replace(run={"flat_margin": False}), tmp_path / "plain", make_plots=False)
    assert plain["flat_margin"] is None
    assert plain["validation"] == with_margin["validation"] and plain["selection"] == with_margin["selection"]
    if with_margin["flat_margin"]["margin"] == 0.0:
        assert plain["agent"] == with_margin["agent"]
    manifest = json.loads((tmp_path / "plain" / "checkpoints" / "best.json").read_text())
    assert "flat_margin" not in manifest["extra"]
