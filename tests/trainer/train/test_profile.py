"""`trainer profile`: phases per epoch, baselines, the 20 % regression check."""

from __future__ import annotations

import json

import pytest

from trainer.cli import EXIT_USER_ERROR, EXIT_VALIDATION_FAILED, main
from trainer.config import TrainConfig
from trainer.errors import UserError
from trainer.train.profile import PHASES, baseline_payload, compare

PHASE_TIMES = {"collect": 1.0, "learn": 2.0, "validation": 0.5, "checkpoint": 0.1}


def test_a_phase_more_than_20_percent_slower_fails_with_its_name():
    config = TrainConfig()
    baseline = baseline_payload(config, "default.toml", 2, PHASE_TIMES)
    assert compare({**PHASE_TIMES, "learn": 2.3}, baseline, config) == []  # +15 %: within tolerance
    slower = compare({**PHASE_TIMES, "learn": 2.5, "checkpoint": 0.2}, baseline, config)
    assert slower == ["learn: 2.500 s/epoch vs baseline 2.000 s (+25% > +20%)", "checkpoint: 0.200 s/epoch vs baseline 0.100 s (+100% > +20%)"]


def test_a_baseline_of_another_config_is_an_error():
    baseline = baseline_payload(TrainConfig(), "default.toml", 2, PHASE_TIMES)
    with pytest.raises(UserError, match=r"profile baseline was measured with another config \(default.toml vs the config being profiled\)"):
        compare(PHASE_TIMES, baseline, TrainConfig().replace(run={"steps": 10}))


@pytest.mark.slow
def test_profile_writes_and_compares_a_baseline(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    tiny = ["--set", "env.n_envs=8", "--set", "env.episode_length=48", "--set", "model.window=4", "--set", "model.scan_channels=8",
            "--set", "model.scan_state=4", "--set", "model.hidden=32", "--set", "model.head_hidden=16", "--set", "model.n_atoms=11",
            "--set", "replay.capacity=256", "--set", "replay.batch_size=16", "--set", "replay.learning_starts=32",
            "--set", "run.epoch_steps=5", "--set", "data.validation_fraction=0.05", "--device", "cpu"]  # fmt: skip
    baseline = tmp_path / "baseline.json"
    assert main(["profile", "--epochs", "1", "--write-baseline", str(baseline), *tiny]) == 0
    payload = json.loads(baseline.read_text())
    assert set(payload["seconds_per_epoch"]) == set(PHASES) and all(value > 0 for value in payload["seconds_per_epoch"].values())
    payload["seconds_per_epoch"]["learn"] /= 10.0  # a baseline ten times faster than this machine
    baseline.write_text(json.dumps(payload))
    capsys.readouterr()
    assert main(["profile", "--epochs", "1", "--baseline", str(baseline), *tiny]) == EXIT_VALIDATION_FAILED
    assert "trainer: profile regression: learn:" in capsys.readouterr().err
    assert main(["profile", "--baseline", str(tmp_path / "missing.json")]) == EXIT_USER_ERROR
    assert "cannot read profile baseline" in capsys.readouterr().err
