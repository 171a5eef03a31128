"""FX505: a layout the analysis cannot read statically (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class UnreadableLayout(ProjectRule):
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

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
