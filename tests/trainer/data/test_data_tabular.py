"""CSV and Parquet loading: column aliases, time formats, and one clear error per bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from trainer.data import DataError, load_bars, load_csv, load_parquet

HOUR_NS = 3600 * 10**9
T2017 = int(pd.Timestamp("2017-01-02 00:00", tz="UTC").value)
GOOD = [(1.05, 1.06, 1.04, 1.055, 100.0), (1.055, 1.07, 1.05, 1.06, 120.0), (1.06, 1.065, 1.03, 1.04, 90.0)]


def write_csv(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


@pytest.mark.parametrize(("header", "times"), [
    ("Gmt time,Open,High,Low,Close,Volume", ["02.01.2017 00:00:00.000", "02.01.2017 01:00:00.000", "02.01.2017 02:00:00.000"]),
    ("timestamp,open,high,low,close,volume", ["2017-01-02 00:00:00", "2017-01-02 01:00:00", "2017-01-02 02:00:00"]),
    ("DATE,OPEN,HIGH,LOW,CLOSE,VOL", ["2017-01-02T00:00:00Z", "2017-01-02T01:00:00Z", "2017-01-02T02:00:00Z"]),
    ("Datetime,O,H,L,C,V", ["2017-01-02T01:00:00+01:00", "2017-01-02T02:00:00+01:00", "2017-01-02T03:00:00+01:00"]),
    ("ts_event,open,high,low,close,volume", [str(T2017), str(T2017 + HOUR_NS), str(T2017 + 2 * HOUR_NS)]),
    ("time,open,high,low,close,volume", [str(T2017 // 10**9), str(T2017 // 10**9 + 3600), str(T2017 // 10**9 + 7200)]),
    ("Time,Open,High,Low,Close,Volume", ["01/02/2017 00:00", "01/02/2017 01:00", "01/02/2017 02:00"]),
])  # fmt: skip
def test_csv_aliases_and_time_formats(tmp_path: Path, header: str, times: list[str]) -> None:
    rows = [",".join([t, *map(str, r)]) for t, r in zip(times, GOOD, strict=True)]
    bars = load_csv(write_csv(tmp_path / "bars.csv", header, rows))
    assert bars.timestamps.tolist() == [T2017, T2017 + HOUR_NS, T2017 + 2 * HOUR_NS]
    np.testing.assert_allclose(bars.close, [r[3] for r in GOOD])
    np.testing.assert_allclose(bars.volume, [r[4] for r in GOOD])
    assert bars.bar_ns == HOUR_NS and bars.has_volume


def test_separate_date_and_time_columns_are_joined(tmp_path: Path) -> None:
    rows = [f"2017.01.02,0{i}:00,{o},{h},{lo},{c},{v}" for i, (o, h, lo, c, v) in enumerate(GOOD)]
    bars = load_csv(write_csv(tmp_path / "mt.csv", "Date,Time,Open,High,Low,Close,Volume", rows))
    assert bars.timestamps.tolist() == [T2017, T2017 + HOUR_NS, T2017 + 2 * HOUR_NS]


def test_semicolon_separator_and_missing_volume(tmp_path: Path) -> None:
    rows = [f"2017-01-02 0{i}:00;{o};{h};{lo};{c}" for i, (o, h, lo, c, _) in enumerate(GOOD)]
    bars = load_csv(write_csv(tmp_path / "semi.csv", "Date;Open;High;Low;Close", rows))
    assert not bars.has_volume and np.all(bars.volume == 0) and len(bars) == 3


def test_parquet_columns_and_datetime_index(tmp_path: Path) -> None:
    times = pd.date_range("2017-01-02", periods=3, freq="h", tz="UTC")
    frame = pd.DataFrame(GOOD, columns=["Open", "High", "Low", "Close", "Volume"])
    with_column = frame.assign(Timestamp=times)
    with_column.to_parquet(tmp_path / "a.parquet")
    frame.set_index(pd.DatetimeIndex(times, name="when")).to_parquet(tmp_path / "b.parquet")
    for name in ("a.parquet", "b.parquet"):
        bars = load_parquet(tmp_path / name)
        assert bars.timestamps.tolist() == [T2017, T2017 + HOUR_NS, T2017 + 2 * HOUR_NS]
        assert bars.format == "parquet"


def test_missing_columns_lists_found_and_accepted(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "m.csv", "when,Open,Hi,Low,Close", ["2017-01-02,1,2,0.5,1.5"])
    with pytest.raises(DataError) as err:
        load_csv(path)
    text = str(err.value)
    assert text.startswith(f"{path}: missing column(s) time, high")
    assert "['when', 'Open', 'Hi', 'Low', 'Close']" in text and "gmttime" in text and "high: high, h" in text
    assert "hint: rename the columns" in text


@pytest.mark.parametrize(("rows", "message"), [
    (["2017-01-02 01:00,1,2,0.5,1.5,1", "2017-01-02 00:00,1,2,0.5,1.5,1"],
     r"row 2 \(2017-01-02T00:00:00Z\): timestamp goes backwards \(2017-01-02T00:00:00Z vs after 2017-01-02T01:00:00Z \(row 1\)\)"),
    (["2017-01-02 00:00,1,2,0.5,1.5,1", "2017-01-02 00:00,1,2,0.5,1.5,1"], r"row 2 \(2017-01-02T00:00:00Z\): duplicate timestamp"),
    (["2017-01-02 00:00,1,2,0.5,1.5,1", "2017-01-02 01:00,,2,0.5,1.5,1"], r"row 2 \(2017-01-02T01:00:00Z\): open price is not a positive number \(nan vs"),
    (["2017-01-02 00:00,1,2,0.5,-1.5,1"], r"row 1 \(2017-01-02T00:00:00Z\): close price is not a positive number \(-1.5 vs finite and > 0\)"),
    (["2017-01-02 00:00,1,2,0.5,1.5,1", "2017-01-02 01:00,1,0.9,0.5,1.5,1"], r"row 2 .*inconsistent OHLC .*H=0.9"),
    (["2017-01-02 00:00,1,2,0.5,1.5,-3"], r"row 1 .*volume is not a non-negative number \(-3.0"),
    (["2017-01-02 00:00,1,2,abc,1.5,1"], r"row 1 \(2017-01-02T00:00:00Z\): low is not a number \('abc' vs a number\)"),
    (["2017-01-02 00:00,1,2,0.5,1.5,1", "yesterday,1,2,0.5,1.5,1"], r"row 2: cannot parse time 'yesterday' in column 'time'"),
    (["2017-01-02 00:00,1,2,0.5,1.5,1", ",1,2,0.5,1.5,1"], r"row 2: time column 'time' is empty"),
])  # fmt: skip
def test_bad_rows_name_file_row_and_timestamp(tmp_path: Path, rows: list[str], message: str) -> None:
    path = write_csv(tmp_path / "bad.csv", "time,open,high,low,close,volume", rows)
    with pytest.raises(DataError, match=message) as err:
        load_csv(path)
    assert str(err.value).startswith(str(path)) and " — hint: " in str(err.value)


def test_empty_and_header_only_files(tmp_path: Path) -> None:
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(DataError, match=r"e.csv: file is empty \(0 bytes vs a header and data rows\)"):
        load_csv(empty)
    header = write_csv(tmp_path / "h.csv", "time,open,high,low,close", [])
    with pytest.raises(DataError, match="file has no data rows"):
        load_csv(header)
    blank = tmp_path / "p.parquet"
    blank.write_bytes(b"")
    with pytest.raises(DataError, match="file is empty"):
        load_parquet(blank)


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    path.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(DataError, match="cannot read Parquet file"):
        load_parquet(path)


def test_paths_that_cannot_be_loaded(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"data file not found: .*nope.csv .* — hint: check the path, or use 'default'"):
        load_bars(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="data path is a directory"):
        load_bars(tmp_path)
    odd = tmp_path / "bars.xlsx"
    odd.write_text("x")
    with pytest.raises(DataError, match=r"unknown data file type: .*\(.xlsx vs .csv, .txt"):
        load_bars(odd)
