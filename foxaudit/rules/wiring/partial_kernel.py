"""Whole-program rule: a kernel is loaded but never launched."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.program.wiring import PARTIAL
from foxaudit.rules._support.example_projects import (
    kernel_project,
    scale_module,
)
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class PartialKernel(AnalysisRule):
    """A kernel is loaded but never launched.

    ## What it does
    Reports a kernel whose every load discards the loaded function: the result is not called, and
    the name it is bound to is neither called nor passed to a launcher (a function that calls that
    parameter).

    ## Why is this bad
    Invariant 2. Loading compiles the kernel and hides the fact that nothing runs it: a half-wired
    feature.

    ## Example
    ```python
    kernel = load_kernel("env_step", "env_step", device)
    return ps
    ```

    ## Use instead
    ```python
    kernel = load_kernel("env_step", "env_step", device)
    launch(kernel, n_envs, args, device)
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX204"
    name = "partial-kernel"
    summary = "A kernel is loaded but never launched"
    invariant = 2

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(kernel_project({
            "ops/launch.py": "def launch(kernel, n, args):\n    kernel(((n + 255) // 256,), (256,), args)\n",
            "ops/scale.py": scale_module(then="    launch(kernel, n, (x, n))\n", imports="\nfrom ops.launch import launch\n"),
        }), note="The loaded function goes to a launcher: a function that calls that parameter."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(kernel_project({"ops/scale.py": scale_module(then="    return x\n")}), expect=1, note="The loaded kernel is bound to a name and dropped."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        out = []
        for row in analysis.kernels.rows:
            if row.status != PARTIAL or any(load.launched_at for load in row.loads):
                continue  # a kernel only tests launch is Partial in the audit, not a finding
            load = row.loads[0]
            out.append(
                diagnostic_at(
                    self.code,
                    load.site,
                    f"kernel `{row.name}` is loaded but never launched (loaded by {load.how} vs called with a grid)",
                    "launch the loaded function (or pass it to the launcher), or stop loading it",
                )
            )
        return out
