"""FX502: a constant has different values in CUDA and Python (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class CudaPythonConstantMismatch(ProjectRule):
    """A constant has different values in CUDA and Python.

    ## What it does
    Compares every `#define`/`constexpr` constant of the CUDA sources with the same-named constant
    of the Python side: the constants computed from the layout module (`PREFIX_NAME`,
    `PREFIX_NAME_WIDTH`, `PREFIX_STRIDE`) and the module-level numeric constants of
    `constant-modules`.

    ## Why is this bad
    Invariant 5, one layout. Python writes slot 17 and the kernel reads slot 16: no error, wrong
    numbers.

    ## Example
    ```cuda
    #define ISV_TAU 3  // Python: ISV_TAU = 0
    ```

    ## Use instead
    ```cuda
    #include "generated/layout.cuh"
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX502"
    name = "cuda-python-constant-mismatch"
    summary = "A constant has different values in CUDA and Python"
    invariant = 5

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
