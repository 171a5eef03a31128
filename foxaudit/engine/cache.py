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

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.files import write_bytes_atomic

CACHE_VERSION = "v1"
ENV_VAR = "FOXAUDIT_CACHE_DIR"
DEFAULT_DIRNAME = ".foxaudit_cache"


def cache_directory(root: Path, override: str | os.PathLike[str] | None = None) -> Path:
    """--cache-dir, else $FOXAUDIT_CACHE_DIR, else <root>/.foxaudit_cache."""
    if override:
        return Path(override)
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env)
    return root / DEFAULT_DIRNAME


def file_key(run_fingerprint: str, relative: str, codes: frozenset[str], content_digest: bytes) -> str:
    digest = hashlib.sha256()
    digest.update(run_fingerprint.encode())
    digest.update(b"\0")
    digest.update(relative.encode("utf-8", errors="surrogateescape"))
    digest.update(b"\0")
    digest.update(",".join(sorted(codes)).encode())
    digest.update(b"\0")
    digest.update(content_digest)
    return digest.hexdigest()


class Cache:
    """Get/put JSON payloads by key under ``<directory>/v1/<key[:2]>/<key>.json``."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._base = self.directory / CACHE_VERSION
        self._made: set[str] = set()

    def _path(self, key: str) -> str:
        return os.path.join(self._base, key[:2], key + ".json")

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self._path(key), "rb") as handle:
                payload = json.loads(handle.read())
        except (OSError, ValueError):
            return None
        return payload if isinstance(payload, dict) and payload.get("k") == key else None

    def put(self, key: str, payload: dict[str, Any]) -> None:
        """Write atomically; a cache that cannot be written only costs speed, never the run."""
        payload = {**payload, "k": key}
        folder = os.path.join(self._base, key[:2])
        try:
            if folder not in self._made:
                self._prepare(folder)
                self._made.add(folder)
            # Readable by every user (write_bytes_atomic's 0644): CI runners may share one cache.
            write_bytes_atomic(self._path(key), json.dumps(payload, separators=(",", ":")).encode())
        except OSError:
            return

    def _prepare(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        marker = self.directory / ".gitignore"
        if not marker.exists():
            # Keep the cache out of `git status` wherever it lives.
            _write_atomic(marker, b"# created by foxaudit\n*\n")
            _write_atomic(self.directory / "CACHEDIR.TAG", b"Signature: 8a477f597d28d172789f06886806bc55\n")


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


def decode_diagnostics(path: str, rows: list[list[Any]]) -> list[Diagnostic]:
    return [
        Diagnostic(
            path=path,
            line=row[0],
            column=row[1],
            end_line=row[2],
            end_column=row[3],
            code=row[4],
            message=row[5],
            hint=row[6],
            edits=tuple(Edit(*edit) for edit in row[7]),
        )
        for row in rows
    ]


def encode_project(diagnostics: list[Diagnostic]) -> list[list[Any]]:
    return [[d.path, *row] for d, row in zip(diagnostics, encode_diagnostics(diagnostics))]


def decode_project(rows: list[list[Any]]) -> list[Diagnostic]:
    return [decode_diagnostics(row[0], [row[1:]])[0] for row in rows]


def _write_atomic(path: Path, data: bytes) -> None:
    """A cache file that cannot be written only costs speed: errors are swallowed."""
    with contextlib.suppress(OSError):
        write_bytes_atomic(path, data)
