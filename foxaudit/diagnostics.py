"""The value every check produces: a located finding, optionally with a fix.

Positions are 1-based lines and 1-based columns counted in characters (not bytes), the
convention of editors, SARIF and GitHub annotations. ``end_line``/``end_column`` are
exclusive of the last character (the column just after it), as in SARIF regions.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between two positions of one file (1-based, end exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int
    replacement: str


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. Sort order is path, line, column, code: the order users read."""

    path: str  # repository-relative, POSIX separators
    line: int
    column: int
    code: str
    message: str = field(compare=False)
    end_line: int = field(compare=False)
    end_column: int = field(compare=False)
    # How to fix it, in words (ruff's fix_title); empty when the message already says it.
    hint: str = field(default="", compare=False)
    # Machine-applicable edits within ``path`` (``foxaudit check --fix``); empty when none is safe.
    edits: tuple[Edit, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "hint": self.hint,
            "fixable": bool(self.edits),
        }

    @classmethod
    def from_json(cls, data: dict[str, object], edits: tuple[Edit, ...] = ()) -> Diagnostic:
        return cls(
            path=str(data["path"]),
            line=int(data["line"]),  # type: ignore[arg-type]
            column=int(data["column"]),  # type: ignore[arg-type]
            code=str(data["code"]),
            message=str(data["message"]),
            end_line=int(data["end_line"]),  # type: ignore[arg-type]
            end_column=int(data["end_column"]),  # type: ignore[arg-type]
            hint=str(data.get("hint", "")),
            edits=edits,
        )
