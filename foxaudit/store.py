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

Bounded (the Go build cache's policy, ``cmd/go/internal/cache``): nothing would otherwise ever be
deleted — every edit leaves entry files, every cold run a pack (17 MB on pandas). Reading an entry
stamps its mtime when it is more than ``REFRESH_S`` old (so mtime is "last used", to the hour), and
a run that wrote something ends with ``Store.prune_if_due``: after a run that wrote a pack, or
once an hour after runs that wrote single entries (a stamp file says when), ``prune`` deletes
temporary files a killed run left, packs past the ``PACKS_READ`` newest (no run reads them), any
entry unused for ``MAX_AGE_S``, then the least recently used entries while the cache holds more
than ``MAX_BYTES`` — never one used within the hour. A run that wrote nothing (a warm run, the
commit hook's) neither lists nor stats anything for it. Only plain files under ``v1/`` whose names
have the shapes this module writes are ever deleted, symbolic links are never followed, and an
entry deleted under a reader is a miss (it is made again): pruning costs speed, never a finding.
``clear`` (``foxaudit clean``) removes all of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
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
# Packs read per run (the newest by mtime, which a read refreshes: the most recently used): each is
# one more index to parse on a file-entry miss (≈ 1.2 ms for pandas' 2,900 entries), and a cache
# that outlives many cold runs keeps packs no current file needs. An entry in an older pack is a
# miss (it is made again), and ``prune`` deletes such packs: a cache shared by more trees than
# this loses speed, never a finding.
PACKS_READ = 32
# Pruning (``prune``). An entry unused this long is deleted: a project left alone over a holiday
# still hits, a branch or a tree gone for a month stops costing disk.
MAX_AGE_S = 30 * 24 * 3600
# ... and past this many bytes the least recently used go first: ≈ 30 cold runs' packs of pandas
# (17 MB each), far more than the edits of one tree write between two cold runs.
MAX_BYTES = 512 * 1024 * 1024
# A read stamps its entry's mtime ("used") when the stamp is older than this: one utime an hour
# per entry read, not one per read (a warm run reads a handful; ≈ 1 µs of fstat each otherwise).
REFRESH_S = 3600
# Runs that wrote only single entries (an edit's) prune at most this often: listing the cache costs
# a few ms per thousand files, which an edit's 0.17 s run should not pay each time.
PRUNE_INTERVAL_S = 3600
# The stamp of the last prune (its mtime), in ``v1/``.
PRUNE_STAMP = "pruned.stamp"
# A temporary file (``foxaudit.files``) older than this was left by a killed run: no write lasts an hour.
STALE_TEMPORARY_S = 3600
# The names this module writes (and so the only ones ``prune`` and ``clear`` delete): entries
# ``v1/<name[:2]>/<name><suffix>`` (a digest, perhaps behind lower-case words: ``snapshot-…``),
# packs ``v1/packs/<sha256>.pack``, and ``foxaudit.files``' temporaries beside either. Patterns,
# compiled (``re``'s cache) by the first prune: compiling them at import cost a warm run ≈ 0.3 ms.
_ENTRY_NAME = r"(?:[a-z]+-)*[0-9a-f]{32,128}\.[a-z]+"
_PACK_NAME = r"[0-9a-f]{64}\.pack"
_TEMPORARY_NAME = r"\.foxaudit-[^/]*\.tmp"


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
        # What this Store wrote, for ``prune_if_due``: single entries, a pack.
        self._wrote = False
        self._wrote_pack = False

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
        path = self.path(key, suffix)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
                _mark_used(handle.fileno(), path, os.fstat(handle.fileno()).st_mtime)
                return data
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
                pack.mark_used()
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
        self._wrote_pack = True
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
        self._wrote = True

    def prune_if_due(self) -> Pruned | None:
        """``prune`` the cache at the end of a run that wrote to it: always after a pack (a cold
        run's 17 MB; its few ms of listing are nothing beside the run), else at most once per
        ``PRUNE_INTERVAL_S``. None when not due: a run that wrote nothing returns before any
        system call, so the warm run a commit hook makes pays nothing for the bound."""
        if not (self._wrote or self._wrote_pack):
            return None
        stamp = os.path.join(self._base, PRUNE_STAMP)
        if not self._wrote_pack:
            try:
                age = time.time() - os.stat(stamp).st_mtime
            except OSError:
                age = PRUNE_INTERVAL_S  # never pruned: due
            # (A stamp from the future — a clock set back — does not postpone pruning for ever.)
            if 0 <= age < PRUNE_INTERVAL_S:
                return None
        try:
            # Stamped before the listing, so that runs ending together do not all prune.
            with open(stamp, "ab"):
                pass
            os.utime(stamp)
        except OSError:
            return None
        return prune(self.directory)

    def _prepare(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        marker = self.directory / ".gitignore"
        if not marker.exists():
            # Keep the cache out of `git status` wherever it lives.
            with contextlib.suppress(OSError):
                write_bytes_atomic(marker, GITIGNORE)
                write_bytes_atomic(self.directory / "CACHEDIR.TAG", CACHEDIR_TAG)


def _mark_used(handle: int, path: str, mtime: float) -> None:
    """Stamp an entry just read as used (its mtime, what ``prune`` orders by) when its stamp is
    more than ``REFRESH_S`` old. Through the open file where the platform can, so that a file
    replaced meanwhile is not the one stamped; an entry another user wrote may refuse: it then
    ages from when it was written."""
    if time.time() - mtime > REFRESH_S:
        with contextlib.suppress(OSError):
            os.utime(handle if os.utime in os.supports_fd else path)


# (Plain classes, not dataclasses, here and below: each @dataclass cost every run ≈ 0.3 ms at import.)
class _Found:
    """A file of the cache that ``prune`` or ``clear`` may delete, as listed."""

    __slots__ = ("mtime_ns", "path", "size")

    def __init__(self, path: str, size: int, mtime_ns: int):
        self.path, self.size, self.mtime_ns = path, size, mtime_ns


class _Listing:
    """The files under ``v1/`` by kind; ``foreign``: files and folders of no shape this module
    writes (``clear`` reports them); ``folders``: the ones listed."""

    def __init__(self) -> None:
        self.entries: list[_Found] = []
        self.packs: list[_Found] = []
        self.temporaries: list[_Found] = []
        self.foreign: list[str] = []
        self.folders: list[str] = []


def _list(base: str) -> _Listing:
    """Every file under ``base`` (``<directory>/v1``) that foxaudit wrote, by kind. One level of
    folders, never through a symbolic link: a link planted as ``v1/ab`` must not lead a prune
    into another directory. Raises OSError when ``base`` cannot be listed (``clear`` reports it;
    ``prune`` treats it as nothing to prune)."""
    listing = _Listing()
    with os.scandir(base) as top:
        for item in top:
            if item.is_dir(follow_symlinks=False) and (item.name == PACKS or len(item.name) == 2):
                listing.folders.append(item.path)
                _list_folder(item.path, item.name, listing)
            elif item.name == PRUNE_STAMP and item.is_file(follow_symlinks=False):
                continue
            else:
                listing.foreign.append(item.path)
    return listing


def _list_folder(folder: str, name: str, listing: _Listing) -> None:
    try:
        found = os.scandir(folder)
    except FileNotFoundError:
        return  # removed meanwhile by another run's ``clear``
    with found:
        for item in found:
            if not item.is_file(follow_symlinks=False):
                listing.foreign.append(item.path)
                continue
            if re.fullmatch(_TEMPORARY_NAME, item.name):
                kind = listing.temporaries
            elif name == PACKS and re.fullmatch(_PACK_NAME, item.name):
                kind = listing.packs
            elif name != PACKS and item.name.startswith(name) and re.fullmatch(_ENTRY_NAME, item.name):
                kind = listing.entries
            else:
                listing.foreign.append(item.path)
                continue
            try:
                status = item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            kind.append(_Found(item.path, status.st_size, status.st_mtime_ns))


class Pruned:
    """What one ``prune`` did: files and bytes deleted, files and bytes the cache still holds."""

    def __init__(self) -> None:
        self.removed = self.freed = self.kept = self.size = 0

    def __repr__(self) -> str:
        return f"Pruned(removed={self.removed}, freed={self.freed}, kept={self.kept}, size={self.size})"


def prune(
    directory: str | os.PathLike[str], *, now: float | None = None, max_bytes: int = MAX_BYTES, max_age_s: float = MAX_AGE_S
) -> Pruned:
    """Delete, under ``<directory>/v1`` only, in this order: temporary files older than
    ``STALE_TEMPORARY_S``; packs past the ``PACKS_READ`` newest; entries and packs unused (by
    mtime) for ``max_age_s``; then the least recently used while more than ``max_bytes`` are
    kept, sparing those used within ``REFRESH_S`` (this run's, a concurrent run's: a pack larger
    than the budget stays rather than be made again by every run). Never raises: a file that
    cannot be deleted (another user's) is kept, one deleted meanwhile by another run is gone."""
    now_ns = int((time.time() if now is None else now) * 1e9)
    pruned = Pruned()
    try:
        listing = _list(os.path.join(directory, CACHE_VERSION))
    except OSError:
        return pruned
    for temporary in listing.temporaries:
        if now_ns - temporary.mtime_ns > STALE_TEMPORARY_S * 1e9:
            _remove(temporary, pruned)
    packs = sorted(listing.packs, key=lambda found: found.mtime_ns, reverse=True)
    for unread in packs[PACKS_READ:]:
        _remove(unread, pruned)
    kept = []
    for found in [*packs[:PACKS_READ], *listing.entries]:
        if now_ns - found.mtime_ns > max_age_s * 1e9:
            _remove(found, pruned)
        else:
            kept.append(found)
    size = sum(found.size for found in kept)
    survivors = []
    for found in sorted(kept, key=lambda found: found.mtime_ns):
        if size > max_bytes and now_ns - found.mtime_ns > REFRESH_S * 1e9 and _remove(found, pruned):
            size -= found.size
        else:
            survivors.append(found)
    pruned.kept, pruned.size = len(survivors), size
    return pruned


def _remove(found: _Found, pruned: Pruned) -> bool:
    """Delete one listed file unless it changed since it was listed (a concurrent run used or
    rewrote it); count it. False when it is kept."""
    try:
        if os.lstat(found.path).st_mtime_ns != found.mtime_ns:
            return False
        os.unlink(found.path)
    except FileNotFoundError:
        return True  # another run's prune got there first
    except OSError:
        return False
    pruned.removed += 1
    pruned.freed += found.size
    return True


class Cleared:
    """What ``clear`` did: whether there was a cache, files and bytes deleted, and the paths it
    left (files it did not write)."""

    def __init__(self, existed: bool) -> None:
        self.existed = existed
        self.removed = self.freed = 0
        self.kept: list[str] = []

    def __repr__(self) -> str:
        return f"Cleared(existed={self.existed}, removed={self.removed}, freed={self.freed}, kept={self.kept})"


def clear(directory: str | os.PathLike[str]) -> Cleared:
    """Delete everything foxaudit wrote in the cache ``directory`` (``foxaudit clean``): its
    ``v1/`` entries, packs, temporaries and prune stamp, the folders they leave empty, then the
    ``.gitignore`` and ``CACHEDIR.TAG`` it wrote and the directory itself once nothing else is in
    it. Files of other shapes are left where they are and listed in ``kept`` — the directory may
    be one the user named with ``--cache-dir``. Raises OSError (its ``filename`` set) for a file
    or folder that cannot be deleted or listed."""
    directory = os.fspath(directory)
    if not os.path.lexists(directory):
        return Cleared(existed=False)
    if not os.path.isdir(directory):
        raise NotADirectoryError(20, "not a directory", directory)
    cleared = Cleared(existed=True)
    base = os.path.join(directory, CACHE_VERSION)
    if os.path.isdir(base) and not os.path.islink(base):
        listing = _list(base)
        for found in [*listing.entries, *listing.packs, *listing.temporaries]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(found.path)
                cleared.removed += 1
                cleared.freed += found.size
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(base, PRUNE_STAMP))
        cleared.kept.extend(listing.foreign)
        for folder in [*listing.folders, base]:
            _remove_folder_if_empty(folder)
    elif os.path.lexists(base):
        cleared.kept.append(base)
    others = [name for name in os.listdir(directory) if name not in (".gitignore", "CACHEDIR.TAG")]
    if others:
        cleared.kept.extend(os.path.join(directory, name) for name in others if name != CACHE_VERSION)
        return cleared
    for name, ours in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
        marker = os.path.join(directory, name)
        if not _holds(marker, ours):
            cleared.kept.append(marker)
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)
    if not cleared.kept:
        _remove_folder_if_empty(directory)
    return cleared


def _remove_folder_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        return
    except OSError:
        # Not empty (files foxaudit did not write, reported; or a concurrent run's new entry): kept.
        if os.path.isdir(folder) and os.listdir(folder):
            return
        raise


def _holds(path: str, data: bytes) -> bool:
    """Whether ``path`` is a plain file holding exactly ``data`` (a marker foxaudit wrote)."""
    try:
        if os.path.islink(path):
            return False
        with open(path, "rb") as handle:
            return handle.read(len(data) + 1) == data
    except FileNotFoundError:
        return True  # nothing to keep
    except OSError:
        return False


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
        # Its mtime when opened (None once stamped used, or never opened).
        self._mtime: float | None = None

    def read_index(self) -> bool:
        """Read the index; False for a pack that does not parse (the cache is data anyone may
        have written: checked, not trusted). Its rows are checked when read (``get``): the index
        is one JSON object, decoded without a Python loop over its ≈ 2,900 rows."""
        try:
            with open(self.path, "rb") as handle:
                status = os.fstat(handle.fileno())
                total = status.st_size
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
        self._mtime = status.st_mtime
        return True

    def mark_used(self) -> None:
        """Stamp the pack used (``_mark_used``), once per run that reads an entry from it."""
        if self._mtime is None or time.time() - self._mtime <= REFRESH_S:
            return
        self._mtime = None
        with contextlib.suppress(OSError):
            os.utime(self.path)

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
