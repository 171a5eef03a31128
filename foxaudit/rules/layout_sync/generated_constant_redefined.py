"""FX504: hand-written CUDA redefines a generated constant (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class GeneratedConstantRedefined(ProjectRule):
    """Hand-written CUDA redefines a generated constant.

    ## What it does
    Reports a `#define` or `constexpr` in a hand-written `.cu`/`.cuh` file that defines a name a
    generated header (banner "generated — do not edit", or listed in `generated-headers`) defines.

    ## Why is this bad
    Invariant 5. A second definition is a second source of truth; it drifts the first time the
    layout changes.

    ## Example
    ```cuda
    #define PS_STRIDE 17
    ```

    ## Use instead
    ```cuda
    #include "generated/layout.cuh"  // PS_STRIDE comes from the layout
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX504"
    name = "generated-constant-redefined"
    summary = "Hand-written CUDA redefines a generated constant"
    invariant = 5

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
