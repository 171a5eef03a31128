"""Whole-program rule: a call on the hot path that the analysis cannot follow."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at
from foxaudit.rules.base import AnalysisRule, ProjectExample


class UnresolvedHotPathCall(AnalysisRule):
    """A call on the hot path that the analysis cannot follow.

    ## What it does
    Preview. Reports calls inside hot functions whose target could be a project function (its method
    name is defined in the project) but cannot be resolved: the receiver's type is unknown, or a
    parameter is called. The analysis never guesses; these calls are where FX301 could miss a
    transfer.

    ## Why is this bad
    Invariant 3 holds only for the code the analysis can see; this lists the blind spots.

    ## Example
    ```python
    @hot_path
    def step(self, env):
        env.step()  # env's class is unknown
    ```

    ## Use instead
    ```python
    @hot_path
    def step(self):
        self.env.step()  # self.env = VectorEnv(...) in __init__
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX302"
    name = "unresolved-hot-path-call"
    summary = "A call on the hot path that the analysis cannot follow"
    invariant = 3

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train.*"]\n',
            "train/__init__.py": "",
            "train/markers.py": "def hot_path(function):\n    return function\n",
            "train/env.py": "class VectorEnv:\n    def advance(self, actions):\n        return actions + 1\n",
            "train/step.py": (
                "from train.env import VectorEnv\nfrom train.markers import hot_path\n\n\nclass Trainer:\n"
                "    def __init__(self):\n        self.env = VectorEnv()\n\n"
                "    @hot_path\n    def step(self, actions):\n        return self.env.advance(actions)\n"
            ),
        }, note="`self.env` has a known class, so the call is followed."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train.*"]\n',
            "train/__init__.py": "",
            "train/markers.py": "def hot_path(function):\n    return function\n",
            "train/env.py": "class VectorEnv:\n    def advance(self, actions):\n        return actions + 1\n",
            "train/step.py": (
                "from train.markers import hot_path\n\n\nclass Trainer:\n"
                "    @hot_path\n    def step(self, env, actions):\n        return env.advance(actions)\n"
            ),
        }, expect=1, note="The environment arrives as a parameter of unknown type."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                call.site,
                f"call on the hot path cannot be resolved (`{call.text}`: {call.note} vs a known project function)",
                "call the function through a name the analysis can follow (module function, self method, typed attribute)",
            )
            for call in analysis.hot.unresolved
        ]
