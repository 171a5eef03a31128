"""``[tool.foxaudit]`` → typed, validated settings.

The table lives in ``pyproject.toml`` (or any TOML file given with ``--config``, where the same
keys may sit at the top level or under ``[tool.foxaudit]``). Validation collects EVERY problem
before failing, each naming the file and the dotted key, so one run shows the whole list.

This module sits below the rules layer, so it cannot know the rules: the engine hands it the
rule codes and options classes (:func:`resolve_rule_options`). Whole-project settings live under
``[tool.foxaudit.program]``; their schema is a registry that ``foxaudit.program`` fills with
:func:`register_program_keys` (a key not registered there is an error like any other).
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import hashlib
import json
import os
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.cu", "*.cuh")
CODE_PATTERN = re.compile(r"^FX\d{3}$")
SELECTOR_PATTERN = re.compile(r"^(ALL|FX\d{0,3})$")

TOP_LEVEL_KEYS = {
    "select": "codes or prefixes to enable (default: every stable rule)",
    "ignore": "codes or prefixes to disable (applied after select)",
    "include": "globs of files to check (default: *.py, *.pyi, *.cu, *.cuh)",
    "exclude": "globs of files or directories to skip (added to the built-in VCS/venv list)",
    "linter-excludes": "whether the files flake8's and ruff's exclude settings name are read but not reported (default true)",
    "per-file-ignores": "table: glob → codes or prefixes disabled for matching files",
    "rules": "table: rule code → that rule's options",
    "program": "table: whole-project settings (entry points, hot-path roots, ...)",
    "cuda": "table: how CUDA files are preprocessed (defines = {NAME = value})",
}
CUDA_KEYS = {"defines": "table: macro → value (string or integer; true defines it as 1, false undefines it)"}


# The opt-in to execute the `generated-headers` commands (FX503). It comes from the environment
# (or `foxaudit check --run-generators`, which sets it), never from the configuration: the
# configuration belongs to the repository being analysed, which is what the opt-in guards against.
RUN_GENERATORS_VARIABLE = "FOXAUDIT_RUN_GENERATORS"


def generators_allowed() -> bool:
    """Whether this run may execute commands written in the analysed repository's configuration."""
    return os.environ.get(RUN_GENERATORS_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


class ConfigError(Exception):
    """One or more configuration problems; ``errors`` holds every message."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class ProgramKey:
    """One allowed key of ``[tool.foxaudit.program]``: its type (e.g. ``list[str]``), help, default."""

    hint: Any
    help: str
    default: Any = None


PROGRAM_SCHEMA: dict[str, ProgramKey] = {}


def register_program_keys(keys: Mapping[str, ProgramKey]) -> None:
    """Allow keys under ``[tool.foxaudit.program]`` (called by ``foxaudit.program`` at import)."""
    for key, spec in keys.items():
        existing = PROGRAM_SCHEMA.get(key)
        if existing is not None and existing != spec:
            raise ValueError(
                f"program key registered twice with different specs ({key!r}: {existing} vs {spec})"
                " — hint: register each key once"
            )
        PROGRAM_SCHEMA[key] = spec


@dataclass(frozen=True)
class Settings:
    """Raw-but-structurally-valid settings; the engine resolves rules and options from them."""

    root: Path
    config_path: Path | None = None
    select: tuple[str, ...] | None = None  # None: every stable rule
    ignore: tuple[str, ...] = ()
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    rules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    program: Mapping[str, Any] = field(default_factory=dict)
    pyproject: Mapping[str, Any] = field(default_factory=dict)
    # [tool.foxaudit.cuda] defines: (macro, value text or None to undefine), sorted by name.
    cuda_defines: tuple[tuple[str, str | None], ...] = ()
    # Third-party code the project copies in (`[tool.vendoring] destination`): read for the import
    # graph, never reported on (``foxaudit.engine.discovery.discover``'s ``unreported``).
    third_party: tuple[str, ...] = ()
    # `.pre-commit-config.yaml`'s top-level `exclude` (a regular expression pre-commit searches each
    # repository-relative path with): what no hook sees, foxaudit's included, is not reported either.
    pre_commit_exclude: re.Pattern[str] | None = None
    # What the project's linters are told to skip (flake8's and ruff's `exclude`/`extend-exclude`),
    # in their own dialect (``linter_excluded``): read, not reported, as the two above.
    linter_exclude: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How messages name the configuration source."""
        return str(self.config_path) if self.config_path else "<defaults>"


def find_config(start: Path) -> tuple[Path, Path | None]:
    """(project root, pyproject with [tool.foxaudit] or None) found walking up from ``start``.

    The nearest ``pyproject.toml`` with a ``[tool.foxaudit]`` table wins; otherwise the root is
    the nearest directory holding a ``pyproject.toml`` or ``.git``; otherwise ``start`` itself.
    """
    start = start.resolve()
    fallback: Path | None = None
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            if "[tool.foxaudit" in text or re.search(r"^\s*tool\s*\.\s*foxaudit", text, re.MULTILINE):
                return directory, candidate
            fallback = fallback or directory
        elif fallback is None and (directory / ".git").exists():
            fallback = directory
    return (fallback or start), None


def load_settings(
    config_file: Path | None = None,
    start: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    errors: list[str] | None = None,
) -> Settings:
    """Read and structurally validate the configuration; raise ConfigError listing every problem.

    ``overrides`` holds command-line values (``select``, ``extend_ignore``) applied on top.
    With an ``errors`` list, problems are appended there instead and the valid part of the
    settings is returned, so the caller can add the rule-level problems to the same report.
    """
    collect = errors is not None
    errors = errors if errors is not None else []
    pyproject: dict[str, Any] = {}
    if config_file is not None:
        config_path = config_file.resolve()
        root = config_path.parent
        document = _read_toml(config_path, errors)
        table = document.get("tool", {}).get("foxaudit") if isinstance(document.get("tool"), dict) else None
        if config_path.name == "pyproject.toml":
            pyproject = document
        elif (root / "pyproject.toml").is_file():
            # Whole-project rules read [project] ([project.scripts], ...) from the real pyproject.
            pyproject = _read_toml(root / "pyproject.toml", errors)
        if table is None:
            # A dedicated file (foxaudit.toml) may hold the keys at its top level.
            table = document
    else:
        root, config_path = find_config(start or Path.cwd())
        table = {}
        if config_path is not None:
            pyproject = _read_toml(config_path, errors)
            table = pyproject.get("tool", {}).get("foxaudit", {})
        elif (root / "pyproject.toml").is_file():
            pyproject = _read_toml(root / "pyproject.toml", errors)
    label = str(config_path) if config_path else "<defaults>"
    if not isinstance(table, dict):
        errors.append(
            f"{label}: [tool.foxaudit] must be a table (got {type(table).__name__} vs table)"
            " — hint: write it as a [tool.foxaudit] section"
        )
        table = {}

    for key in table:
        if key not in TOP_LEVEL_KEYS:
            errors.append(_unknown(label, "tool.foxaudit", key, TOP_LEVEL_KEYS))

    select = _selectors(table, "select", label, errors) if "select" in table else None
    ignore = _selectors(table, "ignore", label, errors) if "ignore" in table else ()
    include = _globs(table, "include", label, errors) if "include" in table else DEFAULT_INCLUDE
    exclude = _globs(table, "exclude", label, errors) if "exclude" in table else ()

    per_file: list[tuple[str, tuple[str, ...]]] = []
    linter_excludes = table.get("linter-excludes", True)
    if not isinstance(linter_excludes, bool):
        errors.append(_wrong_type(label, "[tool.foxaudit] key 'linter-excludes'", linter_excludes, "true or false"))
        linter_excludes = True
    raw_pfi = table.get("per-file-ignores", {})
    if not isinstance(raw_pfi, dict):
        errors.append(_wrong_type(label, "[tool.foxaudit] key 'per-file-ignores'", raw_pfi, "table of glob → list of codes"))
    else:
        for glob, codes in raw_pfi.items():
            parsed = _selector_list(codes, f"[tool.foxaudit.per-file-ignores] key {glob!r}", label, errors)
            per_file.append((glob, parsed))

    rules = table.get("rules", {})
    if not isinstance(rules, dict):
        errors.append(_wrong_type(label, "[tool.foxaudit] key 'rules'", rules, "table of CODE → options table"))
        rules = {}
    for code, options in rules.items():
        if not isinstance(options, dict):
            errors.append(_wrong_type(label, f"[tool.foxaudit.rules] key {code!r}", options, "table of options"))

    program = table.get("program", {})
    if not isinstance(program, dict):
        errors.append(_wrong_type(label, "[tool.foxaudit] key 'program'", program, "table"))
        program = {}

    cuda_defines = _cuda_defines(table.get("cuda", {}), label, errors)

    if overrides:
        if overrides.get("select") is not None:
            select = _selector_list(list(overrides["select"]), "--select", "command line", errors)
        if overrides.get("extend_ignore"):
            ignore = (*ignore, *_selector_list(list(overrides["extend_ignore"]), "--ignore", "command line", errors))

    if errors and not collect:
        raise ConfigError(errors)
    return Settings(
        root=root,
        config_path=config_path,
        select=select,
        ignore=ignore,
        include=include,
        exclude=exclude,
        per_file_ignores=tuple(per_file),
        rules={code: dict(options) for code, options in rules.items() if isinstance(options, dict)},
        program=dict(program),
        pyproject=pyproject,
        cuda_defines=cuda_defines,
        third_party=_vendored(pyproject),
        pre_commit_exclude=pre_commit_exclude(root),
        linter_exclude=linter_exclude(root, pyproject) if linter_excludes else (),
    )


def resolve_rule_options(
    settings: Settings,
    options_classes: Mapping[str, type],
    errors: list[str],
) -> dict[str, Any]:
    """Typed options (an instance of each rule's options dataclass) for every code given.

    Problems (unknown code, unknown key, wrong type) are appended to ``errors``.
    """
    resolved: dict[str, Any] = {}
    for code in settings.rules:
        if code not in options_classes:
            errors.append(
                f"{settings.label}: [tool.foxaudit.rules] key {code!r}: unknown rule code"
                f" (got {code!r} vs a registered code) — hint: "
                + did_you_mean(code, options_classes, "`foxaudit rules` lists them")
            )
    for code, options_class in options_classes.items():
        raw = settings.rules.get(code, {})
        if not dataclasses.is_dataclass(options_class):
            if raw:
                errors.append(
                    f"{settings.label}: [tool.foxaudit.rules.{code}] rule {code} takes no options"
                    f" (got {', '.join(sorted(raw))} vs none) — hint: remove the table"
                )
            resolved[code] = options_class()
            continue
        fields = {f.name.replace("_", "-"): f for f in dataclasses.fields(options_class)}
        hints = typing.get_type_hints(options_class)
        # Defaults a rule reads from the project's own files for the keys it was not given
        # (FX902's test files from pytest's `testpaths`): part of the options, so of every key.
        project_defaults = getattr(options_class, "project_defaults", None)
        values: dict[str, Any] = {
            name: value for name, value in (project_defaults(settings.pyproject) if project_defaults else {}).items()
            if name.replace("_", "-") not in raw}
        ok = True
        for key, value in raw.items():
            spec = fields.get(key)
            if spec is None:
                errors.append(_unknown(settings.label, f"tool.foxaudit.rules.{code}", key, fields))
                ok = False
                continue
            problem, converted = check_value(value, hints[spec.name])
            if problem and hasattr(options_class, "__post_init__"):
                # The options class may accept more shapes than its annotation says (its
                # __post_init__ normalises them); its own error message is the better one.
                try:
                    options_class(**{spec.name: value})
                except (TypeError, ValueError) as exc:
                    problem = str(exc) if str(exc) else problem
                else:
                    values[spec.name] = value
                    continue
            if problem:
                hint = "" if "— hint:" in problem else f" — hint: see `foxaudit rule {code}`"
                errors.append(f"{settings.label}: [tool.foxaudit.rules.{code}] key {key!r}: {problem}{hint}")
                ok = False
                continue
            values[spec.name] = converted
        if ok:
            try:
                resolved[code] = options_class(**values)
            except (TypeError, ValueError) as exc:
                errors.append(
                    f"{settings.label}: [tool.foxaudit.rules.{code}] invalid options ({exc})"
                    f" — hint: see `foxaudit rule {code}`"
                )
    return resolved


SOURCE_ROOTS_KEY = "source-roots"


def inferred_source_roots(root: Path, pyproject: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``source-roots`` for a project that does not set them, where the default (``.``) would
    misname its modules: ``(".", "src")`` for a src layout, ``(".", "lib")`` for sqlalchemy's
    ``where = ["lib"]``, else None (the default stands).

    A folder is a source root when it is no package itself (no ``__init__.py``) and the packaging
    says the code is importable from it: setuptools (``package-dir``, ``packages.find.where``,
    setup.cfg's ``package_dir``, setup.py's ``package_dir``/``find_packages``), hatch, poetry or pdm
    name it (``_packaging_source_folders``); or, for ``src`` alone, the distribution's package
    (``[project] name``, ``-`` → ``_``) is ``src/<name>/`` or ``src/<name>.py``. Why: with ``.``
    alone ``src/click/core.py`` is module ``src.click.core``, which nothing imports, so every
    module of a src-layout library was an orphan (FX201) and its imports resolved nowhere. A
    ``src`` directory the code imports as ``src.x`` (no such packaging) keeps the default."""
    folders = [folder for folder in _packaging_source_folders(root, pyproject)
               if (root / folder).is_dir() and not (root / folder / "__init__.py").exists()]
    src = root / "src"
    name = distribution_name(pyproject)
    # `src/<name>/` with or without an `__init__.py` (poetry's `src/poetry/` is a namespace
    # package it shares with poetry-core).
    if "src" not in folders and src.is_dir() and not (src / "__init__.py").exists() and name and (
            (src / name / "__init__.py").is_file() or (src / f"{name}.py").is_file() or _holds_python(src / name)):
        folders.append("src")
    return (".", *sorted(folders)) if folders else None


def distribution_name(pyproject: Mapping[str, Any]) -> str:
    """The distribution's name as an import name (``-`` and ``.`` → ``_``, lower case): ``[project]
    name``, else ``[tool.poetry] name`` (a Poetry 1 project has no ``[project]`` table); '' when
    neither is written."""
    for section in (pyproject.get("project"), (pyproject.get("tool") or {}).get("poetry") if isinstance(pyproject.get("tool"), Mapping) else None):
        if isinstance(section, Mapping) and isinstance(section.get("name"), str) and section["name"].strip():
            return section["name"].strip().lower().replace("-", "_").replace(".", "_")
    return ""


def _pytest_setting(pyproject: Any, key: str) -> list[Any]:
    """A list setting of pytest's in pyproject.toml (``[tool.pytest.ini_options]``, or pytest 9's
    ``[tool.pytest]``): a string is split on whitespace as pytest's ini lines are; absent: []."""
    tool = pyproject.get("tool") if isinstance(pyproject, dict) else None
    pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(pytest_table, dict):
        return []
    options = pytest_table.get("ini_options")
    listed = options.get(key) if isinstance(options, dict) else pytest_table.get(key)
    if isinstance(listed, str):
        listed = listed.split()
    return listed if isinstance(listed, list) else []


def pytest_norecursedirs(pyproject: Any) -> tuple[str, ...]:
    """The directories pytest's ``norecursedirs`` keeps it from collecting, as globs of foxaudit's
    dialect (``foxaudit.globs``): pytest matches a pattern without a ``/`` against each directory's
    name (``build`` → ``build/``) and one with a ``/`` against the end of its path
    (``testing/example_scripts`` → ``**/testing/example_scripts/``). Read from pyproject.toml only,
    as ``pytest_testpaths``."""
    globs = []
    for pattern in _pytest_setting(pyproject, "norecursedirs"):
        pattern = str(pattern).strip().removeprefix("./").rstrip("/")
        if not pattern or pattern.startswith(("/", "..")):
            continue
        globs.append(f"**/{pattern}/" if "/" in pattern else f"{pattern}/")
    return tuple(globs)


def ruff_ignored_in(pyproject: Any, code: str) -> tuple[str, ...]:
    """The files where the project's ruff configuration in pyproject.toml turns ``code`` off, as
    globs of foxaudit's dialect: ``("*",)`` for every file when ``[tool.ruff.lint] ignore`` (or the
    older ``[tool.ruff] ignore``) holds a selector of it (``B027``, ``B02``, ``B``), else the keys
    of ``per-file-ignores`` that do (``"./pkg/callbacks.py"`` → ``pkg/callbacks.py``; ruff matches
    a key without a ``/`` against the file name, as foxaudit's dialect does). What the project told
    its linter is meant, it need not hear again. Read from pyproject.toml only (not ``ruff.toml``),
    which the cache keys cover."""
    tool = pyproject.get("tool") if isinstance(pyproject, dict) else None
    ruff = tool.get("ruff") if isinstance(tool, dict) else None
    if not isinstance(ruff, dict):
        return ()

    def selects(selectors: Any) -> bool:
        return isinstance(selectors, list) and any(
            isinstance(selector, str) and selector and code.startswith(selector.strip()) for selector in selectors)

    tables = [table for table in (ruff.get("lint"), ruff) if isinstance(table, dict)]
    if any(selects(table.get("ignore")) for table in tables):
        return ("*",)
    globs = []
    for table in tables:
        per_file = table.get("per-file-ignores")
        for key, selectors in (per_file.items() if isinstance(per_file, dict) else ()):
            glob = str(key).strip().removeprefix("./")
            if glob and not glob.startswith(("/", "..", "!")) and selects(selectors):
                globs.append(glob)
    return tuple(globs)


def pytest_testpaths(pyproject: Any) -> tuple[str, ...]:
    """The directories pytest's ``testpaths`` names in pyproject.toml (``[tool.pytest.ini_options]``,
    or pytest 9's ``[tool.pytest]``), as path prefixes (``("testing/",)``): where the project tells
    pytest its tests are (pytest's own repository keeps them in ``testing/``); the distribution's
    own package folder is left out. Read from pyproject.toml only, which the whole-program cache
    key covers."""
    listed = _pytest_setting(pyproject, "testpaths")
    if not listed:
        return ()
    prefixes = (str(path).strip().strip("/").removeprefix("./") for path in listed)
    # The package itself (statsmodels' `testpaths = "statsmodels"`: tests live in its `tests/`
    # folders, which count anyway) is no test folder: its other modules are the library.
    package = distribution_name(pyproject)
    own = {package, f"src/{package}"} if package else set()
    return tuple(f"{prefix}/" for prefix in prefixes if prefix and prefix != "." and "*" not in prefix and prefix not in own)


def _holds_python(folder: Path) -> bool:
    """Whether ``folder`` holds a ``.py`` file directly (a namespace package's modules)."""
    try:
        return folder.is_dir() and any(entry.suffix == ".py" for entry in folder.iterdir())
    except OSError:
        return False


def _packaging_source_folders(root: Path, pyproject: Mapping[str, Any]) -> set[str]:
    """The folders (relative, POSIX, not ``.``) a build backend's configuration names as where the
    packages are: setuptools' ``package-dir`` (``{"" = "lib"}``; ``{pkg = "lib/pkg"}`` → ``lib``)
    and ``packages.find.where``, hatch's wheel ``packages`` (``src/pkg`` → ``src``) and ``sources``,
    poetry's ``packages`` ``from``, pdm's ``package-dir``; setup.cfg's ``package_dir = =lib`` and
    setup.py's ``package_dir={"": "lib"}`` / ``find_packages("lib")``."""

    def table(*keys: str) -> Any:
        node: Any = pyproject
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node

    def folder(path: Any, drop: int = 0) -> str:
        parts = [part for part in str(path).strip().split("/") if part not in ("", ".")] if isinstance(path, str) else []
        return "/".join(parts[: len(parts) - drop]) if len(parts) > drop else ""

    named: list[str] = []
    package_dir = table("tool", "setuptools", "package-dir")
    if isinstance(package_dir, Mapping):
        named.extend(folder(value, len(key.split(".")) if key else 0) for key, value in package_dir.items())
    where = table("tool", "setuptools", "packages", "find", "where")
    named.extend(folder(item) for item in (where if isinstance(where, list) else [where]))
    wheel_packages = table("tool", "hatch", "build", "targets", "wheel", "packages")
    if isinstance(wheel_packages, list):
        named.extend(folder(item, 1) for item in wheel_packages)
    sources = table("tool", "hatch", "build", "sources")
    if isinstance(sources, Mapping):
        named.extend(folder(key) for key, value in sources.items() if value in ("", "."))
    elif isinstance(sources, list):
        named.extend(folder(item) for item in sources)
    poetry_packages = table("tool", "poetry", "packages")
    if isinstance(poetry_packages, list):
        named.extend(folder(item.get("from")) for item in poetry_packages if isinstance(item, Mapping))
    named.append(folder(table("tool", "pdm", "build", "package-dir")))
    for name, pattern in _SETUP_SOURCE_FOLDER:
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        named.extend(folder(match.group(match.lastgroup or 0)) for match in pattern.finditer(text))
    return {name for name in named if name}


# setuptools' configuration files and how each names the folder the packages are in: setup.cfg's
# `package_dir = =lib`; setup.py's `package_dir={"": "src"}` or `find_packages("src")` /
# `find_namespace_packages(where="src")` (accelerate's setup.py, with a pyproject.toml of tool
# settings only).
_SETUP_SOURCE_FOLDER = (
    ("setup.cfg", re.compile(r"^\s*package_dir\s*=\s*(?:\n\s*)?=\s*(?P<folder>[\w.-]+(?:/[\w.-]+)*)/?\s*$", re.MULTILINE)),
    ("setup.py", re.compile(r"""package_dir\s*=\s*\{\s*(?:""|'')\s*:\s*["'](?P<folder>[\w.-]+(?:/[\w.-]+)*?)/?["']"""
                            r"""|find_(?:namespace_)?packages\(\s*(?:where\s*=\s*)?["'](?P<found>[\w.-]+(?:/[\w.-]+)*?)/?["']""")),
)


def resolve_program(settings: Settings, errors: list[str]) -> dict[str, Any]:
    """``[tool.foxaudit.program]`` checked against PROGRAM_SCHEMA, defaults filled in (a src
    layout's ``source-roots`` inferred: :func:`inferred_source_roots`)."""
    resolved = {key: spec.default for key, spec in PROGRAM_SCHEMA.items()}
    if SOURCE_ROOTS_KEY in resolved and SOURCE_ROOTS_KEY not in settings.program:
        inferred = inferred_source_roots(settings.root, settings.pyproject)
        if inferred is not None:
            resolved[SOURCE_ROOTS_KEY] = list(inferred)  # as TOML writes it
    for key, value in settings.program.items():
        spec = PROGRAM_SCHEMA.get(key)
        if spec is None:
            errors.append(_unknown(settings.label, "tool.foxaudit.program", key, PROGRAM_SCHEMA))
            continue
        problem, converted = check_value(value, spec.hint)
        if problem:
            errors.append(
                f"{settings.label}: [tool.foxaudit.program] key {key!r}: {problem} — hint: {spec.help}"
            )
            continue
        resolved[key] = converted
    return resolved


def check_value(value: Any, hint: Any) -> tuple[str, Any]:
    """('', converted) when ``value`` (parsed TOML) fits the type ``hint``, else (problem, None).

    Lists become tuples/frozensets when the hint asks for them, so frozen options stay hashable.
    """
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return "", value
    if origin in (typing.Union, types.UnionType):
        problems = []
        for option in args:
            if option is type(None):
                if value is None:
                    return "", None
                continue
            problem, converted = check_value(value, option)
            if not problem:
                return "", converted
            problems.append(problem)
        return problems[0] if problems else f"wrong type (got {_describe(value)} vs {_type_name(hint)})", None
    if origin is typing.Literal:
        if value in args:
            return "", value
        return f"not an allowed value (got {value!r} vs one of {', '.join(map(repr, args))})", None
    if origin in (list, tuple, frozenset, set) or hint in (list, tuple, frozenset, set):
        if not isinstance(value, list):
            return f"wrong type (got {_describe(value)} vs {_type_name(hint)})", None
        item_hint = args[0] if args else Any
        items = []
        for index, item in enumerate(value):
            problem, converted = check_value(item, item_hint)
            if problem:
                return f"item {index}: {problem}", None
            items.append(converted)
        container = origin or hint
        if container is list:
            return "", items
        if container is set:
            return "", frozenset(items)
        return "", container(items)
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            return f"wrong type (got {_describe(value)} vs {_type_name(hint)})", None
        key_hint, value_hint = args if args else (Any, Any)
        converted_dict = {}
        for key, item in value.items():
            problem, converted = check_value(key, key_hint)
            if problem:
                return f"key {key!r}: {problem}", None
            problem, converted_item = check_value(item, value_hint)
            if problem:
                return f"{key!r}: {problem}", None
            converted_dict[converted] = converted_item
        return "", converted_dict
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return "", float(value)
        return f"wrong type (got {_describe(value)} vs float)", None
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return "", value
        return f"wrong type (got {_describe(value)} vs int)", None
    if isinstance(hint, type):
        if isinstance(value, hint):
            return "", value
        return f"wrong type (got {_describe(value)} vs {_type_name(hint)})", None
    return "", value


def fingerprint(payload: Any) -> str:
    """Stable hash of JSON-able data (sets and tuples sorted/listed) for cache keys."""
    return hashlib.sha256(json.dumps(_canonical(payload), sort_keys=True).encode()).hexdigest()


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _read_toml(path: Path, errors: list[str]) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        errors.append(f"{path}: configuration file not found (got a missing path vs an existing file) — hint: check --config")
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(f"{path}: cannot read configuration ({exc}) — hint: check the file's permissions and encoding")
    except tomllib.TOMLDecodeError as exc:
        errors.append(f"{path}: invalid TOML ({exc}) — hint: fix the syntax at that position")
    return {}


def _selectors(table: Mapping[str, Any], key: str, label: str, errors: list[str]) -> tuple[str, ...]:
    return _selector_list(table[key], f"[tool.foxaudit] key {key!r}", label, errors)


def _selector_list(value: Any, key: str, label: str, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        errors.append(_wrong_type(label, key, value, "list of codes or prefixes"))
        return ()
    good = []
    for item in value:
        selector = item.strip().upper()
        if not SELECTOR_PATTERN.match(selector):
            errors.append(
                f"{label}: {key}: invalid code or prefix (got {item!r} vs e.g. 'FX901', 'FX9' or 'ALL')"
                " — hint: `foxaudit rules` lists the codes"
            )
            continue
        good.append(selector)
    return tuple(good)


def _cuda_defines(table: Any, label: str, errors: list[str]) -> tuple[tuple[str, str | None], ...]:
    if not isinstance(table, dict):
        errors.append(_wrong_type(label, "[tool.foxaudit] key 'cuda'", table, "table"))
        return ()
    for key in table:
        if key not in CUDA_KEYS:
            errors.append(_unknown(label, "tool.foxaudit.cuda", key, CUDA_KEYS))
    defines = table.get("defines", {})
    if not isinstance(defines, dict):
        errors.append(_wrong_type(label, "[tool.foxaudit.cuda] key 'defines'", defines, "table of macro → value"))
        return ()
    resolved: list[tuple[str, str | None]] = []
    for name, value in sorted(defines.items()):
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            errors.append(f"{label}: [tool.foxaudit.cuda.defines] key {name!r}: not a macro name (got {name!r}"
                          " vs an identifier) — hint: write the name alone, e.g. ENABLE_BF16 = true")
        elif isinstance(value, bool):
            resolved.append((name, "1" if value else None))
        elif isinstance(value, (int, str)):
            resolved.append((name, str(value)))
        else:
            errors.append(_wrong_type(label, f"[tool.foxaudit.cuda.defines] key {name!r}", value,
                                      "string, integer or boolean"))
    return tuple(resolved)


# flake8 reads its settings from the first of these that has a [flake8] section.
_FLAKE8_FILES = ("setup.cfg", "tox.ini", ".flake8")
_RUFF_FILES = ("ruff.toml", ".ruff.toml")


def linter_exclude(root: Path, pyproject: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The paths the project tells its linters to skip: flake8's ``exclude`` and ``extend-exclude``
    (``setup.cfg``, ``tox.ini`` or ``.flake8``), ruff's ``exclude`` and ``extend-exclude`` (at its
    top level or under ``lint``, in pyproject.toml's ``[tool.ruff]`` or a ``ruff.toml``). jedi's
    ``exclude = test/completion/*`` holds the deliberately broken code its completion tests read;
    what no linter of the project looks at is no code foxaudit reports on either. The patterns keep
    those tools' dialect (``linter_excluded``). Unreadable or malformed files give nothing."""
    import configparser

    patterns: list[str] = []
    for name in _FLAKE8_FILES:
        parser = configparser.RawConfigParser()
        try:
            parser.read(root / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section("flake8"):
            for key in ("exclude", "extend-exclude", "extend_exclude"):
                value = parser.get("flake8", key, fallback="")
                patterns.extend(item.strip() for item in re.split(r"[,\n]", value) if item.strip())
            break
    tables: list[Any] = []
    tool = pyproject.get("tool") if isinstance(pyproject, Mapping) else None
    if isinstance(tool, Mapping) and isinstance(tool.get("ruff"), Mapping):
        tables.append(tool["ruff"])
    for name in _RUFF_FILES:
        try:
            tables.append(tomllib.loads((root / name).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        break
    for table in tables:
        for scope in (table, table.get("lint")):
            for key in ("exclude", "extend-exclude"):
                value = scope.get(key) if isinstance(scope, Mapping) else None
                if isinstance(value, list):
                    patterns.extend(item.strip() for item in value if isinstance(item, str) and item.strip())
    return tuple(dict.fromkeys(patterns))


def linter_excluded(relative: str, patterns: tuple[str, ...]) -> bool:
    """Whether a linter given these ``exclude`` patterns skips the file at ``relative`` (a POSIX
    path from the root), as flake8 and ruff read them: a pattern without a ``/`` matches the name
    of the file or of any folder above it (``build``, ``*.egg``), one with a ``/`` the path from
    the root where its config lives (``tests/`` is the root's ``tests``), ``*`` crossing folders
    (``test/completion/*``)."""
    parts = relative.split("/")
    for written in patterns:
        pattern = written.removeprefix("./").rstrip("/")
        if not pattern or pattern.startswith(("/", "..")):
            continue
        if "/" in written:  # (`tests/` too: flake8 anchors any pattern with a `/` at its config's folder)
            if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(relative, pattern + "/*"):
                return True
        elif any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False


PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"
_TOP_LEVEL_EXCLUDE = re.compile(r"^exclude:[ \t]*(.*)$")


def pre_commit_exclude(root: Path) -> re.Pattern[str] | None:
    """The top-level ``exclude`` of the project's ``.pre-commit-config.yaml``: the files pre-commit
    hands to no hook (``exclude: ^(profiling/|tests/data/)``), so a foxaudit hook never reports
    on them and ``foxaudit check`` agrees with the hook. None when there is no such file or key,
    or its value is no regular expression pre-commit could use (pre-commit reports that itself).
    The value is read as YAML writes a scalar: plain, quoted, or a ``|``/``>`` block (the verbose
    ``(?x)`` form); pre-commit's own reader is not needed for one top-level key."""
    try:
        lines = (root / PRE_COMMIT_CONFIG).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for index, line in enumerate(lines):
        match = _TOP_LEVEL_EXCLUDE.match(line)
        if match is None:
            continue
        value = _yaml_scalar(match.group(1).strip(), lines[index + 1:])
        try:
            return re.compile(value) if value else None
        except re.error:
            return None
    return None


def _yaml_scalar(first: str, following: list[str]) -> str:
    """A YAML scalar that starts with ``first`` (after ``key:``) and may continue on the
    ``following`` lines (a block scalar's more-indented lines)."""
    if first.startswith(("|", ">")):
        block = []
        for line in following:
            if line.strip() and not line[:1].isspace():
                break
            block.append(line.strip())
        return ("\n" if first.startswith("|") else " ").join(block).strip()
    if first.startswith("'"):
        end = first.find("'", 1)
        while end != -1 and first[end + 1:end + 2] == "'":
            end = first.find("'", end + 2)
        return first[1:end].replace("''", "'") if end != -1 else ""
    if first.startswith('"'):
        end = first.find('"', 1)
        while end != -1 and first[end - 1] == "\\":
            end = first.find('"', end + 1)
        return first[1:end].replace('\\"', '"').replace("\\\\", "\\") if end != -1 else ""
    return first.split(" #", 1)[0].strip()


def _vendored(pyproject: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The folder ``[tool.vendoring] destination`` names (pip's and poetry-core's ``_vendor/``):
    third-party code the project copies in and pins, which it does not edit — read for the import
    graph, never reported on. A value that is no relative path is ignored (it is the vendoring
    tool's setting to check, not ours)."""
    tool = pyproject.get("tool") if isinstance(pyproject, Mapping) else None
    vendoring = tool.get("vendoring") if isinstance(tool, Mapping) else None
    destination = vendoring.get("destination") if isinstance(vendoring, Mapping) else None
    if not isinstance(destination, str):
        return ()
    folder = destination.strip().removeprefix("./").strip("/")
    if not folder or folder.startswith("..") or os.path.isabs(destination.strip()) or any(c in folder for c in "*?[!"):
        return ()
    return (f"/{folder}/",)


def _globs(table: Mapping[str, Any], key: str, label: str, errors: list[str]) -> tuple[str, ...]:
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        errors.append(_wrong_type(label, f"[tool.foxaudit] key {key!r}", value, "list of glob strings"))
        return ()
    return tuple(value)


def _unknown(label: str, table: str, key: str, allowed: Mapping[str, Any]) -> str:
    choices = ", ".join(sorted(allowed)) or "none"
    return f"{label}: [{table}] unknown key {key!r} (got {key!r} vs one of: {choices}) — hint: {did_you_mean(key, allowed)}"


def did_you_mean(word: str, choices: Iterable[str], otherwise: str = "remove or rename it") -> str:
    """``did you mean 'x'?`` for the closest choice (spelling, ``_`` for ``-``, case), else ``otherwise``."""
    candidates = {choice: choice for choice in choices}
    folded = {choice.lower().replace("_", "-"): choice for choice in candidates}
    exact = folded.get(word.lower().replace("_", "-"))
    close = [exact] if exact else [folded[match] for match in difflib.get_close_matches(
        word.lower().replace("_", "-"), list(folded), n=1, cutoff=0.6)]
    return f"did you mean {close[0]!r}?" if close else otherwise


def _wrong_type(label: str, key: str, value: Any, expected: str) -> str:
    return f"{label}: {key}: wrong type (got {_describe(value)} vs {expected}) — hint: see docs/foxaudit.md"


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if not isinstance(value, (dict, list)) else type(value).__name__


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) if typing.get_origin(hint) is None and isinstance(hint, type) else str(hint).replace("typing.", "")
