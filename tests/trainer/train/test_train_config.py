"""Training config: defaults load, every problem reported at once with key and allowed range."""

from __future__ import annotations

import pytest

from trainer.config import (
    DEFAULT_CONFIG_PATH,
    ConfigError,
    TrainConfig,
    config_from_mapping,
    load_config,
    reference_table,
)


def test_default_file_equals_the_built_in_defaults():
    # an installed trainer without the config/ folder falls back to TrainConfig(): same run
    assert DEFAULT_CONFIG_PATH.exists()
    assert load_config() == TrainConfig()


def test_all_errors_are_reported_at_once_with_key_and_range():
    raw = {
        "env": {"n_envs": 0, "bogus": 1},
        "optim": {"lr": "fast"},
        "loss": {"v_min": 5.0, "v_max": 1.0},
        "model": {"scan_state": 3},
        "extra": {},
    }
    with pytest.raises(ConfigError) as caught:
        config_from_mapping(raw, source="t.toml")
    message = str(caught.value)
    problems = caught.value.problems
    assert len(problems) == 6, problems
    assert "env.n_envs = 0 out of range (vs [1, 1048576])" in message
    assert "unknown key env.bogus" in message
    assert "optim.lr = 'fast' has type str (vs float)" in message
    assert "loss.v_max = 1.0 must exceed loss.v_min = 5.0" in message
    assert "model.scan_state = 3 out of range (vs one of 1, 2, 4, 8, 16, 32)" in message
    assert "unknown section [extra]" in message
    assert message.startswith("invalid training configuration in t.toml (6 problems vs none) — hint:")


def test_cross_field_checks():
    with pytest.raises(ConfigError, match="replay.capacity = 8 is smaller than env.n_envs = 64"):
        TrainConfig().replace(replay={"capacity": 8, "learning_starts": 8})
    with pytest.raises(ConfigError, match="scan_channels × model.scan_state = 48"):
        TrainConfig().replace(model={"scan_channels": 3, "scan_state": 16})
    with pytest.raises(ConfigError, match=r"optim.lr × optim.weight_decay = 0.1 × 10.0 reaches 1 \(vs < 1"):
        TrainConfig().replace(optim={"lr": 0.1, "weight_decay": 10.0})


def test_toml_round_trip(tmp_path):
    config = TrainConfig().replace(run={"steps": 17}, data={"path": "x.csv"})
    path = tmp_path / "c.toml"
    path.write_text(config.to_toml())
    assert load_config(path) == config


def test_syntax_error_and_missing_file_are_config_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[run\nsteps = 1")
    with pytest.raises(ConfigError, match="TOML syntax error"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


def test_every_field_is_documented():
    table = reference_table()
    for line in table.splitlines()[2:]:
        assert not line.rstrip().endswith("|  |"), f"undocumented field: {line}"


def test_docs_list_every_config_key():
    from trainer.config import DEFAULT_CONFIG_PATH

    docs = (DEFAULT_CONFIG_PATH.parent.parent.parent / "docs" / "trainer.md").read_text(encoding="utf-8")
    for row in reference_table().splitlines()[2:]:
        assert row in docs, f"docs/trainer.md is stale for {row.split('|')[1].strip()} — regenerate its table"


def test_shipped_gpu_config_is_valid():
    config = load_config(DEFAULT_CONFIG_PATH.parent / "gpu.toml")
    assert config.env.n_envs == 4096 and config.replay.capacity >= config.env.n_envs
