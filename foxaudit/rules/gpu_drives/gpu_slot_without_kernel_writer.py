"""FX103: a GPU-computed ISV slot that no kernel writes (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class GpuSlotWithoutKernelWriter(ProjectRule):
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

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
