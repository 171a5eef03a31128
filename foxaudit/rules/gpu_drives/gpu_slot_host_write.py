"""Whole-program rule: host code writes an ISV slot the layout marks GPU-computed."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import ISV_PROJECT
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class GpuSlotHostWrite(AnalysisRule):
    """Host code writes an ISV slot the layout marks GPU-computed.

    ## What it does
    Reads the writer class of every ISV slot from the layout module (statically: `Layout("ISV",
    (Slot("TAU", writer=Writer.GPU_COMPUTED), ...))`) and reports each host write to a slot whose
    writer class is one of `isv-gpu-writers`: `isv[ISV_TAU] = v`, augmented and slice assignments,
    in-place methods (`isv[ISV_TAU].fill_(v)`) and `<isv>.write(ISV_TAU, v)` on a receiver named in
    `isv-buffers`. Writes inside `isv-bootstrap-functions` (reset dispatch),
    `isv-reference-functions` (the CPU twin of the kernel that owns the slot) and
    `isv-bus-functions` are allowed.

    ## Why is this bad
    Invariant 1, GPU drives, CPU reads. An adaptive value computed on the host and written back is
    baked into a captured CUDA graph at capture time, drifts from what the kernels compute, and
    makes two sources of truth for one signal.

    ## Example
    ```python
    def end_of_epoch(isv, tau):
        isv[ISV_TAU] = tau * 0.99  # ISV_TAU is GPU_COMPUTED
    ```

    ## Use instead
    ```python
    def end_of_epoch(isv, epoch):
        isv[ISV_EPOCH_INDEX] = epoch  # CPU_INPUT: born on the host
        adaptive_schedule(isv)       # the kernel computes TAU from it
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX101"
    name = "gpu-slot-host-write"
    summary = "Host code writes an ISV slot the layout marks GPU-computed"
    invariant = 1

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "sim/epoch.py": "from sim.layout import ISV_EPOCH\n\n\ndef end_of_epoch(isv, epoch):\n    isv[ISV_EPOCH] = epoch\n",
        }, note="The host writes the CPU-born input; the kernel computes TAU from it."),
        ProjectExample({
            **ISV_PROJECT,
            "pyproject.toml": ISV_PROJECT["pyproject.toml"] + 'isv-bootstrap-functions = ["sim.reset:reset_*"]\n',
            "sim/reset.py": "from sim.layout import ISV_TAU\n\n\ndef reset_fold(isv):\n    isv[ISV_TAU] = 0.005\n",
        }, note="Reset dispatch may write a GPU slot's bootstrap value."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **ISV_PROJECT,
            "sim/epoch.py": (
                "from sim.layout import ISV_EPOCH, ISV_TAU\n\n\ndef end_of_epoch(isv, epoch, tau):\n"
                "    isv[ISV_EPOCH] = epoch\n    isv[ISV_TAU] = tau * 0.99\n"
            ),
        }, expect=1, note="An epoch-end hook writes the GPU-computed TAU back from the host."),
        ProjectExample({
            **ISV_PROJECT,
            "sim/epoch.py": "from sim.layout import ISV_TAU\n\n\ndef end_of_epoch(isv, tau):\n    isv[ISV_TAU].fill_(tau)\n",
        }, expect=1, note="An in-place method on the slot is a write too."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                write.site,
                f"host code writes GPU-computed ISV slot ({write.expression} in `{write.function}`: {write.reason} vs"
                " written by kernels only)",
                "compute the value in a kernel that writes the slot, and read it on the host; host writes are for "
                "CPU inputs, static config, the fingerprint, and bootstrap values in reset dispatch",
            )
            for write in analysis.isv.writes
            if write.status == "violation"
        ]
