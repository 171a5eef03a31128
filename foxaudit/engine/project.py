"""The ``Project`` handed to whole-project rules, built from the run's discovered files.

``foxaudit.program.project.Project`` is the model (owned by the whole-program layer); the
engine only fills it: every discovered file that decodes as UTF-8, as a ``SourceFile`` whose
tree-sitter tree is parsed on first use (a rule that only reads Python never parses CUDA).
"""

from __future__ import annotations

from foxaudit.engine.discovery import Discovered
from foxaudit.engine.resolve import Resolved
from foxaudit.program.model import Prepared
from foxaudit.program.project import Project
from foxaudit.sources.base import SourceFile, language_of
from foxaudit.store import Store


def build_project(
    resolved: Resolved,
    files: list[Discovered],
    cache: Store | None = None,
    summaries: dict[str, Prepared] | None = None,
    contents: dict[str, bytes] | None = None,
) -> Project:
    """``summaries``: those the per-file pass made from its own parse (path → Prepared);
    ``contents``: files' bytes the run has already read (path → bytes), not read again."""
    contents = contents or {}
    sources: list[SourceFile] = []
    for item in files:
        language = language_of(item.relative)
        if language is None:
            continue
        try:
            data = contents.get(item.relative)
            if data is None:
                with open(item.absolute, "rb") as handle:
                    data = handle.read()
            if b"\0" in data:
                continue
            sources.append(SourceFile(path=item.relative, data=data, language=language,
                                      defines=resolved.settings.cuda_defines))
        except (OSError, UnicodeDecodeError):
            # Reported as FX001 by the per-file pass; the project model leaves the file out.
            continue
    return Project(
        root=resolved.settings.root,
        files=sources,
        pyproject=dict(resolved.settings.pyproject),
        settings=dict(resolved.program),
        program_keys=frozenset(resolved.settings.program),
        cache=cache,
        summaries=dict(summaries or {}),
    )
