"""The whole program as the analyses see it: modules, definitions, name resolution, call edges.

``Program.build(project)`` summarises every file (cached by content, see ``_SummaryCache``;
scanned across cores when many files changed),
names each Python module from its path and the configured source roots, and answers the
questions every analysis asks: what does this dotted name in that module refer to, which
function does this call reach, which class is this attribute.

Resolution is deliberately conservative: it follows module functions, methods through ``self``
(and ``super()``, and base classes in the project), attributes whose class is known from a
``self.x = Class(...)`` assignment, locals bound to a project class, and imported names with
their aliases. Anything else that *could* be a project call (an attribute call whose method name
is defined somewhere in the project) is reported as unresolved — never guessed.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import gc
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from foxaudit import __version__
from foxaudit.program.codec import CodecError, body_offset, dump_summary, load_summary, read_summary
from foxaudit.program.cudascan import CudaSummary, scan_cuda
from foxaudit.program.project import ContentReads, Project
from foxaudit.program.pyscan import UNSCANNED, Call, ClassDef, Function, ModuleSummary, scan_python
from foxaudit.program.settings import ProgramSettings
from foxaudit.sources.base import SourceFile
from foxaudit.store import Store


def _scanner_fingerprint() -> str:
    """Summaries change shape when the scanners (or their encoding) change: key the cache on
    their source too."""
    digest = hashlib.sha1(__version__.encode())
    for name in ("pyscan.py", "cudascan.py", "model.py", "codec.py"):
        try:
            digest.update((Path(__file__).parent / name).read_bytes())
        except OSError:
            digest.update(name.encode())
    return digest.hexdigest()


CACHE_FORMAT = f"foxaudit-program/{_scanner_fingerprint()}"
MODULE_SCOPE = "<module>"
EXTERNAL = "ext:"
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "train", "eval", "requires_grad_", "float", "double", "half", "share_memory_"})


@dataclass
class Module:
    name: str
    path: str
    is_package: bool
    is_test: bool
    summary: ModuleSummary


@dataclass(frozen=True)
class Resolution:
    """What a call reaches: project functions, an external callable, or nothing known."""

    kind: str  # project | class | external | unresolved | parameter | local
    targets: tuple[str, ...] = ()  # function keys 'module:qualname'
    canonical: str = ""  # the dotted name it resolves to (external or project)
    note: str = ""


def function_key(module: str, qualname: str) -> str:
    return f"{module}:{qualname}"


class Functions(Mapping[str, tuple[Module, Function]]):
    """Function key → (module, function) over every module of the program, as a dict built from
    every module's functions in order would be (a qualname defined twice: the last definition),
    but a module's functions are decoded only when a key of that module is first asked for: after
    an edit most modules' functions are never read. Iterating decodes every module."""

    def __init__(self, modules: dict[str, Module]):
        self._modules = modules
        self._tables: dict[str, dict[str, tuple[Module, Function]]] = {}

    def _table(self, name: str, qualname: str | None = None) -> dict[str, tuple[Module, Function]] | None:
        """Module ``name``'s functions by qualname; None when there is no such module, or when
        ``qualname`` is given and the module's index says no function has its name (the
        functions then stay undecoded)."""
        table = self._tables.get(name)
        if table is None:
            module = self._modules.get(name)
            if module is None:
                return None
            if qualname is not None and qualname.rpartition(".")[2] not in module.summary.function_names:
                return None
            table = self._tables[name] = {function.qualname: (module, function) for function in module.summary.functions}
        return table

    def __getitem__(self, key: str) -> tuple[Module, Function]:
        name, _, qualname = key.partition(":")
        # No shortcut: a caller that names a key it read from the functions themselves finds it
        # even when the index (data anyone may write) disagrees with them.
        table = self._table(name)
        if table is None or qualname not in table:
            raise KeyError(key)
        return table[qualname]

    def __contains__(self, key: object) -> bool:
        if type(key) is not str:
            return False
        name, _, qualname = key.partition(":")
        table = self._table(name, qualname)
        return table is not None and qualname in table

    def get(self, key: str, default: tuple[Module, Function] | None = None) -> tuple[Module, Function] | None:  # type: ignore[override]
        name, _, qualname = key.partition(":")
        table = self._table(name, qualname)
        return default if table is None else table.get(qualname, default)

    def __iter__(self) -> Iterator[str]:
        for name in list(self._modules):
            for qualname in self._table(name) or ():
                yield function_key(name, qualname)

    def __len__(self) -> int:
        return sum(len(self._table(name) or ()) for name in list(self._modules))


class _SummaryCache:
    """Summaries keyed by (kind, path, module name, sha1 of content): hit on a fresh checkout too.

    One entry per summary in the run's cache (``foxaudit.store``, the same directory as the
    per-file results, so ``--no-cache`` and ``--cache-dir`` govern both), in the codec's
    data-only format: a run after one edit writes one entry, and an entry planted in the
    repository can never run code. ``store`` None means no caching at all.
    """

    SUFFIX = ".summary"

    def __init__(self, store: Store | None):
        self.store = store
        # Some summary of this build did not come from the cache (scanned, or handed over).
        self.dirty = False

    @staticmethod
    def name(key: tuple) -> str:
        return hashlib.sha256(f"{CACHE_FORMAT}\0{key!r}".encode("utf-8", errors="surrogateescape")).hexdigest()

    def get(self, key: tuple) -> ModuleSummary | CudaSummary | None:
        if self.store is None:
            return None
        name = self.name(key)
        try:
            # A cold run's summaries are packed (``Store.batch``): the pack's bytes are read once.
            packed = self.store.packed(name, self.SUFFIX)
            if packed is not None:
                return load_summary(name, packed)
            # The entry's index alone: the rest is read from it when an analysis asks.
            return read_summary(name, self.store.path(name, self.SUFFIX))
        except CodecError:
            return None


def scan_file(
    source: SourceFile, name: str, is_package: bool, captures: dict | None = None, *, body: bool = True
) -> tuple[ModuleSummary | CudaSummary, str]:
    """(summary, failure): a file the scanner cannot summarise (nested past Python's recursion
    limit) gets an empty summary and the reason, so one file never fails the whole program.
    ``captures``: the scanner's query captures on ``source``'s tree, found by another walk;
    ``body=False``: a Python file's index alone (``scan_python``)."""
    try:
        with no_gc():
            if source.language == "cuda":
                return scan_cuda(source), ""
            return scan_python(source, name, is_package, captures, body=body), ""
    except RecursionError as error:
        empty: ModuleSummary | CudaSummary
        if source.language == "cuda":
            empty = CudaSummary(path=source.path)
        else:
            empty = ModuleSummary(source.path)  # an empty index, and an empty body
        return empty, f"{type(error).__name__}: {error}"


def summary_key(source: SourceFile, source_roots: SourceRoots | Iterable[str]) -> tuple | None:
    """The content key of ``source``'s summary (what it is cached and looked up by), or None for
    a file that has none (a ``.pyi``, a path that is no importable module)."""
    digest = hashlib.sha1(source.data).hexdigest()
    if source.language == "cuda":
        return ("cuda", source.path, digest)
    named = module_name_for(source.path, source_roots)
    if named is None:
        return None
    return ("py", source.path, named[0], named[1], digest)


@dataclass(frozen=True)
class Prepared:
    """A summary made before the program pass from a tree parsed for another reason (the
    per-file pass's: one parse per file feeds both), handed over encoded.

    ``name`` is the cache entry name of its key (``summary_key``): the program pass uses it only
    when its own copy of the file has the same key, i.e. the same bytes. ``data`` is the encoded
    summary (empty until something needs it: a cache write, a trip out of a worker process).
    ``failure`` is the scanner's reason for an empty summary (``scan_file``); ``error`` an
    exception the scanner raised (the program build then fails with it, as it would have).
    """

    name: str
    data: bytes
    failure: str = ""
    error: str = ""
    # The summary itself, when it was made in the process that builds the program (it then
    # needs no decoding); None once it has crossed from a worker process.
    summary: ModuleSummary | CudaSummary | None = field(default=None, compare=False)

    def without_summary(self) -> Prepared:
        """What a worker hands back: the encoded form alone (the records stay in the worker)."""
        return dataclasses.replace(self, data=self.encoded(), summary=None)

    def encoded(self) -> bytes:
        """The summary in the codec's format (encoded on first need: a run without a cache that
        summarises in the process building the program never needs it)."""
        if self.data or self.summary is None:
            return self.data
        with no_gc():
            return dump_summary(self.name, self.summary)


# The digest of a file the program model holds but has no summary of (a ``.pyi``, a path that is
# no importable module).
NO_SUMMARY = "-"
# A summary's body scanned after its index (the index was made alone): its own cache entry.
BODY_SUFFIX = ".body"


def summary_digest(source: SourceFile, source_roots: SourceRoots | Iterable[str], prepared: Prepared | None, store: Store | None) -> str | None:
    """What the whole-program analyses see of ``source`` without reading its body: a digest of
    its summary's index (lazy fields included) and of the module name it was made under — not of
    the file's bytes, so an edit that leaves the summary as it was (a comment) keeps it.
    ``NO_SUMMARY`` for a file without one; None when the summary is neither handed over
    (``prepared``) nor cached, or the scanner failed on the file. The body's digest is apart
    (``body_digest``): it matters only where an analysis read the body."""
    key = summary_key(source, source_roots)
    if key is None:
        return NO_SUMMARY
    data = _entry_of(key, prepared, store)
    if data is None:
        return None
    head = len(_SummaryCache.name(key)) + 1
    try:
        end = body_offset(data)
    except CodecError:
        return None
    # The entry's first line is its name, which hashes the file's bytes: leave it out.
    digest = hashlib.sha256(repr(key[:-1]).encode("utf-8", errors="surrogateescape") + b"\n")
    digest.update(memoryview(data)[head:end])
    return digest.hexdigest()


def body_digest(source: SourceFile, source_roots: SourceRoots | Iterable[str], prepared: Prepared | None, store: Store | None) -> str | None:
    """The sha256 (hex) of ``source``'s encoded summary body, as ``ModuleSummary.body_digest``
    records it where an analysis reads the body (scanned here when the summary was made as an
    index alone); None where ``summary_digest`` is."""
    key = summary_key(source, source_roots)
    data = _entry_of(key, prepared, store) if key is not None and key[0] == "py" else None
    if data is None:
        return None
    try:
        body = bytes(memoryview(data)[body_offset(data):])
    except CodecError:
        return None
    if body == UNSCANNED:
        body = scanned_body(source, key, store)  # type: ignore[arg-type]
    return hashlib.sha256(body).hexdigest()


def _entry_of(key: tuple, prepared: Prepared | None, store: Store | None) -> bytes | None:
    """The encoded summary entry of ``key``: handed over, else cached; None when neither (or
    the scanner failed on the file)."""
    name = _SummaryCache.name(key)
    if prepared is not None and prepared.name == name:
        if prepared.error or prepared.failure:
            return None
        data: bytes | None = prepared.encoded()
    else:
        data = store.get_bytes(name, _SummaryCache.SUFFIX) if store is not None else None
    if not data or not data.startswith(name.encode() + b"\n"):
        return None
    return data


def scanned_body(source: SourceFile, key: tuple, store: Store | None) -> bytes:
    """The encoded body of the summary of ``key`` (``summary_key``) that was made as an index
    alone: the cache's body entry, else a scan of the file (stored for the next run)."""
    name = _SummaryCache.name(key)
    if store is not None:
        cached = store.get_bytes(name, BODY_SUFFIX)
        if cached:
            return cached
    # A fresh SourceFile: the summary sees the file's bytes alone (no configured macros).
    summary, failure = scan_file(SourceFile(path=source.path, data=source.data, language="python"), key[2], key[3])
    body = summary.body_bytes()  # type: ignore[union-attr]
    if store is not None and not failure:
        store.put_bytes(name, body, BODY_SUFFIX)
    return body


class SummaryError(RuntimeError):
    """The scanner raised while the per-file pass summarised a file (a foxaudit bug)."""


def prepare_summary(
    source: SourceFile, source_roots: SourceRoots | Iterable[str], store: Store | None, captures: dict | None = None, *, body: bool = True
) -> Prepared | None:
    """Summarise an already parsed file and encode it (and store it, when caching): what the
    program pass would do with the same bytes. None for a file without a summary. ``captures``:
    those of ``pyscan.SCAN_QUERY`` on the Python file's tree, when the per-file walk found them;
    ``body=False``: a Python file's index alone (its body is scanned if an analysis reads it)."""
    key = summary_key(source, source_roots)
    if key is None:
        return None
    if source.language == "cuda" and source.defines:
        # Summaries are keyed by content alone, so they see the file without the project's
        # configured macros (as the program pass's own scan does): parse that copy.
        source = SourceFile(path=source.path, data=source.data, language="cuda")
    try:
        return _summarise(source, key, store, captures if source.language == "python" else None, body=body)[0]
    except Exception as error:  # noqa: BLE001 — handed over: the program build fails with it, once
        return Prepared(_SummaryCache.name(key), b"", error=f"{type(error).__name__}: {error}")


def store_prepared(prepared: Prepared, store: Store) -> Prepared:
    """Cache a summary the per-file pass made (its worker wrote nothing: the run writes a cold
    run's entries in one pack); the copy returned carries its encoded form, made once."""
    if prepared.error or prepared.failure:
        return prepared  # not cached, as ``_summarise`` caches none that failed
    if not prepared.data:
        prepared = dataclasses.replace(prepared, data=prepared.encoded())
    store.put_bytes(prepared.name, prepared.data, _SummaryCache.SUFFIX)
    return prepared


def _scan_task(task: tuple[str, bytes, str, tuple, str | None]) -> tuple[str, str, bytes, str]:
    """Worker: summarise one file, store it in the cache (in the worker: writes run in parallel
    too), return it encoded (the parent decodes it with the same data-only codec)."""
    path, data, language, key, cache_dir = task
    source = SourceFile(path=path, data=data, language=language)  # type: ignore[arg-type]
    prepared, _ = _summarise(source, key, Store(Path(cache_dir)) if cache_dir is not None else None)
    return path, prepared.name, prepared.encoded(), prepared.failure


def _scanned_unlogged(reads: ContentReads | None, source: SourceFile, key: tuple, store: Store | None) -> bytes:
    """``scanned_body``: summarising reads the file, but is no content read of the rules."""
    with reads.pause() if reads is not None else contextlib.nullcontext():
        return scanned_body(source, key, store)


def _body_task(task: tuple[str, bytes, tuple, str | None]) -> tuple[str, bytes]:
    """Worker: the encoded body of one summary made as an index alone (``scanned_body``)."""
    path, data, key, cache_dir = task
    source = SourceFile(path=path, data=data, language="python")
    return path, scanned_body(source, key, Store(Path(cache_dir)) if cache_dir is not None else None)


def _summarise(
    source: SourceFile, key: tuple, store: Store | None, captures: dict | None = None, *, body: bool = True
) -> tuple[Prepared, ModuleSummary | CudaSummary]:
    """Scan, encode and (unless it failed) store one summary; ``key`` from ``summary_key``."""
    name = _SummaryCache.name(key)
    python = key[0] == "py"
    summary, failure = scan_file(source, key[2] if python else "", key[3] if python else False, captures, body=body)
    if not body and not failure and python:
        from foxaudit.program.wiring import import_graph_reads_body

        if import_graph_reads_body(summary):  # type: ignore[arg-type]
            # Read by every run's import graph: scanned whole here, from the tree at hand (the
            # captures were consumed: the scanner walks it again), not parsed again later.
            summary, failure = scan_file(source, key[2], key[3])
    prepared = Prepared(name, b"", failure, summary=summary)
    if store is not None and not failure:
        prepared = dataclasses.replace(prepared, data=prepared.encoded())
        store.put_bytes(name, prepared.data, _SummaryCache.SUFFIX)
    return prepared, summary


# Below this many files to summarise, scanning in-process beats starting workers.
PARALLEL_SCAN_LIMIT = 24


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Build many small objects without triggering collections (none of them are garbage)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class SourceRoots:
    """The directories that module names are relative to, each with the package it lies in.

    A source root is normally a ``sys.path`` entry (``.``, ``src``). Run inside a package
    (``cd site-packages/torch``: the project root holds ``__init__.py``) the entry is a directory
    above it, and the root's modules are ``torch._dynamo...``, not ``_dynamo...``: without the
    prefix absolute imports (``import torch._dynamo``) miss the project's own modules."""

    dirs: tuple[str, ...]
    packages: tuple[str, ...] = ()  # beside ``dirs``: the dotted package each one is inside of ("" for none)

    @classmethod
    def at(cls, root: Path | str, dirs: Iterable[str]) -> SourceRoots:
        dirs = tuple(dirs)
        return cls(dirs, tuple(enclosing_package(Path(root) / directory.strip("/")) for directory in dirs))


def enclosing_package(directory: Path) -> str:
    """The dotted package ``directory`` is (with the packages above it), as the directories that
    hold ``__init__.py`` name it from the nearest one without: "" for a directory that is no package.

    A directory that holds packaging (``pyproject.toml``, ``setup.py``, ``setup.cfg``) is where the
    project is installed from, the ``sys.path`` entry its packages are imported under, even with a
    stray ``__init__.py`` (ElegantRL's root: its code imports ``rlsolver.…``, not
    ``ElegantRL.rlsolver.…``); a package checked where it was installed (``site-packages/torch``)
    holds none and keeps its name."""
    parts: list[str] = []
    current = directory.resolve()
    while (current / "__init__.py").is_file() and current.name.isidentifier() and current.parent != current \
            and not any((current / name).is_file() for name in _PACKAGING_FILES):
        parts.append(current.name)
        current = current.parent
    return ".".join(reversed(parts))


# What makes a directory the root a project is installed from.
_PACKAGING_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def module_name_for(path: str, source_roots: SourceRoots | Iterable[str]) -> tuple[str, bool] | None:
    """(dotted module name, is_package) for a .py path, or None when it is not importable."""
    if not path.endswith(".py"):
        return None
    if not isinstance(source_roots, SourceRoots):
        source_roots = SourceRoots(tuple(source_roots))
    best = None
    package = ""
    for index, root in enumerate(source_roots.dirs):
        prefix = root.strip("/")
        if prefix in ("", "."):
            relative = path
        elif path.startswith(prefix + "/"):
            relative = path[len(prefix) + 1 :]
        else:
            continue
        if best is None or len(relative) < len(best):
            best = relative
            package = source_roots.packages[index] if index < len(source_roots.packages) else ""
    if best is None:
        return None
    parts = best[:-3].split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    if package:
        parts = [*package.split("."), *parts]
    if not parts or not all(part.isidentifier() for part in parts):
        # A script whose path is no module name (`examples/manage-shop.py`, `configs/COCO-Detection/
        # retinanet.py`) is run by path, never imported: it keeps a node named by its path, so its
        # imports count (resolved beside it), and no import can name it. A part holding a `.` could
        # read as two parts of a real module's name: none.
        if is_package or any(not part or "." in part or not _PATH_PART.fullmatch(part) for part in parts):
            return None
        return ".".join(parts), False
    return ".".join(parts), is_package


# A path part a script's node name may hold: letters, digits, `_` and `-` (no `.`, no space).
_PATH_PART = re.compile(r"[\w-]+")


def importable(name: str) -> bool:
    """Whether a module name is one an import can write (not a script's path-named node)."""
    return all(part.isidentifier() for part in name.split("."))


class Program:
    """Modules, CUDA files and resolution over one Project (build once, share between rules)."""

    def __init__(self, project: Project, settings: ProgramSettings, *, use_cache: bool = True):
        self.project = project
        self.root = Path(project.root)
        self.settings = settings
        self.source_roots = SourceRoots.at(self.root, settings.source_roots)
        self.modules: dict[str, Module] = {}
        self.by_path: dict[str, Module] = {}
        self.cuda: dict[str, CudaSummary] = {}
        self.sources: dict[str, SourceFile] = {source.path: source for source in project.files}
        self.functions = Functions(self.modules)
        self.classes: dict[str, tuple[Module, ClassDef]] = {}
        # Files the scanner could not summarise (path → reason): left out of every analysis and
        # reported as FX001 on the file itself.
        self.scan_failures: dict[str, str] = {}
        self.cache = _SummaryCache(project.cache if use_cache else None)
        # path → the cache entry name of its summary (which hashes the file's bytes, its module
        # name and the scanner): what an analysis keys a module's cached contribution by.
        self.summary_names: dict[str, str] = {}
        self._bindings: dict[str, dict[str, str]] = {}
        self._attr_types: dict[str, dict[str, str]] = {}
        self._local_types: dict[tuple[str, str], dict[str, str]] = {}
        self._resolved: dict[tuple[str, int], Resolution] = {}
        self._annotations: dict[tuple[str, str], str | None] = {}
        self._top_packages: set[str] = set()
        self._subclasses: dict[str, list[str]] | None = None
        with no_gc():
            self._build()
            # The summaries live as long as the run and hold no garbage: move them out of the
            # collector's sight, or every later collection re-walks ~a million objects on a large
            # tree (≈2 s on pandas). They are still freed by reference counting.
            gc.freeze()

    # -- construction ---------------------------------------------------------------------
    def _build(self) -> None:
        test_roots = tuple(root.strip("/") + "/" for root in self.settings.test_roots)
        with self.project.summarising():
            summaries = self._summaries()
        for source in self.project.files:
            if source.language == "cuda":
                self.cuda[source.path] = summaries[source.path]  # type: ignore[assignment]
                continue
            named = self._names.get(source.path)
            if named is None:
                continue
            name, is_package = named
            module = Module(
                name=name,
                path=source.path,
                is_package=is_package,
                is_test=source.path.startswith(test_roots),
                summary=summaries[source.path],  # type: ignore[arg-type]
            )
            if name in self.modules:
                # Two files claim one module name (a test dir and a package of the same name):
                # keep the non-test one, it is what an import finds.
                if self.modules[name].is_test and not module.is_test:
                    self.modules[name] = module
            else:
                self.modules[name] = module
            self.by_path[source.path] = module
        self._top_packages = {name.split(".")[0] for name in self.modules}
        reads, store = self.project.reads, self.cache.store
        for path, module in self.by_path.items():
            # A summary made as an index alone scans its body when an analysis first reads it.
            # (What it calls holds no reference to this Program: a summary that did would make
            # a reference cycle of the whole model, freed only by a slow full collection.)
            module.summary.rescan_with(
                functools.partial(_scanned_unlogged, reads, self.sources[path], self._keys[path], store), digest=reads is not None
            )
        for module in self.modules.values():
            for klass in module.summary.classes:
                self.classes[function_key(module.name, klass.qualname)] = (module, klass)

    def _summaries(self) -> dict[str, object]:
        """Every file's summary: handed over by the per-file pass (made from its parse), else from
        the cache, else scanned here (across cores when there are many)."""
        self._names: dict[str, tuple[str, bool]] = {}
        found: dict[str, object] = {}
        missing: list[tuple[tuple, SourceFile]] = []
        prepared = self.project.summaries
        self._keys: dict[str, tuple] = {}
        for source in self.project.files:
            key = summary_key(source, self.source_roots)
            if key is None:
                continue
            if key[0] == "py":
                self._names[source.path] = (key[2], key[3])
                self._keys[source.path] = key
            name = self.cache.name(key)
            self.summary_names[source.path] = name
            handed = prepared.get(source.path)
            if handed is not None and handed.name == name:
                if handed.error:
                    raise SummaryError(f"summarising {source.path} failed in the per-file pass ({handed.error})")
                self.cache.dirty = True
                found[source.path] = handed.summary if handed.summary is not None else load_summary(name, handed.data)
                if handed.failure:
                    self.scan_failures[source.path] = handed.failure
                continue
            summary = self.cache.get(key)
            if summary is None:
                missing.append((key, source))
            else:
                found[source.path] = summary
        if len(missing) < PARALLEL_SCAN_LIMIT or default_jobs() < 2:
            for key, source in missing:
                # A fresh SourceFile: the summary sees the file's bytes alone (no configured macros).
                scanned, summary = _summarise(SourceFile(path=source.path, data=source.data, language=source.language), key, self.cache.store)
                self.cache.dirty = True
                if scanned.failure:
                    self.scan_failures[source.path] = scanned.failure
                found[source.path] = summary
            return found
        from concurrent.futures import ProcessPoolExecutor

        store = self.cache.store
        cache_dir = str(store.directory) if store is not None else None
        self.cache.dirty = True
        # Big files first, so both cores finish together.
        ordered = sorted(
            ((source.path, source.data, source.language, key, cache_dir) for key, source in missing), key=lambda task: len(task[1]), reverse=True
        )
        workers = min(default_jobs(), len(ordered))
        chunk = max(1, min(16, len(ordered) // (workers * 16)))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for path, name, data, failure in pool.map(_scan_task, ordered, chunksize=chunk):
                found[path] = load_summary(name, data)
                if failure:
                    self.scan_failures[path] = failure
        return found

    def out_of_scope(self, path: str) -> bool:
        """Paths under `out-of-scope` globs, and files the project holds but does not own
        (``Project.unreported``): classified in the audit, never reported."""
        from foxaudit.globs import first_path_match

        return path in self.project.unreported or first_path_match(path, self.settings.out_of_scope) is not None

    # -- names --------------------------------------------------------------------------------
    def bindings(self, module: Module) -> dict[str, str]:
        """Local name → canonical dotted name, from the module's imports (all scopes)."""
        cached = self._bindings.get(module.name)
        if cached is not None:
            return cached
        table: dict[str, str] = {}
        self._bindings[module.name] = table
        for ref in module.summary.imports:
            if ref.dynamic or not ref.module:
                continue
            if not ref.names:
                if ref.alias:
                    table[ref.alias] = ref.module
                else:
                    head = ref.module.split(".")[0]
                    table.setdefault(head, head)
                continue
            for imported, alias in ref.names:
                if imported == "*":
                    target = self.modules.get(ref.module)
                    if target is not None and target is not module:
                        for name in target.summary.defined_names:
                            if not name.startswith("_"):
                                table.setdefault(name, f"{ref.module}.{name}")
                        # What it imports is in its namespace too: a package's `__init__` that
                        # re-exports `from .base import ModelBase` hands `ModelBase` to a
                        # `from .. import *` (a cycle of star imports reads the partial table).
                        for name, bound in list(self.bindings(target).items()):
                            if not name.startswith("_"):
                                table.setdefault(name, bound)
                    continue
                table[alias] = f"{ref.module}.{imported}"
        return table

    def canonical(self, module: Module, dotted: str) -> str:
        """The fully qualified dotted name ``dotted`` means inside ``module``."""
        if not dotted:
            return ""
        head, _, rest = dotted.partition(".")
        bound = self.bindings(module).get(head)
        if bound is not None:
            return f"{bound}.{rest}" if rest else bound
        if head in module.summary.defined_names:
            return f"{module.name}.{dotted}"
        return dotted

    def lookup(self, canonical: str, depth: int = 0) -> tuple[str, str]:
        """('module'|'function'|'class'|'project-other'|'external', key) for a canonical name."""
        parts = canonical.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            module = self.modules.get(name)
            if module is None:
                continue
            rest = parts[cut:]
            if not rest:
                return "module", name
            qual = ".".join(rest)
            key = function_key(name, qual)
            if key in self.functions:
                return "function", key
            if key in self.classes:
                return "class", key
            # A re-export: `from .impl import f` in a package __init__.
            bound = self.bindings(module).get(rest[0])
            if bound is not None and depth < 6 and bound != canonical:
                again = ".".join([bound, *rest[1:]])
                return self.lookup(again, depth + 1)
            return "project-other", key
        return "external", canonical

    def module_of_function(self, key: str) -> Module:
        return self.functions[key][0]

    def class_method(self, class_key: str, name: str, depth: int = 0) -> str | None:
        """Key of method ``name`` on class ``class_key`` or its project base classes."""
        candidate = f"{class_key}.{name}"
        if candidate in self.functions:
            return candidate
        if depth > 8 or class_key not in self.classes:
            return None
        module, klass = self.classes[class_key]
        for base in klass.bases:
            kind, key = self.lookup(self.canonical(module, base))
            if kind == "class":
                found = self.class_method(key, name, depth + 1)
                if found is not None:
                    return found
        return None

    def base_classes(self, class_key: str) -> list[str]:
        """Keys of the project classes ``class_key`` lists among its bases (others are left out)."""
        if class_key not in self.classes:
            return []
        module, klass = self.classes[class_key]
        found = []
        for base in klass.bases:
            kind, key = self.lookup(self.canonical(module, base))
            if kind == "class" and key != class_key:
                found.append(key)
        return found

    def subclasses(self, class_key: str) -> list[str]:
        """Keys of the project classes that list ``class_key`` among their bases (direct ones)."""
        if self._subclasses is None:
            index: dict[str, list[str]] = {}
            for key in self.classes:
                for base in self.base_classes(key):
                    index.setdefault(base, []).append(key)
            self._subclasses = index
        return self._subclasses.get(class_key, [])

    def _instance_call(self, class_key: str) -> str | None:
        """What calling an instance of ``class_key`` runs: its ``__call__``, else ``forward``
        (a torch ``nn.Module`` subclass: the base's ``__call__`` runs the subclass's forward)."""
        return self.class_method(class_key, "__call__") or self.class_method(class_key, "forward")

    def type_of(self, module: Module, scope: str, parts: list[str]) -> str | None:
        """Class key (or ``ext:<dotted>`` for a non-project class) of ``a.b.c`` in ``scope``."""
        if not parts:
            return None
        head = parts[0]
        current = self.enclosing_class(module, scope) if head in ("self", "cls") else self.local_types(module, scope).get(head)
        for attr in parts[1:]:
            if current is None or current.startswith(EXTERNAL):
                return None
            current = self.attribute_types(current).get(attr)
        return current

    def _value_type(self, module: Module, scope: str, value, call: Call | None, klass: str | None) -> str | None:
        """Type of an assigned value: a project class instance, an external call's result, an alias."""
        if call is not None:
            if call.receiver_kind == "call" and call.method in _SELF_RETURNING:
                # Net(shape).to(device) is still a Net; copy.deepcopy(x) has x's type.
                inner = self.canonical(module, call.receiver_call)
                kind, key = self.lookup(inner)
                if kind == "class":
                    return key
                if inner in ("copy.deepcopy", "copy.copy") and call.receiver.count("(") == 1:
                    argument = call.receiver[call.receiver.index("(") + 1 : -1].strip()
                    if argument.startswith("self.") and klass is not None and argument.count(".") == 1:
                        return self.attribute_types(klass).get(argument[5:])
                return None
            if "()" in call.func:
                return None
            canonical = self.canonical(module, call.func)
            kind, key = self.lookup(canonical)
            if kind == "class":
                return key
            if kind == "external" and call.func and not call.func.startswith(("self.", "cls.")):
                head = call.func.split(".")[0]
                if head in self.bindings(module):
                    return EXTERNAL + canonical
            return None
        if value.kind in ("str", "int", "float", "fstring", "list") or value.text[:1] in ("{", "["):
            return EXTERNAL + "builtins"
        if value.kind == "name":
            function = self.function_at(module, scope)
            if function is not None:
                for param, annotation in function.annotations:
                    if param == value.text:
                        return self._annotation_type(module, annotation)
            return None
        if value.kind == "attribute" and value.dotted.startswith("self.") and klass is not None:
            parts = value.dotted.split(".")
            if len(parts) == 2 and parts[1] != "__class__":
                return self.attribute_types(klass).get(parts[1])
        return None

    def _annotation_type(self, module: Module, annotation: str) -> str | None:
        key = (module.name, annotation)
        if key in self._annotations:
            return self._annotations[key]
        found = self._annotation_lookup(module, annotation)
        self._annotations[key] = found
        return found

    def _annotation_lookup(self, module: Module, annotation: str) -> str | None:
        text = annotation.strip().strip("'\"")
        for part in text.split("|"):
            part = part.strip()
            if not part or part == "None":
                continue
            kind, key = self.lookup(self.canonical(module, part))
            if kind == "class":
                return key
        return None

    def attribute_types(self, class_key: str) -> dict[str, str]:
        """self.<attr> → class key, from `self.attr = ProjectClass(...)` (or an annotated parameter,
        or an external call: ``ext:torch.optim.Adam``) in the class's methods."""
        cached = self._attr_types.get(class_key)
        if cached is not None:
            return cached
        table: dict[str, str] = {}
        self._attr_types[class_key] = table
        if class_key not in self.classes:
            return table
        module, klass = self.classes[class_key]
        prefix = klass.qualname + "."
        for assignment in module.summary.assignments:
            if not assignment.target.startswith("self.") or assignment.target.count(".") != 1:
                continue
            if not assignment.scope.startswith(prefix):
                continue
            found = self._value_type(module, assignment.scope, assignment.value, assignment.call, class_key)
            if found is not None:
                table.setdefault(assignment.target[5:], found)
        for base in klass.bases:
            kind, key = self.lookup(self.canonical(module, base))
            if kind == "class" and key != class_key:
                for attr, value in self.attribute_types(key).items():
                    table.setdefault(attr, value)
        return table

    def local_types(self, module: Module, scope: str) -> dict[str, str]:
        cache_key = (module.name, scope)
        cached = self._local_types.get(cache_key)
        if cached is not None:
            return cached
        table: dict[str, str] = {}
        self._local_types[cache_key] = table
        function = self.function_at(module, scope)
        if function is not None:
            for param, annotation in function.annotations:
                found = self._annotation_type(module, annotation)
                if found is not None:
                    table[param] = found
        klass = self.enclosing_class(module, scope) if scope else None
        for assignment in module.summary.assignments:
            if assignment.scope != scope or "." in assignment.target:
                continue
            found = self._value_type(module, scope, assignment.value, assignment.call, klass)
            if found is not None:
                table[assignment.target] = found
        return table

    def enclosing_class(self, module: Module, scope: str) -> str | None:
        """Class key of the method ``scope`` (or of the method a nested function sits in)."""
        parts = scope.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            key = function_key(module.name, ".".join(parts[:cut]))
            if key in self.classes:
                return key
        return None

    def function_at(self, module: Module, scope: str) -> Function | None:
        entry = self.functions.get(function_key(module.name, scope))
        return entry[1] if entry else None

    # -- calls ----------------------------------------------------------------------------------
    def resolve_call(self, module: Module, call: Call) -> Resolution:
        key = (module.name, id(call))
        found = self._resolved.get(key)
        if found is None:
            found = self._resolve_call(module, call)
            self._resolved[key] = found
        return found

    def _resolve_call(self, module: Module, call: Call) -> Resolution:
        func = call.func
        scope = call.scope
        if not func:
            if call.receiver_kind == "call" and call.receiver_call in ("super", "super()"):
                klass = self.enclosing_class(module, scope)
                if klass is not None:
                    _, definition = self.classes[klass]
                    for base in definition.bases:
                        kind, key = self.lookup(self.canonical(module, base))
                        if kind == "class":
                            target = self.class_method(key, call.method)
                            if target:
                                return Resolution("project", (target,), target)
                return Resolution("external", canonical=f"super().{call.method}")
            return self._maybe_unresolved(call, "the callee is an expression")
        head, _, rest = func.partition(".")
        bound = self.bindings(module).get(head)
        if bound is not None and bound.split(".")[0] not in self._top_packages:
            # torch.zeros, np.asarray, an alias of a third-party module: nothing of the project.
            canonical = f"{bound}.{rest}" if rest else bound
            return Resolution("external", canonical=canonical)
        function = self.function_at(module, scope)
        # Nested functions: `inner()` inside `outer` is outer.inner (class bodies are not scopes).
        if not rest:
            parts = scope.split(".") if scope else []
            for cut in range(len(parts), 0, -1):
                enclosing = ".".join(parts[:cut])
                if function_key(module.name, enclosing) not in self.functions:
                    continue
                key = function_key(module.name, f"{enclosing}.{head}")
                if key in self.functions:
                    return Resolution("project", (key,), key)
            local = self.enclosing_class(module, scope) if head == "self" else self.local_types(module, scope).get(head)
            if local is not None and not local.startswith(EXTERNAL):
                # net = Net(); net(x), and self(x) in a method: the instance's __call__, or an
                # nn.Module's forward.
                target = self._instance_call(local)
                if target:
                    return Resolution("project", (target,), target)
            if function is not None and head in function.params:
                return Resolution("parameter", canonical=head, note=f"calls its parameter {head!r}")
        if rest and (head in ("self", "cls") or head in self.local_types(module, scope)):
            parts = func.split(".")
            owner = self.type_of(module, scope, parts[:-1])
            if owner is not None and owner.startswith(EXTERNAL):
                return Resolution("external", canonical=f"{owner[len(EXTERNAL):]}.{parts[-1]}")
            if owner is not None:
                target = self.class_method(owner, parts[-1])
                if target:
                    return Resolution("project", (target,), target)
                attribute = self.attribute_types(owner).get(parts[-1])
                if attribute is not None and attribute.startswith(EXTERNAL):
                    return Resolution("external", canonical=attribute[len(EXTERNAL):])
                if attribute is not None:
                    target = self._instance_call(attribute)
                    if target:
                        return Resolution("project", (target,), target)
                return self._maybe_unresolved(call, f"no method {parts[-1]!r} on {owner}")
            if head in ("self", "cls"):
                return self._maybe_unresolved(call, f"type of {'.'.join(parts[:-1])} unknown")
        canonical = self.canonical(module, func)
        kind, key = self.lookup(canonical)
        if kind == "function":
            return Resolution("project", (key,), canonical)
        if kind == "class":
            targets = tuple(
                method for method in (f"{key}.__init__", f"{key}.__post_init__", f"{key}.__call__") if method in self.functions and not method.endswith("__call__")
            )
            return Resolution("class", targets, canonical)
        if kind == "module":
            return Resolution("external", canonical=canonical, note="calls a module")
        if kind == "project-other":
            owner_name, _, qual = key.partition(":")
            owner = self.modules.get(owner_name)
            first = qual.split(".")[0]
            if owner is not None and first in owner.summary.constants and "." in qual:
                constant = owner.summary.constants[first]
                assignment = next((a for a in owner.summary.assignments if a.target == first and not a.scope), None)
                found = self._value_type(owner, "", constant, assignment.call if assignment else None, None)
                if found is not None and not found.startswith(EXTERNAL) and qual.count(".") == 1:
                    target = self.class_method(found, qual.split(".")[1])
                    if target:
                        return Resolution("project", (target,), target)
                if found is not None and found.startswith(EXTERNAL):
                    return Resolution("external", canonical=canonical)
            return self._maybe_unresolved(call, f"{canonical} is not a function of the project")
        # External: the head is an imported non-project module, a builtin, or a local variable.
        if head in self.bindings(module) or head in _BUILTINS:
            return Resolution("external", canonical=canonical)
        return self._maybe_unresolved(call, f"receiver {head!r} has no known type")

    def _maybe_unresolved(self, call: Call, why: str) -> Resolution:
        if call.method and (call.method in self.method_names or call.method in self._function_names()):
            return Resolution("unresolved", canonical=call.func or call.method, note=why)
        return Resolution("external", canonical=call.func or call.method, note=why)

    @functools.cached_property
    def method_names(self) -> set[str]:
        """The name of every method of the program (read from the modules' indexes when first asked)."""
        return set().union(*(module.summary.method_names for module in self.modules.values()))

    def _function_names(self) -> set[str]:
        names = getattr(self, "_fn_names", None)
        if names is None:
            names = set().union(*(module.summary.function_names for module in self.modules.values()))
            self._fn_names = names
        return names

    # -- iteration helpers -----------------------------------------------------------------------
    def iter_calls(self) -> Iterator[tuple[Module, Call]]:
        self.scan_bodies(self.modules.values())
        for module in self.modules.values():
            for call in module.summary.calls:
                yield module, call

    def scan_bodies(self, modules: Iterable[Module]) -> None:
        """Make the bodies an analysis is about to read of every module in ``modules`` that has
        none yet (its summary was made as an index alone, and its cache has no body entry):
        across cores when there are many, as ``_summaries`` scans. Each is what the module's
        first read would scan itself; this only does it in parallel."""
        store = self.cache.store
        todo = []
        for module in modules:
            summary = module.summary
            if summary.body_loaded or summary.body_bytes() != UNSCANNED:
                continue
            key = self._keys[module.path]
            cached = store.get_bytes(self.cache.name(key), BODY_SUFFIX) if store is not None else None
            if cached:
                summary.encoded_body(cached)
            else:
                todo.append((module, key))
        if len(todo) < PARALLEL_SCAN_LIMIT or default_jobs() < 2:
            return  # each is scanned on its first read
        from concurrent.futures import ProcessPoolExecutor

        cache_dir = str(store.directory) if store is not None else None
        with self.project.summarising():
            tasks = [(module.path, self.sources[module.path].data, key, cache_dir) for module, key in todo]
        tasks.sort(key=lambda task: len(task[1]), reverse=True)
        workers = min(default_jobs(), len(tasks))
        chunk = max(1, min(16, len(tasks) // (workers * 16)))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for path, body in pool.map(_body_task, tasks, chunksize=chunk):
                self.by_path[path].summary.encoded_body(body)

    def iter_calls_named(self, methods: frozenset[str] | set[str]) -> Iterator[tuple[Module, Call]]:
        """Calls whose method is in ``methods``; modules that make none are skipped unread."""
        for module in self.modules.values():
            if module.summary.call_methods.isdisjoint(methods):
                continue
            for call in module.summary.calls:
                if call.method in methods:
                    yield module, call

    def scope_key(self, module: Module, scope: str) -> str:
        """The call-graph node of a scope: a function key, or the module's top level."""
        return function_key(module.name, scope or MODULE_SCOPE)


_BUILTINS = frozenset(dir(builtins))


def program_for(project: Project, *, use_cache: bool = True) -> Program:
    """The Program of ``project``, built once per Project object."""
    memo = project.memo
    program = memo.get("program")
    if program is None:
        settings = ProgramSettings.from_table(project.settings)
        program = Program(project, settings, use_cache=use_cache)
        memo["program"] = program
    return program  # type: ignore[return-value]
