"""Packed cache entries: a cold run's many entries in one file, read back as data, never trusted.

A cold run used to create one file per result and one per summary (≈ 2,900 on pandas); creating a
file cost 0.05–0.6 ms of system time. ``Store.batch`` writes them as one pack instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foxaudit.config import Settings
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import IN_PROCESS_LIMIT, check
from foxaudit.store import PACK_MAGIC, PACK_MIN, PACKS_READ, Store

# A hot-path marker and a step that reads a device value (as in test_incremental_program).
MARKERS = "def hot_path(function):\n    return function\n"
STEP = "import torch\n\nfrom pkg.markers import hot_path\n\n\ndef read(x):\n    return x.item()\n\n\ndef step(x):\n    return read(x)\n"


def _key(number: int) -> str:
    return f"{number:064x}"


def _fill(store: Store, count: int) -> None:
    with store.batch():
        for number in range(count):
            store.put(_key(number), {"d": [number]})
            store.put_bytes(_key(number), f"summary {number}\n".encode(), ".summary")


def _planted(index: object) -> bytes:
    head = json.dumps(index).encode()
    return PACK_MAGIC + str(len(head)).encode() + b"\n" + head + b"\n"


def _packs(directory: Path) -> list[Path]:
    return sorted((directory / "v1" / "packs").glob("*.pack"))


def test_a_big_batch_is_one_pack_read_back_by_a_fresh_store(tmp_path: Path) -> None:
    _fill(Store(tmp_path), PACK_MIN)
    (pack,) = _packs(tmp_path)
    assert not list(tmp_path.glob("v1/??/*")), "packed entries must not also be files of their own"
    assert not list(tmp_path.rglob("*.tmp")), "a temporary file was left behind"
    assert oct(pack.stat().st_mode & 0o777) == "0o644"  # readable by every user sharing the cache
    fresh = Store(tmp_path)
    for number in range(PACK_MIN):
        assert fresh.get(_key(number)) == {"d": [number], "k": _key(number)}
        assert fresh.get_bytes(_key(number), ".summary") == f"summary {number}\n".encode()
    assert fresh.get(_key(PACK_MIN)) is None
    assert (tmp_path / ".gitignore").exists() and (tmp_path / "CACHEDIR.TAG").exists()


def test_a_small_batch_is_written_as_files_and_is_readable_while_open(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.batch():
        store.put(_key(1), {"d": []})
        assert store.get(_key(1)) == {"d": [], "k": _key(1)}  # held, and already readable
        assert not list(tmp_path.rglob("*.json"))
    assert len(list(tmp_path.glob("v1/??/*.json"))) == 1 and not _packs(tmp_path)


def test_the_same_entries_make_the_same_pack(tmp_path: Path) -> None:
    """Two runs packing the same entries (in any order) replace one file, never add a second."""
    _fill(Store(tmp_path), PACK_MIN)
    store = Store(tmp_path)
    with store.batch():
        for number in reversed(range(PACK_MIN)):
            store.put_bytes(_key(number), f"summary {number}\n".encode(), ".summary")
            store.put(_key(number), {"d": [number]})
    assert len(_packs(tmp_path)) == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: b"not a pack at all",
        lambda data: data[: len(PACK_MAGIC) + 3],  # cut inside the index
        lambda data: data.replace(PACK_MAGIC, PACK_MAGIC + b"x", 1),
        lambda data: _planted([[_key(0), ".json", 0, 1]]) + b"{}",  # an index that is no object
        lambda data: PACK_MAGIC + b"abc\n",
        lambda data: PACK_MAGIC + b"99999999999999999999999\n",  # an index longer than the file
        lambda data: PACK_MAGIC + b"200002\n" + b"[" * 100_000 + b"]" * 100_000 + b"\n",  # nested past recursion
        lambda data: _planted({_key(0) + ".json": [10**30, 1]}) + b"{}",  # an offset no file reaches
        lambda data: _planted({_key(0) + ".json": [0, -1]}) + b"{}",  # a negative length
        lambda data: _planted({_key(0) + ".json": [0, True]}) + b"{}",  # a row of the wrong types
        lambda data: _planted({_key(0) + ".json": "0 2"}) + b"{}",  # a row of the wrong shape
    ],
)
def test_a_damaged_pack_is_a_miss_never_an_error(tmp_path: Path, damage) -> None:
    _fill(Store(tmp_path), PACK_MIN)
    (pack,) = _packs(tmp_path)
    pack.write_bytes(damage(pack.read_bytes()))
    store = Store(tmp_path)
    assert store.get(_key(0)) is None and store.get_bytes(_key(0), ".summary") is None


def test_an_entry_past_the_packs_end_or_under_another_key_is_a_miss(tmp_path: Path) -> None:
    """A planted pack is data: its index may point anywhere, its entries may claim any name; each
    entry is still checked against the key it is read for."""
    good = json.dumps({"d": [], "k": _key(2)}).encode()
    folder = tmp_path / "v1" / "packs"
    folder.mkdir(parents=True)
    index = {_key(1) + ".json": [0, len(good)], _key(3) + ".json": [0, 10_000]}
    (folder / "planted.pack").write_bytes(_planted(index) + good)
    store = Store(tmp_path)
    assert store.get(_key(1)) is None  # the bytes are key 2's entry
    assert store.get(_key(3)) is None  # past the end
    assert store.get_bytes(_key(1), ".json") == good  # raw bytes are the caller's to check


def test_only_the_newest_packs_are_read(tmp_path: Path) -> None:
    import os

    for pack_number in range(PACKS_READ + 1):
        store = Store(tmp_path)
        with store.batch():
            for number in range(PACK_MIN):
                store.put(_key(1000 * pack_number + number), {"d": []})
        (newest,) = [path for path in _packs(tmp_path) if path.stat().st_mtime_ns >= max(p.stat().st_mtime_ns for p in _packs(tmp_path))]
        os.utime(newest, ns=(pack_number * 10**9, pack_number * 10**9))
    store = Store(tmp_path)
    assert store.get(_key(0)) is None  # the oldest pack: not read
    assert store.get(_key(1000 * PACKS_READ)) is not None


def _run(root: Path, cache: Path | None, jobs: int = 2):
    resolved = resolve(Settings(root=root, select=("FX001",)))
    return check(resolved, cache_dir=cache, use_cache=cache is not None, jobs=jobs)


def test_a_cold_pool_run_writes_one_pack_and_its_entries_answer_a_new_file_set(project, tmp_path: Path) -> None:
    files = {f"pkg/m{n:03}.py": f"def f{n}(:\n" if n % 5 == 0 else f"x{n} = {n}\n" for n in range(IN_PROCESS_LIMIT + 16)}
    files["pkg/__init__.py"] = ""
    root = project(files)
    cache = tmp_path / "c"
    cold = _run(root, cache)
    assert cold.analysed == len(files)
    assert len(_packs(cache)) == 1
    assert not list(cache.glob("v1/??/*.summary")) and not list(cache.glob("v1/??/*.body"))
    warm = _run(root, cache)
    assert warm.analysed == 0 and warm.diagnostics == cold.diagnostics
    # A new file: a new snapshot, so every other file's own (packed) entry is looked up.
    (root / "pkg" / "extra.py").write_text("y = 1\n")
    grown = _run(root, cache)
    assert grown.analysed == 1 and grown.cache_hits == len(files)
    assert grown.diagnostics == _run(root, None).diagnostics


def test_no_cache_writes_no_pack(project, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("FOXAUDIT_CACHE_DIR", raising=False)
    files = {f"pkg/m{n:03}.py": f"x{n} = {n}\n" for n in range(IN_PROCESS_LIMIT + 16)}
    root = project(files)
    before = sorted(root.rglob("*"))
    _run(root, None)
    assert sorted(root.rglob("*")) == before


def test_packed_summaries_feed_the_program_after_an_edit(project, tmp_path: Path, monkeypatch) -> None:
    """After a packed cold run, an edit that changes one summary rebuilds the program from the
    packed summaries of the others: the findings are those of a run without a cache."""
    files = {f"pkg/m{n:03}.py": f"from pkg import m{(n + 1) % 30:03}\n\n\ndef f{n}(x):\n    return x + {n}\n" for n in range(30)}
    files.update({"pkg/__init__.py": "", "pkg/markers.py": MARKERS, "pkg/step.py": STEP})
    root = project(files)
    cache = tmp_path / "c"

    def findings(cache_dir: Path | None):
        resolved = resolve(Settings(root=root))
        result = check(resolved, cache_dir=cache_dir, use_cache=cache_dir is not None, jobs=2)
        return [(d.path, d.line, d.code, d.message) for d in result.diagnostics]

    before = findings(cache)
    assert before == findings(None)
    assert _packs(cache) and not list(cache.glob("v1/??/*.summary"))
    # A decorator that names a hot-path root: FX301 now flags the host read below it.
    (root / "pkg" / "step.py").write_text(STEP.replace("def step(x):", "@hot_path\ndef step(x):"))
    read = []
    original = Store.packed
    monkeypatch.setattr(Store, "packed", lambda self, key, suffix: read.append(suffix) or original(self, key, suffix))
    after = findings(cache)
    assert after == findings(None) and after != before
    assert read.count(".summary") >= len(files) - 1, "the other summaries were not read from the pack"


def test_entries_read_one_by_one_then_whole_read_the_same(tmp_path: Path) -> None:
    """A few entries are read each on its own, many from the pack's data read whole: the same bytes."""
    from foxaudit import store as store_module

    count = 2 * store_module._SINGLE_READS + 4
    _fill(Store(tmp_path), count)
    store = Store(tmp_path)
    for number in range(count):
        assert store.get_bytes(_key(number), ".summary") == f"summary {number}\n".encode()
    (pack,) = store._packed  # type: ignore[misc]
    assert pack._data is not None  # the later reads came from the data read whole
    pack._index["late"] = [len(pack._data) - 1, 2]
    assert pack.get("late") is None  # past the end: a miss, not a short entry


def test_a_store_reads_the_pack_it_wrote_after_reading_the_others(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert store.get(_key(0)) is None  # a miss: the packs (none yet) are read
    _fill(store, PACK_MIN)
    assert store.get(_key(0)) == {"d": [0], "k": _key(0)}


def test_chunks_are_written_atomically(tmp_path: Path) -> None:
    """A pack is written from its parts; a write that fails part-way leaves the old file as it was."""
    from foxaudit.files import write_chunks_atomic

    target = tmp_path / "entry"
    write_chunks_atomic(target, [b"a", b"bc", b""])
    assert target.read_bytes() == b"abc" and oct(target.stat().st_mode & 0o777) == "0o644"

    def failing():
        yield b"partial"
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_chunks_atomic(target, failing())
    assert target.read_bytes() == b"abc"
    assert [path.name for path in tmp_path.iterdir()] == ["entry"]  # no temporary file left
