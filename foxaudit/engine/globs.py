""".gitignore files for git-less trees (``!`` re-includes, last match wins, per directory).

The patterns of the settings use the same dialect without ``!``: see ``foxaudit.globs``, which
this module re-exports for the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from foxaudit.globs import GlobSet, matches_name, plain_name
from foxaudit.globs import translate as _translate

__all__ = ["GitIgnore", "GlobSet", "ignored", "matches_name", "plain_name"]


@dataclass(frozen=True)
class _IgnoreRule:
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


class GitIgnore:
    """The rules of one .gitignore file, relative to the directory that holds it."""

    def __init__(self, base: str, lines: Iterable[str]):
        self.base = base.strip("/")  # repository-relative directory of the .gitignore ("" at root)
        self.rules: list[_IgnoreRule] = []
        for raw in lines:
            line = raw.rstrip("\n").rstrip("\r")
            if not line or line.startswith("#"):
                continue
            if not line.endswith("\\ "):
                line = line.rstrip(" ")
            negated = line.startswith("!")
            if negated or line.startswith(("\\!", "\\#")):
                line = line[1:]
            directory_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            body = _translate(line)
            regex = re.compile(("^" if anchored else "(?:^|/)") + body + "$")
            self.rules.append(_IgnoreRule(regex, negated, directory_only))

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule of this file matches."""
        if self.base:
            if not path.startswith(self.base + "/"):
                return None
            path = path[len(self.base) + 1 :]
        verdict: bool | None = None
        for rule in self.rules:
            if rule.directory_only and not is_dir:
                continue
            if rule.regex.search(path):
                verdict = not rule.negated
        return verdict


def ignored(stack: list[GitIgnore], path: str, is_dir: bool) -> bool:
    """Whether ``path`` is ignored by the .gitignore files in effect (deepest file decides last)."""
    verdict = False
    for gitignore in stack:
        decision = gitignore.decide(path, is_dir)
        if decision is not None:
            verdict = decision
    return verdict
