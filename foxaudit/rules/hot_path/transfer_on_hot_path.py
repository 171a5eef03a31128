"""FX301: a host transfer or sync reachable from a hot-path root (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class TransferOnHotPath(ProjectRule):
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

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
