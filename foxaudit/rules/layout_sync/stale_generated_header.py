"""Whole-program rule: a generated header differs from what its generator writes."""

from __future__ import annotations

from typing import ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis
from foxaudit.rules._support.example_projects import GENERATED_HEADER, HEADER_PROJECT
from foxaudit.rules._support.sites import diagnostic_at, file_site
from foxaudit.rules.base import AnalysisRule, ProjectExample


class StaleGeneratedHeader(AnalysisRule):
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

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({**HEADER_PROJECT, "cuda/generated/layout.cuh": GENERATED_HEADER}, note="The committed header is what the generator writes."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            **HEADER_PROJECT,
            "cuda/generated/layout.cuh": GENERATED_HEADER.replace("ISV_TAU = 0", "ISV_TAU = 1"),
        }, expect=1, note="The layout moved TAU to slot 0; the committed header still says 1."),
    ]

    def check(self, analysis: Analysis) -> list[Diagnostic]:
        return [
            diagnostic_at(
                self.code,
                file_site(check.path),
                f"generated header {check.path} is stale ({check.verdict} vs current)",
                f"regenerate it with the layout's write command and commit it (checked by `{check.command}`)",
            )
            for check in analysis.sync.headers
            if not check.fresh
        ]
