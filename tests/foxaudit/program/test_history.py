"""`foxaudit history BASE..HEAD`: component-adding commits without docs/audits/ changes, from git only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from foxaudit.cli import main
from foxaudit.program.history import HistoryError, check_history
from foxaudit.program.settings import ProgramSettings

GIT = ["git", "-c", "user.name=Fox", "-c", "user.email=fox@example.com", "-c", "commit.gpgsign=false"]


def git(root: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def settings_for(root: Path) -> ProgramSettings:
    import tomllib

    table = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["foxaudit"]["program"]
    return ProgramSettings.from_table(table)


@pytest.fixture
def repo(materialize) -> Path:
    root = materialize("wiring")
    git(root, "init", "-q", "-b", "main")
    (root / "docs/audits").mkdir(parents=True)
    (root / "docs/audits/wire-up.md").write_text("initial\n")
    commit(root, "initial")
    return root


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_reports_each_component_adding_commit_without_audit_docs(repo) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app/new_module.py").write_text("VALUE = 1\n")
    commit(repo, "add a module")
    _append(repo / "cuda/kernels.cu", '\nextern "C" __global__ void documented_kernel(float* x) { x[0] = 5.0f; }\n')
    (repo / "docs/audits/wire-up.md").write_text("documented_kernel\n")
    commit(repo, "add a kernel with its audit")
    _append(repo / "cuda/kernels.cu", '\nextern "C" __global__ void silent_kernel(float* x) { x[0] = 6.0f; }\n')
    commit(repo, "add a kernel silently")
    _append(repo / "app/registry.py", 'MORE = [StateEntry("st.more", "FoldReset")]\n')
    commit(repo, "add a registry entry")
    state = repo / "app/state.py"
    state.write_text(state.read_text().replace(
        "        self.scratch", "        self.extra = torch.ones(2, device=device)\n        self.scratch"))
    commit(repo, "add a device buffer")
    (repo / "README.md").write_text("docs only\n")
    commit(repo, "unrelated change")
    reports = check_history(repo, f"{base}..HEAD", settings_for(repo))
    assert [r.subject for r in reports] == [
        "add a module", "add a kernel with its audit", "add a kernel silently", "add a registry entry",
        "add a device buffer", "unrelated change",
    ]  # fmt: skip
    offending = {r.subject: r.added for r in reports if r.offending}
    assert offending == {
        "add a module": ["module `app/new_module.py`"],
        "add a kernel silently": ["kernel `silent_kernel` (cuda/kernels.cu)"],
        "add a registry entry": ["registry entry `st.more` (app/registry.py)"],
        "add a device buffer": ["device buffer `app.state:State.extra` (app/state.py)"],
    }


def test_isv_slot_addition(materialize) -> None:
    root = materialize("layout")
    git(root, "init", "-q", "-b", "main")
    base = commit(root, "initial")
    module = root / "lay/layout.py"
    module.write_text(module.read_text().replace('Slot("EPOCH", writer=_C),', 'Slot("EPOCH", writer=_C),\n        Slot("NEW", writer=_C),'))
    commit(root, "add a slot")
    reports = check_history(root, f"{base}..HEAD", settings_for(root))
    assert reports[0].added == ["ISV slot `ISV_NEW`"] and reports[0].offending


def test_works_on_a_fresh_clone_and_from_the_cli(repo, tmp_path, monkeypatch, capsys) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app/late.py").write_text("LATE = 1\n")
    commit(repo, "late module")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    monkeypatch.chdir(clone)
    assert main(["history", f"{base}..HEAD"]) == 1
    out = capsys.readouterr()
    assert "late module" in out.out and "module `app/late.py`" in out.out and "foxaudit audit --write" in out.out
    assert main(["history", "HEAD..HEAD"]) == 0


def test_pre_push_refs_from_the_environment(repo, monkeypatch, capsys) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app/pushed.py").write_text("PUSHED = 1\n")
    head = commit(repo, "pushed module")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", base)
    monkeypatch.setenv("PRE_COMMIT_TO_REF", head)
    assert main(["history"]) == 1
    assert "pushed module" in capsys.readouterr().out


def test_new_branch_push_checks_the_commits_no_remote_has(repo, monkeypatch, capsys) -> None:
    (repo / "app/fresh.py").write_text("FRESH = 1\n")
    head = commit(repo, "fresh module")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "0" * 40)
    monkeypatch.setenv("PRE_COMMIT_TO_REF", head)
    assert main(["history"]) == 1
    captured = capsys.readouterr()
    assert "fresh module" in captured.out
    assert "2 commits checked" in captured.err  # no remote: the whole branch, the initial commit included


def test_bad_range_is_a_usage_error(repo, monkeypatch, capsys) -> None:
    with pytest.raises(HistoryError, match="BASE..HEAD"):
        check_history(repo, "HEAD", settings_for(repo))
    monkeypatch.chdir(repo)
    assert main(["history", "nosuchref..HEAD"]) == 2
    err = capsys.readouterr().err
    assert "failed" in err and "hint:" in err and "Traceback" not in err


def test_no_range_and_no_upstream_is_a_usage_error(repo, monkeypatch, capsys) -> None:
    monkeypatch.chdir(repo)
    monkeypatch.delenv("PRE_COMMIT_FROM_REF", raising=False)
    monkeypatch.delenv("PRE_COMMIT_TO_REF", raising=False)
    assert main(["history"]) == 2
    err = capsys.readouterr().err
    assert "no revision range (none given vs BASE..HEAD) — hint:" in err
