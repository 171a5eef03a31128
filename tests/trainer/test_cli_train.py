"""`trainer train` end to end in a temporary directory: every output, resume, user errors."""

from __future__ import annotations

import json

import pytest

from trainer.cli import main

pytestmark = pytest.mark.slow

def tiny_config_toml(steps: int = 20, epoch_steps: int = 10, device: str | None = None) -> str:
    """The tiny config the CLI tests train (seconds on the CPU), as a TOML file's text."""
    device_line = "" if device is None else f'device = "{device}"\n'
    return f"""
[data]
validation_fraction = 0.05
[env]
n_envs = 8
episode_length = 48
[model]
window = 4
scan_channels = 8
scan_state = 4
hidden = 32
head_hidden = 16
n_atoms = 11
iqn_embedding = 16
[loss]
iqn_tau_samples = 4
iqn_target_samples = 4
[replay]
capacity = 256
batch_size = 16
learning_starts = 32
[run]
steps = {steps}
epoch_steps = {epoch_steps}
{device_line}"""


TINY_TOML = tiny_config_toml()


@pytest.fixture
def tiny_toml(tmp_path, monkeypatch):
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    return path


def test_train_writes_every_output(tmp_path, tiny_toml, capsys):
    out = tmp_path / "run"
    code = main(["train", "--config", str(tiny_toml), "--steps", "20", "--device", "cpu", "--seed", "3",
                 "--out", str(out), "--no-progress"])  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    assert "run directory" in captured.out
    # A tiny config is not the setting the shipped bands were measured on: told once, not watched.
    assert captured.err.count("metric bands not applied: ") == 1, captured.err
    assert "steps = 20" in (out / "config.toml").read_text()
    assert "seed = 3" in (out / "config.toml").read_text()
    records = [json.loads(line) for line in (out / "health_diag.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [10, 20]
    for section in ("losses", "grad_norms", "isv", "actions", "validation"):
        assert records[-1][section], section
    assert "EPSILON" in records[-1]["isv"]
    assert set(records[-1]["actions"]) == {"direction", "magnitude", "order_type", "urgency"}
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"agent", "buy_and_hold", "flat", "validation", "selection", "splits", "source", "data_sha256", "bands",
                            "linear_forecast", "flat_margin"}  # fmt: skip
    assert metrics["linear_forecast"]["active"] is False  # EURUSD's bars: no linear edge survives the check
    choice = metrics["flat_margin"]  # run.flat_margin: chosen on validation, margin 0 always a candidate
    scores = [candidate["validation"] for candidate in choice["candidates"]]
    assert choice["candidates"][0]["margin"] == 0.0 and choice["margin"] == choice["candidates"][scores.index(max(scores))]["margin"]
    assert metrics["bands"]["applied"] is False and len(metrics["data_sha256"]) == 64
    assert "env.n_envs (8 vs 64)" in metrics["bands"]["differences"]
    for block in (metrics, metrics["validation"]):  # the test window, and the validation window beside it
        for strategy in ("agent", "buy_and_hold", "flat"):
            for key in ("sharpe_ratio", "sortino_ratio", "max_drawdown", "annual_return", "turnover", "trade_count"):
                assert key in block[strategy]
    assert metrics["flat"]["trade_count"] == 0 and metrics["buy_and_hold"]["trade_count"] == 1
    assert metrics["selection"]["epoch"] in (0, 1) and metrics["selection"]["epochs_run"] == 2
    splits = metrics["splits"]
    assert splits["train"][1] + 24 == splits["validation"][0] and splits["validation"][1] + 24 == splits["test"][0]
    assert "# fold 0: train" in (out / "config.toml").read_text()  # the split sizes are documented
    checkpoints = {path.name for path in (out / "checkpoints").glob("*.safetensors")}
    assert len(checkpoints) == 3 and "best.safetensors" in checkpoints  # two periodic + the selected one
    from safetensors import safe_open

    with safe_open(str(out / "checkpoints" / "best.safetensors"), "pt") as best:
        names = set(best.keys())  # the selected network and its ISV, not the replay ring
    assert "isv" in names and any(n.startswith("online.") for n in names) and not any(n.startswith("replay.") for n in names)
    for name in ("equity.png", "drawdown.png", "actions.png", "losses.png", "learning_curve.png"):
        png = out / "plots" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name

    code = main(["train", "--config", str(tiny_toml), "--steps", "30", "--device", "cpu", "--seed", "3",
                 "--out", str(out), "--resume", "--no-progress"])  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in (out / "health_diag.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [10, 20, 30]


def test_user_errors_exit_2_without_traceback(tmp_path, tiny_toml, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[env]\nn_envs = -1\nwhat = 2\n")
    assert main(["train", "--config", str(bad), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "env.n_envs = -1 out of range" in err and "unknown key env.what" in err
    assert "Traceback" not in err
    assert main(["train", "--config", str(tiny_toml), "--resume"]) == 2
    assert "--resume needs the run to continue" in capsys.readouterr().err
    assert main(["train", "--config", str(tiny_toml), "--out", str(tmp_path / "missing"), "--resume"]) == 2
    assert "run directory to resume does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["train", "--config", str(tiny_toml), "--out", str(tmp_path / "empty"), "--resume"]) == 2
    assert "no checkpoint to resume from" in capsys.readouterr().err
    assert main(["train", "--config", str(tiny_toml), "--data", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "y")]) == 2
