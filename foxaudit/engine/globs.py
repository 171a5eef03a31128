"""Glob matching for include/exclude/per-file-ignores, and .gitignore semantics for git-less trees.

Two dialects, both compiled once to regular expressions:

* foxaudit globs (``include``, ``exclude``, ``per-file-ignores`` keys): a pattern without ``/``
  matches any single path component (``build`` skips every ``build`` directory, ``*.pyi`` every
  stub); a pattern with ``/`` is anchored at the project root and matches the path or any parent
  directory of it (``tests/fixtures`` skips everything below). ``**`` spans directories.
* gitignore patterns (git's rules): ``!`` re-includes, a trailing ``/`` matches directories only,
  a ``/`` at the start or middle anchors to the .gitignore's directory, last match wins.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass


def _translate(pattern: str) -> str:
    """The regex body for one glob (``*`` and ``?`` stay inside a component, ``**`` crosses them)."""
    out: list[str] = []
    index = 0
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if char == "*":
            if pattern.startswith("**", index):
                index += 2
                if index < length and pattern[index] == "/":
                    index += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                index = end
        elif char == "\\" and index + 1 < length:
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


@functools.cache
def _compile_glob(pattern: str) -> re.Pattern[str]:
    stripped = pattern.strip("/") if pattern not in ("/", "") else pattern
    if "/" in stripped:
        # Anchored: the path itself or a directory above it.
        return re.compile("^" + _translate(stripped) + "(?:/.*)?$")
    return re.compile("(?:^|/)" + _translate(stripped) + "(?:/|$)")


class GlobSet:
    """A set of foxaudit globs matched against repository-relative POSIX paths."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = tuple(patterns)
        self._regexes = [_compile_glob(pattern) for pattern in self.patterns]
        # One combined regex: a single C-level search per path instead of one per pattern.
        self._combined = re.compile("|".join(f"(?:{regex.pattern})" for regex in self._regexes)) if self._regexes else None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, path: str) -> bool:
        return self._combined is not None and self._combined.search(path) is not None

    def matching(self, path: str) -> list[str]:
        return [pattern for pattern, regex in zip(self.patterns, self._regexes) if regex.search(path)]


def matches_name(patterns: Iterable[str], name: str) -> bool:
    """Whether a file name (no directory) matches any include glob written for names."""
    return any(_compile_glob(pattern).search(name) for pattern in patterns)


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
