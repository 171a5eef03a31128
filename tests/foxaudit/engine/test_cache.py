"""Cache: content-keyed (hits in a copy elsewhere), keeps diagnostics, shared safely, invalidated."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from foxaudit.config import Settings
from foxaudit.engine.cache import Cache
from foxaudit.engine.resolve import resolve, resolve_cached
from foxaudit.engine.run import check

FILES = {
    "a.py": "x = 42\n",
    "b.py": "def f(:\n",
    "c.py": "y = 1\n",
    "k.cu": "__global__ void k(int* o) { o[0] = 42; }\n",
}
REPO = Path(__file__).resolve().parents[3]


def _run(root: Path, cache: Path, **settings):
    resolved = resolve(Settings(root=root, select=("FX001", "FX099"), **settings))
    return check(resolved, cache_dir=cache)


def test_warm_run_returns_identical_diagnostics_without_analysing(project, tmp_path, magic_rule):
    root = project(FILES)
    cache = tmp_path / "c"
    cold = _run(root, cache)
    assert cold.analysed == 4 and cold.cache_hits == 0
    warm = _run(root, cache)
    assert warm.analysed == 0 and warm.cache_hits == 4
    assert [(d, d.message, d.hint, d.edits, d.end_line, d.end_column) for d in warm.diagnostics] == [
        (d, d.message, d.hint, d.edits, d.end_line, d.end_column) for d in cold.diagnostics
    ]
    assert {d.code for d in warm.diagnostics} == {"FX001", "FX099"}


def test_copy_of_project_in_another_directory_hits(project, tmp_path, magic_rule):
    root = project(FILES)
    cache = tmp_path / "c"
    first = _run(root, cache)
    copy = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(root, copy)
    os.utime(copy / "a.py", (1, 1))  # mtimes play no part
    second = _run(copy, cache)
    assert second.cache_hits == 4 and second.analysed == 0
    assert second.diagnostics == first.diagnostics


def test_changed_file_and_changed_config_miss(project, tmp_path, magic_rule):
    root = project(FILES)
    cache = tmp_path / "c"
    _run(root, cache)
    (root / "c.py").write_text("y = 42\n")
    changed = _run(root, cache)
    assert changed.analysed == 1 and changed.cache_hits == 3
    assert any(d.path == "c.py" for d in changed.diagnostics)
    reconfigured = _run(root, cache, rules={"FX099": {"replacement": "ANSWER"}})
    assert reconfigured.analysed == 4
    assert all("ANSWER" in d.hint for d in reconfigured.diagnostics if d.code == "FX099")


def test_per_file_ignores_are_part_of_the_key(project, tmp_path, magic_rule):
    root = project(FILES)
    cache = tmp_path / "c"
    _run(root, cache)
    ignored = _run(root, cache, per_file_ignores=(("a.py", ("FX099",)),))
    assert ignored.analysed == 1
    assert not any(d.path == "a.py" for d in ignored.diagnostics)


def test_corrupt_entry_is_a_miss(tmp_path):
    cache = Cache(tmp_path)
    cache.put("ab" + "0" * 62, {"d": []})
    path = tmp_path / "v1" / "ab" / ("ab" + "0" * 62 + ".json")
    assert json.loads(path.read_text())["d"] == []
    path.write_text("{not json")
    assert cache.get("ab" + "0" * 62) is None
    assert (tmp_path / ".gitignore").read_text().strip().endswith("*")


def test_resolution_cached_without_importing_rules(project, tmp_path, magic_rule):
    root = project(FILES)
    store = Cache(tmp_path / "c")
    settings = Settings(root=root, select=("FX001", "FX099"))
    first = resolve_cached(settings, store)
    second = resolve_cached(settings, store)
    assert second._options is None  # rebuilt from the cache, options not loaded
    assert second.fingerprint == first.fingerprint and second.enabled == first.enabled
    assert second.options["FX099"].replacement == "MAGIC"  # loads lazily when needed


def test_two_concurrent_runs_share_one_cache(project, tmp_path):
    files = {f"m{index:03}.py": f"def f{index}(:\n" if index % 7 == 0 else f"x{index} = {index}\n" for index in range(120)}
    root = project(files, '[tool.foxaudit]\nselect = ["FX001"]\n')
    cache = tmp_path / "shared"
    env = {**os.environ, "PYTHONPATH": str(REPO), "FOXAUDIT_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "foxaudit", "check", "--format", "json", "--jobs", "2"]
    runs = [subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [run.communicate(timeout=120) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 1, err.decode()
    first, second = (json.loads(out) for out, _ in outputs)
    assert first == second and len(first) == 18
    assert not list(cache.rglob(".tmp-*"))
    warm = subprocess.run(command, cwd=root, env=env, capture_output=True, check=False)
    assert json.loads(warm.stdout) == first


def test_a_warm_run_reads_no_file_whose_stamp_the_snapshot_recorded(project, tmp_path, magic_rule, project_rule, monkeypatch):
    """Files unchanged since the snapshot hashed them (same size, mtime, ctime and inode) are not
    read again; any write moves ctime, so an edit of the same size is still seen."""
    import builtins

    import foxaudit.engine.run as run

    # The files were written just now: let the test trust stamps that young (the real rule
    # waits RACY_NS, so a file written twice within one timestamp tick is never trusted).
    monkeypatch.setattr(run, "RACY_NS", -10**15)
    root = project(FILES)
    cache = tmp_path / "c"

    def _run(root, cache, paths=None):  # with a whole-project rule: FILES runs key the whole tree
        return check(resolve(Settings(root=root, select=("FX001", "FX099", "FX098"))), paths, cache_dir=cache)

    cold = _run(root, cache)
    opened: list[str] = []

    def counting_open(file, *args, **kwargs):
        opened.append(str(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(run, "open", counting_open, raising=False)
    warm = _run(root, cache)
    assert warm.diagnostics == cold.diagnostics and warm.analysed == 0
    assert not [path for path in opened if path.startswith(str(root))]
    # `check FILES` keys the rest of the project from the whole tree's snapshot too.
    assert _run(root, cache, [str(root / "c.py")]).analysed == 0
    assert [path for path in opened if path.startswith(str(root))] == [str(root / "c.py")]
    opened.clear()
    (root / "a.py").write_text("x = 43\n")  # same size, new content
    edited = _run(root, cache)
    assert [path for path in opened if path.startswith(str(root))] == [str(root / "a.py")] * 2  # hashed, analysed
    assert any(d.path == "a.py" for d in cold.diagnostics)  # the magic 42
    assert edited.analysed == 1 and not any(d.path == "a.py" for d in edited.diagnostics)
    # A digest in the snapshot that is no digest is ignored: the file is read and hashed.
    (snapshot,) = [entry for entry in cache.rglob("snapshot-*.json") if len(json.loads(entry.read_text())["files"]) == len(FILES)]
    payload = json.loads(snapshot.read_text())
    payload["stats"]["c.py"][4] = "not hex"
    snapshot.write_text(json.dumps(payload))
    assert _run(root, cache).diagnostics == edited.diagnostics


def test_a_malformed_snapshot_entry_is_a_miss(project, tmp_path, magic_rule):
    """A snapshot is data anyone with write access to the cache may have written: an entry of
    the wrong shape is ignored (the files are looked up or analysed), never trusted."""
    root = project(FILES)
    cache = tmp_path / "c"
    cold = _run(root, cache)
    (snapshot,) = cache.rglob("snapshot-*.json")
    payload = json.loads(snapshot.read_text())
    payload["state"] = "stale"
    payload["files"] = {path: "not an entry" for path in payload["files"]}
    snapshot.write_text(json.dumps(payload))
    for entry in cache.rglob("*.json"):
        if not entry.name.startswith(("snapshot-", "resolve-")):
            entry.unlink()
    again = _run(root, cache)
    assert again.analysed == len(FILES) and again.diagnostics == cold.diagnostics


def test_unchanged_tree_is_answered_by_one_snapshot_entry(project, tmp_path, magic_rule):
    root = project(FILES)
    cache = tmp_path / "c"
    cold = _run(root, cache)
    snapshots = list(cache.rglob("snapshot-*.json"))
    assert len(snapshots) == 1
    for entry in cache.rglob("*.json"):
        if not entry.name.startswith(("snapshot-", "resolve-")):
            entry.unlink()  # only the snapshot is left to answer
    warm = _run(root, cache)
    assert warm.analysed == 0 and warm.diagnostics == cold.diagnostics
    (root / "c.py").write_text("y = 42\n")
    changed = _run(root, cache)
    # The snapshot no longer matches the tree, but it still answers for the three files whose
    # keys it recorded (their own entries were removed): one edit, one file analysed.
    assert changed.analysed == 1
    assert changed.diagnostics == _run(root, tmp_path / "fresh").diagnostics
    assert len(list(cache.rglob("snapshot-*.json"))) == 1  # overwritten, not accumulated
