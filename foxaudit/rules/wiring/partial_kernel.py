"""FX204: a kernel is loaded but never launched (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class PartialKernel(ProjectRule):
    """A kernel is loaded but never launched.

    ## What it does
    Reports a kernel whose every load discards the loaded function: the result is not called, and
    the name it is bound to is neither called nor passed to a launcher (a function that calls that
    parameter).

    ## Why is this bad
    Invariant 2. Loading compiles the kernel and hides the fact that nothing runs it: a half-wired
    feature.

    ## Example
    ```python
    kernel = load_kernel("env_step", "env_step", device)
    return ps
    ```

    ## Use instead
    ```python
    kernel = load_kernel("env_step", "env_step", device)
    launch(kernel, n_envs, args, device)
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX204"
    name = "partial-kernel"
    summary = "A kernel is loaded but never launched"
    invariant = 2

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
