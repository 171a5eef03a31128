"""Settings + the rule registry → what one run enables, with which options, under which fingerprint.

Everything a cached per-file result depends on besides the file's own bytes (and the codes
enabled for it) goes into ``fingerprint``: foxaudit's version and the hash of its own source (a
changed rule invalidates the cache even without a version bump), the per-file rules' typed
options, and the content of files rules declare as dependencies (``Rule.dependencies``).
``project_fingerprint`` adds what whole-project results depend on: their rules' options, the
``[tool.foxaudit.program]`` table and ``pyproject.toml``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import foxaudit
from foxaudit.config import (
    ConfigError,
    did_you_mean,
    Settings,
    fingerprint,
    inferred_source_roots,
    resolve_program,
    resolve_rule_options,
)
from foxaudit.engine.cache import Cache
from foxaudit.engine.globs import GlobSet


@dataclass
class Resolved:
    """The enabled rules of a run and everything needed to key its cache.

    ``options`` and ``program`` (typed, which needs every rule class imported) load on first
    use: a run whose files all hit the cache never imports a rule module.
    """

    settings: Settings
    enabled: frozenset[str]
    file_codes: frozenset[str]
    project_codes: frozenset[str]
    fingerprint: str  # keys per-file results: tool, file rules' options, their dependencies
    project_fingerprint: str = ""  # adds project rules' options, the program table, pyproject.toml
    per_file_ignores: tuple[tuple[tuple[str, ...], frozenset[str]], ...] = ()
    # Per-file rules whose findings the whole-project pass confirms (``Rule.confirms_in_project``).
    confirming_codes: frozenset[str] = frozenset()
    _options: dict[str, Any] | None = field(default=None, repr=False)
    _program: dict[str, Any] | None = field(default=None, repr=False)
    _codes_for_cache: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _globs: list[GlobSet] | None = field(default=None, repr=False)

    @property
    def options(self) -> dict[str, Any]:
        if self._options is None:
            self._load()
        return self._options  # type: ignore[return-value]

    @property
    def program(self) -> dict[str, Any]:
        if self._program is None:
            self._load()
        return self._program  # type: ignore[return-value]

    def _load(self) -> None:
        full = resolve(self.settings)
        self._options, self._program = full._options, full._program

    def codes_for(self, path: str) -> frozenset[str]:
        """Enabled codes for one file, after ``per-file-ignores``."""
        cached = self._codes_for_cache.get(path)
        if cached is not None:
            return cached
        if self._globs is None:
            self._globs = [GlobSet(patterns) for patterns, _ in self.per_file_ignores]
        codes = self.enabled
        for globs, (_, ignored) in zip(self._globs, self.per_file_ignores):
            if globs.matches(path):
                codes = codes - ignored
        self._codes_for_cache[path] = codes
        return codes

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_codes_for_cache"] = {}
        state["_globs"] = None
        return state


def registered() -> dict[str, Any]:
    """The registry by code (imports every rule module: only when rules must run or be listed)."""
    from foxaudit.rules.registry import REGISTRY

    return {entry.code: entry for entry in REGISTRY}


def expand(selectors: tuple[str, ...], table: dict[str, Any], where: str, errors: list[str], *, selecting: bool) -> set[str]:
    """Codes matched by selectors: exact codes (preview included when selecting) or prefixes/ALL."""
    codes: set[str] = set()
    for selector in selectors:
        if selector in table:
            entry = table[selector]
            if entry.status == "removed":
                if selecting:
                    errors.append(
                        f"{where}: rule {selector} was removed (got {selector!r} vs a live code)"
                        " — hint: drop it from select; `foxaudit rules` lists live codes"
                    )
                continue
            codes.add(selector)
            continue
        prefix = "" if selector == "ALL" else selector
        matched = {
            code
            for code, entry in table.items()
            if code.startswith(prefix) and entry.status == "stable"
        }
        if not matched and not any(code.startswith(prefix) for code in table):
            errors.append(
                f"{where}: no rule matches {selector!r} (got {selector!r} vs a code or prefix of a registered"
                " rule) — hint: " + did_you_mean(selector, table, "`foxaudit rules` lists the codes")
            )
        codes |= matched
    return codes


def resolve(settings: Settings) -> Resolved:
    """Validate rule-level settings against the registry; raise ConfigError listing every problem."""
    return _resolve(settings)[0]


def _resolve(settings: Settings) -> tuple[Resolved, str, list[str], str, list[str]]:
    from foxaudit.rules.base import ProjectRule, Rule

    table = registered()
    errors: list[str] = []
    label = settings.label
    if settings.select is None:
        enabled = {code for code, entry in table.items() if entry.status == "stable"}
    else:
        enabled = expand(settings.select, table, f"{label}: select", errors, selecting=True)
    enabled -= expand(settings.ignore, table, f"{label}: ignore", errors, selecting=False)
    per_file: list[tuple[tuple[str, ...], frozenset[str]]] = []
    for glob, selectors in settings.per_file_ignores:
        codes = expand(selectors, table, f"{label}: per-file-ignores {glob!r}", errors, selecting=False)
        per_file.append(((glob,), frozenset(codes)))

    live = {code: entry for code, entry in table.items() if entry.status != "removed"}
    options = resolve_rule_options(settings, {code: entry.rule.options_class for code, entry in live.items()}, errors)
    program: dict[str, Any] = {}
    project_codes = frozenset(code for code in enabled if issubclass(table[code].rule, ProjectRule))
    confirming_codes = frozenset(code for code in enabled if getattr(table[code].rule, "confirms_in_project", False))
    if settings.program or project_codes or confirming_codes:
        # foxaudit.program registers the keys of [tool.foxaudit.program] when imported.
        importlib.import_module("foxaudit.program")
        program = resolve_program(settings, errors)
    if errors:
        raise ConfigError(errors)

    file_codes = frozenset(code for code in enabled if issubclass(table[code].rule, Rule))
    dependency_paths = sorted(
        {
            dependency
            for code in file_codes
            for dependency in table[code].rule.dependencies(options[code])  # type: ignore[union-attr]
        }
    )
    base = _base_fingerprint(file_codes, options, settings.cuda_defines)
    # Whole-project rules may also read files that are not sources (the generated audit docs):
    # their content joins the project fingerprint so that regenerating them invalidates the cache.
    project_dependency_paths = sorted(
        {
            dependency
            for code in project_codes
            if hasattr(table[code].rule, "dependencies")
            for dependency in table[code].rule.dependencies(options[code], program)  # type: ignore[union-attr]
        }
    )
    project_base = fingerprint(
        {
            "options": {code: options[code] for code in sorted(project_codes)},
            "program": program if project_codes or confirming_codes else {},
            "pyproject": settings.pyproject if project_codes or confirming_codes else {},
        }
    )
    resolved = Resolved(
        settings=settings,
        enabled=frozenset(enabled),
        file_codes=file_codes,
        project_codes=project_codes,
        fingerprint=_with_dependencies(base, dependency_paths, settings),
        project_fingerprint=_with_dependencies(project_base, project_dependency_paths, settings),
        per_file_ignores=tuple(per_file),
        confirming_codes=confirming_codes,
        _options=options,
        _program=program,
    )
    return resolved, base, dependency_paths, project_base, project_dependency_paths


def _base_fingerprint(file_codes: frozenset[str], options: dict[str, Any], cuda_defines: tuple = ()) -> str:
    # Only per-file rules: turning whole-project rules on or off keeps per-file entries valid
    # (the codes enabled for each file are part of each file's key anyway).
    return fingerprint(
        {
            "tool": tool_fingerprint(),
            "file_codes": sorted(file_codes),
            "options": {code: options[code] for code in sorted(file_codes)},
            "cuda_defines": cuda_defines,
        }
    )


def _with_dependencies(base: str, dependency_paths: list[str], settings: Settings) -> str:
    """The run fingerprint: the base plus the content of every file rules depend on."""
    if not dependency_paths:
        return base
    return fingerprint({"base": base, "dependencies": {path: _file_digest(settings.root / path) for path in dependency_paths}})


def resolve_cached(settings: Settings, store: Cache | None) -> Resolved:
    """``resolve`` memoised in the result cache, keyed by foxaudit's source and the settings.

    A hit rebuilds the Resolved without importing any rule (options load lazily if a file
    must be analysed); only valid configurations are ever stored.
    """
    if store is None:
        return resolve(settings)
    key = "resolve-" + fingerprint(
        {
            "tool": tool_fingerprint(),
            "select": settings.select,
            "ignore": settings.ignore,
            "per_file_ignores": settings.per_file_ignores,
            "rules": settings.rules,
            "program": settings.program,
            "pyproject": settings.pyproject,
            "cuda_defines": settings.cuda_defines,
            # Read from the tree, not the settings: a src/ made or removed re-resolves.
            "source_roots": inferred_source_roots(settings.root, settings.pyproject),
        }
    )
    entry = store.get(key)
    if entry is not None:
        return Resolved(
            settings=settings,
            enabled=frozenset(entry["enabled"]),
            file_codes=frozenset(entry["file_codes"]),
            project_codes=frozenset(entry["project_codes"]),
            fingerprint=_with_dependencies(entry["base"], entry["dependencies"], settings),
            project_fingerprint=_with_dependencies(entry["project"], entry["project_dependencies"], settings),
            per_file_ignores=tuple((tuple(globs), frozenset(codes)) for globs, codes in entry["per_file_ignores"]),
            confirming_codes=frozenset(entry.get("confirming_codes", ())),
        )
    resolved, base, dependency_paths, project_base, project_dependency_paths = _resolve(settings)
    store.put(
        key,
        {
            "enabled": sorted(resolved.enabled),
            "file_codes": sorted(resolved.file_codes),
            "project_codes": sorted(resolved.project_codes),
            "confirming_codes": sorted(resolved.confirming_codes),
            "base": base,
            "project": project_base,
            "project_dependencies": project_dependency_paths,
            "dependencies": dependency_paths,
            "per_file_ignores": [[list(globs), sorted(codes)] for globs, codes in resolved.per_file_ignores],
        },
    )
    return resolved


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


@functools.cache
def tool_fingerprint() -> str:
    """foxaudit's version plus a hash of its own source files (content, not mtime)."""
    package = Path(foxaudit.__file__).parent
    digest = hashlib.sha256(foxaudit.__version__.encode())
    for directory, subdirectories, files in os.walk(package):
        subdirectories[:] = sorted(name for name in subdirectories if name != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, package).encode())
                with open(path, "rb") as handle:
                    digest.update(handle.read())
    return digest.hexdigest()
