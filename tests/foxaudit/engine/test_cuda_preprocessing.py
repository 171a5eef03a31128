"""CUDA files are checked as nvcc compiles them: configured defines pick the branch, dead code is not live."""

from __future__ import annotations

from foxaudit.engine import check_source

KERNEL = (
    "__global__ void sum(const float* r, float* total, int n) {\n"
    "#if 0\n"
    "  atomicAdd(total, r[threadIdx.x]);  // the old, nondeterministic version\n"
    "#endif\n"
    "#ifdef USE_ATOMICS\n"
    "  atomicAdd(total, 1.0f);\n"
    "#endif\n"
    "}\n"
)


def test_atomics_under_if_zero_and_undefined_macros_are_not_live() -> None:
    assert check_source("k.cu", KERNEL.encode(), select=["FX401"]) == []


def test_a_configured_define_makes_its_branch_live(project, run_cli) -> None:
    project({"k.cu": KERNEL}, config="[tool.foxaudit]\nselect = ['FX401']\n[tool.foxaudit.cuda]\ndefines = {USE_ATOMICS = true}\n")
    result = run_cli("check", "--no-project", "k.cu")
    assert result.code == 1
    assert "k.cu:6:" in result.out and "k.cu:3:" not in result.out


def test_changing_a_define_invalidates_the_cache(project, run_cli) -> None:
    root = project({"k.cu": KERNEL}, config="[tool.foxaudit]\nselect = ['FX401']\n")
    assert run_cli("check", "--no-project", "k.cu").code == 0
    (root / "pyproject.toml").write_text(
        "[tool.foxaudit]\nselect = ['FX401']\n[tool.foxaudit.cuda]\ndefines = {USE_ATOMICS = 1}\n", encoding="utf-8")
    assert run_cli("check", "--no-project", "k.cu").code == 1


def test_cuda_config_errors_are_reported_with_a_hint(project, run_cli) -> None:
    project({"k.cu": KERNEL}, config="[tool.foxaudit.cuda]\ndefine = {A = 1}\ndefines = {'not a name' = 1, B = [1]}\n")
    result = run_cli("check", "--no-project", "k.cu")
    assert result.code == 2
    assert "unknown key 'define'" in result.err and "did you mean 'defines'?" in result.err
    assert "not a macro name (got 'not a name' vs an identifier)" in result.err
    assert "key 'B': wrong type (got list vs string, integer or boolean)" in result.err


def test_a_todo_in_a_comment_under_if_zero_is_still_found() -> None:
    (marker,) = check_source("k.cu", b"#if 0\n// TODO: port the old kernel\n#endif\n", select=["FX901"])
    assert marker.line == 2


def test_a_remaining_parse_error_names_the_construct_once_per_file() -> None:
    source = (b"auto f(void* p) { return static_cast<int Klass::*>(p); }\n"
              b"void g() { int y = ; }\nvoid h() { int z = ; }\n")
    (error,) = check_source("m.cuh", source, select=["FX001"])
    assert error.line == 1
    assert "construct: a pointer to member" in error.message
    assert "unparsed regions in this file, reported once" in error.message
