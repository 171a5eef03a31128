"""FX801 beyond its examples: reading layout constants, building fixes, converging under --fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from rules_harness import apply_edits, check_text

from foxaudit.rules._support.constants import (
    evaluate,
    load_constants,
    python_module_for,
)
from foxaudit.rules.named_dims.raw_index_into_named_buffer import (
    RawIndexIntoNamedBuffer,
)

LAYOUT = {"constants-from": [], "constants": {"PS_CASH": 3, "PS_STRIDE": 38, "PS_VALUE": 14}}


def fix(text: str, options: dict | None = None, root: Path | str = ".") -> tuple[str, list]:
    found = check_text(text, "trainer/env/step.py", RawIndexIntoNamedBuffer, options or LAYOUT, root)
    return apply_edits(text, found), found


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x = ps[3]\n", "from trainer.layout import PS_CASH\nx = ps[PS_CASH]\n"),
        ('"""Doc."""\nx = ps[3]\n', '"""Doc."""\nfrom trainer.layout import PS_CASH\nx = ps[PS_CASH]\n'),
        ('"""Doc."""\nfrom __future__ import annotations\nimport os\n\nx = ps[3]\n',
         '"""Doc."""\nfrom __future__ import annotations\nimport os\nfrom trainer.layout import PS_CASH\n\nx = ps[PS_CASH]\n'),
        ("import os  # noqa: F401\nx = ps[3]\n", "import os  # noqa: F401\nfrom trainer.layout import PS_CASH\nx = ps[PS_CASH]\n"),
        ("from trainer.layout import *\nx = ps[3]\n", "from trainer.layout import *\nx = ps[PS_CASH]\n"),
        ("try:\n    from trainer.layout import PS_CASH\nexcept ImportError:\n    PS_CASH = 3\nx = ps[3]\n",
         "try:\n    from trainer.layout import PS_CASH\nexcept ImportError:\n    PS_CASH = 3\nx = ps[PS_CASH]\n"),
        ("from trainer import layout\nx = ps[i * 38 + 14]\n",
         "from trainer import layout\nfrom trainer.layout import PS_STRIDE, PS_VALUE\nx = ps[i * PS_STRIDE + PS_VALUE]\n"),
        ("x = ps[3]", "from trainer.layout import PS_CASH\nx = ps[PS_CASH]"),
        ("import os\nx = ps[3]  # é ü\ny = 'é'; z = ps[3]\n",
         "import os\nfrom trainer.layout import PS_CASH\nx = ps[PS_CASH]  # é ü\ny = 'é'; z = ps[PS_CASH]\n"),
    ],
)
def test_python_fix_places_the_import(before: str, after: str) -> None:
    fixed, found = fix(before)
    assert all(d.edits for d in found)
    assert fixed == after
    compile(fixed, "step.py", "exec")
    assert not check_text(fixed, "trainer/env/step.py", RawIndexIntoNamedBuffer, LAYOUT)


def test_every_diagnostic_carries_the_same_combined_import() -> None:
    _fixed, found = fix("import os\na = ps[3]\nb = ps[38]\n")
    imports = {edit for d in found for edit in d.edits if "import" in edit.replacement}
    assert len(imports) == 1 and "PS_CASH, PS_STRIDE" in next(iter(imports)).replacement
    # Applying any one diagnostic alone leaves valid, importing code.
    for diagnostic in found:
        partial = apply_edits("import os\na = ps[3]\nb = ps[38]\n", [diagnostic])
        compile(partial, "step.py", "exec")


def test_no_fix_without_a_unique_constant_or_on_unparsable_python() -> None:
    options = {"constants-from": [], "constants": {"PS_CASH": 3, "PS_OTHER": 3}}
    found = check_text("x = ps[3]\n", "a.py", RawIndexIntoNamedBuffer, options)
    assert len(found) == 1 and not found[0].edits and "`PS_CASH` or `PS_OTHER`" in found[0].message
    # tree-sitter recovers, libcst refuses: the finding stays, without edits.
    broken = check_text("x = ps[3]\ndef f(:\n", "a.py", RawIndexIntoNamedBuffer, LAYOUT)
    assert broken and not any(d.edits for d in broken)


def test_fix_converges_through_the_engine_planner() -> None:
    planner = pytest.importorskip("foxaudit.engine.fix")
    text = "import os\na = ps[3]\nb = ps[38] + ps[i * 38 + 14]\n"
    for _round in range(3):
        found = check_text(text, "a.py", RawIndexIntoNamedBuffer, LAYOUT)
        if not found:
            break
        edits, _count = planner.plan_edits(found)
        text = planner.apply_edits(text, edits)
    assert not check_text(text, "a.py", RawIndexIntoNamedBuffer, LAYOUT)
    compile(text, "a.py", "exec")


def test_constants_are_read_from_python_and_headers(tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "layout.py").write_text(
        "from typing import Final\nA_ZERO = 0\nA_ONE: Final[int] = A_ZERO + 1\nA_X, A_Y = range(2, 4)\n"
        "A_COMPUTED: int = TABLE['c']\nA_LOWER = lower\nhidden = 9\n", encoding="utf-8")
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "layout.h").write_text(
        "#define A_SHIFT (1u << 4) // sixteen\nstatic const int A_COMPUTED = 0x2A;\n"
        "enum { A_E0 = 7, A_E1, A_E2 = A_E1 * 2 };\nint A_NOT_CONST = 5;\n#define A_FLOAT 1.5f\n", encoding="utf-8")
    found = load_constants(tmp_path, ("src/pkg/layout.py", "include/layout.h", "missing.py"))
    python = {c.name: (c.value, c.module) for c in found if c.module}
    headers = {c.name: c.value for c in found if not c.module}
    assert python == {"A_ZERO": (0, "pkg.layout"), "A_ONE": (1, "pkg.layout"), "A_X": (2, "pkg.layout"),
                      "A_Y": (3, "pkg.layout"), "A_COMPUTED": (42, "pkg.layout")}
    assert headers == {"A_SHIFT": 16, "A_COMPUTED": 42, "A_E0": 7, "A_E1": 8, "A_E2": 16}


def test_constants_cache_sees_an_edited_file(tmp_path: Path) -> None:
    layout = tmp_path / "layout.py"
    layout.write_text("PS_CASH = 3\n", encoding="utf-8")
    assert [c.value for c in load_constants(tmp_path, ("layout.py",))] == [3]
    layout.write_text("PS_CASH = 4  # moved\n", encoding="utf-8")
    assert [c.value for c in load_constants(tmp_path, ("layout.py",))] == [4]


def test_message_names_the_constant_from_the_project_root(tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "layout.py").write_text("PS_CASH = 3\nISV_TAU = 0\n", encoding="utf-8")
    found = check_text("x = ps[:, 3] + isv[0]\n", "trainer/env/a.py", RawIndexIntoNamedBuffer, {}, tmp_path)
    assert ["PS_CASH" in found[0].message, "ISV_TAU" in found[1].message] == [True, True]
    assert not check_text("x = ps[:, 3]\n", "trainer/layout.py", RawIndexIntoNamedBuffer, {}, tmp_path)


@pytest.mark.parametrize(("expression", "value"), [("1 + 2 * 3", 7), ("(1 << 4) | 1", 17), ("-X", -5),
                                                    ("X // 2", 2), ("int(X)", 5), ("X + Y", None), ("1.5", None),
                                                    ("'a'", None), ("True", None), ("f(1)", None)])
def test_evaluate_small_constant_expressions(expression: str, value: int | None) -> None:
    assert evaluate(expression, {"X": 5}) == value


def test_python_module_names() -> None:
    assert python_module_for("trainer/layout.py") == "trainer.layout"
    assert python_module_for("src/pkg/layout.py") == "pkg.layout"
    assert python_module_for("pkg/layout/__init__.py") == "pkg.layout"


def test_slice_bounds_and_offsets_get_no_constant() -> None:
    found = check_text("a = ps[0:3]\nb = isv[ISV_TAU + 3]\nc = ps[:2]\n", "a.py", RawIndexIntoNamedBuffer, LAYOUT)
    assert len(found) == 4 and not any(d.edits for d in found)
    assert all("PS_CASH" not in d.message for d in found)
    assert "name the bounds of this range" in found[0].message
    assert "`ISV_TAU + 3` reaches a slot without a name" in found[2].message


def test_quiet_without_a_layout_and_active_once_the_project_has_one(tmp_path: Path) -> None:
    """The default `require-layout`: an unrelated project's `ps` list is not a buffer; a project
    whose layout module defines slot constants gets the findings (and the constant's name)."""
    text = "ps = [start(cmd) for cmd in commands]\nps[0].wait()\n"
    defaults = {"constants-from": ["trainer/layout.py"]}
    assert not check_text(text, "tools/run.py", RawIndexIntoNamedBuffer, defaults, tmp_path)
    layout = tmp_path / "trainer" / "layout.py"
    layout.parent.mkdir()
    layout.write_text("PS_POSITION = 0\n", encoding="utf-8")
    (found,) = check_text(text, "tools/run.py", RawIndexIntoNamedBuffer, defaults, tmp_path)
    assert "`PS_POSITION`" in found.message and "a multi-field buffer (FX801 `buffers`)" in found.message


def test_explicit_buffers_are_checked_without_constants_from(tmp_path: Path) -> None:
    """A project that configures `buffers` but no layout file used to get no FX801 at all."""
    found = check_text("x = state[3]\ny = ps[3]\n", "pkg/env.py", RawIndexIntoNamedBuffer, {"buffers": ["state"]}, tmp_path)
    assert [(d.line, d.message.split(" — ")[0]) for d in found] == [
        (1, "raw index `3` into `state`, a multi-field buffer (FX801 `buffers`)")
    ]
    # The default buffers in a project without slot constants stay dormant (a `ps` list of processes).
    assert check_text("y = ps[3]\n", "pkg/env.py", RawIndexIntoNamedBuffer, {}, tmp_path) == []
