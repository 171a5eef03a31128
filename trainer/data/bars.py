"""The common bar series every loader produces, and the checks every series must pass.

Loaders differ (CSV, Parquet, Databento DBN OHLCV, MBP-10 events aggregated into bars) but the
feature builder, the cache and the environment see one shape: :class:`Bars`. Validation lives
here, once, so that a bad row gets the same clear error whatever file it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from trainer.errors import UserError

#: Depth of the MBP-10 book carried per bar.
BOOK_LEVELS = 10


class DataError(UserError):
    """Bad market data: names the file and, where there is one, the 1-based data row."""


def format_ts(ts_ns: int) -> str:
    """An ISO-8601 UTC rendering of a nanosecond timestamp, for error messages and reports."""
    seconds, nanos = divmod(int(ts_ns), 1_000_000_000)
    base = np.datetime64(seconds, "s").astype(str)
    return f"{base}.{nanos:09d}Z" if nanos else f"{base}Z"


@dataclass(frozen=True, eq=False)
class BookState:
    """The MBP-10 book at each bar's close (after the bar's last event), ``[T, BOOK_LEVELS]`` each.

    Prices are in price units (not DBN fixed-point); an empty level has price NaN and size 0.
    """

    bid_px: np.ndarray
    ask_px: np.ndarray
    bid_sz: np.ndarray
    ask_sz: np.ndarray

    def take(self, index: slice | np.ndarray) -> BookState:
        return BookState(self.bid_px[index], self.ask_px[index], self.bid_sz[index], self.ask_sz[index])


@dataclass(frozen=True, eq=False)
class OrderFlow:
    """Per-bar aggregates of the MBP-10 events inside each bar (all ``[T]`` unless noted).

    ``ofi`` is the Cont–Kukanov–Stoikov order-flow imbalance e_n applied per level (Xu–Gould–Howison
    multi-level OFI) and summed over the bar's events, in size units, ``[T, BOOK_LEVELS]``.
    ``mean_depth`` is the XGH normaliser: the average over the bar's events and the 10 levels of
    (bid size + ask size) / 2. Trade volume is split by aggressor side.
    """

    ofi: np.ndarray
    mean_depth: np.ndarray
    buy_volume: np.ndarray
    sell_volume: np.ndarray
    n_events: np.ndarray

    def take(self, index: slice | np.ndarray) -> OrderFlow:
        return OrderFlow(
            self.ofi[index],
            self.mean_depth[index],
            self.buy_volume[index],
            self.sell_volume[index],
            self.n_events[index],
        )


@dataclass(frozen=True, eq=False)
class Bars:
    """A validated bar series.

    ``timestamps`` are int64 nanoseconds since the Unix epoch, UTC, and mark each bar's *start*
    (the convention of Databento OHLCV and of the embedded EURUSD file). Prices and volume are
    float64. ``bar_ns`` is the nominal bar length (from the DBN schema, the aggregation setting,
    or the most common timestamp step of a CSV/Parquet file); the multi-timeframe features use it.
    """

    timestamps: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    bar_ns: int
    source: str
    format: str
    has_volume: bool = True
    book: BookState | None = None
    flow: OrderFlow | None = None
    columns: tuple[str, ...] = ()
    info: Mapping[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.timestamps.shape[0])

    @property
    def has_book(self) -> bool:
        return self.book is not None

    def take(self, index: slice | np.ndarray) -> Bars:
        """A sub-series (same metadata); used by folds and by the no-look-ahead tests."""
        return Bars(
            timestamps=self.timestamps[index],
            open=self.open[index],
            high=self.high[index],
            low=self.low[index],
            close=self.close[index],
            volume=self.volume[index],
            bar_ns=self.bar_ns,
            source=self.source,
            format=self.format,
            has_volume=self.has_volume,
            book=None if self.book is None else self.book.take(index),
            flow=None if self.flow is None else self.flow.take(index),
            columns=self.columns,
            info=self.info,
        )


def infer_bar_ns(timestamps: np.ndarray) -> int:
    """The most common positive step between consecutive timestamps (weekend gaps do not win)."""
    if timestamps.shape[0] < 2:
        return 0
    steps = np.diff(timestamps)
    values, counts = np.unique(steps[steps > 0], return_counts=True)
    return int(values[np.argmax(counts)]) if values.size else 0


def _row_error(source: str, row: int, ts: int | None, what: str, *, got: object, expected: object, hint: str) -> DataError:
    where = f"{source}: row {row + 1}"
    if ts is not None:
        where += f" ({format_ts(ts)})"
    return DataError(f"{where}: {what}", got=got, expected=expected, hint=hint)


def validate_bars(bars: Bars, *, row_offset: int = 0) -> Bars:
    """Check the series and raise a :class:`DataError` on the first bad row; return it unchanged.

    Rows are reported 1-based over the data rows (a CSV header is not a row), plus ``row_offset``.
    Decisions: timestamps must be strictly increasing (unsorted or duplicated rows are an error,
    never silently sorted or dropped); prices must be finite and > 0; ``low <= min(open, close)``
    and ``high >= max(open, close)`` must hold (a violation means swapped columns or a corrupt
    row); volume must be finite and >= 0.
    """
    source = bars.source
    n = len(bars)
    if n == 0:
        raise DataError(f"{source}: no bars", got=0, expected=">= 1 bar", hint="check that the file has data rows")
    ts = bars.timestamps
    for name in ("open", "high", "low", "close", "volume"):
        arr = getattr(bars, name)
        if arr.shape != (n,):
            raise DataError(f"{source}: column {name!r} has the wrong length", got=arr.shape, expected=(n,), hint="rebuild the bar series")
    if n > 1:
        steps = np.diff(ts)
        bad = np.flatnonzero(steps <= 0)
        if bad.size:
            i = int(bad[0]) + 1
            kind = "duplicate timestamp" if steps[i - 1] == 0 else "timestamp goes backwards"
            raise _row_error(
                source, i + row_offset, int(ts[i]), kind,
                got=format_ts(int(ts[i])), expected=f"after {format_ts(int(ts[i - 1]))} (row {i + row_offset})",
                hint="sort the file by time and remove duplicate rows",
            )
    for name in ("open", "high", "low", "close"):
        arr = getattr(bars, name)
        bad = np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))
        if bad.size:
            i = int(bad[0])
            raise _row_error(
                source, i + row_offset, int(ts[i]), f"{name} price is not a positive number",
                got=float(arr[i]), expected="finite and > 0",
                hint="drop or repair the row; prices must be positive numbers",
            )
    body_hi = np.maximum(bars.open, bars.close)
    body_lo = np.minimum(bars.open, bars.close)
    bad = np.flatnonzero((bars.high < body_hi) | (bars.low > body_lo))
    if bad.size:
        i = int(bad[0])
        raise _row_error(
            source, i + row_offset, int(ts[i]), "inconsistent OHLC (high/low do not bound open/close)",
            got=f"O={bars.open[i]} H={bars.high[i]} L={bars.low[i]} C={bars.close[i]}",
            expected="low <= min(open, close) <= max(open, close) <= high",
            hint="check that the open/high/low/close columns are not swapped, or repair the row",
        )
    bad = np.flatnonzero(~(np.isfinite(bars.volume) & (bars.volume >= 0)))
    if bad.size:
        i = int(bad[0])
        raise _row_error(
            source, i + row_offset, int(ts[i]), "volume is not a non-negative number",
            got=float(bars.volume[i]), expected="finite and >= 0",
            hint="repair the row, or drop the volume column to load the file without volume",
        )
    return bars
