"""Runs per-file rules on one SourceFile the way the engine contract says, and applies fixes.

One walk of the tree-sitter tree per file (a TreeCursor, no recursion); each node goes to the
rules that listed its type for the file's language; ``begin`` before and ``finish`` after.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.rules.base import Example, FileContext, Rule
from foxaudit.sources.base import SourceFile, language_of


def options_for(rule_class: type[Rule], raw: dict[str, Any]) -> Any:
    """TOML-style keys (``definition-sites``) to the rule's options dataclass."""
    return rule_class.options_class(**{key.replace("-", "_"): value for key, value in raw.items()})


def check_source(
    source: SourceFile,
    rules: Iterable[tuple[type[Rule], dict[str, Any]]],
    project_root: str | Path = ".",
) -> list[Diagnostic]:
    instances: list[Rule] = []
    options = {}
    for rule_class, raw in rules:
        if source.language not in rule_class.languages:
            continue
        instances.append(rule_class())
        options[rule_class.code] = options_for(rule_class, raw)
    ctx = FileContext(source, options, project_root=project_root)
    dispatch: dict[str, list[Rule]] = {}
    for rule in instances:
        for node_type in rule.nodes_for(source.language):
            dispatch.setdefault(node_type, []).append(rule)
    for rule in instances:
        rule.begin(ctx)
    cursor = source.tree.walk()
    while True:
        node = cursor.node
        for rule in dispatch.get(node.type, ()):
            rule.visit(node, ctx)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                for rule in instances:
                    rule.finish(ctx)
                return sorted(ctx.diagnostics)


def check_text(
    text: str,
    path: str,
    rule_class: type[Rule],
    options: dict[str, Any] | None = None,
    project_root: str | Path = ".",
) -> list[Diagnostic]:
    source = SourceFile.from_text(path, text)
    return [d for d in check_source(source, [(rule_class, options or {})], project_root) if d.code == rule_class.code]


def check_example(rule_class: type[Rule], example: Example, project_root: str | Path = ".") -> list[Diagnostic]:
    assert language_of(example.path) is not None, f"example path {example.path!r} has no known language"
    return check_text(example.code, example.path, rule_class, example.options, project_root)


def apply_edits(text: str, diagnostics: Iterable[Diagnostic]) -> str:
    """Apply every distinct edit (identical edits from several diagnostics apply once)."""
    edits = sorted({edit for diagnostic in diagnostics for edit in diagnostic.edits})
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    result = []
    cursor = 0
    previous: Edit | None = None
    for edit in edits:
        begin, end = offset(edit.line, edit.column), offset(edit.end_line, edit.end_column)
        assert begin >= cursor, f"overlapping edits {previous} and {edit}"
        result.append(text[cursor:begin])
        result.append(edit.replacement)
        cursor = end
        previous = edit
    result.append(text[cursor:])
    return "".join(result)


def toml_literal(value: Any) -> str:
    """Options as TOML (what a user writes in pyproject.toml) for the engine's config loader."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_literal(v)}" for k, v in value.items()) + " }"
    return "[" + ", ".join(toml_literal(item) for item in value) + "]"


def engine_available() -> bool:
    try:
        from foxaudit.config import load_settings  # noqa: F401
        from foxaudit.engine.analyze import analyze_text  # noqa: F401
        from foxaudit.engine.resolve import resolve  # noqa: F401
    except ImportError:
        return False
    return True


def engine_check(text: str, path: str, code: str, options: dict[str, Any], root: Path) -> list[Diagnostic]:
    """Check one in-memory file through the real engine (every stable rule on, ``code``'s options
    set as a user would in pyproject.toml under ``root``); only ``code``'s findings are returned."""
    from foxaudit.config import load_settings
    from foxaudit.engine.analyze import analyze_text
    from foxaudit.engine.resolve import resolve

    lines = ["[tool.foxaudit]", f"[tool.foxaudit.rules.{code}]"]
    lines += [f"{key} = {toml_literal(value)}" for key, value in options.items()]
    config = root / "pyproject.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    resolved = resolve(load_settings(config_file=config))
    return sorted(d for d in analyze_text(resolved, path, text).diagnostics if d.code == code)



def project_check(rule: Any, example: Any, root: Path) -> list[Diagnostic]:
    """A ProjectExample through the real whole-program pipeline (``foxaudit.engine.run_project_example``)."""
    from foxaudit.engine import run_project_example

    return run_project_example(rule, example, root)
