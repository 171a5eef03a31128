"""The CUDA preprocessor model: one branch per #if group, lines and columns kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foxaudit.sources.base import SourceFile
from foxaudit.sources.preprocess import BUILTIN_DEFINES, preprocess


def live_lines(text: str, defines: dict[str, str | None] | None = None) -> list[str]:
    result = preprocess(text.encode(), defines)
    assert len(result.data) == len(text.encode())  # byte offsets are kept
    assert result.data.count(b"\n") == text.count("\n")  # so are lines
    return [line.strip() for line in result.data.decode().splitlines() if line.strip()]


def test_if_zero_is_blanked_and_else_is_kept() -> None:
    assert live_lines("#if 0\nint dead;\n#else\nint live;\n#endif\n") == ["int live;"]


def test_comments_in_an_inactive_branch_survive_for_marker_rules() -> None:
    assert live_lines("#if 0\nint dead; // TODO: revive\n/* FIXME */\n#endif\n") == ["// TODO: revive", "/* FIXME */"]


@pytest.mark.parametrize(
    ("condition", "taken"),
    [
        ("1", True), ("0", False), ("UNDEFINED_MACRO", False), ("!UNDEFINED_MACRO", True),
        ("defined(__CUDACC__)", True), ("defined __CUDACC__ && __CUDA_ARCH__ >= 800", True),
        ("__CUDA_ARCH__ < 700", False), ("CUDART_VERSION >= 12000", True), ("(2 + 3) * 4 == 20", True),
        ("1 ? 0 : 1", False), ("0x10 == 16 && 010 == 8", True), ("5 / 0", True), ("true", True),
        ("__has_include(<cuda_bf16.h>)", True), ("'A' == 65", True), ("1 << 4 == 16 || 0", True),
        ("defined(X) && FUNCTION_LIKE(1)", False),
    ],
)
def test_if_conditions(condition: str, taken: bool) -> None:
    # "5 / 0" cannot be evaluated: an undecidable branch is taken when none was before it.
    assert live_lines(f"#if {condition}\nint yes;\n#else\nint no;\n#endif\n") == (["int yes;"] if taken else ["int no;"])


def test_ifdef_ifndef_elif_and_file_defines() -> None:
    text = (
        "#define USE_FAST 1\n#ifdef USE_FAST\nint fast;\n#endif\n#undef USE_FAST\n#ifndef USE_FAST\nint slow;\n#endif\n"
        "#define LEVEL 2\n#if LEVEL == 1\nint one;\n#elif LEVEL == 2\nint two;\n#elif LEVEL >= 2\nint also;\n#else\nint none;\n#endif\n"
    )
    assert live_lines(text) == ["#define USE_FAST 1", "int fast;", "#undef USE_FAST", "int slow;", "#define LEVEL 2", "int two;"]


def test_configured_defines_override_and_undefine_builtins() -> None:
    text = "#ifdef ENABLE_BF16\nint bf16;\n#else\nint fp32;\n#endif\n#ifdef __CUDA_ARCH__\nint device;\n#else\nint host;\n#endif\n"
    assert live_lines(text) == ["int fp32;", "int device;"]
    assert live_lines(text, {"ENABLE_BF16": "1", "__CUDA_ARCH__": None}) == ["int bf16;", "int host;"]
    assert "__CUDA_ARCH__" in BUILTIN_DEFINES


def test_nested_groups_inside_an_inactive_branch_stay_inactive() -> None:
    text = "#if 0\n#if 1\nint a;\n#else\nint b;\n#endif\n#endif\nint c;\n"
    assert live_lines(text) == ["int c;"]
    assert preprocess(text.encode()).inactive[0].first_line == 2


def test_continued_directive_and_directive_inside_a_block_comment() -> None:
    text = "#if defined(A) || \\\n    defined(__NVCC__)\nint yes;\n#endif\n/*\n#if 0\n*/\nint after;\n"
    assert live_lines(text) == ["int yes;", "/*", "#if 0", "*/", "int after;"]


def test_unbalanced_directives_do_not_raise() -> None:
    assert live_lines("#endif\nint a;\n#else\n#if 1\nint b;\n") == ["int a;", "int b;"]


def test_a_statement_split_across_branches_parses_as_nvcc_compiles_it() -> None:
    text = ("__global__ void k(float* x, int n) {\n#if REVERSE\n  for (int i = n - 1; i >= 0; i--) {\n#else\n"
            "  for (int i = 0; i < n; i++) {\n#endif\n    x[i] = 0.0f;\n  }\n}\n")
    source = SourceFile.from_text("k.cu", text)
    assert not source.tree.root_node.has_error
    assert source.cuda.is_inactive(3) and not source.cuda.is_inactive(5)
    # Nodes point into the original file: line 5 is the compiled loop.
    loop = source.tree.root_node.named_children[0].child_by_field_name("body").named_children[0]
    assert loop.type == "for_statement" and loop.start_point.row == 4


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([
    "#if 0\n", "#if 1\n", "#ifdef X\n", "#ifndef X\n", "#elif A > 2\n", "#else\n", "#endif\n", "#define X 3\n",
    "#undef X\n", "#if (1 +\n", "#if defined(\n", "int a;\n", "/* #if 0\n", "*/\n", "// c\n", '"str\n', "'\n",
    "#if X \\\n", "  && Y\n", "\r\n", "é\n", "R\"(raw\n", ")\"\n", "#",
]), max_size=30))
def test_any_mix_of_directives_keeps_offsets_and_never_raises(pieces: list[str]) -> None:
    data = "".join(pieces).encode()
    result = preprocess(data)
    assert len(result.data) == len(data)
    assert [index for index, byte in enumerate(result.data) if byte == 10] == [
        index for index, byte in enumerate(data) if byte == 10]
    assert SourceFile(path="f.cu", data=data, language="cuda").tree is not None  # the whole preparation runs


@pytest.mark.parametrize("guard", ["#ifdef USE_CUDA", "#if defined(USE_CUDA)", "#if USE_CUDA"])
def test_a_switch_that_wraps_the_whole_file_counts_as_defined(guard: str) -> None:
    # LightGBM's src/**/cuda/*.cu: the build compiles the file only with -DUSE_CUDA, so its code
    # is checked; a switch with an #else, or with code outside it, is an undefined macro as in C.
    whole = f"// license\n#pragma once\n{guard}\n__global__ void k(float* h) {{ atomicAdd(h, 1.0f); }}\n#endif  // USE_CUDA\n"
    assert b"atomicAdd" in preprocess(whole.encode()).data
    assert b"atomicAdd" not in preprocess(whole.encode(), {"USE_CUDA": None}).data  # the configuration decides
    with_else = f"{guard}\n__global__ void k(float* h) {{ atomicAdd(h, 1.0f); }}\n#else\nvoid k();\n#endif\n"
    assert b"atomicAdd" not in preprocess(with_else.encode()).data
    with_code = f"int x;\n{guard}\n__global__ void k(float* h) {{ atomicAdd(h, 1.0f); }}\n#endif\n"
    assert b"atomicAdd" not in preprocess(with_code.encode()).data
