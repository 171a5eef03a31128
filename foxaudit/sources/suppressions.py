"""Suppression comments: ``# foxaudit: ignore[FX901, FX902] -- reason`` (``//`` or ``/* */`` in CUDA).

They are read from real comment tokens (tree-sitter ``comment`` nodes; in CUDA also the trailing
``//`` comment that tree-sitter-cuda folds into a ``#define``'s ``preproc_arg``), never from string
literals, so a tool may mention the syntax in a string without suppressing anything.

A suppression applies to the diagnostics that start on its own line; one on a line of its own
(no code before it) applies to the next line as well.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import tree_sitter

from foxaudit.sources.base import Language, SourceFile, ts_language

MARKER = b"foxaudit:"
_DIRECTIVE = re.compile(r"foxaudit:\s*ignore\b(?P<bracket>\[(?P<codes>[^\]]*)\])?(?P<rest>.*)", re.DOTALL)
_REASON = re.compile(r"^\s*--\s*(?P<reason>.*?)\s*(?:\*/\s*)?$", re.DOTALL)
_CODE = re.compile(r"^FX\d{3}$")


@dataclass(frozen=True)
class Suppression:
    """One parsed directive. ``problem`` is empty for a well-formed one, else what is wrong."""

    line: int
    column: int
    end_line: int
    end_column: int
    codes: tuple[str, ...]
    reason: str
    own_line: bool  # nothing but whitespace before the comment: also covers the next line
    problem: str = ""

    @property
    def lines(self) -> tuple[int, ...]:
        return (self.line, self.line + 1) if self.own_line else (self.line,)

    @property
    def span(self) -> tuple[int, int, int, int]:
        return self.line, self.column, self.end_line, self.end_column


@functools.cache
def _query(language: Language) -> tree_sitter.Query:
    pattern = "(comment) @c" if language == "python" else "[(comment) (preproc_arg)] @c"
    return tree_sitter.Query(ts_language(language), pattern)


def find_suppressions(source: SourceFile) -> list[Suppression]:
    """Every ``foxaudit:`` directive in the file's comments, in source order."""
    if MARKER not in source.data:
        return []
    captures = tree_sitter.QueryCursor(_query(source.language)).captures(source.tree.root_node)
    nodes = sorted(captures.get("c", []), key=lambda node: node.start_byte)
    found: list[Suppression] = []
    for node in nodes:
        raw = source.data[node.start_byte : node.end_byte]
        if MARKER not in raw:
            continue
        start = node.start_byte
        if node.type == "preproc_arg":
            # Only the `//` or `/*` comment that trails the macro body counts.
            comment_at = _comment_start(raw)
            if comment_at < 0:
                continue
            start += comment_at
            raw = raw[comment_at:]
        text = raw.decode("utf-8", errors="replace")
        match = _DIRECTIVE.search(text)
        if match is None:
            continue
        directive_start = start + len(text[: match.start()].encode("utf-8"))
        directive_end = start + len(text[: match.end()].rstrip().encode("utf-8"))
        line, column = source.position(directive_start)
        end_line, end_column = source.position(directive_end)
        comment_line, comment_column = source.position(start)
        own_line = not source.line_text(comment_line)[: comment_column - 1].strip()
        found.append(_parse(match, line, column, end_line, end_column, own_line))
    return found


def _parse(match: re.Match[str], line: int, column: int, end_line: int, end_column: int, own_line: bool) -> Suppression:
    problem = ""
    codes: tuple[str, ...] = ()
    if match.group("bracket") is None:
        problem = "names no codes (a blanket `ignore` hides every finding on the line)"
    else:
        items = [item.strip().upper() for item in match.group("codes").split(",") if item.strip()]
        bad = [item for item in items if not _CODE.match(item)]
        codes = tuple(item for item in items if _CODE.match(item))
        if not items:
            problem = "names no codes (an empty `ignore[]`)"
        elif bad:
            problem = f"has malformed codes ({', '.join(map(repr, bad))} vs codes like 'FX901')"
    reason_match = _REASON.match(match.group("rest"))
    reason = reason_match.group("reason").strip() if reason_match else ""
    if not problem and not reason:
        problem = "gives no reason"
    return Suppression(line, column, end_line, end_column, codes, reason, own_line, problem)


def _comment_start(raw: bytes) -> int:
    """Offset of the first ``//`` or ``/*`` outside a string or char literal, -1 if none."""
    quote = 0
    index = 0
    while index < len(raw):
        byte = raw[index]
        if quote:
            if byte == 0x5C:  # backslash escapes the next byte
                index += 2
                continue
            if byte == quote:
                quote = 0
        elif byte in (0x22, 0x27):
            quote = byte
        elif byte == 0x2F and index + 1 < len(raw) and raw[index + 1] in (0x2F, 0x2A):
            return index
        index += 1
    return -1
