"""The feature cache: hit, stale rebuild (source, version, layout), corrupt rebuild, atomicity."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from trainer.data import cache as cache_module
from trainer.data import compute_features, load_bars, prepare, probe_cache
from trainer.errors import UserError

ROWS = [f"2017-01-02 {h:02d}:00,1.0{h % 10},1.2,0.9,1.1{h % 7},10" for h in range(24)]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "bars.csv"
    path.write_text("time,open,high,low,close,volume\n" + "\n".join(ROWS) + "\n")
    return path


def test_build_then_hit_returns_identical_data(source: Path, tmp_path: Path) -> None:
    first = prepare(source, directory=tmp_path / "c")
    assert first.cache.state == "built" and first.cache.manifest.exists()
    second = prepare(source, directory=tmp_path / "c")
    assert second.cache.state == "hit"
    fresh = compute_features(load_bars(source))
    np.testing.assert_array_equal(second.features.values, fresh.values)
    np.testing.assert_array_equal(second.bars.close, first.bars.close)
    assert second.bars.columns == first.bars.columns and second.features.valid_from == fresh.valid_from
    assert not list((tmp_path / "c").glob("*.tmp"))  # atomic writes leave no temp files


def test_changed_source_is_stale_and_rebuilt(source: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    prepare(source, directory=tmp_path)
    source.write_text(source.read_text().replace("1.2,0.9,1.10", "1.2,0.9,1.15"))
    assert probe_cache(source, directory=tmp_path).state == "stale"
    with caplog.at_level(logging.WARNING, logger="trainer.data.cache"):
        rebuilt = prepare(source, directory=tmp_path)
    assert rebuilt.cache.state == "rebuilt" and "source file content changed" in rebuilt.cache.reason
    assert "is stale (source file content changed" in caplog.text
    assert rebuilt.bars.close[0] == pytest.approx(1.15)
    assert prepare(source, directory=tmp_path).cache.state == "hit"


def test_version_bump_is_stale(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(source, directory=tmp_path)
    monkeypatch.setattr(cache_module, "FXCACHE_VERSION", cache_module.FXCACHE_VERSION + 1)
    again = prepare(source, directory=tmp_path)
    old, new = cache_module.FXCACHE_VERSION - 1, cache_module.FXCACHE_VERSION
    assert again.cache.state == "rebuilt" and again.cache.reason.startswith(f"FXCACHE_VERSION changed ({old} vs {new})")


def test_layout_change_is_stale(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare(source, directory=tmp_path)
    monkeypatch.setattr(cache_module, "FEATURE_NAMES", ("only",))
    assert probe_cache(source, directory=tmp_path).reason == "feature layout changed"


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda m, n: n.write_bytes(n.read_bytes()[:-20]), "checksum mismatch"),
    (lambda m, n: n.unlink(), "feature file missing"),
    (lambda m, n: m.write_text("{not json"), "unreadable manifest"),
    (lambda m, n: m.write_text("[]"), "unreadable manifest"),
])  # fmt: skip
def test_corrupt_entries_are_rebuilt(source: Path, tmp_path: Path, damage, reason: str) -> None:
    built = prepare(source, directory=tmp_path)
    manifest = built.cache.manifest
    damage(manifest, manifest.with_suffix(".npz"))
    status = probe_cache(source, directory=tmp_path)
    assert status.state == "corrupt" and reason in status.reason
    rebuilt = prepare(source, directory=tmp_path)
    assert rebuilt.cache.state == "rebuilt"
    assert prepare(source, directory=tmp_path).cache.state == "hit"


def test_consistent_checksum_but_bad_arrays_is_corrupt(source: Path, tmp_path: Path) -> None:
    built = prepare(source, directory=tmp_path)
    manifest = json.loads(built.cache.manifest.read_text())
    manifest["n_bars"] = 5
    built.cache.manifest.write_text(json.dumps(manifest))
    assert probe_cache(source, directory=tmp_path).reason == "feature file has unexpected arrays or shapes"


def test_force_disabled_and_env_directory(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FXCACHE_DIR", str(tmp_path / "env"))
    assert prepare(source).cache.manifest.parent == tmp_path / "env"
    assert prepare(source, force=True).cache.state == "rebuilt"
    off = prepare(source, use_cache=False)
    assert off.cache.state == "disabled" and off.cache.manifest is None


def test_default_dataset_round_trips_through_the_cache(tmp_path: Path) -> None:
    built = prepare("default", directory=tmp_path)
    hit = prepare("default", directory=tmp_path)
    assert (built.cache.state, hit.cache.state) == ("built", "hit") and len(hit.bars) == 6225
    assert hit.bars.source.startswith("default") and hit.source_sha256 == built.source_sha256


def test_unwritable_cache_directory_is_a_user_error(source: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    with pytest.raises(UserError, match=r"cannot write the feature cache in .*not-a-dir .* — hint: pass another directory"):
        prepare(source, directory=blocker)


def test_two_sources_with_the_same_file_name_keep_their_own_entries(tmp_path: Path) -> None:
    # The slot name is "<stem>.csv-<digest>"; Path.with_suffix would cut ".csv-<digest>" off and
    # give every "bars.csv" one shared entry, each run then rebuilding the other's.
    first, second = tmp_path / "a" / "bars.csv", tmp_path / "b" / "bars.csv"
    text = "time,open,high,low,close,volume\n" + "\n".join(ROWS) + "\n"
    for path, content in ((first, text), (second, text.replace("1.2,0.9,1.10", "1.2,0.9,1.15"))):
        path.parent.mkdir()
        path.write_text(content)
    assert prepare(first, directory=tmp_path / "c").cache.state == "built"
    assert prepare(second, directory=tmp_path / "c").cache.state == "built"
    again = prepare(first, directory=tmp_path / "c")
    assert again.cache.state == "hit" and again.bars.close[0] == pytest.approx(1.10)
    assert len(list((tmp_path / "c").glob("*.json"))) == 2
