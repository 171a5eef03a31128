"""Generates ``docs/rules.md`` from the rule registry (every rule's doc, options and examples).

``python -m foxaudit.rules.docs`` prints the page, ``--write`` replaces ``docs/rules.md``
atomically, ``--check`` exits 1 when the file is stale. The output depends only on the
registry and the rule classes, so it is byte-for-byte deterministic.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

from foxaudit.files import write_text_atomic
from foxaudit.rules.base import DOC_SECTIONS, Example, ProjectExample
from foxaudit.rules.registry import REGISTRY, Registered

REGENERATE_COMMAND = "python -m foxaudit.rules.docs --write"
DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
_HEADING = re.compile(r"^##\s+(.+?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def doc_body(rule: type) -> str:
    """The rule's docstring without its first (summary) line, dedented."""
    doc = inspect.cleandoc(rule.__doc__ or "")
    _first, _newline, rest = doc.partition("\n")
    return rest.strip("\n")


def doc_sections(rule: type) -> dict[str, str]:
    """``## Heading`` → text, for the headings outside code fences, in order."""
    sections: dict[str, str] = {}
    current: str | None = None
    in_fence = False
    for line in doc_body(rule).split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            current = heading.group(1)
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return {name: text.strip("\n") for name, text in sections.items()}


def missing_sections(rule: type) -> list[str]:
    present = list(doc_sections(rule))
    return [section for section in DOC_SECTIONS if section not in present]


def toml_value(value: Any) -> str:
    """A TOML literal for an option value (tuples as arrays, mappings as inline tables)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if getattr(value, f.name)}
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = ", ".join(f"{_toml_key(str(key))} = {toml_value(item)}" for key, item in sorted(value.items()))
        return "{ " + items + " }"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
        return "[" + ", ".join(toml_value(item) for item in items) + "]"
    return json.dumps(str(value))


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def option_default(option_field: dataclasses.Field) -> Any:
    if option_field.default is not dataclasses.MISSING:
        return option_field.default
    if option_field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return option_field.default_factory()  # type: ignore[misc]
    return None


def _fence(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def _language(path: str) -> str:
    """The fence language of an example file."""
    for suffixes, language in (((".py", ".pyi"), "python"), ((".cu", ".cuh", ".h"), "cuda"), ((".toml",), "toml"),
                               ((".md",), "markdown")):
        if path.endswith(suffixes):
            return language
    return "text"


def _example_block(example: Example, verdict: str) -> list[str]:
    label = f"{verdict} — `{example.path}`"
    if example.options:
        label += f", options `{toml_value(dict(example.options))}`"
    if example.expect is not None and verdict == "Invalid":
        label += f", {example.expect} finding{'s' if example.expect != 1 else ''}"
    fence = _fence(example.code)
    lines = [f"{label}:", "", f"{fence}{_language(example.path)}", example.code.rstrip("\n"), fence, ""]
    if example.fixed is not None:
        fixed_fence = _fence(example.fixed)
        lines += ["After `--fix`:", "", f"{fixed_fence}{_language(example.path)}", example.fixed.rstrip("\n"), fixed_fence, ""]
    return lines


def _project_example_block(example: ProjectExample, verdict: str) -> list[str]:
    count = len(example.files)
    label = f"{verdict} — a project of {count} file{'s' if count != 1 else ''}"
    if example.expect is not None and verdict == "Invalid":
        label += f", {example.expect} finding{'s' if example.expect != 1 else ''}"
    lines = [f"{label}:", ""]
    if example.note:
        lines += [example.note, ""]
    for path, text in example.files.items():
        if not text:
            lines += [f"`{path}` (empty)", ""]
            continue
        fence = _fence(text)
        lines += [f"`{path}`:", "", f"{fence}{_language(path)}", text.rstrip("\n"), fence, ""]
    return lines


def _demote(body: str) -> list[str]:
    lines = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        lines.append("#" + line if not in_fence and _HEADING.match(line) else line)
    return lines


def render_rule(entry: Registered) -> list[str]:
    rule = entry.rule
    languages = ", ".join(sorted(getattr(rule, "languages", ()))) or "whole project"
    invariant = rule.invariant
    lines = [
        f"## {entry.code} `{rule.name}`",
        "",
        f"{rule.summary}.",
        "",
        (
            f"Status: **{entry.status}** · invariant: {invariant if invariant else 'tool hygiene'} · "
            f"languages: {languages} · fixable: {'yes' if rule.fixable else 'no'}"
        ),
        "",
        *_demote(doc_body(rule)),
        "",
    ]
    fields = list(dataclasses.fields(rule.options_class)) if dataclasses.is_dataclass(rule.options_class) else []
    lines += [f"### Configuration of {entry.code}", ""]
    if fields:
        lines += [f"Under `[tool.foxaudit.rules.{entry.code}]`:", "", "| Key | Default | Meaning |", "|---|---|---|"]
        for option_field in fields:
            key = option_field.name.replace("_", "-")
            default = toml_value(option_default(option_field)).replace("|", "\\|")
            meaning = str(option_field.metadata.get("help", "")).replace("|", "\\|")
            lines.append(f"| `{key}` | `{default}` | {meaning} |")
    else:
        lines.append("No options.")
    lines.append("")
    invalid = list(getattr(rule, "INVALID", ()))
    valid = list(getattr(rule, "VALID", ()))
    if invalid or valid:
        summary = f"{len(invalid)} invalid and {len(valid)} valid examples (they are the rule's tests)"
        lines += [f"### Examples of {entry.code}", "", f"<details><summary>{summary}</summary>", ""]
        for verdict, examples in (("Invalid", invalid), ("Valid", valid)):
            for example in examples:
                if isinstance(example, ProjectExample):
                    lines += _project_example_block(example, verdict)
                else:
                    lines += _example_block(example, verdict)
        lines += ["</details>", ""]
    return lines


def render() -> str:
    entries = sorted(REGISTRY, key=lambda entry: entry.code)
    lines = [
        "# foxaudit rules",
        "",
        f"Generated from the rule registry by `{REGENERATE_COMMAND}` — edit the rule modules, not this file.",
        "",
        "| Code | Name | Status | Invariant | Fixable | Summary |",
        "|---|---|---|---|---|---|",
    ]
    for entry in entries:
        rule = entry.rule
        anchor = f"{entry.code.lower()}-{rule.name}"
        summary = rule.summary.replace("|", "\\|")
        lines.append(
            f"| [{entry.code}](#{anchor}) | `{rule.name}` | {entry.status} | {rule.invariant or '—'} | "
            f"{'yes' if rule.fixable else 'no'} | {summary} |"
        )
    lines.append("")
    for entry in entries:
        lines += render_rule(entry)
    return "\n".join(lines).rstrip("\n") + "\n"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)  # world-readable (0644), like any docs page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m foxaudit.rules.docs", description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"replace {DOCS_PATH.name} with the generated page")
    mode.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    parser.add_argument("--path", type=Path, default=DOCS_PATH, help="where the page lives (default: docs/rules.md)")
    arguments = parser.parse_args(argv)
    text = render()
    if arguments.write:
        write_atomic(arguments.path, text)
        return 0
    if arguments.check:
        current = arguments.path.read_text(encoding="utf-8") if arguments.path.is_file() else ""
        if current != text:
            print(f"{arguments.path} is stale (its content vs the registry's rules) — hint: run {REGENERATE_COMMAND}",
                  file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
