"""Metric bands: the file format (unknown metrics are errors), bands from records, the watcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.config import TrainConfig, load_config
from trainer.eval import bands as bands_module
from trainer.eval.bands import (
    DEFAULT_BANDS_PATH,
    GPU_BANDS_PATH,
    BandScope,
    choose_bands,
    KNOWN_METRICS,
    Band,
    BandsError,
    BandWatcher,
    MetricBands,
    band_watcher,
    bands_from_records,
    load_bands,
    metric_value,
    write_bands,
)


REPO = Path(__file__).resolve().parents[3]


def record(epoch: int, total: float | None = 1.0, sharpe: float | None = 0.5, tau: float = 0.005) -> dict:
    return {
        "epoch": epoch,
        "losses": {"c51": {"direction": 0.5, "magnitude": 0.5}, "iqn": 0.2, "cql": 0.0, "total": total},
        "grad_norms": {"global": 2.0},
        "isv": {"TAU": tau, "GAMMA[0]": 0.99},
        "validation": {"agent": {"sharpe_ratio": sharpe}, "buy_and_hold": {"sharpe_ratio": 1.0}},
    }


def test_metric_values_from_a_record():
    data = record(0)
    assert metric_value(data, "loss.c51") == 1.0
    assert metric_value(data, "loss.total") == 1.0
    assert metric_value(data, "grad_norm.global") == 2.0
    assert metric_value(data, "isv.TAU") == 0.005
    assert metric_value(data, "validation.sharpe_ratio") == 0.5
    assert metric_value({"validation": {"sharpe_ratio": 0.25}}, "validation.sharpe_ratio") == 0.25
    assert metric_value(record(0, total=None), "loss.total") is None
    assert "isv.GAMMA[3]" in KNOWN_METRICS and "isv.ATOM_HALF_WIDTH[0]" in KNOWN_METRICS
    assert "isv.FEE_RATE" not in KNOWN_METRICS  # static config, not an adaptive value


def test_bands_are_mean_plus_minus_three_sigma_and_skip_constants():
    bands = bands_from_records([record(0, total=1.0), record(1, total=2.0), record(2, total=3.0)], source="r.json")
    band = bands.bands["loss.total"]
    assert band.mean == pytest.approx(2.0) and band.std == pytest.approx(1.0)
    assert (band.low, band.high) == pytest.approx((-1.0, 5.0))
    assert "loss.iqn" not in bands.bands  # never varies: a zero-width band would stop every other run


def test_bands_round_trip_through_the_file(tmp_path):
    bands = bands_from_records([record(0, total=1.0, tau=0.004), record(1, total=2.0, tau=0.006)], source="report.json")
    path = write_bands(bands, tmp_path / "bands.toml", "header line one\nheader line two")
    text = path.read_text()
    assert text.startswith("# header line one\n# header line two\n")
    loaded = load_bands(path)
    assert loaded.source == "report.json"
    assert loaded.bands.keys() == bands.bands.keys()
    assert loaded.bands["isv.TAU"].low == pytest.approx(bands.bands["isv.TAU"].low)


def test_unknown_metrics_and_bad_bands_are_all_reported(tmp_path):
    path = tmp_path / "bands.toml"
    path.write_text(
        'schema = 1\nsource = ""\nextra = 1\n'
        '[bands."loss.totl"]\nlow = 0.0\nhigh = 1.0\nmean = 0.5\nstd = 0.1\n'
        '[bands."loss.iqn"]\nlow = 2.0\nhigh = 1.0\nmean = 0.5\nstd = 0.1\n'
        '[bands."isv.TAU"]\nlow = 0.0\n'
    )
    with pytest.raises(BandsError) as caught:
        load_bands(path)
    message = str(caught.value)
    assert "invalid metric bands" in message and "(4 problems vs none)" in message
    assert "unknown metric 'loss.totl' (vs one of validation.sharpe_ratio" in message
    assert "band 'loss.iqn' has low 2.0 > high 1.0 (vs low ≤ high)" in message
    assert "band 'isv.TAU' lacks finite high, mean, std" in message
    assert "unknown top-level key 'extra'" in message
    assert "hint:" in message


def test_missing_bands_file_names_the_fix(tmp_path):
    with pytest.raises(BandsError, match=r"cannot read metric bands .* — hint: write it with `trainer validate --write-bands`"):
        load_bands(tmp_path / "absent.toml")


def test_watcher_stops_after_2n_consecutive_out_of_band_epochs():
    bands = MetricBands({"loss.total": Band("loss.total", 0.0, 2.0, 1.0, 0.3, 10)})
    watcher = BandWatcher(bands, patience=2)
    assert watcher.observe(record(0, total=5.0)) is None
    assert watcher.observe(record(1, total=1.0)) is None  # back in band: the streak restarts
    for epoch in (2, 3, 4):
        assert watcher.observe(record(epoch, total=9.0 + epoch)) is None
    reason = watcher.observe(record(5, total=None))  # a NaN loss counts as out of band
    assert reason is not None
    assert reason.metric == "loss.total" and reason.epochs == 4 and reason.epoch == 5
    assert reason.values == (11.0, 12.0, 13.0, None)
    assert "loss.total outside its band [0, 2] for 4 consecutive epochs (last: 11, 12, 13, null)" in reason.message()
    assert reason.to_dict()["band"] == [0.0, 2.0]


def test_undefined_validation_sharpe_neither_advances_nor_resets():
    bands = MetricBands({"validation.sharpe_ratio": Band("validation.sharpe_ratio", -1.0, 1.0, 0.0, 0.3, 10)})
    watcher = BandWatcher(bands, patience=1)
    assert watcher.observe(record(0, sharpe=-5.0)) is None
    assert watcher.observe(record(1, sharpe=None)) is None  # the agent never traded: no evidence
    assert watcher.observe(record(2, sharpe=-6.0)) is not None


def test_runs_use_the_shipped_bands_by_default_and_can_opt_out():
    assert DEFAULT_BANDS_PATH.exists()
    shipped = load_bands(DEFAULT_BANDS_PATH)
    assert shipped.scope is not None and shipped.scope.config["model.hidden"] == TrainConfig().model.hidden
    home = choose_bands(TrainConfig(), shipped.scope)  # a default run on the data the bands came from
    watcher = band_watcher(home, TrainConfig().run.band_epochs)
    assert home.note is None and watcher is not None and watcher.patience == 2 and watcher.bands.bands
    off = choose_bands(TrainConfig().replace(run={"bands": ""}), shipped.scope)
    assert off.bands is None and band_watcher(off, 2) is None and off.note is None


def test_the_default_run_is_in_the_shipped_bands_scope():
    # The scope of a default run on the data the bands came from, built as a run builds it. A new
    # config key (or a changed default) takes every default run out of the shipped bands' scope,
    # silently unwatched (optim.weight_decay did, 2026-12-02): re-validate and --write-bands.
    shipped = load_bands(DEFAULT_BANDS_PATH)
    run = BandScope.of(TrainConfig(), shipped.scope.data, shipped.scope.data_sha256)
    assert shipped.scope.differences(run) == []


def test_the_gpu_run_is_in_the_shipped_gpu_bands_scope_and_gets_them_by_default():
    # config/train/gpu.toml says run.bands = "default": a GPU run on the embedded bars must be watched
    # by the GPU config's own bands, not the CPU default's, and a default CPU run by the CPU bands.
    gpu = load_config(REPO / "config" / "train" / "gpu.toml")
    shipped = load_bands(GPU_BANDS_PATH)
    scope = BandScope.of(gpu, shipped.scope.data, shipped.scope.data_sha256)
    assert shipped.scope.differences(scope) == []
    choice = choose_bands(gpu, scope)
    assert choice.path == str(GPU_BANDS_PATH) and choice.bands is not None and choice.note is None
    cpu = choose_bands(TrainConfig(), BandScope.of(TrainConfig(), shipped.scope.data, shipped.scope.data_sha256))
    assert cpu.path == str(DEFAULT_BANDS_PATH) and cpu.bands is not None


def test_a_gpu_run_that_changes_one_key_is_told_the_gpu_bands_and_that_key_alone():
    # A user of gpu.toml who overrides a key leaves the validated scope: no bands watch the run, and
    # the note names the GPU bands (the nearest file) and exactly the key that differs.
    gpu = load_config(REPO / "config" / "train" / "gpu.toml").replace(optim={"weight_decay": 0.0})
    shipped = load_bands(GPU_BANDS_PATH)
    choice = choose_bands(gpu, BandScope.of(gpu, shipped.scope.data, shipped.scope.data_sha256))
    assert choice.bands is None and choice.path == str(GPU_BANDS_PATH)
    assert choice.differences == ("optim.weight_decay (0.0 vs 1.0)",)
    assert "config/metric-bands-gpu.toml" in choice.note and "optim.weight_decay" in choice.note


def test_a_default_run_of_no_shipped_scope_is_told_the_nearest_file_and_watched_by_none():
    shipped = load_bands(DEFAULT_BANDS_PATH)
    config = TrainConfig().replace(optim={"lr": 0.01})
    choice = choose_bands(config, BandScope.of(config, shipped.scope.data, shipped.scope.data_sha256))
    assert choice.bands is None and choice.path == str(DEFAULT_BANDS_PATH)
    assert choice.differences == ("optim.lr (0.01 vs 0.0003)",)


def scoped_bands(tmp_path, config: TrainConfig, sha: str = "aa" * 32):
    scope = BandScope.of(config, "eurusd", sha)
    bands = bands_from_records([record(0, total=1.0), record(1, total=2.0)], source="report.json", scope=scope)
    return write_bands(bands, tmp_path / "bands.toml", "scoped")


def test_the_scope_round_trips_and_names_every_difference(tmp_path):
    config = TrainConfig()
    loaded = load_bands(scoped_bands(tmp_path, config))
    assert loaded.scope == BandScope.of(config, "eurusd", "aa" * 32)
    # Seeds, lengths, devices and fold layout are outside the scope; learning values and data are not.
    same = config.replace(run={"seed": 7, "steps": 99_999, "device": "cuda"}, data={"folds": 6, "path": "elsewhere.csv"})
    assert loaded.scope.differences(BandScope.of(same, "eurusd", "aa" * 32)) == []
    other = config.replace(optim={"lr": 0.01}, replay={"feature_noise": 0.5})
    assert loaded.scope.differences(BandScope.of(other, "mine.csv", "bb" * 32)) == [
        "data (mine.csv vs eurusd the bands were measured on)", "optim.lr (0.01 vs 0.0003)",
        "replay.feature_noise (0.5 vs 1.0)",
    ]  # fmt: skip
    # How the backtests act shapes every epoch's validation metrics: inside the scope; the selection is not.
    acting = config.replace(run={"policy_mirror": False, "policy_weights": "target", "select": "last"})
    assert loaded.scope.differences(BandScope.of(acting, "eurusd", "aa" * 32)) == [
        "run.policy_mirror (False vs True)", "run.policy_weights ('target' vs 'online')",
    ]


def test_default_bands_watch_only_runs_of_their_scope_and_an_explicit_file_always(tmp_path, monkeypatch):
    config = TrainConfig()
    path = scoped_bands(tmp_path, config)
    monkeypatch.setattr(bands_module, "SHIPPED_BANDS_PATHS", (path,))
    foreign = BandScope.of(config.replace(optim={"lr": 0.01}), "mine.csv", "bb" * 32)
    skipped = choose_bands(config, foreign)
    assert skipped.bands is None and skipped.to_dict() == {"path": str(path), "applied": False, "differences": list(skipped.differences)}
    assert skipped.note.startswith(f"metric bands not applied: {path} describes another setting (data (mine.csv vs eurusd")
    assert "optim.lr (0.01 vs 0.0003)" in skipped.note and "--write-bands" in skipped.note
    chosen = choose_bands(config.replace(run={"bands": str(path)}), foreign)
    assert chosen.bands is not None and chosen.note.startswith(f"metric bands {path} applied although this run differs")
    home = choose_bands(config, BandScope.of(config, "eurusd", "aa" * 32))
    assert home.bands is not None and home.note is None


def test_a_file_without_scope_applies_to_every_run(tmp_path):
    bands = bands_from_records([record(0, total=1.0), record(1, total=2.0)], source="report.json")
    path = write_bands(bands, tmp_path / "bands.toml", "unscoped")
    choice = choose_bands(TrainConfig().replace(run={"bands": str(path)}), BandScope.of(TrainConfig(), "x", "cc"))
    assert choice.bands is not None and choice.differences == ()


def test_a_malformed_scope_is_reported(tmp_path):
    path = tmp_path / "bands.toml"
    path.write_text('schema = 2\nsource = "r"\n[scope]\ndata = 3\nextra = 1\n')
    with pytest.raises(BandsError) as error:
        load_bands(path)
    text = str(error.value)
    assert "unknown scope keys 'extra'" in text and "scope needs data and data_sha256 strings and a config table" in text


def test_a_resumed_watcher_continues_its_streaks():
    bands = MetricBands({"loss.total": Band("loss.total", 0.0, 2.0, 1.0, 0.3, 10)})
    watcher = band_watcher_with(bands, [record(0, total=9.0), record(1, total=9.0), record(2, total=9.0)])
    reason = watcher.observe(record(3, total=9.0))
    assert reason is not None and reason.epoch == 3


def band_watcher_with(bands: MetricBands, finished: list[dict]) -> BandWatcher:
    watcher = BandWatcher(bands, patience=2)
    for item in finished:
        watcher.observe(item)
    return watcher


TINY = {
    "data": {"validation_fraction": 0.05},
    "env": {"n_envs": 8, "episode_length": 48},
    "model": {"window": 4, "scan_channels": 8, "scan_state": 4, "hidden": 32, "head_hidden": 16, "n_atoms": 11, "iqn_embedding": 16},
    "loss": {"iqn_tau_samples": 4, "iqn_target_samples": 4},
    "replay": {"capacity": 256, "batch_size": 16, "learning_starts": 32},
    "run": {"steps": 12, "epoch_steps": 2, "device": "cpu", "band_epochs": 2},
}  # fmt: skip


@pytest.mark.slow
def test_a_stopped_run_stops_at_the_same_epoch_when_resumed(tmp_path, monkeypatch):
    """A band no epoch can meet: the run stops after epoch 3 of 6 (2N = 4), with a checkpoint; a run
    interrupted after epoch 1 and resumed stops at the same epoch with the same metrics.json."""
    import json

    from trainer.config import config_from_mapping
    from trainer.eval.health_diag import read_health_diag
    from trainer.train.checkpoint import latest_checkpoint
    from trainer.train.loop import train

    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "fxcache"))
    impossible = MetricBands({"loss.total": Band("loss.total", 1e6, 2e6, 1.5e6, 1e5, 10)})
    bands_path = write_bands(impossible, tmp_path / "bands.toml", "a band no epoch meets")
    config = config_from_mapping({**TINY, "run": {**TINY["run"], "bands": str(bands_path)}})
    whole = train(config, tmp_path / "whole", make_plots=False)
    assert whole["termination"]["metric"] == "loss.total" and whole["termination"]["epoch"] == 3
    assert [r.epoch for r in read_health_diag(tmp_path / "whole")] == [0, 1, 2, 3]
    assert read_health_diag(tmp_path / "whole")[-1].termination == whole["termination"]
    assert latest_checkpoint(tmp_path / "whole" / "checkpoints").exists()

    train(config, tmp_path / "resumed", stop_after_epochs=1, make_plots=False)
    resumed = train(config, tmp_path / "resumed", resume=True, make_plots=False)
    assert resumed == whole
    assert json.loads((tmp_path / "resumed" / "metrics.json").read_text()) == json.loads((tmp_path / "whole" / "metrics.json").read_text())
