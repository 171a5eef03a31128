"""Whole-program rule: python loads a kernel name that no CUDA file defines."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.program.wiring import GHOST
from foxaudit.rules._support.example_projects import (
    kernel_project,
    scale_module,
)
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class GhostKernel(AnalysisRule):
    """Python loads a kernel name that no CUDA file defines.

    ## What it does
    Reports every load of a kernel name (see FX202 for what counts as a load) that no `__global__`
    function in the CUDA sources, nor CUDA source held in a Python string, defines.

    ## Why is this bad
    Invariant 2. The load fails only at run time on a GPU — never in CPU CI — usually after a rename
    on one side only.

    ## Example
    ```python
    kernel = module.get_function("env_stepp")
    ```

    ## Use instead
    ```python
    kernel = module.get_function("env_step")
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX203"
    name = "ghost-kernel"
    summary = "Python loads a kernel name that no CUDA file defines"
    invariant = 2

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(kernel_project({"ops/scale.py": scale_module()}), note="The loaded name is defined in `cuda/scale.cu`."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\n',
            "ops/__init__.py": "",
            "ops/fill.py": (
                "import cupy\n\n"
                'SOURCE = r"""\nextern "C" __global__ void fill(float* x, float v, int n) {\n'
                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = v;\n}\n"
                '"""\n\n\ndef fill(x, v, n):\n'
                '    kernel = cupy.RawKernel(SOURCE, "fill")\n'
                "    kernel(((n + 255) // 256,), (256,), (x, v, n))\n"
            ),
        }, note="CUDA source held in a Python string defines its kernels too."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\n',
            "ops/__init__.py": "",
            "ops/layout.py": (
                "from cupy.cuda import compiler\n\n\n"
                "def _compile_func(kernel_name, code):\n"
                "    mod = compiler._compile_module_with_cache(code)\n"
                "    return mod.get_function(kernel_name)\n\n\n"
                "def layout(struct):\n"
                "    source = '''extern \"C\" __global__ void get_layout(long* out) {{ out[0] = sizeof({t}); }}'''.format(t=struct)\n"
                "    func = _compile_func('get_layout', source)\n"
                "    func((1,), (1,), (out,))\n"
            ),
        }, note="A module compiled by a helper (`_compile_module_with_cache`), from a source this file builds with"
                " `.format()`: which kernels it defines is that call's business — not a ghost (FX205's note covers it)."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\n',
            "ops/__init__.py": "",
            "ops/helpers.py": (
                "from cupy.cuda import compiler\n\n\n"
                "def run_with_preamble(code, out):\n"
                "    mod = compiler._compile_module_with_cache(PREAMBLE + code)\n"
                "    mod.get_function('scale')((1,), (1,), (out,))\n\n\n"
                "def run_typed(code, out):\n"
                "    mod = compiler._compile_module_with_cache(code.format(t='float'))\n"
                "    mod.get_function('shift')((1,), (1,), (out,))\n\n\n"
                "class Program:\n    def __init__(self, code):\n        self.code = code\n\n"
                "    def run(self, out):\n"
                "        mod = compiler._compile_module_with_cache(source=self.code)\n"
                "        mod.get_function('main')((1,), (1,), (out,))\n"
            ),
        }, note="A helper compiles a source built from what the function receives (`PREAMBLE + code`,"
                " `code.format(...)`, the object's `self.code`): the kernels are the callers' — not ghosts."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample(kernel_project({"ops/scale.py": scale_module("scael")}), expect=1, note="A typo: `scael` is defined nowhere."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\n',
            "ops/__init__.py": "",
            "ops/helpers.py": (
                "from cupy.cuda import compiler\n\n\n"
                "def run(code, out):\n"
                "    mod = compiler._compile_module_with_cache('// the code comes later')\n"
                "    mod.get_function('missing')((1,), (1,), (out,))\n"
            ),
        }, expect=1, note="A parameter's name inside a string literal is no source built from the parameter."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        out = []
        for row in analysis.kernels.rows:
            if row.status != GHOST:
                continue
            for load in row.loads:
                out.append(
                    diagnostic_at(
                        self.code,
                        load.site,
                        f"ghost kernel `{row.name}` (loaded by {load.how} vs defined in no .cu/.cuh)",
                        "fix the name, or add the `__global__` kernel to the CUDA sources",
                    )
                )
        return out
