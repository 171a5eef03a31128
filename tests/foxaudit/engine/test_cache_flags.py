"""--no-cache and --cache-dir govern the one cache of both passes (per-file and whole-program).

Before the program summaries moved into the run's cache, `.foxaudit_cache/program/` was read and
written under the project root whatever the flags said, without a `.gitignore`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FILES = {
    "pkg/__init__.py": "from pkg import a\n",
    "pkg/a.py": "def f(x):\n    return x + 1\n",
    "tests/test_a.py": "from pkg.a import f\n\n\ndef test_f():\n    assert f(1) == 2\n",
}


def _tree(project, monkeypatch) -> Path:
    root = project(FILES)
    monkeypatch.delenv("FOXAUDIT_CACHE_DIR", raising=False)
    return root


def _everything(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*")}


def test_no_cache_writes_nothing_anywhere(project, monkeypatch, run_cli):
    root = _tree(project, monkeypatch)
    before = _everything(root)
    result = run_cli("check", "--no-cache")
    assert result.code in (0, 1), result.err
    assert _everything(root) == before


def test_cache_dir_holds_both_passes_and_nothing_lands_in_the_tree(project, monkeypatch, run_cli, tmp_path):
    root = _tree(project, monkeypatch)
    before = _everything(root)
    cache = tmp_path / "elsewhere"
    result = run_cli("check", "--cache-dir", str(cache))
    assert result.code in (0, 1), result.err
    assert _everything(root) == before
    assert list(cache.glob("v1/*/*.summary")), "whole-program summaries are not in --cache-dir"
    assert list(cache.glob("v1/*/*.json"))
    assert (cache / ".gitignore").read_text() == "# created by foxaudit\n*\n"


def test_default_cache_stays_out_of_git_status(project, monkeypatch, run_cli):
    root = _tree(project, monkeypatch)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    result = run_cli("check")
    assert result.code in (0, 1), result.err
    assert list((root / ".foxaudit_cache").glob("v1/*/*.summary"))
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True, text=True, check=True)
    assert ".foxaudit_cache" not in status.stdout
