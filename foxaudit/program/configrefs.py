"""Python names that configuration files ask a framework to import: Hydra/OmegaConf ``_target_``.

``hydra.utils.instantiate`` imports the module of ``_target_: pkg.module.Class`` at run time, so a
YAML file that names a module reaches it as an import would. The files are read as text, one line
at a time (foxaudit needs no YAML parser): a line whose key is ``_target_`` (quoted or not, in a
block mapping or a ``- _target_:`` list item) and whose value is a dotted name (quoted or not, a
``#`` comment after it allowed). Flow mappings (``{_target_: x}``), multi-line values and anchors
are not read. Which module a name is resolves in ``foxaudit.program.wiring``.

Standard library only: the engine reads the files with it to key the whole-program cache on
what they name (an edited comment changes nothing).
"""

from __future__ import annotations

import re

# The configuration files read: YAML.
CONFIG_SUFFIXES = (".yaml", ".yml")

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
