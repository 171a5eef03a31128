"""Atomic writes: the target is either the old file or the whole new one, never a fragment."""

from __future__ import annotations

import stat

import pytest

from trainer.files import atomic_path, write_bytes_atomic, write_text_atomic


def test_write_replaces_the_file_readably_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "metrics.json"
    write_text_atomic(target, "{}\n")
    write_bytes_atomic(target, b'{"a": 1}\n')
    assert target.read_bytes() == b'{"a": 1}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # mkstemp's 0600 would hide shared outputs
    assert [p.name for p in target.parent.iterdir()] == ["metrics.json"]


def test_a_failing_writer_keeps_the_old_file_and_removes_its_temporary(tmp_path):
    target = tmp_path / "plot.png"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="render failed"), atomic_path(target, suffix=".png") as temporary:
        temporary.write_bytes(b"half")
        raise RuntimeError("render failed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]
