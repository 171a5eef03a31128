"""FX201: a Python module no entry point reaches (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class OrphanModule(ProjectRule):
    """A Python module no entry point reaches.

    ## What it does
    Builds the import graph from the entry points (console scripts, `__main__` modules and `if
    __name__ == "__main__"` scripts, modules under `test-roots`, `entry-points`) following absolute,
    relative and literal `importlib.import_module` imports, and reports every module nothing
    reaches. Imports under `if TYPE_CHECKING:` make nothing reachable. Modules matched by an
    `out-of-scope` glob are classified Out-of-scope instead.

    With no entry-point key configured, the entry points are derived the way ML repositories run
    code: scripts run by path (a file outside any package that runs a call at import) or with a
    module-level command line (`argparse`, `tyro.cli`, `fire.Fire`), pytest's test files, and the
    public modules of the distribution (`[project] name`, or every top-level package when there is
    none). An import the source roots cannot resolve is resolved against the importer's own and
    enclosing directories (the script's directory is on `sys.path`) and against literal
    `sys.path.append(...)` directories; `.pyx` files' imports count. `import_module(f"pkg.{x}")`
    gives one note for the modules only it may load, not an orphan each.

    ## Why is this bad
    Invariant 2, wire it up. A module nothing imports is dead code that still has to be read, kept
    green and audited, or a feature that was written and never connected.

    ## Example
    ```python
    # trainer/ops/old_scaler.py — imported by nothing, not even a test
    ```

    ## Use instead
    Import it where it is needed (or from its test), delete it, or classify it: `out-of-scope = {
    "benchmarks/**" = "run by hand" }`.

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX201"
    name = "orphan-module"
    summary = "A Python module no entry point reaches"
    invariant = 2

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
