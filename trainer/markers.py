"""Markers read by foxaudit's hot-path analysis; importable from every trainer layer.

It sits beside ``trainer.layout`` at the bottom of the import graph and imports nothing, so any
layer (ops launchers included) can mark a root without bending the layer contract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

HOT_PATH_ATTRIBUTE = "__foxhunt_hot_path__"


def hot_path(function: F) -> F:
    """Mark ``function`` as a root of the training step (no host sync may be reachable from it).

    The marker changes no behaviour: it sets one attribute so that tests and tools can also find
    the roots at run time, and foxaudit finds the decorator statically.
    """
    setattr(function, HOT_PATH_ATTRIBUTE, True)
    return function


def is_hot_path(function: Callable[..., object]) -> bool:
    return bool(getattr(function, HOT_PATH_ATTRIBUTE, False))
