"""FX206: a device buffer allocated as state without a registry entry (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class UnregisteredDeviceBuffer(ProjectRule):
    """A device buffer allocated as state without a registry entry.

    ## What it does
    In the classes matched by `state-classes`, every `self.<name> = <factory>(..., device=...)`
    (factories in `state-factories`) is a device buffer. The registry is every
    `registry-entry-calls` call in `registry-files`, named by its `registry-name-param` argument. A
    buffer whose name has no entry is reported.

    ## Why is this bad
    Invariant 2. A fold boundary resets what the registry lists; an unregistered buffer carries fold
    N's statistics into fold N+1 and leaks validation data.

    ## Example
    ```python
    self.reward_ema = torch.zeros(n_envs, device=device)  # no entry 'reward_ema'
    ```

    ## Use instead
    ```python
    registry.add("reward_ema", FoldReset(), StateKind.DEVICE_BUFFER, "EMA of rewards", reset=self.reward_ema.zero_)
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX206"
    name = "unregistered-device-buffer"
    summary = "A device buffer allocated as state without a registry entry"
    invariant = 2

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
