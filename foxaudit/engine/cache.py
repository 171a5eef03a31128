"""Content-addressed result cache: one small JSON file per key, written atomically.

A key is the sha256 of the run's fingerprint (tool version and source, enabled codes, typed
options, rule dependencies), the file's repository-relative path, the codes enabled for it and
the sha256 of its bytes. No mtime anywhere: a fresh CI checkout or a copy of the project in
another directory hits. Entries hold the file's diagnostics (not only "clean"), so a warm run
never parses (and when nothing changed, the runner's per-project snapshot entry answers with
one read). Two runs may share the directory: every write goes to a temporary file in the
same directory and is renamed into place (``os.replace`` is atomic), and a reader that finds a
half-written or corrupt entry treats it as a miss.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.store import (
    CACHE_VERSION,
    DEFAULT_DIRNAME,
    ENV_VAR,
    Store,
    cache_directory,
)

# The run's one cache (shared with the whole-program summaries): see foxaudit.store.
Cache = Store
__all__ = ["CACHE_VERSION", "DEFAULT_DIRNAME", "ENV_VAR", "Cache", "cache_directory", "file_key"]


def file_key(run_fingerprint: str, relative: str, codes: frozenset[str], content_digest: bytes) -> str:
    digest = hashlib.sha256()
    digest.update(run_fingerprint.encode())
    digest.update(b"\0")
    digest.update(relative.encode("utf-8", errors="surrogateescape"))
    digest.update(b"\0")
    digest.update(_codes_text(codes))
    digest.update(b"\0")
    digest.update(content_digest)
    return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def _codes_text(codes: frozenset[str]) -> bytes:
    """The enabled codes as keyed (a run has a handful of distinct sets, one per file pattern)."""
    return ",".join(sorted(codes)).encode()


def encode_diagnostics(diagnostics: list[Diagnostic]) -> list[list[Any]]:
    return [
        [
            d.line,
            d.column,
            d.end_line,
            d.end_column,
            d.code,
            d.message,
            d.hint,
            [[e.line, e.column, e.end_line, e.end_column, e.replacement] for e in d.edits],
        ]
        for d in diagnostics
    ]


_new = object.__new__


def decode_diagnostics(path: str, rows: list[list[Any]]) -> list[Diagnostic]:
    found = []
    for row in rows:
        line, column, end_line, end_column, code, message, hint, edits = row
        diagnostic = _new(Diagnostic)
        # What Diagnostic's generated __init__ stores, without its object.__setattr__ per field
        # (it is frozen): a warm run rebuilds every cached finding (1,111 on pandas).
        diagnostic.__dict__.update(
            path=path, line=line, column=column, code=code, message=message, end_line=end_line,
            end_column=end_column, hint=hint, edits=tuple(Edit(*edit) for edit in edits) if edits else (),
        )  # fmt: skip
        found.append(diagnostic)
    return found


def encode_pending(pending: list[tuple[Diagnostic, tuple[str, ...]]]) -> list[list[Any]]:
    """Findings the whole-project pass confirms: each diagnostic's row, then its facts."""
    rows = encode_diagnostics([diagnostic for diagnostic, _ in pending])
    return [[*row, list(facts)] for row, (_, facts) in zip(rows, pending)]


def decode_pending(path: str, rows: list[list[Any]]) -> list[tuple[Diagnostic, tuple[str, ...]]]:
    diagnostics = decode_diagnostics(path, [row[:-1] for row in rows])
    return [(diagnostic, tuple(str(fact) for fact in row[-1])) for diagnostic, row in zip(diagnostics, rows)]


def encode_project(diagnostics: list[Diagnostic]) -> list[list[Any]]:
    return [[d.path, *row] for d, row in zip(diagnostics, encode_diagnostics(diagnostics))]


def decode_project(rows: list[list[Any]]) -> list[Diagnostic]:
    return [decode_diagnostics(row[0], [row[1:]])[0] for row in rows]
