"""The snapshot answers for a file's key only under the codes it was recorded with."""

from __future__ import annotations

import time

from foxaudit.config import Settings
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import RACY_NS, check


def _codes(root, cache, **settings) -> list[tuple[str, str]]:
    result = check(resolve(Settings(root=root, select=("FX001", "FX099"), **settings)), cache_dir=cache)
    return [(d.path, d.code) for d in result.diagnostics]


def test_per_file_ignores_change_the_codes_of_files_the_snapshot_trusts(project, tmp_path, magic_rule):
    root = project({"a.py": "x = 42\n", "b.py": "y = 42\n"})
    cache = tmp_path / "c"
    # Only stamps older than the racy window are recorded (and then trusted without reading).
    time.sleep(RACY_NS / 1e9 + 0.2)
    both = [("a.py", "FX099"), ("b.py", "FX099")]
    assert _codes(root, cache) == both
    assert _codes(root, cache) == both  # from the snapshot, nothing read
    assert _codes(root, cache, per_file_ignores=(("a.py", ("FX099",)),)) == [("b.py", "FX099")]
    assert _codes(root, cache) == both


def test_graph_input_files_are_read_again_only_when_their_stamp_moves(tmp_path, monkeypatch):
    """FastAPI keeps 1,692 documentation pages (12.5 MB): reading them on every warm run cost
    0.22 s. What they include is recorded against each page's stat stamp, so a warm run opens
    none; an edited page is read again, and a record that is no usable data is ignored."""
    from foxaudit.engine import project as engine_project
    from foxaudit.engine import run
    from foxaudit.engine.discovery import Discovered
    from foxaudit.store import Store

    monkeypatch.setattr(run, "RACY_NS", -10**15)  # trust stamps at once
    page = tmp_path / "docs" / "body.md"
    page.parent.mkdir()
    page.write_text("{* ../docs_src/a.py hl[2] *}\n")
    read: list[bytes] = []
    original = engine_project.documentation_includes
    monkeypatch.setattr(engine_project, "documentation_includes", lambda data: read.append(data) or original(data))
    listed = [Discovered(str(page), "docs/body.md")]
    store = Store(tmp_path / "cache")
    expected = {"docs/body.md": ((1, "path:../docs_src/a.py"),)}
    assert engine_project.read_config_targets(listed, store) == expected and len(read) == 1
    assert engine_project.read_config_targets(listed, store) == expected and len(read) == 1
    page.write_text("{* ../docs_src/b.py *}\n\n")
    assert engine_project.read_config_targets(listed, store) == {"docs/body.md": ((1, "path:../docs_src/b.py"),)}
    assert len(read) == 2
    stamp = [10, 1, 1, 7]
    assert engine_project._recorded_targets([*stamp, [[1, "path:x.py"]]], stamp) == ((1, "path:x.py"),)
    for memo in ([*stamp, [["1", "path:x.py"]]], [*stamp, "path:x.py"], [11, 1, 1, 7, []], {"x": 1}, None):
        assert engine_project._recorded_targets(memo, stamp) is None
