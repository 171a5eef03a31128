"""The one cache directory of a run: content-addressed entries of plain data, written atomically.

Both passes keep their entries here — the per-file results (``foxaudit.engine.cache``) and the
whole-program summaries (``foxaudit.program.model``) — under ``<directory>/v1/<key[:2]>/<key>``.
The directory is ``--cache-dir``, else ``$FOXAUDIT_CACHE_DIR``, else ``<root>/.foxaudit_cache``;
``--no-cache`` means no ``Store`` at all, so nothing is read or written by either pass.

Why data only: entry names are hashes of public inputs (a path and file content), so anyone who
can commit to the repository can plant an entry under the name another user's run will read. An
entry is therefore only ever parsed as JSON (and checked against its key) — never unpickled,
evaluated or imported — so a planted file can at worst produce wrong findings, never run code.

Sharing: every write goes to a temporary file in the entry's directory and is renamed into place,
so concurrent runs (CI jobs sharing one cache) never see a half-written entry; a corrupt or
foreign entry reads as a miss. The directory gets a ``.gitignore`` (``*``) and a ``CACHEDIR.TAG``
the first time anything is written, wherever it lives, so it never shows in ``git status``.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from foxaudit.files import write_bytes_atomic

CACHE_VERSION = "v1"
ENV_VAR = "FOXAUDIT_CACHE_DIR"
DEFAULT_DIRNAME = ".foxaudit_cache"
GITIGNORE = b"# created by foxaudit\n*\n"
CACHEDIR_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n"


def cache_directory(root: Path, override: str | os.PathLike[str] | None = None) -> Path:
    """--cache-dir, else $FOXAUDIT_CACHE_DIR, else <root>/.foxaudit_cache."""
    if override:
        return Path(override)
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env)
    return root / DEFAULT_DIRNAME


class Store:
    """Get/put entries by key (a hex digest) under ``<directory>/v1/<key[:2]>/<key><suffix>``.

    JSON entries (``get``/``put``) carry their key inside, so a file copied under another name
    is a miss. Byte entries (``get_bytes``/``put_bytes``) are for callers with their own
    data-only format that embeds and checks the key.
    """

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._base = self.directory / CACHE_VERSION
        self._made: set[str] = set()

    def path(self, key: str, suffix: str = ".json") -> str:
        return os.path.join(self._base, key[:2], key + suffix)

    def get(self, key: str) -> dict[str, Any] | None:
        data = self.get_bytes(key, ".json")
        if data is None:
            return None
        try:
            payload = json.loads(data)
        except ValueError:
            return None
        return payload if isinstance(payload, dict) and payload.get("k") == key else None

    def put(self, key: str, payload: dict[str, Any]) -> None:
        """Write atomically; a cache that cannot be written only costs speed, never the run."""
        self.put_bytes(key, json.dumps({**payload, "k": key}, separators=(",", ":")).encode(), ".json")

    def get_bytes(self, key: str, suffix: str) -> bytes | None:
        try:
            with open(self.path(key, suffix), "rb") as handle:
                return handle.read()
        except OSError:
            return None

    def put_bytes(self, key: str, data: bytes, suffix: str) -> None:
        folder = os.path.join(self._base, key[:2])
        try:
            if folder not in self._made:
                self._prepare(folder)
                self._made.add(folder)
            # Readable by every user (write_bytes_atomic's 0644): CI runners may share one cache.
            write_bytes_atomic(self.path(key, suffix), data)
        except OSError:
            return

    def _prepare(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        marker = self.directory / ".gitignore"
        if not marker.exists():
            # Keep the cache out of `git status` wherever it lives.
            with contextlib.suppress(OSError):
                write_bytes_atomic(marker, GITIGNORE)
                write_bytes_atomic(self.directory / "CACHEDIR.TAG", CACHEDIR_TAG)
