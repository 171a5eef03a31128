"""Planted violations in a copy of THIS repository are caught, one per kind (issue 4 quality bar).

Each test copies the repository's files (what git would commit) into a temporary directory, plants
one violation with a textual edit anchored on the current code, and runs the whole-program
analysis on the copy. An anchor that no longer exists fails loudly: re-anchor the plant.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from program_support import copy_repository, findings, load_project

from foxaudit.config import RUN_GENERATORS_VARIABLE
from foxaudit.program.analysis import analysis_for

pytestmark = pytest.mark.slow  # copies the repository and analyses it once per plant


@pytest.fixture(scope="module")
def summaries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One summary cache for every plant: summaries are keyed by content, so the copies share
    all but the planted file's (a warm start, same answers)."""
    return tmp_path_factory.mktemp("summaries")


@pytest.fixture
def repo_copy(tmp_path: Path, summaries: Path) -> Path:
    root = copy_repository(tmp_path / "repo")
    _CACHES[root] = summaries
    return root


_CACHES: dict[Path, Path] = {}


def _load(root: Path):
    return load_project(root, _CACHES.get(root))


def _codes_at(root: Path, code: str) -> list[tuple[str, int, str]]:
    analysis = analysis_for(_load(root))
    return [(d.path, d.line, d.message) for d in findings(analysis, code)]


def _edit(path: Path, pattern: str, replacement: str) -> int:
    """Apply one regex substitution; return the 1-based line where it starts."""
    text = path.read_text(encoding="utf-8")
    match = re.search(pattern, text, flags=re.MULTILINE)
    if match is None:
        pytest.fail(f"plant anchor {pattern!r} not found in {path.name}: re-anchor this plant on the current code")
    path.write_text(text[: match.start()] + match.expand(replacement) + text[match.end() :], encoding="utf-8")
    return text.count("\n", 0, match.start()) + 1


def test_baseline_has_none_of_the_planted_findings(repo_copy, monkeypatch) -> None:
    monkeypatch.setenv(RUN_GENERATORS_VARIABLE, "1")  # FX503: trainer.layout's own check agrees
    analysis = analysis_for(_load(repo_copy))
    for code in ("FX202", "FX203", "FX301", "FX101", "FX503"):
        assert findings(analysis, code) == [], code


def test_orphan_module(repo_copy) -> None:
    # The path is built from parts: a test that writes a file's path as one literal names that file
    # as test data (FX201), and this test is part of the copied tree.
    planted = "trainer/ops/planted_orphan" + ".py"
    (repo_copy / planted).write_text('"""Nothing imports this module."""\n\nSCALE = 2\n')
    assert [(p, line) for p, line, _ in _codes_at(repo_copy, "FX201") if "planted" in p] == [(planted, 1)]


def test_orphan_kernel(repo_copy) -> None:
    kernel_file = repo_copy / "cuda/env_step.cu"
    kernel_file.write_text(kernel_file.read_text() + '\nextern "C" __global__ void planted_orphan_kernel(float* x) { x[0] = 0.0f; }\n')
    found = _codes_at(repo_copy, "FX202")
    assert [(p, m.split("`")[1]) for p, _, m in found] == [("cuda/env_step.cu", "planted_orphan_kernel")]


def test_ghost_kernel(repo_copy) -> None:
    line = _edit(repo_copy / "trainer/ops/env_step.py", r"load_kernel\(OP, OP,", 'load_kernel(OP, "planted_ghost",')
    found = _codes_at(repo_copy, "FX203")
    assert [(p, n) for p, n, _ in found] == [("trainer/ops/env_step.py", line)]
    assert "planted_ghost" in found[0][2]


def test_item_in_the_training_step(repo_copy) -> None:
    step = repo_copy / "trainer/train/step.py"
    _edit(
        step,
        r'(    @hot_path\n    def learn\(self\)[^\n]*:\n(?:        """(?:[^"]|"(?!""))*"""\n)?)',
        r"\1        planted = self.state.counter.item()\n",
    )
    found = _codes_at(repo_copy, "FX301")
    planted_line = next(
        number for number, text in enumerate(step.read_text().splitlines(), start=1) if "planted = self.state" in text
    )
    planted = [(p, n, m) for p, n, m in found if p == "trainer/train/step.py" and n == planted_line]
    assert planted, found
    assert ".item()" in planted[0][2] and "trainer.train.step:TrainStep.learn" in planted[0][2]


def test_host_write_to_a_gpu_slot(repo_copy) -> None:
    module = repo_copy / "trainer/ops/adaptive_schedule.py"
    module.write_text(module.read_text() + "\n\ndef planted_host_write(isv):\n    isv[ISV_TAU] = 0.5\n")
    found = _codes_at(repo_copy, "FX101")
    assert [(p, "ISV_TAU" in m) for p, _, m in found] == [("trainer/ops/adaptive_schedule.py", True)]


@pytest.mark.parametrize("run_generators", [True, False], ids=["generator-run", "static"])
def test_stale_generated_header(repo_copy, monkeypatch, run_generators) -> None:
    if run_generators:
        monkeypatch.setenv(RUN_GENERATORS_VARIABLE, "1")
    else:
        monkeypatch.delenv(RUN_GENERATORS_VARIABLE, raising=False)
    header = repo_copy / "cuda/generated/layout.cuh"
    _edit(header, r"constexpr int ISV_TAU = \d+;", "constexpr int ISV_TAU = 99;")
    stale = _codes_at(repo_copy, "FX503")
    assert [p for p, _, _ in stale] == ["cuda/generated/layout.cuh"]
    assert "trainer.layout --check" in stale[0][2]
    assert ("says:" in stale[0][2]) == run_generators and ("ISV_TAU = 99 vs" in stale[0][2]) != run_generators
    assert any("ISV_TAU" in m for _, _, m in _codes_at(repo_copy, "FX502"))


def test_hand_written_redefinition_of_a_generated_constant(repo_copy) -> None:
    kernel_file = repo_copy / "cuda/env_step.cu"
    kernel_file.write_text("#define PS_STRIDE 17\n" + kernel_file.read_text())
    found = _codes_at(repo_copy, "FX504")
    assert [(p, n) for p, n, _ in found] == [("cuda/env_step.cu", 1)]


def test_unregistered_device_buffer(repo_copy) -> None:
    line = _edit(
        repo_copy / "trainer/train/step.py",
        r"^(        self\.counter = torch\.zeros\([^\n]*\n)",
        r"\1        self.planted_buffer = torch.zeros(4, device=device)\n",
    )
    found = _codes_at(repo_copy, "FX206")
    assert ("trainer/train/step.py", line + 1) in [(p, n) for p, n, _ in found]


def test_regenerated_audit_docs_clear_a_cached_stale_finding(repo_copy) -> None:
    # The whole-project cache is keyed by the sources AND by the docs FX701 reads: editing a doc
    # must re-run the check, and regenerating it must clear the finding on the next warm run.
    import subprocess
    import sys

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "foxaudit", "check", "--select", "FX701"],
            cwd=repo_copy, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    subprocess.run([sys.executable, "-m", "foxaudit", "audit", "--write"], cwd=repo_copy, check=True, timeout=120)
    assert check().returncode == 0
    doc = repo_copy / "docs" / "audits" / "wire-up.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "hand edit\n", encoding="utf-8")
    stale = check()
    assert stale.returncode == 1 and "docs/audits/wire-up.md" in stale.stdout
    subprocess.run([sys.executable, "-m", "foxaudit", "audit", "--write"], cwd=repo_copy, check=True, timeout=120)
    assert check().returncode == 0
