"""Whole-program rule: a kernel name that is not a literal or module constant."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class UnresolvedKernelName(AnalysisRule):
    """A kernel name that is not a literal or module constant.

    ## What it does
    Reports a kernel load whose name is an f-string or any expression other than a string literal or
    a module-level string constant. The name is not guessed.

    ## Why is this bad
    Linkage (orphans, ghosts) can only be checked for names that can be read; a computed name hides
    both.

    ## Example
    ```python
    kernel = module.get_function(f"{op}_kernel")
    ```

    ## Use instead
    ```python
    KERNEL = "env_step_kernel"
    kernel = module.get_function(KERNEL)
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX205"
    name = "unresolved-kernel-name"
    summary = "A kernel name that is not a literal or module constant"
    invariant = 2

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\n',
            "ops/__init__.py": "",
            "ops/names.py": 'SCALE_KERNEL = "scale"\n',
            "ops/scale.py": (
                "import cupy\n\nfrom ops.names import SCALE_KERNEL\n\n\ndef scale(x, n):\n"
                '    kernel = cupy.RawModule(path="cuda/scale.cu").get_function(SCALE_KERNEL)\n'
                "    kernel(((n + 255) // 256,), (256,), (x, n))\n"
            ),
            "cuda/scale.cu": (
                'extern "C" __global__ void scale(float* x, int n) {\n'
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.0f;\n}\n"
            ),
        }, note="A module constant, also one imported from another module, names the kernel statically."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\n',
            "ops/__init__.py": "",
            "ops/scale.py": (
                "import cupy\n\n\ndef scale(x, n, dtype):\n"
                '    kernel = cupy.RawModule(path="cuda/scale.cu").get_function(f"scale_{dtype}")\n'
                "    kernel(((n + 255) // 256,), (256,), (x, n))\n"
            ),
            "cuda/scale.cu": (
                'extern "C" __global__ void scale_f32(float* x, int n) {\n'
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.0f;\n}\n"
            ),
        }, expect=1, note="An f-string picks the kernel at run time."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                load.site,
                f"kernel name cannot be resolved statically ({load.expression!r} is {load.why_unresolved} vs a string "
                "literal or module constant)",
                "name the kernel with a literal or a module-level constant so linkage can be checked",
            )
            for load in analysis.kernels.unresolved
        ]
