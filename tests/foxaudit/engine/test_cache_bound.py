"""The cache stays bounded (issue 14): pruned at the end of a run that wrote to it, never outside
``v1/``, never at the cost of a finding; ``foxaudit clean`` deletes it by hand.

Before, nothing was ever deleted: every edit left entry files, every cold run a 17 MB pack (pandas).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from foxaudit import store as store_module
from foxaudit.store import (
    CACHE_VERSION,
    MAX_AGE_S,
    PACK_MIN,
    PACKS_READ,
    PRUNE_INTERVAL_S,
    PRUNE_STAMP,
    REFRESH_S,
    Store,
    clear,
    prune,
)

HOUR = 3600
DAY = 24 * HOUR


def _key(number: int) -> str:
    return f"{number:064x}"


def _age(path: Path, seconds: float) -> None:
    """Make ``path`` look last used ``seconds`` ago."""
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def _packs(directory: Path) -> list[Path]:
    return sorted((directory / CACHE_VERSION / "packs").glob("*.pack"))


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{CACHE_VERSION}/??/*.json"))


def _pack_of(directory: Path, first: int) -> Path:
    """Write one pack (PACK_MIN entries from key ``first``); its path."""
    before = set(_packs(directory))
    store = Store(directory)
    with store.batch():
        for number in range(first, first + PACK_MIN):
            store.put(_key(number), {"d": [number]})
    (made,) = set(_packs(directory)) - before
    return made


def _mtimes(directory: Path) -> dict[str, int]:
    return {str(path): path.stat().st_mtime_ns for path in directory.rglob("*")}


# ---- the policy, on a store alone ----


def test_packs_past_the_newest_read_are_pruned_after_many_cold_runs(tmp_path: Path) -> None:
    """Each cold run leaves a pack; only the PACKS_READ newest are ever read, so only they are kept:
    the run that writes the next pack prunes at once (no interval for packs)."""
    extra = 5
    made = []
    for run in range(PACKS_READ + extra):
        pack = _pack_of(tmp_path, 1000 * run)
        _age(pack, 2 * HOUR + (PACKS_READ + extra - run) * 60)  # older runs, older stamps
        made.append(pack)
    store = Store(tmp_path)
    with store.batch():
        for number in range(PACK_MIN):
            store.put(_key(10**6 + number), {"d": []})
    pruned = store.prune_if_due()
    assert pruned is not None and pruned.removed == extra + 1  # one more pack than read: the new one
    kept = _packs(tmp_path)
    assert len(kept) == PACKS_READ
    assert not set(made[: extra + 1]) & set(kept), "the oldest packs survived"
    assert set(made[extra + 1 :]) <= set(kept)


def test_entries_unused_past_the_age_limit_are_pruned(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put(_key(1), {"d": []})
    store.put(_key(2), {"d": []})
    old, recent = (Path(store.path(_key(number))) for number in (1, 2))
    _age(old, MAX_AGE_S + DAY)
    _age(recent, MAX_AGE_S - DAY)
    pruned = prune(tmp_path)
    assert pruned.removed == 1 and not old.exists() and recent.exists()
    assert Store(tmp_path).get(_key(1)) is None  # made again by the next run that needs it


def test_the_byte_budget_drops_the_least_recently_used_first(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for number in range(10):
        store.put(_key(number), {"d": ["x" * 1000]})
        _age(Path(store.path(_key(number))), (10 - number) * DAY)  # 0 the oldest
    # Entry 0 is read: reading stamps it used, so it is now the most recently used.
    assert Store(tmp_path).get(_key(0)) is not None
    size = Path(store.path(_key(0))).stat().st_size
    pruned = prune(tmp_path, max_bytes=5 * size)
    assert pruned.removed == 5 and pruned.kept == 5 and pruned.size <= 5 * size
    survivors = {path.name.removesuffix(".json") for path in _entries(tmp_path)}
    assert survivors == {_key(number) for number in (0, 6, 7, 8, 9)}


def test_the_budget_spares_what_was_used_within_the_hour(tmp_path: Path) -> None:
    """A pack bigger than the budget (a huge tree's) stays: deleting what this run or a concurrent
    one just used would make every run cold."""
    pack = _pack_of(tmp_path, 0)
    assert prune(tmp_path, max_bytes=1).removed == 0 and pack.exists()
    _age(pack, 2 * HOUR)
    assert prune(tmp_path, max_bytes=1).removed == 1 and not pack.exists()


def test_reading_stamps_an_entry_used_at_most_once_an_hour(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put(_key(1), {"d": []})
    store.put(_key(2), {"d": []})
    stale, fresh = (Path(store.path(_key(number))) for number in (1, 2))
    _age(stale, 2 * REFRESH_S)
    _age(fresh, REFRESH_S / 2)
    fresh_before = fresh.stat().st_mtime_ns
    reader = Store(tmp_path)
    assert reader.get(_key(1)) is not None and reader.get(_key(2)) is not None
    assert time.time() - stale.stat().st_mtime < 60, "a read did not stamp a stale entry used"
    assert fresh.stat().st_mtime_ns == fresh_before, "a read within the hour wrote a stamp"
    # A pack is stamped by a read of any entry in it.
    pack = _pack_of(tmp_path, 100)
    _age(pack, 2 * REFRESH_S)
    assert Store(tmp_path).get(_key(100)) is not None
    assert time.time() - pack.stat().st_mtime < 60


def test_stale_temporaries_of_killed_runs_are_pruned_live_ones_kept(tmp_path: Path) -> None:
    Store(tmp_path).put(_key(1), {"d": []})
    folder = Path(Store(tmp_path).path(_key(1))).parent
    left, live = folder / ".foxaudit-left.tmp", folder / ".foxaudit-live.tmp"
    left.write_bytes(b"half")
    live.write_bytes(b"being written")
    _age(left, 2 * HOUR)
    prune(tmp_path)
    assert not left.exists() and live.exists()


def test_nothing_outside_v1_nor_of_another_shape_is_deleted(tmp_path: Path) -> None:
    """Only plain files under ``v1/`` with the names the store writes are deleted, even with every
    limit at zero; a symbolic link planted as a folder is not followed."""
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    linked = "cd" + "1" * 62  # an entry name whose folder, cd, is the planted link
    store = Store(cache)
    store.put(_key(1), {"d": []})
    _pack_of(cache, 100)
    outside.mkdir()
    planted = {
        cache / "notes.txt": b"mine",
        cache / CACHE_VERSION / "README": b"mine",
        cache / CACHE_VERSION / "ab" / "readme.txt": b"mine",
        cache / CACHE_VERSION / "packs" / "planted.pack": b"mine",
        cache / CACHE_VERSION / "xyz" / (_key(7) + ".json"): b"{}",  # a folder the store never makes
        outside / (linked + ".json"): b"{}",
        tmp_path / (_key(4) + ".json"): b"{}",
    }
    for path, data in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    # A folder name the store uses, linked to a directory outside the cache.
    os.symlink(outside, cache / CACHE_VERSION / linked[:2])
    for path in [*planted, *cache.rglob("*")]:
        if path.is_file() and not path.is_symlink():
            _age(path, 400 * DAY)
    pruned = prune(cache, now=time.time() + 400 * DAY, max_bytes=0, max_age_s=0)
    assert pruned.removed == 2  # the entry and the pack
    assert all(path.exists() for path in planted), [str(path) for path in planted if not path.exists()]
    assert (cache / ".gitignore").exists() and (cache / "CACHEDIR.TAG").exists()
    # clear (`foxaudit clean`) leaves them too, and says so.
    cleared = clear(cache)
    assert all(path.exists() for path in planted)
    assert str(cache / "notes.txt") in cleared.kept and str(cache / CACHE_VERSION / "ab" / "readme.txt") in cleared.kept


def test_a_reader_of_a_pruned_pack_or_entry_sees_a_miss(tmp_path: Path) -> None:
    """Another run prunes while this one reads: a deleted pack or entry is a miss, not an error."""
    pack = _pack_of(tmp_path, 0)
    Store(tmp_path).put(_key(500), {"d": []})
    reader = Store(tmp_path)
    assert reader.get(_key(0)) == {"d": [0], "k": _key(0)}  # the pack's index is read
    assert prune(tmp_path, now=time.time() + 2 * MAX_AGE_S).removed == 2
    assert not pack.exists()
    assert reader.get(_key(1)) is None  # its index still names the entry: the bytes are gone
    assert reader.get_bytes(_key(2), ".json") is None
    assert reader.get(_key(500)) is None


def test_an_entry_used_between_listing_and_deleting_is_kept(tmp_path: Path) -> None:
    """A prune lists, then deletes: an entry a concurrent run reads (and so stamps) in between stays."""
    store = Store(tmp_path)
    store.put(_key(1), {"d": []})
    entry = Path(store.path(_key(1)))
    _age(entry, MAX_AGE_S + DAY)
    (listed,) = store_module._list(str(tmp_path / CACHE_VERSION)).entries
    assert Store(tmp_path).get(_key(1)) is not None  # the concurrent run's read
    assert not store_module._remove(listed, store_module.Pruned()) and entry.exists()


def test_a_run_that_wrote_nothing_does_not_prune_and_one_that_did_is_rate_limited(tmp_path: Path) -> None:
    expired = Path(Store(tmp_path).path(_key(9)))

    def plant() -> None:
        expired.parent.mkdir(parents=True, exist_ok=True)
        expired.write_bytes(b"{}")
        _age(expired, MAX_AGE_S + DAY)

    plant()
    reader = Store(tmp_path)
    assert reader.get(_key(1)) is None
    assert reader.prune_if_due() is None and expired.exists()
    writer = Store(tmp_path)
    writer.put(_key(1), {"d": []})
    assert writer.prune_if_due() is not None and not expired.exists()
    stamp = tmp_path / CACHE_VERSION / PRUNE_STAMP
    assert time.time() - stamp.stat().st_mtime < 60
    plant()
    writer = Store(tmp_path)
    writer.put(_key(2), {"d": []})
    assert writer.prune_if_due() is None and expired.exists()  # pruned less than an hour ago
    _age(stamp, PRUNE_INTERVAL_S + 60)
    assert writer.prune_if_due() is not None and not expired.exists()
    # A stamp from the future (a clock set back) does not postpone pruning for ever.
    plant()
    _age(stamp, -DAY)
    assert writer.prune_if_due() is not None and not expired.exists()


def test_clear_deletes_everything_foxaudit_wrote_and_the_directory(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store = Store(cache)
    store.put(_key(1), {"d": []})
    _pack_of(cache, 100)
    store.prune_if_due()
    cleared = clear(cache)
    assert cleared.existed and cleared.removed == 2 and not cleared.kept
    assert not cache.exists()
    again = clear(cache)
    assert not again.existed and again.removed == 0 and not again.kept


# ---- through real runs ----

FILES = {f"pkg/m{n:03}.py": (f"def f{n}(:\n" if n % 7 == 0 else f"x{n} = {n}  # TODO: later\n") for n in range(40)}
FILES["pkg/__init__.py"] = ""


def test_a_runs_output_is_byte_identical_with_pruning(project, run_cli, tmp_path: Path) -> None:
    """Cold run, partial prune, warm run, edit, prune everything, run: each output is the one
    `--no-cache` prints."""
    root = project(FILES)
    cache = tmp_path / "cache"

    def same_as_uncached() -> str:
        cached, uncached = run_cli("check", "-j", "2"), run_cli("check", "--no-cache", "-j", "2")
        assert cached.code == uncached.code == 1, cached.err
        assert cached.out == uncached.out
        return cached.out

    first = same_as_uncached()
    assert _packs(cache)
    # Half the bytes, oldest first (everything looks two hours old: none is spared as in use).
    size = sum(path.stat().st_size for path in cache.rglob("*") if path.is_file())
    assert prune(cache, now=time.time() + 2 * HOUR, max_bytes=size // 2).removed > 0
    assert same_as_uncached() == first
    (root / "pkg" / "m001.py").write_text("x1 = 2  # FIXME: now\n")
    _age(cache / CACHE_VERSION / PRUNE_STAMP, 2 * PRUNE_INTERVAL_S)
    same_as_uncached()
    prune(cache, now=time.time() + 2 * MAX_AGE_S, max_bytes=0, max_age_s=0)
    same_as_uncached()


def test_a_warm_run_neither_prunes_nor_touches_the_cache(project, run_cli, tmp_path: Path) -> None:
    root = project(FILES)
    cache = tmp_path / "cache"
    assert run_cli("check").code == 1
    stamp = cache / CACHE_VERSION / PRUNE_STAMP
    assert stamp.exists(), "a cold run (a pack written) did not prune"
    _age(stamp, 2 * PRUNE_INTERVAL_S)  # a prune would be due, were it to look
    expired = cache / CACHE_VERSION / "ee" / (_key(0xEE << 248) + ".json")
    expired.parent.mkdir(exist_ok=True)
    expired.write_bytes(b"{}")
    _age(expired, MAX_AGE_S + DAY)
    before = _mtimes(cache)
    assert run_cli("check").code == 1
    assert _mtimes(cache) == before, "a warm run wrote to the cache"
    # An edit writes entries: now the prune runs (the stamp is old) and the expired entry goes.
    (root / "pkg" / "m002.py").write_text("x2 = 3\n")
    assert run_cli("check").code == 1
    assert not expired.exists() and time.time() - stamp.stat().st_mtime < 60


def test_every_file_a_run_writes_is_one_prune_and_clean_know(project, run_cli, tmp_path: Path) -> None:
    """A new kind of entry with a name of another shape would never be pruned (nor cleaned): this
    fails first."""
    root = project(FILES)
    cache = tmp_path / "cache"
    assert run_cli("check", "-j", "2").code == 1
    (root / "pkg" / "m003.py").write_text("x3 = 4\n")
    (root / "pkg" / "new.py").write_text("y = 1\n")
    assert run_cli("check").code == 1
    listing = store_module._list(str(cache / CACHE_VERSION))
    assert not listing.foreign, listing.foreign
    assert listing.entries and listing.packs
    result = run_cli("clean")
    assert result.code == 0 and not cache.exists(), result.err


# ---- foxaudit clean ----


def test_clean_deletes_the_cache_check_uses_and_says_so(project, run_cli, tmp_path: Path, monkeypatch) -> None:
    root = project(FILES)
    monkeypatch.delenv("FOXAUDIT_CACHE_DIR")
    assert run_cli("check").code == 1
    default = root / ".foxaudit_cache"
    assert default.is_dir()
    result = run_cli("clean")
    assert result.code == 0 and not default.exists()
    assert result.err.startswith("foxaudit: deleted ") and "cache files (" in result.err and str(default) in result.err
    again = run_cli("clean")
    assert again.code == 0 and again.err == f"foxaudit: no cache at {default}: nothing to delete\n"
    # --cache-dir, and $FOXAUDIT_CACHE_DIR, name the same directory `check` uses.
    elsewhere = tmp_path / "elsewhere"
    assert run_cli("check", "--cache-dir", str(elsewhere)).code == 1
    monkeypatch.setenv("FOXAUDIT_CACHE_DIR", str(elsewhere))
    assert run_cli("clean").code == 0 and not elsewhere.exists()


def test_clean_works_with_a_broken_configuration(project, run_cli, tmp_path: Path) -> None:
    project(FILES, config="[tool.foxaudit]\nselect = 3\n")
    cache = tmp_path / "cache"
    Store(cache).put(_key(1), {"d": []})
    assert run_cli("check").code == 2
    result = run_cli("clean")
    assert result.code == 0 and not cache.exists(), result.err


def test_clean_keeps_files_it_did_not_write_and_names_one(project, run_cli, tmp_path: Path) -> None:
    project(FILES)
    cache = tmp_path / "cache"
    assert run_cli("check").code == 1
    mine = cache / "notes.txt"
    mine.write_text("mine\n")
    result = run_cli("clean")
    assert result.code == 0
    assert mine.exists() and not (cache / CACHE_VERSION).exists()
    assert f"kept 1 file foxaudit did not write, e.g. {mine} — hint:" in result.err


def test_clean_of_a_path_that_is_no_directory_is_a_clear_error(project, run_cli, tmp_path: Path) -> None:
    project(FILES)
    target = tmp_path / "a-file"
    target.write_text("not a cache\n")
    result = run_cli("clean", "--cache-dir", str(target))
    assert result.code == 2 and target.exists()
    assert result.err.startswith(f"foxaudit: cannot clear the cache ({target}: not a directory vs a path foxaudit may delete)")
    assert "— hint: " in result.err and "Traceback" not in result.err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may delete any file")
def test_clean_of_an_unwritable_cache_is_a_clear_error(project, run_cli, tmp_path: Path) -> None:
    project(FILES)
    cache = tmp_path / "cache"
    store = Store(cache)
    store.put(_key(1), {"d": []})
    folder = Path(store.path(_key(1))).parent
    folder.chmod(0o555)
    try:
        result = run_cli("clean")
    finally:
        folder.chmod(0o755)
    assert result.code == 2 and "Traceback" not in result.err
    assert f"cannot clear the cache ({folder / (_key(1) + '.json')}: Permission denied" in result.err
    assert f"— hint: check the permissions of {folder}, or delete {cache} by hand" in result.err
