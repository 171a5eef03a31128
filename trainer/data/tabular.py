"""OHLCV bars from CSV and Parquet files.

Column names match case-insensitively, ignoring spaces, ``_`` and ``-`` (``Gmt time``,
``ts_event`` and ``TimeStamp`` all work). Times parse from strings in the formats listed in
:data:`TIME_FORMATS`, from datetime columns (tz-aware ones converted to UTC, naive ones taken as
UTC) or from integer epochs (unit chosen by magnitude). Volume is optional: without it the bars
carry zero volume, ``has_volume`` is False and the volume features are zero.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from trainer.data.bars import Bars, DataError, format_ts, infer_bar_ns, validate_bars

#: Accepted spellings per field, after normalisation (lower case, no space / ``_`` / ``-``).
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "time": ("timestamp", "time", "date", "datetime", "gmttime", "utctime", "tsevent", "ts", "opentime", "timeutc"),
    "open": ("open", "o"),
    "high": ("high", "h"),
    "low": ("low", "l"),
    "close": ("close", "c"),
    "volume": ("volume", "vol", "v"),
}

#: String time formats tried in order; the first that parses the whole column wins.
#: ``%d.%m.%Y %H:%M:%S.%f`` is gym-anytrading's (and Dukascopy's) ``Gmt time`` format.
TIME_FORMATS: tuple[str, ...] = (
    "%d.%m.%Y %H:%M:%S.%f",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y",
    "ISO8601",
    "%Y.%m.%d %H:%M:%S",
    "%Y.%m.%d %H:%M",
    "%Y.%m.%d",
    "%Y%m%d %H:%M:%S",
    "%Y%m%d",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y",
)

_EPOCH_UNIT_LIMITS = ((1e11, "s"), (1e14, "ms"), (1e17, "us"))


def _normalise(name: str) -> str:
    return "".join(ch for ch in str(name).strip().lower() if ch not in " _-")


def _alias_list(field_name: str) -> str:
    return ", ".join(COLUMN_ALIASES[field_name])


def _match_columns(frame: pd.DataFrame, source: str) -> dict[str, str]:
    """Map each field to the frame's column; missing required fields are one error naming all."""
    by_norm: dict[str, str] = {}
    for col in frame.columns:
        by_norm.setdefault(_normalise(col), str(col))
    found: dict[str, str] = {}
    for field_name, aliases in COLUMN_ALIASES.items():
        for alias in aliases:
            if alias in by_norm:
                found[field_name] = by_norm[alias]
                break
    missing = [f for f in ("time", "open", "high", "low", "close") if f not in found]
    if "time" in missing and isinstance(frame.index, pd.DatetimeIndex):
        missing.remove("time")  # a pandas-written Parquet file keeps its time in the index
    if missing:
        accepted = "; ".join(f"{f}: {_alias_list(f)}" for f in missing)
        raise DataError(
            f"{source}: missing column(s) {', '.join(missing)}",
            got=f"columns {[str(c) for c in frame.columns]}",
            expected=f"accepted names (case-insensitive) {accepted}",
            hint="rename the columns to one of the accepted names",
        )
    return found


def _epoch_to_ns(values: np.ndarray) -> np.ndarray:
    first = float(np.abs(values[0]))
    for limit, unit in _EPOCH_UNIT_LIMITS:
        if first < limit:
            return pd.to_datetime(values, unit=unit, utc=True).as_unit("ns").asi8
    return values.astype(np.int64)


def _parse_times(column: pd.Series, name: str, source: str) -> np.ndarray:
    """int64 ns UTC per row; an unparseable or missing value is an error naming its row."""
    null = column.isna().to_numpy()
    if null.any():
        row = int(np.flatnonzero(null)[0])
        raise DataError(
            f"{source}: row {row + 1}: time column {name!r} is empty",
            got="missing value", expected="a timestamp",
            hint="remove rows without a time or fill them in",
        )
    if isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(column):
        return pd.to_datetime(column, utc=True).dt.as_unit("ns").astype("int64").to_numpy()
    if pd.api.types.is_integer_dtype(column):
        return _epoch_to_ns(column.to_numpy(np.int64))
    text = column.astype(str).str.strip()
    if text.str.fullmatch(r"-?\d{9,}").all():  # an epoch read as text (CSV columns are read as text)
        return _epoch_to_ns(text.astype(np.int64).to_numpy())
    for fmt in TIME_FORMATS:
        try:
            parsed = pd.to_datetime(text, format=fmt, utc=True)
        except (ValueError, TypeError, OverflowError):
            continue
        return parsed.dt.as_unit("ns").astype("int64").to_numpy()
    coerced = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    bad = np.flatnonzero(coerced.isna().to_numpy())
    row = int(bad[0]) if bad.size else 0
    raise DataError(
        f"{source}: row {row + 1}: cannot parse time {text.iloc[row]!r} in column {name!r}",
        got=text.iloc[row], expected=f"one of the formats {', '.join(TIME_FORMATS)} or an integer epoch",
        hint="write times as ISO 8601 (2017-01-02 13:00:00) or day-first with dots (02.01.2017 13:00:00.000)",
    )


def _numeric(column: pd.Series, field_name: str, source: str, times: np.ndarray) -> np.ndarray:
    values = pd.to_numeric(column, errors="coerce").to_numpy(np.float64)
    not_number = np.isnan(values) & column.notna().to_numpy()
    if not_number.any():
        row = int(np.flatnonzero(not_number)[0])
        raise DataError(
            f"{source}: row {row + 1} ({format_ts(int(times[row]))}): {field_name} is not a number",
            got=repr(column.iloc[row]), expected="a number",
            hint="repair or remove the row",
        )
    return values


_CLOCK_ONLY = r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?"


def _time_column(frame: pd.DataFrame, name: str) -> pd.Series:
    """The time column; a separate ``Date`` + clock-only ``Time`` pair (MetaTrader exports) is joined."""
    by_norm = {_normalise(c): str(c) for c in frame.columns}
    date_col, time_col = by_norm.get("date"), by_norm.get("time")
    if date_col is None or time_col is None or name not in (date_col, time_col):
        return frame[name]
    clock = frame[time_col].astype(str).str.strip()
    if not clock.str.fullmatch(_CLOCK_ONLY).all():
        return frame[name]
    return frame[date_col].astype(str).str.strip() + " " + clock


def _frame_to_bars(frame: pd.DataFrame, source: str, fmt: str) -> Bars:
    if frame.shape[0] == 0:
        raise DataError(f"{source}: file has no data rows", got="0 rows", expected=">= 1 row", hint="check the file; only a header was found")
    found = _match_columns(frame, source)
    if "time" in found:
        times = _parse_times(_time_column(frame, found["time"]), found["time"], source)
    else:
        times = _parse_times(frame.index.to_series(index=range(frame.shape[0])), "index", source)
    prices = {f: _numeric(frame[found[f]], f, source, times) for f in ("open", "high", "low", "close")}
    has_volume = "volume" in found
    volume = _numeric(frame[found["volume"]], "volume", source, times) if has_volume else np.zeros(times.shape[0])
    bars = Bars(
        timestamps=times,
        volume=volume,
        bar_ns=infer_bar_ns(times),
        source=source,
        format=fmt,
        has_volume=has_volume,
        columns=tuple(str(c) for c in frame.columns),
        info={"column_map": dict(found)},
        **prices,
    )
    return validate_bars(bars)


def _sniff_separator(path: Path) -> str:
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        header = handle.readline()
    counts = {sep: header.count(sep) for sep in (",", ";", "\t", "|")}
    best = max(counts, key=lambda sep: counts[sep])
    return best if counts[best] else ","


def load_csv(path: str | Path, *, source: str | None = None) -> Bars:
    """Bars from a delimited text file (``,`` ``;`` tab or ``|``, detected from the header)."""
    path = Path(path)
    label = source or str(path)
    if path.stat().st_size == 0:
        raise DataError(f"{label}: file is empty", got="0 bytes", expected="a header and data rows", hint="check the path or re-export the data")
    try:
        frame = pd.read_csv(path, sep=_sniff_separator(path), dtype=str, keep_default_na=True)
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{label}: file is empty", got="no header", expected="a header and data rows", hint="check the path or re-export the data") from exc
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{label}: cannot parse as CSV", got=str(exc).strip().splitlines()[-1], expected="a delimited text file", hint="check that the file is CSV (or pass a .parquet/.dbn file)") from exc
    return _frame_to_bars(frame, label, "csv")


def load_parquet(path: str | Path, *, source: str | None = None) -> Bars:
    """Bars from a Parquet file (a datetime index written by pandas also serves as the time)."""
    path = Path(path)
    label = source or str(path)
    if path.stat().st_size == 0:
        raise DataError(f"{label}: file is empty", got="0 bytes", expected="a Parquet file", hint="check the path or re-export the data")
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{label}: cannot read Parquet file", got=str(exc).strip().splitlines()[0], expected="a valid Parquet file", hint="re-export the file; it may be truncated") from exc
    return _frame_to_bars(frame, label, "parquet")
