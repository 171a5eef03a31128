"""The ``Project`` handed to whole-project rules, built from the run's discovered files.

``foxaudit.program.project.Project`` is the model (owned by the whole-program layer); the
engine only fills it: every discovered file that decodes as UTF-8, as a ``SourceFile`` whose
tree-sitter tree is parsed on first use (a rule that only reads Python never parses CUDA).
"""

from __future__ import annotations

from foxaudit.engine.discovery import Discovered, discover
from foxaudit.engine.resolve import Resolved
from foxaudit.program.configrefs import (
    CONFIG_SUFFIXES,
    CYTHON_SUFFIX,
    NESTED_PROJECT_FILE,
    config_targets,
    NOTEBOOK_SUFFIX,
    cython_import_text,
    notebook_imports,
    nested_project_targets,
)
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
    config_targets: dict[str, tuple[tuple[int, str], ...]] | None = None,
    cython_imports: dict[str, str] | None = None,
) -> Project:
    """``summaries``: those the per-file pass made from its own parse (path → Prepared);
    ``contents``: files' bytes the run has already read (path → bytes), not read again;
    ``reads``: where to note the files whose content (not summary) the rules read;
    ``config_targets``, ``cython_imports``: what the project's YAML files name and its Cython
    modules import (``read_config_targets``, ``read_cython_imports``), read here from a discovery
    of its own when not given."""
    contents = contents or {}
    if config_targets is None or cython_imports is None:
        configs: list[Discovered] = []
        discover(resolved.settings, None, configs=configs)
        config_targets = read_config_targets(configs) if config_targets is None else config_targets
        cython_imports = read_cython_imports(configs) if cython_imports is None else cython_imports
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
        config_targets=config_targets,
        cython_imports=cython_imports,
        unreported=frozenset(item.relative for item in files if not item.owned),
    )


def read_config_targets(configs: list[Discovered]) -> dict[str, tuple[tuple[int, str], ...]]:
    """Path → the names each configuration file gives the import graph, where it gives any
    (unreadable: none): a YAML file's ``_target_`` names, a nested project's packages."""
    found: dict[str, tuple[tuple[int, str], ...]] = {}
    for item in configs:
        if item.relative.endswith(CONFIG_SUFFIXES):
            read = config_targets
        elif item.relative.endswith("/" + NESTED_PROJECT_FILE):
            read = nested_project_targets
        elif item.relative.endswith(NOTEBOOK_SUFFIX):
            read = notebook_imports
        else:
            continue
        try:
            with open(item.absolute, "rb") as handle:
                targets = read(handle.read())
        except OSError:
            continue
        if targets:
            found[item.relative] = targets
    return found


def read_cython_imports(listed: list[Discovered]) -> dict[str, str]:
    """Path → the run-time import statements of each Cython module (``.pyx``) listed (unreadable: left out)."""
    found: dict[str, str] = {}
    for item in listed:
        if not item.relative.endswith(CYTHON_SUFFIX):
            continue
        try:
            with open(item.absolute, "rb") as handle:
                found[item.relative] = cython_import_text(handle.read())
        except OSError:
            continue
    return found


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
