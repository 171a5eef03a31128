"""Helpers for the whole-program tests: fixture projects and copies of this repository.

Each project under ``fixtures/`` is a small repository (Python + CUDA + a pyproject.toml). Source
files carry a ``.txt`` suffix so that this repository's own ``foxaudit check`` never sees their
deliberate violations; ``materialize`` copies a project into a temporary directory without it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from foxaudit.config import load_settings
from foxaudit.diagnostics import Diagnostic
from foxaudit.engine.discovery import discover
from foxaudit.engine.project import build_project
from foxaudit.engine.resolve import resolve
from foxaudit.program.analysis import Analysis
from foxaudit.program.project import Project
from foxaudit.rules.registry import analysis_rules
from foxaudit.store import Store

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[3]


def copy_fixture(name: str, destination: Path) -> Path:
    source = FIXTURES / name
    for path in sorted(source.rglob("*")):
        if path.is_dir():
            continue
        relative = path.relative_to(source).as_posix()
        relative = relative.removesuffix(".txt")
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return destination


def line_of(root: Path, path: str, needle: str) -> int:
    """1-based line of the first line of ``path`` containing ``needle`` (expected sites by content)."""
    for number, line in enumerate((root / path).read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def load_project(root: Path, cache: Path | None = None) -> Project:
    """The Project `foxaudit check` would build for ``root`` (same discovery and settings),
    with the summary cache in ``cache`` (None: no cache)."""
    settings = load_settings(None, root)
    return build_project(resolve(settings), discover(settings), Store(cache) if cache is not None else None)


ANALYSIS_RULES = {rule.code: rule for rule in analysis_rules()}


def findings(analysis: Analysis, code: str) -> list[Diagnostic]:
    """What rule ``code``'s own check reports on ``analysis``, sorted (as `foxaudit check` orders them)."""
    return sorted(ANALYSIS_RULES[code]().check(analysis))


def all_findings(analysis: Analysis) -> dict[str, list]:
    return {code: findings(analysis, code) for code in ANALYSIS_RULES}


def repository_files() -> list[str]:
    """This repository's files as git would commit them (tracked + untracked, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and (REPO / name).is_file())


def copy_repository(destination: Path) -> Path:
    for name in repository_files():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, target)
    return destination
