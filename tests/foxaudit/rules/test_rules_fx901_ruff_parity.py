"""FX901 ⊇ ruff's FIX001–FIX004: every comment line ruff flags, FX901 flags too.

ruff (installed with the ``bench`` extra) is run once per corpus on stdin; the test skips when
it is not installed. The corpus is the marker fixture plus a grid of comment shapes (tag case,
position, punctuation) and a seeded batch of random comments built from the same pieces.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from rules_harness import check_text

from foxaudit.rules.deferred.deferred_work_marker import DeferredWorkMarker

RUFF = shutil.which("ruff")
FIXTURE = Path(__file__).parent / "fixtures" / "deferred_markers.py.txt"
TAGS = ("todo", "fixme", "xxx", "hack")
PREFIXES = ("#", "# ", "#  ", "## ", "#\t", "# foo # ", "# noqa: E501 # ", "#: ", "# -*- ", "# see ", "#!")
SUFFIXES = ("", ":", "(alice)", " -", "_list", "s", "ist", "-later", " fix it", "!", "1")


def _cases(tag: str) -> tuple[str, ...]:
    return (tag, tag.upper(), tag.capitalize(), tag[0] + tag[1:].upper())


def ruff_lines(text: str) -> set[int]:
    completed = subprocess.run(
        [RUFF, "check", "--select", "FIX", "--output-format", "json", "--no-cache", "--isolated",
         "--stdin-filename", "corpus.py", "-"],
        input=text, capture_output=True, text=True, check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    return {item["location"]["row"] for item in json.loads(completed.stdout)}


def fx901_lines(text: str) -> set[int]:
    return {d.line for d in check_text(text, "corpus.py", DeferredWorkMarker)}


def _grid() -> str:
    lines = []
    for prefix, tag, suffix in itertools.product(PREFIXES, TAGS, SUFFIXES):
        for spelled in _cases(tag):
            lines.append(f"{prefix}{spelled}{suffix}")
    return "\n".join(lines) + "\n"


def _random_comments(count: int, seed: int) -> str:
    pieces = [*TAGS, *(tag.upper() for tag in TAGS), "Todo", "Hack", "note", "see", "#", "-", ":", "(x)",
              "_", "1", "TBD", "a", "the", "todoist", "XXXL", " ", "  ", "`TODO`", "'", '"']
    generator = random.Random(seed)
    lines = []
    for _ in range(count):
        body = "".join(generator.choice(pieces) + generator.choice(("", " ")) for _ in range(generator.randint(1, 6)))
        lines.append("#" + body.rstrip())
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed (pip install -e .[bench])")
@pytest.mark.parametrize(
    "corpus",
    [
        pytest.param(lambda: FIXTURE.read_text(encoding="utf-8"), id="fixture"),
        pytest.param(_grid, id="grid"),
        pytest.param(lambda: _random_comments(2000, seed=901), id="random"),
    ],
)
def test_every_line_ruff_flags_is_flagged_by_fx901(corpus) -> None:
    text = corpus()
    ruff = ruff_lines(text)
    assert ruff, "the corpus should contain lines ruff flags"
    missed = sorted(ruff - fx901_lines(text))
    lines = text.split("\n")
    assert not missed, "FX901 misses lines ruff's FIX rules flag:\n" + "\n".join(
        f"  {number}: {lines[number - 1]}" for number in missed[:20])


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
def test_fx901_flags_beyond_ruff_only_by_design() -> None:
    """Lines FX901 adds over ruff: upper-case tags later in the comment, and the `TBD` tag."""
    text = _grid()
    extra = fx901_lines(text) - ruff_lines(text)
    lines = text.split("\n")
    for number in extra:
        line = lines[number - 1]
        assert any(tag.upper() in line for tag in (*TAGS, "tbd")), line
