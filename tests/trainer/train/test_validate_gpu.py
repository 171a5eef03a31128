"""The greedy rollout on the GPU: its bar captured once per run and shape, replayed per bar, bitwise
equal to the eager walk — and to the uncaptured loop it replaced — epoch after epoch.

What each test pins:

- ``test_captured_rollout_equals_the_eager_walk_bit_for_bit``: equity, units and actions of a
  captured rollout (warm-up bars, capture, replays) against the same ``WindowRollout`` walked eagerly
  and against the old Python loop (``reference_rollout``), for a first rollout and for a second one
  after training steps and an in-place weight change (the graph reads the parameters in place and
  is not captured again).
- ``test_a_captured_rollout_acts_with_the_target_weights_and_gives_the_online_ones_back``:
  ``run.policy_weights = "target"`` swaps the target's weights into the storage the graph reads and
  back; captured = eager = the old loop acting with the target's weights, training tensors unchanged.
- ``test_a_captured_rollout_acts_with_the_mirror_averaged_choice``: ``run.policy_mirror`` (one
  forward pass of the states and their mirror images per bar) captures and replays: captured = eager
  = the old loop choosing by ``backtest_greedy``, training tensors unchanged.
- ``test_rollout_replays_never_sync``: once captured, walking every bar of a window makes no host sync.
- ``test_train_validates_identically_with_the_rollout_captured_or_not``: the product loop
  (``trainer.train.loop.train``) writes the same HEALTH_DIAG records and metrics.json with the
  rollouts captured (its default on CUDA) or eager.

Data: synthetic markets (the GPU machine has torch, CuPy and numpy, not the loaders' dependencies).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from train_helpers import (
    online_holding_target,
    perturb_network,
    reference_rollout,
    synthetic_market,
    synthetic_prepared_market,
    tiny_config,
)

from trainer.train import loop
from trainer.train.graph import StepRunner
from trainer.train.step import MarketWindow, TrainerState, TrainStep
from trainer.train.validate import GreedyRollouts, WindowRollout

pytestmark = pytest.mark.gpu

STARTS, N_BARS = [100, 700], 400  # two windows in lock-step (the epoch boundary's validation + training tail)


def cuda_run(seed: int = 0, policy_weights: str = "online", policy_mirror: bool = False) -> tuple[TrainerState, TrainStep, StepRunner, MarketWindow]:
    """A tiny CUDA run after a few captured training steps, its weights perturbed so the policy trades."""
    config = tiny_config(env={"n_envs": 32}, replay={"capacity": 2048, "batch_size": 32, "learning_starts": 128},
                         run={"seed": seed, "device": "cuda", "cuda_graph": True, "policy_weights": policy_weights,
                              "policy_mirror": policy_mirror})  # fmt: skip
    market = synthetic_market(1200)
    state = TrainerState(config, market, torch.device("cuda"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    runner = StepRunner(step, use_graph=True)
    runner.run(8)
    perturb_network(state, seed)
    return state, step, runner, market


def walked(rollout: WindowRollout) -> dict[str, torch.Tensor]:
    """The rollout's device buffers as bits (f32 viewed as int32: -0.0 and NaN payloads count)."""
    torch.cuda.synchronize()
    return {
        "equity": rollout.equity.clone().view(torch.int32), "units": rollout.units.clone().view(torch.int32),
        "actions": rollout.actions.clone(), "cursor": rollout.cursor.clone(), "ps": rollout.env.ps.clone().view(torch.int32),
        "counter": rollout.env.counter.clone(),
    }  # fmt: skip


def mismatches(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> list[str]:
    report = []
    for name, expected in want.items():
        if not torch.equal(expected, got[name]):
            first = (expected != got[name]).nonzero()[:3].tolist()
            report.append(f"{name}: first differing indices {first}")
    return report


def test_captured_rollout_equals_the_eager_walk_bit_for_bit():
    state, step, runner, market = cuda_run()
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])  # limit fills and spread costs vary
    captured = GreedyRollouts(state, step, capture=True).rollout(close, spread, market.offset, len(STARTS), N_BARS)
    eager = GreedyRollouts(state, step, capture=False).rollout(close, spread, market.offset, len(STARTS), N_BARS)
    graph = None
    for epoch in range(2):
        if epoch:  # the next epoch: graph replays of the training step, then an in-place weight change
            runner.run(6)
            perturb_network(state, seed=epoch)
        trace = captured.run(STARTS)
        got = walked(captured)
        assert captured.graph is not None, "the rollout never captured its bar"
        graph = captured.graph if graph is None else graph
        assert captured.graph is graph, "the rollout captured its bar again"
        eager_trace = eager.run(STARTS)
        assert eager.graph is None
        problems = mismatches(walked(eager), got)
        assert not problems, f"epoch {epoch}: captured vs eager rollout: {problems}"
        equity, units, actions = reference_rollout(state, step, close, spread, market.offset, STARTS, N_BARS)
        assert np.array_equal(trace.equity, equity) and np.array_equal(trace.units, units), f"epoch {epoch}: vs the old loop"
        assert np.array_equal(trace.actions, actions), f"epoch {epoch}: actions vs the old loop"
        assert np.array_equal(trace.actions, eager_trace.actions)
        assert len(np.unique(trace.actions[:, :, 0])) > 1, "the policy never changed its direction: a weak comparison"


def walks_match_the_old_loop(state: TrainerState, step: TrainStep, market: MarketWindow, close: torch.Tensor,
                             spread: torch.Tensor, reference: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:  # fmt: skip
    """Two walks of a captured and an eager rollout (warm-up bars and the capture, then replays only):
    captured = eager = the old loop's ``reference`` (equity, units, actions), bit for bit, every
    training tensor unchanged, and the policy changing its direction (else the comparison is weak)."""
    equity, units, actions = reference
    before = {name: tensor.clone() for name, tensor in state.named_tensors().items() if name != "isv_local"}
    captured = GreedyRollouts(state, step, capture=True).rollout(close, spread, market.offset, len(STARTS), N_BARS)
    eager = GreedyRollouts(state, step, capture=False).rollout(close, spread, market.offset, len(STARTS), N_BARS)
    for walk in range(2):
        trace = captured.run(STARTS)
        eager.run(STARTS)
        problems = mismatches(walked(eager), walked(captured))
        assert not problems, f"walk {walk}: captured vs eager rollout: {problems}"
        assert np.array_equal(trace.equity, equity) and np.array_equal(trace.units, units), f"walk {walk}: vs the old loop"
        assert np.array_equal(trace.actions, actions), f"walk {walk}: actions vs the old loop"
    assert captured.graph is not None
    changed = [name for name, tensor in state.named_tensors().items() if name in before and not torch.equal(before[name], tensor)]
    assert not changed, f"the rollouts changed {changed}"
    assert len(np.unique(actions[:, :, 0])) > 1, "the policy never changed its direction: a weak comparison"


def test_a_captured_rollout_acts_with_the_target_weights_and_gives_the_online_ones_back():
    """run.policy_weights = "target": the captured bar reads the online storage, into which the
    target's weights are copied for the walk — captured equals eager equals the old loop acting with
    the target's weights, run after run, and every training tensor comes back bit for bit."""
    state, step, _, market = cuda_run(seed=5, policy_weights="target")
    with torch.no_grad():
        for target in state.target.parameters():
            target.mul_(-3.0)  # a target far from the online weights
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])
    with online_holding_target(state):
        reference = reference_rollout(state, step, close, spread, market.offset, STARTS, N_BARS)
    walks_match_the_old_loop(state, step, market, close, spread, reference)


def test_a_captured_rollout_acts_with_the_mirror_averaged_choice():
    """run.policy_mirror: the captured bar's one forward pass of the states and their mirror images
    replays bit for bit as the eager walk and the old loop choosing by ``backtest_greedy``."""
    state, step, _, market = cuda_run(seed=6, policy_mirror=True)
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])
    reference = reference_rollout(state, step, close, spread, market.offset, STARTS, N_BARS)
    walks_match_the_old_loop(state, step, market, close, spread, reference)


def test_a_captured_rollout_reads_each_walks_flat_margins_from_its_buffer():
    """trainer.train.flat_margin: the margins are written into the buffer the captured bar reads, so
    one graph walks any margins — captured = eager = the old loop given those margins, bit for bit,
    and the margin-0 walk after a margin walk is the plain one again."""
    state, step, _, market = cuda_run(seed=7, policy_mirror=True)
    close, spread = market.close, torch.linspace(0.0, 0.05, market.close.shape[0])
    captured = GreedyRollouts(state, step, capture=True).rollout(close, spread, market.offset, len(STARTS), N_BARS)
    eager = GreedyRollouts(state, step, capture=False).rollout(close, spread, market.offset, len(STARTS), N_BARS)
    plain = captured.run(STARTS)
    margins = [float(np.quantile(plain.gaps[:, i], 0.6)) for i in range(len(STARTS))]
    assert max(margins) > 0.0, "the network never preferred a position: a weak comparison"
    for walk_margins in (margins, [0.0] * len(STARTS)):
        trace = captured.run(STARTS, walk_margins)
        eager_trace = eager.run(STARTS, walk_margins)
        problems = mismatches(walked(eager), walked(captured))
        assert not problems, f"margins {walk_margins}: captured vs eager rollout: {problems}"
        assert np.array_equal(trace.gaps, eager_trace.gaps)
        equity, units, actions = reference_rollout(state, step, close, spread, market.offset, STARTS, N_BARS, walk_margins)
        assert np.array_equal(trace.equity, equity) and np.array_equal(trace.actions, actions), f"margins {walk_margins}: vs the old loop"
    assert captured.graph is not None
    assert np.array_equal(trace.actions, plain.actions) and np.array_equal(trace.equity, plain.equity)
    with_margin = captured.run(STARTS, margins)
    assert not np.array_equal(with_margin.actions, plain.actions), "the margins changed no choice: a weak comparison"


def test_rollout_replays_never_sync():
    state, step, _, market = cuda_run(seed=3)
    rollout = GreedyRollouts(state, step).rollout(market.close, market.spread, market.offset, len(STARTS), N_BARS)
    first = rollout.run(STARTS)  # warm-up bars and the capture
    assert rollout.graph is not None
    rollout.begin(STARTS)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        rollout.advance(rollout.n_steps)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    again = rollout.read()
    assert np.array_equal(first.equity, again.equity) and np.array_equal(first.actions, again.actions)


def test_train_validates_identically_with_the_rollout_captured_or_not(tmp_path: Path, monkeypatch):
    market = synthetic_prepared_market(400)
    monkeypatch.setattr(loop, "prepare_market", lambda config: market)
    made: list[GreedyRollouts] = []

    def rollouts(capture: bool) -> type[GreedyRollouts]:
        class Recorded(GreedyRollouts):
            def __init__(self, state: TrainerState, step: TrainStep) -> None:
                super().__init__(state, step, capture=capture)
                made.append(self)

        return Recorded

    config = tiny_config(env={"n_envs": 16}, run={"device": "cuda", "cuda_graph": True, "steps": 36, "epoch_steps": 12})
    results = {}
    for capture in (True, False):
        monkeypatch.setattr(loop, "GreedyRollouts", rollouts(capture))
        out = tmp_path / f"capture-{capture}"
        loop.train(config, out, make_plots=False)
        records = [json.loads(line) for line in (out / "health_diag.jsonl").read_text().splitlines()]
        for record in records:
            record.pop("wall_time_s")
        results[capture] = (records, json.loads((out / "metrics.json").read_text()))
    captured_rollouts = made[0].by_shape.values()
    assert captured_rollouts and all(rollout.graph is not None for rollout in captured_rollouts)
    assert all(rollout.graph is None for rollout in made[1].by_shape.values())
    assert results[True][0] == results[False][0]
    assert results[True][1] == results[False][1]
