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

    def broken(source, name, is_package, captures=None, *, body=True):
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


class _CountingParser:
    """Stands in for a tree-sitter parser and counts what it parses (per path, by content)."""

    def __init__(self, real, parsed: list[bytes]):
        self.real = real
        self.parsed = parsed

    def parse(self, data: bytes, *args, **kwargs):
        self.parsed.append(bytes(data))
        return self.real.parse(data, *args, **kwargs)


def test_a_cold_check_parses_each_file_once_for_both_passes(project, monkeypatch, run_cli):
    """The per-file rules and the whole-program summaries share one tree per file: a cold run used
    to parse every file twice (once per pass), and a third time in a summarising worker."""
    import foxaudit.sources.base as base

    parsed: list[bytes] = []
    real = base._parser
    monkeypatch.setattr(base, "_parser", lambda language: _CountingParser(real(language), parsed))
    files = {
        "pkg/__init__.py": "from pkg.a import f\n",
        "pkg/a.py": "import torch\n\n\ndef f(x):\n    return x.item()\n",
        "pkg/k.cu": 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n',
    }
    project(files, '[project]\nname = "pkg"\nversion = "0"\n')
    result = run_cli("check", "--no-cache")
    assert "internal error" not in result.out, result.out
    assert "FX202 orphan kernel `k`" in result.out  # the whole-project rules ran
    assert sorted(parsed) == sorted(text.encode() for text in files.values())


def test_a_summary_handed_over_for_other_bytes_is_not_used(tmp_path):
    """The program pass takes a summary from the per-file pass only for the bytes it reads itself
    (a file edited between the two reads is summarised again, from its new content)."""
    from foxaudit.program.model import Program, prepare_summary
    from foxaudit.program.project import Project
    from foxaudit.program.settings import ProgramSettings
    from foxaudit.sources.base import SourceFile

    before = SourceFile.from_text("pkg/a.py", "def old():\n    return 1\n")
    after = SourceFile.from_text("pkg/a.py", "def new():\n    return 2\n")
    stale = prepare_summary(before, ["."], None)
    fresh = prepare_summary(after, ["."], None)
    assert stale is not None and fresh is not None and stale.name != fresh.name
    for handed, expected in ((stale, "new"), (fresh, "new"), (fresh.without_summary(), "new")):
        project = Project(root=tmp_path, files=[after], summaries={"pkg/a.py": handed})
        program = Program(project, ProgramSettings(), use_cache=False)
        assert [function.name for function in program.modules["pkg.a"].summary.functions] == [expected]
