"""Population training on the GPU: one captured graph with a branch per agent; agent i is its single run, bitwise."""

from __future__ import annotations

import pytest
import torch
from train_helpers import synthetic_market, tiny_config

from trainer.train.graph import WARMUP_STEPS, StepRunner
from trainer.train.step import TrainerState, TrainStep

pytestmark = pytest.mark.gpu

AGENTS = ((0, 3e-4, 0.0), (1, 1e-3, 0.3), (2, 3e-4, 0.3))  # (seed, lr, feature_noise) per agent


def cuda_state(seed: int, lr: float, feature_noise: float) -> TrainerState:
    config = tiny_config(env={"n_envs": 64}, optim={"lr": lr},
                         replay={"capacity": 4096, "batch_size": 64, "learning_starts": 256, "feature_noise": feature_noise},
                         run={"seed": seed, "device": "cuda"})  # fmt: skip
    state = TrainerState(config, synthetic_market(2000), torch.device("cuda"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    return state


def test_population_graph_is_every_agent_alone_bitwise():
    together = [cuda_state(*agent) for agent in AGENTS]
    runner = StepRunner([TrainStep(state) for state in together], use_graph=True)
    runner.run(WARMUP_STEPS + 5)  # warm-up, one capture holding every agent, replays
    assert runner.graph is not None and len(runner.agent_streams) == len(AGENTS)
    torch.cuda.synchronize()
    for agent, state in zip(AGENTS, together, strict=True):
        alone = cuda_state(*agent)
        single = StepRunner(TrainStep(alone), use_graph=True)
        single.run(WARMUP_STEPS + 5)
        torch.cuda.synchronize()
        expected, got = alone.named_tensors(), state.named_tensors()
        different = [name for name in expected if not torch.equal(expected[name], got[name])]
        assert not different, f"agent {agent} differs from its single run: {different[:5]}"


def test_population_graph_replays_never_sync_and_reproduce():
    def run() -> list[dict[str, torch.Tensor]]:
        states = [cuda_state(*agent) for agent in AGENTS]
        runner = StepRunner([TrainStep(state) for state in states], use_graph=True)
        runner.run(WARMUP_STEPS + 1)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            runner.run(4)
        finally:
            torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()
        return [{name: tensor.clone() for name, tensor in state.named_tensors().items()} for state in states]

    first, second = run(), run()
    for a, b in zip(first, second, strict=True):
        assert [name for name in a if not torch.equal(a[name], b[name])] == []
    assert not torch.equal(first[0]["online.trunk.0.weight"], first[1]["online.trunk.0.weight"])
