"""`trainer validate` end to end on tiny configs: a 2 × 2 sweep on a real local Ray, a planted
divergence stopped by its band, a SIGKILL'd driver that resumes, and the sweep-directory guards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer.cli import EXIT_BAND_STOP, EXIT_USER_ERROR, main
from trainer.eval.bands import bands_from_records, write_bands
from trainer.validate.report import cell_history

sys.path.insert(0, str(Path(__file__).parents[1] / "train"))  # the population tolerance lives beside the training tests
sys.path.insert(0, str(Path(__file__).parents[1]))  # the CLI tests' tiny config
from test_cli_train import tiny_config_toml  # noqa: E402
from train_helpers import close_json_differences  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]

TINY_TOML = tiny_config_toml(device="cpu")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("validate")
    (root / "tiny.toml").write_text(TINY_TOML)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FXCACHE_DIR", str(root / "fxcache"))  # shared by the driver, Ray workers and pool processes
        yield root


def _validate(workspace: Path, out: Path, *extra: str) -> int:
    return main(["validate", "--config", str(workspace / "tiny.toml"), "--out", str(out), "--no-progress", *extra])


@pytest.fixture(scope="module")
def ray_sweep(workspace):
    out = workspace / "ray-sweep"
    code = _validate(workspace, out, "--seeds", "2", "--folds", "2", "--tiers", "1,2", "--executor", "ray", "--jobs", "2", "--no-bands")
    return out, code


def test_two_by_two_sweep_on_a_local_ray(ray_sweep):
    out, code = ray_sweep
    report = json.loads((out / "report.json").read_text())
    assert code == (0 if report["passed"] else 1), (code, [tier["reason"] for tier in report["grid_points"][0]["tiers"]])
    assert report["plan"]["executor"] == "ray" and report["claim_note"] == "not a validation claim (needs ≥ 5 × 6)"
    assert sorted(cell["id"] for cell in report["cells"]) == [f"base-g0-s{s}-f{f}" for s in range(2) for f in range(2)]
    assert {cell["status"] for cell in report["cells"]} == {"ok"}
    for cell in report["cells"]:
        assert cell["metrics"]["agent"].keys() >= {"sharpe_ratio", "max_drawdown", "trade_count"}
        assert cell["selected_epoch"] in (0, 1) and cell["wall_time_s"] > 0  # chosen on validation
        assert len(cell_history(Path(cell["dir"]))) == 2
    point = report["grid_points"][0]
    # A Sharpe ratio exists for every cell whose agent traded on its test window (a tiny agent may not).
    traded = sum(1 for cell in report["cells"] if cell["metrics"]["agent"]["sharpe_ratio"] is not None)
    assert traded >= 1 and point["aggregate"]["agent"]["sharpe_ratio"]["n"] == traded
    assert [tier["tier"] for tier in point["tiers"]] == [1, 2]
    assert set(point["paired_tests"]) == {"buy_and_hold", "flat"}
    markdown = (out / "report.md").read_text()
    assert "# Validation report — 2 seeds × 2 folds" in markdown and "| 2 out of sample |" in markdown
    for plot in ("sharpe_strip.png", "learning_curves.png", "median_cell_equity.png"):
        assert (out / "plots" / plot).stat().st_size > 0, plot
    assert not (out / "sweep.lock").exists()


def test_a_finished_sweep_is_not_rerun(ray_sweep, workspace, capsys):
    out, code = ray_sweep
    before = {path: path.read_bytes() for path in (out / "cells").glob("*/cell.json")}
    again = _validate(workspace, out, "--seeds", "2", "--folds", "2", "--tiers", "1,2", "--executor", "local", "--no-bands")
    assert again == code
    assert {path: path.read_bytes() for path in (out / "cells").glob("*/cell.json")} == before
    # Other tiers re-read the same cells (tiers 1 and 2 add none): nothing trains, the report follows.
    assert _validate(workspace, out, "--seeds", "2", "--folds", "2", "--tiers", "1", "--executor", "local", "--no-bands") in (0, 1)
    assert "[1/" not in capsys.readouterr().out  # no cell ran
    report = json.loads((out / "report.json").read_text())
    assert [tier["tier"] for tier in report["grid_points"][0]["tiers"]] == [1]
    assert json.loads((out / "sweep.json").read_text())["tiers"] == [1]
    assert {path: path.read_bytes() for path in (out / "cells").glob("*/cell.json")} == before
    assert _validate(workspace, out, "--seeds", "2", "--folds", "2", "--tiers", "1,2", "--executor", "local", "--no-bands") == code
    assert [tier["tier"] for tier in json.loads((out / "report.json").read_text())["grid_points"][0]["tiers"]] == [1, 2]
    assert "[1/4]" not in capsys.readouterr().out  # no cell ran


def test_planted_divergence_is_stopped_by_its_band(ray_sweep, workspace, capsys):
    """Bands from the good 2 × 2 sweep; the cells with lr × 1000 leave them and stop themselves."""
    out, _ = ray_sweep
    records = [record for cell_dir in sorted((out / "cells").iterdir()) for record in cell_history(cell_dir)]
    bands_path = write_bands(bands_from_records(records, source=str(out / "report.json")), workspace / "bands.toml", "test bands")
    sweep = workspace / "divergence"
    code = _validate(
        workspace, sweep, "--seeds", "1", "--folds", "2", "--tiers", "1", "--executor", "local", "--jobs", "2",
        "--grid", "optim.lr=0.0003,0.3", "--set", f"run.bands={json.dumps(str(bands_path))}", "--set", "run.band_epochs=1",
    )  # fmt: skip
    assert code == 1
    report = json.loads((sweep / "report.json").read_text())
    by_grid = {point["index"]: point for point in report["grid_points"]}
    assert by_grid[0]["stopped_by_bands"] == 0 and by_grid[0]["finished"] == 2
    assert by_grid[1]["stopped_by_bands"] == 2
    assert "stopped by their metric bands" in by_grid[1]["tiers"][0]["reason"]
    stopped = [cell for cell in report["cells"] if cell["grid"] == 1]
    for cell in stopped:
        assert cell["status"] == "stopped"
        reason = cell["termination"]
        assert reason["kind"] == "metric_out_of_band" and reason["consecutive_epochs"] == 2 and len(reason["values"]) == 2
        assert f"{reason['metric']} outside its band" in reason["message"]
        cell_dir = Path(cell["dir"])
        assert json.loads((cell_dir / "metrics.json").read_text())["termination"] == reason
        assert cell_history(cell_dir)[-1]["termination"] == reason
        assert list(cell_dir.glob("fold-*/checkpoints/*.json")), "a checkpoint is saved before the stop (in the fold run directory)"
    assert "stopped" in (sweep / "report.md").read_text()

    run = workspace / "diverged-train"
    status = main(["train", "--config", str(workspace / "tiny.toml"), "--out", str(run), "--no-progress", "--set", "optim.lr=0.3",
                   "--set", f"run.bands={json.dumps(str(bands_path))}", "--set", "run.band_epochs=1"])  # fmt: skip
    assert status == EXIT_BAND_STOP
    assert "trainer: stopped by its metric bands:" in capsys.readouterr().err


def _command(workspace: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "trainer.cli", "validate", "--config", str(workspace / "tiny.toml"), "--out", str(out),
            "--no-progress", "--seeds", "1", "--folds", "2", "--tiers", "1", "--executor", "local", "--jobs", "1", "--no-bands",
            "--set", "run.steps=30"]  # fmt: skip


def test_killed_driver_resumes_and_never_reruns_a_finished_cell(workspace):
    out = workspace / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(_command(workspace, out), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = out / "cells" / "base-g0-s0-f0" / "cell.json"
    deadline = time.monotonic() + 600
    while not first.exists() and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first.exists() and driver.poll() is None, "the first cell should finish while the sweep still runs"
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    finished = first.read_bytes()
    assert (out / "sweep.lock").exists()  # left behind by the killed driver
    assert not (out / "cells" / "base-g0-s0-f1" / "cell.json").exists()

    code = subprocess.run(_command(workspace, out), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert code.returncode in (0, 1), code.stderr
    assert "[2/2] base-g0-s0-f1" in code.stdout and "base-g0-s0-f0" not in code.stdout  # only the missing cell ran
    assert first.read_bytes() == finished
    assert len(cell_history(first.parent)) == 3  # the finished cell's HEALTH_DIAG was not appended to
    second = json.loads((out / "cells" / "base-g0-s0-f1" / "cell.json").read_text())
    assert second["status"] == "ok" and len(cell_history(first.parent.parent / "base-g0-s0-f1")) == 3
    report = json.loads((out / "report.json").read_text())
    assert len(report["cells"]) == 2 and not (out / "sweep.lock").exists()


def test_two_sweeps_never_share_a_directory(workspace, capsys):
    out = workspace / "guarded"
    out.mkdir()
    (out / "sweep.lock").write_text(f"{os.getpid()} {os.uname().nodename}")
    assert _validate(workspace, out, "--seeds", "1", "--folds", "1", "--executor", "local") == EXIT_USER_ERROR
    assert f"another sweep is running in {out} (sweep.lock: pid {os.getpid()}" in capsys.readouterr().err
    (out / "sweep.lock").unlink()
    (out / "sweep.json").write_text(json.dumps({"seeds": 9}))
    assert _validate(workspace, out, "--seeds", "1", "--folds", "1", "--executor", "local") == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert f"{out} holds a different sweep (config, seeds, folds, grid differ from sweep.json" in err
    assert "hint: pass another --out" in err


def test_validate_user_errors(workspace, capsys):
    assert _validate(workspace, workspace / "x", "--tiers", "4") == EXIT_USER_ERROR
    assert "bad --tiers ('4' vs a comma list of 1, 2, 3)" in capsys.readouterr().err
    assert _validate(workspace, workspace / "x", "--executor", "local", "--address", "ray://h:1") == EXIT_USER_ERROR
    assert "--address needs Ray" in capsys.readouterr().err


def test_cells_packed_into_populations_give_the_same_results(ray_sweep, workspace):
    """The 2 × 2 sweep again with the two seeds of each fold trained as one population: every cell's
    result is the one it had as its own task (agent i of a stacked population is its single run within
    train_helpers.POPULATION_RTOL / _ATOL; status, selection and every non-number exactly)."""
    out, _ = ray_sweep
    packed = workspace / "packed-sweep"
    _validate(workspace, packed, "--seeds", "2", "--folds", "2", "--tiers", "1,2", "--executor", "local", "--jobs", "1",
              "--no-bands", "--population", "2")  # fmt: skip
    for cell_json in sorted((out / "cells").glob("*/cell.json")):
        alone = json.loads(cell_json.read_text())
        together = json.loads((packed / "cells" / cell_json.parent.name / "cell.json").read_text())
        assert together["population"] == 2 and "population" not in alone
        for key in ("status", "metrics", "validation", "selection"):
            assert close_json_differences(alone[key], together[key]) == [], (cell_json.parent.name, key)
