"""The ``Project`` handed to whole-project rules, built from the run's discovered files.

``foxaudit.program.project.Project`` is the model (owned by the whole-program layer); the
engine only fills it: every discovered file that decodes as UTF-8, as a ``SourceFile`` whose
tree-sitter tree is parsed on first use (a rule that only reads Python never parses CUDA).
"""

from __future__ import annotations

from foxaudit.engine.discovery import Discovered
from foxaudit.engine.resolve import Resolved
from foxaudit.program.model import Prepared
from foxaudit.program.project import ContentReads, Project, WatchedSource
from foxaudit.sources.base import SourceFile, language_of
from foxaudit.store import Store


def build_project(
    resolved: Resolved,
    files: list[Discovered],
    cache: Store | None = None,
    summaries: dict[str, Prepared] | None = None,
    contents: dict[str, bytes] | None = None,
    reads: ContentReads | None = None,
) -> Project:
    """``summaries``: those the per-file pass made from its own parse (path → Prepared);
    ``contents``: files' bytes the run has already read (path → bytes), not read again;
    ``reads``: where to note the files whose content (not summary) the rules read."""
    contents = contents or {}
    sources: list[SourceFile] = []
    for item in files:
        source = project_source(resolved, item, contents, watched=reads is not None)
        if source is None:
            continue
        if reads is not None:
            source.reads = reads  # type: ignore[attr-defined]
        sources.append(source)
    return Project(
        root=resolved.settings.root,
        files=sources,
        pyproject=dict(resolved.settings.pyproject),
        settings=dict(resolved.program),
        program_keys=frozenset(resolved.settings.program),
        cache=cache,
        summaries=dict(summaries or {}),
        reads=reads,
    )


def project_source(resolved: Resolved, item: Discovered, contents: dict[str, bytes], *, watched: bool = False) -> SourceFile | None:
    """The file as the project model holds it, or None for one it leaves out (not a source
    language, unreadable, binary, not decodable: the per-file pass reports those as FX001)."""
    language = language_of(item.relative)
    if language is None:
        return None
    kind = WatchedSource if watched else SourceFile
    try:
        data = contents.get(item.relative)
        if data is None:
            with open(item.absolute, "rb") as handle:
                data = handle.read()
        if b"\0" in data:
            return None
        return kind(path=item.relative, data=data, language=language, defines=resolved.settings.cuda_defines)
    except (OSError, UnicodeDecodeError):
        return None
