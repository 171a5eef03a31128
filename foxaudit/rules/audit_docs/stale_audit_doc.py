"""FX701: a generated audit doc under docs/audits/ is stale or missing (whole-program)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.analysis import Analysis, analysis_for
from foxaudit.program.audit_docs import DOC_NAMES, RuleInfo, render_docs
from foxaudit.program.project import Project
from foxaudit.program.settings import ProgramSettings
from foxaudit.rules.base import AnalysisRule, ProjectExample, ProjectRule, RuleOptions


def rule_infos(analysis: Analysis) -> list[RuleInfo]:
    """The registry as the invariants doc lists it, each analysis rule with the number of findings
    its own check reports on ``analysis`` (imported lazily: the registry imports this module)."""
    from foxaudit.rules.registry import REGISTRY

    return [
        RuleInfo(
            code=entry.code,
            name=entry.rule.name,
            summary=entry.rule.summary,
            invariant=entry.rule.invariant,
            status=entry.status,
            whole_program=issubclass(entry.rule, ProjectRule),
            findings=len(entry.rule().check(analysis)) if issubclass(entry.rule, AnalysisRule) else None,
        )
        for entry in REGISTRY
        if entry.status != "removed"
    ]


def stale_docs(project: Project, *, only_if_kept: bool = False) -> list[tuple[str, str]]:
    """(doc path, 'stale' | 'missing') for every generated doc that differs from its file.

    ``only_if_kept``: nothing when the audit directory does not exist (FX701 on a project that
    keeps no audit docs); ``foxaudit audit --check`` asks without it.
    """
    analysis = analysis_for(project)
    directory = analysis.program.settings.audit_dir.strip("/")
    if only_if_kept and not (project.root / directory).is_dir():
        return []
    problems = []
    for name, text in render_docs(analysis, rule_infos(analysis)).items():
        path = project.root / directory / name
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            problems.append((f"{directory}/{name}", "missing"))
            continue
        if current != text:
            problems.append((f"{directory}/{name}", "stale"))
    return problems


class StaleAuditDoc(ProjectRule):
    """A generated audit doc under docs/audits/ is stale or missing.

    ## What it does
    Generates every audit doc (`wire-up.md`, `hot-path.md`, `isv-slots.md`, `state-reset.md`,
    `named-dims.md`, `invariants.md`) in memory from the current tree and reports each file under
    `audit-dir` that is missing or differs, naming the command that refreshes them
    (`audit-command`, default `foxaudit audit --write`). A project without an `audit-dir`
    directory keeps no audit docs and gets no finding; `foxaudit audit --write` creates it.

    ## Why is this bad
    Invariant 7, audited components. The audit docs are how a reader learns what is wired, what
    runs on the hot path and who writes each ISV slot; a doc that no longer matches the code
    misleads exactly the reader who trusted it.

    ## Example
    A commit adds `cuda/new_kernel.cu` and its launcher but leaves `docs/audits/wire-up.md` as it
    was.

    ## Use instead
    Run `foxaudit audit --write` and commit the refreshed docs in the same commit.

    ## Options
    None of its own; it reads `audit-dir` and `audit-command` of `[tool.foxaudit.program]`.
    """

    code = "FX701"
    name = "stale-audit-doc"
    summary = "A generated audit doc under docs/audits/ is stale or missing"
    invariant = 7

    VALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["app.*"]\n',
            "app/__init__.py": "",
            "app/main.py": "def main():\n    return 0\n",
        }, note="A project that keeps no audit docs (no `docs/audits/`) is not asked for them."),
    ]
    INVALID: ClassVar[list[ProjectExample]] = [
        ProjectExample({
            "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["app.*"]\n',
            "app/__init__.py": "",
            "app/main.py": "def main():\n    return 0\n",
            "docs/audits/wire-up.md": "# Wire-up audit\n\nEverything is wired.\n",
        }, expect=6, note="A hand-edited wire-up.md, and the five other docs never generated."),
    ]

    @classmethod
    def dependencies(cls, options: RuleOptions, program: Mapping[str, Any]) -> tuple[str, ...]:
        """Files other than the sources whose content shapes this rule's findings: the docs.

        A cache of whole-project findings keyed by the source files' content must also key on
        these, or regenerating the docs would leave a stale FX701 in the cache.
        """
        # Only `audit-dir` matters here; the whole table is validated where it is resolved.
        directory = str(program.get("audit-dir") or ProgramSettings().audit_dir).strip("/")
        return tuple(f"{directory}/{name}" for name in DOC_NAMES)

    def check_project(self, project: Project, options: RuleOptions) -> Iterator[Diagnostic]:
        command = analysis_for(project).program.settings.audit_command
        for path, state in stale_docs(project, only_if_kept=True):
            yield Diagnostic(
                path=path,
                line=1,
                column=1,
                code=self.code,
                message=f"generated audit doc is {state} ({state} vs what the tree generates now)",
                end_line=1,
                end_column=1,
                hint=f"run `{command}` and commit the result",
            )
