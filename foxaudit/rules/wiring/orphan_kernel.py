"""FX202: a CUDA kernel no Python code loads (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class OrphanKernel(ProjectRule):
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

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
