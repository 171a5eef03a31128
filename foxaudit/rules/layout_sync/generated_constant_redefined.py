"""Whole-program rule: hand-written CUDA redefines a generated constant."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import GENERATED_HEADER, HEADER_PROJECT
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class GeneratedConstantRedefined(AnalysisRule):
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

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **HEADER_PROJECT,
            "cuda/generated/layout.cuh": GENERATED_HEADER,
            "cuda/tau.cu": (
                '#include "generated/layout.cuh"\n\n'
                'extern "C" __global__ void tau_update(float* isv) { isv[ISV_TAU] = 0.5f; }\n'
            ),
        }, note="Hand-written CUDA includes the generated header."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **HEADER_PROJECT,
            "cuda/generated/layout.cuh": GENERATED_HEADER,
            "cuda/tau.cu": '#define ISV_TAU 0\n\nextern "C" __global__ void tau_update(float* isv) { isv[ISV_TAU] = 0.5f; }\n',
        }, expect=1, note="Equal today, a second source of truth all the same."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                item.site,
                f"hand-written CUDA redefines generated constant {item.name} (second definition vs only {item.generated.where})",
                "delete this definition and #include the generated header",
            )
            for item in analysis.sync.redefinitions
        ]
