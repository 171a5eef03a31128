"""Which files a run checks.

In a git work tree the list comes from ``git ls-files -co --exclude-standard`` (tracked plus
untracked-but-not-ignored: exactly what git would let you commit). Elsewhere (an unpacked
sdist, a fresh copy) the tree is walked honouring every ``.gitignore`` on the way down. Both
then apply the ``include`` globs, the built-in exclusions (VCS and virtual-env directories) and
the configured ``exclude`` globs. Files named explicitly on the command line (pre-commit passes
the staged names) are checked as given, except that ``exclude`` still applies — a hook must not
let an excluded file through. Third-party code and what the project keeps from its hooks and
linters are listed apart: read by the import graph, not reported (``discover``'s ``unreported``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from foxaudit.config import Settings, linter_excluded
from foxaudit.engine.globs import GitIgnore, GlobSet, ignored, matches_name, plain_name
from foxaudit.program.configrefs import GRAPH_INPUT_SUFFIXES
from foxaudit.sources.base import language_of

BUILTIN_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    "node_modules",
    "site-packages",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".foxaudit_cache",
)


class DiscoveryError(Exception):
    """A path given on the command line does not exist."""


@dataclass(frozen=True)
class Discovered:
    """One file to check: its absolute path and its repository-relative POSIX name; ``owned``
    False for a file the import graph reads but no finding is reported in (``discover``'s
    ``unreported``)."""

    absolute: str
    relative: str
    owned: bool = True


def discover(settings: Settings, paths: list[str] | None = None, *, configs: list[Discovered] | None = None,
             unreported: list[Discovered] | None = None) -> list[Discovered]:
    """Files to check under ``settings.root`` (or the given paths), sorted by relative path.

    ``configs``: where to collect, in the same listing, the other files the import graph reads
    (YAML configuration files and Cython modules, ``foxaudit.program.configrefs``): not checked themselves, so ``include`` (which
    selects the files to check) does not apply to them; ``.gitignore``, the built-in exclusions
    and ``exclude`` do.

    ``unreported``: where to collect the source files the project holds but does not own or check
    (third-party code copied in: the ``[tool.vendoring] destination``, a folder of installed
    distributions; a template to copy, in a folder named for templates, that says it is one; what
    pre-commit's top-level ``exclude`` keeps from every hook and the project's flake8 and ruff
    ``exclude`` from linting): the import
    graph reads them — vendored code that imports a project module reaches it — but no finding is
    reported in them, named on the command line or not (a hook passes staged files: it must
    report what ``foxaudit check`` reports). Without the list they are left out."""
    root = settings.root
    exclude = GlobSet((*BUILTIN_EXCLUDE, *settings.exclude))
    third_party = GlobSet(settings.third_party) if settings.third_party else None
    hook_exclude = settings.pre_commit_exclude
    included = _Include(settings.include)
    found: dict[str, Discovered] = {}
    held: dict[str, Discovered] = {}
    config_found: dict[str, Discovered] = {}
    install_targets: set[str] = set()

    def owned(absolute: str, relative: str) -> bool:
        if third_party is not None and third_party.matches(relative):
            return False
        if _in_a_template_folder(relative) and _template_to_copy(absolute):
            return False
        if install_targets and any(absolute.startswith(target) for target in install_targets):
            return False
        if settings.linter_exclude and linter_excluded(relative, settings.linter_exclude):
            return False
        return hook_exclude is None or hook_exclude.search(relative) is None

    def accept(absolute: str, explicit: bool) -> None:
        relative = _relative(absolute, root)
        name = relative.rsplit("/", 1)[-1]
        if language_of(name) is None:
            # (What the graph reads of a page or a configuration counts wherever it is: an
            # excluded documentation page still shows the examples it includes.)
            if configs is not None and not explicit and name.endswith(GRAPH_INPUT_SUFFIXES) and not exclude.matches(relative):
                config_found.setdefault(relative, Discovered(absolute, relative))
            return
        if not explicit and not included(relative, name):
            return
        if exclude.matches(relative):
            return
        if not owned(absolute, relative):  # named on the command line too, as `exclude`: the hook agrees with CI
            held.setdefault(relative, Discovered(absolute, relative, owned=False))
            return
        found.setdefault(relative, Discovered(absolute, relative))

    targets = paths or [str(root)]
    missing = [target for target in targets if not os.path.exists(target)]
    if missing:
        raise DiscoveryError(
            f"path not found (got {', '.join(map(repr, missing))} vs an existing file or directory)"
            " — hint: check the spelling, or run from the project root"
        )
    for target in targets:
        absolute = os.path.abspath(target)
        if os.path.isfile(absolute):
            accept(absolute, explicit=True)
            continue
        listed = _git_files(absolute)
        if listed is None:
            listed = _walk(absolute, root, exclude, GRAPH_INPUT_SUFFIXES if configs is not None else (), install_targets)
        else:
            install_targets.update(_install_targets(listed, absolute))
        for path in listed:
            accept(path, explicit=False)
    if configs is not None:
        configs.extend(config_found[key] for key in sorted(config_found))
    if unreported is not None:
        unreported.extend(held[key] for key in sorted(held) if key not in found)
    return [found[key] for key in sorted(found)]


class _Include:
    """The ``include`` patterns, split once: names (``*.py``: a suffix test when that is all they
    are), and anchored paths (one GlobSet)."""

    def __init__(self, include: tuple[str, ...]):
        simple = [pattern for pattern in include if "/" not in pattern.strip("/")]
        suffixed = [pattern for pattern in simple if pattern.startswith("*") and plain_name(pattern[1:])]
        self.suffixes = tuple(pattern[1:] for pattern in suffixed)
        self.names = [pattern for pattern in simple if pattern not in suffixed]
        anchored = [pattern for pattern in include if "/" in pattern.strip("/")]
        self.anchored = GlobSet(anchored) if anchored else None

    def __call__(self, relative: str, name: str) -> bool:
        if self.suffixes and name.endswith(self.suffixes):
            return True
        if self.names and matches_name(self.names, name):
            return True
        return self.anchored is not None and self.anchored.matches(relative)


def _relative(absolute: str, root: Path) -> str:
    prefix = str(root).rstrip(os.sep) + os.sep
    if absolute.startswith(prefix) and os.sep == "/":
        return absolute[len(prefix) :]
    try:
        return Path(absolute).relative_to(root).as_posix()
    except ValueError:
        # Outside the project root: name it relative to the working directory if possible.
        relative = os.path.relpath(absolute)
        return Path(relative if not relative.startswith("..") else absolute).as_posix()


def _in_a_template_folder(relative: str) -> bool:
    """A folder above the file is named for templates (sktime's `extension_templates/`,
    `project_template/`, `templates/`)."""
    return any("template" in part.lower() for part in relative.split("/")[:-1])


# What a template says of itself at its top: that it is one, to be copied and filled in
# (sktime's "This is to be used as a "fill-in" coding template", "make a copy of the template").
_TEMPLATE_WORD = re.compile(rb"\btemplates?\b", re.IGNORECASE)
_TO_COPY = re.compile(rb"\bcop(?:y|ied)\b|\bfill[- ]?in\b|\bfill (?:in|out)\b", re.IGNORECASE)
_TEMPLATE_HEAD_BYTES = 4096


def _template_to_copy(absolute: str) -> bool:
    """The file's opening text (its module docstring and first comments) calls it a template to
    copy and fill in: the instructions of a skeleton users start from, whose `todo`s are theirs
    and whose placeholders are the point (sktime's 20 extension templates: 457 findings). Read
    only in a folder named for templates (``_in_a_template_folder``)."""
    try:
        with open(absolute, "rb") as handle:
            head = handle.read(_TEMPLATE_HEAD_BYTES)
    except OSError:
        return False
    return _TEMPLATE_WORD.search(head) is not None and _TO_COPY.search(head) is not None


_DIST_INFO = ".dist-info"


def _install_targets(paths: list[str], directory: str) -> set[str]:
    """The folders below ``directory`` (absolute, with a trailing separator) that hold an installed
    distribution's metadata (``<name>-<version>.dist-info/``) among ``paths``: install targets
    (``pip install --target lib/``, setuptools' ``_vendor/``), third-party code the project pins
    and does not edit, like a virtual environment's ``site-packages``."""
    prefix = directory.rstrip(os.sep) + os.sep
    targets = set()
    for path in paths:
        parts = path[len(prefix):].split(os.sep) if path.startswith(prefix) else []
        for depth, part in enumerate(parts[:-1]):
            if part.endswith(_DIST_INFO) and depth > 0:
                targets.add(prefix + os.sep.join(parts[:depth]) + os.sep)
                break
    return targets


def _git_dir_above(directory: str) -> bool:
    current = Path(directory)
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return True
    return False


def _git_files(directory: str) -> list[str] | None:
    """Absolute paths git lists under ``directory``; None when it is not in a git work tree."""
    if not _git_dir_above(directory):
        return None
    import subprocess  # only for a git work tree: a plain tree's run never pays for it

    try:
        result = subprocess.run(
            # core.fsmonitor names a program that `ls-files` runs; a copied checkout's .git/config
            # is the analysed repository's, and analysing a repository never runs its code.
            ["git", "-c", "core.fsmonitor=false", "ls-files", "-co", "--exclude-standard", "-z", "--", "."],
            cwd=directory,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if result.returncode != 0:
        return None
    names = result.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    paths = []
    for name in names:
        if not name:
            continue
        absolute = os.path.join(directory, name)
        # -c lists files deleted from the work tree and submodule roots: keep real files only,
        # and broken links (reported as FX001, as ruff does, instead of skipped in silence).
        if os.path.isfile(absolute) or _broken_link(absolute):
            paths.append(absolute)
    return paths


def _walk(directory: str, root: Path, exclude: GlobSet, also: tuple[str, ...] = (),
          install_targets: set[str] | None = None) -> list[str]:
    """Walk ``directory`` honouring .gitignore files (root's and every one on the way down);
    source files, and files whose names end with one of ``also``. The folders below it that hold
    an installed distribution's ``*.dist-info/`` are added to ``install_targets`` (``_install_targets``)."""
    base = _relative(directory, root)
    base = "" if base == "." else base
    stack: list[GitIgnore] = []
    # .gitignore files of the ancestors between root and the walked directory apply too.
    if base and not base.startswith("/"):
        parts = base.split("/")
        for depth in range(len(parts)):
            ancestor = "/".join(parts[:depth])
            _push_gitignore(stack, root / ancestor if ancestor else root, ancestor)
    paths: list[str] = []

    def visit(current: str, relative: str) -> None:
        pushed = _push_gitignore(stack, Path(current), relative)
        try:
            entries = sorted(os.scandir(current), key=lambda entry: entry.name)
        except OSError:
            entries = []
        if install_targets is not None and current != directory and any(
                entry.name.endswith(_DIST_INFO) and entry.is_dir(follow_symlinks=False) for entry in entries):
            install_targets.add(current.rstrip(os.sep) + os.sep)
        for entry in entries:
            child = f"{relative}/{entry.name}" if relative else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if not is_dir and language_of(entry.name) is None and not (also and entry.name.endswith(also)):
                continue  # discover() keeps source files only: no ignore rules to try on the rest
            if ignored(stack, child, is_dir):
                continue
            if is_dir:
                if exclude.matches(child):
                    continue
                visit(entry.path, child)
            elif _listable(entry):
                paths.append(entry.path)
        if pushed:
            stack.pop()

    visit(directory, base)
    return paths


def _listable(entry: os.DirEntry[str]) -> bool:
    """A file, or a broken link to report (``is_file`` raises for a link loop)."""
    try:
        if entry.is_file():
            return True
    except OSError:
        pass
    return entry.is_symlink() and _broken_link(entry.path)


def _broken_link(path: str) -> bool:
    """A symbolic link that leads nowhere (dangling, or a loop): listed so the check reports it."""
    return os.path.islink(path) and not os.path.exists(path)


def _push_gitignore(stack: list[GitIgnore], directory: Path, relative: str) -> bool:
    gitignore = directory / ".gitignore"
    try:
        lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    stack.append(GitIgnore(relative, lines))
    return True
