"""--fix: edits applied per file, atomically, non-overlapping; the re-check is clean."""

from __future__ import annotations

from foxaudit.config import Settings
from foxaudit.diagnostics import Diagnostic, Edit
from foxaudit.engine.fix import apply_edits, plan_edits
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import check


def test_fix_rewrites_and_recheck_is_clean(project, tmp_path, magic_rule, run_cli):
    root = project(
        {
            "a.py": "MAGIC = 1\nx = [42, 42]  # é\ny = 42\n",
            "k.cu": "int a = 42;\n",
            "clean.py": "z = 1\n",
        },
        '[tool.foxaudit]\nselect = ["FX001", "FX099"]\n',
    )
    before_mode = (root / "a.py").stat().st_mode
    result = run_cli("check", "--fix")
    assert result.code == 0, result.out + result.err
    assert "Fixed 4 problems." in result.out and "All checks passed" in result.out
    assert (root / "a.py").read_text() == "MAGIC = 1\nx = [MAGIC, MAGIC]  # é\ny = MAGIC\n"
    assert (root / "k.cu").read_text() == "int a = MAGIC;\n"
    assert (root / "a.py").stat().st_mode == before_mode
    assert not list(root.glob(".foxaudit-*"))
    assert run_cli("check").code == 0


def test_check_without_fix_leaves_files_alone(project, magic_rule):
    root = project({"a.py": "x = 42\n"})
    result = check(resolve(Settings(root=root, select=("FX099",))), use_cache=False)
    assert result.diagnostics[0].edits
    assert (root / "a.py").read_text() == "x = 42\n"


def test_overlapping_edits_wait_for_the_next_round():
    first = Diagnostic("a.py", 1, 1, "FX099", "m", 1, 5, edits=(Edit(1, 1, 1, 5, "AAAA"),))
    overlapping = Diagnostic("a.py", 1, 3, "FX099", "m", 1, 7, edits=(Edit(1, 3, 1, 7, "BB"),))
    later = Diagnostic("a.py", 2, 1, "FX099", "m", 2, 2, edits=(Edit(2, 1, 2, 2, "C"),))
    edits, fixed = plan_edits([overlapping, later, first])
    assert fixed == 2 and edits == [Edit(1, 1, 1, 5, "AAAA"), Edit(2, 1, 2, 2, "C")]
    assert apply_edits("12345678\nx\n", edits) == "AAAA5678\nC\n"


def test_multiline_edit_and_unicode_columns():
    text = "é = f(\n  1)\nrest\n"
    assert apply_edits(text, [Edit(1, 5, 2, 5, "g()")]) == "é = g()\nrest\n"


def test_an_edit_shared_by_two_findings_is_applied_once_in_one_round():
    # Two FX801-style findings that both need the same import line inserted at one point.
    shared_import = Edit(1, 1, 1, 1, "from m import A\n")
    first = Diagnostic("a.py", 2, 5, "FX099", "m", 2, 6, edits=(Edit(2, 5, 2, 6, "A"), shared_import))
    second = Diagnostic("a.py", 3, 5, "FX099", "m", 3, 6, edits=(Edit(3, 5, 3, 6, "A"), shared_import))
    edits, fixed = plan_edits([first, second])
    assert fixed == 2
    assert edits.count(shared_import) == 1
    assert apply_edits("x\ny = 1\nz = 1\n", edits) == "from m import A\nx\ny = A\nz = A\n"
