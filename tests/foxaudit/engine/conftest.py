"""Helpers for engine tests: a tiny project on disk, an in-process CLI, a test-only fixable rule."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from engine_support import CountingProjectRule, MagicNumber

from foxaudit import cli
from foxaudit.rules import registry
from foxaudit.rules.base import Rule


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """Create files under tmp_path/proj (a pyproject.toml marks the root) and chdir there."""

    def make(files: dict[str, str | bytes], config: str = "[tool.foxaudit]\n") -> Path:
        root = tmp_path / "proj"
        root.mkdir(exist_ok=True)
        (root / "pyproject.toml").write_text(config, encoding="utf-8")
        write_tree(root, files)
        monkeypatch.chdir(root)
        monkeypatch.setenv("FOXAUDIT_CACHE_DIR", str(tmp_path / "cache"))
        return root

    return make


@dataclasses.dataclass
class CliRun:
    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    def invoke(*argv: str) -> CliRun:
        code = cli.main(list(argv))
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def magic_rule(monkeypatch: pytest.MonkeyPatch) -> type[Rule]:
    """Register FX099 (MagicNumber) for the duration of one test."""
    entry = registry.Registered(MagicNumber, "stable")
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, entry))
    return MagicNumber


@pytest.fixture
def project_rule(monkeypatch: pytest.MonkeyPatch) -> type:
    """Register FX098 (CountingProjectRule) for one test; its ``calls`` list starts empty."""
    monkeypatch.setattr(CountingProjectRule, "calls", [])
    entry = registry.Registered(CountingProjectRule, "stable")
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, entry))
    return CountingProjectRule
