"""Atomic file writes, the one way the trainer writes what a user or a later run reads.

Why: a checkpoint, a feature cache, metrics.json, a plot or the generated CUDA header must never be
seen half-written — not by a concurrent reader, not after a crash. Every write goes to a temporary
file in the target's directory (same filesystem), is flushed to disk, made world-readable (mkstemp
creates 0600 files; caches and outputs are shared), and renamed over the target with ``os.replace``.
This module sits at the bottom layer and imports only the standard library.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READABLE_MODE = 0o644


@contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block succeeds, move it over ``path``.

    For writers that want a file name (``savefig``, ``to_csv``); on any error the temporary file is
    removed and ``path`` is left as it was.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    except OSError as error:
        raise _naming(error, target) from error
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, READABLE_MODE)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise _naming(error, target) from error
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _naming(error: OSError, target: Path) -> OSError:
    """The same error (same errno, so the same OSError subclass) naming the file the user asked for.

    A failed ``write`` carries no file name at all, and a failed ``mkstemp`` names the temporary;
    the user needs to know which of their files could not be written.
    """
    if error.errno is None:
        return error
    return OSError(error.errno, error.strerror, str(target))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically and durably (fsync before the rename)."""
    with atomic_path(path) as temporary, open(temporary, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """``write_bytes_atomic`` of UTF-8 text, newlines written as given."""
    write_bytes_atomic(path, text.encode("utf-8"))
