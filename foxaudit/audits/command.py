"""The ``audit`` and ``history`` subcommands (the cli only parses arguments and calls these).

Exit status as for ``check``: 0 current/clean, 1 stale docs or offending commits, 2 usage or
configuration error. Messages follow the house format; no traceback reaches the user.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from foxaudit.audits.generate import check_audit_docs, write_audit_docs
from foxaudit.config import ConfigError, Settings, load_settings
from foxaudit.program.history import HistoryError, check_history
from foxaudit.program.project import Project
from foxaudit.program.settings import ProgramSettings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _settings(config: Path | None) -> Settings | None:
    try:
        return load_settings(config, Path.cwd())
    except ConfigError as error:
        _print_config_errors(error)
        return None


def _print_config_errors(error: ConfigError) -> None:
    count = len(error.errors)
    print(f"foxaudit: {count} configuration error{'s' if count != 1 else ''}:", file=sys.stderr)
    for message in error.errors:
        print(f"  {message}", file=sys.stderr)


def command_audit(config: Path | None, build_project: Callable[[Settings], Project], *, write: bool) -> int:
    settings = _settings(config)
    if settings is None:
        return EXIT_USAGE
    try:
        project = build_project(settings)
        command = ProgramSettings.from_table(project.settings).audit_command
        result = write_audit_docs(project) if write else check_audit_docs(project)
    except ConfigError as error:
        _print_config_errors(error)
        return EXIT_USAGE
    if write:
        for path in result.written:
            print(f"wrote {path}")
        if not result.written:
            print("audit docs are current")
        return EXIT_CLEAN
    for path, state in result.stale:
        print(f"{path}: generated audit doc is {state} ({state} vs current) — hint: run `{command}`", file=sys.stderr)
    if result.stale:
        return EXIT_FINDINGS
    print("audit docs are current")
    return EXIT_CLEAN


def default_range(root: Path) -> str | None:
    """pre-commit's pre-push refs, else the upstream of the current branch."""
    source, target = os.environ.get("PRE_COMMIT_FROM_REF"), os.environ.get("PRE_COMMIT_TO_REF")
    if source and target:
        if set(source) == {"0"}:
            # A new branch: every commit of it that no remote has yet.
            return f"{target} --not --remotes"
        return f"{source}..{target}"
    result = subprocess.run(
        ["git", "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode == 0 and result.stdout.strip():
        return f"{result.stdout.strip()}..HEAD"
    return None


def command_history(config: Path | None, revision_range: str | None) -> int:
    settings = _settings(config)
    if settings is None:
        return EXIT_USAGE
    from foxaudit.config import resolve_program

    errors: list[str] = []
    table = resolve_program(settings, errors)
    try:
        if errors:
            raise ConfigError(errors)
        program_settings = ProgramSettings.from_table(table)
    except ConfigError as error:
        _print_config_errors(error)
        return EXIT_USAGE
    revision_range = revision_range or default_range(settings.root)
    if revision_range is None:
        print(
            "foxaudit: no revision range (none given vs BASE..HEAD) — hint: `foxaudit history origin/main..HEAD`,"
            " or set an upstream branch",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        reports = check_history(settings.root, revision_range, program_settings)
    except HistoryError as error:
        print(f"foxaudit: {error}", file=sys.stderr)
        return EXIT_USAGE
    offending = [report for report in reports if report.offending]
    for report in offending:
        print(
            f"{report.sha[:10]} {report.subject!r}: adds {', '.join(report.added)} without touching "
            f"{program_settings.audit_dir}/ (component added vs audit docs updated in the same commit) — hint: run "
            f"`{program_settings.audit_command}` and amend that commit"
        )
    print(f"{len(reports)} commit{'s' if len(reports) != 1 else ''} checked, {len(offending)} without audit docs", file=sys.stderr)
    return EXIT_FINDINGS if offending else EXIT_CLEAN
