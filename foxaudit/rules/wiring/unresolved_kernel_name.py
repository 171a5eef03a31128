"""FX205: a kernel name that is not a literal or module constant (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class UnresolvedKernelName(ProjectRule):
    """A kernel name that is not a literal or module constant.

    ## What it does
    Reports a kernel load whose name is an f-string or any expression other than a string literal or
    a module-level string constant. The name is not guessed.

    ## Why is this bad
    Linkage (orphans, ghosts) can only be checked for names that can be read; a computed name hides
    both.

    ## Example
    ```python
    kernel = module.get_function(f"{op}_kernel")
    ```

    ## Use instead
    ```python
    KERNEL = "env_step_kernel"
    kernel = module.get_function(KERNEL)
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX205"
    name = "unresolved-kernel-name"
    summary = "A kernel name that is not a literal or module constant"
    invariant = 2

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
