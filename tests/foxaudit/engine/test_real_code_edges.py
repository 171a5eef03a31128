"""Shapes that real third-party trees have and toy inputs lack: byte-order marks, CRLF, tabs,
form feeds, astral characters, vendored CUDA headers the grammar cannot read, many files.

Every span is checked against the file text: the characters between ``column`` and
``end_column`` must be exactly what the message names.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from foxaudit.engine import check_source

FILES: dict[str, bytes] = {
    "bom.py": "\ufeff# TODO: bom\ndef g(a):\n    return 0\n".encode(),
    "crlf.py": b"x = 1\r\n# TODO: crlf\r\ndef f(a):\r\n    pass\r\n",
    "tabs.py": b"def h(a):\n\tif a:\n\t\treturn a  # FIXME tab\n\treturn a\n",
    "astral.py": 'def donn\u00e9es(\u00e9):\n    pass\n\u03bb = "\u00e9\u20ac\U0001d518"  # TODO: apr\u00e8s\n'.encode(),
    "feed.py": b"x = 1\n\x0c\n# XXX form feed\ndef k(a):\n    pass\n",
    "bom.cu": "\ufeff__global__ void k(float* a) { atomicAdd(a, 1.0f); }\n".encode(),
    "crlf.cu": b"// TODO: crlf cuda\r\n__global__ void k(float* a) {\r\n  atomicAdd(a, 1.0f);\r\n}\r\n",
    "astral.cu": "// \u00e9\u20ac\U0001d518 TODO: apr\u00e8s\n__global__ void k(float* a) { /* \u00e9\U0001d518 */ atomicAdd(a, 1.0f); }\n".encode(),
}
SELECT = ["FX401", "FX901", "FX902"]


def _named(message: str) -> str:
    return re.search(r"`([^`]*)`", message).group(1)  # type: ignore[union-attr]


def test_every_span_covers_the_named_text_in_characters() -> None:
    seen = set()
    for path, data in FILES.items():
        text = data.decode("utf-8").removeprefix("\ufeff")
        lines = text.replace("\r\n", "\n").split("\n")
        for diagnostic in check_source(path, data, select=SELECT):
            assert diagnostic.line == diagnostic.end_line
            span = lines[diagnostic.line - 1][diagnostic.column - 1 : diagnostic.end_column - 1]
            assert span.lower() == _named(diagnostic.message).lower(), (path, diagnostic)
            seen.add(path)
    assert seen == set(FILES)


def test_byte_order_mark_is_not_a_column() -> None:
    (marker,) = [d for d in check_source("bom.py", FILES["bom.py"], select=["FX901"])]
    assert (marker.line, marker.column) == (1, 3)
    (atomic,) = check_source("bom.cu", FILES["bom.cu"], select=["FX401"])
    assert (atomic.line, atomic.column) == (1, 31)


def test_astral_characters_count_as_one_column() -> None:
    (marker,) = check_source("astral.py", FILES["astral.py"], select=["FX901"])
    assert (marker.line, marker.column) == (3, 14)  # λ = "é€𝔘"  # T: the 14th character


def test_fix_keeps_the_byte_order_mark(project, run_cli) -> None:
    root = project(
        {"step.py": "\ufeffx = ps[3]\n".encode()},
        config='[tool.foxaudit]\n[tool.foxaudit.rules.FX801]\nconstants = {PS_CASH = 3}\n',
    )
    assert run_cli("check", "--no-project", "--fix", "step.py").code == 0
    assert (root / "step.py").read_bytes() == "\ufefffrom trainer.layout import PS_CASH\nx = ps[PS_CASH]\n".encode()


def test_vendored_header_macro_statements_are_hidden_not_reported() -> None:
    # nvcc expands CUB_NAMESPACE_BEGIN to `namespace cub {`; foxaudit hides the unexpanded
    # macro for the parse (it was an FX001 on every CUB header before).
    header = b"#pragma once\nCUB_NAMESPACE_BEGIN\n\nnamespace detail\n{\nint x;\n}\nCUB_NAMESPACE_END\n"
    assert check_source("agent.cuh", header, select=["FX001"]) == []


def test_a_remaining_cuda_parse_error_says_what_was_already_hidden() -> None:
    header = b"CUB_NAMESPACE_BEGIN\nnamespace detail\n{\nint x = ;\n}\nCUB_NAMESPACE_END\n"
    (error,) = check_source("agent.cuh", header, select=["FX001"])
    assert error.line == 4
    assert "already hidden as macros: `CUB_NAMESPACE_BEGIN`" in error.message
    assert "exclude" in error.hint


def test_parse_error_is_not_placed_on_a_leading_licence_comment() -> None:
    # Reduced from CUB's agent_reduce.cuh: tree-sitter wraps the whole file in one ERROR root
    # that starts at the licence comment, which says nothing about where parsing failed.
    source = (b"/* Licence: BSD-3-Clause. */\nCUB_DETAIL_POLICY_WRAPPER_DEFINE(\n  (BLOCK_THREADS, BlockThreads, int),\n"
              b"  (ITEMS_PER_THREAD, ItemsPerThread, int),\n  (BLOCK_ALGORITHM, BlockAlgorithm, cub::BlockReduceAlgorithm),\n")
    (error,) = check_source("agent_reduce.cuh", source, select=["FX001"])
    assert error.line > 1


def test_parallel_and_serial_runs_print_the_same(project, run_cli) -> None:
    files: dict[str, str | bytes] = {f"pkg/m{index:02d}.py": f"def f{index}(a):\n    pass  # TODO {index}\n"
                                     for index in range(24)}
    files.update({f"cuda/k{index}.cu": FILES["crlf.cu"] for index in range(6)})
    files.update(FILES)
    project(files)
    serial = run_cli("check", "--no-project", "--no-cache", "--jobs", "1", "--format", "json")
    parallel = run_cli("check", "--no-project", "--no-cache", "--jobs", "2", "--format", "json")
    assert serial.code == parallel.code == 1
    assert serial.out == parallel.out
    assert len(json.loads(serial.out)) >= 24 * 2


def test_sarif_for_many_findings_is_valid_json(project, run_cli, tmp_path: Path) -> None:
    project({f"m{index:03d}.py": "# TODO one\n# FIXME two\n" for index in range(150)})
    out = tmp_path / "report.sarif"
    assert run_cli("check", "--no-project", "--no-cache", "--format", "sarif", "-o", str(out)).code == 1
    report = json.loads(out.read_text(encoding="utf-8"))
    (run,) = report["runs"]
    assert len(run["results"]) == 300
    for result in run["results"]:
        (location,) = result["locations"]
        assert not location["physicalLocation"]["artifactLocation"]["uri"].startswith("/")
        assert result["partialFingerprints"]
