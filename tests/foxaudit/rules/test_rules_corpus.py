"""Corpus tests: realistic files with inline expected-diagnostic markers.

A fixture ``tests/foxaudit/rules/fixtures/NAME.py.txt`` is checked as ``NAME.py`` (the
``.txt`` keeps this repository's own linters and ``foxaudit check`` off the deliberate
violations). A line that must be reported carries ``expect: FX901`` (repeat the code, or write
``FX401*4``, for several findings on one line); every finding must be expected and every
expectation found. The marker words cannot trigger FX901 themselves.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from rules_harness import apply_edits, check_source, check_text

from foxaudit.rules.deferred.deferred_work_marker import DeferredWorkMarker
from foxaudit.rules.deferred.stub_body import StubBody
from foxaudit.rules.determinism.atomic_in_kernel import AtomicInKernel
from foxaudit.rules.layout.banned_definition_name import BannedDefinitionName
from foxaudit.rules.named_dims.raw_index_into_named_buffer import (
    RawIndexIntoNamedBuffer,
)
from foxaudit.sources.base import SourceFile

FIXTURES = Path(__file__).parent / "fixtures"
RULES = [DeferredWorkMarker, StubBody, AtomicInKernel, BannedDefinitionName, RawIndexIntoNamedBuffer]
CORPUS = sorted(path for path in FIXTURES.glob("*.txt") if not path.name.startswith("layout."))
_MARKER = re.compile(r"expect:\s*((?:FX\d{3}(?:\*\d+)?\s*)+)")
_CODE = re.compile(r"(FX\d{3})(?:\*(\d+))?")


def expected_findings(text: str) -> Counter[tuple[int, str]]:
    expected: Counter[tuple[int, str]] = Counter()
    for number, line in enumerate(text.split("\n"), start=1):
        for marker in _MARKER.finditer(line):
            for code, count in _CODE.findall(marker.group(1)):
                expected[(number, code)] += int(count or 1)
    return expected


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root holding the fixture layout where FX801's defaults look for it."""
    (tmp_path / "trainer").mkdir()
    (tmp_path / "cuda" / "generated").mkdir(parents=True)
    shutil.copy(FIXTURES / "layout.py.txt", tmp_path / "trainer" / "layout.py")
    shutil.copy(FIXTURES / "layout.cuh.txt", tmp_path / "cuda" / "generated" / "layout.cuh")
    return tmp_path


def _check(path: Path, root: Path, text: str | None = None) -> list:
    source = SourceFile.from_text(path.name.removesuffix(".txt"), text if text is not None else path.read_text())
    return check_source(source, [(rule, {}) for rule in RULES], root)


@pytest.mark.parametrize("path", CORPUS, ids=lambda path: path.name.removesuffix(".txt"))
def test_corpus_findings_match_markers(path: Path, project: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = Counter((d.line, d.code) for d in _check(path, project))
    expected = expected_findings(text)
    lines = text.split("\n")
    missing = [f"  {line}: {code} ×{n}  {lines[line - 1].strip()}" for (line, code), n in (expected - found).items()]
    extra = [f"  {line}: {code} ×{n}  {lines[line - 1].strip()}" for (line, code), n in (found - expected).items()]
    assert not missing and not extra, f"{path.name}\nexpected, not found:\n" + "\n".join(missing) + \
        "\nfound, not expected:\n" + "\n".join(extra)


def test_marker_syntax_does_not_trigger_the_marker_rule() -> None:
    assert not check_text("x = 1  # expect: FX901 FX401*4\n", "m.py", DeferredWorkMarker)
    assert not check_text("int x = 1;  // expect: FX901\n", "m.cu", DeferredWorkMarker)


@pytest.mark.parametrize("name", ["named_dims.py.txt", "named_dims.cu.txt"])
def test_fx801_fix_round_trip_on_corpus(name: str, project: Path) -> None:
    path = FIXTURES / name
    text = path.read_text(encoding="utf-8")
    before = [d for d in _check(path, project) if d.code == "FX801"]
    fixable = [d for d in before if d.edits]
    assert len(fixable) >= 5, "the corpus should exercise the fix"
    fixed = apply_edits(text, before)
    after = [d for d in _check(path, project, fixed) if d.code == "FX801"]
    # What was fixable is gone; what was not (ambiguous, offsets, floats, negatives) remains.
    assert len(after) == len(before) - len(fixable)
    assert not any(d.edits for d in after)
    if name.endswith(".py.txt"):
        compile(fixed, name, "exec")
        assert "from trainer.layout import ISV_KELLY_CAP, ISV_TAU, PS_CASH, PS_PORTFOLIO_VALUE, PS_POSITION\n" in fixed
        assert "ps[:, PS_CASH]" in fixed and "isv[ISV_KELLY_CAP]" in fixed
        assert fixed.count("from trainer.layout import PS_STRIDE") == 1
    else:
        assert "ps[env * 38 + PS_CASH]" in fixed and "isv[ISV_EPSILON]" in fixed
        assert "#include" in fixed and "import" not in fixed
