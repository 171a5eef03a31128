"""The import-layer contracts in pyproject.toml are exhaustive: an upward import from a module
that was left out of the layer list (``trainer.config`` → ``trainer.train``) breaks the contract.

The contracts are run by import-linter itself against a synthetic tree with the real packages'
top-level module names (empty modules plus one planted upward import), so the test does not
depend on what the real code imports today.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _mirror(tmp_path: Path) -> Path:
    """Empty modules named like every top-level module and package of foxaudit and trainer."""
    for package in ("foxaudit", "trainer"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        for child in (REPO / package).iterdir():
            if child.is_dir() and (child / "__init__.py").exists():
                (tmp_path / package / child.name).mkdir()
                (tmp_path / package / child.name / "__init__.py").write_text("")
            elif child.suffix == ".py" and child.name != "__init__.py":
                (tmp_path / package / child.name).write_text("")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("lint-imports")
    if executable is None:
        pytest.skip("import-linter is not installed (pip install import-linter)")
    return subprocess.run(
        [executable, "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_layer_contracts_are_exhaustive():
    layered = [contract for contract in _contracts() if contract["type"] == "layers"]
    assert {tuple(contract["containers"]) for contract in layered} == {("foxaudit",), ("trainer",)}
    assert all(contract.get("exhaustive") is True for contract in layered)


def test_mirror_of_the_tree_keeps_the_contracts(tmp_path):
    result = _lint(_mirror(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("importer", "imported"),
    [("trainer/config.py", "trainer.train"), ("trainer/registry.py", "trainer.ops"), ("trainer/markers.py", "trainer.cli")],
)
def test_upward_import_from_a_formerly_unlisted_module_is_broken(tmp_path, importer, imported):
    root = _mirror(tmp_path)
    (root / importer).write_text(f"import {imported}\n")
    result = _lint(root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "trainer layers import downward BROKEN" in result.stdout


def test_new_unlisted_top_level_module_breaks_exhaustiveness(tmp_path):
    root = _mirror(tmp_path)
    (root / "trainer" / "newthing.py").write_text("")
    result = _lint(root)
    assert result.returncode != 0
    assert "newthing" in result.stdout + result.stderr
