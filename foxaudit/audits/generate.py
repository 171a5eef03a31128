"""``foxaudit audit --write`` / ``--check``: the generated docs under docs/audits/.

The text comes from :mod:`foxaudit.program.audit_docs` (a pure function of the tree); this module
only compares and writes. Writes are atomic (temp file in the same directory, then ``os.replace``)
and a file whose content is already current is not touched, so ``--write`` twice is a no-op.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

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
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def check_audit_docs(project: Project) -> AuditResult:
    return AuditResult([], stale_docs(project))


def write_audit_docs(project: Project) -> AuditResult:
    stale = stale_docs(project)
    analysis = analysis_for(project)
    directory = analysis.program.settings.audit_dir.strip("/")
    docs = render_docs(analysis, rule_infos())
    written = []
    for path, _state in stale:
        name = path.rsplit("/", 1)[-1]
        write_atomic(project.root / directory / name, docs[name])
        written.append(path)
    return AuditResult(written, stale)
