"""Whole-program rule: a host transfer or sync reachable from a hot-path root."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class TransferOnHotPath(AnalysisRule):
    """A host transfer or sync reachable from a hot-path root.

    ## What it does
    Finds the roots — functions decorated with one of `hot-path-decorators`, `hot-path-roots`, code
    captured in a CUDA graph (`capture-contexts`, `capture-begin-methods`, `graphed-callables`, and
    capture helpers) — follows calls through module functions, `self` methods, typed attributes and
    imported names, and reports every transfer or sync site reached: `.item()`, `.cpu()`,
    `.numpy()`, `.tolist()`, `.to("cpu")`, `.synchronize()`, `cupy.asnumpy`, CuPy `.get()` (with
    receiver evidence; never `dict.get`), `print`/`float`/`int` of a tensor. The message carries the
    call chain. Sites in `pinned-functions` or on `pinned-receivers` are OK-PINNED.

    ## Why is this bad
    Invariant 3. A synchronous device-to-host read inside the training step stalls the GPU every
    step, and inside a captured graph it runs once at capture time and never again — the value is
    silently frozen.

    ## Example
    ```python
    @hot_path
    def train_step(self):
        loss = self.loss()
        if loss.item() > 1e3:
            raise RuntimeError("diverged")
    ```

    ## Use instead
    ```python
    @hot_path
    def train_step(self):
        loss = self.loss()
        self.health_kernel(loss)  # the GPU decides; the host reads the ISV at the epoch end
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX301"
    name = "transfer-on-hot-path"
    summary = "A host transfer or sync reachable from a hot-path root"
    invariant = 3

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train.*"]\n',
            "train/__init__.py": "",
            "train/markers.py": "def hot_path(function):\n    return function\n",
            "train/step.py": (
                "from train.markers import hot_path\n\n\nclass Trainer:\n"
                "    @hot_path\n    def step(self, batch):\n        return self.loss(batch)\n\n"
                "    def loss(self, batch):\n        return (batch * batch).mean()\n\n"
                "    def report(self, loss):\n        return loss.item()\n"
            ),
        }, note="The transfer is in the epoch-end report, which no hot-path root reaches."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train.*"]\n',
            "train/__init__.py": "",
            "train/markers.py": "def hot_path(function):\n    return function\n",
            "train/step.py": (
                "from train.markers import hot_path\n\n\nclass Trainer:\n"
                "    @hot_path\n    def step(self, batch):\n        return self.loss(batch)\n\n"
                "    def loss(self, batch):\n        loss = (batch * batch).mean()\n"
                '        if loss.item() > 1e3:\n            raise RuntimeError("diverged")\n        return loss\n'
            ),
        }, expect=1, note="A divergence check reads the loss on the host inside the step."),
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train.*"]\n',
            "train/__init__.py": "",
            "train/capture.py": (
                "import torch\n\n\ndef capture(step, batch):\n    graph = torch.cuda.CUDAGraph()\n"
                "    with torch.cuda.graph(graph):\n        loss = step(batch)\n        total = loss.cpu()\n"
                "    return graph, total\n"
            ),
        }, expect=1, note="Code inside `with torch.cuda.graph(...)` is captured: a root without a decorator."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        out = []
        for site in analysis.hot.violations:
            chain = " → ".join(site.chain)
            out.append(
                diagnostic_at(
                    self.code,
                    site.site,
                    f"host transfer/sync {site.kind} on the hot path (reachable: {chain} vs no transfer in the step)",
                    site.hint,
                )
            )
        return out
