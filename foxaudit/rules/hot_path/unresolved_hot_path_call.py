"""FX302: a call on the hot path that the analysis cannot follow (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class UnresolvedHotPathCall(ProjectRule):
    """A call on the hot path that the analysis cannot follow.

    ## What it does
    Preview. Reports calls inside hot functions whose target could be a project function (its method
    name is defined in the project) but cannot be resolved: the receiver's type is unknown, or a
    parameter is called. The analysis never guesses; these calls are where FX301 could miss a
    transfer.

    ## Why is this bad
    Invariant 3 holds only for the code the analysis can see; this lists the blind spots.

    ## Example
    ```python
    @hot_path
    def step(self, env):
        env.step()  # env's class is unknown
    ```

    ## Use instead
    ```python
    @hot_path
    def step(self):
        self.env.step()  # self.env = VectorEnv(...) in __init__
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX302"
    name = "unresolved-hot-path-call"
    summary = "A call on the hot path that the analysis cannot follow"
    invariant = 3

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
