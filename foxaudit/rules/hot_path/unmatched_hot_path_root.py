"""FX303: a configured hot-path root matches no function (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class UnmatchedHotPathRoot(ProjectRule):
    """A configured hot-path root matches no function.

    ## What it does
    Reports each `hot-path-roots` pattern that matches no function of the project.

    ## Why is this bad
    A misspelt root disables the hot-path check for the code it was meant to cover.

    ## Example
    ```toml
    hot-path-roots = ["trainer.train.step:Trainer.stepp"]
    ```

    ## Use instead
    ```toml
    hot-path-roots = ["trainer.train.step:Trainer.step"]
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX303"
    name = "unmatched-hot-path-root"
    summary = "A configured hot-path root matches no function"
    invariant = 3

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
