"""Whole-program rule: a CUDA kernel no Python code loads."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.program.wiring import ORPHAN
from foxaudit.rules._support.example_projects import (
    SCALE_KERNEL,
    kernel_project,
    scale_module,
)
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class OrphanKernel(AnalysisRule):
    """A CUDA kernel no Python code loads.

    ## What it does
    Reports every `__global__` function in a `.cu`/`.cuh` file whose name no Python code loads:
    `.get_function("name")`, `RawKernel(code, "name")`, `RawModule(name_expressions=[...])`, or a
    loader function (configured in `kernel-loaders`, or derived: a function that forwards one of its
    parameters as the kernel name to a loader) — and no C++ code launches: `<<<…>>>` (templates,
    namespaces, split over lines), `cudaLaunchKernel*`/`cudaLaunchCooperativeKernel`/`cuLaunchKernel`,
    a graph kernel node's `func`, a function pointer or template argument, `cuModuleGetFunction`
    with its name, in `.cu`/`.cuh` files, in host files beside or `#include`d by the kernel's file,
    and in preprocessor branches another build configuration compiles (not `#if 0`). A launch
    from inside the kernel itself does not count. A kernel whose name a run-time string may build
    (`get_function(f"k_{dtype}")` in the same file) is not reported: FX205 says so there.

    ## Why is this bad
    Invariant 2. A kernel that is never loaded is never run: its parity test proves nothing about
    training, and the feature it implements silently does not exist.

    ## Example
    ```cuda
    extern "C" __global__ void old_update(float* isv) { }
    ```

    ## Use instead
    ```python
    kernel = load_kernel("ops", "old_update", device)
    launch(kernel, n, args, device)
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX202"
    name = "orphan-kernel"
    summary = "A CUDA kernel no Python code loads"
    invariant = 2

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(kernel_project({"ops/scale.py": scale_module()}), note="The one kernel is loaded by name and launched."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(
            kernel_project({"ops/scale.py": scale_module()}, cuda=SCALE_KERNEL + (
                '\nextern "C" __global__ void old_update(float* x, int n) {\n'
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = 0.0f;\n}\n"
            )),
            expect=1, note="`old_update` is defined, and no Python code loads it.",
        ),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                row.site,
                f"orphan kernel `{row.name}` (defined, loaded by no Python code and launched by no C++ code vs loaded and"
                " launched)",
                "launch it (`<<<…>>>`, a launch API, or RawModule.get_function / the kernel loader), or delete it",
            )
            for row in analysis.kernels.rows
            if row.status == ORPHAN and row.site is not None
        ]
