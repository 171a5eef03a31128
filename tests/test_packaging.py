"""What `pip install -e ".[dev]"` pulls on a CPU machine: no CuPy, no NVRTC (GPU-only, the `gpu` extra)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
GPU_ONLY = ("cupy", "nvidia-")


def requirement_names(extra: str, extras: dict[str, list[str]], seen: frozenset[str] = frozenset()) -> set[str]:
    """Every distribution an extra pulls in directly, following ``foxhunt[...]`` self-references."""
    names: set[str] = set()
    for requirement in extras[extra]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()
        if name == "foxhunt":
            for inner in re.search(r"\[(.*)\]", requirement).group(1).split(","):
                if inner.strip() not in seen:
                    names |= requirement_names(inner.strip(), extras, seen | {extra})
        else:
            names.add(name)
    return names


def test_dev_install_pulls_no_gpu_only_package():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras = project["optional-dependencies"]
    base = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in project["dependencies"]}
    pulled = base | requirement_names("dev", extras)
    assert not sorted(name for name in pulled if name.startswith(GPU_ONLY))
    gpu = requirement_names("gpu", extras)
    assert any(name.startswith("cupy") for name in gpu) and any(name.startswith("nvidia-cuda-nvrtc") for name in gpu)
