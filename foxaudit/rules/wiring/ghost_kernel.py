"""FX203: python loads a kernel name that no CUDA file defines (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class GhostKernel(ProjectRule):
    """Python loads a kernel name that no CUDA file defines.

    ## What it does
    Reports every load of a kernel name (see FX202 for what counts as a load) that no `__global__`
    function in the CUDA sources, nor CUDA source held in a Python string, defines.

    ## Why is this bad
    Invariant 2. The load fails only at run time on a GPU — never in CPU CI — usually after a rename
    on one side only.

    ## Example
    ```python
    kernel = module.get_function("env_stepp")
    ```

    ## Use instead
    ```python
    kernel = module.get_function("env_step")
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX203"
    name = "ghost-kernel"
    summary = "Python loads a kernel name that no CUDA file defines"
    invariant = 2

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
