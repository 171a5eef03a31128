"""`trainer train --agents P`: one run directory per agent, a resumable population, and its user errors."""

from __future__ import annotations

import json

import pytest

from test_cli_train import tiny_config_toml

from trainer.cli import EXIT_USER_ERROR, main

TINY_TOML = tiny_config_toml(steps=4, epoch_steps=2, device="cpu")


@pytest.fixture
def tiny_toml(tmp_path, monkeypatch):
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    return path


@pytest.mark.slow
def test_agents_flag_trains_a_population_and_resumes_it(tmp_path, tiny_toml, capsys):
    out = tmp_path / "pop"
    args = ["train", "--config", str(tiny_toml), "--out", str(out), "--no-progress"]
    assert main([*args, "--agents", "2", "--agent-grid", "optim.lr=1e-3,3e-4", "--seed", "5"]) == 0
    captured = capsys.readouterr()
    assert "mean of 2 agents" in captured.out
    summary = json.loads((out / "metrics.json").read_text())
    assert [(agent["seed"], agent["grid"]["optim"]["lr"], agent["dir"]) for agent in summary["agents"]] == [
        (5, 1e-3, "agent-00"), (6, 3e-4, "agent-01")
    ]  # fmt: skip
    assert 'agent_grid = "optim.lr=1e-3,3e-4"' in (out / "config.toml").read_text()
    for agent in ("agent-00", "agent-01"):
        assert len((out / agent / "health_diag.jsonl").read_text().splitlines()) == 2
    # A longer run continues every agent from its own newest checkpoint.
    assert main(["train", "--out", str(out), "--resume", "--steps", "6", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "agent-00: resuming from" in err and "agent-01: resuming from" in err
    for agent in ("agent-00", "agent-01"):
        assert [json.loads(line)["step"] for line in (out / agent / "health_diag.jsonl").read_text().splitlines()] == [2, 4, 6]


def test_population_user_errors_exit_2_without_traceback(tmp_path, tiny_toml, capsys):
    base = ["train", "--config", str(tiny_toml), "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "a"), "--agents", "2", "--agent-grid", "model.hidden=8,16"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "run.agent_grid key 'model.hidden' (vs one of optim.lr," in err and "Traceback" not in err
    assert main([*base, "--out", str(tmp_path / "b"), "--agents", "0"]) == EXIT_USER_ERROR
    assert "run.agents = 0 out of range" in capsys.readouterr().err
    pop = tmp_path / "pop"
    (pop / "agent-00" / "checkpoints").mkdir(parents=True)
    (pop / "config.toml").write_text("[run]\nagents = 2\ndevice = \"cpu\"\n")
    code = main(["train", "--resume-from", str(pop / "agent-00" / "checkpoints" / "step-0000000002.json"), "--out", str(pop),
                 "--no-progress"])  # fmt: skip
    assert code == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "--resume-from applies to single runs (a population (2 agents) vs --resume" in err and "Traceback" not in err


def test_overwrite_removes_the_agent_directories(tmp_path):
    from trainer.config import TrainConfig
    from trainer.train.rundir import open_run_directory

    out = tmp_path / "pop"
    (out / "agent-00" / "checkpoints").mkdir(parents=True)
    (out / "agent-00" / "metrics.json").write_text("{}")
    (out / "agent-11").mkdir()
    (out / "agent-11" / "config.toml").write_text("")
    (out / "config.toml").write_text("")
    (out / "notes.txt").write_text("mine")
    run = open_run_directory(out, TrainConfig().replace(run={"agents": 2}), overwrite=True)
    assert sorted(entry.name for entry in out.iterdir()) == ["notes.txt"]
    assert "agent-00" in run.notes[0] and "agent-11" in run.notes[0]
