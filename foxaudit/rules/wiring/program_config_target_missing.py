"""FX207: a [tool.foxaudit.program] key points at nothing (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class ProgramConfigTargetMissing(ProjectRule):
    """A [tool.foxaudit.program] key points at nothing.

    ## What it does
    Reports configured targets that do not exist: a `layout-module` file, `registry-files` globs
    matching no module, a `generated-headers` path, a `kernel-loaders` function, and
    `state-classes`, `pinned-functions`, `hot-path-exclude`, `isv-bootstrap-functions`,
    `isv-reference-functions` and `isv-bus-functions` patterns that match no class or function.

    ## Why is this bad
    A whole-program check configured against a missing target silently checks nothing.

    ## Example
    ```toml
    [tool.foxaudit.program]
    layout-module = "trainer/layouts.py"  # the file is trainer/layout.py
    ```

    ## Use instead
    ```toml
    [tool.foxaudit.program]
    layout-module = "trainer/layout.py"
    ```

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX207"
    name = "program-config-target-missing"
    summary = "A [tool.foxaudit.program] key points at nothing"
    invariant = 0

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
