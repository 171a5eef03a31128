"""The program model: module names, summaries of broken code, name resolution, the summary cache."""

from __future__ import annotations

from pathlib import Path

from foxaudit.program.model import Program, module_name_for
from foxaudit.program.project import Project
from foxaudit.program.pyscan import scan_python
from foxaudit.program.settings import ProgramSettings
from foxaudit.sources.base import SourceFile


def _project(root: Path, files: dict[str, str]) -> Project:
    sources = [SourceFile.from_text(path, text) for path, text in sorted(files.items())]
    return Project(root=root, files=sources)


def test_module_names_follow_source_roots() -> None:
    assert module_name_for("pkg/sub/__init__.py", (".",)) == ("pkg.sub", True)
    assert module_name_for("src/pkg/mod.py", ("src", ".")) == ("pkg.mod", False)
    assert module_name_for("scripts/my-tool.py", (".",)) is None  # not importable
    assert module_name_for("pkg/mod.pyi", (".",)) is None


def test_broken_python_still_yields_what_parsed() -> None:
    source = SourceFile.from_text("pkg/broken.py", "import os\nfrom . import ok\ndef f(:\n    x.item()\nclass C:\n    def g(self): return 1\n")
    summary = scan_python(source, "pkg.broken", False)
    assert [ref.module for ref in summary.imports] == ["os", "pkg"]
    assert any(call.method == "item" for call in summary.calls)
    assert "C.g" in {function.qualname for function in summary.functions}


def test_relative_import_above_the_top_is_unresolved() -> None:
    summary = scan_python(SourceFile.from_text("pkg/m.py", "from ... import x\n"), "pkg.m", False)
    assert summary.imports[0].module == ""


def test_resolution_through_reexports_aliases_and_star(tmp_path: Path) -> None:
    project = _project(tmp_path, {
        "pkg/__init__.py": "from .impl import work as public_work\n",
        "pkg/impl.py": "def work():\n    return 1\n\nclass Engine:\n    def run(self):\n        return work()\n",
        "pkg/star.py": "from pkg.impl import *\n\ndef go():\n    return work()\n",
        "pkg/user.py": (
            "import pkg as p\nfrom pkg.impl import Engine as E\n\n"
            "def main(engine: E):\n    p.public_work()\n    engine.run()\n    local = E()\n    local.run()\n"
        ),
    })  # fmt: skip
    program = Program(project, ProgramSettings(), use_cache=False)
    user = program.modules["pkg.user"]
    targets = [program.resolve_call(user, call).targets for call in user.summary.calls]
    assert ("pkg.impl:work",) in targets  # p.public_work → re-export in pkg/__init__.py
    assert targets.count(("pkg.impl:Engine.run",)) == 2  # annotated parameter and local instance
    star = program.modules["pkg.star"]
    assert program.resolve_call(star, star.summary.calls[0]).targets == ("pkg.impl:work",)


def test_summary_cache_hits_and_survives_corruption(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("FOXAUDIT_CACHE_DIR", raising=False)
    files = {"pkg/__init__.py": "", "pkg/a.py": "def f(x):\n    return x.item()\n"}
    first = Program(_project(tmp_path, files), ProgramSettings())
    cache = tmp_path / ".foxaudit_cache" / "program"
    assert len(list(cache.iterdir())) == 2 and first.cache.dirty  # one summary per file
    second = Program(_project(tmp_path, files), ProgramSettings())
    assert not second.cache.dirty  # every summary came from the cache
    assert second.modules["pkg.a"].summary.calls == first.modules["pkg.a"].summary.calls
    for entry in cache.iterdir():
        entry.write_bytes(b"not a pickle")
    third = Program(_project(tmp_path, files), ProgramSettings())
    assert third.modules["pkg.a"].summary.calls == first.modules["pkg.a"].summary.calls


def test_cuda_kernels_survive_error_nodes_and_constants_evaluate() -> None:
    from foxaudit.program.cudascan import evaluate_c, scan_cuda

    source = SourceFile.from_text(
        "k.cu",
        "#define BLOCK (2 * 128)  // threads\n"
        "#define HALF BLOCK / 2\n"
        "struct __align__(16) Pair { float a, b; };\n"
        "constexpr int N = HALF + 1;\n"
        'extern "C" __global__ void __launch_bounds__(256) after_error(float* x) { x[0] = 0.0f; }\n'
        "template <int K> __global__ void templated(float* x) { x[K] = 1.0f; }\n"
        "__device__ float helper(float v) { return v; }\n",
    )
    summary = scan_cuda(source)
    assert sorted(k.name for k in summary.kernels) == ["after_error", "templated"]
    values = {c.name: c.value for c in summary.constants}
    assert values == {"BLOCK": 256, "HALF": 128, "N": 129}
    assert evaluate_c("0x10u << 2", {}) == 64
    assert evaluate_c("sizeof(float)", {}) is None  # not guessed
