"""The one glob dialect of foxaudit: every path pattern in its settings means what it would mean
in a ``.gitignore`` file at the project root.

* A pattern without a ``/`` (a trailing one aside) matches a file or directory *name* at any
  depth: ``layout.py`` is every file so named, ``*.py`` every Python file, ``benchmarks`` every
  directory so named — and what is below it.
* A pattern with a ``/`` at the start or in the middle is anchored at the project root:
  ``trainer/layout.py``, ``/setup.py``, ``cuda/generated/*``.
* A pattern matching a directory matches everything below it; a trailing ``/`` matches
  directories only (``build/`` never matches a file named ``build``).
* ``*`` and ``?`` stay inside one component, ``[abc]`` is a class, ``**`` crosses directories
  (``**/layout.py``, ``trainer/**/reference.py``), ``\\`` escapes.
* ``!`` (re-include) is a ``.gitignore``-file feature (``foxaudit.engine.globs.GitIgnore``); in a
  list of patterns it would be meaningless and is matched literally.

Used for ``include``, ``exclude``, ``per-file-ignores``, every rule option that names paths
(FX801 ``definition-sites``, ...) and the ``[tool.foxaudit.program]`` path keys. Qualified names
(``trainer.isv:IsvBus.*``) are not paths: :func:`name_matches` is plain ``fnmatch`` for them.

Standard library only: this module sits at the bottom layer.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable


def translate(pattern: str) -> str:
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
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regex of one pattern, to ``search`` in a repository-relative POSIX path."""
    directory_only = pattern.endswith("/") and pattern.strip("/") != ""
    body = pattern.rstrip("/") if pattern.strip("/") else pattern
    anchored = "/" in body
    body = body.lstrip("/") if anchored else body
    below = "/.+" if directory_only else "(?:/.*)?"
    if anchored:
        return re.compile("^" + translate(body) + below + "$")
    return re.compile("(?:^|/)" + translate(body) + ("/" if directory_only else "(?:/|$)"))


def path_matches(path: str, pattern: str) -> bool:
    return compile_glob(pattern).search(path) is not None


def first_path_match(path: str, patterns: Iterable[str]) -> str | None:
    """The first of ``patterns`` that matches ``path`` (None: none does)."""
    for pattern in patterns:
        if path_matches(path, pattern):
            return pattern
    return None


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    return first_path_match(path, patterns) is not None


class GlobSet:
    """A set of patterns matched against repository-relative POSIX paths with one regex search."""

    def __init__(self, patterns: Iterable[str]):
        self.patterns = tuple(patterns)
        self._regexes = [compile_glob(pattern) for pattern in self.patterns]
        # A plain name (``.git``, ``node_modules``, ``build/``) matches a path one of whose parts
        # (one of whose directories, with a trailing ``/``) it is: a set lookup per path instead
        # of a regex search that tries every alternative at every ``/`` (discovery asks per file).
        self._names = frozenset(pattern for pattern in self.patterns if plain_name(pattern))
        self._directory_names = frozenset(
            pattern[:-1] for pattern in self.patterns if pattern.endswith("/") and plain_name(pattern[:-1])
        )
        rest = [
            regex.pattern
            for pattern, regex in zip(self.patterns, self._regexes)
            if pattern not in self._names and not (pattern.endswith("/") and pattern[:-1] in self._directory_names)
        ]
        self._combined = re.compile("|".join(f"(?:{body})" for body in rest)) if rest else None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, path: str) -> bool:
        if self._names or self._directory_names:
            parts = path.split("/")
            if not self._names.isdisjoint(parts) or not self._directory_names.isdisjoint(parts[:-1]):
                return True
        return self._combined is not None and self._combined.search(path) is not None

    def matching(self, path: str) -> list[str]:
        return [pattern for pattern, regex in zip(self.patterns, self._regexes) if regex.search(path)]


def plain_name(pattern: str) -> bool:
    """A pattern that is one literal file or directory name (no wildcard, escape or ``/``)."""
    return bool(pattern) and not any(char in pattern for char in "*?[\\/")


def matches_name(patterns: Iterable[str], name: str) -> bool:
    """Whether a file name (no directory) matches any of ``patterns`` written for names."""
    return any(compile_glob(pattern).search(name) for pattern in patterns)


def name_matches(name: str, patterns: Iterable[str]) -> bool:
    """fnmatch for dotted/qualified names ('trainer.isv:IsvBus.*'), which are not paths."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
