"""SARIF 2.1.0 for GitHub code scanning.

Rules carry ``shortDescription`` (the summary), ``fullDescription`` (the "What it does"
section) and ``help`` (the whole documentation, as text and markdown). Results point at
repository-relative URIs under ``%SRCROOT%`` and carry ``partialFingerprints``
(foxaudit/report/fingerprints.py), so a finding keeps its identity when unrelated lines above it
move. ``%SRCROOT%`` is left for the consumer to bind (GitHub binds it to the checkout): the log
names no absolute path of the machine that produced it, so it can be published as it is.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import foxaudit
from foxaudit.diagnostics import Diagnostic
from foxaudit.report.fingerprints import fingerprints

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/foxhunt/foxhunt/blob/main/docs/foxaudit.md"


def doc_section(doc: str, title: str) -> str:
    """The body of one ``## title`` section of a rule docstring."""
    lines = doc.splitlines()
    body: list[str] = []
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("## "):
            if inside:
                break
            inside = stripped[3:].strip().rstrip(":?").lower() == title.lower().rstrip("?")
            continue
        if inside:
            body.append(line)
    return "\n".join(body).strip()


def rule_descriptor(code: str, rule: Any, status: str) -> dict[str, Any]:
    doc = inspect.cleandoc(rule.__doc__ or rule.summary)
    full = " ".join(doc_section(doc, "What it does").split()) or rule.summary
    return {
        "id": code,
        "name": "".join(part.capitalize() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {"text": doc, "markdown": f"# {code} {rule.name}\n\n{doc}"},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": [f"invariant-{rule.invariant}", status], "precision": "high"},
    }


def render_sarif(diagnostics: list[Diagnostic], root: Path) -> str:
    return json.dumps(sarif_log(diagnostics, root), indent=2, ensure_ascii=False) + "\n"


def sarif_log(diagnostics: list[Diagnostic], root: Path) -> dict[str, Any]:
    from foxaudit.rules.registry import REGISTRY

    live = [entry for entry in REGISTRY if entry.status != "removed"]
    rules = [rule_descriptor(entry.code, entry.rule, entry.status) for entry in live]
    rule_index = {entry.code: index for index, entry in enumerate(live)}
    results = []
    for diagnostic, fingerprint in fingerprints(diagnostics, root):
        message = diagnostic.message + (f" — hint: {diagnostic.hint}" if diagnostic.hint else "")
        result: dict[str, Any] = {
            "ruleId": diagnostic.code,
            "level": "error",
            "message": {"text": message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": diagnostic.path, "uriBaseId": "%SRCROOT%"},
                        "region": _region(diagnostic),
                    }
                }
            ],
            "partialFingerprints": {"primaryLocationLineHash": fingerprint},
        }
        if diagnostic.code in rule_index:
            result["ruleIndex"] = rule_index[diagnostic.code]
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "foxaudit",
                        "version": foxaudit.__version__,
                        "semanticVersion": foxaudit.__version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the root of the analysed repository"}}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _region(diagnostic: Diagnostic) -> dict[str, int]:
    """A non-empty region (a file-level finding at 1:1–1:1 becomes the first character)."""
    end_line, end_column = diagnostic.end_line, diagnostic.end_column
    if (end_line, end_column) <= (diagnostic.line, diagnostic.column):
        end_line, end_column = diagnostic.line, diagnostic.column + 1
    return {"startLine": diagnostic.line, "startColumn": diagnostic.column, "endLine": end_line, "endColumn": end_column}
