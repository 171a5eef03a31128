"""What files other than the sources ask to import: Hydra/OmegaConf ``_target_`` names in YAML, and
the run-time imports of Cython modules (``.pyx``).

``hydra.utils.instantiate`` imports the module of ``_target_: pkg.module.Class`` at run time, so a
YAML file that names a module reaches it as an import would. The files are read as text, one line
at a time (foxaudit needs no YAML parser): a line whose key is ``_target_`` (quoted or not, in a
block mapping or a ``- _target_:`` list item) and whose value is a dotted name (quoted or not, a
``#`` comment after it allowed). Flow mappings (``{_target_: x}``), multi-line values and anchors
are not read. A Cython module's ``import`` / ``from … import`` statements run when it is imported
(``cimport`` is compile time): they are kept as text (``cython_import_text``). Which module a name
is resolves in ``foxaudit.program.wiring``.

Standard library only: the engine reads the files with it to key the whole-program cache on
what they name or import (an edited comment changes nothing), so an edit of either kind of file
runs the whole-program rules again on a warm cache.
"""

from __future__ import annotations

import re

# The configuration files read: YAML.
CONFIG_SUFFIXES = (".yaml", ".yml")
# Cython modules: their run-time imports reach Python modules (``foxaudit.program.wiring``).
CYTHON_SUFFIX = ".pyx"
# Every file the import graph reads beside the sources, listed by the engine's discovery.
GRAPH_INPUT_SUFFIXES = (*CONFIG_SUFFIXES, CYTHON_SUFFIX)

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


def config_targets(data: bytes) -> tuple[tuple[int, str], ...]:
    """(line, dotted name) of every ``_target_`` in one YAML file's bytes, in order."""
    if b"_target_" not in data:
        return ()
    found = []
    line, counted = 1, 0
    for match in _TARGET.finditer(data):
        line += data.count(b"\n", counted, match.start())
        counted = match.start()
        found.append((line, match.group(3).decode("ascii")))
    return tuple(found)
