"""The training step on the GPU: capture safety, RNG non-repetition across replays, determinism, resume."""

from __future__ import annotations

import pytest
import torch
from train_helpers import synthetic_market, tiny_config

from trainer.layout import METRIC_UPDATES
from trainer.train.checkpoint import load_checkpoint, save_checkpoint
from trainer.train.graph import StepRunner
from trainer.train.step import TrainerState, TrainStep

pytestmark = pytest.mark.gpu


def cuda_state(seed: int = 0, feature_noise: float = 0.0, mirror: float = 0.0) -> tuple[TrainerState, TrainStep]:
    config = tiny_config(env={"n_envs": 64}, replay={"capacity": 4096, "batch_size": 64, "learning_starts": 256,
                                                     "feature_noise": feature_noise, "mirror": mirror},
                         run={"seed": seed, "device": "cuda"})  # fmt: skip
    state = TrainerState(config, synthetic_market(2000), torch.device("cuda"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    return state, step


def test_eager_step_never_syncs_with_the_host():
    state, step = cuda_state()
    step()  # first call compiles kernels and creates lazily built tensors
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
        step()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    assert all(torch.isfinite(p).all() for p in state.online.parameters())


@pytest.mark.parametrize("mirror", [0.0, 0.5])
def test_graph_replay_is_capture_safe_and_never_repeats_random_numbers(mirror: float):
    state, step = cuda_state(mirror=mirror)
    runner = StepRunner(step, use_graph=True)
    runner.run(4)  # eager warm-up, capture, one replay
    assert runner.graph is not None
    torch.cuda.synchronize()
    counter_before = int(state.counter)
    draws = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            runner.graph.replay()
            draws.append((state.explore_draws.clone(), state.replay_draws.clone(), state.tau_draws.clone()))
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    draws_per_step = 4 if mirror == 0 else 5  # explore, env, replay, τ per replay (and the mirror coins)
    assert int(state.counter) - counter_before == 3 * draws_per_step
    for i in range(len(draws)):
        for j in range(i + 1, len(draws)):
            for a, b in zip(draws[i], draws[j], strict=True):
                assert not torch.equal(a, b), "a graph replay repeated the previous replay's random numbers"
    assert all(torch.isfinite(p).all() for p in state.online.parameters())
    assert float(state.metrics[METRIC_UPDATES]) == 4 + 3  # every replay took one gradient update


@pytest.mark.parametrize(("feature_noise", "mirror"), [(0.0, 0.0), (0.3, 0.0), (0.3, 0.5)])
def test_graph_runs_are_bitwise_deterministic(feature_noise: float, mirror: float):
    results = []
    for _ in range(2):
        state, step = cuda_state(seed=5, feature_noise=feature_noise, mirror=mirror)
        StepRunner(step, use_graph=True).run(10)
        torch.cuda.synchronize()
        results.append({name: t.detach().clone() for name, t in state.named_tensors().items()})
    different = [name for name in results[0] if not torch.equal(results[0][name], results[1][name])]
    assert not different, different[:5]


def test_resume_on_gpu_is_bitwise_identical(tmp_path):
    state, step = cuda_state(seed=2)
    StepRunner(step, use_graph=False).run(6)
    torch.cuda.synchronize()
    expected = {name: t.detach().clone() for name, t in state.named_tensors().items()}

    state, step = cuda_state(seed=2)
    StepRunner(step, use_graph=False).run(3)
    manifest = save_checkpoint(state, tmp_path)
    resumed = TrainerState(state.config, synthetic_market(2000), torch.device("cuda"))
    load_checkpoint(resumed, manifest)
    StepRunner(TrainStep(resumed), use_graph=False).run(3)
    torch.cuda.synchronize()
    got = resumed.named_tensors()
    different = [name for name in expected if not torch.equal(expected[name], got[name])]
    assert not different, different[:5]
