"""The ``Project`` handed to whole-project rules, built from the run's discovered files.

``foxaudit.program.project.Project`` is the model (owned by the whole-program layer); the
engine only fills it: every discovered file that decodes as UTF-8, as a ``SourceFile`` whose
tree-sitter tree is parsed on first use (a rule that only reads Python never parses CUDA).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foxaudit.engine import run
from foxaudit.engine.discovery import Discovered, discover
from foxaudit.engine.resolve import Resolved
from foxaudit.program import configrefs
from foxaudit.program.configrefs import (
    CONFIG_SUFFIXES,
    COMMAND_FILES,
    CYTHON_SUFFIX,
    DOCUMENTATION_SUFFIXES,
    NESTED_PROJECT_FILE,
    NOTEBOOK_SUFFIX,
    config_targets,
    cython_import_text,
    documentation_includes,
    nested_project_targets,
    notebook_imports,
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


# What the graph-input readers make of a file is recorded against its stat stamp, so a warm run
# opens none of a project's documentation pages (FastAPI: 1,692 of them, 12.5 MB, 0.22 s a run).
_READERS_FINGERPRINT = hashlib.sha256(Path(configrefs.__file__).read_bytes()).hexdigest()[:16]


def read_config_targets(configs: list[Discovered], store: Store | None = None) -> dict[str, tuple[tuple[int, str], ...]]:
    """Path → the names each configuration file gives the import graph, where it gives any
    (unreadable: none): a YAML file's ``_target_`` names, a nested project's packages, a
    notebook's imports, the files a documentation page includes. With a ``store``, a file whose
    stat stamp is the one recorded there is not read again (the record is data: checked, not trusted)."""
    name = "configrefs-" + hashlib.sha256(
        "\0".join([_READERS_FINGERPRINT, *(item.relative for item in configs)]).encode("utf-8", "surrogateescape")).hexdigest()
    entry = store.get(name) if store is not None else None
    recorded = entry.get("files") if isinstance(entry, dict) else None
    recorded = recorded if isinstance(recorded, dict) else {}
    kept: dict[str, list[Any]] = {}
    found: dict[str, tuple[tuple[int, str], ...]] = {}
    started = time.time_ns()
    for item in configs:
        read = _graph_input_reader(item.relative)
        if read is None:
            continue
        try:
            status = os.stat(item.absolute)
            stamp = [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]
            targets = _recorded_targets(recorded.get(item.relative), stamp)
            if targets is None:
                with open(item.absolute, "rb") as handle:
                    targets = read(handle.read())
        except OSError:
            continue
        if status.st_mtime_ns < started - run.RACY_NS and status.st_ctime_ns < started - run.RACY_NS:
            kept[item.relative] = [*stamp, [list(target) for target in targets]]
        if targets:
            found[item.relative] = targets
    if store is not None and kept != recorded:
        store.put(name, {"files": kept})
    return found


def _graph_input_reader(relative: str) -> Callable[[bytes], tuple[tuple[int, str], ...]] | None:
    """The reader of a graph-input file of this name (None: a Cython module, read on its own)."""
    if relative.endswith(CONFIG_SUFFIXES) or relative.endswith(COMMAND_FILES):
        return config_targets  # (a file of command lines names the scripts it runs by path, as YAML does)
    if relative.endswith("/" + NESTED_PROJECT_FILE):
        return nested_project_targets
    if relative.endswith(NOTEBOOK_SUFFIX):
        return notebook_imports
    if relative.endswith(DOCUMENTATION_SUFFIXES):
        return documentation_includes
    return None


def _recorded_targets(memo: Any, stamp: list[int]) -> tuple[tuple[int, str], ...] | None:
    """The targets recorded for a file with exactly this stat ``stamp`` (None: none usable)."""
    if type(memo) is not list or len(memo) != 5 or memo[:4] != stamp or type(memo[4]) is not list:
        return None
    targets = []
    for target in memo[4]:
        if type(target) is not list or len(target) != 2 or type(target[0]) is not int or type(target[1]) is not str:
            return None
        targets.append((target[0], target[1]))
    return tuple(targets)


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
