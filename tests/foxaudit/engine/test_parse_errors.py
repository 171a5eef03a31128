"""FX001 for every kind of bad input, located, and the run goes on."""

from __future__ import annotations

from foxaudit.config import Settings
from foxaudit.engine import check_source
from foxaudit.engine.resolve import resolve
from foxaudit.engine.run import check


def _fx001(path: str, data: str | bytes, select=("FX001",)):
    return [d for d in check_source(path, data, select=list(select)) if d.code == "FX001"]


def test_python_syntax_error_located_by_cpython():
    (diagnostic,) = _fx001("a.py", "x = 1\ndef f(:\n    pass\n")
    assert (diagnostic.line, diagnostic.column) == (2, 7)
    assert diagnostic.message.startswith("syntax error:")


def test_unclosed_bracket():
    (diagnostic,) = _fx001("a.py", "x = (1,\ny = 2\n")
    assert diagnostic.line == 1 and "syntax error" in diagnostic.message


def test_invalid_utf8_points_at_the_byte():
    (diagnostic,) = _fx001("a.py", b"x = 1\ny = '\xff'\n")
    assert (diagnostic.line, diagnostic.column) == (2, 6)
    assert "invalid UTF-8 (got byte 0xff" in diagnostic.message


def test_binary_file_with_source_extension():
    (diagnostic,) = _fx001("blob.py", b"\x7fELF\x00\x01\x02")
    assert "binary file" in diagnostic.message and diagnostic.line == 1


def test_empty_python_is_legal_empty_cuda_is_not():
    assert _fx001("pkg/__init__.py", "") == []
    assert _fx001("empty.pyi", "") == []
    (diagnostic,) = _fx001("empty.cu", "")
    assert "empty CUDA file" in diagnostic.message


def test_cuda_error_reported_once_and_rules_still_run(magic_rule):
    text = (
        "__align__(16) struct S { float a; };\n"
        "HD float broken() { return 1.0f }\n"
        "__global__ void k(int* out) { out[0] = 42; }\n"
    )
    found = check_source("k.cu", text, select=["FX001", "FX099"])
    assert [d.code for d in found].count("FX001") == 1
    fx001 = next(d for d in found if d.code == "FX001")
    assert fx001.line in (1, 2) and "parse error" in fx001.message
    assert any(d.code == "FX099" and d.line == 3 for d in found)


def test_crashing_rule_becomes_fx001_and_others_still_report(magic_rule, monkeypatch):
    from engine_support import MagicNumber

    def explode(self, node, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(MagicNumber, "visit", explode)
    found = check_source("a.py", "x = 42\n", select=["FX001", "FX099"])
    assert [(d.code, d.line) for d in found] == [("FX001", 1)]
    assert "internal error in rule FX099 (magic-number) (RuntimeError: boom)" in found[0].message


def test_run_continues_past_bad_files(project):
    root = project(
        {
            "a_bad.py": "def f(:\n",
            "b_binary.py": b"\x00\x01",
            "c_latin1.py": b"s = '\xe9'\n",
            "d_good.py": "x = 1\n",
            "e_empty.cu": "",
        }
    )
    result = check(resolve(Settings(root=root, select=("FX001",))), use_cache=False)
    assert result.files == 5
    assert [d.path for d in result.diagnostics] == ["a_bad.py", "b_binary.py", "c_latin1.py", "e_empty.cu"]


def test_rule_with_unknown_node_type_is_reported_and_others_run(magic_rule, monkeypatch):
    from engine_support import MagicNumber

    monkeypatch.setattr(MagicNumber, "python_nodes", ("integer", "no_such_node"))
    found = check_source("a.py", "def f(:\n", select=["FX001", "FX099"])
    assert [d.code for d in found] == ["FX001"] and "syntax error" in found[0].message
    found = check_source("a.py", "x = 42\n", select=["FX001", "FX099"])
    assert [d.code for d in found] == ["FX001"]
    assert "node type the python grammar lacks (got 'no_such_node'" in found[0].message
    assert check_source("k.cu", "int a = 42;\n", select=["FX001", "FX099"])[0].code == "FX099"


def test_nesting_cpython_rejects_is_fx001_even_when_tree_sitter_parses_it():
    """3,000 nested parentheses (CPython: "too many nested parentheses") used to pass clean."""
    (diagnostic,) = _fx001("deep.py", "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    assert diagnostic.message == "syntax error: too many nested parentheses"
    (chain,) = _fx001("chain.py", "x = " + " + ".join(["1"] * 100_000) + "\n")
    assert "nested too deeply for CPython (RecursionError" in chain.message
    assert "split the nested expression" in chain.hint
    indented = "".join(" " * level + f"if x{level}:\n" for level in range(101)) + " " * 101 + "pass\n"
    (block,) = _fx001("blocks.py", indented)
    assert "too many levels of indentation" in block.message


def test_brackets_in_strings_only_cost_a_compile():
    assert _fx001("strings.py", "x = '" + "(" * 300 + "'\ny = '" + "a" * 20_000 + "'\n") == []


def test_deep_files_are_fx001_on_the_file_not_internal_errors_of_every_project_rule(project, run_cli):
    """A file nested past Python's recursion limit used to fail all 16 whole-project rules with
    "internal error" findings at pyproject.toml:1:1 that named no file."""
    project({
        "pkg/__init__.py": "",
        "pkg/rejected.py": "x = " + "[" * 3000 + "1" + "]" * 3000 + "\n",  # CPython rejects it too
        # CPython compiles it; the summariser read it recursively and left it out (RecursionError)
        # until the `+` chain's spine was walked in a loop.
        "pkg/accepted.py": "x = " + " + ".join(["'a'"] * 1500) + "\n",
        "pkg/chain.py": "x = a" + ".b()" * 1500 + "\n",  # summarised: each link's dotted name is memoised
        "pkg/calls.py": "x = f()" + "()" * 5000 + "\n",  # took minutes (parent walks), now instant
    }, '[project]\nname = "pkg"\nversion = "0"\n')  # fmt: skip
    result = run_cli("check", "--no-cache")
    lines = result.out.splitlines()
    assert not [line for line in lines if "internal error" in line]
    fx001 = {line.split(":")[0]: line for line in lines if " FX001 " in line}
    assert sorted(fx001) == ["pkg/calls.py", "pkg/rejected.py"]
    assert "too many nested parentheses" in fx001["pkg/rejected.py"]
    assert "nested too deeply for CPython" in fx001["pkg/calls.py"]


def test_unreadable_file_hint_is_about_the_checkout_not_a_foxaudit_bug(tmp_path):
    """The hint used to say "report this to foxaudit" for a file the checkout makes unreadable.
    (Tests run as root, where permissions never deny a read: a directory gives the real OSError.)"""
    from foxaudit.rules.tool.parse_error import unreadable

    try:
        open(tmp_path, "rb")  # noqa: SIM115 — opened only for its error
    except OSError as error:
        diagnostic = unreadable("pkg/x.py", str(tmp_path), error)
    assert diagnostic.message == "cannot read the file (Is a directory vs a readable file)"
    assert diagnostic.hint == "fix its permissions (or the disk), or leave it out with `exclude`"


def test_latin1_file_with_a_pep263_declaration_is_valid():
    """A valid Latin-1 file with `# -*- coding: latin-1 -*-` used to be FX001 (invalid UTF-8)."""
    data = "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1")
    assert _fx001("legacy.py", data) == []
    (late,) = _fx001("late.py", "x = 1\n# coding: latin-1\ny = 'é'\n".encode("latin-1"))  # line 2 after code: not a declaration
    assert late.message.startswith("invalid UTF-8 (got byte 0xe9")
    (wrong,) = _fx001("ascii.py", "# coding: ascii\ny = 'é'\n".encode("latin-1"))
    assert wrong.message.startswith("invalid ascii (got byte 0xe9") and (wrong.line, wrong.column) == (2, 6)


def test_latin1_file_positions_and_fixes_keep_its_encoding(project, magic_rule):
    """Findings count characters; --fix writes the file back in its declared encoding."""
    root = project({"legacy.py": "# -*- coding: latin-1 -*-\ns = 'é'; x = 42\n".encode("latin-1")})
    result = check(resolve(Settings(root=root, select=("FX001", "FX099"))), use_cache=False, fix=True)
    assert result.fixed == 1 and [d.code for d in result.diagnostics] == []
    assert (root / "legacy.py").read_bytes() == "# -*- coding: latin-1 -*-\ns = 'é'; x = MAGIC\n".encode("latin-1")


def test_the_bracket_depth_scan_steps_only_through_chunks_that_could_reach_the_limit():
    """``_depth_reaches`` skips a chunk whose opening brackets cannot lift the depth to the limit;
    it agrees with the running depth stepped bracket by bracket, at and around chunk edges."""
    import itertools
    import random

    from foxaudit.rules.tool.parse_error import _BRACKET_STEP, _depth_reaches

    def stepped(brackets: bytes, limit: int) -> bool:
        steps = map(int.__sub__, brackets.translate(_BRACKET_STEP), itertools.repeat(1))
        return max(itertools.accumulate(steps)) >= limit

    cases = [b"(" * 200, b"(" * 199 + b")", b")" * 150 + b"(" * 349, b"()" * 150 + b"[" * 199 + b"{", b"{" * 199 + b")" + b"(" * 2]
    generator = random.Random(14)
    for _ in range(500):
        share = generator.choice([0.3, 0.5, 0.52, 0.6, 0.8])
        cases.append(bytes(generator.choice(b"([{" if generator.random() < share else b")]}") for _ in range(generator.randint(1, 1500))))
    for brackets in cases:
        assert _depth_reaches(brackets, 200) == stepped(brackets, 200), brackets[:40]


def test_a_file_that_may_nest_past_cpython_is_summarised_whole_even_as_an_index_alone(tmp_path):
    """An index alone skips what a full scan recurses into (an assignment's value inside a
    function): a file nested that deep is summarised whole, so both agree that it fails."""
    from foxaudit.engine import run

    deep = "def f():\n    x = " + "[" * 3000 + "1" + "]" * 3000 + "\n"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/deep.py").write_text(deep)
    resolved = resolve(Settings(root=tmp_path))
    run._init_worker(resolved, False, True, False)  # a big project's pool: indexes alone
    relative, _, _, prepared = run._analyse_one((str(tmp_path / "pkg/deep.py"), "pkg/deep.py", ""))
    assert relative == "pkg/deep.py" and "RecursionError" in prepared.failure
