"""Adopting foxaudit on a repository with findings: baselines, plain git hooks, publishable SARIF."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from foxaudit import hooks

OLD = "def load(path):\n    # TODO: cache the result\n    return open(path).read()\n"


def test_baseline_hides_old_findings_and_survives_lines_moving(project, run_cli) -> None:
    root = project({"pkg/io.py": OLD})
    written = run_cli("baseline", "--no-project")
    assert written.code == 0 and "wrote 1 finding" in written.err
    document = json.loads((root / ".foxaudit-baseline.json").read_text())
    assert document["foxaudit-baseline"] == 1 and document["findings"][0]["code"] == "FX901"
    # Lines above move, the old marker stays: still hidden. A new marker is reported.
    (root / "pkg/io.py").write_text("import os\n\n\n" + OLD + "def save(p):\n    # FIXME: fsync\n    return p\n")
    result = run_cli("check", "--no-project", "--baseline", ".foxaudit-baseline.json")
    assert result.code == 1
    assert "FIXME" in result.out and "TODO" not in result.out
    assert "1 finding of the baseline .foxaudit-baseline.json not shown" in result.err


def test_baseline_counts_identical_findings(project, run_cli) -> None:
    root = project({"a.py": "# TODO: x\n"})
    assert run_cli("baseline", "--no-project", "-o", "base.json").code == 0
    (root / "a.py").write_text("# TODO: x\n# TODO: x\n")
    result = run_cli("check", "--no-project", "--baseline", "base.json")
    assert result.code == 1 and result.out.count("FX901") == 1


def test_a_clean_run_with_a_baseline_exits_zero(project, run_cli) -> None:
    project({"a.py": "# TODO: x\n"})
    assert run_cli("baseline", "--no-project").code == 0
    assert run_cli("check", "--no-project", "--baseline", ".foxaudit-baseline.json").code == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "baseline file not found (got 'missing.json' vs an existing file) — hint: create it with `foxaudit baseline`"),
        ("{not json", "unreadable baseline file 'missing.json'"),
        ('{"foxaudit-baseline": 7, "findings": []}', "not a foxaudit baseline 'missing.json' (got format 7 vs 1)"),
        ('{"foxaudit-baseline": 1, "findings": [{"code": "FX901"}]}', "baseline entry without a fingerprint"),
    ],
)
def test_baseline_errors_are_one_line(project, run_cli, content: str | None, message: str) -> None:
    root = project({"a.py": "x = 1\n"})
    if content is not None:
        (root / "missing.json").write_text(content)
    result = run_cli("check", "--baseline", "missing.json")
    assert result.code == 2
    assert message in result.err and "Traceback" not in result.err


def test_unwritable_outputs_are_usage_errors(project, run_cli) -> None:
    project({"a.py": "# TODO: x\n"})
    result = run_cli("baseline", "--no-project", "-o", "no/such/dir/base.json")
    assert result.code == 2 and "cannot write the baseline" in result.err
    result = run_cli("check", "--no-project", "-o", "no/such/dir/report.txt")
    assert result.code == 2 and "cannot write the report" in result.err


def test_the_readable_hook_copies_are_current() -> None:
    root = Path(__file__).resolve().parents[3]
    for name, text in hooks.HOOKS.items():
        copy = root / "hooks" / name
        assert copy.read_text(encoding="utf-8") == text, f"hooks/{name} is stale — hint: run `python -m foxaudit.hooks --write`"
        assert os.access(copy, os.X_OK)


GIT = shutil.which("git")


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=environment, check=False)


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_installed_pre_commit_hook_blocks_a_new_finding_and_honours_the_baseline(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    assert _git(root, "init", "-q").returncode == 0
    (root / "pyproject.toml").write_text("[tool.foxaudit]\n")
    written = hooks.install_hooks(root)
    assert sorted(path.name for path in written) == ["pre-commit", "pre-push"]
    assert all(os.access(path, os.X_OK) for path in written)
    (root / "old.py").write_text(OLD)
    # The hook runs foxaudit from this checkout (FOXAUDIT), as a user's PATH would.
    repository = Path(__file__).resolve().parents[3]
    os.environ["FOXAUDIT"] = f"env PYTHONPATH={repository} python3 -m foxaudit"
    try:
        _git(root, "add", "pyproject.toml", "old.py")
        blocked = _git(root, "commit", "-q", "-m", "old code")
        assert blocked.returncode != 0 and "FX901" in blocked.stdout + blocked.stderr
        env = {**os.environ, "PYTHONPATH": str(repository)}
        subprocess.run(["python3", "-m", "foxaudit", "baseline", "--no-project", "--no-cache"], cwd=root, env=env,
                       check=True, capture_output=True)
        _git(root, "add", ".foxaudit-baseline.json")
        assert _git(root, "commit", "-q", "-m", "old code, baselined").returncode == 0
        (root / "new.py").write_text("def f(x):\n    pass\n")
        _git(root, "add", "new.py")
        blocked = _git(root, "commit", "-q", "-m", "a stub")
        assert blocked.returncode != 0 and "FX902" in blocked.stdout + blocked.stderr
    finally:
        del os.environ["FOXAUDIT"]


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_install_hooks_keeps_a_foreign_hook_unless_forced(tmp_path: Path, monkeypatch, run_cli) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\necho mine\n")
    monkeypatch.chdir(root)
    refused = run_cli("install-hooks")
    assert refused.code == 2 and "a hook is already installed (got pre-commit in" in refused.err and "--force" in refused.err
    assert run_cli("install-hooks", "--force").code == 0
    assert (root / ".git" / "hooks" / "pre-commit.foxaudit-backup").read_text() == "#!/bin/sh\necho mine\n"
    assert run_cli("install-hooks").code == 0  # re-installing over its own hooks needs no --force


def test_install_hooks_outside_a_repository(tmp_path: Path, monkeypatch, run_cli) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    result = run_cli("install-hooks")
    assert result.code == 2 and "not a git repository" in result.err
