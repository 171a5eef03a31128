"""Population training on the GPU: the stacked step captured in one graph; agent i is its single run
within the GPU tolerance below (float state), exactly in everything discrete; agents never mix; a
population reproduces and resumes itself bitwise."""

from __future__ import annotations

import pytest
import torch
from train_helpers import close_json_differences, close_state_differences, synthetic_market, tiny_config

from trainer.train.graph import WARMUP_STEPS, StepRunner
from trainer.train.population import PopulationStep
from trainer.train.step import TrainerState, TrainStep

pytestmark = pytest.mark.gpu

# The single run's GEMMs are cuBLAS matrix products and its Adam the fused kernel; the stacked step's
# are batched products and an elementwise Adam over [P, N] rows, so float state drifts apart by
# float32 rounding per step (more than on the CPU, where every forward is bitwise).
GPU_RTOL = 1e-3
GPU_ATOL = 1e-4

AGENTS = ((0, 3e-4, 0.0, 0.0), (1, 1e-3, 0.3, 0.5), (2, 3e-4, 0.3, 0.0))  # (seed, lr, feature_noise, mirror) per agent


def cuda_state(seed: int, lr: float, feature_noise: float, mirror: float) -> TrainerState:
    config = tiny_config(env={"n_envs": 64}, optim={"lr": lr},
                         replay={"capacity": 4096, "batch_size": 64, "learning_starts": 256, "feature_noise": feature_noise,
                                 "mirror": mirror},
                         run={"seed": seed, "device": "cuda"})  # fmt: skip
    state = TrainerState(config, synthetic_market(2000), torch.device("cuda"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    return state


def test_population_graph_is_every_agent_alone_within_tolerance():
    together = [cuda_state(*agent) for agent in AGENTS]
    runner = StepRunner([TrainStep(state) for state in together], use_graph=True)
    runner.run(WARMUP_STEPS + 5)  # warm-up, one capture of the stacked step, replays
    assert runner.graph is not None and isinstance(runner.step_all, PopulationStep)
    torch.cuda.synchronize()
    for agent, state in zip(AGENTS, together, strict=True):
        alone = cuda_state(*agent)
        single = StepRunner(TrainStep(alone), use_graph=True)
        single.run(WARMUP_STEPS + 5)
        torch.cuda.synchronize()
        expected, got = alone.named_tensors(), state.named_tensors()
        different = close_state_differences(expected, got, GPU_RTOL, GPU_ATOL)
        assert not different, f"agent {agent} differs from its single run: {different[:5]}"


def test_population_graph_agents_never_mix_bitwise():
    """Agent 0 is bitwise the same whoever its neighbours are (same P, other agents)."""
    def first_agent(others) -> dict[str, torch.Tensor]:
        states = [cuda_state(*agent) for agent in (AGENTS[0], *others)]
        StepRunner([TrainStep(state) for state in states], use_graph=True).run(WARMUP_STEPS + 4)
        torch.cuda.synchronize()
        return {name: tensor.clone() for name, tensor in states[0].named_tensors().items()}

    expected, got = first_agent(AGENTS[1:]), first_agent(((7, 1e-2, 0.0, 0.5), (8, 1e-4, 0.3, 0.0)))
    assert [name for name in expected if not torch.equal(expected[name], got[name])] == []


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


def test_population_run_on_the_gpu_is_every_agent_alone_bitwise(tmp_path, monkeypatch):
    """``train --agents 3`` with a grid on CUDA (the stacked step in one captured graph, epoch
    boundaries, checkpoints, the test backtest): every agent directory is its single run within the
    GPU tolerance, and a stopped and resumed population ends bitwise the same."""
    import json

    from safetensors.torch import load_file
    from train_helpers import synthetic_prepared_market

    from trainer.config import agent_config
    from trainer.train import loop
    from trainer.train.checkpoint import latest_checkpoint

    market = synthetic_prepared_market(400)
    monkeypatch.setattr(loop, "prepare_market", lambda config: market)
    config = tiny_config(env={"n_envs": 16}, run={"device": "cuda", "cuda_graph": True, "steps": 24, "epoch_steps": 8,
                                                  "agents": 3, "agent_grid": "optim.lr=1e-3,3e-4; replay.feature_noise=0,0.3"})  # fmt: skip

    def run(directory) -> dict:
        return {
            "final": load_file(str(latest_checkpoint(directory / "checkpoints").with_suffix(".safetensors"))),
            "best": load_file(str(directory / "checkpoints" / "best.safetensors")),
            "metrics": json.loads((directory / "metrics.json").read_text()),
            "diag": [{k: v for k, v in json.loads(line).items() if k != "wall_time_s"}
                     for line in (directory / "health_diag.jsonl").read_text().splitlines()],
        }  # fmt: skip

    def assert_same(expected: dict, got: dict, what: str) -> None:
        for name in ("final", "best"):
            different = [key for key in expected[name] if not torch.equal(expected[name][key], got[name][key])]
            assert not different, f"{what}: {name} tensors differ: {different[:5]}"
        assert expected["metrics"] == got["metrics"] and expected["diag"] == got["diag"], what

    def assert_close(expected: dict, got: dict, what: str) -> None:
        for name in ("final", "best"):
            different = close_state_differences(expected[name], got[name], GPU_RTOL, GPU_ATOL)
            assert not different, f"{what}: {name} tensors differ: {different[:5]}"
        for key in ("metrics", "diag"):
            different = close_json_differences(expected[key], got[key], rtol=GPU_RTOL, atol=GPU_ATOL)
            assert not different, f"{what}: {key} differs: {different[:5]}"

    loop.train(config, tmp_path / "population", make_plots=False)
    loop.train(config, tmp_path / "resumed", stop_after_epochs=1, make_plots=False)
    loop.train(config, tmp_path / "resumed", resume=True, make_plots=False)
    for agent in range(3):
        single = tmp_path / f"single-{agent}"
        loop.train(agent_config(config, agent), single, make_plots=False)
        directory = loop.agent_dirname(agent)
        assert_close(run(single), run(tmp_path / "population" / directory), f"agent {agent} vs its single run")
        assert_same(run(tmp_path / "population" / directory), run(tmp_path / "resumed" / directory), f"agent {agent} resumed")
