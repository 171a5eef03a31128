"""The configuration surface: --set, extends, the adaptive kernels' parameters and the cost model in TOML."""

from __future__ import annotations

import pytest

from trainer.cli import main
from trainer.config import (
    DEFAULT_CONFIG_PATH,
    KEYS_ADDED_SINCE,
    ConfigError,
    TrainConfig,
    config_from_mapping,
    load_config,
    parse_overrides,
    reference_table,
)
from trainer.ops.adaptive_machinery import AdaptiveParams


def test_set_overrides_parse_toml_values_and_bare_strings():
    table = parse_overrides(["run.steps=10", "optim.lr=1e-4", "run.cuda_graph=false", "env.market_impact=[1, 2, 3]",
                             "data.path=bars.csv", "adaptive.kelly.cap_floor=0.2"])  # fmt: skip
    assert table == {
        "run": {"steps": 10, "cuda_graph": False}, "optim": {"lr": 1e-4}, "env": {"market_impact": [1, 2, 3]},
        "data": {"path": "bars.csv"}, "adaptive": {"kelly": {"cap_floor": 0.2}},
    }  # fmt: skip
    config = load_config(overrides=["run.steps=10", "adaptive.kelly.cap_floor=0.2", "env.market_impact=[1, 2, 3]"])
    assert config.run.steps == 10 and config.adaptive.kelly.cap_floor == 0.2
    assert config.env.market_impact == (1.0, 2.0, 3.0)


def test_bad_set_entries_are_all_reported():
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=["runsteps=1", "run.bogus=2", "adaptive.schedule.tau_start=0.1", "env.market_impact=[1, 2]",
                               "adaptive.kelly.cap_floor=2.0"])  # fmt: skip
    message = str(caught.value)
    assert "--set 'runsteps=1' (vs section.key=value, e.g. run.steps=100)" in message
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=["run.bogus=2", "adaptive.schedule.tau_start=0.1", "env.market_impact=[1, 2]", "adaptive.kelly.cap_floor=2.0"])
    message = str(caught.value)
    assert "(4 problems vs none)" in message
    assert "unknown key run.bogus (vs one of steps" in message
    assert "adaptive.schedule.tau_start is not a key of its own (vs schedule.tau, which sets it)" in message
    assert "env.market_impact = [1, 2] out of range (vs 3 values, each in [0, 100])" in message
    assert "[adaptive.kelly] invalid Kelly cap parameters (cap bounds 2.0..1.0 vs 0 ≤ floor ≤ max)" in message


def test_extends_merges_the_base_underneath(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text("[run]\nsteps = 30\nseed = 4\n[adaptive.health]\nspike_tolerance = 3.0\n")
    child = tmp_path / "sub" / "child.toml"
    child.parent.mkdir()
    child.write_text('extends = "../base.toml"\n[run]\nsteps = 40\n')
    config = load_config(child)
    assert (config.run.steps, config.run.seed, config.adaptive.health.spike_tolerance) == (40, 4, 3.0)
    assert load_config(child, overrides=["run.seed=9"]).run.seed == 9


def test_extends_cycle_and_bad_value_are_errors(tmp_path):
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text('extends = "b.toml"\n')
    second.write_text('extends = "a.toml"\n')
    with pytest.raises(ConfigError, match=r"extends cycle \(.*a\.toml → .*b\.toml → .*a\.toml vs a chain that ends\)"):
        load_config(first)
    first.write_text("extends = 3\n")
    with pytest.raises(ConfigError, match=r"extends = 3 \(vs the path of another config TOML\)"):
        load_config(first)


def test_adaptive_parameters_reach_the_kernels_with_their_bootstraps():
    config = TrainConfig().replace(
        schedule={"tau": 0.004}, loss={"gamma": 0.97, "v_min": -2.0, "v_max": 2.0},
        adaptive={"schedule": {"epsilon_end": 0.05, "gamma_low": [0.9, 0.9, 0.8, 0.8]}, "atoms": {"k_sigma": 2.5}},
    )  # fmt: skip
    params = AdaptiveParams.from_config(config)
    assert params.schedule.tau_start == 0.004 and params.schedule.epsilon_end == 0.05
    assert params.schedule.gamma_high == (0.97,) * 4 and params.schedule.gamma_low == (0.9, 0.9, 0.8, 0.8)
    assert (params.atoms.v_min, params.atoms.v_max, params.atoms.k_sigma) == (-2.0, 2.0, 2.5)
    assert params.atoms.half_width_floor == 1.0  # min(floor 1.0, a quarter of the 4-wide range)
    assert AdaptiveParams.from_config(TrainConfig()) == AdaptiveParams.from_config(load_config())


def test_cost_model_is_written_into_the_isv():
    import torch

    from trainer.layout import FEATURE_STRIDE
    from trainer.train.step import MarketWindow, TrainerState

    tiny = {"env": {"n_envs": 8, "episode_length": 48, "market_impact": [0.1, 0.2, 0.3], "dsr_clip": 3.0, "hold_hurdle": 0.05},
            "replay": {"capacity": 256, "batch_size": 16, "learning_starts": 32}, "run": {"device": "cpu"},
            "model": {"window": 4, "scan_channels": 8, "scan_state": 4, "hidden": 32, "head_hidden": 16, "n_atoms": 11}}  # fmt: skip
    config = config_from_mapping(tiny)
    generator = torch.Generator().manual_seed(0)
    close = 100.0 * torch.exp(torch.cumsum(0.001 * torch.randn(200, generator=generator), 0))  # [T]
    window = MarketWindow(close=close.float(), spread=torch.zeros(200), features=torch.randn(200, FEATURE_STRIDE, generator=generator),
                          offset=0)  # fmt: skip
    state = TrainerState(config, window, torch.device("cpu"))
    assert state.isv.read("MARKET_IMPACT") == pytest.approx((0.1, 0.2, 0.3))
    assert state.isv.read("DSR_CLIP") == pytest.approx(3.0)
    assert state.isv.read("HOLD_HURDLE") == pytest.approx(0.05)


def test_every_key_of_the_default_toml_round_trips():
    config = load_config()
    assert config_from_mapping(config.to_dict()) == config
    assert "[adaptive.schedule]" in DEFAULT_CONFIG_PATH.read_text()
    keys = {row.split("|")[1].strip().strip("`") for row in reference_table().splitlines()[2:]}
    assert {"adaptive.schedule.tau_end", "adaptive.kelly.cap_floor", "adaptive.atoms.k_sigma", "adaptive.health.sharpe_scale",
            "env.market_impact", "env.limit_fill_prob", "run.bands", "run.band_epochs"} <= keys  # fmt: skip


def test_train_accepts_set_and_reports_bad_keys_without_traceback(capsys):
    assert main(["train", "--set", "run.bogus=1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainer: error: invalid training configuration") and "unknown key run.bogus" in err
    assert "Traceback" not in err


def test_a_stored_config_that_lacks_a_key_added_since_reads_the_value_runs_had_before_it(tmp_path):
    """A config a run wrote holds every key its trainer knew: one without run.policy_mirror was
    written before the mirror-averaged policy existed, and its run acted plainly — resuming it or
    evaluating its checkpoints must too. A user's config without the key gets today's default."""
    assert KEYS_ADDED_SINCE == {"run.policy_mirror": False, "run.flat_margin": False}
    assert TrainConfig().run.policy_mirror is True and TrainConfig().run.flat_margin is True
    older = TrainConfig().to_dict()
    del older["run"]["policy_mirror"], older["run"]["flat_margin"]
    assert config_from_mapping(older, stored=True).run.policy_mirror is False
    assert config_from_mapping(older, stored=True).run.flat_margin is False  # its test acted without a margin
    assert config_from_mapping(older).run.policy_mirror is True and config_from_mapping(older).run.flat_margin is True
    written = TrainConfig().replace(run={"policy_mirror": True}).to_dict()
    assert config_from_mapping(written, stored=True).run.policy_mirror is True  # a stored value is kept
    path = tmp_path / "config.toml"
    text = TrainConfig().to_toml()
    assert "policy_mirror = true\n" in text
    path.write_text(text.replace("policy_mirror = true\n", ""))
    assert load_config(path, stored=True).run.policy_mirror is False
    assert load_config(path).run.policy_mirror is True
    assert load_config(path, ["run.policy_mirror=true"], stored=True).run.policy_mirror is True  # --set still wins


def test_a_resumed_run_reads_its_own_older_config_as_it_was_written(tmp_path):
    """The run directory's config.toml, or a checkpoint's copy without it: either one lacking
    run.policy_mirror resumes acting plainly (trainer.train.rundir.stored_config)."""
    from trainer.train.rundir import stored_config

    older = TrainConfig().to_dict()
    del older["run"]["policy_mirror"]
    assert stored_config(tmp_path, {"config": older}).run.policy_mirror is False
    (tmp_path / "config.toml").write_text(TrainConfig().to_toml().replace("policy_mirror = true\n", ""))
    assert stored_config(tmp_path, {}).run.policy_mirror is False
