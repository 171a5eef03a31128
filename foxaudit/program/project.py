"""The whole repository as whole-project rules see it.

The engine builds one ``Project`` per run (after discovery) and hands it to every enabled
``ProjectRule``. Files are parsed lazily through ``SourceFile`` (one parse each, shared).

What the rules read of the files themselves (bytes, text, tree) rather than of their summaries
is noted (``ContentReads``, through ``WatchedSource``): the engine reuses the rules' findings
after an edit that leaves every summary and every file so read as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foxaudit.sources.base import SourceFile
from foxaudit.store import Store


class ContentReads:
    """The paths of the files whose content the whole-project rules read during one run.

    Summarising a file is not a read (the summary is keyed by its own content): the program
    build pauses the log while it makes or loads summaries.
    """

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.paused = 0

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1


# What a SourceFile holds of its file's content (``path``, ``language`` and ``defines`` are not).
_CONTENT = frozenset({
    "data", "text", "encoding", "tree", "_tree", "cuda", "cst", "_cst", "_line_starts",
    "node_text", "position", "line_text", "line_count",
})  # fmt: skip


class WatchedSource(SourceFile):
    """A SourceFile that notes in ``reads`` (set after construction) each time its content is read."""

    def __getattribute__(self, name: str) -> Any:
        if name in _CONTENT:
            reads = object.__getattribute__(self, "__dict__").get("reads")
            if reads is not None and not reads.paused:
                reads.paths.add(object.__getattribute__(self, "path"))
        return object.__getattribute__(self, name)


@dataclass
class Project:
    root: Path  # absolute repository root (where pyproject.toml / .git is)
    files: list[SourceFile]  # every discovered source file, repo-relative paths, sorted
    pyproject: dict[str, Any] = field(default_factory=dict)  # parsed pyproject.toml ({} if absent)
    # The validated `[tool.foxaudit.program]` table (keys as written, "-" not "_").
    settings: dict[str, Any] = field(default_factory=dict)
    # The keys the user actually wrote in `[tool.foxaudit.program]`; None when unknown (a Project
    # built by hand counts as configured). With no entry-point key written, the import graph
    # derives entry points (pytest-named tests, the distribution's package) instead.
    program_keys: frozenset[str] | None = None
    # The run's cache (the engine's, honouring --no-cache / --cache-dir); None: summaries are
    # neither read nor written (a Project built by hand writes nothing into the tree).
    cache: Store | None = field(default=None, repr=False, compare=False)
    # Summaries the per-file pass already made from its own parse of a file (path → Prepared,
    # see foxaudit.program.model): the program pass uses one when its bytes are the file's.
    summaries: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # Results that several whole-project rules share within one run (the program model, built
    # once); keyed by the producer's name. Not part of equality.
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The files whose content (not summary) the rules read, when the engine watches for it.
    reads: ContentReads | None = field(default=None, repr=False, compare=False)
    # Configuration files (YAML) → the (line, dotted name) of each ``_target_`` they hold
    # (``foxaudit.program.configrefs``): modules a framework imports by name at run time. The
    # engine reads them with the files and keys the whole-project results on them; None: none read.
    config_targets: dict[str, tuple[tuple[int, str], ...]] | None = field(default=None, repr=False, compare=False)
    # Cython modules (``.pyx``) → their run-time import statements (``configrefs.cython_import_text``),
    # read and keyed on by the engine in the same way; None: the import graph reads them from disk.
    cython_imports: dict[str, str] | None = field(default=None, repr=False, compare=False)
    # Files read for the import graph whose findings are not reported (vendored code, what
    # pre-commit's `exclude` keeps from every hook): out of scope, as `out-of-scope` globs are.
    unreported: frozenset[str] = field(default_factory=frozenset, repr=False, compare=False)

    def summarising(self) -> contextlib.AbstractContextManager[None]:
        """Reading files to summarise them is not what the content log records."""
        return self.reads.pause() if self.reads is not None else contextlib.nullcontext()

    def python_files(self) -> Iterator[SourceFile]:
        return (f for f in self.files if f.language == "python")

    def cuda_files(self) -> Iterator[SourceFile]:
        return (f for f in self.files if f.language == "cuda")

    def file(self, path: str) -> SourceFile | None:
        for source in self.files:
            if source.path == path:
                return source
        return None
