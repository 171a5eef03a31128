"""Whole-program rule: an ISV write whose slot cannot be named statically."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import ISV_PROJECT
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class UnresolvedIsvWrite(AnalysisRule):
    """An ISV write whose slot cannot be named statically.

    ## What it does
    Reports a write into an ISV buffer (`isv-buffers`) whose index contains no slot constant of the
    ISV layout (`isv[i] = v`), outside `isv-bus-functions`. The slot is not guessed.

    ## Why is this bad
    Invariant 1 can only be checked for writes whose slot is known; an anonymous write could hit a
    GPU-computed slot and nobody would see it.

    ## Example
    ```python
    for i, value in enumerate(values):
        isv[i] = value
    ```

    ## Use instead
    ```python
    isv[ISV_EPOCH_INDEX] = epoch
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX102"
    name = "unresolved-isv-write"
    summary = "An ISV write whose slot cannot be named statically"
    invariant = 1

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "sim/epoch.py": "from sim.layout import ISV_EPOCH\n\n\ndef end_of_epoch(isv, epoch):\n    isv[ISV_EPOCH] = epoch\n",
        }, note="Every host write names its slot."),
        ProjectExample({
            **ISV_PROJECT,
            "pyproject.toml": ISV_PROJECT["pyproject.toml"] + 'isv-bus-functions = ["sim.bus:Bus.*"]\n',
            "sim/bus.py": (
                "class Bus:\n    def __init__(self, isv):\n        self.isv = isv\n\n"
                "    def write(self, index, value):\n        self.isv[index] = value\n"
            ),
        }, note="The bus implementation writes by index on purpose: its callers name the slot."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "sim/epoch.py": (
                "def restore(isv, values):\n    for index, value in enumerate(values):\n        isv[index] = value\n"
            ),
        }, expect=1, note="A loop writes slots by position: which slots, the analysis cannot tell."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                write.site,
                f"ISV write whose slot cannot be named ({write.expression} in `{write.function}` vs an index built from"
                " a slot constant)",
                "index the ISV with the slot's named constant (ISV_<NAME>), or list the bus implementation under "
                "`isv-bus-functions`",
            )
            for write in analysis.isv.writes
            if write.status == "unresolved"
        ]
