"""Repository-relative path globs as options use them (``cuda/generated/*``, ``**/layout.py``)."""

from __future__ import annotations

import functools
import re
from fnmatch import translate


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    # fnmatch's `*` already crosses `/`; a leading `**/` also matches files at the top level.
    if pattern.startswith("**/"):
        return re.compile(f"(?:{translate(pattern[3:])})|(?:{translate(pattern)})")
    return re.compile(translate(pattern))


def matches_any(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether the POSIX repository-relative ``path`` matches one of the glob ``patterns``."""
    return any(_compiled(pattern).match(path) for pattern in patterns)
