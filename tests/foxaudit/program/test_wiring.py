"""Invariant 2 on the `wiring` fixture: import graph, kernel linkage, state coverage."""

from __future__ import annotations

import pytest
from program_support import findings, line_of

from foxaudit.program.wiring import GHOST, ORPHAN, OUT_OF_SCOPE, PARTIAL, WIRED


@pytest.fixture
def root(materialize):
    return materialize("wiring")


@pytest.fixture
def wiring(root, analyze):
    return analyze(root)


def _module_status(analysis) -> dict[str, str]:
    return {row.name: row.status for row in analysis.imports.rows}


def test_entry_points_relative_aliased_dynamic_imports_and_cycles_are_wired(wiring) -> None:
    status = _module_status(wiring)
    assert wiring.imports.entries["app.cli"].startswith("console script")
    for name in ("app", "app.cli", "app.engine", "app.kernels", "app.state", "app.cycle_a", "app.cycle_b",
                 "app.plugins", "app.plugins.dyn"):  # fmt: skip
        assert status[name] == WIRED, name


def test_orphans_include_type_checking_only_imports_and_unentered_cycles(wiring) -> None:
    status = _module_status(wiring)
    assert status["app.orphan"] == ORPHAN
    assert status["app.typing_only"] == ORPHAN  # `if TYPE_CHECKING:` never runs
    assert status["app.island_x"] == ORPHAN and status["app.island_y"] == ORPHAN
    assert status["app.legacy.old"] == OUT_OF_SCOPE
    reported = {d.path for d in findings(wiring, "FX201")}
    assert reported == {"app/orphan.py", "app/typing_only.py", "app/island_x.py", "app/island_y.py"}
    typing_row = next(row for row in wiring.imports.rows if row.name == "app.typing_only")
    assert "TYPE_CHECKING" in typing_row.via


def test_kernel_classification(wiring) -> None:
    rows = {row.name: row for row in wiring.kernels.rows}
    assert rows["step_kernel"].status == WIRED  # derived loader `load` + launcher `launch`
    assert rows["tmpl_kernel"].status == WIRED  # name_expressions / template arguments stripped
    assert rows["inline_kernel"].status == WIRED  # defined in a Python string, RawKernel
    assert rows["orphan_kernel"].status == ORPHAN
    assert rows["partial_kernel"].status == PARTIAL
    assert rows["missing_kernel"].status == GHOST
    assert rows["legacy_kernel"].status == OUT_OF_SCOPE
    assert wiring.kernels.loaders["app.kernels:load"] == "name"
    assert wiring.kernels.launchers["app.kernels:launch"] == "kernel"


def test_kernel_findings_name_the_site(root, wiring) -> None:
    orphan = ("cuda/kernels.cu", line_of(root, "cuda/kernels.cu", "void orphan_kernel"))
    assert [(d.path, d.line) for d in findings(wiring, "FX202")] == [orphan]
    ghost = findings(wiring, "FX203")
    assert [(d.path, d.line) for d in ghost] == [("app/kernels.py", line_of(root, "app/kernels.py", '"missing_kernel"'))]
    assert "missing_kernel" in ghost[0].message
    partial = findings(wiring, "FX204")
    assert [(d.path, d.line) for d in partial] == [("app/kernels.py", line_of(root, "app/kernels.py", '"partial_kernel"'))]


def test_f_string_kernel_name_is_unresolved_not_guessed(root, wiring) -> None:
    unresolved = findings(wiring, "FX205")
    assert [(d.path, d.line) for d in unresolved] == [("app/kernels.py", line_of(root, "app/kernels.py", 'f"{op}_kernel"'))]
    assert "f-string" in unresolved[0].message
    assert not any(row.name.endswith("_kernel") and row.name.startswith("{") for row in wiring.kernels.rows)


def test_state_coverage_uses_exposed_names_and_forwarding_helpers(root, wiring) -> None:
    state = wiring.state
    assert {b.name for b in state.buffers} == {"buf", "unregistered"}  # the host tensor is not a buffer
    assert {e.name for e in state.entries} == {"st.buf", "st.other"}  # `entry(...)` forwards its name
    buf = next(b for b in state.buffers if b.name == "buf")
    assert buf.state_names == ("st.buf",)
    missing = findings(wiring, "FX206")
    assert [(d.path, d.line) for d in missing] == [("app/state.py", line_of(root, "app/state.py", "self.unregistered ="))]
    assert "unregistered" in missing[0].message


def test_configured_loader_that_does_not_exist_is_reported(materialize, analyze) -> None:
    root = materialize("wiring")
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'kernel-loaders = { "app.kernels:nope" = "name" }\n')
    messages = [d.message for d in findings(analyze(root), "FX207")]
    assert any("app.kernels:nope" in message for message in messages)


def test_public_packages_of_a_library_are_entry_points(root, analyze) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'public-packages = ["app"]\n')
    status = _module_status(analyze(root))
    assert status["app.orphan"] == WIRED and status["app.typing_only"] == WIRED
    assert status["app.legacy.old"] == OUT_OF_SCOPE  # out-of-scope still wins


def test_configured_globs_that_match_nothing_are_reported(root, analyze) -> None:
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text().replace('state-classes = ["app.state:*"]', 'state-classes = ["app.stat:*"]')
    pyproject.write_text(text + 'pinned-functions = { "app.bus:Bus.read" = "pinned" }\n')
    messages = sorted(d.message for d in findings(analyze(root), "FX207"))
    assert messages == [
        "`pinned-functions` pattern matches nothing ('app.bus:Bus.read' vs a 'module:Qual.name' of the project)",
        "`state-classes` pattern matches nothing ('app.stat:*' vs a 'module:Qual.name' of the project)",
    ]


def test_kernel_launched_only_by_tests_is_partial_not_reported(root, analyze) -> None:
    (root / "cuda/kernels.cu").write_text((root / "cuda/kernels.cu").read_text().replace("orphan_kernel", "tested_kernel"))
    (root / "tests").mkdir()
    (root / "tests/test_kernel.py").write_text(
        "from app.kernels import launch, load\n\n\ndef test_it(x):\n    launch(load(\"tested_kernel\"), 1, (x,))\n"
    )
    analysis = analyze(root)
    row = next(row for row in analysis.kernels.rows if row.name == "tested_kernel")
    assert row.status == PARTIAL and "tests only" in row.reason
    assert all("tested_kernel" not in d.message for code in ("FX202", "FX204") for d in findings(analysis, code))
