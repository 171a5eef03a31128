"""Suppressions: with a reason, without (FX002), unused (FX003), line above, CUDA form, strings."""

from __future__ import annotations

from foxaudit.engine import check_source
from foxaudit.sources.base import SourceFile
from foxaudit.sources.suppressions import find_suppressions

SELECT = ["FX001", "FX002", "FX003", "FX099"]


def _codes(path: str, text: str) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in check_source(path, text, select=SELECT)]


def test_suppression_with_reason_silences_the_line(magic_rule):
    assert _codes("a.py", "x = 42  # foxaudit: ignore[FX099] -- the answer, on purpose\n") == []


def test_suppression_on_the_line_above(magic_rule):
    text = "# foxaudit: ignore[FX099] -- the answer\nx = 42\ny = 42\n"
    assert _codes("a.py", text) == [(3, "FX099")]


def test_trailing_suppression_does_not_cover_the_next_line(magic_rule):
    text = "a = 1  # foxaudit: ignore[FX099] -- misplaced\nx = 42\n"
    assert _codes("a.py", text) == [(1, "FX003"), (2, "FX099")]


def test_missing_reason_is_fx002_but_still_suppresses(magic_rule):
    assert _codes("a.py", "x = 42  # foxaudit: ignore[FX099]\n") == [(1, "FX002")]


def test_blanket_and_malformed_suppressions_are_fx002(magic_rule):
    assert _codes("a.py", "x = 42  # foxaudit: ignore -- everything\n") == [(1, "FX099"), (1, "FX002")]
    assert _codes("a.py", "x = 1  # foxaudit: ignore[E501] -- not ours\n") == [(1, "FX002")]


def test_unused_and_unknown_codes_are_fx003(magic_rule):
    found = check_source("a.py", "x = 1  # foxaudit: ignore[FX099, FX777] -- stale\n", select=SELECT)
    assert [(d.code, d.message) for d in found] == [
        ("FX003", "unused suppression: FX099 suppresses nothing"),
        ("FX003", "unused suppression: FX777 names an unknown rule code"),
    ]
    assert (found[0].line, found[0].column) == (1, 10)


def test_several_codes_partially_used(magic_rule):
    text = "x = 42  # foxaudit: ignore[FX099, FX001] -- the answer\n"
    assert _codes("a.py", text) == [(1, "FX003")]


def test_disabled_code_is_not_reported_unused(magic_rule):
    found = check_source("a.py", "x = 1  # foxaudit: ignore[FX099] -- x\n", select=["FX003"])
    assert found == []


def test_cuda_line_and_block_comments(magic_rule):
    text = (
        "// foxaudit: ignore[FX099] -- launch constant\n"
        "int a = 42;\n"
        "int b = 42; /* foxaudit: ignore[FX099] -- also fine */\n"
        "int d = 42;\n"
    )
    assert _codes("k.cu", text) == [(4, "FX099")]


def test_cuda_define_trailing_comment_is_read(magic_rule):
    # tree-sitter-cuda folds a trailing comment into the macro's preproc_arg: still a comment.
    text = '#define C 1 // foxaudit: ignore[FX099]\n#define S "// foxaudit: ignore[FX099]"\n'
    assert _codes("k.cu", text) == [(1, "FX002"), (1, "FX003")]


def test_strings_are_not_suppressions(magic_rule):
    text = 'x = 42; s = "# foxaudit: ignore[FX099] -- in a string"\n'
    assert _codes("a.py", text) == [(1, "FX099")]
    source = SourceFile.from_text("a.py", text)
    assert find_suppressions(source) == []


def test_fx002_and_fx003_cannot_be_suppressed(magic_rule):
    text = "x = 1  # foxaudit: ignore[FX002, FX003]\n"
    codes = _codes("a.py", text)
    assert (1, "FX002") in codes


def test_suppression_of_parse_error_on_its_line(magic_rule):
    assert _codes("a.py", "def f(:  # foxaudit: ignore[FX001] -- parser fixture\n    pass\n") == []
