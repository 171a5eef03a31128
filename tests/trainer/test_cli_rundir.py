"""`trainer train` run directories: refused reuse, unique defaults, honest resume, clean OS errors.

Real runs of a tiny config on the embedded data (a private feature cache per test). Read-only
and full file systems are real: as root, a tmpfs mounted read-only or tiny; otherwise chmod for
the read-only cases (a full disk then cannot be made and that test skips).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_cli_train import TINY_TOML

from trainer.cli import main
from trainer.errors import os_error_text
from trainer.train.rundir import new_run_directory

pytestmark = pytest.mark.slow


@pytest.fixture
def tiny_toml(tmp_path, monkeypatch):
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    return path


def train(tiny_toml, out, *extra: str) -> int:
    return main(["train", "--config", str(tiny_toml), "--device", "cpu", "--out", str(out), "--no-progress", *extra])


def steps_logged(out: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "health_diag.jsonl").read_text().splitlines()]


def test_a_finished_run_is_not_overwritten_without_overwrite(tmp_path, tiny_toml, capsys):
    out = tmp_path / "run"
    assert train(tiny_toml, out) == 0
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()}
    assert train(tiny_toml, out, "--seed", "9") == 2
    err = capsys.readouterr().err
    assert "run directory is not empty" in err and str(out) in err and "--resume" in err and "--overwrite" in err
    assert {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()} == before
    (out / "notes.txt").write_text("mine")
    assert train(tiny_toml, out, "--seed", "9", "--overwrite") == 0
    assert steps_logged(out) == [10, 20]  # one run's epochs, not two runs mixed
    assert "seed = 9" in (out / "config.toml").read_text()
    assert (out / "notes.txt").read_text() == "mine"  # --overwrite removes the trainer's outputs only
    assert "--overwrite: removed" in capsys.readouterr().err


def test_default_run_directories_are_unique_within_one_second(tmp_path):
    now = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
    made: list[Path] = []
    threads = [threading.Thread(target=lambda: made.append(new_run_directory(tmp_path / "runs", now))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == 8
    assert sorted(path.name for path in made)[:2] == ["20261201-120000", "20261201-120000-2"]


def test_resume_refuses_another_config_and_shows_the_difference(tmp_path, tiny_toml, capsys):
    out = tmp_path / "run"
    assert train(tiny_toml, out, "--seed", "3") == 0
    stored = (out / "config.toml").read_text()
    assert train(tiny_toml, out, "--resume", "--seed", "7", "--steps", "30") == 2
    err = capsys.readouterr().err
    assert "resume config differs from the run's" in err and "run.seed: 3 in the run vs 7 now" in err
    assert train(tiny_toml, out, "--resume", "--seed", "3", "--steps", "10") == 2
    assert "run.steps: 20 in the run vs 10 now (run.steps may only grow)" in capsys.readouterr().err
    assert (out / "config.toml").read_text() == stored
    # Without --config a resume runs the run's own config: only --steps is given.
    assert main(["train", "--out", str(out), "--resume", "--steps", "30", "--no-progress"]) == 0
    assert steps_logged(out) == [10, 20, 30]
    assert "seed = 3" in (out / "config.toml").read_text()


def test_resume_names_its_checkpoint_and_cuts_health_diag_back(tmp_path, tiny_toml, capsys):
    out = tmp_path / "run"
    assert train(tiny_toml, out, "--steps", "30") == 0
    checkpoints = out / "checkpoints"
    newest = sorted(checkpoints.glob("step-*.json"))[-1]
    assert newest.name == "step-0000000030.json"
    newest.unlink()  # killed while writing the last checkpoint: its tensors exist, its manifest not
    capsys.readouterr()
    assert train(tiny_toml, out, "--steps", "30", "--resume") == 0
    err = capsys.readouterr().err
    assert f"resuming from {checkpoints / 'step-0000000020.json'} (step 20, 2 epochs finished)" in err
    assert "health_diag.jsonl: dropped 1 record after step 20" in err
    assert steps_logged(out) == [10, 20, 30]  # epoch 3 once, not twice


def test_resume_from_picks_a_checkpoint_and_reproduces_the_run(tmp_path, tiny_toml, capsys):
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    assert train(tiny_toml, whole, "--steps", "30") == 0
    assert train(tiny_toml, resumed, "--steps", "30") == 0
    first = resumed / "checkpoints" / "step-0000000020.json"
    assert main(["train", "--resume-from", str(first), "--no-progress"]) == 0  # the run directory comes from the path
    assert f"resuming from {first}" in capsys.readouterr().err
    assert steps_logged(resumed) == [10, 20, 30]
    final = "checkpoints/step-0000000030.safetensors"
    assert (whole / final).read_bytes() == (resumed / final).read_bytes()
    best = resumed / "checkpoints" / "best.json"
    assert main(["train", "--resume-from", str(best), "--no-progress"]) == 2
    assert f"checkpoint cannot be resumed ({best} holds only the selected network" in capsys.readouterr().err
    missing = resumed / "checkpoints" / "step-0000000099.json"
    assert main(["train", "--resume-from", str(missing), "--no-progress"]) == 2
    assert f"checkpoint not found ({missing} vs a step-*.json manifest file)" in capsys.readouterr().err


def test_layout_mismatch_on_resume_is_one_line(tmp_path, tiny_toml, capsys):
    out = tmp_path / "run"
    assert train(tiny_toml, out) == 0
    manifest = sorted((out / "checkpoints").glob("step-*.json"))[-1]
    payload = json.loads(manifest.read_text())
    payload["layout_fingerprint"] = "0x0000000000000001"
    manifest.write_text(json.dumps(payload))
    capsys.readouterr()
    assert train(tiny_toml, out, "--resume", "--steps", "30") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"trainer: error: checkpoint {manifest} layout fingerprint mismatch") and "retrain required" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True).returncode == 0


@pytest.fixture
def read_only(tmp_path):
    """A function making a directory read-only for this process (ro tmpfs as root, chmod otherwise)."""
    mounted: list[Path] = []
    chmodded: list[Path] = []

    def make(path: Path) -> Path:
        if _mount_tmpfs(path, "ro,size=1m"):
            mounted.append(path)
        elif os.geteuid() != 0:
            path.chmod(0o555)
            chmodded.append(path)
        else:
            pytest.skip("running as root without permission to mount a read-only tmpfs")
        return path

    yield make
    for path in mounted:
        subprocess.run(["umount", str(path)], check=True)
    for path in chmodded:
        path.chmod(0o755)


@pytest.mark.parametrize("where", ["out", "checkpoints", "plots"])
def test_unwritable_run_directory_fails_before_training(tmp_path, tiny_toml, capsys, read_only, where):
    out = tmp_path / "run"
    target = read_only(out if where == "out" else out / where)
    assert train(tiny_toml, out) == 2
    err = capsys.readouterr().err
    assert f"run directory is not writable ({target}: " in err and "Traceback" not in err
    assert not (out / "health_diag.jsonl").exists()  # refused before the first step, not after training


def test_full_disk_is_one_line_naming_the_file(tmp_path, tiny_toml, capsys):
    out = tmp_path / "run"
    if not _mount_tmpfs(out, "size=96k"):
        pytest.skip("needs root and tmpfs to make a real full file system")
    try:
        assert train(tiny_toml, out) == 2
    finally:
        subprocess.run(["umount", str(out)], check=True)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"trainer: error: file system error on {out}")
    assert "(No space left on device vs free disk space) — hint: free space" in err


def test_os_error_text_names_the_path_and_says_what_to_do(tmp_path):
    missing = tmp_path / "nope" / "file"
    with pytest.raises(OSError) as info:
        missing.read_text()
    assert os_error_text(info.value) == (
        f"file system error on {missing} (No such file or directory vs an existing path) — hint: check the path"
    )
    unnamed = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert os_error_text(unnamed).startswith("file system error on a file (No space left on device vs free disk space)")


def test_sigterm_checkpoints_the_current_step_and_prints_the_resume_command(tmp_path, tiny_toml):
    out = tmp_path / "run"
    one_long_epoch = tmp_path / "long.toml"
    one_long_epoch.write_text(tiny_toml.read_text().replace("epoch_steps = 10", "epoch_steps = 100000"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "trainer.cli", "train", "--config", str(one_long_epoch), "--device", "cpu",
               "--out", str(out), "--steps", "100000", "--no-progress"]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr_lines = []
    for line in process.stderr:  # wait until training is under way (the first epoch would take minutes)
        stderr_lines.append(line)
        if line.startswith("replay warm-up done"):
            break
    process.terminate()
    _, rest = process.communicate(timeout=120)
    err = "".join(stderr_lines) + rest
    assert process.returncode == 143, err
    assert "stopped by SIGTERM at step " in err and f"resume with: trainer train --resume --out {out}" in err
    manifests = sorted((out / "checkpoints").glob("step-*.json"))
    saved = json.loads(manifests[-1].read_text())
    assert 0 < saved["steps_done"] < 100_000 and saved["extra"]["epoch_open"]  # mid-epoch, at the current step
    assert f"step {saved['steps_done']:,} of 100,000; checkpoint saved to {manifests[-1]}" in err


def test_config_toml_records_the_device_that_ran(tmp_path, tiny_toml):
    out = tmp_path / "run"
    assert main(["train", "--config", str(tiny_toml), "--steps", "10", "--out", str(out), "--no-progress"]) == 0  # device auto
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert f'device = "{expected}"' in (out / "config.toml").read_text()


def test_too_few_bars_without_folds_says_how_many_are_needed(tmp_path, tiny_toml, capsys):
    rows = ["time,open,high,low,close"] + [f"2024-01-01 {h:02d}:00:00,1.0,1.2,0.9,1.1" for h in range(24)]
    short = tmp_path / "short.csv"
    short.write_text("\n".join(rows) + "\n")
    assert train(tiny_toml, tmp_path / "run", "--data", str(short)) == 2
    err = capsys.readouterr().err
    assert "too few bars for a train | validation | test split (" in err and "at least" in err and "bars in all" in err
    assert "fold" not in err  # no folds were asked for
