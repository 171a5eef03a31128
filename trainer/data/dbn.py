"""Databento DBN files (``.dbn``, ``.dbn.zst``): OHLCV bars and MBP-10 events aggregated into bars.

Why not ``DBNDecoder`` record by record: a Python object per record costs microseconds and a
large MBP-10 file holds hundreds of millions of events. The file is instead read as a byte
stream in chunks (zstd through pyarrow's streaming decompressor, which *does* fail on a truncated
or corrupt frame), the metadata is decoded by ``databento_dbn.Metadata.decode``, and the records
are viewed in place as numpy structured arrays with the record dtypes databento-dbn publishes
(``MBP10Msg._dtypes``, ``OHLCVMsg._dtypes``). Every record header is checked (length, rtype);
bytes left over at the end of the stream are a truncated file, never a shorter series.

MBP-10 aggregation (decisions):

* Bars are clock-aligned time bars of ``bar_seconds`` on ``ts_recv`` (the primary index), i.e.
  ``start = ts_recv // bar_ns * bar_ns``; an interval without events gives no bar (as in
  Databento's own OHLCV schemas).
* OHLC are from the mid-price ``(bid_00 + ask_00) / 2`` of the book after each event: every
  event has one while the book is two-sided, whereas many bars of a quiet market have no trade.
  A bar in which the book is never two-sided is dropped (counted in ``info``).
* Volume is the sum of trade sizes (action ``T``), split by aggressor side for the flow.
* The book state of a bar is the book after its last event. Order flow: the CKS e_n per level
  (Xu–Gould–Howison multi-level OFI), summed over the bar's events; an empty level counts as
  size 0 at the worst possible price.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import databento_dbn as dbn
import numpy as np
import pyarrow as pa

from trainer.data.bars import (
    BOOK_LEVELS,
    Bars,
    BookState,
    DataError,
    OrderFlow,
    format_ts,
    validate_bars,
)

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
DBN_MAGIC = b"DBN"
SUPPORTED_DBN_VERSIONS = (1, 2, 3)
READ_CHUNK_BYTES = 8 << 20

_NS_PER_SECOND = 1_000_000_000
_MBP10_RTYPE = int(dbn.RType.MBP_10.value)
_OHLCV_RTYPE_BAR_NS = {
    int(dbn.RType.OHLCV_1S.value): _NS_PER_SECOND,
    int(dbn.RType.OHLCV_1M.value): 60 * _NS_PER_SECOND,
    int(dbn.RType.OHLCV_1H.value): 3600 * _NS_PER_SECOND,
    int(dbn.RType.OHLCV_1D.value): 86400 * _NS_PER_SECOND,
    int(dbn.RType.OHLCV_EOD.value): 86400 * _NS_PER_SECOND,
}
_OHLCV_DEPRECATED_RTYPE = int(dbn.RType.OHLCV_DEPRECATED.value)
_SCHEMA_BAR_NS = {
    "ohlcv-1s": _NS_PER_SECOND,
    "ohlcv-1m": 60 * _NS_PER_SECOND,
    "ohlcv-1h": 3600 * _NS_PER_SECOND,
    "ohlcv-1d": 86400 * _NS_PER_SECOND,
    "ohlcv-eod": 86400 * _NS_PER_SECOND,
}
_KNOWN_RTYPES = frozenset(int(r.value) for r in dbn.RType.variants())
_UNDEF_PRICE = int(dbn.UNDEF_PRICE)
_UNDEF_TIMESTAMP = int(dbn.UNDEF_TIMESTAMP)
_PRICE_SCALE = 1.0 / float(dbn.FIXED_PRICE_SCALE)
_BID_MISSING = np.iinfo(np.int64).min  # an empty bid level sorts below every real bid


def _record_dtype(fields: list[tuple[str, str]], ts_out: bool) -> np.dtype:
    """The record dtype, with MBP-10's 10 level blocks viewed as one ``levels`` [10] sub-array.

    databento-dbn lists the levels as 60 flat fields (``bid_px_00`` ...); they are 10 contiguous
    32-byte blocks, so one structured sub-array reads them without stacking 40 strided columns.
    """
    names = [name for name, _ in fields]
    if "bid_px_00" in names:
        head = names.index("bid_px_00")
        per_level = [(name[: -len("_00")], kind) for name, kind in fields[head:] if name.endswith("_00")]
        layout = list(fields[:head]) + [("levels", np.dtype(per_level), (BOOK_LEVELS,))]
        if len(fields) - head != BOOK_LEVELS * len(per_level):
            raise DataError("unexpected MBP-10 record layout in databento-dbn", got=len(fields) - head, expected=BOOK_LEVELS * len(per_level), hint="install a databento-dbn version this trainer supports (>=0.70,<0.80)")
    else:
        layout = list(fields)
    layout += [("ts_out", "u8")] if ts_out else []
    return np.dtype(layout)


@dataclass(frozen=True)
class DbnOptions:
    """How DBN files become bars.

    ``bar_seconds``: MBP-10 aggregation bar length. ``instrument_id``: which instrument to keep
    when a file holds several (required then; a single-instrument file needs none).
    """

    bar_seconds: float = 60.0
    instrument_id: int | None = None

    def bar_ns(self) -> int:
        return round(self.bar_seconds * _NS_PER_SECOND)


ProgressFn = Callable[[int, int], None]


class _ByteStream:
    """The decompressed bytes of a DBN file, with progress counted on the file itself."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.total = path.stat().st_size
        self._raw: BinaryIO = path.open("rb")
        self.compressed = self._raw.read(4) == ZSTD_MAGIC
        self._raw.seek(0)
        self._reader = pa.CompressedInputStream(pa.PythonFile(self._raw, mode="r"), "zstd") if self.compressed else self._raw

    def read(self, n: int) -> bytes:
        try:
            return bytes(self._reader.read(n))
        except OSError as exc:
            raise DataError(
                f"{self.path}: corrupt or truncated zstd stream",
                got=str(exc).strip(), expected="a complete zstd-compressed DBN file",
                hint="re-download the file; it was cut short or damaged",
            ) from exc

    def position(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        self._raw.close()


def _read_exact(stream: _ByteStream, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = stream.read(n - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _read_metadata(stream: _ByteStream) -> dbn.Metadata:
    path = stream.path
    prelude = _read_exact(stream, 8)
    if len(prelude) == 0:
        raise DataError(f"{path}: file is empty", got="0 bytes", expected="a DBN file", hint="check the path or re-download the file")
    if prelude[:3] != DBN_MAGIC:
        raise DataError(
            f"{path}: not a DBN file", got=f"first bytes {prelude[:4]!r}", expected="b'DBN' (or a zstd frame)",
            hint="pass a Databento .dbn or .dbn.zst file, or a CSV/Parquet file with the matching suffix",
        )
    if len(prelude) < 8:
        raise DataError(f"{path}: truncated DBN header", got=f"{len(prelude)} bytes", expected=">= 8 bytes", hint="re-download the file")
    version = prelude[3]
    if version not in SUPPORTED_DBN_VERSIONS:
        raise DataError(f"{path}: unsupported DBN version", got=version, expected=f"one of {SUPPORTED_DBN_VERSIONS}", hint="upgrade the file with the dbn CLI (dbn --upgrade) or re-download it")
    length = int.from_bytes(prelude[4:8], "little")
    body = _read_exact(stream, length)
    if len(body) < length:
        raise DataError(f"{path}: truncated DBN metadata", got=f"{len(body)} bytes", expected=f"{length} bytes", hint="re-download the file")
    try:
        return dbn.Metadata.decode(prelude + body)
    except Exception as exc:  # databento-dbn raises its own error types for any malformed field
        raise DataError(f"{path}: corrupt DBN metadata", got=str(exc).strip(), expected="valid DBN metadata", hint="re-download the file; its header is damaged") from exc


class _RecordReader:
    """Yields structured arrays of the target records, checking every record header."""

    def __init__(self, stream: _ByteStream, targets: frozenset[int], dtype: np.dtype, progress: ProgressFn | None) -> None:
        self.stream = stream
        self.targets = targets
        self.dtype = dtype
        self.size = dtype.itemsize
        self.progress = progress
        self.skipped: Counter[int] = Counter()
        self.records_seen = 0

    def skipped_by_name(self) -> dict[str, int]:
        """Records of other types that were passed over, by rtype name (JSON-friendly keys)."""
        return {dbn.RType.from_int(rtype).name.lower(): count for rtype, count in sorted(self.skipped.items())}

    def _corrupt(self, offset: int, what: str, got: object, expected: object) -> DataError:
        return DataError(
            f"{self.stream.path}: corrupt DBN record {self.records_seen + 1} ({what})", got=got, expected=expected,
            hint=f"the file is damaged near decompressed byte {offset}; re-download it",
        )

    def _split(self, buf: bytes, base: int) -> tuple[np.ndarray, int]:
        """Records of ``buf`` as an array, and how many bytes of ``buf`` they (and skips) used."""
        size = self.size
        raw = np.frombuffer(buf, np.uint8)
        n = len(buf) // size
        lengths = raw[0 : n * size : size]
        rtypes = raw[1 : n * size : size]
        if n and bool(np.all(lengths == size // 4)) and bool(np.all(np.isin(rtypes, list(self.targets)))):
            self.records_seen += n
            return np.frombuffer(buf, self.dtype, count=n), n * size
        keep: list[int] = []
        offset = 0
        while offset < len(buf):
            rec_len = buf[offset] * 4
            if rec_len == 0:
                raise self._corrupt(base + offset, "zero record length", 0, "> 0")
            if offset + rec_len > len(buf):
                break
            rtype = buf[offset + 1]
            if rtype in self.targets:
                if rec_len != size:
                    raise self._corrupt(base + offset, f"rtype {rtype}", f"{rec_len} bytes", f"{size} bytes")
                keep.append(offset)
            elif rtype in _KNOWN_RTYPES:
                self.skipped[rtype] += 1
            else:
                raise self._corrupt(base + offset, "unknown rtype", rtype, "a DBN record type")
            self.records_seen += 1
            offset += rec_len
        if not keep:
            return np.empty(0, self.dtype), offset
        index = np.asarray(keep, np.int64)[:, None] + np.arange(size)  # [n_keep, size]
        return raw[index].reshape(-1).view(self.dtype), offset

    def __iter__(self) -> Iterator[np.ndarray]:
        carry = b""
        consumed = 0
        while True:
            chunk = self.stream.read(READ_CHUNK_BYTES)
            if not chunk:
                break
            buf = carry + chunk
            records, used = self._split(buf, consumed)
            carry = buf[used:]
            consumed += used
            if self.progress is not None:
                self.progress(self.stream.position(), self.stream.total)
            if records.size:
                yield records
        if carry:
            raise DataError(
                f"{self.stream.path}: truncated DBN file: {len(carry)} trailing bytes after record {self.records_seen} do not form a whole record",
                got=f"{len(carry)} bytes", expected=f"{self.size}-byte records",
                hint="the download or copy was cut short; re-download the file",
            )


def _select_instrument(records: np.ndarray, options: DbnOptions, state: dict[str, int], path: Path) -> np.ndarray:
    ids = records["instrument_id"]
    if options.instrument_id is not None:
        return records[ids == options.instrument_id]
    locked = state.setdefault("instrument_id", int(ids[0]))
    if np.any(ids != locked):
        found = sorted({locked, *(int(i) for i in np.unique(ids))})
        raise DataError(
            f"{path}: file holds several instruments", got=f"instrument ids {found}", expected="one instrument",
            hint="choose one with --instrument ID (DbnOptions.instrument_id)",
        )
    return records


def _span(ns: int) -> str:
    """A duration for messages: ``3.6 ms``, ``1 h``, ``2.5 d``."""
    for unit, size in (("d", 86400 * _NS_PER_SECOND), ("h", 3600 * _NS_PER_SECOND), ("min", 60 * _NS_PER_SECOND),
                       ("s", _NS_PER_SECOND), ("ms", 1_000_000), ("µs", 1_000)):  # fmt: skip
        if abs(ns) >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns} ns"


def _check_schema_spacing(ts: np.ndarray, schema: str, label: str) -> None:
    """OHLCV bars of one instrument start at least one bar length apart; closer ones mean the
    timestamps (or the schema) are wrong, and every per-year figure computed from them absurd."""
    bar_ns = _SCHEMA_BAR_NS[schema]
    if schema == "ohlcv-eod" or ts.size < 2:  # end-of-day bars are stamped at each venue's own close
        return
    steps = np.diff(ts.astype(np.int64))
    close = np.flatnonzero((steps > 0) & (steps < bar_ns))  # equal stamps are reported as duplicates later
    if close.size:
        i = int(close[0])
        raise DataError(
            f"{label}: records {i + 1} and {i + 2} are closer than one {schema} bar",
            got=f"{_span(int(steps[i]))} apart ({format_ts(int(ts[i]))} → {format_ts(int(ts[i + 1]))})",
            expected=f">= {_span(bar_ns)}", hint="the timestamps contradict the file's schema; re-export the file or fix its timestamps",
        )  # fmt: skip


def _check_complete(metadata: dbn.Metadata, last_ts: int, bar_len: int, longest_gap: int, records: int, label: str) -> None:
    """A file cut exactly at a record boundary has no partial record to give it away: compare where
    the records stop with the metadata's ``end`` (exclusive; absent in files written without one).

    Markets pause (nights, weekends, holidays), so the data may legitimately stop before ``end``:
    only a silence longer than every pause inside the file (and than one bar) is taken as a cut.
    """
    end = metadata.end
    if end is None or int(end) == _UNDEF_TIMESTAMP:
        return
    missing = int(end) - (last_ts + bar_len)
    allowed = max(longest_gap, bar_len)
    if missing > allowed:
        raise DataError(
            f"{label}: truncated DBN file: the records stop {_span(missing)} before the metadata's end",
            got=f"last record {records:,} at {format_ts(last_ts)}",
            expected=f"records up to {format_ts(int(end))} (no silence longer than {_span(allowed)}, the longest inside the file)",
            hint="the download or copy was cut short at a record boundary; re-download the file",
        )  # fmt: skip


def _check_ts(ts: np.ndarray, previous: int, path: Path, record_base: int, label: str) -> None:
    if ts.size == 0:
        return
    undefined = np.flatnonzero(ts == np.uint64(_UNDEF_TIMESTAMP))
    if undefined.size:
        raise DataError(f"{path}: record {record_base + int(undefined[0]) + 1}: {label} is undefined", got="UNDEF_TIMESTAMP", expected="a timestamp", hint="drop records without a timestamp")
    ts_i = ts.astype(np.int64)
    backwards = np.empty(ts_i.shape, dtype=bool)
    backwards[0] = ts_i[0] < previous
    backwards[1:] = ts_i[1:] < ts_i[:-1]
    bad = np.flatnonzero(backwards)
    if bad.size:
        i = int(bad[0])
        prev_value = previous if i == 0 else int(ts_i[i - 1])
        raise DataError(
            f"{path}: record {record_base + i + 1} ({format_ts(int(ts_i[i]))}): {label} goes backwards",
            got=format_ts(int(ts_i[i])), expected=f">= {format_ts(prev_value)}", hint="the file must be sorted by time; re-export it sorted",
        )


@dataclass
class _BarRows:
    """Per-bar partial aggregates (a chunk's bars; the last may continue in the next chunk)."""

    start: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    buy_volume: np.ndarray
    sell_volume: np.ndarray
    n_events: np.ndarray
    depth_sum: np.ndarray
    ofi: np.ndarray  # [n_bars, BOOK_LEVELS]
    bid_px: np.ndarray  # [n_bars, BOOK_LEVELS], book after the bar's last event (int64 fixed point)
    ask_px: np.ndarray
    bid_sz: np.ndarray
    ask_sz: np.ndarray

    def take(self, index: slice | np.ndarray) -> _BarRows:
        return _BarRows(**{name: getattr(self, name)[index] for name in self.__dataclass_fields__})


def _merge_rows(first: _BarRows, second: _BarRows) -> _BarRows:
    """Combine two one-row partial bars of the same start (a bar split across chunks)."""
    def pick(a: np.ndarray, b: np.ndarray, prefer_first: bool) -> np.ndarray:
        if prefer_first:
            return np.where(np.isnan(a), b, a)
        return np.where(np.isnan(b), a, b)

    return _BarRows(
        start=first.start,
        open=pick(first.open, second.open, prefer_first=True),
        high=np.fmax(first.high, second.high),
        low=np.fmin(first.low, second.low),
        close=pick(first.close, second.close, prefer_first=False),
        volume=first.volume + second.volume,
        buy_volume=first.buy_volume + second.buy_volume,
        sell_volume=first.sell_volume + second.sell_volume,
        n_events=first.n_events + second.n_events,
        depth_sum=first.depth_sum + second.depth_sum,
        ofi=first.ofi + second.ofi,
        bid_px=second.bid_px,
        ask_px=second.ask_px,
        bid_sz=second.bid_sz,
        ask_sz=second.ask_sz,
    )


def _levels(records: np.ndarray, name: str) -> np.ndarray:
    return records["levels"][name]  # [n, BOOK_LEVELS] strided view


class Mbp10BarBuilder:
    """Streams MBP-10 record arrays into time bars; vectorised per chunk (no per-event loop)."""

    def __init__(self, bar_ns: int) -> None:
        if bar_ns <= 0:
            raise DataError("MBP-10 bar length is not positive", got=bar_ns, expected="> 0 ns", hint="pass a positive --bar-seconds")
        self.bar_ns = bar_ns
        self._prev: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._done: list[_BarRows] = []
        self._pending: _BarRows | None = None

    def add(self, records: np.ndarray) -> None:
        if records.size == 0:
            return
        ts = records["ts_recv"].astype(np.int64)  # [n]
        bid_px = _levels(records, "bid_px").astype(np.int64)  # [n, L]
        ask_px = _levels(records, "ask_px").astype(np.int64)
        bid_sz = _levels(records, "bid_sz").astype(np.float64)
        ask_sz = _levels(records, "ask_sz").astype(np.float64)
        bid_ok = bid_px != _UNDEF_PRICE
        ask_ok = ask_px != _UNDEF_PRICE
        bid_cmp = np.where(bid_ok, bid_px, _BID_MISSING)  # empty bid: lowest price, size 0
        bid_q = np.where(bid_ok, bid_sz, 0.0)
        ask_q = np.where(ask_ok, ask_sz, 0.0)  # empty ask keeps UNDEF_PRICE = highest price
        if self._prev is None:
            self._prev = (bid_cmp[0], bid_q[0], ask_px[0], ask_q[0])
        prev_bid = np.concatenate((self._prev[0][None], bid_cmp[:-1]))  # [n, L]
        prev_bq = np.concatenate((self._prev[1][None], bid_q[:-1]))
        prev_ask = np.concatenate((self._prev[2][None], ask_px[:-1]))
        prev_aq = np.concatenate((self._prev[3][None], ask_q[:-1]))
        self._prev = (bid_cmp[-1], bid_q[-1], ask_px[-1], ask_q[-1])
        # Cont–Kukanov–Stoikov e_n per level: [n, L]
        e = (
            (bid_cmp >= prev_bid) * bid_q
            - (bid_cmp <= prev_bid) * prev_bq
            - (ask_px <= prev_ask) * ask_q
            + (ask_px >= prev_ask) * prev_aq
        )
        two_sided = bid_ok[:, 0] & ask_ok[:, 0]
        mid = np.where(two_sided, (bid_px[:, 0] + ask_px[:, 0]) * (0.5 * _PRICE_SCALE), np.nan)  # [n]
        is_trade = records["action"] == b"T"
        size = records["size"].astype(np.float64)
        trade_size = np.where(is_trade, size, 0.0)
        buy = np.where(is_trade & (records["side"] == b"B"), size, 0.0)
        sell = np.where(is_trade & (records["side"] == b"A"), size, 0.0)
        depth = (bid_q + ask_q).mean(axis=1) * 0.5  # [n] XGH average depth per event

        start = ts // self.bar_ns * self.bar_ns
        group = np.flatnonzero(np.diff(start)) + 1
        heads = np.concatenate(([0], group))  # first event of each bar
        tails = np.concatenate((group, [start.size])) - 1  # last event of each bar
        index = np.arange(start.size)
        first_valid = np.minimum.reduceat(np.where(two_sided, index, start.size), heads)
        last_valid = np.maximum.reduceat(np.where(two_sided, index, -1), heads)
        mid_padded = np.append(mid, np.nan)
        rows = _BarRows(
            start=start[heads],
            open=mid_padded[first_valid],
            high=np.fmax.reduceat(mid, heads),
            low=np.fmin.reduceat(mid, heads),
            close=mid_padded[np.where(last_valid < 0, start.size, last_valid)],
            volume=np.add.reduceat(trade_size, heads),
            buy_volume=np.add.reduceat(buy, heads),
            sell_volume=np.add.reduceat(sell, heads),
            n_events=np.diff(np.append(heads, start.size)),
            depth_sum=np.add.reduceat(depth, heads),
            ofi=np.add.reduceat(e, heads, axis=0),
            bid_px=bid_px[tails],
            ask_px=ask_px[tails],
            bid_sz=bid_sz[tails],
            ask_sz=ask_sz[tails],
        )
        if self._pending is not None:
            if self._pending.start[0] == rows.start[0]:
                merged = _merge_rows(self._pending, rows.take(slice(0, 1)))
                rows = _concat_rows([merged, rows.take(slice(1, None))])
            else:
                self._done.append(self._pending)
        self._done.append(rows.take(slice(0, -1)))
        self._pending = rows.take(slice(-1, None))

    def finish(self, source: str, info: dict[str, object]) -> Bars:
        parts = self._done + ([self._pending] if self._pending is not None else [])
        if not parts:
            raise DataError(f"{source}: no MBP-10 records", got=0, expected=">= 1 record", hint="check the file's schema and instrument")
        rows = _concat_rows(parts)
        usable = ~np.isnan(rows.close)
        dropped = int(np.count_nonzero(~usable))
        rows = rows.take(usable)
        if rows.start.size == 0:
            raise DataError(f"{source}: the book is never two-sided", got="no bid and ask at level 1", expected="a two-sided book", hint="check the instrument; a mid-price needs both sides")
        bid_ok = rows.bid_px != _UNDEF_PRICE
        ask_ok = rows.ask_px != _UNDEF_PRICE
        book = BookState(
            bid_px=np.where(bid_ok, rows.bid_px * _PRICE_SCALE, np.nan),
            ask_px=np.where(ask_ok, rows.ask_px * _PRICE_SCALE, np.nan),
            bid_sz=np.where(bid_ok, rows.bid_sz, 0.0),
            ask_sz=np.where(ask_ok, rows.ask_sz, 0.0),
        )
        flow = OrderFlow(
            ofi=rows.ofi,
            mean_depth=rows.depth_sum / rows.n_events,
            buy_volume=rows.buy_volume,
            sell_volume=rows.sell_volume,
            n_events=rows.n_events.astype(np.int64),
        )
        info = dict(info, bars_without_two_sided_book=dropped, events=int(rows.n_events.sum()))
        bars = Bars(
            timestamps=rows.start.astype(np.int64),
            open=rows.open,
            high=rows.high,
            low=rows.low,
            close=rows.close,
            volume=rows.volume,
            bar_ns=self.bar_ns,
            source=source,
            format="dbn-mbp-10",
            has_volume=bool(rows.volume.sum() > 0),
            book=book,
            flow=flow,
            columns=("mid OHLC", "trade volume", "book 10 levels", "ofi 10 levels"),
            info=info,
        )
        return validate_bars(bars)


def _concat_rows(parts: list[_BarRows]) -> _BarRows:
    names = list(_BarRows.__dataclass_fields__)
    return _BarRows(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in names})


def load_dbn(path: str | Path, options: DbnOptions | None = None, *, progress: ProgressFn | None = None, source: str | None = None) -> Bars:
    """Bars from a DBN file of schema ohlcv-1s/1m/1h/1d/eod or mbp-10 (plain or zstd)."""
    options = options or DbnOptions()
    path = Path(path)
    label = source or str(path)
    stream = _ByteStream(path)
    try:
        metadata = _read_metadata(stream)
        schema = None if metadata.schema is None else str(metadata.schema)
        info: dict[str, object] = {
            "dbn_version": int(metadata.version),
            "dataset": str(metadata.dataset),
            "schema": schema,
            "compressed": stream.compressed,
            "symbols": [str(s) for s in (metadata.symbols or [])],
        }
        if schema == "mbp-10":
            return _load_mbp10(stream, metadata, options, label, info, progress)
        if schema in _SCHEMA_BAR_NS:
            return _load_ohlcv(stream, metadata, options, label, info, progress)
        raise DataError(
            f"{label}: unsupported DBN schema", got=schema, expected="mbp-10 or ohlcv-1s/1m/1h/1d/eod",
            hint="download the data in the mbp-10 or an ohlcv schema",
        )
    finally:
        stream.close()


def _load_mbp10(stream: _ByteStream, metadata: dbn.Metadata, options: DbnOptions, label: str, info: dict[str, object], progress: ProgressFn | None) -> Bars:
    dtype = _record_dtype(dbn.MBP10Msg._dtypes, bool(metadata.ts_out))
    reader = _RecordReader(stream, frozenset({_MBP10_RTYPE}), dtype, progress)
    builder = Mbp10BarBuilder(options.bar_ns())
    selection: dict[str, int] = {}
    last_ts = np.iinfo(np.int64).min
    longest_gap = 0  # the longest silence between two kept events (the cut check's tolerance)
    for records in reader:
        kept = _select_instrument(records, options, selection, stream.path)
        _check_ts(kept["ts_recv"], last_ts, stream.path, reader.records_seen - records.size, "ts_recv")
        if kept.size:
            ts = kept["ts_recv"].astype(np.int64)
            if last_ts != np.iinfo(np.int64).min:
                longest_gap = max(longest_gap, int(ts[0]) - last_ts)
            if ts.size > 1:
                longest_gap = max(longest_gap, int(np.diff(ts).max()))
            last_ts = int(ts[-1])
        builder.add(kept)
    if last_ts != np.iinfo(np.int64).min:
        _check_complete(metadata, last_ts, 0, longest_gap, reader.records_seen, label)
    info["records"] = reader.records_seen
    info["skipped_records"] = reader.skipped_by_name()
    info["instrument_id"] = options.instrument_id if options.instrument_id is not None else selection.get("instrument_id")
    return builder.finish(label, info)


def _load_ohlcv(stream: _ByteStream, metadata: dbn.Metadata, options: DbnOptions, label: str, info: dict[str, object], progress: ProgressFn | None) -> Bars:
    dtype = _record_dtype(dbn.OHLCVMsg._dtypes, bool(metadata.ts_out))
    targets = frozenset(_OHLCV_RTYPE_BAR_NS) | {_OHLCV_DEPRECATED_RTYPE}
    reader = _RecordReader(stream, targets, dtype, progress)
    selection: dict[str, int] = {}
    parts = [_select_instrument(records, options, selection, stream.path) for records in reader]
    records = np.concatenate(parts) if parts else np.empty(0, dtype)
    if records.size == 0:
        raise DataError(f"{label}: no OHLCV records", got=0, expected=">= 1 record", hint="check the file's schema and instrument")
    _check_ts(records["ts_event"], np.iinfo(np.int64).min, stream.path, 0, "ts_event")
    _check_schema_spacing(records["ts_event"], str(metadata.schema), label)
    bar_ns = _SCHEMA_BAR_NS[str(metadata.schema)]
    ts = records["ts_event"].astype(np.int64)
    longest_gap = int(np.diff(ts).max()) if ts.size > 1 else 0
    _check_complete(metadata, int(ts[-1]), bar_ns, longest_gap, reader.records_seen, label)
    info["records"] = reader.records_seen
    info["skipped_records"] = reader.skipped_by_name()
    info["instrument_id"] = options.instrument_id if options.instrument_id is not None else selection.get("instrument_id")
    bars = Bars(
        timestamps=records["ts_event"].astype(np.int64),
        open=records["open"] * _PRICE_SCALE,
        high=records["high"] * _PRICE_SCALE,
        low=records["low"] * _PRICE_SCALE,
        close=records["close"] * _PRICE_SCALE,
        volume=records["volume"].astype(np.float64),
        bar_ns=bar_ns,
        source=label,
        format=f"dbn-{metadata.schema}",
        columns=("open", "high", "low", "close", "volume"),
        info=info,
    )
    return validate_bars(bars)
