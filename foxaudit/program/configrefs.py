"""What files other than the sources ask to import: Hydra/OmegaConf ``_target_`` names in YAML, the
packages of a project nested in the tree (its own ``pyproject.toml``), and the run-time imports of
Cython modules (``.pyx``).

``hydra.utils.instantiate`` imports the module of ``_target_: pkg.module.Class`` at run time, so a
YAML file that names a module reaches it as an import would. The files are read as text, one line
at a time (foxaudit needs no YAML parser): a line whose key is ``_target_`` (quoted or not, in a
block mapping or a ``- _target_:`` list item) and whose value is a dotted name (quoted or not, a
``#`` comment after it allowed), and PyYAML's Python tags anywhere in a line
(``!!python/name:pkg.module.fn``, ``!!python/object/apply:pkg.Class``: the loader imports the
module). Flow mappings (``{_target_: x}``), multi-line values and anchors
are not read. A Cython module's ``import`` / ``from … import`` statements run when it is imported
(``cimport`` is compile time): they are kept as text (``cython_import_text``). Which module a name
is resolves in ``foxaudit.program.wiring``.

A ``pyproject.toml`` below the root is a project of its own (flask's and click's
``examples/<app>/``): the packages it ships (``[project] name``, flit's module, setuptools',
poetry's and hatch's package lists) and the modules of its scripts are its API, run by whoever
installs it (``nested_project_targets``); nothing of the outer project imports them.

A Jupyter notebook (``.ipynb``) imports what its code cells import (``notebook_imports``): its
directory is the kernel's working directory, so a name resolves as a ``_target_``'s does.

A file of command lines (``COMMAND_FILES``: a debugger's start-up file, a shell script, a makefile,
``tox.ini``) runs the ``.py`` files it names by path (read by ``config_targets``): a ``.gdbinit``'s
``source x.py``, a CI script's ``python checks/check_wheel.py``.

A documentation page (``.md``, ``.rst``) that includes a ``.py`` file shows it as an example
(``documentation_includes``): Sphinx's and MyST's ``literalinclude``, pymdownx's snippets
(``--8<-- "docs_src/x.py"``), FastAPI's ``{* ../../docs_src/x.py hl[2] *}``, an ``include``
tag, a fenced block's ``path="x.py"`` attribute (textual's). The file is the documentation's:
reached, not dead code. A mere mention in prose names no include.

Standard library only: the engine reads the files with it to key the whole-program cache on
what they name or import (an edited comment changes nothing), so an edit of either kind of file
runs the whole-program rules again on a warm cache.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from foxaudit.config import distribution_name

# The configuration files read: YAML.
CONFIG_SUFFIXES = (".yaml", ".yml")
# Cython modules: their run-time imports reach Python modules (``foxaudit.program.wiring``).
CYTHON_SUFFIX = ".pyx"
# A project nested in the tree: its own packaging file (the root's is the run's configuration).
NESTED_PROJECT_FILE = "pyproject.toml"
# Jupyter notebooks: their code cells' imports reach project modules (``notebook_imports``).
NOTEBOOK_SUFFIX = ".ipynb"
# Documentation pages: the ``.py`` files they include are examples (``documentation_includes``).
DOCUMENTATION_SUFFIXES = (".md", ".rst")
# Files whose command lines run Python files by their paths, read as a YAML file's paths are:
# debuggers' start-up files (`.gdbinit`'s `source x.py`, `.lldbinit`'s `command script import
# x.py`), shell scripts (a CI script's `python checks/check_wheel.py`), makefiles and tox's
# `commands = python tools/gen.py`.
COMMAND_FILES = (".gdbinit", ".lldbinit", ".sh", "Makefile", "tox.ini")
# Every file the import graph reads beside the sources, listed by the engine's discovery.
GRAPH_INPUT_SUFFIXES = (*CONFIG_SUFFIXES, CYTHON_SUFFIX, NESTED_PROJECT_FILE, NOTEBOOK_SUFFIX, *DOCUMENTATION_SUFFIXES,
                        *COMMAND_FILES)

# A run-time import statement of a Cython module (``cimport`` is compile time and does not match).
CYTHON_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[\w ,\t]+)|import[ \t]+([\w., \t]+))", re.MULTILINE
)


def cython_import_text(data: bytes) -> str:
    """The run-time import statements of one ``.pyx`` file's bytes, one per line, in order: what
    the import graph reads of it, and what the whole-project results are keyed on (an edited
    comment or function body changes nothing)."""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(match.group(0).strip() for match in CYTHON_IMPORT.finditer(text))

_TARGET = re.compile(
    rb"""^[ \t]*(?:-[ \t]+)?(["']?)_target_\1[ \t]*:[ \t]*(["']?)([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\2[ \t]*(?:\#.*)?\r?$""",
    re.MULTILINE,
)


# PyYAML's Python tags, which import the module when the file is loaded (mkdocs' configuration:
# `format: !!python/name:pymdownx.superfences.fence_code_format`).
_PYTHON_TAG = re.compile(rb"!!python/(?:name|module|object(?:/apply|/new)?):([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


# A relative path to a Python file as a YAML value (mkdocs' `hooks: [docs/plugins/main.py]`, a
# workflow's `run: python tools/gen.py`): the tool runs or loads that file by its path.
_PY_PATH = re.compile(rb"""(?:^|(?<=[\s:\-"'=\[,]))((?:\.{1,2}/)?[\w-]+(?:/[\w.-]+)*\.py)(?=["'\s,\]]|$)""", re.MULTILINE)
# How a path target is written among the dotted ones (a path holds no `:`, a dotted name no `/`).
PATH_TARGET_PREFIX = "path:"


# Keys whose values are path patterns that select files, not files anything runs (a workflow's
# `on: pull_request: paths:`, pre-commit's `files:`/`exclude:`, a linter's ignore list).
_FILTER_KEYS = frozenset({b"paths", b"paths-ignore", b"files", b"exclude", b"include", b"ignore", b"ignores",
                          b"extend-exclude", b"omit", b"skip"})
_KEY_LINE = re.compile(rb"^([ \t]*)(?:-[ \t]+)?([\w.-]+)[ \t]*:", re.MULTILINE)


def _key_of(data: bytes, position: int) -> bytes:
    """The YAML key a value at ``position`` belongs to: the key on its own line (`hooks: x.py`), or
    for a list item (`- x.py`) the nearest line above, indented less, that opens a key."""
    line_start = data.rfind(b"\n", 0, position) + 1
    own = _KEY_LINE.match(data, line_start)
    if own is not None and own.end() <= position:
        return own.group(2)
    indent = len(data[line_start:position]) - len(data[line_start:position].lstrip(b" \t-"))
    end = line_start - 1
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        key = _KEY_LINE.match(data, start)
        if key is not None and len(key.group(1)) < indent:
            return key.group(2)
        end = start - 1
    return b""


def config_targets(data: bytes) -> tuple[tuple[int, str], ...]:
    """(line, dotted name) of every ``_target_`` and PyYAML Python tag in one YAML file's bytes,
    and (line, ``path:<relative path>``) of every relative ``.py`` path written as a value, in order."""
    matches = []
    if b"_target_" in data:
        matches.extend((match.start(), match.group(3)) for match in _TARGET.finditer(data))
    if b"!!python/" in data:
        matches.extend((match.start(), match.group(1)) for match in _PYTHON_TAG.finditer(data))
    if b".py" in data:
        matches.extend((match.start(), PATH_TARGET_PREFIX.encode() + match.group(1)) for match in _PY_PATH.finditer(data)
                       if b"://" not in data[max(0, match.start() - 8) : match.start()]
                       and _key_of(data, match.start()) not in _FILTER_KEYS)
    found = []
    line, counted = 1, 0
    for start, name in sorted(matches):
        line += data.count(b"\n", counted, start)
        counted = start
        found.append((line, name.decode("ascii")))
    return tuple(found)


# What includes a file in a documentation page, then the `.py` path: reST's and MyST's
# `literalinclude` (`.. literalinclude:: ../x.py`, ```` ```{literalinclude} x.py ````; a path that
# starts with `/` is Sphinx's source folder's), pymdownx's snippets (`--8<-- "x.py"`, with `:3:10`
# line ranges), FastAPI's `{* x.py hl[2] *}`, a Jinja or mkdocs-include `{% include "x.py" %}`.
_DOC_INCLUDE = re.compile(
    rb"""(?:literalinclude(?:::|\})[ \t]+|--8<--[ \t]*["']|\{\*[ \t]*|\{%-?[ \t]*include(?:-markdown)?[ \t]+["'])"""
    rb"""/?((?:\.{1,2}/|[\w-]+/)*[\w.-]+\.py)(?=[\s"':*}]|$)""")
# A fenced block that runs or shows a file named by an attribute of its opening line (textual's
# ```` ```{.textual path="docs/examples/app/console.py"} ````).
_DOC_FENCE = re.compile(
    rb"""^[ \t]*(?:`{3,}|~{3,})[^\n]*?\b(?:path|file|src)=["']/?((?:\.{1,2}/|[\w-]+/)*[\w.-]+\.py)["']""", re.MULTILINE)


def documentation_includes(data: bytes) -> tuple[tuple[int, str], ...]:
    """(line, ``path:<relative path>``) of each ``.py`` file a documentation page includes."""
    if b".py" not in data:
        return ()
    matches = sorted((match.start(), match.group(1)) for pattern in (_DOC_INCLUDE, _DOC_FENCE)
                     for match in pattern.finditer(data))
    found = []
    line, counted = 1, 0
    for start, path in matches:
        line += data.count(b"\n", counted, start)
        counted = start
        found.append((line, PATH_TARGET_PREFIX + path.decode("ascii", errors="replace")))
    return tuple(found)


# A source line of a notebook's code cell as nbformat stores it: one JSON string per line,
# `"from utils.grid import image_grid\n",` — an import statement at the line's start.
_NOTEBOOK_IMPORT = re.compile(
    rb'"[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+([\w, \t()*]+)|import[ \t]+([\w., \t]+))(?:\\n)?"')


def notebook_imports(data: bytes) -> tuple[tuple[int, str], ...]:
    """(line, dotted name) of each module a Jupyter notebook's import statements name (a
    `from m import a, b` names `m`, `m.a` and `m.b`: either may be a module), read from the
    notebook's JSON text without parsing it (outputs can be megabytes; a regular expression over
    the bytes costs a few milliseconds). The line is the line of the notebook file."""
    if b"import" not in data:
        return ()
    found: list[tuple[int, str]] = []
    line, counted = 1, 0
    for match in _code_cell_imports(data):
        line += data.count(b"\n", counted, match.start())
        counted = match.start()
        if match.group(1):
            module = match.group(1).decode("ascii", errors="replace")
            found.append((line, module))
            names = match.group(2).decode("ascii", errors="replace").replace("(", " ").replace(")", " ")
            found.extend((line, f"{module}.{name.split()[0]}") for name in names.split(",")
                         if name.split() and name.split()[0] != "*")
        else:
            for name in match.group(3).decode("ascii", errors="replace").split(","):
                if name.split():
                    found.append((line, name.split()[0]))
    return tuple((at, name) for at, name in found if all(part.isidentifier() for part in name.split(".")))


# nbformat writes a cell's keys in order: "cell_type" first, "outputs" before "source"; a source
# is an array of JSON strings, one per line (no raw newline inside one), or one string.
_CELL_TYPE = re.compile(rb'"cell_type"\s*:\s*"(\w+)"')
# (The array ends at a `]` right after a string's closing quote: a `]` inside a line of code,
# `digits = [0, 1]` or `x[\"k\"]`, is inside one of its strings.)
_SOURCE = re.compile(rb'"source"\s*:\s*(?:\[\s*\]|\[(.*?(?<!\\)")\s*\]|("(?:[^"\\\n]|\\.)*"))', re.DOTALL)


def _code_cell_imports(data: bytes) -> list[re.Match[bytes]]:
    """The import statements of the notebook's code cells' sources (not markdown, not outputs)."""
    found: list[re.Match[bytes]] = []
    cells = list(_CELL_TYPE.finditer(data))
    for index, cell in enumerate(cells):
        if cell.group(1) != b"code":
            continue
        end = cells[index + 1].start() if index + 1 < len(cells) else len(data)
        source = _SOURCE.search(data, cell.end(), end)
        if source is not None and (source.group(1) is not None or source.group(2) is not None):
            span = source.span(1) if source.group(1) is not None else source.span(2)
            found.extend(_NOTEBOOK_IMPORT.finditer(data, span[0], span[1]))
    return found


def nested_project_targets(data: bytes) -> tuple[tuple[int, str], ...]:
    """(1, dotted name) of each top-level package or script module a nested ``pyproject.toml``
    ships (``shipped_names``), sorted. Line 1: the names are the file's as a whole. A file that
    does not parse names nothing."""
    try:
        table = tomllib.loads(data.decode("utf-8", errors="replace"))
    except (tomllib.TOMLDecodeError, ValueError):
        return ()
    return tuple((1, name) for name in sorted(shipped_names(table, scripts=True)))


def shipped_names(table: Any, *, scripts: bool) -> set[str]:
    """The dotted names a parsed ``pyproject.toml`` says its distribution ships: its name
    (``[project]``'s or ``[tool.poetry]``'s, ``-`` → ``_``), ``[tool.flit.module] name``, setuptools' ``packages`` (or the ``include``
    patterns of ``packages.find``, up to their first ``*``), poetry's ``packages``
    ``include``, hatch's wheel ``packages`` (their last part), and with ``scripts`` the modules
    ``[project.scripts]`` / ``gui-scripts`` name."""

    def at(*keys: str) -> Any:
        node: Any = table
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    names: set[str] = set()
    if isinstance(table, dict) and (name := distribution_name(table)):
        names.add(name)
    for value in (at("tool", "flit", "module", "name"),):
        if isinstance(value, str):
            names.add(value.strip())
    for listed in (at("tool", "setuptools", "packages"), at("tool", "hatch", "build", "targets", "wheel", "packages")):
        if isinstance(listed, list):
            names.update(str(item).strip("/").rsplit("/", 1)[-1].split(".")[0] for item in listed if isinstance(item, str))
    found_include = at("tool", "setuptools", "packages", "find", "include")
    if isinstance(found_include, list):  # `include = ["flashinfer*"]`: the packages find() keeps
        names.update(str(item).split("*", 1)[0].rstrip(".").split(".")[0] for item in found_include if isinstance(item, str))
    poetry = at("tool", "poetry", "packages")
    if isinstance(poetry, list):
        names.update(str(item["include"]).strip("/") for item in poetry if isinstance(item, dict) and "include" in item)
    for group in ("scripts", "gui-scripts") if scripts else ():
        table_of_scripts = at("project", group)
        if isinstance(table_of_scripts, dict):
            names.update(str(target).split(":")[0].strip() for target in table_of_scripts.values())
    return {name for name in names if name and all(part.isidentifier() for part in name.split("."))}
