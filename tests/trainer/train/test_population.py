"""Population training on the CPU: agent i of a stacked population is the single run of its config
within the stated tolerance (train_helpers.POPULATION_RTOL / _ATOL on float state, exact on actions,
replay, counters); agents never mix (an agent is bitwise the same whoever its neighbours are); a
population run reproduces itself and resumes bitwise; its directory holds one run directory per agent."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from train_helpers import close_json_differences, close_state_differences, synthetic_market, tiny_config

from trainer.config import ConfigError, agent_config, population_grid
from trainer.layout import ISV_EPOCH_INDEX
from trainer.train.checkpoint import latest_checkpoint
from trainer.train.graph import StepRunner
from trainer.train.population import PopulationStep
from trainer.train.loop import METRICS_FILENAME, agent_dirname, train
from trainer.train.step import TrainerState, TrainStep
from trainer.train.validate import GreedyRollouts


@pytest.fixture(autouse=True)
def _private_feature_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))


def population_config(**run):
    return tiny_config(
        data={"validation_fraction": 0.05},
        run={"steps": 8, "epoch_steps": 4, "agents": 2, "agent_grid": "optim.lr=1e-3,3e-4", **run},
    )  # fmt: skip


def tensors(path):
    return load_file(str(path.with_suffix(".safetensors")))


def final_tensors(run_dir):
    return tensors(latest_checkpoint(run_dir / "checkpoints"))


def diag_without_wall_time(run_dir):
    records = [json.loads(line) for line in (run_dir / "health_diag.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("wall_time_s")
    return records


def assert_same_run(expected_dir, got_dir):
    """Two run directories hold the same run: checkpoints, selected network, metrics, HEALTH_DIAG, config."""
    for name in ("final", "best"):
        expected = final_tensors(expected_dir) if name == "final" else tensors(expected_dir / "checkpoints" / "best.json")
        got = final_tensors(got_dir) if name == "final" else tensors(got_dir / "checkpoints" / "best.json")
        assert expected.keys() == got.keys()
        different = [key for key in expected if not torch.equal(expected[key], got[key])]
        assert not different, f"{name} tensors of {got_dir.name} differ from {expected_dir.name}: {different[:5]}"
    assert json.loads((expected_dir / METRICS_FILENAME).read_text()) == json.loads((got_dir / METRICS_FILENAME).read_text())
    assert diag_without_wall_time(expected_dir) == diag_without_wall_time(got_dir)
    assert (expected_dir / "config.toml").read_text() == (got_dir / "config.toml").read_text()


def assert_close_run(expected_dir, got_dir):
    """A population agent's directory is its single run's within the population tolerance: every
    checkpoint tensor (floats close, the rest exact), metrics.json and HEALTH_DIAG (numbers close,
    the rest exact — so the same actions, epochs and selection), config.toml exactly."""
    for name in ("final", "best"):
        expected = final_tensors(expected_dir) if name == "final" else tensors(expected_dir / "checkpoints" / "best.json")
        got = final_tensors(got_dir) if name == "final" else tensors(got_dir / "checkpoints" / "best.json")
        different = close_state_differences(expected, got)
        assert not different, f"{name} tensors of {got_dir.name} differ from {expected_dir.name}: {different[:5]}"
    expected_metrics = json.loads((expected_dir / METRICS_FILENAME).read_text())
    assert close_json_differences(expected_metrics, json.loads((got_dir / METRICS_FILENAME).read_text())) == []
    assert close_json_differences(diag_without_wall_time(expected_dir), diag_without_wall_time(got_dir)) == []
    assert (expected_dir / "config.toml").read_text() == (got_dir / "config.toml").read_text()


# -- the step: agents stepped by one runner are the agents stepped alone --------------------------
# Three agents that differ in everything a grid may vary inside the stacked step: seed, learning
# rate, Adam ε, the clip bound (one agent unclipped), weight decay (one agent decays, AdamW), and
# the loss constants mapped per agent, feature noise (one agent has none), the mirror (one agent has it).
AGENTS = (
    {"run": {"seed": 0}, "optim": {"lr": 3e-4}},
    {"run": {"seed": 1}, "optim": {"lr": 1e-3, "adam_eps": 1e-6, "grad_clip": 0.5, "weight_decay": 0.1},
     "loss": {"reward_scale": 2.0, "huber_kappa": 0.5, "iqn_weight": 0.5}, "replay": {"feature_noise": 0.3, "mirror": 0.5}},
    {"run": {"seed": 2}, "optim": {"lr": 3e-4, "grad_clip": 0.0}, "loss": {"return_weight": 0.0},
     "replay": {"feature_noise": 0.0}},  # draws no noise: its counter skips that draw, as alone
)  # fmt: skip


def stepped_state(agent: dict) -> TrainerState:
    config = tiny_config(**agent)
    state = TrainerState(config, synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    return state


def run_alone(agent: dict, steps: int) -> TrainerState:
    alone = stepped_state(agent)
    StepRunner(TrainStep(alone), use_graph=True).run(steps)
    return alone


def test_stacked_agents_are_each_agent_alone_within_tolerance():
    torch.set_num_threads(1)
    agents = [stepped_state(agent) for agent in AGENTS]
    runner = StepRunner([TrainStep(state) for state in agents], use_graph=True)  # CPU: eager
    assert isinstance(runner.step_all, PopulationStep)
    runner.run(6)
    for agent, together in zip(AGENTS, agents, strict=True):
        alone = run_alone(agent, 6)
        expected, got = alone.named_tensors(), together.named_tensors()
        assert close_state_differences(expected, got) == [], agent
        # Every discrete outcome exactly: the actions taken (replay), the epoch's action counts.
        for name in ("replay.actions", "metrics.action_counts", "rng.counter"):
            assert torch.equal(expected[name], got[name]), name
        assert (together.steps_done, together.collect_steps) == (alone.steps_done, alone.collect_steps)


def test_stacked_agents_never_mix_bitwise():
    """Agent 0 is bitwise the same agent whether its neighbours are (1, 2) or a different agent 1:
    nothing of another agent reaches its rows."""
    torch.set_num_threads(1)
    with_first = [stepped_state(agent) for agent in AGENTS]
    with_other = [stepped_state(agent) for agent in (AGENTS[0], {"run": {"seed": 7}, "optim": {"lr": 1e-2}})]
    StepRunner([TrainStep(state) for state in with_first], use_graph=False).run(5)
    StepRunner([TrainStep(state) for state in with_other], use_graph=False).run(5)
    expected, got = with_first[0].named_tensors(), with_other[0].named_tensors()
    assert [name for name in expected if not torch.equal(expected[name], got[name])] == []
    assert not torch.equal(with_first[1].named_tensors()["online.trunk.0.weight"], got["online.trunk.0.weight"])


def test_a_stacked_population_reproduces_itself_bitwise():
    def run() -> list[dict[str, torch.Tensor]]:
        states = [stepped_state(agent) for agent in AGENTS]
        StepRunner([TrainStep(state) for state in states], use_graph=False).run(4)
        return [state.named_tensors() for state in states]

    for first, second in zip(run(), run(), strict=True):
        assert [name for name in first if not torch.equal(first[name], second[name])] == []


def test_agent_state_is_its_rows_of_the_stacked_storage():
    """What checkpoints save and load, the gradient diagnostic and the rollouts read (the agent's
    modules, Adam state, learning rate, ISV copy, metric sums) is the storage the stacked step trains."""
    states = [stepped_state(agent) for agent in AGENTS[:2]]
    population = PopulationStep([TrainStep(state) for state in states])
    state = states[1]
    weight = state.online.trunk[0].weight
    row = population.online.slice("trunk.0.weight", population.online.flat[1])
    assert weight.data_ptr() == row.data_ptr() and isinstance(weight, torch.nn.Parameter)
    moments = state.optimizer.state[weight]
    assert moments["exp_avg"].data_ptr() == population.online.slice("trunk.0.weight", population.exp_avg[1]).data_ptr()
    assert state.lr.data_ptr() == population.lr[1].data_ptr() and float(state.lr) == pytest.approx(AGENTS[1]["optim"]["lr"])
    assert state.isv_local.data_ptr() == population.isv_local[1].data_ptr()
    assert state.metrics.data_ptr() == population.metrics[1].data_ptr()
    before = population.target.flat[0].clone()
    with torch.no_grad():  # a checkpoint load writes the agent's tensors in place: the stacked row changes
        state.named_tensors()["target.trunk.0.weight"].fill_(0.25)
    assert torch.all(population.target.slice("trunk.0.weight", population.target.flat[1]) == 0.25)
    assert torch.equal(population.target.flat[0], before)  # and no other agent's
    population()  # one step: every agent's gradient lands in its own row of the flat buffer
    assert population.online.grad.abs().sum(1).gt(0).all()


def test_an_agent_acting_with_its_target_weights_walks_its_rows_and_gives_them_back():
    """run.policy_weights = "target" in a population: agent i's greedy walk is the one its own target
    row would walk alone, and every stacked row (online and target, every agent) comes back bit for bit."""
    states = [stepped_state({**agent, "run": {**agent["run"], "policy_weights": "target"}}) for agent in AGENTS[:2]]
    population = PopulationStep([TrainStep(state) for state in states])
    population()
    with torch.no_grad():
        population.target.flat.mul_(-3.0)  # targets far from the online rows, and trading
    online, target = population.online.flat.clone(), population.target.flat.clone()
    state, market = states[1], synthetic_market()
    walked = GreedyRollouts(state, TrainStep(state)).curves(market.close, market.spread, market.offset, [20, 200], 150)
    assert torch.equal(population.online.flat, online) and torch.equal(population.target.flat, target)
    alone = TrainerState(tiny_config(**AGENTS[1]), market, torch.device("cpu"))
    alone.online.load_state_dict(state.target.state_dict())
    alone.isv.load_state(state.isv.state())  # the agent's atom support and Kelly cap after its step
    expected = GreedyRollouts(alone, TrainStep(alone)).curves(market.close, market.spread, market.offset, [20, 200], 150)
    assert any(np.any(curve.units != 0) for curve in walked), "the target rows never traded: a weak comparison"
    for got, want in zip(walked, expected, strict=True):
        assert np.array_equal(got.equity, want.equity) and got.actions == want.actions


def test_agent_buffers_are_their_rows_of_the_stacked_buffers():
    """ISV, environments, Philox counter, n-step window, replay ring, the step's draws and action counts:
    every agent's own tensors (what its checkpoints, resets and warm-up steps use) are views of its
    rows of the stacked buffers one population step works on, and the agents share one market."""
    states = [stepped_state(agent) for agent in AGENTS[:2]]
    population = PopulationStep([TrainStep(state) for state in states])
    for agent, state in enumerate(states):
        named = state.named_tensors()
        stacked = {
            "env.ps": population.envs.ps, "rng.counter": population.envs.counter, "env.rewards": population.envs.rewards,
            "env.final_ps": population.envs.final_ps, "nstep.portfolio": population.window.portfolio,
            "replay.actions": population.replay.storage.actions, "replay.size": population.replay.size,
            "scratch.explore_draws": population.explore_draws, "scratch.tau_draws": population.tau_draws,
            "scratch.noise_draws": population.noise_draws, "metrics.action_counts": population.action_counts,
            "isv": population.isv,
        }  # fmt: skip
        for name, rows in stacked.items():
            assert named[name].data_ptr() == rows[agent].data_ptr(), name
        assert state.env.counter is state.counter and state.features is states[0].features
    states[1].isv.write_input("EPOCH_INDEX", 3.0)  # a host write to agent 1's bus lands in its row only
    epoch_index = population.isv[:, ISV_EPOCH_INDEX]  # [P]
    assert epoch_index.tolist() == [0.0, 3.0]
    assert states[1].isv.read("EPOCH_INDEX") == 3.0
    portfolios = population.envs.ps  # [P, E, PS_STRIDE]
    before = portfolios.clone()
    states[1].env.reset()  # a fold reset of agent 1 writes its rows only
    assert torch.equal(portfolios[:1], before[:1]) and not torch.equal(portfolios[1:], before[1:])


def test_agents_of_different_markets_are_refused_with_a_hint():
    from train_helpers import synthetic_market as market_of

    steps = [TrainStep(stepped_state(AGENTS[0])), TrainStep(TrainerState(tiny_config(), market_of(seed=3), torch.device("cpu")))]
    with pytest.raises(ValueError, match=r"agent 1's market differs from agent 0's \(feature rows \(400, \d+\) from offset 4 vs .* or other values\) — hint"):
        PopulationStep(steps)


def test_one_agent_runs_the_single_step_itself():
    step = TrainStep(stepped_state(AGENTS[0]))
    assert StepRunner(step, use_graph=False).step_all is step
    assert StepRunner([step], use_graph=False).step_all is step
    with pytest.raises(ValueError, match=r"a stacked population needs agents \(1 vs ≥ 2\) — hint"):
        PopulationStep([step])


def test_runner_needs_a_step():
    with pytest.raises(ValueError, match=r"StepRunner needs a step \(0 agents vs ≥ 1\) — hint"):
        StepRunner([], use_graph=False)


# -- the configuration of a population ------------------------------------------------------------
def test_agent_configs_take_consecutive_seeds_and_the_grid_round_robin():
    config = tiny_config(run={"seed": 10, "agents": 5, "agent_grid": "optim.lr=1e-4,3e-4; loss.gamma=0.97,0.99"})
    assert len(population_grid(config)) == 4
    agents = [agent_config(config, agent) for agent in range(5)]
    assert [agent.run.seed for agent in agents] == [10, 11, 12, 13, 14]
    assert [(agent.optim.lr, agent.loss.gamma) for agent in agents] == [
        (1e-4, 0.97), (1e-4, 0.99), (3e-4, 0.97), (3e-4, 0.99), (1e-4, 0.97)
    ]  # fmt: skip
    assert all(agent.run.agents == 1 and agent.run.agent_grid == "" for agent in agents)
    assert agents[2].replace(run={"seed": 10}).to_dict() != config.to_dict()  # everything else is the population's


def test_agent_grid_refuses_keys_that_change_shapes_or_the_lockstep():
    with pytest.raises(ConfigError) as error:
        tiny_config(run={"agents": 2, "agent_grid": "model.hidden=16,32; run.steps=4,8; optim.lr"})
    message = str(error.value)
    assert "run.agent_grid key 'model.hidden' (vs one of optim.lr," in message
    assert "run.agent_grid key 'run.steps'" in message
    assert "run.agent_grid axis 'optim.lr' (vs section.key=v1,v2,...)" in message


def test_agent_grid_values_are_checked_like_their_keys():
    with pytest.raises(ConfigError, match=r"run.agent_grid: optim.lr = 2.0 out of range \(vs \(0, 1\]\)"):
        tiny_config(run={"agents": 2, "agent_grid": "optim.lr=1e-3,2.0"})


def test_agent_index_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"agent index out of range \(2 vs 0 ≤ agent < run.agents = 2\) — hint"):
        agent_config(tiny_config(run={"agents": 2}), 2)


# -- whole runs ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def population_run(tmp_path_factory):
    """One population run of two agents (different seeds and learning rates)."""
    root = tmp_path_factory.mktemp("population")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FXCACHE_DIR", str(root / "fxcache"))
        summary = train(population_config(), root / "run", make_plots=False)
    return root / "run", summary


@pytest.mark.slow
def test_every_agent_of_a_population_is_its_single_run_within_tolerance(population_run, tmp_path):
    run_dir, summary = population_run
    config = population_config()
    for agent in range(config.run.agents):
        single = tmp_path / f"single-{agent}"
        train(agent_config(config, agent), single, make_plots=False)
        assert_close_run(single, run_dir / agent_dirname(agent))
        single_sharpe = json.loads((single / METRICS_FILENAME).read_text())["agent"]["sharpe_ratio"]
        assert close_json_differences(single_sharpe, summary["agents"][agent]["agent"]["sharpe_ratio"]) == []


@pytest.mark.slow
def test_population_directory_holds_one_run_directory_per_agent(population_run):
    run_dir, summary = population_run
    for agent in range(2):
        agent_dir = run_dir / agent_dirname(agent)
        for name in ("config.toml", "metrics.json", "health_diag.jsonl", "checkpoints/best.json", "checkpoints/best.safetensors"):
            assert (agent_dir / name).is_file(), f"{agent_dir.name}/{name} missing"
    assert "agents = 2" in (run_dir / "config.toml").read_text()
    assert "agents = 1" in (run_dir / agent_dirname(1) / "config.toml").read_text()  # a single run's config
    assert summary == json.loads((run_dir / METRICS_FILENAME).read_text())
    assert summary["n_agents"] == 2
    assert [(entry["seed"], entry["grid"], entry["dir"]) for entry in summary["agents"]] == [
        (0, {"optim": {"lr": 1e-3}}, "agent-00"), (0 + 1, {"optim": {"lr": 3e-4}}, "agent-01")
    ]  # fmt: skip
    mean = sum(entry["agent"]["total_return"] for entry in summary["agents"]) / 2
    assert summary["agent"]["total_return"] == pytest.approx(mean)


@pytest.mark.slow
def test_a_population_run_reproduces_itself_and_resumes_bitwise(population_run, tmp_path):
    run_dir, _ = population_run
    resumed = tmp_path / "resumed"
    assert train(population_config(), resumed, stop_after_epochs=1, make_plots=False) == {}
    assert all(len(diag_without_wall_time(resumed / agent_dirname(agent))) == 1 for agent in range(2))
    train(population_config(), resumed, resume=True, make_plots=False)
    for agent in range(2):
        assert_same_run(run_dir / agent_dirname(agent), resumed / agent_dirname(agent))
    assert json.loads((run_dir / METRICS_FILENAME).read_text()) == json.loads((resumed / METRICS_FILENAME).read_text())


def test_agents_at_different_steps_are_refused_with_a_hint(tmp_path):
    from types import SimpleNamespace

    from trainer.errors import UserError
    from trainer.train.loop import _check_lockstep

    agents = [SimpleNamespace(state=SimpleNamespace(steps_done=steps), out=tmp_path / name)
              for steps, name in ((8, "agent-00"), (4, "agent-01"))]  # fmt: skip
    with pytest.raises(UserError, match=r"stopped at different steps \(agent-00: 8, agent-01: 4 vs one step .*\) — hint: "
                                        r"a checkpoint write was cut short"):  # fmt: skip
        _check_lockstep(agents)
    _check_lockstep(agents[:1])


def test_the_step_does_not_grow_with_the_agents():
    """Every op of the stacked step — the network's matrix products and everything each agent owns
    (its draws, envs, n-step window, replay, ISV copy, adaptive kernels) — is one op for every
    agent: the top-level ATen ops of one step (each a dispatch from Python, the CPU's counterpart
    of a kernel launch) are the same ops, as many, at P = 4 as at P = 2."""
    from collections import Counter

    from torch.profiler import ProfilerActivity, profile

    from trainer.train.profile import top_level_aten_ops

    def products(agents: int) -> Counter:
        states = [stepped_state({"run": {"seed": seed}}) for seed in range(agents)]
        runner = StepRunner([TrainStep(state) for state in states], use_graph=False)
        runner.run(1)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            runner.run(1)
        return Counter(event.name for event in top_level_aten_ops(prof.events()))

    two, four = products(2), products(4)
    assert two["aten::mm"] + two["aten::bmm"] + two["aten::addmm"] > 0
    assert two == four, {name: four[name] - two[name] for name in two | four if two[name] != four[name]}


def test_envs_are_stacked_over_the_stacked_isv_only():
    from trainer.env.vector_env import StackedEnvs

    states = [stepped_state(agent) for agent in AGENTS[:2]]
    rows = torch.stack([state.isv.tensor for state in states])  # a copy, not the agents' bus
    with pytest.raises(ValueError, match=r"agent 0's env reads another ISV than row 0 of the population's bus .* — hint: "
                                        r"stack the agents' ISVs with Isv.stacked"):  # fmt: skip
        StackedEnvs([state.env for state in states], rows)
