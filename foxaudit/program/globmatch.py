"""Path and qualified-name globs for the program settings (``**`` spans directories)."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable


@functools.cache
def _path_regex(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip("/")
    out = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        index += 1
    # A directory pattern matches everything below it.
    return re.compile("^" + "".join(out) + "(?:/.*)?$")


def path_matches(path: str, pattern: str) -> bool:
    return bool(_path_regex(pattern).match(path))


def first_path_match(path: str, patterns: Iterable[str]) -> str | None:
    for pattern in patterns:
        if path_matches(path, pattern):
            return pattern
    return None


def name_matches(name: str, patterns: Iterable[str]) -> bool:
    """fnmatch for dotted/qualified names ('trainer.isv:IsvBus.*')."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
