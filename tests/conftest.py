"""Shared test configuration: the ``gpu`` marker skips cleanly without a CUDA GPU."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def _gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    if not torch.cuda.is_available():
        return False
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:  # CuPy missing or broken: the GPU path cannot run
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
