"""Whole-program rule: a layout the analysis cannot read statically."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import ISV_PROJECT
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class UnreadableLayout(AnalysisRule):
    """A layout the analysis cannot read statically.

    ## What it does
    Reports slots of the layout module whose name or width cannot be computed without running the
    module (the layout is read, never imported).

    ## Why is this bad
    Every layout check (FX101, FX502, the ISV audit) depends on reading the layout; an unreadable
    slot disables them silently.

    ## Example
    ```python
    ISV = Layout("ISV", tuple(Slot(n) for n in names()))
    ```

    ## Use instead
    ```python
    ISV = Layout("ISV", (Slot("TAU", writer=Writer.GPU_COMPUTED),))
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX505"
    name = "unreadable-layout"
    summary = "A layout the analysis cannot read statically"
    invariant = 5

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(ISV_PROJECT, note="Slots declared with literal names."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "sim/layout.py": (
                "from sim.slots import Layout, Slot\n\n\ndef names():\n    return (\"TAU\", \"EPOCH\")\n\n\n"
                'ISV = Layout("ISV", tuple(Slot(name) for name in names()))\n'
            ),
        }, expect=1, note="The slot names come from a function call: only running the module would tell them."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        layout = analysis.layout
        if layout is None:
            return []
        return [
            diagnostic_at(self.code, site, f"layout not statically readable: {message}", "declare slots with literal names and widths")
            for site, message in layout.problems
        ]
