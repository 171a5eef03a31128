"""``--fix``: apply diagnostics' edits, per file, atomically.

Edits come in groups (one diagnostic's edits apply together or not at all). Groups are taken
in source order; a group that overlaps one already taken waits for the next round (the runner
re-checks and fixes again until nothing changes). A file that changed since it was checked is
left alone.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.files import write_bytes_atomic
from foxaudit.sources.base import declared_encoding


def plan_edits(diagnostics: Iterable[Diagnostic]) -> tuple[list[Edit], int]:
    """Non-overlapping edits of one file, and how many diagnostics they fix."""
    groups = sorted((tuple(sorted(d.edits)) for d in diagnostics if d.edits), key=lambda group: group[0])
    taken: list[Edit] = []
    fixed = 0
    for group in groups:
        # An edit identical to one already taken (e.g. the same import line that several
        # findings need) is shared, not a conflict: keep one copy and let the group through.
        group = tuple(edit for edit in group if edit not in taken)
        if any(_overlaps(edit, other) for edit in group for other in taken):
            continue
        if any(_overlaps(a, b) for index, a in enumerate(group) for b in group[index + 1 :]):
            continue
        taken.extend(group)
        fixed += 1
    taken.sort()
    return taken, fixed


def _overlaps(a: Edit, b: Edit) -> bool:
    a_start, a_end = (a.line, a.column), (a.end_line, a.end_column)
    b_start, b_end = (b.line, b.column), (b.end_line, b.end_column)
    if a_start == a_end == b_start == b_end:
        return True  # two insertions at one point: order would be arbitrary
    return a_start < b_end and b_start < a_end


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with the (sorted, non-overlapping) edits applied; positions are 1-based characters."""
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)

    def offset(line: int, column: int) -> int:
        if line > len(starts):
            return len(text)
        return min(starts[line - 1] + column - 1, len(text))

    pieces: list[str] = []
    cursor = 0
    for edit in edits:
        begin = offset(edit.line, edit.column)
        end = offset(edit.end_line, edit.end_column)
        pieces.append(text[cursor:begin])
        pieces.append(edit.replacement)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def fix_file(path: str, expected_digest: bytes, diagnostics: list[Diagnostic]) -> int:
    """Apply the fixable diagnostics of one file; returns how many were fixed (0 if it changed)."""
    edits, fixed = plan_edits(diagnostics)
    if not edits:
        return 0
    with open(path, "rb") as handle:
        data = handle.read()
    if hashlib.sha256(data).digest() != expected_digest:
        return 0
    # Written back in the encoding the file declares (PEP 263), as CPython will read it.
    encoding = declared_encoding(data) if path.endswith((".py", ".pyi")) else "utf-8"
    text = data.decode(encoding)
    # Diagnostics count columns without a byte-order mark (see analyze.py); keep the mark as it was.
    mark = "\ufeff" if text.startswith("\ufeff") else ""
    updated = mark + apply_edits(text[len(mark):], edits)
    if updated == text:
        return 0
    write_atomic(path, updated.encode(encoding))
    return fixed


def write_atomic(path: str, data: bytes) -> None:
    """Replace the source file ``path`` with ``data`` atomically, keeping its mode."""
    write_bytes_atomic(path, data, mode=stat.S_IMODE(os.stat(path).st_mode))
