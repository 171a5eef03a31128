"""Resume with the CUDA graph on (the real GPU training mode) ends bitwise-identical to an uninterrupted run.

What can differ between an uninterrupted graph run and a resumed one, and what each test pins:

- The resumed run captures its graph at another step, after its own eager warm-up steps (real,
  counted training steps), where the uninterrupted run replays: exact only if an eager step and a
  replay of the captured step are the same computation (``test_graph_replay_equals_eager_steps``
  shows that alone, so a resume failure can be told apart from a capture one).
- A stop inside the warm-up or between epoch boundaries (the host counters, Adam's capturable
  step tensor, the learning-rate tensor, the n-step window and the replay ring must all come back
  through the checkpoint): ``test_graph_resume_between_epoch_boundaries``.
- The product's own loop (``trainer.train.loop.train``, what ``trainer train`` runs): stop after
  an epoch, resume from the checkpoint, compare every tensor, HEALTH_DIAG and metrics.json,
  including epochs shorter than the warm-up and epochs split into several progress chunks:
  ``test_train_stop_and_resume_with_graph``; and the resume in a new Python process (fresh
  cuBLAS handles, allocator, kernel caches): ``test_train_resume_in_a_fresh_process``.

Data: a synthetic market handed to the loop in place of ``prepare_market`` (the GPU machine has
torch, CuPy and numpy, not the loaders' dependencies).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from train_helpers import synthetic_market, synthetic_prepared_market, tiny_config

from trainer.config import TrainConfig
from trainer.train import loop
from trainer.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trainer.train.graph import CUBLAS_WORKSPACE_CONFIG, WARMUP_STEPS, StepRunner
from trainer.train.step import TrainerState, TrainStep

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
HELPERS = Path(__file__).resolve().parent
MARKET_BARS = 400


def graph_config(**run: int | str | bool) -> TrainConfig:
    return tiny_config(env={"n_envs": 16}, run={"device": "cuda", "cuda_graph": True, **run})


def bitwise_mismatches(expected: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> list[str]:
    """Every tensor whose bits differ, in state order, with how much (empty when all are identical).

    Bits, not values: -0.0 vs +0.0 and NaN payloads count, as "bitwise-identical" promises.
    """
    assert expected.keys() == got.keys(), f"tensor names differ: {sorted(set(expected) ^ set(got))[:8]}"
    report = []
    for name, want in expected.items():
        want, have = want.detach().cpu(), got[name].detach().cpu()
        if want.shape != have.shape or want.dtype != have.dtype:
            report.append(f"{name}: {tuple(have.shape)} {have.dtype} vs {tuple(want.shape)} {want.dtype}")
            continue
        want_bits = want.reshape(-1).contiguous().view(torch.uint8)
        have_bits = have.reshape(-1).contiguous().view(torch.uint8)
        if torch.equal(want_bits, have_bits):
            continue
        want_values, have_values = want.reshape(-1).double(), have.reshape(-1).double()  # [numel] each
        differing = (want_values != have_values) & ~(want_values.isnan() & have_values.isnan())  # [numel]
        if differing.any():
            gap = (want_values - have_values)[differing].abs().nan_to_num(nan=float("inf")).max().item()
            detail = f"{int(differing.sum())}/{want.numel()} values differ, max |Δ| {gap:.3g}"
        else:
            detail = "values equal, bit patterns differ (signed zero or NaN payload)"
        report.append(f"{name}: {detail}")
    return report


def assert_identical(expected: dict[str, torch.Tensor], got: dict[str, torch.Tensor], what: str) -> None:
    different = bitwise_mismatches(expected, got)
    assert not different, f"{what}: {len(different)} tensors differ, first: " + "; ".join(different[:8])


def snapshot(state: TrainerState) -> dict[str, torch.Tensor]:
    torch.cuda.synchronize(state.device)
    return {name: tensor.detach().clone() for name, tensor in state.named_tensors().items()}


# -- the step runner (what the loop calls between epoch boundaries) ------------------------------


def ready_state(config: TrainConfig) -> tuple[TrainerState, TrainStep]:
    """A state past the loop's pre-learning collects, as ``train`` leaves it before the first epoch."""
    state = TrainerState(config, synthetic_market(MARKET_BARS), torch.device("cuda"))
    step = TrainStep(state)
    collects = config.loss.n_step - 1 + math.ceil(config.replay.learning_starts / config.env.n_envs)
    for _ in range(collects):
        step.collect()
    return state, step


def test_graph_replay_equals_eager_steps():
    """The ground a graph resume stands on: replays compute exactly what eager steps compute."""
    config = graph_config(seed=3)
    eager_state, eager_step = ready_state(config)
    StepRunner(eager_step, use_graph=False).run(12)
    graph_state, graph_step = ready_state(config)
    runner = StepRunner(graph_step, use_graph=True)
    runner.run(12)
    assert runner.graph is not None, "the runner never captured its graph"
    assert graph_state.steps_done == eager_state.steps_done == 12
    assert_identical(snapshot(eager_state), snapshot(graph_state), "12 graph steps vs 12 eager steps")


@pytest.mark.parametrize("stop_at", [1, WARMUP_STEPS, 7], ids=["inside-warm-up", "at-capture", "after-capture"])
def test_graph_resume_between_epoch_boundaries(tmp_path, stop_at):
    """Checkpoint after ``stop_at`` graph-mode steps, resume into new objects (re-captured graph)."""
    total = 14
    config = graph_config(seed=2)
    state, step = ready_state(config)
    StepRunner(step, use_graph=True).run(total)  # one call: warm-up, capture, replays
    expected = snapshot(state)

    state, step = ready_state(config)
    stopped = StepRunner(step, use_graph=True)
    stopped.run(stop_at)
    manifest = save_checkpoint(state, tmp_path, extra={"runner_mode": stopped.mode})
    del stopped, step, state

    resumed = TrainerState(config, synthetic_market(MARKET_BARS), torch.device("cuda"))
    load_checkpoint(resumed, manifest)
    assert resumed.steps_done == stop_at
    runner = StepRunner(TrainStep(resumed), use_graph=True)
    runner.run(5)  # two calls, as the loop's progress chunks do
    runner.run(total - stop_at - 5)
    assert runner.graph is not None
    assert resumed.steps_done == total
    assert_identical(expected, snapshot(resumed), f"resumed at step {stop_at} of {total}")


def test_graph_captures_even_when_every_call_is_shorter_than_the_warm_up():
    """Epochs of 1 or 2 steps: warm-up steps add up across calls, then the step is captured."""
    state, step = ready_state(graph_config(seed=4))
    runner = StepRunner(step, use_graph=True)
    runner.run(2)
    assert runner.graph is None
    runner.run(2)
    assert runner.graph is not None, "graph mode stayed eager"
    counter = int(state.counter)
    runner.run(2)
    torch.cuda.synchronize()
    # explore, env, replay, IQN τ (+ feature noise, + the mirror's coins)
    draws = 4 + (state.noise_draws is not None) + (state.mirror_draws is not None)
    assert int(state.counter) - counter == 2 * draws  # two replays took real steps
    assert state.steps_done == 6


# -- the product loop (`trainer train`) -----------------------------------------------------------


@pytest.fixture
def synthetic_data(monkeypatch):
    """``train`` reads the synthetic market instead of a data file."""
    market = synthetic_prepared_market(MARKET_BARS)
    monkeypatch.setattr(loop, "prepare_market", lambda config: market)


@pytest.fixture
def runners(monkeypatch):
    """The StepRunners ``train`` builds (unchanged behaviour; recorded to check they captured)."""
    made: list[StepRunner] = []

    class RecordedRunner(StepRunner):
        def __init__(self, step: TrainStep, use_graph: bool) -> None:
            super().__init__(step, use_graph)
            made.append(self)

    monkeypatch.setattr(loop, "StepRunner", RecordedRunner)
    return made


def final_tensors(run_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(latest_checkpoint(run_dir / loop.CHECKPOINT_DIRNAME).with_suffix(".safetensors")))


def diag_without_wall_time(run_dir: Path) -> list[dict]:
    records = [json.loads(line) for line in (run_dir / "health_diag.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("wall_time_s")
    return records


def assert_same_run(uninterrupted: Path, resumed: Path) -> None:
    assert_identical(final_tensors(uninterrupted), final_tensors(resumed), "final checkpoint after resume")
    assert diag_without_wall_time(uninterrupted) == diag_without_wall_time(resumed)
    assert json.loads((uninterrupted / "metrics.json").read_text()) == json.loads((resumed / "metrics.json").read_text())


@pytest.mark.parametrize(
    ("steps", "epoch_steps", "stop_after_epochs"),
    [(36, 12, 1), (60, 30, 1), (8, 2, 1)],
    ids=["epochs-of-12", "epochs-of-30-in-two-progress-chunks", "epochs-shorter-than-warm-up"],
)
def test_train_stop_and_resume_with_graph(tmp_path, synthetic_data, runners, steps, epoch_steps, stop_after_epochs):
    config = graph_config(steps=steps, epoch_steps=epoch_steps, seed=1)
    train_kwargs = {"make_plots": False}
    loop.train(config, tmp_path / "uninterrupted", **train_kwargs)
    loop.train(config, tmp_path / "resumed", stop_after_epochs=stop_after_epochs, **train_kwargs)
    assert len(diag_without_wall_time(tmp_path / "resumed")) == stop_after_epochs
    loop.train(config, tmp_path / "resumed", resume=True, **train_kwargs)

    uninterrupted_runner, _, resumed_runner = runners
    assert uninterrupted_runner.graph is not None and resumed_runner.graph is not None, "a run never captured"
    assert os.environ.get("CUBLAS_WORKSPACE_CONFIG"), "train left the cuBLAS workspace unpinned"
    manifest = json.loads(latest_checkpoint(tmp_path / "resumed" / loop.CHECKPOINT_DIRNAME).read_text())
    assert manifest["extra"]["runner_mode"] == "graph" and manifest["steps_done"] == steps
    assert_same_run(tmp_path / "uninterrupted", tmp_path / "resumed")


RESUME_SCRIPT = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path

    sys.path.insert(0, {helpers!r})
    from train_helpers import synthetic_prepared_market

    import trainer.train.loop as loop
    from trainer.config import load_config

    market = synthetic_prepared_market({bars})
    loop.prepare_market = lambda config: market
    run_dir = Path(sys.argv[1])
    loop.train(load_config(run_dir / "config.toml"), run_dir, resume=True, make_plots=False)
    print("cublas-workspace", os.environ.get("CUBLAS_WORKSPACE_CONFIG"))
    """
)


def test_train_resume_in_a_fresh_process(tmp_path, synthetic_data):
    """``trainer train --resume`` as a user runs it: a new process, nothing shared with the first."""
    config = graph_config(steps=36, epoch_steps=12, seed=6)
    loop.train(config, tmp_path / "uninterrupted", make_plots=False)
    loop.train(config, tmp_path / "resumed", stop_after_epochs=2, make_plots=False)
    script = RESUME_SCRIPT.format(helpers=str(HELPERS), bars=MARKET_BARS)
    environment = {key: value for key, value in os.environ.items() if key != "CUBLAS_WORKSPACE_CONFIG"}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "resumed")], cwd=ROOT, env=environment,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"cublas-workspace {CUBLAS_WORKSPACE_CONFIG}" in result.stdout  # the product pinned it itself
    assert_same_run(tmp_path / "uninterrupted", tmp_path / "resumed")
