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
