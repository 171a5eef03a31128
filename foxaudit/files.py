"""Atomic file writes: the one way foxaudit writes caches, fixed sources and generated docs.

Why: a fixed source file, a generated audit doc or a cache entry must never be seen half-written —
by a concurrent run sharing the cache, or after a crash. Each write goes to a temporary file in the
target's directory (same filesystem), gets its final permissions (mkstemp creates 0600 files; docs
and caches shared between users need 0644, a fixed source keeps its own mode), and is renamed over
the target with ``os.replace``. On any error the temporary file is removed and the target is left
as it was. Standard library only: this module sits at the bottom layer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

READABLE_MODE = 0o644


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = READABLE_MODE) -> None:
    """Replace ``path`` with ``data``; the parent directory must exist."""
    write_chunks_atomic(path, (data,), mode=mode)


def write_chunks_atomic(path: str | os.PathLike[str], chunks: Iterable[bytes], *, mode: int = READABLE_MODE) -> None:
    """Replace ``path`` with the concatenation of ``chunks`` (a cache pack's entries: written
    without first joining them into one more copy of them all)."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".foxaudit-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.writelines(chunks)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str, *, mode: int = READABLE_MODE) -> None:
    """``write_bytes_atomic`` of UTF-8 text, newlines written as given (no platform translation)."""
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode)
