"""Human output: ``path:line:col: CODE message — hint: ...``, then a summary line."""

from __future__ import annotations

from collections import Counter

from foxaudit.diagnostics import Diagnostic


def format_line(diagnostic: Diagnostic) -> str:
    marker = " [*]" if diagnostic.edits else ""
    hint = f" — hint: {diagnostic.hint}" if diagnostic.hint else ""
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}: {diagnostic.code}{marker} {diagnostic.message}{hint}"


def statistics_table(diagnostics: list[Diagnostic]) -> list[str]:
    """Counts per code, most frequent first: ``count  CODE  name  [*] fixable``."""
    from foxaudit.rules.registry import by_code

    table = by_code()
    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if d.edits)
    width = max((len(str(count)) for count in counts.values()), default=1)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        name = table[code].rule.name if code in table else ""
        marker = f"  [*] {fixable[code]} fixable" if fixable[code] else ""
        lines.append(f"{count:>{width}}  {code}  {name}{marker}")
    return lines


def summary(diagnostics: list[Diagnostic], files: int, fixed: int) -> str:
    fixed_note = f"Fixed {fixed} problem{'s' if fixed != 1 else ''}. " if fixed else ""
    if not diagnostics:
        return f"{fixed_note}All checks passed ({files} file{'s' if files != 1 else ''} checked)."
    paths = len({d.path for d in diagnostics})
    fixable = sum(1 for d in diagnostics if d.edits)
    fixable_note = f" ({fixable} fixable with --fix)" if fixable else ""
    return (
        f"{fixed_note}Found {len(diagnostics)} problem{'s' if len(diagnostics) != 1 else ''} in {paths}"
        f" file{'s' if paths != 1 else ''}{fixable_note} ({files} checked)."
    )


def render_text(diagnostics: list[Diagnostic], *, files: int, fixed: int = 0, statistics: bool = False) -> str:
    lines = statistics_table(diagnostics) if statistics else [format_line(d) for d in diagnostics]
    lines.append(summary(diagnostics, files, fixed))
    return "\n".join(lines) + "\n"
