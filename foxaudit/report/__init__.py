"""Output formats: text, json, sarif, github. ``render(format, diagnostics, ...)`` picks one."""

from __future__ import annotations

from pathlib import Path

from foxaudit.diagnostics import Diagnostic

FORMATS = ("text", "json", "sarif", "github")


def render(
    output_format: str,
    diagnostics: list[Diagnostic],
    *,
    root: Path,
    files: int = 0,
    fixed: int = 0,
    statistics: bool = False,
) -> str:
    """The whole output of a run in one format (text ends with a summary line)."""
    if output_format == "json":
        from foxaudit.report.json_format import render_json

        return render_json(diagnostics)
    if output_format == "sarif":
        from foxaudit.report.sarif import render_sarif

        return render_sarif(diagnostics, root)
    if output_format == "github":
        from foxaudit.report.github import render_github

        return render_github(diagnostics)
    from foxaudit.report.text import render_text

    return render_text(diagnostics, files=files, fixed=fixed, statistics=statistics)
