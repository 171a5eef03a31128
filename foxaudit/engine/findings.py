"""Diagnostics the engine itself builds (kept free of rule imports: the warm path uses them)."""

from __future__ import annotations

from foxaudit.diagnostics import Diagnostic

PARSE_ERROR = "FX001"
UNUSED_SUPPRESSION = "FX003"
# Codes a suppression can never silence (they report on suppressions themselves).
UNSUPPRESSIBLE = frozenset({"FX002", UNUSED_SUPPRESSION})


def unused_suppression(path: str, span: tuple[int, int, int, int], code: str, why: str) -> Diagnostic:
    line, column, end_line, end_column = span
    return Diagnostic(
        path=path,
        line=line,
        column=column,
        code=UNUSED_SUPPRESSION,
        message=f"unused suppression: {code} {why}",
        end_line=end_line,
        end_column=end_column,
        hint=f"remove {code} from the comment (or the whole comment)",
    )
