"""Whole-program rule: a CUDA kernel no Python code loads."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.program.wiring import ORPHAN, KernelRow
from foxaudit.rules._support.example_projects import (
    SCALE_KERNEL,
    kernel_project,
    scale_module,
)
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample

if TYPE_CHECKING:
    from foxaudit.program.model import Program


class OrphanKernel(AnalysisRule):
    """A CUDA kernel no Python code loads.

    ## What it does
    Reports every `__global__` function in a `.cu`/`.cuh` file whose name no Python code loads:
    `.get_function("name")`, `RawKernel(code, "name")`, `RawModule(name_expressions=[...])`, or a
    loader function (configured in `kernel-loaders`, or derived: a function that forwards one of its
    parameters as the kernel name to a loader) — and no C++ code launches: `<<<…>>>` (templates,
    namespaces, split over lines), `cudaLaunchKernel*`/`cudaLaunchCooperativeKernel`/`cuLaunchKernel`,
    a graph kernel node's `func`, a function pointer or template argument, a string that is the
    kernel's name (`cuModuleGetFunction(&f, m, "k")`, an NVRTC or cubin wrapper's argument); in a
    `#define` body or a macro use's arguments, the kernel launched or taken as a value (`auto k =
    topk<V>;`, `&allreduce<W, T>`, `KL(n, reduce)`, `#define Kernel gemm<A, B>`), not a macro
    parameter, or matched by a name pasted with `##` (`routing_##S##_##B` matches `routing_f32_bf16`);
    in a C++ raw string (`R"(…)"`, source compiled at run time), the kernel launched or its address
    taken (`reinterpret_cast<void*>(&barrier_impl<{}>)`), not a name in its prose; in `.cu`/`.cuh`
    files, in host files beside or `#include`d by the kernel's file or, when they name it, in the
    folder above and its other folders (`op/host/k.cc` for `op/cuda/k.cu`), or anywhere in the tree
    when they hold the tail of the kernel's file's path (`impls/barrier.cuh`: a JIT's host code
    writing `#include <deep_ep/impls/barrier.cuh>` into the source it compiles), and in
    preprocessor branches another build configuration compiles (not `#if 0`). A launch
    from inside the kernel itself does not count. A kernel whose name a run-time string may build
    (`get_function(f"k_{dtype}")` in the same file) is not reported: FX205 says so there. The
    kernels of a header that no file of the project includes (`#include "…"` or `<…>`), such as an
    installed library's `include/` tree, are launched where it is included, outside what foxaudit
    reads: one "unresolved" note per header names them instead of an orphan per kernel. The
    kernels of a compile test — a file whose comments hold FileCheck or lit directives (`// CHECK:`,
    `; SMXX-LABEL:`, `// RUN:`), built to check the code nvcc makes — are its subjects, not orphans.

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
        ProjectExample(
            kernel_project({"ops/scale.py": scale_module()}, cuda=SCALE_KERNEL + (
                "\ntemplate <bool Fast> __global__ void reduce_fast(float* x, int n) { if (n) x[0] = 1.0f; }\n"
                "template <bool Fast> __global__ void reduce_slow(float* x, int n) { if (n) x[0] = 2.0f; }\n"
                "void reduce(float* x, int n, bool fast) {\n"
                "  auto kernel = fast ? &reduce_fast<true> : &reduce_slow<false>;\n"
                "  kernel<<<1, 32>>>(x, n);\n}\n"
            )),
            note="A pointer picked by `?:` and launched: both kernels it may name are launched.",
        ),
        ProjectExample(
            {
                **kernel_project({"ops/scale.py": scale_module()}),
                "include/ops/impls/fill.cuh": "template <int N>\n__global__ void fill_impl(float* x) { x[0] = N; }\n",
                "csrc/jit/fill.hpp": (
                    "std::string generate(int n) {\n  return fmt::format(R\"(\n#include <ops/impls/fill.cuh>\n"
                    "static void __instantiate_kernel() {{\n"
                    "  auto ptr = reinterpret_cast<void*>(&fill_impl<{}>);\n}}\n)\", n);\n}\n"
                ),
            },
            note="JIT: host code far from the header writes source that includes it and takes the kernel's address, "
            "compiled at run time and launched by handle.",
        ),
        ProjectExample(
            {
                **kernel_project({"ops/scale.py": scale_module()}),
                "test/codegen/cas.cu": (
                    "__global__ void cas_relaxed(int* data, int* out, int n) { atomicCAS(data, *out, n); }\n\n"
                    "// CHECK-LABEL: .visible .entry {{.*}}cas_relaxed\n// CHECK: atom.global.cas.b32\n"
                ),
            },
            note="A compile test: nvcc's PTX is piped to FileCheck, which its directives drive; the kernel is the "
            "test's subject, never launched.",
        ),
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
        orphans = [row for row in analysis.kernels.rows if row.status == ORPHAN and row.site is not None]
        foreign = _headers_nothing_includes(analysis.program, {row.site.path for row in orphans if row.site is not None})
        found = [
            diagnostic_at(
                self.code,
                row.site,
                f"orphan kernel `{row.name}` (defined, loaded by no Python code and launched by no C++ code vs loaded and"
                " launched)",
                "launch it (`<<<…>>>`, a launch API, or RawModule.get_function / the kernel loader), or delete it",
            )
            for row in orphans
            if row.site is not None and row.site.path not in foreign
        ]
        # A header that no file here includes is launched where it is included, outside this tree
        # (an installed library's headers): one note per header, not an orphan per kernel.
        by_header: dict[str, list[KernelRow]] = {}
        for row in orphans:
            if row.site is not None and row.site.path in foreign:
                by_header.setdefault(row.site.path, []).append(row)
        for path, rows in sorted(by_header.items()):
            names = ", ".join(f"`{row.name}`" for row in rows[:3]) + (f" and {len(rows) - 3} more" if len(rows) > 3 else "")
            site = rows[0].site
            assert site is not None  # (rows were filtered on it)
            found.append(diagnostic_at(
                self.code,
                site,
                f"orphan-kernel analysis unresolved for {len(rows)} kernels in `{path}` ({names}; a header no file here"
                " includes vs a launch in this tree: it is launched where it is included)",
                "include it from the code that launches its kernels, or delete it if nothing does",
            ))
        return found


_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".hxx", ".inl")


def _headers_nothing_includes(program: Program, paths: set[str]) -> set[str]:
    """The headers among ``paths`` that no CUDA file of the project includes, by a quoted path
    relative to the includer or by a path the include search finds (`<ATen/cuda/X.cuh>` ends the
    header's path)."""
    headers = {path for path in paths if path.endswith(_HEADER_SUFFIXES)}
    if not headers:
        return set()
    included: set[str] = set()
    for includer, summary in program.cuda.items():
        directory = includer.rpartition("/")[0]
        for include in summary.includes:
            included.add(posixpath.normpath(posixpath.join(directory, include)) if directory else posixpath.normpath(include))
            included.add(include.lstrip("./"))
        included.update(include.lstrip("./") for include in summary.angle_includes)
    found = set()
    for path in headers:
        parts = path.split("/")
        if not any("/".join(parts[cut:]) in included for cut in range(len(parts))):
            found.add(path)
    return found
