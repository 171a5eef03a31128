"""``foxaudit audit --write`` / ``--check``: the generated docs under docs/audits/.

The text comes from :mod:`foxaudit.program.audit_docs` (a pure function of the tree); this module
only compares and writes. Writes are atomic (temp file in the same directory, then ``os.replace``)
and a file whose content is already current is not touched, so ``--write`` twice is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from foxaudit.files import write_text_atomic
from foxaudit.program.analysis import analysis_for
from foxaudit.program.audit_docs import render_docs
from foxaudit.program.project import Project
from foxaudit.rules.audit_docs.stale_audit_doc import rule_infos, stale_docs


@dataclass(frozen=True)
class AuditResult:
    written: list[str]  # repository-relative paths rewritten
    stale: list[tuple[str, str]]  # (path, 'stale' | 'missing') before writing


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)


def check_audit_docs(project: Project) -> AuditResult:
    return AuditResult([], stale_docs(project))


def write_audit_docs(project: Project) -> AuditResult:
    stale = stale_docs(project)
    analysis = analysis_for(project)
    directory = analysis.program.settings.audit_dir.strip("/")
    docs = render_docs(analysis, rule_infos(analysis))
    written = []
    for path, _state in stale:
        name = path.rsplit("/", 1)[-1]
        write_atomic(project.root / directory / name, docs[name])
        written.append(path)
    return AuditResult(written, stale)
