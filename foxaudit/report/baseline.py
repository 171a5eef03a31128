"""Baselines: adopt foxaudit on a repository that already has findings.

``foxaudit baseline`` records the current findings' fingerprints (foxaudit/report/fingerprints.py)
in a JSON file meant to be committed; ``foxaudit check --baseline FILE`` then reports only the
findings that are not in it, so the hooks can be turned on today and the old findings paid off
over time. The file lists each finding's code, path, line and message too, for people reading
it in review; only the fingerprints count. Matching is by count: a baseline with two findings of
one fingerprint hides two, a third identical one is new.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from foxaudit.diagnostics import Diagnostic
from foxaudit.files import write_text_atomic
from foxaudit.report.fingerprints import fingerprints

FORMAT_VERSION = 1
DEFAULT_PATH = ".foxaudit-baseline.json"


class BaselineError(Exception):
    """An unreadable baseline file; the message is in the house format."""


def write_baseline(path: Path, diagnostics: list[Diagnostic], root: Path) -> int:
    """Write the baseline of ``diagnostics`` to ``path`` (atomically); returns how many it holds."""
    findings = [
        {"fingerprint": fingerprint, "code": d.code, "path": d.path, "line": d.line, "message": d.message}
        for d, fingerprint in fingerprints(sorted(diagnostics), root)
    ]
    document = {"foxaudit-baseline": FORMAT_VERSION, "findings": findings}
    write_text_atomic(path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return len(findings)


def read_baseline(path: Path) -> Counter[str]:
    """The fingerprints a baseline file holds, with their counts."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"baseline file not found (got {str(path)!r} vs an existing file) — hint: create it"
                            " with `foxaudit baseline`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"unreadable baseline file {str(path)!r} ({error}) — hint: regenerate it with"
                            " `foxaudit baseline`") from None
    version = document.get("foxaudit-baseline") if isinstance(document, dict) else None
    findings = document.get("findings") if isinstance(document, dict) else None
    if version != FORMAT_VERSION or not isinstance(findings, list):
        raise BaselineError(f"not a foxaudit baseline {str(path)!r} (got format {version!r} vs {FORMAT_VERSION})"
                            " — hint: regenerate it with `foxaudit baseline`")
    counts: Counter[str] = Counter()
    for entry in findings:
        fingerprint = entry.get("fingerprint") if isinstance(entry, dict) else None
        if not isinstance(fingerprint, str):
            raise BaselineError(f"baseline entry without a fingerprint in {str(path)!r} (got {entry!r} vs"
                                ' {"fingerprint": "..."}) — hint: regenerate it with `foxaudit baseline`')
        counts[fingerprint] += 1
    return counts


def new_findings(diagnostics: list[Diagnostic], baseline: Counter[str], root: Path) -> tuple[list[Diagnostic], int]:
    """(the findings the baseline does not account for, how many it hid)."""
    remaining = Counter(baseline)
    kept: list[Diagnostic] = []
    hidden = 0
    for diagnostic, fingerprint in fingerprints(sorted(diagnostics), root):
        if remaining[fingerprint] > 0:
            remaining[fingerprint] -= 1
            hidden += 1
        else:
            kept.append(diagnostic)
    return kept, hidden
