"""Whole-project rules: run after the per-file pass, cached, suppressible, scoped to given paths."""

from __future__ import annotations

from foxaudit.config import Settings
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import check

FILES = {
    "a.py": "answer = 1\n",
    "b.py": "# foxaudit: ignore[FX098] -- the fixture needs the word\nanswer = 2\n",
    "c.py": "x = 1  # foxaudit: ignore[FX098] -- stale\n",
    "k.cu": "int answer = 1;\n",
}


def _resolved(root, **settings):
    return resolve(Settings(root=root, select=("FX001", "FX003", "FX098"), **settings))


def test_project_rule_sees_every_file_and_is_cached(project, tmp_path, project_rule):
    root = project(FILES)
    cache = tmp_path / "c"
    first = check(_resolved(root), cache_dir=cache)
    assert project_rule.calls == [4]
    assert [(d.path, d.code) for d in first.diagnostics] == [("a.py", "FX098"), ("c.py", "FX003")]
    assert "4 files" in first.diagnostics[0].message
    second = check(_resolved(root), cache_dir=cache)
    assert project_rule.calls == [4]  # served from the project cache
    assert second.diagnostics == first.diagnostics
    (root / "d.py").write_text("y = 2\n")
    check(_resolved(root), cache_dir=cache)
    assert project_rule.calls == [4, 5]


def test_explicit_paths_report_only_their_project_findings(project, tmp_path, project_rule):
    root = project(FILES)
    result = check(_resolved(root), ["c.py"], cache_dir=tmp_path / "c")
    assert project_rule.calls == [4]  # the model still covers the whole project
    assert [(d.path, d.code) for d in result.diagnostics] == [("c.py", "FX003")]


def test_no_project_skips_project_rules_without_false_fx003(project, tmp_path, project_rule):
    root = project(FILES)
    result = check(_resolved(root), cache_dir=tmp_path / "c", project=False)
    assert project_rule.calls == []
    assert result.diagnostics == []


def test_per_file_ignores_apply_to_project_findings(project, tmp_path, project_rule):
    root = project(FILES)
    result = check(_resolved(root, per_file_ignores=(("a.py", ("FX098",)),)), use_cache=False)
    assert [(d.path, d.code) for d in result.diagnostics] == [("c.py", "FX003")]


def test_no_project_rules_enabled_costs_nothing(project, tmp_path, project_rule):
    root = project(FILES)
    check(resolve(Settings(root=root, select=("FX001",))), use_cache=False)
    assert project_rule.calls == []


def test_check_dot_and_bare_check_agree_on_configuration_findings(project, monkeypatch, run_cli):
    """FX207/FX303 sit on pyproject.toml: `foxaudit check .` used to print "All checks passed"
    where `foxaudit check` printed them."""
    config = (
        '[tool.foxaudit]\nselect = ["FX207", "FX303"]\n\n[tool.foxaudit.program]\n'
        'entry-points = ["pkg.main"]\nlayout-module = "pkg/missing.py"\nhot-path-roots = ["pkg.main:nothing_*"]\n'
    )
    project({"pkg/__init__.py": "", "pkg/main.py": "def run():\n    return 1\n"}, config)
    monkeypatch.delenv("FOXAUDIT_CACHE_DIR", raising=False)
    bare = run_cli("check", "--no-cache")
    dot = run_cli("check", "--no-cache", ".")
    assert bare.code == dot.code == 1
    assert bare.out == dot.out
    assert [line.split(" ")[1] for line in bare.out.splitlines() if line.startswith("pyproject.toml")] == ["FX207", "FX303"]
    one_file = run_cli("check", "--no-cache", "pkg/main.py")
    assert one_file.code == 0  # a pre-commit run on one file does not repeat configuration findings


def test_a_broken_program_model_is_built_once_and_reported_once(project, monkeypatch, run_cli):
    """A failing program build used to be retried by each of the 16 whole-project rules (minutes on
    pandas) and reported 16 times. The failure is forced here (no real input fails the build any
    more): the scanner is replaced by one that raises."""
    import foxaudit.program.model as model

    calls = []

    def broken(source, name, is_package):
        calls.append(source.path)
        raise TypeError("cannot encode a complex in a summary")

    monkeypatch.setattr(model, "scan_file", broken)
    project({"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"}, '[project]\nname = "pkg"\nversion = "0"\n')
    monkeypatch.delenv("FOXAUDIT_CACHE_DIR", raising=False)
    result = run_cli("check", "--no-cache")
    internal = [line for line in result.out.splitlines() if "internal error" in line]
    assert len(internal) == 1, result.out
    assert "whole-project rules FX101 (gpu-slot-host-write), FX102" in internal[0]
    assert "TypeError: cannot encode a complex in a summary" in internal[0]
    assert len(calls) == 1  # built (and failed) once
