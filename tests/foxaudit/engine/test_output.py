"""Output formats: text, json keys, SARIF structure for GitHub code scanning, github annotations."""

from __future__ import annotations

import json
from pathlib import Path

from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.report import render
from foxaudit.report.github import annotation

DIAGNOSTICS = [
    Diagnostic("pkg/a.py", 3, 5, "FX001", "syntax error: bad, really", 3, 6, hint="fix it"),
    Diagnostic("pkg/a.py", 7, 1, "FX003", "unused suppression: FX001 suppresses nothing", 7, 20),
    Diagnostic("src/k.cu", 1, 1, "FX002", "suppression gives no reason", 1, 10, edits=(Edit(1, 1, 1, 2, "x"),)),
]


def test_text_lines_and_summary(tmp_path: Path):
    text = render("text", DIAGNOSTICS, root=tmp_path, files=4)
    lines = text.splitlines()
    assert lines[0] == "pkg/a.py:3:5: FX001 syntax error: bad, really — hint: fix it"
    assert lines[2].startswith("src/k.cu:1:1: FX002 [*] ")
    assert lines[-1] == "Found 3 problems in 2 files (1 fixable with --fix) (4 checked)."
    assert render("text", [], root=tmp_path, files=2).strip() == "All checks passed (2 files checked)."


def test_statistics(tmp_path: Path):
    text = render("text", [*DIAGNOSTICS, DIAGNOSTICS[0]], root=tmp_path, files=4, statistics=True)
    assert text.splitlines()[0] == "2  FX001  parse-error"
    assert "1  FX002  suppression-without-reason  [*] 1 fixable" in text


def test_json_objects(tmp_path: Path):
    data = json.loads(render("json", DIAGNOSTICS, root=tmp_path))
    assert len(data) == 3
    for item in data:
        assert {"code", "path", "line", "column", "end_line", "end_column", "message", "hint", "fixable", "name"} <= set(item)
    assert data[0]["code"] == "FX001" and data[0]["name"] == "parse-error" and data[0]["end_column"] == 6
    assert data[2]["edits"] == [{"line": 1, "column": 1, "end_line": 1, "end_column": 2, "replacement": "x"}]


def test_sarif_structure(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/a.py").write_text("a\nb\nc\nd\ne\nf\ng\n")
    log = json.loads(render("sarif", DIAGNOSTICS, root=tmp_path))
    assert log["version"] == "2.1.0" and "sarif" in log["$schema"]
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "foxaudit" and driver["version"]
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert {"FX001", "FX002", "FX003"} <= set(rule_ids)
    for rule in driver["rules"]:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
    fx001 = driver["rules"][rule_ids.index("FX001")]
    assert "Python syntax error" in fx001["fullDescription"]["text"]
    # No absolute path of the checkout: the log is publishable, the consumer binds %SRCROOT%.
    assert "uri" not in run["originalUriBaseIds"]["%SRCROOT%"]
    assert str(tmp_path) not in json.dumps(log)
    assert len(run["results"]) == 3
    fingerprints = set()
    for result, diagnostic in zip(run["results"], DIAGNOSTICS):
        assert result["ruleId"] == diagnostic.code
        assert driver["rules"][result["ruleIndex"]]["id"] == diagnostic.code
        assert result["level"] == "error" and result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": diagnostic.path, "uriBaseId": "%SRCROOT%"}
        assert location["region"]["startLine"] == diagnostic.line
        assert location["region"]["startColumn"] == diagnostic.column
        fingerprint = result["partialFingerprints"]["primaryLocationLineHash"]
        fingerprints.add(fingerprint)
    assert len(fingerprints) == 3


def test_sarif_fingerprint_survives_lines_moving(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")
    before = json.loads(render("sarif", [Diagnostic("a.py", 1, 1, "FX001", "m", 1, 2)], root=tmp_path))
    (tmp_path / "a.py").write_text("\n\nx = 1\n")
    after = json.loads(render("sarif", [Diagnostic("a.py", 3, 1, "FX001", "m", 3, 2)], root=tmp_path))
    key = "primaryLocationLineHash"
    assert before["runs"][0]["results"][0]["partialFingerprints"][key] == after["runs"][0]["results"][0]["partialFingerprints"][key]


def test_github_annotations_escape_properties_and_data():
    line = annotation(Diagnostic("a,b:c.py", 2, 3, "FX001", "50% bad\nnext", 2, 9, hint="h"))
    assert line == "::error file=a%2Cb%3Ac.py,line=2,col=3,endLine=2,endColumn=9,title=FX001::FX001 50%25 bad%0Anext — hint: h"
    rendered = render("github", DIAGNOSTICS, root=Path("."))
    assert rendered.count("::error ") == 3
