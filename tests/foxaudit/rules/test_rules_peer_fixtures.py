"""What the peers document, FX901/FX902 find: ruff's flake8-fixme (FIX001-FIX004) and
flake8-todos (TD001-TD007), pylint's fixme (W0511), flake8-bugbear's B027 (empty method in an
abstract base class). Each case is re-typed from the kind of line the peer's docs and fixtures
show (not copied); every line a peer reports must be reported by foxaudit (100 % recall)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from rules_harness import check_text

from foxaudit.rules.deferred.deferred_work_marker import DeferredWorkMarker
from foxaudit.rules.deferred.stub_body import StubBody

# ruff flake8-fixme: the tag opens the comment (or a later `#` section), any case.
RUFF_FIXME = [
    "# TODO: rename the loader",            # FIX002
    "# todo lower case",                    # FIX002
    "# FIXME: off by one",                  # FIX001
    "# fixme",                              # FIX001
    "# XXX: brittle",                       # FIX003
    "# HACK: bypass the cache",             # FIX004
    "x = 1  # TODO trailing",               # FIX002
    "# noqa: E501 # TODO after another tool's comment",
]
# ruff flake8-todos: every TD rule fires on a line that has a `TODO`-like tag.
RUFF_TODOS = [
    "# TODO(evanrittenhouse): this has an author",   # TD003 (no link)
    "# TODO: this has no author",                    # TD002
    "# TODO this has no colon",                      # TD004
    "# TODO:",                                       # TD005 (no description)
    "# ToDo: wrong capitalisation",                  # TD006
    "# TODO:no space after the colon",               # TD007
    "# FIXME: an invalid tag for flake8-todos",      # TD001
    "# XXX: also an invalid tag",                    # TD001
    "#TODO: no space after the hash",                # TD002/TD003
]
# pylint fixme (W0511): notes `FIXME`, `XXX`, `TODO` after any `#`, any case.
PYLINT_FIXME = [
    "# FIXME: beep",
    "#TODO: this is broken",
    "# XXX:bork",
    "#FIXME",
    "x = compute()  # TODO: in a trailing comment",
    "# todo lower case note",
]


@pytest.mark.parametrize("line", RUFF_FIXME + RUFF_TODOS + PYLINT_FIXME)
def test_fx901_finds_every_marker_the_peers_report(line: str) -> None:
    found = check_text(line + "\n", "peer.py", DeferredWorkMarker)
    assert len(found) == 1, line


@pytest.mark.parametrize("line", ["# the hacker news thread", "x = 'TODO'", "# see the todos table"])
def test_fx901_leaves_what_the_peers_leave(line: str) -> None:
    assert check_text(line + "\n", "peer.py", DeferredWorkMarker) == []


B027_ABSTRACT_CLASS = '''\
from abc import ABC, abstractmethod
from typing import overload


class Base(ABC):
    def empty_ellipsis(self):  # B027
        ...

    def empty_pass(self):  # B027
        pass

    def docstring_then_ellipsis(self):  # B027
        """Describe the hook."""
        ...

    def several_placeholders(self):  # B027
        """Several placeholders in one body."""
        ...
        pass
        ...

    @notabstract
    def decorated_but_not_abstract(self):  # B027
        ...

    @abstractmethod
    def abstract(self):
        ...

    @overload
    def overloaded(self, x: int) -> int: ...

    def body(self):
        print("foo")
'''


def test_fx902_reports_every_empty_method_b027_reports() -> None:
    found = check_text(B027_ABSTRACT_CLASS, "base.py", StubBody)
    lines = B027_ABSTRACT_CLASS.splitlines()
    expected = [number for number, text in enumerate(lines, start=1) if "# B027" in text]
    assert [d.line for d in found] == expected
    (several,) = [d for d in found if "several_placeholders" in d.message]
    assert "`...` and `pass`" in several.message


RUFF = shutil.which("ruff")
PYLINT = shutil.which("pylint")


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the bench extra installs it)")
def test_the_re_typed_cases_are_what_ruff_reports(tmp_path: Path) -> None:
    # Keeps the cases honest: each marker line is one ruff's FIX/TD rules report, and the B027
    # lines are exactly the ones bugbear's rule (as ruff implements it) reports.
    for line in RUFF_FIXME + RUFF_TODOS:
        completed = subprocess.run([RUFF, "check", "--select", "FIX,TD", "--output-format", "json", "--no-cache",
                                    "--isolated", "--stdin-filename", "peer.py", "-"],
                                   input=line + "\n", capture_output=True, text=True, check=False)
        assert json.loads(completed.stdout), line
    base = tmp_path / "base.py"
    base.write_text(B027_ABSTRACT_CLASS, encoding="utf-8")
    completed = subprocess.run([RUFF, "check", "--select", "B027", "--output-format", "json", "--no-cache",
                                "--isolated", str(base)], capture_output=True, text=True, check=False)
    # ruff places a decorated method's finding on the decorator, foxaudit on the name: compare names.
    reported = sorted(item["message"].split("`")[1].split(".")[-1] for item in json.loads(completed.stdout))
    assert reported == sorted(d.message.split("`")[1] for d in check_text(B027_ABSTRACT_CLASS, "base.py", StubBody))


@pytest.mark.skipif(PYLINT is None, reason="pylint is not installed (the bench extra installs it)")
def test_the_re_typed_cases_are_what_pylint_reports(tmp_path: Path) -> None:
    module = tmp_path / "notes.py"
    module.write_text("\n".join(PYLINT_FIXME) + "\n", encoding="utf-8")
    completed = subprocess.run([PYLINT, "--disable=all", "--enable=fixme", "--output-format=json", str(module)],
                               capture_output=True, text=True, check=False, cwd=tmp_path)
    assert sorted({item["line"] for item in json.loads(completed.stdout)}) == list(range(1, len(PYLINT_FIXME) + 1))
