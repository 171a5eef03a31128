"""Configuration: every problem reported at once, with file and key; exit 2; typed options."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from foxaudit import config
from foxaudit.config import (
    ConfigError,
    ProgramKey,
    Settings,
    check_value,
    load_settings,
    register_program_keys,
)
from foxaudit.engine.resolve import resolve

BAD_CONFIG = """
[tool.foxaudit]
select = ["FX0", "FX77"]
bogus = 1
exclude = "not-a-list"

[tool.foxaudit.per-file-ignores]
"tests/*.py" = ["FX001", "nope"]

[tool.foxaudit.rules.FX099]
replacement = 3
colour = "red"

[tool.foxaudit.rules.FX998]
x = 1
"""


def test_all_config_errors_reported_at_once_with_file_and_key(project, run_cli, magic_rule):
    root = project({"a.py": "x = 1\n"}, BAD_CONFIG)
    result = run_cli("check")
    assert result.code == 2
    assert "7 configuration errors" in result.err
    config = str(root / "pyproject.toml")
    expected = [
        "unknown key 'bogus'",
        "key 'exclude': wrong type (got str 'not-a-list' vs list of glob strings)",
        "[tool.foxaudit.per-file-ignores] key 'tests/*.py': invalid code or prefix (got 'nope'",
        "no rule matches 'FX77'",
        "[tool.foxaudit.rules] key 'FX998': unknown rule code",
        "[tool.foxaudit.rules.FX099] key 'replacement': wrong type (got int 3 vs str)",
        "[tool.foxaudit.rules.FX099] unknown key 'colour'",
    ]
    lines = [line for line in result.err.splitlines() if line.startswith("  ")]
    assert len(lines) == len(expected)
    for fragment in expected:
        assert any(fragment in line and config in line and "— hint:" in line for line in lines), fragment
    assert "Traceback" not in result.err


def test_invalid_toml_is_a_config_error(project, run_cli):
    project({"a.py": "x = 1\n"}, "[tool.foxaudit\nselect = 1\n")
    result = run_cli("check")
    assert result.code == 2
    assert "invalid TOML" in result.err and "pyproject.toml" in result.err


def test_config_flag_reads_a_dedicated_file_with_top_level_keys(project, run_cli, tmp_path, magic_rule):
    project({"a.py": "x = 42\n"})
    dedicated = tmp_path / "foxaudit.toml"
    dedicated.write_text('select = ["FX099"]\n[rules.FX099]\nreplacement = "ANSWER"\n')
    result = run_cli("check", "--config", str(dedicated), "--no-cache", str(Path.cwd()))
    assert result.code == 1
    assert "FX099 [*] magic number 42 — hint: use ANSWER" in result.out


def test_missing_config_file_is_reported(project, run_cli, tmp_path):
    project({"a.py": "x = 1\n"})
    result = run_cli("check", "--config", str(tmp_path / "absent.toml"))
    assert result.code == 2
    assert "configuration file not found" in result.err


def test_select_prefix_and_ignore(project, magic_rule):
    root = project({"a.py": "x = 1\n"})
    enabled = resolve(Settings(root=root, select=("FX0",), ignore=("FX002",))).enabled
    assert {"FX001", "FX003", "FX099"} <= enabled
    assert "FX002" not in enabled
    assert all(code.startswith("FX0") for code in enabled)


def test_preview_rule_needs_exact_selection(project, monkeypatch):
    from engine_support import MagicNumber

    from foxaudit.rules import registry

    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, registry.Registered(MagicNumber, "preview")))
    root = project({})
    assert "FX099" not in resolve(Settings(root=root)).enabled
    assert "FX099" not in resolve(Settings(root=root, select=("FX0",))).enabled
    assert "FX099" in resolve(Settings(root=root, select=("FX099",))).enabled


def test_typed_options_from_toml(project, magic_rule):
    root = project({})
    resolved = resolve(Settings(root=root, rules={"FX099": {"replacement": "ANSWER"}}))
    assert resolved.options["FX099"].replacement == "ANSWER"


def test_program_table_validated_by_registered_schema(tmp_path, monkeypatch):
    # Register through the public hook, on a copy of the schema that the test restores
    # (foxaudit.program registers its own keys on import: import it first, into the original).
    importlib.import_module("foxaudit.program")
    monkeypatch.setattr(config, "PROGRAM_SCHEMA", dict(config.PROGRAM_SCHEMA))
    register_program_keys({"engine-test-roots": ProgramKey(list[str], "test-only key", [])})
    settings = Settings(root=tmp_path, program={"engine-test-roots": "x", "unknown-engine-key": 1})
    with pytest.raises(ConfigError) as caught:
        resolve(settings)
    joined = "\n".join(caught.value.errors)
    assert "[tool.foxaudit.program] key 'engine-test-roots': wrong type" in joined
    assert "unknown key 'unknown-engine-key'" in joined
    good = resolve(Settings(root=tmp_path, program={"engine-test-roots": ["a"]}))
    assert good.program["engine-test-roots"] == ["a"]


def test_load_settings_raises_with_every_error(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.foxaudit]\nselect = "FX9"\ninclude = [1]\nwhat = 2\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    assert len(caught.value.errors) == 3


@pytest.mark.parametrize(
    ("value", "hint", "ok", "converted"),
    [
        (["a"], tuple[str, ...], True, ("a",)),
        ("a", tuple[str, ...], False, None),
        ([1], list[str], False, None),
        ({"a": 1}, dict[str, int], True, {"a": 1}),
        (True, int, False, None),
        (3, float, True, 3.0),
        ("x", str | None, True, "x"),
    ],
)
def test_check_value(value, hint, ok, converted):
    problem, result = check_value(value, hint)
    assert (problem == "") is ok
    if ok:
        assert result == converted


def test_config_errors_suggest_the_closest_name(project, run_cli) -> None:
    project({"a.py": "x = 1\n"}, config=(
        "[tool.foxaudit]\nselct = ['FX9']\nignore = ['FX91']\n[tool.foxaudit.rules.FX4O1]\nallow = []\n"
        "[tool.foxaudit.rules.FX401]\nfunction = ['atomicAdd']\n"))
    result = run_cli("check", "--no-project")
    assert result.code == 2
    assert "unknown key 'selct'" in result.err and "did you mean 'select'?" in result.err
    assert "key 'FX4O1': unknown rule code" in result.err and "did you mean 'FX401'?" in result.err
    assert "unknown key 'function'" in result.err and "did you mean 'functions'?" in result.err
    assert "no rule matches 'FX91'" in result.err and "did you mean 'FX901'?" in result.err
