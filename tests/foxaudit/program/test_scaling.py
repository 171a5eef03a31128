"""Scaling the whole-program pass: two-tier summaries, parallel scanning, unconfigured repositories."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from program_support import findings, load_project

from foxaudit.program.analysis import analysis_for
from foxaudit.program.codec import dump_summary, load_summary
from foxaudit.program.model import PARALLEL_SCAN_LIMIT, Program
from foxaudit.program.project import Project
from foxaudit.program.pyscan import _MAX_ITEMS, Span, scan_python
from foxaudit.program.settings import ProgramSettings
from foxaudit.sources.base import SourceFile
from foxaudit.store import Store

CHAINED = "import torch\n\ndef f(x):\n    return x.detach().to('cpu').reshape(-1).tolist()\n"


def test_chained_calls_are_summarised_innermost_first_every_time() -> None:
    """Calls that start on the same byte keep one order (audit docs are byte-for-byte stable)."""
    orders = {
        tuple(call.method for call in scan_python(SourceFile.from_text("m.py", CHAINED), "m", False).calls)
        for _ in range(5)
    }
    assert orders == {("detach", "to", "reshape", "tolist")}


def test_summary_body_stays_encoded_until_read() -> None:
    summary = scan_python(SourceFile.from_text("m.py", CHAINED + "y = print(1)\n"), "m", False)
    assert summary.call_methods == {"detach", "to", "reshape", "tolist", "print"}
    assert summary.call_heads == {"x", "print"}
    assert [call.method for call in summary.transfer_calls] == ["to", "tolist", "print"]
    copy = load_summary("key", dump_summary("key", summary))
    assert not copy.body_loaded  # the index is readable without the body
    assert copy.functions == summary.functions and copy.call_methods == summary.call_methods
    assert copy.calls == summary.calls  # first read decodes the body
    assert copy.body_loaded and copy == summary


def test_renamed_transfer_import_is_in_the_index() -> None:
    text = "from cupy import asnumpy as to_host\n\ndef f(a):\n    return to_host(a)\n"
    summary = scan_python(SourceFile.from_text("m.py", text), "m", False)
    assert [call.func for call in summary.transfer_calls] == ["to_host"]


def test_many_files_scan_in_parallel_with_the_same_summaries(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": ""}
    for number in range(PARALLEL_SCAN_LIMIT + 6):
        files[f"pkg/m{number}.py"] = f"import torch\n\ndef f{number}(x):\n    return x.item() + {number}\n"
    sources = [SourceFile.from_text(path, text) for path, text in sorted(files.items())]
    store = Store(tmp_path / "cache")
    parallel = Program(Project(root=tmp_path, files=sources, cache=store), ProgramSettings())
    assert len(list((tmp_path / "cache").glob("v1/*/*.summary"))) == len(files)
    serial = Program(Project(root=tmp_path / "other", files=sources), ProgramSettings(), use_cache=False)
    assert parallel.modules.keys() == serial.modules.keys()
    for name, module in serial.modules.items():
        assert parallel.modules[name].summary == module.summary
    cached = Program(Project(root=tmp_path, files=sources, cache=store), ProgramSettings())
    assert not cached.cache.dirty  # every summary came back from the cache
    assert not any(module.summary.body_loaded for module in cached.modules.values())


def test_a_pandas_like_tree_needs_few_bodies(tmp_path: Path) -> None:
    """Without torch, CuPy, kernels or capture, the analyses never decode a module's body."""
    files = {
        "lib/__init__.py": "from lib.core import frame\n",
        "lib/core/__init__.py": "",
        "lib/core/frame.py": "import numpy as np\n\ndef total(values):\n    with open('x') as f:\n        return float(values.sum()), values.tolist(), {}.get('k')\n",
    }
    sources = [SourceFile.from_text(path, text) for path, text in sorted(files.items())]
    store = Store(tmp_path / "cache")
    Program(Project(root=tmp_path, files=sources, cache=store), ProgramSettings())
    analysis = analysis_for(Project(root=tmp_path, files=sources, cache=store))
    hot, kernels, imports = analysis.hot, analysis.kernels, analysis.imports
    assert [site.kind for site in hot.sites] == [".tolist()"] and not kernels.rows and imports.rows
    assert not any(module.summary.body_loaded for module in analysis.program.modules.values())


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_unconfigured_library_derives_its_entry_points(tmp_path: Path, monkeypatch) -> None:
    """No `[tool.foxaudit.program]`: tests by pytest's naming, the distribution's package and
    top-level scripts are entries; only a module none of them reaches is an orphan."""
    monkeypatch.setenv("FOXAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _write(tmp_path / "repo", {
        "pyproject.toml": "[project]\nname = 'my-lib'\nversion = '1'\n",
        "my_lib/__init__.py": "from my_lib import _impl\n",
        "my_lib/_impl.py": "def f():\n    return 1\n",
        "my_lib/_unused.py": "def g():\n    return 2\n",
        "my_lib/_tested.py": "def h():\n    return 3\n",
        "my_lib/tests/test_h.py": "from my_lib._tested import h\n\ndef test_h():\n    assert h() == 3\n",
        "generate_version.py": "def main():\n    print(1)\n\nmain()\n",
    })  # fmt: skip
    analysis = analysis_for(load_project(root))
    rows = {row.name: (row.status, row.via) for row in analysis.imports.rows}
    assert rows["my_lib._impl"][0] == "Wired"
    assert rows["my_lib._tested"][0] == "Partial"
    assert rows["generate_version"][0] == "Wired"
    assert [d.message.split(" (")[0] for d in findings(analysis, "FX201")] == ["orphan module `my_lib._unused`"]


def test_no_entry_point_at_all_is_said_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FOXAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    # No package (a regular package at the top would be a library's API), no script, no test.
    root = _write(tmp_path / "repo", {
        "lib/a.py": "import os\n",
        "lib/b.py": "def f(x):\n    return x + 1\n",
        "lib/c.py": "from lib.b import f\n",
    })  # fmt: skip
    found = findings(analysis_for(load_project(root)), "FX201")
    assert len(found) == 1
    assert found[0].path == "lib/a.py" and found[0].line == 1
    assert found[0].message.startswith("orphan-module analysis skipped: no entry point found for 3 modules (0 vs")
    assert "entry-points" in found[0].hint


def test_configured_entry_keys_turn_derivation_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FOXAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    root = _write(tmp_path / "repo", {
        "pyproject.toml": "[project]\nname = 'pkg'\nversion = '1'\n\n[tool.foxaudit.program]\ntest-roots = ['checks']\n",
        "pkg/__init__.py": "",
        "pkg/a.py": "X = 1\n",
        "checks/test_a.py": "import pkg.a\n",
        "pkg/tests/test_b.py": "import pkg\n",
    })  # fmt: skip
    rows = {row.name: row.status for row in analysis_for(load_project(root)).imports.rows}
    assert rows["pkg.a"] == "Partial"  # reached from the configured test root only
    assert rows["pkg.tests.test_b"] == "Orphan"  # not a test root here: nothing derived


def test_derived_entry_points_are_read_from_the_index(tmp_path: Path) -> None:
    """An unconfigured repository's scripts (a call at import, a command line parsed at import)
    are found from the summaries' index: from the cache, no module's body is decoded."""
    root = _write(tmp_path / "repo", {
        "pyproject.toml": "[project]\nname = 'my-lib'\nversion = '1'\n",
        "my_lib/__init__.py": "",
        "my_lib/_helpers.py": "def f():\n    return 1\n",
        "my_lib/_cli.py": "import argparse\n\nargs = argparse.ArgumentParser().parse_args()\n",
        "generate_version.py": "def main():\n    print(1)\n\nmain()\n",
        "bound_only.py": "import os\n\nHERE = os.getcwd()\n",
    })  # fmt: skip
    analysis_for(load_project(root, tmp_path / "cache"))  # fills the cache
    analysis = analysis_for(load_project(root, tmp_path / "cache"))
    assert not analysis.program.cache.dirty  # every summary came from the cache
    rows = {row.name: row.via for row in analysis.imports.rows}
    assert rows["generate_version"] == "entry: top-level script (runs a call at import)"
    assert rows["my_lib._cli"].startswith("entry: script (parses its command line at import")
    assert rows["bound_only"] == "no entry point reaches it"  # its only call is bound to a name
    assert not any(module.summary.body_loaded for module in analysis.program.modules.values())


def test_a_generated_table_is_summarised_not_expanded() -> None:
    """A literal of more than _MAX_ITEMS elements is data: one "large" Arg, no dict entries
    from inside it; small literals are expanded as before."""
    rows = "".join(f"    ({number}, 'symbol_{number}', {{'bid': {number}}}),\n" for number in range(_MAX_ITEMS + 1))
    text = f"TABLE = [\n{rows}]\nNAMES = ['a', 'b']\nLOOKUP = {{'k': 1}}\n"
    summary = scan_python(SourceFile.from_text("m.py", text), "m", False)
    table = summary.constants["TABLE"]
    assert (table.kind, table.value) == ("large", None) and table.text.startswith("[\n    (0, 'symbol_0'")
    assert [assignment.value.kind for assignment in summary.assignments] == ["large", "list", "other"]
    assert [item.value for item in summary.constants["NAMES"].value] == ["a", "b"]
    assert [entry.key for entry in summary.dict_entries] == ["k"]
    assert len(dump_summary("key", summary)) < 5_000


def test_scanned_records_have_every_field() -> None:
    """The scanner builds records without their __init__ (speed): rebuilt through it, each is equal."""
    text = (
        "import os\nfrom .x import y as z\n\n@dec(1)\nclass A(B):\n    n: int = 0\n\n"
        "    def f(self, a: int, *r, k=2):\n        with ctx() as c, other:\n            self.v = g(a, [1, 'b'], k=-1.5)\n"
        "        buf[0] = 1\n        buf[i] += 2\n        return {'key': a}\n"
    )
    summary = scan_python(SourceFile.from_text("pkg/m.py", text), "pkg.m", False)
    seen = 0
    pending: list[object] = [summary.imports, summary.functions, summary.classes, summary.withs, summary.calls,
                             summary.assignments, summary.subscript_writes, summary.dict_entries, summary.constants]  # fmt: skip
    while pending:
        value = pending.pop()
        if type(value) is Span:
            # A tuple record: made with tuple.__new__, equal to one made through its constructor.
            assert Span(*value) == value and all(type(number) is int for number in value)
            seen += 1
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif dataclasses.is_dataclass(value):
            assert dataclasses.replace(value) == value  # type: ignore[type-var]
            pending.extend(getattr(value, field.name) for field in dataclasses.fields(value))
            seen += 1
    assert seen > 30
