"""The whole repository as whole-project rules see it.

The engine builds one ``Project`` per run (after discovery) and hands it to every enabled
``ProjectRule``. Files are parsed lazily through ``SourceFile`` (one parse each, shared).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foxaudit.sources.base import SourceFile
from foxaudit.store import Store


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

    def python_files(self) -> Iterator[SourceFile]:
        return (f for f in self.files if f.language == "python")

    def cuda_files(self) -> Iterator[SourceFile]:
        return (f for f in self.files if f.language == "cuda")

    def file(self, path: str) -> SourceFile | None:
        for source in self.files:
            if source.path == path:
                return source
        return None
