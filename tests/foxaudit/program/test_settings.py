"""`[tool.foxaudit.program]`: typed, every error reported at once, in the house format."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxaudit.cli import main
from foxaudit.config import PROGRAM_SCHEMA, ConfigError
from foxaudit.program.settings import ProgramSettings


def test_defaults_and_conversion() -> None:
    settings = ProgramSettings.from_table({"test-roots": ["t"], "named-dims": {"ps": ["PS_"]}})
    assert settings.test_roots == ("t",)
    assert settings.named_dims == {"ps": ("PS_",)}
    assert settings.hot_path_decorators == ("hot_path",)
    assert ProgramSettings.from_table(None) == ProgramSettings()


def test_every_key_is_registered_with_the_config_schema() -> None:
    import dataclasses

    keys = {f.name.replace("_", "-") for f in dataclasses.fields(ProgramSettings)}
    assert keys <= set(PROGRAM_SCHEMA)
    assert all(PROGRAM_SCHEMA[key].help for key in keys)


def test_all_errors_at_once_with_hints() -> None:
    with pytest.raises(ConfigError) as caught:
        ProgramSettings.from_table({"sourc-roots": ["."], "test-roots": 3, "kernel-loaders": {"load": "name"}})
    errors = caught.value.errors
    assert len(errors) == 3
    assert any("unknown key 'sourc-roots'" in e and "source-roots" in e for e in errors)
    assert any("'test-roots'" in e and "wrong type (got int 3 vs list[str])" in e for e in errors)
    assert any("'module:function'" in e and "(got 'load' vs" in e for e in errors)
    assert all(" — hint: " in e for e in errors)


def test_bad_program_table_is_a_configuration_error_of_check(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.foxaudit.program]\nhot-path-roots = "x"\nnot-a-key = 1\n')
    (tmp_path / "a.py").write_text("A = 1\n")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "hot-path-roots" in err and "not-a-key" in err and "Traceback" not in err
    assert main(["audit", "--check"]) == 2
    assert main(["history", "a..b"]) == 2


def test_configuration_reference_in_the_docs_is_current() -> None:
    from program_support import REPO

    from foxaudit.program.settings import reference_table

    page = (REPO / "docs/foxaudit-program.md").read_text(encoding="utf-8")
    assert reference_table() in page, "docs/foxaudit-program.md: paste reference_table() output into the reference"
