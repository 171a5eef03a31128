"""``foxaudit history BASE..HEAD``: commits that add a component without touching docs/audits/.

Only git is read (``git rev-list``, ``git diff-tree``, ``git cat-file``), never the work tree, so
the check gives the same answer in CI on a fresh clone as on a developer's machine. For each
commit the changed files are compared with their first-parent version:

* module — a new importable ``.py`` file outside the test roots;
* kernel — a ``__global__`` name a changed ``.cu``/``.cuh`` file defines that its parent did not;
* ISV slot — a slot of the ISV layout (read statically from ``layout-module``) that is new;
* registry entry — a new entry name in the ``registry-files``;
* device buffer — a new ``self.x = <factory>(..., device=...)`` in a ``state-classes`` class.

A commit that adds any of them and changes nothing under ``audit-dir`` is reported.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from foxaudit.globs import first_path_match
from foxaudit.program.cudascan import scan_cuda
from foxaudit.program.layoutmodel import _LayoutReader
from foxaudit.program.model import Program, module_name_for
from foxaudit.program.project import Project
from foxaudit.program.settings import ProgramSettings
from foxaudit.program.wiring import state_coverage
from foxaudit.sources.base import SourceFile, language_of


class HistoryError(Exception):
    """git failed or the range is malformed; the message is in the house format."""


@dataclass
class CommitReport:
    sha: str
    subject: str
    added: list[str] = field(default_factory=list)  # "kernel `x` (cuda/x.cu)", ...
    touches_audit_docs: bool = False

    @property
    def offending(self) -> bool:
        return bool(self.added) and not self.touches_audit_docs


def _git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    try:
        result = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True, check=False)
    except OSError as error:
        raise HistoryError(f"cannot run git ({error}) — hint: install git and run inside a repository") from None
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        raise HistoryError(
            f"git {' '.join(args[:3])} failed ({message[-1] if message else result.returncode} vs success) — hint: "
            "check the revision range (e.g. origin/main..HEAD) and that the history is fetched"
        )
    return result.stdout


def commits_in_range(root: Path, revision_range: str) -> list[str]:
    if revision_range.endswith(" --not --remotes"):
        target = revision_range.split()[0]
        out = _git(root, "rev-list", "--reverse", "--topo-order", target, "--not", "--remotes")
        return [line for line in out.decode().split() if line]
    if ".." not in revision_range:
        raise HistoryError(
            f"not a revision range (got {revision_range!r} vs BASE..HEAD) — hint: e.g. `foxaudit history origin/main..HEAD`"
        )
    out = _git(root, "rev-list", "--reverse", "--topo-order", revision_range)
    return [line for line in out.decode().split() if line]


class _Blobs:
    """`git cat-file --batch` reads, one process for many blobs."""

    def __init__(self, root: Path):
        self.root = root

    def read(self, specs: list[str]) -> dict[str, bytes | None]:
        if not specs:
            return {}
        out = _git(self.root, "cat-file", "--batch", data=("\n".join(specs) + "\n").encode())
        result: dict[str, bytes | None] = {}
        position = 0
        for spec in specs:
            end = out.index(b"\n", position)
            header = out[position:end].decode(errors="replace").split()
            position = end + 1
            if len(header) < 3 or header[1] == "missing" or header[-1] == "missing":
                result[spec] = None
                continue
            size = int(header[2])
            result[spec] = out[position : position + size]
            position += size + 1
        return result


def check_history(root: Path, revision_range: str, settings: ProgramSettings) -> list[CommitReport]:
    root = Path(root)
    reports = []
    blobs = _Blobs(root)
    for sha in commits_in_range(root, revision_range):
        reports.append(_commit_report(root, sha, settings, blobs))
    return reports


def _commit_report(root: Path, sha: str, settings: ProgramSettings, blobs: _Blobs) -> CommitReport:
    info = _git(root, "show", "-s", "--format=%P%x00%s", sha).decode("utf-8", errors="replace").rstrip("\n")
    parents_text, _, subject = info.partition("\x00")
    parents = parents_text.split()
    if parents:
        diff = _git(root, "diff-tree", "-r", "-M", "--no-commit-id", "--name-status", parents[0], sha)
    else:
        diff = _git(root, "diff-tree", "-r", "--root", "--no-commit-id", "--name-status", sha)
    report = CommitReport(sha, subject)
    audit_dir = settings.audit_dir.strip("/") + "/"
    changes: list[tuple[str, str, str]] = []  # (status, old path, new path)
    for line in diff.decode("utf-8", errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) < 2:
            continue
        status = fields[0][0]
        old, new = (fields[1], fields[2]) if status in "RC" and len(fields) > 2 else (fields[1], fields[1])
        if new.startswith(audit_dir) or old.startswith(audit_dir):
            report.touches_audit_docs = True
        if status == "D":
            continue
        changes.append((status, old, new))
    interesting = [c for c in changes if language_of(c[2]) is not None]
    specs = []
    for status, old, new in interesting:
        specs.append(f"{sha}:{new}")
        if parents and status != "A":
            specs.append(f"{parents[0]}:{old}")
    contents = blobs.read(specs)
    test_roots = tuple(r.strip("/") + "/" for r in settings.test_roots)
    for status, old, new in interesting:
        after = contents.get(f"{sha}:{new}")
        before = contents.get(f"{parents[0]}:{old}") if parents and status != "A" else None
        if after is None:
            continue
        language = language_of(new)
        if language == "python" and new.endswith(".py"):
            if (
                status in "AC"
                and not new.startswith(test_roots)
                and module_name_for(new, settings.source_roots)
                and not first_path_match(new, settings.out_of_scope)
            ):
                report.added.append(f"module `{new}`")
            report.added.extend(_python_components(root, new, before, after, settings))
        elif language == "cuda":
            new_kernels = _kernels(new, after) - _kernels(old, before)
            report.added.extend(f"kernel `{name}` ({new})" for name in sorted(new_kernels))
    return report


def _source(path: str, data: bytes | None) -> SourceFile | None:
    if data is None:
        return None
    language = language_of(path)
    if language is None:
        return None
    try:
        return SourceFile(path=path, data=data, language=language)
    except UnicodeDecodeError:
        return None


def _kernels(path: str, data: bytes | None) -> set[str]:
    source = _source(path, data)
    return {kernel.name for kernel in scan_cuda(source).kernels} if source else set()


def _python_components(root: Path, path: str, before: bytes | None, after: bytes, settings: ProgramSettings) -> list[str]:
    added: list[str] = []
    if settings.layout_module and path == settings.layout_module:
        old_slots = _isv_slots(path, before, settings)
        new_slots = _isv_slots(path, after, settings)
        added.extend(f"ISV slot `{name}`" for name in sorted(new_slots - old_slots))
    old_entries, old_buffers = _state(root, path, before, settings)
    new_entries, new_buffers = _state(root, path, after, settings)
    added.extend(f"registry entry `{name}` ({path})" for name in sorted(new_entries - old_entries))
    added.extend(f"device buffer `{name}` ({path})" for name in sorted(new_buffers - old_buffers))
    return added


def _isv_slots(path: str, data: bytes | None, settings: ProgramSettings) -> set[str]:
    source = _source(path, data)
    if source is None:
        return set()
    model = _LayoutReader(source, settings).read()
    layout = model.layout(settings.isv_layout)
    return {slot.constant for slot in layout.slots} if layout else set()


def _state(root: Path, path: str, data: bytes | None, settings: ProgramSettings) -> tuple[set[str], set[str]]:
    source = _source(path, data)
    if source is None:
        return set(), set()
    registry = bool(first_path_match(path, settings.registry_files))
    if not registry and not settings.state_classes:
        return set(), set()
    program = Program(Project(root=root, files=[source]), settings, use_cache=False)
    coverage = state_coverage(program)
    entries = {entry.name for entry in coverage.entries if entry.name}
    buffers = {f"{buffer.owner}.{buffer.name}" for buffer in coverage.buffers}
    return entries, buffers
