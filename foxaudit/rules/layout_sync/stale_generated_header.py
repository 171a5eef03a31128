"""FX503: a generated header differs from what its generator writes (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.findings import findings
from foxaudit.program.project import Project
from foxaudit.rules.base import ProjectRule, RuleOptions


class StaleGeneratedHeader(ProjectRule):
    """A generated header differs from what its generator writes.

    ## What it does
    Runs the check command configured for each header in `generated-headers` (exit 0 means current;
    `{path}` stands for the header) with a timeout, cached by the content of the header and of the
    generator's package, so a warm run executes nothing — but only with the user's opt-in
    (`--run-generators` or `FOXAUDIT_RUN_GENERATORS=1`): the command is the analysed repository's
    code. Without it the header is checked statically (present; every slot offset, stride and
    width of each layout it mirrors, with the layout's values) and `check` notes once that the
    command was not run.

    ## Why is this bad
    Invariant 5. A stale header means kernels compile against an old layout.

    ## Example
    ```toml
    generated-headers = { "cuda/generated/layout.cuh" = "python -m trainer.layout --check --header {path}" }
    ```

    ## Use instead
    Regenerate the header (`python -m trainer.layout --write`) in the commit that changes the
    layout.

    ## Options
    None of its own; it reads `[tool.foxaudit.program]` (docs/foxaudit-program.md).
    """

    code = "FX503"
    name = "stale-generated-header"
    summary = "A generated header differs from what its generator writes"
    invariant = 5

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        yield from findings(analysis_for(project), self.code)
