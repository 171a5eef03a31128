"""Whole-program rule: a device buffer allocated as state without a registry entry."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class UnregisteredDeviceBuffer(AnalysisRule):
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

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": (
                '[tool.foxaudit.program]\nentry-points = ["sim.*"]\nstate-classes = ["sim.env:Env"]\n'
                'registry-files = ["sim/registry.py"]\nregistry-entry-calls = ["StateEntry"]\n'
            ),
            "sim/__init__.py": "",
            "sim/env.py": (
                "import torch\n\n\nclass Env:\n    def __init__(self, n, device):\n"
                "        self.position = torch.zeros(n, device=device)\n"
                "        self.cash = torch.ones(n, device=device)\n"
                "        self.scratch = torch.zeros(n)  # a host tensor: not device state\n"
            ),
            "sim/registry.py": (
                "from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass StateEntry:\n"
                "    name: str\n    category: str\n\n\n"
                'ENTRIES = (StateEntry("position", "FoldReset"), StateEntry(name="cash", category="FoldReset"))\n'
            ),
        }, note="Both device buffers have an entry; the host tensor needs none."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": (
                '[tool.foxaudit.program]\nentry-points = ["sim.*"]\nstate-classes = ["sim.env:Env"]\n'
                'registry-files = ["sim/registry.py"]\nregistry-entry-calls = ["StateEntry"]\n'
            ),
            "sim/__init__.py": "",
            "sim/env.py": (
                "import torch\n\n\nclass Env:\n    def __init__(self, n, device):\n"
                "        self.position = torch.zeros(n, device=device)\n"
                "        self.cash = torch.ones(n, device=device)\n"
            ),
            "sim/registry.py": (
                "from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass StateEntry:\n"
                "    name: str\n    category: str\n\n\n"
                'ENTRIES = (StateEntry("position", "FoldReset"),)\n'
            ),
        }, expect=1, note="`cash` lives on the device and the registry does not know it."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                buffer.site,
                f"device buffer `{buffer.name}` of `{buffer.owner}` has no StateResetRegistry entry (unregistered vs one "
                "entry per piece of state)",
                f"register '{buffer.name}' with a lifecycle and its reset arm in the registry",
            )
            for buffer in analysis.state.missing
        ]
