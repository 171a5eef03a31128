"""Whole-program rule: a constant has different values in CUDA and Python."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class CudaPythonConstantMismatch(AnalysisRule):
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

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                mismatch.cuda,
                f"constant {mismatch.name} differs between CUDA and Python ({mismatch.cuda_value} vs {mismatch.python_value}"
                f" at {mismatch.python.where})",
                "regenerate the header from the Python layout, or include the generated header instead of redefining it",
            )
            for mismatch in analysis.sync.mismatches
        ]
