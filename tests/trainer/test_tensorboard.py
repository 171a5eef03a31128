"""`--tensorboard`: every HEALTH_DIAG record mirrored as TensorBoard scalars (read back with the real package)."""

from __future__ import annotations

import json
import sys

import pytest
from test_cli_train import TINY_TOML

from trainer.cli import main
from trainer.eval.tensorboard import record_scalars

pytestmark = pytest.mark.slow


def test_tensorboard_scalars_mirror_health_diag(tmp_path, monkeypatch):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_TOML)
    out = tmp_path / "run"
    assert main(["train", "--config", str(config), "--device", "cpu", "--out", str(out), "--no-progress", "--tensorboard"]) == 0
    records = [json.loads(line) for line in (out / "health_diag.jsonl").read_text().splitlines()]
    events = event_accumulator.EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in ("losses/iqn", "losses/c51/direction", "grad_norms/global", "validation/buy_and_hold/sharpe_ratio",
                "adaptive/epsilon", "adaptive/kelly_cap", "actions/direction/flat"):  # fmt: skip
        assert tag in tags, tag
    assert tags == set(record_scalars(records[-1]))
    for tag in ("losses/total", "adaptive/epsilon"):
        logged = [(event.step, event.value) for event in events.Scalars(tag)]
        expected = [(record["step"], record_scalars(record)[tag]) for record in records]
        assert [step for step, _ in logged] == [step for step, _ in expected]
        assert [value for _, value in logged] == pytest.approx([value for _, value in expected], rel=1e-6)


def test_tensorboard_without_the_package_is_a_user_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # `import tensorboard` fails, as when not installed
    assert main(["train", "--out", str(tmp_path / "run"), "--tensorboard", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "TensorBoard is not installed" in err and "foxhunt[tensorboard]" in err
    assert not (tmp_path / "run").exists()
