"""The one cache directory of a run: content-addressed entries of plain data, written atomically.

Both passes keep their entries here — the per-file results (``foxaudit.engine.cache``) and the
whole-program summaries (``foxaudit.program.model``) — under ``<directory>/v1/<key[:2]>/<key>``,
or, for the many entries of a cold run, packed into one file ``<directory>/v1/packs/<sha256>.pack``
(``Store.batch``): creating a file cost 0.05–0.6 ms of system time on the machines measured, and
a cold run on pandas made ≈ 2,900 of them, one result and one summary per source file.
The directory is ``--cache-dir``, else ``$FOXAUDIT_CACHE_DIR``, else ``<root>/.foxaudit_cache``;
``--no-cache`` means no ``Store`` at all, so nothing is read or written by either pass.

Why data only: entry names are hashes of public inputs (a path and file content), so anyone who
can commit to the repository can plant an entry under the name another user's run will read. An
entry is therefore only ever parsed as JSON (and checked against its key) — never unpickled,
evaluated or imported — so a planted file can at worst produce wrong findings, never run code.

Sharing: every write goes to a temporary file in the entry's directory and is renamed into place,
so concurrent runs (CI jobs sharing one cache) never see a half-written entry; a corrupt or
foreign entry reads as a miss. A pack is written the same way, and its name is the digest of its
bytes (its entries sorted by name), so two runs packing the same entries write the same file. A
pack is data too: a header line, a JSON index ``{name + suffix: [offset, length]}`` (the entry's
file name, as it would be on its own), then the entries as they would be in files of their own (each still carries and is checked against its
key); a pack that does not parse is skipped whole, a row outside its bytes is a miss. The
directory gets a ``.gitignore`` (``*``) and a ``CACHEDIR.TAG`` the first time anything is written,
wherever it lives, so it never shows in ``git status``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from foxaudit.files import write_bytes_atomic, write_chunks_atomic

CACHE_VERSION = "v1"
ENV_VAR = "FOXAUDIT_CACHE_DIR"
DEFAULT_DIRNAME = ".foxaudit_cache"
GITIGNORE = b"# created by foxaudit\n*\n"
CACHEDIR_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n"
PACKS = "packs"
PACK_MAGIC = b"foxaudit-pack 1\n"
# Fewer entries than this in a batch are written as files of their own (an edit's one or two):
# a pack is read whole-index by the next run that misses a file entry, so it should be worth it.
PACK_MIN = 32
# Packs read per run (the newest by mtime): each is one more index to parse on a file-entry miss
# (≈ 1.2 ms for pandas' 2,900 entries), and a cache that outlives many cold runs keeps packs no
# current file needs. An entry in an older pack is a miss (it is made again): a cache shared by
# more trees than this loses speed, never a finding.
PACKS_READ = 32


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
        # (name, suffix) → entry bytes put while a batch is open (None: no batch open).
        self._pending: dict[tuple[str, str], bytes] | None = None
        # The packs, newest first, read on the first file-entry miss (None: not yet).
        self._packed: list[_Pack] | None = None

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
        if self._pending is not None and (key, suffix) in self._pending:
            return self._pending[(key, suffix)]
        try:
            with open(self.path(key, suffix), "rb") as handle:
                return handle.read()
        except OSError:
            return self.packed(key, suffix)

    def packed(self, key: str, suffix: str) -> bytes | None:
        """The entry's bytes from a pack; None when no pack read holds it."""
        if self._packed is None:
            self._packed = self._read_packs()
        name = key + suffix
        for pack in self._packed:
            found = pack.get(name)
            if found is not None:
                return found
        return None

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the entries put meanwhile and write them at the end: as one pack when there are
        ``PACK_MIN`` or more (a cold run's), else each as a file. Entries are content-addressed,
        so holding them back changes nothing another run could read, only when it can."""
        if self._pending is not None:  # nested: the outer batch writes
            yield
            return
        self._pending = {}
        try:
            yield
        finally:
            pending, self._pending = self._pending, None
            if len(pending) >= PACK_MIN:
                self._write_pack(pending)
            else:
                for (key, suffix), data in pending.items():
                    self.put_bytes(key, data, suffix)

    def _write_pack(self, entries: dict[tuple[str, str], bytes]) -> None:
        index: dict[str, list[int]] = {}
        chunks, offset = [], 0
        for (key, suffix), data in sorted(entries.items()):
            index[key + suffix] = [offset, len(data)]
            chunks.append(data)
            offset += len(data)
        head = json.dumps(index, separators=(",", ":")).encode()
        parts = [PACK_MAGIC, str(len(head)).encode(), b"\n", head, b"\n", *chunks]
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
        folder = os.path.join(self._base, PACKS)
        try:
            if folder not in self._made:
                self._prepare(folder)
                self._made.add(folder)
            write_chunks_atomic(os.path.join(folder, digest.hexdigest() + ".pack"), parts)
        except OSError:
            return
        # The packs already read do not hold these entries: read them again on the next miss.
        self._packed = None

    def _read_packs(self) -> list[_Pack]:
        try:
            with os.scandir(os.path.join(self._base, PACKS)) as found:
                packs = [(entry.stat().st_mtime_ns, entry.path) for entry in found if entry.name.endswith(".pack") and entry.is_file()]
        except OSError:
            return []
        newest = [_Pack(path) for _, path in sorted(packs, reverse=True)[:PACKS_READ]]
        return [pack for pack in newest if pack.read_index()]

    def put_bytes(self, key: str, data: bytes, suffix: str) -> None:
        if self._pending is not None:
            self._pending[(key, suffix)] = data
            return
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


# A pack's entries are read one by one up to this many, then its data is read whole: a run that
# reads a few (`foxaudit check FILES`, a new file set) should not read 17 MB for them, one that
# reads many (the program build after an edit reads every summary) should not open it per entry.
_SINGLE_READS = 32


class _Pack:
    """One pack file: its index is read when opened (``read_index``), its entries when read (``get``)."""

    def __init__(self, path: str):
        self.path = path
        self._index: dict[str, Any] = {}
        self._start = -1
        self._size = 0
        self._data: bytes | None = None
        self._reads = 0

    def read_index(self) -> bool:
        """Read the index; False for a pack that does not parse (the cache is data anyone may
        have written: checked, not trusted). Its rows are checked when read (``get``): the index
        is one JSON object, decoded without a Python loop over its ≈ 2,900 rows."""
        try:
            with open(self.path, "rb") as handle:
                total = os.fstat(handle.fileno()).st_size
                if handle.read(len(PACK_MAGIC)) != PACK_MAGIC:
                    return False
                size = handle.readline(24)
                if not size.endswith(b"\n") or not size[:-1].isdigit() or int(size) > total:
                    return False
                head = handle.read(int(size))
                if len(head) != int(size) or handle.read(1) != b"\n":
                    return False
                self._start = handle.tell()
            # (A planted index may nest deeper than the decoder recurses: that is a bad pack too.)
            index = json.loads(head)
        except (OSError, ValueError, RecursionError):
            return False
        if type(index) is not dict:
            return False
        self._index = index
        self._size = total - self._start
        return True

    def get(self, name: str) -> bytes | None:
        """The bytes of the entry whose file name would be ``name``; None when the pack has no
        such row, the row is malformed or points past the pack's end, or the bytes are gone."""
        row = self._index.get(name)
        if type(row) is not list or len(row) != 2:
            return None
        offset, length = row
        if type(offset) is not int or type(length) is not int or offset < 0 or length < 0 or offset + length > self._size:
            return None
        if self._data is None and self._reads < _SINGLE_READS:
            self._reads += 1
            try:
                with open(self.path, "rb") as handle:
                    handle.seek(self._start + offset)
                    data = handle.read(length)
            except OSError:
                return None
            return data if len(data) == length else None
        if self._data is None:
            try:
                with open(self.path, "rb") as handle:
                    handle.seek(self._start)
                    self._data = handle.read()
            except OSError:
                self._index = {}
                return None
        return self._data[offset : offset + length] if offset + length <= len(self._data) else None
