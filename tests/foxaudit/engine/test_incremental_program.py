"""After an edit that changes a module's whole-program summary, a run over the cache reports what
a cold run of the edited tree reports. Unchanged modules' summaries come from the cache with
their functions, ``with`` blocks and transfer calls still unparsed, and the analyses decide from
each summary's index which of them to decode; every edit below makes a module matter that the
previous state let them skip (a decorator that names a root, a ``with`` that captures, a method
a confirmation looks up), so a wrong skip or a stale cached part shows as a difference."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxaudit.config import Settings
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import check
from foxaudit.program.pyscan import ModuleSummary

MARKERS = """\
def hot_path(function):
    return function
"""

STEP = """\
import torch

from pkg.markers import hot_path


def read(x):
    return x.item()


def step(x):
    return read(x)
"""

BASE = """\
class Reader:
    def read(self, n):
        raise NotImplementedError
"""

IMPL = """\
from pkg.base import Reader


class FileReader(Reader):
    def read(self, n):
        return self.handle.read(n)
"""

MAIN = """\
from pkg import base, impl, step

if __name__ == "__main__":
    step.step(None)
"""

# (file, old text, new text, a finding the edit brings as (path, code), or None): each changes
# that module's summary.
EDITS = [
    # A decorator that names a root: step() and what it calls are now hot (FX301 on read's .item()).
    ("pkg/step.py", "def step(x):", "@hot_path\ndef step(x):", ("pkg/step.py", "FX301")),
    # A captured region in a module that had no `with` at all.
    (
        "pkg/base.py",
        "class Reader:",
        "import torch\n\n\ndef capture(g, x):\n    with torch.cuda.graph(g):\n        return x.cpu()\n\n\nclass Reader:",
        ("pkg/base.py", "FX301"),
    ),
    # Both again under other names: a root decorator and a capture context imported under an alias
    # (the index's own last names do not name them; the imports do).
    (
        "pkg/impl.py",
        "from pkg.base import Reader\n",
        "import torch\nfrom torch.cuda import graph as recording\n\nfrom pkg.base import Reader\nfrom pkg.markers import hot_path as hot\n"
        "\n\n@hot\ndef sync(x):\n    return x.item()\n\n\ndef record(g, x):\n    with recording(g):\n        return x.tolist()\n",
        ("pkg/impl.py", "FX301"),
    ),
    # The subclass stops implementing the hook: the base's placeholder is a stub again (FX902).
    ("pkg/impl.py", "return self.handle.read(n)", "raise NotImplementedError", ("pkg/base.py", "FX902")),
    # And back (the family's earlier state is a cached one).
    ("pkg/impl.py", "raise NotImplementedError", "return self.handle.read(n)", None),
]


def _findings(root: Path, cache: Path) -> list[tuple[str, int, str, str]]:
    resolved = resolve(Settings(root=root, rules={"FX902": {"unmarked-methods": True}}))
    return [(d.path, d.line, d.code, d.message) for d in check(resolved, cache_dir=cache, jobs=1).diagnostics]


@pytest.fixture(params=["with bodies", "indexes alone"])
def summaries(request, monkeypatch) -> str:
    """How the per-file pass summarises: with each body (the few files of an edit, or a project
    whose analyses read most bodies), or as indexes alone (a big project's cold run: a body is
    scanned when an analysis reads it)."""
    if request.param == "indexes alone":
        from foxaudit.engine import run
        from foxaudit.program import analysis

        monkeypatch.setattr(run, "IN_PROCESS_LIMIT", 0)
        monkeypatch.setattr(analysis, "bodies_read_widely", lambda settings, sources: False)
    return request.param


def test_findings_after_summary_changing_edits_are_those_of_a_cold_run(project, tmp_path: Path, summaries: str) -> None:
    files = {"pkg/__init__.py": "", "pkg/markers.py": MARKERS, "pkg/step.py": STEP, "pkg/base.py": BASE, "pkg/impl.py": IMPL, "main.py": MAIN}
    root = project(files)
    cache = tmp_path / "incremental"
    before = _findings(root, cache)
    assert not [f for f in before if f[2] in ("FX301", "FX902")]
    for number, (path, old, new, brought) in enumerate(EDITS):
        text = (root / path).read_text()
        assert old in text, (path, old)
        (root / path).write_text(text.replace(old, new, 1))
        incremental = _findings(root, cache)
        cold = _findings(root, tmp_path / f"cold-{number}")
        assert incremental == cold, f"after edit {number} ({path}): incremental vs cold"
        # The edit reached the analysis the index guards (not a vacuous comparison).
        assert brought is None or brought in {(found[0], found[2]) for found in incremental}, (number, incremental)
    # The aliased root and the aliased capture each bring their own finding.
    lines = {found[1] for found in incremental if found[:1] == ("pkg/impl.py",) and found[2] == "FX301"}
    assert len(lines) == 2, incremental
    for path, text in files.items():  # every summary as it was at the start
        (root / path).write_text(text)
    assert _findings(root, cache) == before


@pytest.mark.parametrize("lazy", ModuleSummary.LAZY)
def test_a_cached_summary_with_a_damaged_lazy_field_is_read_not_trusted(project, tmp_path: Path, lazy: str) -> None:
    """A damaged lazy line in a cache entry (data anyone may write) reads as empty, never fails
    the run; a cold run is unaffected."""
    root = project({"pkg/__init__.py": "", "pkg/markers.py": MARKERS, "pkg/step.py": STEP.replace("def step(x):", "@hot_path\ndef step(x):")})
    cache = tmp_path / "c"
    cold = _findings(root, cache)
    assert any(code == "FX301" for _, _, code, _ in cold)
    line = 3 + ModuleSummary.LAZY.index(lazy)
    for entry in cache.rglob("*.summary"):
        lines = entry.read_bytes().split(b"\n", 3 + len(ModuleSummary.LAZY))
        if lines[1] == b"cuda":
            continue
        lines[line] = b"[["  # unparsable, with the header's lengths kept true: read, not a miss
        lines[1] = b"py " + b" ".join(str(len(part)).encode() for part in lines[2:-1])
        entry.chmod(0o644)
        entry.write_bytes(b"\n".join(lines))
    (root / "pkg/markers.py").write_text(MARKERS + "\n\nOTHER = 1\n")  # a summary changes: the program is rebuilt
    _findings(root, cache)  # no exception, no internal-error finding
    assert not [f for f in _findings(root, cache) if "internal error" in f[3]]


# setup.py puts a directory on sys.path and imports from it: the import graph reads that from the
# call's literal argument, in the summary's body (the index says only that sys.path is extended).
SETUP = """\
import os
import sys

sys.path.append(os.path.join(os.path.dirname(__file__), "install"))
import builder

builder.run()
"""


def test_a_body_an_analysis_read_is_compared_after_an_edit_and_another_is_not(
    project, tmp_path: Path, monkeypatch, summaries: str
) -> None:
    """The recorded inputs of the project's findings compare each edited file's index, and its
    body only where an analysis read the body: an edit of such a body alone runs the rules again
    (the findings move), an edit of a body no analysis read reuses them."""
    builder = "from builder._steps import run\n"
    steps = "def run():\n    return compute(3)\n"
    files = {
        "pyproject.toml": "[project]\nname = 'tool'\nversion = '1'\n",
        "setup.py": SETUP,
        "install/builder/__init__.py": builder, "install/builder/_steps.py": steps,
        "vendors/builder/__init__.py": builder, "vendors/builder/_steps.py": steps,
    }  # fmt: skip
    root = project(files)
    cache = tmp_path / "incremental"
    runs = _count_project_runs(monkeypatch)
    orphans = {path for path, _, code, _ in _findings(root, cache) if code == "FX201"}
    assert orphans == {"vendors/builder/__init__.py", "vendors/builder/_steps.py"}
    # The directory setup.py adds, same length: setup.py's index stays as it was, its body not.
    (root / "setup.py").write_text(SETUP.replace('"install"', '"vendors"'))
    runs.clear()
    incremental = _findings(root, cache)
    assert runs == [1]  # setup.py's body was read: its edit is compared, and differs
    assert incremental == _findings(root, tmp_path / "cold-1")
    assert {path for path, _, code, _ in incremental if code == "FX201"} == {"install/builder/__init__.py", "install/builder/_steps.py"}
    # A body no analysis read: the findings stand as they were, without running the rules.
    (root / "vendors/builder/_steps.py").write_text(steps.replace("compute(3)", "compute(4)"))
    runs.clear()
    assert _findings(root, cache) == incremental and runs == []
    # A comment appended to setup.py, whose body was read (scanned in the project pass, when made
    # as an index alone, which is no read of its content): index and body as they were.
    (root / "setup.py").write_text(SETUP.replace('"install"', '"vendors"') + "# a comment\n")
    runs.clear()
    assert _findings(root, cache) == incremental and runs == []


def _count_project_runs(monkeypatch) -> list[int]:
    """A list that gains one entry each time the whole-program rules run (not reused from cache)."""
    from foxaudit.engine import run

    runs: list[int] = []
    original = run._run_project_rules
    monkeypatch.setattr(run, "_run_project_rules", lambda *args, **kwargs: runs.append(1) or original(*args, **kwargs))
    return runs


def _fx201_paths(root: Path, cache_dir: Path) -> set[str]:
    """The files FX201 reports in ``root``, checked with the cache at ``cache_dir``."""
    from foxaudit.config import load_settings

    resolved = resolve(load_settings(None, root, overrides={"select": ["FX201"]}))
    return {d.path for d in check(resolved, cache_dir=cache_dir, jobs=1).diagnostics}


def test_an_edited_yaml_target_changes_the_findings_on_a_warm_cache(project, tmp_path: Path, monkeypatch) -> None:
    """YAML files are no source files, yet what their `_target_` lines name is an input of the
    import graph: an edit that names another module runs the rules again (and finds what a cold
    run finds), an edit of anything else in the file (a comment, a value) reuses the findings."""
    config = "[tool.foxaudit.program]\nentry-points = ['jobs.train']\n"
    files = {
        "jobs/__init__.py": "", "jobs/train.py": "print('train')\n",
        "jobs/models/__init__.py": "", "jobs/models/mlp.py": "class MLP:\n    pass\n",
        "jobs/models/cnn.py": "class CNN:\n    pass\n",
        "jobs/configs/model.yaml": "model:\n  _target_: models.mlp.MLP  # the network\n  width: 8\n",
    }  # fmt: skip
    root = project(files, config)
    cache = tmp_path / "warm"
    runs = _count_project_runs(monkeypatch)

    assert _fx201_paths(root, cache) == {"jobs/models/cnn.py"}
    assert _fx201_paths(root, cache) == {"jobs/models/cnn.py"}  # warm
    (root / "jobs/configs/model.yaml").write_text("model:\n  _target_: 'models.cnn.CNN'  # the network\n  width: 8\n")
    runs.clear()
    assert _fx201_paths(root, cache) == {"jobs/models/mlp.py"} == _fx201_paths(root, tmp_path / "cold")
    assert runs == [1, 1]
    (root / "jobs/configs/model.yaml").write_text("# another comment\nmodel:\n  _target_: 'models.cnn.CNN'\n  width: 16\n")
    runs.clear()
    assert _fx201_paths(root, cache) == {"jobs/models/mlp.py"} and runs == [1]
    runs.clear()
    assert _fx201_paths(root, cache) == {"jobs/models/mlp.py"} and runs == []


def test_an_edited_nested_pyproject_changes_the_findings_on_a_warm_cache(project, tmp_path: Path, monkeypatch) -> None:
    """A project nested in the tree ships the packages its own pyproject.toml names: renaming the
    package there makes the old one an orphan on a warm cache as on a cold one."""
    files = {
        "lib/__init__.py": "",
        "examples/app/pyproject.toml": "[project]\nname = 'app-one'\n",
        "examples/app/src/app_one/__init__.py": "X = 1\n",
        "examples/app/src/app_two/__init__.py": "Y = 2\n",
    }  # fmt: skip
    root = project(files, "[project]\nname = 'lib'\nversion = '1'\n")
    cache = tmp_path / "warm"
    runs = _count_project_runs(monkeypatch)

    assert _fx201_paths(root, cache) == {"examples/app/src/app_two/__init__.py"}
    runs.clear()
    assert _fx201_paths(root, cache) == {"examples/app/src/app_two/__init__.py"} and runs == []  # warm
    (root / "examples/app/pyproject.toml").write_text("[project]\nname = 'app-two'\n")
    runs.clear()
    assert _fx201_paths(root, cache) == {"examples/app/src/app_one/__init__.py"} == _fx201_paths(root, tmp_path / "cold")
    assert runs == [1, 1]


def test_an_edited_cython_import_changes_the_findings_on_a_warm_cache(project, tmp_path: Path, monkeypatch) -> None:
    """A Cython module (`.pyx`) is no source file, yet its run-time imports reach Python modules:
    an edit that drops one makes that module an orphan on a warm cache as on a cold one (the
    results were reused before: stale), and an edit of anything else in it reuses the findings."""
    files = {
        "pkg/__init__.py": "from pkg import fast\n", "pkg/_helper.py": "Y = 2\n", "pkg/_other.py": "Z = 3\n",
        "pkg/fast.pyx": "from pkg._helper import Y\ncimport cython\n",
    }  # fmt: skip
    root = project(files, "[project]\nname = 'pkg'\n")
    cache = tmp_path / "warm"
    runs = _count_project_runs(monkeypatch)

    assert _fx201_paths(root, cache) == {"pkg/_other.py"} == _fx201_paths(root, cache)  # cold, then warm
    (root / "pkg/fast.pyx").write_text("from pkg._other import Z\ncimport cython\n")
    runs.clear()
    assert _fx201_paths(root, cache) == {"pkg/_helper.py"} == _fx201_paths(root, tmp_path / "cold")
    assert runs == [1, 1]
    (root / "pkg/fast.pyx").write_text("# a comment\nfrom pkg._other import Z\ncdef int unused = 0\n")
    runs.clear()
    assert _fx201_paths(root, cache) == {"pkg/_helper.py"} and runs == []
