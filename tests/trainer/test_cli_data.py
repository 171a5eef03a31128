"""``trainer data info|build``: output, cache behaviour, and clean exit-2 errors (no traceback)."""

from __future__ import annotations

from pathlib import Path

import databento_dbn as dbn
import pytest

from trainer.cli import EXIT_USER_ERROR, build_parser, main

FIXTURES = Path(__file__).parent / "data"


def test_info_on_the_default_dataset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["data", "info", "default", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for expected in ("6,225", "2017-01-01T22:00:00Z", "3600 s", "Time, Open, High", "none (order-flow", "34 columns", "missing", "Sharpe 1.86"):
        assert expected in out


def test_build_then_info_reports_a_cache_hit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["data", "build", "default", "--out", str(tmp_path)]) == 0
    assert "built: 6,225 bars × 34 features" in capsys.readouterr().out
    assert main(["data", "build", "default", "--out", str(tmp_path)]) == 0
    assert "hit: 6,225 bars" in capsys.readouterr().out
    assert main(["data", "build", "default", "--out", str(tmp_path), "--force"]) == 0
    assert "rebuilt (rebuild forced)" in capsys.readouterr().out
    assert main(["data", "info", "default", "--cache-dir", str(tmp_path)]) == 0
    assert "│ cache" in capsys.readouterr().out


def test_info_on_an_mbp10_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))
    import fxdata_fixtures as fx

    path = fx.write_dbn(tmp_path / "book.dbn.zst", dbn.Schema.MBP_10, fx.random_mbp10(4000, seed=1), compress=True)
    assert main(["data", "info", str(path), "--bar-seconds", "0.5", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "dbn-mbp-10" in out and "MBP-10, 10 levels" in out and "4,000 events" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["data", "info", "missing.csv"], "trainer: error: data file not found: missing.csv"),
    (["data", "build", "default", "--norm-window", "1"], "trainer: error: invalid feature config"),
])  # fmt: skip
def test_user_errors_exit_2_with_one_clean_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert err.startswith(message) and "Traceback" not in err and " — hint: " in err


def test_bad_data_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("time,open,high,low,close\n2017-01-02 01:00,1,2,0.5,1.5\n2017-01-02 00:00,1,2,0.5,1.5\n")
    assert main(["data", "build", str(path), "--out", str(tmp_path)]) == EXIT_USER_ERROR
    assert "row 2 (2017-01-02T00:00:00Z): timestamp goes backwards" in capsys.readouterr().err


def test_usage_errors_exit_2() -> None:
    assert main(["data"]) == 2 and main([]) == 2 and main(["data", "info", "--help"]) == 0


def test_parser_exposes_the_subcommand_registry() -> None:
    parser = build_parser()
    args = parser.parse_args(["data", "info", "default"])
    assert callable(args.handler) and args.path == "default"
