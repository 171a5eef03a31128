"""End-to-end CLI: exit codes, rules listing, rule docs, formats, no tracebacks (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _foxaudit(cwd: Path, *args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if cache is not None:
        env["FOXAUDIT_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "foxaudit", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.foxaudit]\nselect = ["FX0"]\n')
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "good.py").write_text("x = 1\n")
    return root


def test_exit_codes_clean_findings_usage(tree: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    clean = _foxaudit(tree, "check", cache=cache)
    assert clean.returncode == 0 and "All checks passed (2 files checked)." in clean.stdout
    (tree / "pkg" / "bad.py").write_text("def f(:\n")
    dirty = _foxaudit(tree, "check", cache=cache)
    assert dirty.returncode == 1
    assert dirty.stdout.startswith("pkg/bad.py:1:7: FX001 syntax error")
    assert _foxaudit(tree, "check", "--exit-zero", cache=cache).returncode == 0
    usage = _foxaudit(tree, "check", "--format", "xml", cache=cache)
    assert usage.returncode == 2 and "invalid command line" in usage.stderr and "Traceback" not in usage.stderr


def test_explicit_files_as_pre_commit_passes_them(tree: Path, tmp_path: Path):
    (tree / "pkg" / "bad.py").write_text("def f(:\n")
    only_good = _foxaudit(tree, "check", "pkg/good.py", cache=tmp_path / "c")
    assert only_good.returncode == 0 and "1 file checked" in only_good.stdout


def test_formats_end_to_end(tree: Path, tmp_path: Path):
    (tree / "pkg" / "bad.py").write_text("def f(:\n")
    as_json = _foxaudit(tree, "check", "--format", "json", "--no-cache")
    assert json.loads(as_json.stdout)[0]["path"] == "pkg/bad.py"
    sarif = _foxaudit(tree, "check", "--format", "sarif", "--no-cache", "-o", str(tmp_path / "out.sarif"))
    assert sarif.returncode == 1 and sarif.stdout == ""
    assert json.loads((tmp_path / "out.sarif").read_text())["runs"][0]["results"][0]["ruleId"] == "FX001"
    github = _foxaudit(tree, "check", "--format", "github", "--no-cache")
    assert github.stdout.startswith("::error file=pkg/bad.py,line=1,col=7,")


def test_rules_and_rule_docs(tree: Path):
    listing = _foxaudit(tree, "rules")
    assert listing.returncode == 0
    header, *rows = listing.stdout.splitlines()
    assert header.split() == ["code", "name", "status", "summary"]
    assert any(row.startswith("FX001  parse-error") for row in rows)
    doc = _foxaudit(tree, "rule", "fx002")
    assert doc.returncode == 0
    for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead", "## Options", "## Invalid examples"):
        assert section in doc.stdout
    unknown = _foxaudit(tree, "rule", "FX9999")
    assert unknown.returncode == 2
    assert "unknown rule code (got 'FX9999'" in unknown.stderr and "hint:" in unknown.stderr


def test_bad_config_exits_2_without_traceback(tree: Path):
    (tree / "pyproject.toml").write_text('[tool.foxaudit]\nselect = ["FX0"]\nselct = 1\n[tool.foxaudit.rules.FX001]\nx = 1\n')
    result = _foxaudit(tree, "check", "--no-cache")
    assert result.returncode == 2
    assert "2 configuration errors" in result.stderr and "Traceback" not in result.stderr


def test_no_subcommand_prints_help_and_exits_2(tree: Path):
    result = _foxaudit(tree)
    assert result.returncode == 2 and "check" in result.stderr


def test_output_into_a_missing_directory_is_a_usage_error(tree: Path, tmp_path: Path):
    """`-o` used to exit 0 and write nothing (the OSError was swallowed by a cache helper)."""
    target = tmp_path / "nonexistent" / "dir" / "report.txt"
    result = _foxaudit(tree, "check", "--no-cache", "-o", str(target))
    assert result.returncode == 2
    assert not target.exists()
    assert "cannot write the report" in result.stderr and "does not exist" in result.stderr
    assert "hint: create the directory first" in result.stderr and "Traceback" not in result.stderr


def test_output_onto_a_directory_is_a_usage_error(tree: Path, tmp_path: Path):
    result = _foxaudit(tree, "check", "--no-cache", "-o", str(tmp_path))
    assert result.returncode == 2
    assert "cannot write the report" in result.stderr and "Traceback" not in result.stderr


def test_reader_closing_the_pipe_is_not_an_internal_error(tree: Path, tmp_path: Path):
    """`foxaudit check | head -1` used to end in an internal BrokenPipeError."""
    (tree / "pkg" / "bad.py").write_text("".join(f"x{n} = {n}  # TODO: finish {n}\n" for n in range(50)))
    env = {**os.environ, "PYTHONPATH": str(REPO), "FOXAUDIT_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen(
        [sys.executable, "-m", "foxaudit", "check", "--select", "FX901"], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    # The reader goes away before foxaudit writes its report (it takes ~1 s to start), so the
    # write meets a closed pipe whatever the pipe buffers.
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert stderr == ""


def test_rule_docs_show_the_options_an_example_assumes(tree: Path):
    """`foxaudit rule FX901` printed its docstring-marker example as valid without saying
    `docstrings = false` (under the defaults it is reported)."""
    result = _foxaudit(tree, "rule", "FX901")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    at = lines.index('    """TODO in a docstring, but docstrings are off."""')
    assert lines[at - 1] == "example.py (with { docstrings = false }):"
    assert "example.py (with { tags = [\"WIP\"] }):" in lines


def test_rule_docs_show_a_whole_project_rules_example_projects(tree: Path):
    """`foxaudit rule FX202` prints the example repositories, every file under its path."""
    result = _foxaudit(tree, "rule", "FX202")
    assert result.returncode == 0
    text = result.stdout
    assert "## Valid examples" in text and "## Invalid examples" in text
    invalid = text[text.index("## Invalid examples"):]
    assert "project 1 (4 files, 1 finding):\n  `old_update` is defined, and no Python code loads it." in invalid
    assert "  cuda/scale.cu:" in invalid and "  pyproject.toml:" in invalid
    assert '      extern "C" __global__ void old_update(float* x, int n) {' in invalid
    assert "  ops/__init__.py:\n      (empty file)" in invalid


def test_generator_commands_run_only_with_run_generators(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A repository's `generated-headers` command is its code: `check` says once that it did not run it."""
    monkeypatch.delenv("FOXAUDIT_RUN_GENERATORS", raising=False)
    root = tmp_path / "fork"
    (root / "gen").mkdir(parents=True)
    (root / "gen" / "h.cuh").write_text("// generated — do not edit\nconstexpr int N = 1;\n")
    (root / "pyproject.toml").write_text(
        '[tool.foxaudit]\nselect = ["FX5"]\n'
        '[tool.foxaudit.program]\ngenerated-headers = { "gen/h.cuh" = "touch PWNED; true {path}" }\n'
    )
    cache = tmp_path / "cache"  # shared: the static verdict must not answer for the generator's
    static = _foxaudit(root, "check", cache=cache)
    assert static.returncode == 0 and not (root / "PWNED;").exists()
    notes = [line for line in static.stderr.splitlines() if "note:" in line]
    assert notes == [
        "foxaudit: note: the command of `generated-headers` not run (FX503 checked the headers statically:"
        " present, and the layout's offsets and strides) — hint: pass --run-generators or set"
        " FOXAUDIT_RUN_GENERATORS=1 for a repository you trust"
    ]
    trusted = _foxaudit(root, "check", "--run-generators", cache=cache)
    assert trusted.returncode == 0 and (root / "PWNED;").exists() and "note:" not in trusted.stderr


def _configured_project(root: Path) -> Path:
    """A project whose own settings decide a finding: FX902 reports an unmarked `pass` method only
    with `unmarked-methods = true`, which this pyproject sets."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[tool.foxaudit]\nselect = ["FX902"]\n[tool.foxaudit.rules.FX902]\nunmarked-methods = true\n'
    )
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "stub.py").write_text("class A:\n    def f(self):\n        pass\n")
    return root


@pytest.mark.parametrize("elsewhere", ["outside any project", "inside another project"])
def test_a_project_checked_from_elsewhere_is_checked_as_from_inside(tmp_path: Path, elsewhere: str):
    project = _configured_project(tmp_path / "proj")
    here = tmp_path / "shell"
    here.mkdir()
    if elsewhere == "inside another project":
        (here / "pyproject.toml").write_text('[tool.foxaudit]\nselect = ["FX0"]\n')
    inside = _foxaudit(project, "check", cache=tmp_path / "cache")
    assert inside.returncode == 1 and inside.stdout.startswith("pkg/stub.py:2:")  # the project's option applies
    for target in (str(project), str(project / "pkg"), str(project / "pkg" / "stub.py")):
        outside = _foxaudit(here, "check", target, cache=tmp_path / "cache")
        findings = outside.stdout.splitlines()[:-1]  # the summary counts the files given
        assert (outside.returncode, findings) == (inside.returncode, inside.stdout.splitlines()[:-1]), target


def test_files_of_a_tree_in_no_project_are_checked_from_the_working_directory(tmp_path: Path):
    # An unpacked tree (no pyproject.toml, no .git): `check FILES` has the root and module names
    # of `check` with no path, so it reads the summaries that run cached instead of scanning again.
    tree = tmp_path / "tree"
    (tree / "pkg" / "sub").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "sub" / "__init__.py").write_text("")
    (tree / "pkg" / "sub" / "mod.py").write_text("def f():\n    pass\n")
    whole = _foxaudit(tree, "check", "--select", "FX902", cache=tmp_path / "cache")
    files = _foxaudit(tree, "check", "--select", "FX902", "pkg/sub/mod.py", cache=tmp_path / "cache")
    assert whole.stdout.splitlines()[0] == files.stdout.splitlines()[0] == (
        "pkg/sub/mod.py:1:5: FX902 `f` is a stub: its body is only `pass` — invariant 9: finish it or don't start it"
        " — hint: implement it or delete it; an interface method is @abc.abstractmethod or a Protocol member")


def test_paths_in_two_projects_are_a_usage_error(tmp_path: Path):
    first, second = _configured_project(tmp_path / "a"), _configured_project(tmp_path / "b")
    run = _foxaudit(tmp_path, "check", str(first), str(second / "pkg"), cache=tmp_path / "cache")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"paths in 2 projects ({first}, {second} vs one project per run)" in run.stderr
    assert "hint: run foxaudit check once per project" in run.stderr
