"""JSON: an array of objects (``code``, ``path``, ``line``, ``column``, ``end_line``, ``end_column``,
``message``, ``hint``, ``fixable``, ``name``, ``edits``), sorted like the text output."""

from __future__ import annotations

import json

from foxaudit.diagnostics import Diagnostic


def to_object(diagnostic: Diagnostic, names: dict[str, str]) -> dict[str, object]:
    data = diagnostic.to_json()
    data["name"] = names.get(diagnostic.code, "")
    data["edits"] = [
        {
            "line": edit.line,
            "column": edit.column,
            "end_line": edit.end_line,
            "end_column": edit.end_column,
            "replacement": edit.replacement,
        }
        for edit in diagnostic.edits
    ]
    return data


def render_json(diagnostics: list[Diagnostic]) -> str:
    from foxaudit.rules.registry import by_code

    names = {code: entry.rule.name for code, entry in by_code().items()}
    return json.dumps([to_object(d, names) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
