"""After an edit, a cached run finds exactly what a cold run finds (issue 14: one file changed).

Each step edits the multi-module fixtures of the whole-program tests (Python packages that load
CUDA kernels, a hot path) and compares ``foxaudit check`` with the run's cache against the same
check without any cache. The whole-project findings are reused after an edit that leaves every
summary as it was (and reads no changed file's content); every other edit re-runs the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from program_support import copy_fixture

from foxaudit.config import Settings, load_settings
from foxaudit.engine import run as run_module
from foxaudit.engine.resolve import resolve
from foxaudit.store import Store


def _findings(root: Path, cache: Path | None) -> list[tuple]:
    settings = load_settings(None, root, {"select": None, "extend_ignore": None}, errors=[])
    assert isinstance(settings, Settings)
    result = run_module.check(resolve(settings), use_cache=cache is not None, cache_dir=cache)
    return [(d.path, d.line, d.column, d.end_line, d.end_column, d.code, d.message, d.hint) for d in result.diagnostics]


@pytest.fixture
def rules_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item per run of the whole-project rules (a reuse of their findings adds none)."""
    runs: list[int] = []
    real = run_module._run_project_rules

    def counted(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "_run_project_rules", counted)
    return runs


def _latest_entry(cache: Path) -> Path:
    """The inputs entry of the state the run's pointer names as the latest."""
    (pointer,) = (cache / "v1").rglob("project-latest-*.json")
    name = json.loads(pointer.read_text())["project"].removeprefix("project-")
    (entry,) = (cache / "v1").rglob(f"project-inputs-{name}.json")
    return entry


def _edit(root: Path, path: str, change: Callable[[str], str]) -> None:
    target = root / path
    before = target.read_text(encoding="utf-8")
    after = change(before)
    assert after != before, f"the edit of {path} changed nothing"
    target.write_text(after, encoding="utf-8")


def _same_as_cold(root: Path, cache: Path) -> list[tuple]:
    cached = _findings(root, cache)
    assert cached == _findings(root, None)
    return cached


# (path, edit, whether the rules' findings may be reused): every kind of edit the project pass
# must follow — imports added and removed, kernels added and removed, lines shifted. No edit
# returns the tree to a state seen before (that state's findings are cached as they are).
WIRING_EDITS = [
    ("app/cli.py", lambda text: text + "\n# a comment changes no summary\n", True),
    ("app/engine.py", lambda text: "from app import orphan\n" + text, False),  # orphan becomes wired
    ("app/engine.py", lambda text: text.replace("from app.registry import ENTRIES\n", "").replace("len(ENTRIES)", "0"), False),
    ("app/engine.py", lambda text: text.replace("from app import cycle_a\n", ""), False),  # removes an import
    ("cuda/kernels.cu", lambda text: text + '\nextern "C" __global__ void added_kernel(float* x) { x[0] = 4.0f; }\n', False),
    ("app/kernels.py", lambda text: text + '\n\ndef launch_added(x):\n    load("added_kernel")((1,), (1,), (x,))\n', False),
    ("cuda/kernels.cu", lambda text: text.replace("extern \"C\" __global__ void orphan_kernel(float* x) { x[0] = 3.0f; }\n", ""), False),
    ("app/kernels.py", lambda text: "# shifts every line below\n" + text, False),
    # The kernel linkage reads this file's text (kernel definitions), so even a comment re-runs it.
    ("cuda/kernels.cu", lambda text: text + "// a trailing comment\n", False),
    ("app/island_x.py", lambda text: text + "\n# another comment\n", True),
]


def test_each_edit_of_a_kernel_project_finds_what_a_cold_run_finds(tmp_path, rules_runs):
    root = copy_fixture("wiring", tmp_path / "wiring")
    cache = tmp_path / "cache"
    first = _same_as_cold(root, cache)
    assert any(code.startswith("FX2") for *_, code, _, _ in first), "the fixture should have wiring findings"
    seen = {tuple(first)}
    for path, change, reusable in WIRING_EDITS:
        _edit(root, path, change)
        rules_runs.clear()
        found = _same_as_cold(root, cache)
        # The cached run is the first of the two: it re-ran the rules unless the edit kept every summary.
        assert len(rules_runs) == (1 if reusable else 2), (path, rules_runs)
        seen.add(tuple(found))
    # The edits did change the findings (orphans wired, kernels added and removed).
    assert len(seen) >= 4


def test_a_file_whose_content_the_rules_read_is_never_reused(tmp_path, rules_runs):
    # The hot-path analysis reads the text of modules that use tensors (syntax-found transfers):
    # a comment there changes no summary but may change what the syntax finds, so the rules run.
    root = copy_fixture("hotpath", tmp_path / "hotpath")
    cache = tmp_path / "cache"
    _same_as_cold(root, cache)
    reads = json.loads(_latest_entry(cache).read_text())["reads"]
    assert "hp/graphs.py" in reads and "hp/step.py" not in reads
    _edit(root, "hp/graphs.py", lambda text: text + "\n# only a comment\n")
    rules_runs.clear()
    _same_as_cold(root, cache)
    assert len(rules_runs) == 2
    # A module the analyses know only by its summary: the findings are reused.
    _edit(root, "hp/step.py", lambda text: text + "\n# only a comment\n")
    rules_runs.clear()
    _same_as_cold(root, cache)
    assert len(rules_runs) == 1


def test_a_malformed_record_of_inputs_is_ignored(tmp_path, rules_runs):
    root = copy_fixture("wiring", tmp_path / "wiring")
    cache = tmp_path / "cache"
    _same_as_cold(root, cache)
    entry = json.loads(_latest_entry(cache).read_text())
    # Planted: findings that the recorded inputs would vouch for, with a wrong shape elsewhere.
    entry["files"] = {path: "not a pair" for path in entry["files"]}
    Store(cache).put(entry.pop("k"), entry)
    _edit(root, "app/cli.py", lambda text: text + "\n# a comment\n")
    rules_runs.clear()
    _same_as_cold(root, cache)
    assert len(rules_runs) == 2


def test_a_tree_edited_back_is_compared_with_the_state_it_returned_to(tmp_path, rules_runs):
    root = copy_fixture("wiring", tmp_path / "wiring")
    cache = tmp_path / "cache"
    _same_as_cold(root, cache)
    original = (root / "app/engine.py").read_text()
    _edit(root, "app/engine.py", lambda text: "from app import orphan\n" + text)
    _same_as_cold(root, cache)
    (root / "app/engine.py").write_text(original)
    rules_runs.clear()
    _same_as_cold(root, cache)  # the first state's findings, cached as they were
    assert len(rules_runs) == 1
    # A comment now: compared with the first state (the latest again), whose summaries it keeps.
    _edit(root, "app/engine.py", lambda text: text + "\n# a comment\n")
    rules_runs.clear()
    _same_as_cold(root, cache)
    assert len(rules_runs) == 1


def test_no_cache_writes_nothing(tmp_path):
    root = copy_fixture("wiring", tmp_path / "wiring")
    _findings(root, None)
    assert not list(root.rglob("project-*"))
    assert not list(root.rglob("imports-*"))  # nor the import graph's per-module contributions


@pytest.fixture
def import_contributions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The modules whose imports the import graph computed (the others' were read from the cache)."""
    from foxaudit.program import wiring

    computed: list[str] = []
    real = wiring._imports_of

    def counted(program, name, *args, **kwargs):
        computed.append(name)
        return real(program, name, *args, **kwargs)

    monkeypatch.setattr(wiring, "_imports_of", counted)
    return computed


# A library without [tool.foxaudit.program] (entry points derived, as on pandas): its private
# module is an orphan until a public one imports it.
LIBRARY = {
    "pyproject.toml": '[project]\nname = "lib"\nversion = "1"\n',
    "lib/__init__.py": "from lib import core\n",
    "lib/core.py": "import os\n\n\ndef run():\n    return os.getcwd()\n",
    "lib/extra.py": "from lib.core import run\n",
    "lib/_private.py": "VALUE = 1\n",
    "lib/_helper.py": "from lib import _private\n",
}


def test_after_a_summary_changing_edit_only_that_module_s_imports_are_computed_again(tmp_path, import_contributions):
    root = tmp_path / "lib"
    for path, text in LIBRARY.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    cache = tmp_path / "cache"
    first = _same_as_cold(root, cache)
    assert [(path, code) for path, _, _, _, _, code, _, _ in first] == [("lib/_helper.py", "FX201"), ("lib/_private.py", "FX201")]
    edits = [
        # A new import: the orphans are wired (the summary changes, every line moves).
        ("lib/extra.py", lambda text: "from lib import _helper\n" + text, []),
        # A function added to another module: its imports are computed again, nothing else moves.
        ("lib/core.py", lambda text: text + "\n\ndef stop():\n    return 0\n", []),
        # The import taken away again: orphans once more.
        ("lib/extra.py", lambda text: text.replace("from lib import _helper\n", "import json\n"), ["lib/_helper.py", "lib/_private.py"]),
    ]
    for path, change, orphans in edits:
        _edit(root, path, change)
        import_contributions.clear()
        cached = _findings(root, cache)
        assert import_contributions == [path.removesuffix(".py").replace("/", ".")], (path, import_contributions)
        assert cached == _findings(root, None)  # the cold run computes every module's
        assert [found[0] for found in cached if found[5] == "FX201"] == orphans, path


def test_a_planted_import_contribution_of_the_wrong_shape_is_computed_again(tmp_path, import_contributions):
    root = tmp_path / "lib"
    for path, text in LIBRARY.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    cache = tmp_path / "cache"
    _same_as_cold(root, cache)
    (entry_path,) = (cache / "v1").rglob("imports-*.json")
    entry = json.loads(entry_path.read_text())
    entry["modules"]["lib/core.py"][3] = "lib.extra"  # a string where the list of imports goes
    Store(cache).put(entry.pop("k"), entry)
    _edit(root, "lib/extra.py", lambda text: text + "\n\ndef more():\n    return 1\n")
    import_contributions.clear()
    assert _findings(root, cache) == _findings(root, None)
    assert sorted(import_contributions[:2]) == ["lib.core", "lib.extra"]
