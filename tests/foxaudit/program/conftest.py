"""pytest fixtures for the whole-program tests (helpers live in program_support.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from program_support import copy_fixture, load_project

from foxaudit.program.analysis import Analysis, analysis_for


@pytest.fixture
def materialize(tmp_path: Path) -> Callable[[str], Path]:
    def make(name: str) -> Path:
        return copy_fixture(name, tmp_path / name)

    return make


@pytest.fixture
def analyze() -> Callable[[Path], Analysis]:
    def run(root: Path) -> Analysis:
        return analysis_for(load_project(root), use_cache=False)

    return run
