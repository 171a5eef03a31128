"""Invariants 1 and 5 on the `layout` fixture: slots read statically, ISV writes, constants, header."""

from __future__ import annotations

import pytest
from program_support import findings, line_of

from foxaudit.config import RUN_GENERATORS_VARIABLE


@pytest.fixture
def root(materialize):
    return materialize("layout")


@pytest.fixture
def run_generators(monkeypatch):
    """The user's opt-in to run the analysed repository's `generated-headers` commands."""
    monkeypatch.setenv(RUN_GENERATORS_VARIABLE, "1")


@pytest.fixture
def no_generators(monkeypatch):
    monkeypatch.delenv(RUN_GENERATORS_VARIABLE, raising=False)


@pytest.fixture
def layout(root, analyze):
    return analyze(root)


def test_layout_is_read_without_importing_it(layout) -> None:
    isv = layout.layout.layout("ISV")
    assert [(s.name, s.offset, s.width, s.writer) for s in isv.slots] == [
        ("TAU", 0, 1, "GPU_COMPUTED"),  # writer through a tuple-unpacking alias
        ("GAMMA", 1, 2, "GPU_COMPUTED"),
        ("EPOCH", 3, 1, "CPU_INPUT"),
        ("FEE", 4, 1, "STATIC_CONFIG"),
        ("FP_LO", 5, 1, "FINGERPRINT"),
    ]
    ps = layout.layout.layout("PS")
    assert [s.constant for s in ps.slots] == ["PS_CASH", "PS_POSITION", "PS_VALUE"]  # name + concatenation
    assert layout.layout.constants()["ISV_GAMMA_WIDTH"][0] == 2
    assert layout.layout.problems == []


def test_host_writes_to_gpu_slots(root, layout) -> None:
    host = "lay/host.py"
    reported = [(d.path, d.line) for d in findings(layout, "FX101")]
    assert reported == [
        (host, line_of(root, host, "isv[ISV_TAU] = tau")),
        (host, line_of(root, host, ".fill_(0.9)")),
        (host, line_of(root, host, 'write("TAU"')),
        (host, line_of(root, host, "state.isv.tensor[ISV_TAU]")),
    ]
    allowed = {(w.site.path, w.site.span.line): w.reason for w in layout.isv.writes if w.status == "allowed"}
    assert allowed[(host, line_of(root, host, "isv[ISV_EPOCH]"))] == "CPU_INPUT"
    assert allowed[(host, line_of(root, host, 'write("FEE"'))] == "STATIC_CONFIG"
    reset = [w for w in layout.isv.writes if w.site.path == "lay/reset.py"]
    assert reset and reset[0].reason == "bootstrap in reset dispatch"


def test_unnamed_isv_write_is_reported_and_the_bus_is_exempt(root, layout) -> None:
    reported = [(d.path, d.line) for d in findings(layout, "FX102")]
    assert reported == [("lay/host.py", line_of(root, "lay/host.py", "isv[index] = 0.0"))]


def test_isv_doc_knows_kernel_writers_and_readers(layout) -> None:
    writers = layout.isv.kernel_writers
    assert [site.scope for site in writers["ISV_TAU"]] == ["tau_update"]
    readers = {site.path for site in layout.isv.readers["ISV_EPOCH"]}
    assert "cuda/good.cu" in readers


def test_constant_mismatch_and_redefinition(root, layout) -> None:
    mismatches = {(d.line, d.message.split(" ")[1]) for d in findings(layout, "FX502")}
    hand = "cuda/hand.cu"
    assert (line_of(root, hand, "#define ISV_TAU"), "ISV_TAU") in mismatches  # 3 vs 0 from the layout
    assert (line_of(root, hand, "#define BLOCK 128"), "BLOCK") in mismatches  # vs lay/consts.py
    assert not any(name == "BLOCK_HALF" for _, name in mismatches)  # 256 // 2 == 128 agrees
    redefined = [(d.path, d.line) for d in findings(layout, "FX504")]
    assert redefined == [(hand, line_of(root, hand, "#define ISV_TAU"))]


def test_generated_header_current_then_stale(root, analyze, run_generators) -> None:
    assert findings(analyze(root), "FX503") == []
    header = root / "cuda/gen/layout.cuh"
    header.write_text(header.read_text().replace("ISV_EPOCH = 3", "ISV_EPOCH = 4"))
    stale = findings(analyze(root), "FX503")
    assert len(stale) == 1 and "cuda/gen/layout.cuh" in stale[0].message
    assert "`python -m lay.layout --check --header {path}` says: " in stale[0].message


def test_without_the_opt_in_the_header_is_checked_statically(root, analyze, no_generators) -> None:
    assert findings(analyze(root), "FX503") == []
    header = root / "cuda/gen/layout.cuh"
    header.write_text(header.read_text().replace("ISV_EPOCH = 3", "ISV_EPOCH = 4"))
    stale = findings(analyze(root), "FX503")
    assert [d.message for d in stale] == [
        "generated header cuda/gen/layout.cuh is stale (ISV_EPOCH = 4 vs 3 in lay/layout.py;"
        " `python -m lay.layout --check --header {path}` not run vs current)"
    ]
    # A slot added in Python: the header lacks its offset, and the stride moved.
    header.write_text(header.read_text().replace("ISV_EPOCH = 4", "ISV_EPOCH = 3"))
    module = root / "lay/layout.py"
    module.write_text(module.read_text().replace('Slot("FP_LO", writer=Writer.FINGERPRINT),',
                                                 'Slot("FP_LO", writer=Writer.FINGERPRINT),\n        Slot("NEW"),'))
    stale = findings(analyze(root), "FX503")
    assert len(stale) == 1 and "(lacks ISV_NEW, ISV_STRIDE = 6 vs 7 in lay/layout.py;" in stale[0].message


def test_a_planted_generator_command_runs_only_with_the_opt_in(tmp_path, analyze, monkeypatch) -> None:
    """`foxaudit check` on a fork's branch must not execute what its pyproject.toml says."""
    root = tmp_path / "fork"
    (root / "gen").mkdir(parents=True)
    (root / "gen/h.cuh").write_text("// generated — do not edit\nconstexpr int N = 1;\n")
    (root / "pyproject.toml").write_text(
        '[tool.foxaudit.program]\ngenerated-headers = { "gen/h.cuh" = "touch PWNED; true {path}" }\n')
    before = sorted(path.name for path in root.rglob("*"))
    monkeypatch.delenv(RUN_GENERATORS_VARIABLE, raising=False)
    assert findings(analyze(root), "FX503") == []  # mirrors no layout: nothing to check statically
    assert sorted(path.name for path in root.rglob("*")) == before
    monkeypatch.setenv(RUN_GENERATORS_VARIABLE, "1")  # the user trusts it: now it runs
    assert findings(analyze(root), "FX503") == []  # `true` exits 0
    assert (root / "PWNED;").exists()


def test_unreadable_width_is_reported(root, analyze) -> None:
    module = root / "lay/layout.py"
    module.write_text(module.read_text().replace('Slot("GAMMA", width=2,', 'Slot("GAMMA", width=compute(),'))
    problems = findings(analyze(root), "FX505")
    assert len(problems) == 1 and "width" in problems[0].message


def test_generator_that_cannot_run_is_reported_stale_with_the_reason(root, analyze, run_generators) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(
        "python -m lay.layout --check --header {path}", "no-such-generator-binary --check"))
    stale = findings(analyze(root), "FX503")
    assert len(stale) == 1 and "could not run" in stale[0].message and "no-such-generator-binary" in stale[0].message


def test_missing_layout_module_is_a_configuration_finding(root, analyze) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('layout-module = "lay/layout.py"', 'layout-module = "lay/layouts.py"'))
    messages = [d.message for d in findings(analyze(root), "FX207")]
    assert messages == ["`layout-module` names a missing file ('lay/layouts.py' vs an existing .py)"]


def test_generator_past_its_timeout_is_reported(root, analyze, run_generators) -> None:
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text().replace(
        "python -m lay.layout --check --header {path}", "python -c 'import time; time.sleep(5)'")
    pyproject.write_text(text + "generator-timeout = 0.3\n")
    stale = findings(analyze(root), "FX503")
    assert len(stale) == 1 and "ran past 0.3 s" in stale[0].message


def test_gpu_slot_that_no_kernel_writes(root, layout) -> None:
    dead = findings(layout, "FX103")  # GAMMA is GPU-computed; only TAU has a kernel writer
    assert [d.message.split(" ")[3] for d in dead] == ["ISV_GAMMA"]
    assert dead[0].path == "lay/layout.py" and dead[0].line == line_of(root, "lay/layout.py", 'Slot("GAMMA"')


def test_every_python_copy_of_a_constant_is_compared(tmp_path, analyze) -> None:
    """Two mirrors of one CUDA constant: only the first used to be compared, so changing the
    second module's copy passed (ADAPTIVE_BLOCK in trainer/ops/adaptive_kelly_cap.py)."""
    files = {
        "pyproject.toml": '[tool.foxaudit.program]\nentry-points = ["ops.*"]\nconstant-modules = ["ops/*.py"]\n',
        "ops/__init__.py": "",
        "ops/a_first.py": "BLOCK = 256  # mirrors cuda/reduce.cuh\n",
        "ops/b_second.py": "BLOCK = 128  # mirrors cuda/reduce.cuh (edited, now wrong)\nHALF = BLOCK // 2\n",
        "cuda/reduce.cuh": "#define BLOCK 256\n#define HALF 128\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = findings(analyze(tmp_path), "FX502")
    assert [(d.path, d.line) for d in found] == [("cuda/reduce.cuh", 1), ("cuda/reduce.cuh", 2)]
    assert "(256 vs 128 at ops/b_second.py:1)" in found[0].message
    assert "(128 vs 64 at ops/b_second.py:2)" in found[1].message  # HALF from b_second's own BLOCK
