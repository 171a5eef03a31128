"""HEALTH_DIAG schema, writer and reader, and `trainer diag RUN_DIR`."""

from __future__ import annotations

import io
import json
import math

import pytest
from rich.console import Console

from trainer.eval.diag import ISV_PLOT, LOSS_PLOT, VALIDATION_PLOT, run_diag
from trainer.eval.health_diag import (
    HEALTH_DIAG_FILENAME,
    HealthDiagError,
    HealthDiagRecord,
    HealthDiagWriter,
    read_health_diag,
    series,
    validate_record,
)


def record(epoch: int, fold: int | None = None) -> HealthDiagRecord:
    return HealthDiagRecord(
        epoch=epoch, fold=fold, step=100 * (epoch + 1), wall_time_s=1.5 * epoch,
        losses={"c51": {"direction": 1.0 / (epoch + 1), "magnitude": 0.5}, "iqn": 0.2, "cql": 0.0, "total": 2.0},
        grad_norms={"c51": {"direction": {"trunk": 1.0, "direction": 0.5, "magnitude": 0.0}},
                    "iqn": {"trunk": 0.3, "iqn_head": 0.1}, "global": 1.2},
        isv={"TAU": 0.005 - 0.001 * epoch, "GAMMA[0]": 0.99, "LEARNING_HEALTH": 1.0},
        monitors={"tau": {"value": 0.005, "fire_rate": 1.0, "observations": epoch, "context": {"LEARNING_HEALTH": 1.0}}},
        actions={"direction": {"short": 0.2, "hold": 0.3, "long": 0.4, "flat": 0.1}},
        validation={"agent": {"sharpe_ratio": 0.1 * epoch}, "buy_and_hold": {"sharpe_ratio": -0.2}},
    )  # fmt: skip


def test_records_round_trip_through_the_log(tmp_path):
    writer = HealthDiagWriter(tmp_path / HEALTH_DIAG_FILENAME)
    for epoch in range(3):
        writer.write(record(epoch, fold=epoch // 2))
    records = read_health_diag(tmp_path)
    assert [r.epoch for r in records] == [0, 1, 2] and [r.fold for r in records] == [0, 0, 1]
    assert records[1].losses["c51"]["direction"] == 0.5
    assert series(records, "isv")["TAU"] == pytest.approx([0.005, 0.004, 0.003])
    assert series(records, "validation")["agent.sharpe_ratio"] == pytest.approx([0.0, 0.1, 0.2])


def test_non_finite_values_become_null_and_tensors_become_floats(tmp_path):
    import torch

    path = tmp_path / HEALTH_DIAG_FILENAME
    entry = record(0)
    entry.losses["iqn"] = math.nan
    entry.isv["TAU"] = torch.tensor(0.25)
    HealthDiagWriter(path).write(entry)
    line = json.loads(path.read_text())
    assert line["losses"]["iqn"] is None and line["isv"]["TAU"] == 0.25 and line["schema"] == 2


def test_bad_records_are_rejected_with_what_and_how():
    good = record(0).to_dict()
    with pytest.raises(HealthDiagError, match=r"lacks isv \(vs all of .*\) — hint"):
        validate_record({key: value for key, value in good.items() if key != "isv"})
    with pytest.raises(HealthDiagError, match=r"schema version mismatch \(7 vs 2\)"):
        validate_record({**good, "schema": 7})
    with pytest.raises(HealthDiagError, match=r"section 'losses' is a list \(vs a JSON object\)"):
        validate_record({**good, "losses": []})
    with pytest.raises(HealthDiagError, match=r"epoch is invalid \(-1 vs an integer ≥ 0\)"):
        validate_record({**good, "epoch": -1})
    with pytest.raises(HealthDiagError, match=r"'isv\.TAU' is not finite"):
        validate_record({**good, "isv": {"TAU": math.inf}})
    with pytest.raises(HealthDiagError, match=r"'isv\.TAU' has type object"):
        validate_record({**good, "isv": {"TAU": object()}})


def test_grad_norms_follow_component_branch_group_nesting():
    good = record(0).to_dict()
    with pytest.raises(HealthDiagError, match=r"unknown component \('dqn' vs global, c51, iqn, cql, return\) — hint"):
        validate_record({**good, "grad_norms": {"dqn": {"trunk": 1.0}}})
    with pytest.raises(HealthDiagError, match=r"grad_norms\.c51\.trunk is not a mapping \(float vs 1 more"):
        validate_record({**good, "grad_norms": {"c51": {"trunk": 1.0}}})
    with pytest.raises(HealthDiagError, match=r"grad_norms\.iqn\.trunk is not a norm \(dict vs a number"):
        validate_record({**good, "grad_norms": {"iqn": {"trunk": {"x": 1.0}}}})
    with pytest.raises(HealthDiagError, match=r"grad_norms\.global is not a norm \(str"):
        validate_record({**good, "grad_norms": {"global": "big"}})
    validate_record({**good, "grad_norms": {"global": None}})  # a run before the per-component split


def test_diag_prints_the_gradient_norm_table(tmp_path):
    HealthDiagWriter(tmp_path / HEALTH_DIAG_FILENAME).write(record(0))
    buffer = io.StringIO()
    run_diag(tmp_path, console=Console(file=buffer, width=160), plots=False)
    text = buffer.getvalue()
    assert "gradient norms by component and parameter group" in text
    assert "c51 direction" in text and "iqn_head" in text


def test_reader_names_the_file_and_line_of_a_corrupt_record(tmp_path):
    path = tmp_path / HEALTH_DIAG_FILENAME
    HealthDiagWriter(path).write(record(0))
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"schema": 2, "epoch": 1, "fold": nu\n')
    with pytest.raises(HealthDiagError, match=rf"not JSON \({path}:2: .* — hint: the run may have been killed"):
        read_health_diag(tmp_path)
    with pytest.raises(HealthDiagError, match=r"log not found .* — hint: pass the --out directory"):
        read_health_diag(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / HEALTH_DIAG_FILENAME).write_text("")
    with pytest.raises(HealthDiagError, match=r"log is empty"):
        read_health_diag(tmp_path / "empty")


def test_diag_prints_the_tables_and_writes_the_plots(tmp_path):
    writer = HealthDiagWriter(tmp_path / HEALTH_DIAG_FILENAME)
    for epoch in range(4):
        writer.write(record(epoch))
    buffer = io.StringIO()
    written = run_diag(tmp_path, console=Console(file=buffer, width=200))
    text = buffer.getvalue()
    assert "HEALTH_DIAG by epoch: learning" in text and "adaptive ISV values" in text
    assert "adaptive monitors at epoch 3" in text
    assert "0.003" in text and "0.3" in text  # τ at epoch 2, validation Sharpe at epoch 3
    assert [path.name for path in written] == [ISV_PLOT, LOSS_PLOT, VALIDATION_PLOT]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000


def test_cli_diag_reports_a_missing_run_without_a_traceback(tmp_path, capsys):
    from trainer.cli import main

    assert main(["diag", str(tmp_path / "missing")]) == 2
    assert "HEALTH_DIAG log not found" in capsys.readouterr().err
