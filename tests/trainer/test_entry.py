"""The `trainer` script without the trainer extra: a one-line error naming the extra."""

from __future__ import annotations

import importlib.util

import pytest

from trainer import entry


def test_missing_trainer_dependencies_name_the_extra(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    real = importlib.util.find_spec
    # Simulates an environment installed with `pip install foxhunt` (no torch): the real torch
    # is installed here, so its lookup is the one thing replaced.
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert entry.main(["--help"]) == 2
    err = capsys.readouterr().err
    assert "got no torch vs the `trainer` extra" in err and '"foxhunt[trainer]"' in err
    assert "Traceback" not in err


def test_with_the_dependencies_the_script_is_the_cli(capsys) -> None:
    assert entry.missing_dependencies() == []
    assert entry.main(["--help"]) == 0  # trainer.cli turns argparse's exit into a status
    assert "train" in capsys.readouterr().out
