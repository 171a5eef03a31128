"""Whole-program rule: a configured hot-path root matches no function."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.sites import diagnostic_at, file_site
from foxaudit.rules.base import AnalysisRule, ProjectExample


class UnmatchedHotPathRoot(AnalysisRule):
    """A configured hot-path root matches no function.

    ## What it does
    Reports each `hot-path-roots` pattern that matches no function of the project.

    ## Why is this bad
    A misspelt root disables the hot-path check for the code it was meant to cover.

    ## Example
    ```toml
    hot-path-roots = ["trainer.train.step:Trainer.stepp"]
    ```

    ## Use instead
    ```toml
    hot-path-roots = ["trainer.train.step:Trainer.step"]
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX303"
    name = "unmatched-hot-path-root"
    summary = "A configured hot-path root matches no function"
    invariant = 3

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["train.*"]\nhot-path-roots = ["train.step:Trainer.step"]\n',
            "train/__init__.py": "",
            "train/step.py": "class Trainer:\n    def step(self, batch):\n        return batch * 2\n",
        }, note="The root names a method of the project."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": (
                '[tool.foxaudit.program]\nentry-points = ["train.*"]\n'
                'hot-path-roots = ["train.step:Trainer.stepp", "train.step:Trainer.step"]\n'
            ),
            "train/__init__.py": "",
            "train/step.py": "class Trainer:\n    def step(self, batch):\n        return batch * 2\n",
        }, expect=1, note="A misspelt root next to a correct one."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                file_site("pyproject.toml"),
                f"hot-path root pattern matches no function ({pattern!r} vs a 'module:Qual.name' of the project)",
                "fix [tool.foxaudit.program] hot-path-roots",
            )
            for pattern in analysis.hot.unmatched_roots
        ]
