"""Whole-program rule: a constant has different values in CUDA and Python."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import ISV_PROJECT
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

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\nconstant-modules = ["ops/blocks.py"]\n',
            "ops/__init__.py": "",
            "ops/blocks.py": "BLOCK = 256\nHALF_BLOCK = BLOCK // 2\n",
            "cuda/reduce.cu": "#define BLOCK 256\nconstexpr int HALF_BLOCK = BLOCK / 2;\n",
        }, note="Python and CUDA agree on BLOCK and on the value derived from it."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\nconstant-modules = ["ops/blocks.py"]\n',
            "ops/__init__.py": "",
            "ops/blocks.py": "BLOCK = 256\n",
            "cuda/reduce.cu": "#define BLOCK 128\n",
        }, expect=1, note="A module constant of `constant-modules` and its CUDA copy drift apart."),
        ProjectExample({
            **ISV_PROJECT,
            "cuda/tau.cu": '#define ISV_TAU 3\n\nextern "C" __global__ void tau_update(float* isv) { isv[ISV_TAU] = 0.5f; }\n',
        }, expect=1, note="A slot constant computed from the layout module: TAU is slot 0."),
    ]

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
