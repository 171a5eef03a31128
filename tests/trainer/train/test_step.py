"""The training step on the CPU: determinism, RNG non-repetition across eager steps, bookkeeping."""

from __future__ import annotations

import itertools

import pytest
import torch
from train_helpers import collected_state, synthetic_market, tiny_config

from trainer.config import ConfigError
from trainer.layout import (
    ISV_EPSILON,
    METRIC_C51,
    METRIC_STRIDE,
    METRIC_UPDATES,
    METRICS,
)
from trainer.markers import is_hot_path
from trainer.train.graph import StepRunner
from trainer.train.step import MarketWindow, TrainerState, TrainStep, metric_update


def run_steps(seed: int, steps: int = 4) -> TrainerState:
    torch.set_num_threads(1)
    config = tiny_config(run={"seed": seed})
    state = TrainerState(config, synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(config.loss.n_step - 1 + 4):
        step.collect()
    StepRunner(step, use_graph=True).run(steps)  # CPU: always eager
    return state


def test_same_seed_same_tensors_bitwise():
    first, second = run_steps(3).named_tensors(), run_steps(3).named_tensors()
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name


def test_different_seed_changes_the_run():
    first, second = run_steps(1).named_tensors(), run_steps(2).named_tensors()
    assert not torch.equal(first["online.trunk.0.weight"], second["online.trunk.0.weight"])


def test_rng_never_repeats_across_eager_steps():
    torch.set_num_threads(1)
    state = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(8):
        step.collect()
    seen_explore, seen_replay, seen_tau, seen_mirror, counters = [], [], [], [], []
    for _ in range(4):
        step()
        seen_explore.append(state.explore_draws.clone())
        seen_replay.append(state.replay_draws.clone())
        seen_tau.append(state.tau_draws.clone())
        seen_mirror.append(state.mirror_draws.clone())
        counters.append(int(state.counter))
    for draws in (seen_explore, seen_replay, seen_tau, seen_mirror):
        for i in range(len(draws)):
            for j in range(i + 1, len(draws)):
                assert not torch.equal(draws[i], draws[j])
    # explore, env, replay, IQN τ, feature noise, the mirror's coins: six counter values per step, each used once
    assert [b - a for a, b in itertools.pairwise(counters)] == [6, 6, 6]


def test_step_updates_weights_target_and_metrics():
    torch.set_num_threads(1)
    state = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(8):
        step.collect()
    before = state.online.trunk[0].weight.detach().clone()
    target_before = state.target.trunk[0].weight.detach().clone()
    runner = StepRunner(step, use_graph=False)
    runner.run(3)
    assert state.steps_done == 3
    assert not torch.equal(before, state.online.trunk[0].weight)
    assert not torch.equal(target_before, state.target.trunk[0].weight)  # lerp_ with τ from the ISV
    assert float(state.metrics[METRIC_UPDATES]) == 3.0  # three updates counted
    assert float(state.action_counts.sum()) == (8 + 3) * state.config.env.n_envs * 4


def test_weight_decay_shrinks_every_weight_by_lr_times_decay_before_the_adam_step():
    # AdamW (decoupled): from the same state, one update with decay w differs from the update
    # without it by exactly −lr · w · the weights before the update (the gradients are the same).
    torch.set_num_threads(1)
    updated = {}
    for decay in (0.0, 0.5):
        config = tiny_config(optim={"lr": 1e-3, "weight_decay": decay})
        state = TrainerState(config, synthetic_market(), torch.device("cpu"))
        step = TrainStep(state)
        for _ in range(8):
            step.collect()
        before = {name: param.detach().clone() for name, param in state.online.named_parameters()}
        StepRunner(step, use_graph=False).run(1)
        updated[decay] = {name: param.detach().clone() for name, param in state.online.named_parameters()}
    for name, weights in before.items():
        shrink = updated[0.5][name] - updated[0.0][name]
        torch.testing.assert_close(shrink, -1e-3 * 0.5 * weights, rtol=1e-3, atol=1e-7, msg=name)


def test_training_step_functions_are_hot_path_roots():
    assert is_hot_path(TrainStep.__call__)
    assert is_hot_path(TrainStep.learn)
    assert is_hot_path(TrainStep.collect)


def test_named_tensors_enumerate_every_buffer_once():
    state = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    named = state.named_tensors()
    for prefix in ("online.", "target.", "optim.", "replay.", "nstep.", "env.ps", "rng.counter", "isv"):
        assert any(name.startswith(prefix) for name in named), prefix
    pointers = [t.data_ptr() for n, t in named.items() if t.numel() > 0]
    assert len(pointers) == len(set(pointers)), "two names share one buffer"


def test_greedy_when_epsilon_is_zero():
    torch.set_num_threads(1)
    state = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    state.isv_local.copy_(state.isv.tensor)
    state.isv_local[ISV_EPSILON] = 0.0  # the step's private copy, not the ISV itself
    bar = state.env.bar_index()
    portfolio = state.env.portfolio_inputs()
    chosen = step.act(bar, portfolio)
    assert torch.equal(chosen, step.greedy(state.gather_windows(bar), portfolio))


def test_metric_update_follows_the_metrics_layout():
    by_slot = {slot.name: torch.arange(slot.width, dtype=torch.float32) + 10 * index
               for index, slot in enumerate(METRICS.slots)}  # fmt: skip
    update = metric_update(by_slot)
    assert update.shape == (METRIC_STRIDE,)
    assert update[METRIC_C51 + 1] == 1.0 and update[METRIC_UPDATES] == 10.0 * (len(METRICS.slots) - 1)
    with pytest.raises(ValueError, match=r"metric C51 has 3 values \(vs slot width 4\) — hint"):
        metric_update({**by_slot, "C51": torch.zeros(3)})


@pytest.mark.parametrize("time_limit_terminal", [False, True])
def test_a_time_limit_is_bootstrapped_from_the_bar_the_episode_reached(time_limit_terminal: bool):
    # Issue 9 (Pardo et al. 2018): a transition that ends an episode at its time limit used the
    # restarted env as its next state and stopped the bootstrap. Now its next state is the bar the
    # episode reached, and it is no terminal (env.time_limit_terminal restores the old rule).
    torch.set_num_threads(1)
    config = tiny_config(env={"episode_length": 4, "time_limit_terminal": time_limit_terminal}, loss={"n_step": 1})
    state = TrainerState(config, synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(6):
        step.collect()
    stored = int(state.replay.size)
    storage = state.replay.storage
    ended = storage.dones[:stored, 0] == 1.0
    assert int(ended.sum()) == config.env.n_envs  # every env hit its 4-bar limit once in 6 steps
    assert torch.equal(storage.next_bar_index[:stored][ended], storage.bar_index[:stored][ended] + 1)
    want_terminal = 1.0 if time_limit_terminal else 0.0
    assert bool((storage.terminals[:stored, 0][ended] == want_terminal).all())


def noisy_state(feature_noise: float, seed: int = 0) -> tuple[TrainerState, TrainStep]:
    # The mirror off (the default draws its coins too): these tests count the noise's own draws.
    return collected_state(tiny_config(replay={"feature_noise": feature_noise, "mirror": 0.0}, run={"seed": seed}))


def test_feature_noise_off_draws_nothing_extra_and_on_adds_one_fresh_draw_per_update():
    off, step_off = noisy_state(0.0)
    on, step_on = noisy_state(0.5)
    assert off.noise_draws is None and "scratch.noise_draws" not in off.named_tensors()
    before_off, before_on = int(off.counter), int(on.counter)
    draws = []
    for _ in range(3):
        step_off()
        step_on()
        draws.append(on.noise_draws.clone())
    assert int(off.counter) - before_off == 3 * 4  # explore, env, replay, IQN τ
    assert int(on.counter) - before_on == 3 * 5  # … and one augmentation draw
    assert not torch.equal(draws[0], draws[1]) and not torch.equal(draws[1], draws[2])
    assert not torch.equal(off.online.trunk[0].weight, on.online.trunk[0].weight)


def test_feature_noise_runs_are_bitwise_reproducible():
    first, second = noisy_state(0.3), noisy_state(0.3)
    for state, step in (first, second):
        for _ in range(3):
            step()
    a, b = first[0].named_tensors(), second[0].named_tensors()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[name], b[name]) for name in a)


def test_the_forecast_column_takes_its_share_of_the_feature_noise():
    from trainer.layout import FEATURE_LINEAR_FORECAST

    torch.set_num_threads(1)
    spreads = {}
    for share in (1.0, 0.5, 0.0):
        config = tiny_config(replay={"feature_noise": 0.4, "forecast_noise_share": share})
        state = TrainerState(config, synthetic_market(), torch.device("cpu"))
        step = TrainStep(state)
        for _ in range(config.loss.n_step - 1 + 4):
            step.collect()
        noise = step.sample()[3].noise.view(-1, state.features.shape[1])  # [B·K, F]
        others = torch.cat([noise[:, :FEATURE_LINEAR_FORECAST], noise[:, FEATURE_LINEAR_FORECAST + 1 :]], dim=1)
        spreads[share] = (float(noise[:, FEATURE_LINEAR_FORECAST].std()), float(others.std()), noise.shape[0])
    rows = spreads[1.0][2]  # forecast-column draws per update: its std is known to ± a few / sqrt(rows)
    tolerance = 4.0 * 0.4 / (2 * rows) ** 0.5
    assert abs(spreads[1.0][0] - 0.4) < tolerance and abs(spreads[0.5][0] - 0.2) < tolerance / 2
    assert spreads[0.0][0] == 0.0
    assert all(abs(spreads[share][1] - 0.4) < 0.02 for share in spreads)  # every other column keeps 0.4


def test_column_std_units_noise_each_column_by_its_spread_over_the_training_bars_only():
    from trainer.layout import FEATURE_LINEAR_FORECAST
    from trainer.train.step import feature_noise_scale

    market = synthetic_market(n_bars=400, window=4)
    columns = torch.linspace(0.1, 2.0, market.features.shape[1])  # [F] a different spread per column
    features = market.features * columns
    features[:, 1] = 3.0  # constant over every bar: nothing to memorise, no noise
    features[:2, 0] = 1e6  # rows before the envs' first bar (history only) must not count
    market = MarketWindow(close=market.close, spread=market.spread, features=features, offset=market.offset)
    config = tiny_config(replay={"feature_noise": 0.5, "feature_noise_units": "column_std", "forecast_noise_share": 0.5})
    scale = feature_noise_scale(config.replay, market)
    walked = features[market.offset : market.offset + market.close.shape[0]].double().numpy()  # [T_env, F]
    expected = 0.5 * walked.std(axis=0)
    expected[FEATURE_LINEAR_FORECAST] *= 0.5
    assert scale.dtype == torch.float32 and scale.shape == columns.shape
    assert torch.allclose(scale.double(), torch.from_numpy(expected), rtol=1e-6)
    assert float(scale[1]) == 0.0 and float(scale[0]) < 1.0  # the 1e6 history rows were left out
    plain = feature_noise_scale(tiny_config(replay={"feature_noise": 0.5}).replay, market)
    assert config.replay.feature_noise_units == "column_std" and tiny_config().replay.feature_noise_units == "normalised"
    want = torch.full_like(plain, 0.5)
    want[FEATURE_LINEAR_FORECAST] = 0.5  # share 1 by default
    assert torch.equal(plain, want)  # "normalised": the same σ everywhere, whatever the columns' spread
    state = TrainerState(config, market, torch.device("cpu"))
    assert torch.equal(state.noise_scale, scale)  # the step draws with exactly these σ


def test_unknown_feature_noise_units_are_refused_with_the_choices():
    with pytest.raises(ConfigError, match=r"replay.feature_noise_units.*'column'.*normalised.*column_std"):
        tiny_config(replay={"feature_noise_units": "column"})


def test_the_feature_noise_is_gaussian_with_the_configured_spread():
    from trainer.layout import RNG_STREAM_AUGMENT
    from trainer.ops.rng import gaussian_from_uniform, new_counter, uniform

    z = gaussian_from_uniform(uniform(7, new_counter("cpu"), RNG_STREAM_AUGMENT, 200_000))
    assert z.shape == (200_000,) and torch.isfinite(z).all()
    assert abs(float(z.mean())) < 0.01 and abs(float(z.std()) - 1.0) < 0.01
    assert abs(float((z.abs() < 1.0).float().mean()) - 0.6827) < 0.005


def test_next_return_targets_are_the_next_log_return_in_training_volatilities():
    from trainer.train.step import RETURN_TARGET_CLIP, next_return_targets

    close = torch.tensor([100.0, 101.0, 100.0, 102.0, 101.5, 200.0])
    target = next_return_targets(close).double()
    log_returns = torch.diff(torch.log(close.double()))
    expected = (log_returns / log_returns.std()).clamp(-RETURN_TARGET_CLIP, RETURN_TARGET_CLIP)
    assert target.shape == close.shape and target[-1] == 0.0  # the last bar has no next close
    assert torch.allclose(target[:-1], expected, atol=1e-6)
    assert float(target.abs().max()) <= RETURN_TARGET_CLIP
    flat = next_return_targets(torch.full((4,), 50.0))
    assert torch.equal(flat, torch.zeros(4))  # a flat window: zero targets, no division by zero


def test_the_return_head_learns_the_next_return_and_only_when_weighted():
    """On a market whose last return predicts the next (AR(1)), a few hundred updates of the
    auxiliary regression make the head's forecast correlate with the realised next return; with
    ``loss.return_weight = 0`` the head never moves."""
    import numpy as np

    from trainer.layout import FEATURE_RET_1, FEATURE_STRIDE
    from trainer.train.step import MarketWindow

    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(3)
    n_bars, window = 2_000, 4
    noise = torch.randn(n_bars, generator=generator, dtype=torch.float64) * 2e-3
    log_returns = torch.zeros(n_bars, dtype=torch.float64)
    for t in range(1, n_bars):
        log_returns[t] = 0.4 * log_returns[t - 1] + noise[t]  # AR(1), φ = 0.4
    close = (100.0 * torch.exp(torch.cumsum(log_returns, 0))).to(torch.float32)
    features = torch.randn(n_bars, FEATURE_STRIDE, generator=generator).clamp(-5, 5)
    features[:, FEATURE_RET_1] = (log_returns / 2e-3).to(torch.float32)  # the bar's own return: the forecast's input
    market = MarketWindow(close=close[window:], spread=torch.zeros(n_bars - window), features=features, offset=window)
    results = {}
    for weight in (0.0, 1.0):
        # No weight decay: it shrinks every weight, the unweighted head's too (no gradient is what is tested).
        config = tiny_config(loss={"return_weight": weight}, replay={"feature_noise": 0.0}, optim={"weight_decay": 0.0})
        state = TrainerState(config, market, torch.device("cpu"))
        step = TrainStep(state)
        head_before = state.online.return_head.weight.detach().clone()
        for _ in range(config.loss.n_step - 1 + 8):
            step.collect()
        StepRunner(step, use_graph=False).run(300 if weight > 0 else 20)
        bars = torch.arange(0, int(state.next_return.shape[0]) - 1)
        with torch.no_grad():
            embedding = state.online.embed(state.gather_windows(bars), torch.zeros(bars.shape[0], state.env.portfolio_inputs().shape[1]))
            forecast = state.online.predicted_return(embedding).numpy()
        realised = state.next_return[bars].numpy()
        results[weight] = (float(np.corrcoef(forecast, realised)[0, 1]),
                           torch.equal(head_before, state.online.return_head.weight.detach()))
    assert results[0.0][1], "the head moved with return_weight = 0"
    assert results[1.0][0] > 0.2, results  # AR(1) φ = 0.4: the achievable correlation is ≈ 0.4
