"""A run stopped after an epoch, or mid-epoch by Ctrl-C, and resumed ends bitwise-identical to an uninterrupted run (CPU)."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file
from train_helpers import tiny_config

from trainer.train.checkpoint import latest_checkpoint
from trainer.train.loop import train
from trainer.train.stop import RunControl, RunInterrupted

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _private_feature_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))


def loop_config():
    return tiny_config(data={"validation_fraction": 0.05}, run={"steps": 24, "epoch_steps": 8})


def final_tensors(run_dir):
    return load_file(str(latest_checkpoint(run_dir / "checkpoints").with_suffix(".safetensors")))


def diag_without_wall_time(run_dir):
    records = [json.loads(line) for line in (run_dir / "health_diag.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("wall_time_s")
    return records


def test_stop_and_resume_is_bitwise_identical_to_uninterrupted(tmp_path):
    config = loop_config()
    uninterrupted = tmp_path / "uninterrupted"
    resumed = tmp_path / "resumed"
    train(config, uninterrupted, make_plots=False)
    train(config, resumed, stop_after_epochs=1, make_plots=False)
    assert len(diag_without_wall_time(resumed)) == 1
    train(config, resumed, resume=True, make_plots=False)

    expected, got = final_tensors(uninterrupted), final_tensors(resumed)
    assert expected.keys() == got.keys()
    different = [name for name in expected if not (expected[name] == got[name]).all()]
    assert not different, f"tensors differ after resume: {different[:5]}"
    assert json.loads((uninterrupted / "metrics.json").read_text()) == json.loads((resumed / "metrics.json").read_text())
    assert diag_without_wall_time(uninterrupted) == diag_without_wall_time(resumed)


def test_same_seed_same_results_and_another_seed_differs(tmp_path):
    config = loop_config().replace(run={"steps": 8})
    train(config, tmp_path / "a", make_plots=False)
    train(config, tmp_path / "b", make_plots=False)
    train(config.replace(run={"seed": 7}), tmp_path / "c", make_plots=False)
    a, b, c = (final_tensors(tmp_path / name) for name in "abc")
    assert all((a[name] == b[name]).all() for name in a)
    assert not (a["online.trunk.0.weight"] == c["online.trunk.0.weight"]).all()


def mid_epoch_config():
    # epochs of 40 steps run in progress chunks of 25 + 15: step 25 is inside an epoch
    return tiny_config(data={"validation_fraction": 0.05}, run={"steps": 80, "epoch_steps": 40, "keep_checkpoints": 100})


def test_interrupt_mid_epoch_then_resume_is_bitwise_identical_to_uninterrupted(tmp_path):
    config = mid_epoch_config()
    uninterrupted, resumed = tmp_path / "uninterrupted", tmp_path / "resumed"
    train(config, uninterrupted, make_plots=False)
    control = RunControl(resume_command="trainer train --resume --out RUN")

    def press_ctrl_c_at_step_25(done, total, info):
        if done == 25 and info is None:
            control.request_stop()  # what the SIGINT handler does

    expected = r"stopped by SIGINT at step 25 of 80; checkpoint saved to .*step-0000000025\.json — resume with: trainer train"
    with pytest.raises(RunInterrupted, match=expected) as info:
        train(config, resumed, progress=press_ctrl_c_at_step_25, control=control, make_plots=False)
    assert info.value.exit_code == 130
    assert latest_checkpoint(resumed / "checkpoints").name == "step-0000000025.json"
    assert not (resumed / "health_diag.jsonl").exists()  # stopped inside the first epoch
    train(config, resumed, resume=True, make_plots=False)

    expected_tensors, got = final_tensors(uninterrupted), final_tensors(resumed)
    different = [name for name in expected_tensors if not (expected_tensors[name] == got[name]).all()]
    assert not different, f"tensors differ after a mid-epoch resume: {different[:5]}"
    assert json.loads((uninterrupted / "metrics.json").read_text()) == json.loads((resumed / "metrics.json").read_text())
    assert diag_without_wall_time(uninterrupted) == diag_without_wall_time(resumed)


def test_checkpoint_minutes_saves_between_epochs_without_changing_the_run(tmp_path):
    config = mid_epoch_config().replace(run={"checkpoint_minutes": 1.0})
    minutes = iter(range(10_000))
    control = RunControl(config.run.checkpoint_minutes, clock=lambda: 60.0 * next(minutes))  # a minute per look
    train(config, tmp_path / "periodic", control=control, make_plots=False)
    train(config, tmp_path / "plain", make_plots=False)
    steps = [json.loads(path.read_text())["steps_done"] for path in sorted((tmp_path / "periodic" / "checkpoints").glob("step-*.json"))]
    assert steps == [25, 40, 65, 80]
    expected_tensors, got = final_tensors(tmp_path / "plain"), final_tensors(tmp_path / "periodic")
    assert all((expected_tensors[name] == got[name]).all() for name in expected_tensors)
