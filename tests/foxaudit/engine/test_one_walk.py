"""One walk per summarised file: the per-file rules' query and the whole-program scanner's run as
one tree-sitter query, and the summary made from its captures is the one a walk of its own makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxaudit.config import Settings
from foxaudit.engine import run
from foxaudit.engine.resolve import resolve
from foxaudit.program import pyscan
from foxaudit.program.codec import dump_summary
from foxaudit.sources.base import SourceFile

# Every capture of the scanner's query at least once: imports, a decorated generator with a
# `with`, a class, calls (chained, called results), assignments, an augmented subscript write, a
# dict literal, a lambda, a large container and a TYPE_CHECKING block.
MODULE = (
    "from __future__ import annotations\n"
    "import os\n"
    "from typing import TYPE_CHECKING\n"
    "if TYPE_CHECKING:\n"
    "    from collections import OrderedDict\n"
    "TABLE = [" + ", ".join(str(number) for number in range(1_200)) + "]\n"
    "OPTIONS = {'a': 1, 2: 'b'}\n"
    "class Box:\n"
    "    def __init__(self):\n"
    "        self.items = os.environ.get('X')\n"
    "@staticmethod\n"
    "def walk(path):\n"
    "    with open(path) as handle:\n"
    "        yield handle.read().strip()\n"
    "def use(values):\n"
    "    values[0] += 1\n"
    "    key = lambda item: item\n"
    "    return sorted(values, key=key)(1)\n"
)


def test_the_summary_from_the_rules_walk_is_the_summary_of_its_own_walk(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.foxaudit]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(MODULE)
    alone = pyscan.scan_python(SourceFile.from_text("pkg/mod.py", MODULE), "pkg.mod", False)
    resolved = resolve(Settings(root=tmp_path))
    run._init_worker(resolved, False, summarise=True)
    walked: list[str] = []
    original = pyscan._Scanner.run

    def counting(scanner, captures=None):
        walked.append("own walk" if captures is None else "shared walk")
        return original(scanner, captures)

    monkeypatch.setattr(pyscan._Scanner, "run", counting)
    relative, _key, _entry, prepared = run._analyse_one((str(tmp_path / "pkg" / "mod.py"), "pkg/mod.py", ""))
    assert relative == "pkg/mod.py"
    assert walked == ["shared walk"]
    assert prepared is not None and prepared.summary is not None
    assert dump_summary("k", prepared.summary) == dump_summary("k", alone)


@pytest.mark.parametrize("path", ["pkg/stubs.pyi", "scripts/not.a.module.py"])
def test_a_file_without_a_summary_walks_for_its_rules_alone(tmp_path: Path, path: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.foxaudit]\n")
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text("x = 1\n")
    run._init_worker(resolve(Settings(root=tmp_path)), False, summarise=True)
    outcome = run._WORKER["analyzer"].analyze(path, b"x = 1\n", also="")
    assert outcome.captures is None
    assert not run._summarised_module(path, run._WORKER["source_roots"])


def _analyse_in_worker(tmp_path: Path, monkeypatch, name: str, text: str, bodies: bool):
    """``pkg/<name>`` analysed by a worker of a project with summaries: the extra query each
    analysis was asked for, and the prepared result."""
    (tmp_path / "pyproject.toml").write_text("[tool.foxaudit]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / name).write_text(text)
    run._init_worker(resolve(Settings(root=tmp_path)), False, summarise=True, bodies=bodies)
    asked: list[str] = []
    analyze = run._WORKER["analyzer"].analyze
    monkeypatch.setattr(run._WORKER["analyzer"], "analyze", lambda *a, also="": asked.append(also) or analyze(*a, also=also))
    _, _, _, prepared = run._analyse_one((str(tmp_path / "pkg" / name), f"pkg/{name}", ""))
    return asked, prepared


@pytest.mark.parametrize("bodies", [False, True])
def test_an_index_alone_from_the_index_query_is_the_index_of_a_full_walk(tmp_path: Path, monkeypatch, bodies: bool) -> None:
    """Where summaries are made as indexes alone the rules' walk runs ``SCAN_INDEX_QUERY`` (no
    dict entries, containers or augmented assignments); the index made from its captures is the
    one a full walk makes, and a whole summary is made from the full query's captures."""
    asked, prepared = _analyse_in_worker(tmp_path, monkeypatch, "mod.py", MODULE, bodies)
    assert asked == [pyscan.SCAN_QUERY if bodies else pyscan.SCAN_INDEX_QUERY]
    full = pyscan.scan_python(SourceFile.from_text("pkg/mod.py", MODULE), "pkg.mod", False, body=bodies)
    assert prepared is not None and prepared.summary is not None
    assert dump_summary("k", prepared.summary) == dump_summary("k", full)


def test_a_file_that_may_nest_too_deep_gets_the_full_query_and_its_whole_summary(tmp_path: Path, monkeypatch) -> None:
    text = "def f():\n    return " + "(" * 250 + "1" + ")" * 250 + "\n"
    asked, prepared = _analyse_in_worker(tmp_path, monkeypatch, "deep.py", text, bodies=False)
    assert asked == [pyscan.SCAN_QUERY]
    whole = pyscan.scan_python(SourceFile.from_text("pkg/deep.py", text), "pkg.deep", False)
    assert prepared is not None and dump_summary("k", prepared.summary) == dump_summary("k", whole)


def test_a_rule_that_skips_the_walk_leaves_its_node_types_out(tmp_path: Path, monkeypatch) -> None:
    """FX901 reads comments and expression statements only in a file that mentions a tag
    (``FileContext.skip_walk``): elsewhere the walk does not collect them for it."""
    from foxaudit.engine import analyze as analyze_module

    asked: list[tuple[str, ...]] = []
    nodes = analyze_module._nodes
    monkeypatch.setattr(analyze_module, "_nodes", lambda source, language, types, also="": asked.append(types) or nodes(source, language, types, also))
    (tmp_path / "pyproject.toml").write_text("[tool.foxaudit]\n")
    resolved = resolve(Settings(root=tmp_path, select=("FX901", "FX501")))
    quiet = analyze_module.analyze_text(resolved, "m.py", "# plain words\nx = 1\n")
    tagged = analyze_module.analyze_text(resolved, "m.py", "# TODO: finish\nx = 1\n")
    assert "comment" not in asked[0] and "assignment" in asked[0]
    assert "comment" in asked[1] and "expression_statement" in asked[1]
    assert not quiet.diagnostics and [d.code for d in tagged.diagnostics] == ["FX901"]
