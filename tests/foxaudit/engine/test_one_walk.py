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


@pytest.mark.parametrize("path", ["pkg/stubs.pyi", "scripts/not-a-module.py"])
def test_a_file_without_a_summary_walks_for_its_rules_alone(tmp_path: Path, path: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.foxaudit]\n")
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text("x = 1\n")
    run._init_worker(resolve(Settings(root=tmp_path)), False, summarise=True)
    outcome = run._WORKER["analyzer"].analyze(path, b"x = 1\n", also="")
    assert outcome.captures is None
    assert not run._summarised_module(path, run._WORKER["source_roots"])
