"""`trainer eval CHECKPOINT`: the run's test backtest reproduced from its best checkpoint, other data, errors; `--version`."""

from __future__ import annotations

import json
import shutil
from importlib import metadata

import pytest
from test_cli_train import TINY_TOML

from trainer.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FXCACHE_DIR", str(root / "fxcache"))
        config = root / "tiny.toml"
        config.write_text(TINY_TOML)
        out = root / "run"
        assert main(["train", "--config", str(config), "--device", "cpu", "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(autouse=True)
def _private_feature_cache(finished_run, monkeypatch):
    monkeypatch.setenv("FXCACHE_DIR", str(finished_run.parent / "fxcache"))


def test_eval_of_the_selected_checkpoint_reproduces_the_runs_test_metrics(finished_run, tmp_path, capsys):
    checkpoint = finished_run / "checkpoints" / "best.json"
    out = tmp_path / "eval"
    assert main(["eval", str(checkpoint), "--out", str(out), "--device", "cpu"]) == 0
    run = json.loads((finished_run / "metrics.json").read_text())
    assert json.loads((out / "metrics.json").read_text()) == {name: run[name] for name in ("agent", "buy_and_hold", "flat")}
    described = json.loads((out / "eval.json").read_text())
    assert described["checkpoint"] == str(checkpoint) and described["device"] == "cpu"
    assert described["steps_done"] == run["selection"]["step"] and described["window"] == run["splits"]["test"]
    for name in ("equity.png", "drawdown.png", "actions.png"):
        assert (out / "plots" / name).read_bytes()[:4] == b"\x89PNG", name
    assert f"results: {out}" in capsys.readouterr().out


def test_eval_of_a_checkpoint_written_before_the_mirror_averaged_policy_acts_as_its_run_did(finished_run, tmp_path):
    """A manifest whose config lacks run.policy_mirror (written before the key existed) is
    evaluated acting plainly, as its run did — not with today's default."""
    run_dir = tmp_path / "older"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "config.toml").write_text((run_dir / "config.toml").read_text().replace("policy_mirror = true\n", ""))
    manifests = sorted((run_dir / "checkpoints").glob("*.json"))
    for manifest_path in manifests:
        manifest = json.loads(manifest_path.read_text())
        assert manifest["config"]["run"].pop("policy_mirror") is True
        manifest_path.write_text(json.dumps(manifest))
    reports = {}
    for name, checkpoint in (("older", run_dir / "checkpoints" / "best.json"), ("now", finished_run / "checkpoints" / "best.json")):
        assert main(["eval", str(checkpoint), "--out", str(tmp_path / f"eval-{name}"), "--device", "cpu", "--no-plots"]) == 0
        reports[name] = json.loads((tmp_path / f"eval-{name}" / "metrics.json").read_text())
    plain = tmp_path / "eval-plain"
    manifest = json.loads((finished_run / "checkpoints" / "best.json").read_text())
    manifest["config"]["run"]["policy_mirror"] = False
    (run_dir / "checkpoints" / "plain.json").write_text(json.dumps(manifest))
    assert main(["eval", str(run_dir / "checkpoints" / "plain.json"), "--out", str(plain), "--device", "cpu", "--no-plots"]) == 0
    assert reports["older"] == json.loads((plain / "metrics.json").read_text())
    assert reports["older"]["agent"] != reports["now"]["agent"], "both policies traded alike: a weak comparison"


def test_eval_on_other_data_backtests_every_usable_bar(finished_run, tmp_path):
    checkpoint = finished_run / "checkpoints" / "step-0000000020.json"
    out = tmp_path / "eval"
    assert main(["eval", str(checkpoint), "--data", "default", "--out", str(out), "--device", "cpu", "--no-plots"]) == 0
    window = json.loads((out / "eval.json").read_text())["window"]
    assert window[1] == 6225 and window[1] - window[0] > 6000  # the whole EURUSD series, not its test tail
    assert set(json.loads((out / "metrics.json").read_text())) == {"agent", "buy_and_hold", "flat"}
    assert main(["eval", str(checkpoint), "--out", str(out), "--device", "cpu"]) == 2  # results are never mixed


def test_eval_applies_the_forecast_the_run_fitted(tmp_path, monkeypatch):
    # On an AR(1) market the run's LINEAR_FORECAST column is on; `trainer eval` must rebuild it from
    # the checkpoint's record, or the policy would read a zero column and the test backtest differ.
    from trainer.data.synthetic import make_signal_market, write_market_csv

    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    data = write_market_csv(make_signal_market(3000, seed=1), tmp_path / "ar1.csv")
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_TOML)
    run = tmp_path / "run"
    assert main(["train", "--config", str(config), "--data", str(data), "--device", "cpu", "--out", str(run),
                 "--no-progress", "--no-bands"]) == 0  # fmt: skip
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["linear_forecast"]["active"] is True
    best = json.loads((run / "checkpoints" / "best.json").read_text())
    assert best["extra"]["linear_forecast"] == metrics["linear_forecast"]
    out = tmp_path / "eval"
    assert main(["eval", str(run / "checkpoints" / "best.json"), "--out", str(out), "--device", "cpu", "--no-plots"]) == 0
    assert json.loads((out / "metrics.json").read_text()) == {name: metrics[name] for name in ("agent", "buy_and_hold", "flat")}


def test_eval_errors_are_one_line(finished_run, tmp_path, capsys):
    missing = finished_run / "checkpoints" / "step-0000000099.json"
    assert main(["eval", str(missing), "--out", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert err == f"trainer: error: checkpoint not found ({missing} vs a step-*.json manifest file) — hint: pass one of the manifests in RUN_DIR/checkpoints/\n"


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"trainer {metadata.version('foxhunt')} (foxhunt, Python ")
