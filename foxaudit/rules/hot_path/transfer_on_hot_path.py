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
    call chain. Sites in `pinned-functions` or on `pinned-receivers` are OK-PINNED. A site reached
    only from captured code, in a function that asks whether the stream is capturing before it
    (`torch.cuda.is_current_stream_capturing()`, `cudaStreamIsCapturing`, `stream.is_capturing`)
    or is told so by a parameter (`stream_is_capturing`), is written to skip the read-back under
    capture: it is on the cold path. (A root that runs eagerly every step excuses nothing.)

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
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train"]\n',
            "train.py": (
                "import torch\n\n\ndef record_count(counter, capacity):\n"
                "    if torch.cuda.is_current_stream_capturing():\n        return capacity\n"
                "    return min(int(counter.cpu()[0]), capacity)\n\n\n"
                "def sorted_count(counter, capacity, stream_is_capturing=False):\n"
                "    if stream_is_capturing:\n        return capacity\n    return int(counter.numpy()[0])\n\n\n"
                "def step(counter):\n    return record_count(counter, 16) + sorted_count(counter, 16, True)\n\n\n"
                "if __name__ == '__main__':\n    graph = torch.cuda.CUDAGraph()\n"
                "    counter = torch.zeros(1, device='cuda')\n    with torch.cuda.graph(graph):\n        step(counter)\n"
            ),
        }, note="Each read-back is skipped while the stream is capturing: the function asks first, or is told."),
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
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train"]\n',
            "train.py": (
                "import torch\n\n\ndef record_count(counter, capacity):\n    count = int(counter.cpu()[0])\n"
                "    if torch.cuda.is_current_stream_capturing():\n        return capacity\n    return count\n\n\n"
                "if __name__ == '__main__':\n    graph = torch.cuda.CUDAGraph()\n"
                "    counter = torch.zeros(1, device='cuda')\n    with torch.cuda.graph(graph):\n"
                "        record_count(counter, 16)\n"
            ),
        }, expect=1, note="The read-back comes before the question: it runs under capture."),
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
