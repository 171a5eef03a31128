"""Diagnostics placed on the sites the program analyses record (a span in a file, or a whole file)."""

from __future__ import annotations

from foxaudit.diagnostics import Diagnostic
from foxaudit.program.pyscan import Span
from foxaudit.program.wiring import Site


def diagnostic_at(code: str, site: Site, message: str, hint: str = "") -> Diagnostic:
    span = site.span
    return Diagnostic(
        path=site.path,
        line=span.line,
        column=span.column,
        code=code,
        message=message,
        end_line=span.end_line,
        end_column=span.end_column,
        hint=hint,
    )


def file_site(path: str) -> Site:
    """Line 1 of ``path``: where a finding about a whole file (or the configuration) goes."""
    return Site(path, Span(1, 1, 1, 1))
