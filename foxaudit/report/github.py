"""GitHub Actions workflow commands: one ``::error`` annotation per diagnostic."""

from __future__ import annotations

from foxaudit.diagnostics import Diagnostic


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(diagnostic: Diagnostic) -> str:
    message = diagnostic.message + (f" — hint: {diagnostic.hint}" if diagnostic.hint else "")
    return (
        f"::error file={_escape_property(diagnostic.path)},line={diagnostic.line},col={diagnostic.column},"
        f"endLine={diagnostic.end_line},endColumn={diagnostic.end_column},"
        f"title={_escape_property(diagnostic.code)}::{_escape_data(f'{diagnostic.code} {message}')}"
    )


def render_github(diagnostics: list[Diagnostic]) -> str:
    return "".join(annotation(d) + "\n" for d in diagnostics)
