"""Whole-program rule: a GPU-computed ISV slot that no kernel writes."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import ISV_PROJECT
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class GpuSlotWithoutKernelWriter(AnalysisRule):
    """A GPU-computed ISV slot that no kernel writes.

    ## What it does
    Preview. For every ISV slot whose writer class is one of `isv-gpu-writers`, looks for a kernel
    (`__global__` body in a hand-written `.cu`/`.cuh`) that assigns it — `isv[ISV_TAU] = ...`,
    `isv[ISV_GAMMA + b] = ...` — and reports the slot's declaration when there is none. Writes
    through pointer arithmetic (`*(isv + ISV_TAU) = v`) are not recognised, which is why the rule
    is in preview.

    ## Why is this bad
    Invariant 1. A slot declared GPU-computed that no kernel writes keeps its bootstrap value for
    ever: every reader sees a constant while the audit promises an adaptive signal (a "dead
    writer").

    ## Example
    ```python
    Slot("TD_ERROR_EMA", writer=Writer.GPU_COMPUTED)  # declared, never written by a kernel
    ```

    ## Use instead
    ```cuda
    isv[ISV_TD_ERROR_EMA] = ema;  // in the kernel that computes it
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX103"
    name = "gpu-slot-without-kernel-writer"
    summary = "A GPU-computed ISV slot that no kernel writes"
    invariant = 1

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "cuda/tau.cu": (
                '#include "generated/layout.cuh"\n\n'
                'extern "C" __global__ void tau_update(float* isv, float target) {\n'
                "  if (threadIdx.x == 0) isv[ISV_TAU] = 0.99f * isv[ISV_TAU] + 0.01f * target;\n}\n"
            ),
        }, note="The kernel that computes TAU writes it."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "cuda/tau.cu": (
                '#include "generated/layout.cuh"\n\n'
                'extern "C" __global__ void tau_read(const float* isv, float* out) {\n'
                "  if (threadIdx.x == 0) out[0] = isv[ISV_TAU];\n}\n"
            ),
        }, expect=1, note="TAU is GPU_COMPUTED and no kernel writes it: it keeps its bootstrap value for ever."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        isv = analysis.isv
        if isv.layout is None:
            return []
        gpu = set(analysis.program.settings.isv_gpu_writers)
        return [
            diagnostic_at(
                self.code,
                slot.site,
                f"GPU-computed ISV slot {slot.constant} has no kernel that writes it (no `[{slot.constant}…] =` in any"
                " __global__ body vs at least one writer)",
                "write it from the kernel that computes it, or change its writer class in the layout",
            )
            for slot in isv.layout.slots
            if slot.writer in gpu and not isv.kernel_writers.get(slot.constant)
        ]
