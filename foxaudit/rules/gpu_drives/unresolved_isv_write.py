"""FX102: an ISV write whose slot cannot be named statically (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class UnresolvedIsvWrite(ProjectRule):
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

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
