"""A finding's identity across edits: what SARIF's ``partialFingerprints`` and the baseline use.

The fingerprint hashes the rule code, the path and the flagged line's text with its whitespace
collapsed — not the line number — plus an occurrence counter among findings with the same hash
(two identical `atomicAdd(total, v);` lines in one file are two findings). Moving code up or
down, or editing other lines, keeps every fingerprint; editing the flagged line makes it new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from foxaudit.diagnostics import Diagnostic


def fingerprints(diagnostics: Iterable[Diagnostic], root: Path) -> Iterator[tuple[Diagnostic, str]]:
    """(diagnostic, ``<hash>:<occurrence>``) in the order given (sorted diagnostics give stable counters)."""
    lines = LineReader(root)
    occurrences: dict[str, int] = {}
    for diagnostic in diagnostics:
        text = " ".join(lines.get(diagnostic.path, diagnostic.line).split())
        base = hashlib.sha256(f"{diagnostic.code}\0{diagnostic.path}\0{text}".encode()).hexdigest()[:32]
        occurrence = occurrences.get(base, 0) + 1
        occurrences[base] = occurrence
        yield diagnostic, f"{base}:{occurrence}"


class LineReader:
    """Line text of repository files, read once per file."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, list[str]] = {}

    def get(self, path: str, line: int) -> str:
        if path not in self.files:
            try:
                self.files[path] = (self.root / path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self.files[path] = []
        content = self.files[path]
        return content[line - 1] if 0 < line <= len(content) else ""
