"""DBN loading on real files written by databento-dbn's encoder: values, aggregation, errors."""

from __future__ import annotations

import math
import time
from pathlib import Path

import databento_dbn as dbn
import fxdata_fixtures as fx
import numpy as np
import pytest

from trainer.data import DataError, DbnOptions, load_bars, load_dbn
from trainer.data import dbn as dbn_module

S = fx.SECOND
BOOK_A = {"bids": [(100.00, 10), (99.75, 7)], "asks": [(100.50, 5)]}


def hand_events() -> list[fx.Event]:
    """Seven events over three 60 s bars plus a lone bar after a gap; expected values below."""
    return [
        fx.Event(fx.T0 + 1 * S, **BOOK_A, action=dbn.Action.ADD, side=dbn.Side.BID),
        fx.Event(fx.T0 + 10 * S, bids=[(100.00, 12), (99.75, 7)], asks=[(100.50, 5)]),
        fx.Event(fx.T0 + 20 * S, bids=[(100.00, 12), (99.75, 7)], asks=[(100.50, 5)], action=dbn.Action.TRADE, side=dbn.Side.ASK, price=100.0, size=3),
        fx.Event(fx.T0 + 30 * S, bids=[(100.00, 12), (99.75, 7)], asks=[(100.25, 4), (100.50, 5)], action=dbn.Action.ADD, side=dbn.Side.ASK),
        fx.Event(fx.T0 + 61 * S, bids=[(100.00, 12), (99.75, 7)], asks=[(100.25, 4), (100.50, 5)], action=dbn.Action.TRADE, side=dbn.Side.BID, price=100.25, size=2),
        fx.Event(fx.T0 + 62 * S, bids=[(100.00, 12), (99.75, 7)], asks=[(100.25, 2), (100.50, 5)], action=dbn.Action.CANCEL, side=dbn.Side.ASK),
        fx.Event(fx.T0 + 150 * S, bids=[(99.75, 7)], asks=[(100.25, 2), (100.50, 5)], action=dbn.Action.CANCEL, side=dbn.Side.BID),
        fx.Event(fx.T0 + 300 * S, bids=[(99.75, 7)], asks=[(100.25, 2), (100.50, 5)]),
    ]


def write_events(path: Path, events: list[fx.Event], *, compress: bool = False) -> Path:
    return fx.write_dbn(path, dbn.Schema.MBP_10, b"".join(fx.mbp10_record(e) for e in events), compress=compress)


def test_fixture_numpy_encoding_is_byte_identical_to_record_objects() -> None:
    raw = fx.random_mbp10(3, seed=1)
    records = np.frombuffer(raw, fx.MBP10_DTYPE)
    decoder = dbn.DBNDecoder()
    decoder.write(fx.metadata(dbn.Schema.MBP_10) + raw)
    decoded = decoder.decode()[1:]
    assert [bytes(r) for r in decoded] == [records[i].tobytes() for i in range(3)]


@pytest.mark.parametrize("compress", [False, True])
def test_mbp10_bars_match_hand_computed_example(tmp_path: Path, compress: bool) -> None:
    path = write_events(tmp_path / ("book.dbn.zst" if compress else "book.dbn"), hand_events(), compress=compress)
    bars = load_dbn(path, DbnOptions(bar_seconds=60))
    minute = 60 * S
    assert bars.timestamps.tolist() == [fx.T0, fx.T0 + minute, fx.T0 + 2 * minute, fx.T0 + 5 * minute]
    assert bars.bar_ns == minute and bars.format == "dbn-mbp-10" and bars.info["compressed"] is compress
    # OHLC from the mid after each event: 100.25, 100.25, 100.25, 100.125 | 100.125 ×2 | 100.0 | 100.0
    np.testing.assert_allclose(bars.open, [100.25, 100.125, 100.0, 100.0])
    np.testing.assert_allclose(bars.high, [100.25, 100.125, 100.0, 100.0])
    np.testing.assert_allclose(bars.low, [100.125, 100.125, 100.0, 100.0])
    np.testing.assert_allclose(bars.close, [100.125, 100.125, 100.0, 100.0])
    np.testing.assert_allclose(bars.volume, [3, 2, 0, 0])
    flow = bars.flow
    np.testing.assert_allclose(flow.sell_volume, [3, 0, 0, 0])
    np.testing.assert_allclose(flow.buy_volume, [0, 2, 0, 0])
    assert flow.n_events.tolist() == [4, 2, 1, 1]
    # CKS e_n per level: bar 0: bid size 10→12 (+2), ask improves to 100.25×4 (−4) | level 1 ask
    # appears at 100.50×5 (−5); bar 1: ask size 4→2 at the same price (+2); bar 2: best bid
    # drops 100.00×12 → 99.75×7 (−12) and level-1 bid empties (−7).
    np.testing.assert_allclose(flow.ofi[:, 0], [-2, 2, -12, 0])
    np.testing.assert_allclose(flow.ofi[:, 1], [-5, 0, -7, 0])
    assert np.all(flow.ofi[:, 2:] == 0)
    # XGH depth: mean over levels of (bid+ask)/2 per event → 1.1, 1.2, 1.2, 1.4 in bar 0
    assert flow.mean_depth[0] == pytest.approx((1.1 + 1.2 + 1.2 + 1.4) / 4)
    book = bars.book
    np.testing.assert_allclose(book.bid_px[0, :2], [100.0, 99.75])
    np.testing.assert_allclose(book.ask_px[0, :2], [100.25, 100.50])
    np.testing.assert_allclose(book.bid_sz[0, :2], [12, 7])
    np.testing.assert_allclose(book.ask_sz[0, :2], [4, 5])
    assert math.isnan(book.bid_px[2, 1]) and book.bid_sz[2, 1] == 0
    assert np.all(np.isnan(book.bid_px[:, 2:])) and np.all(book.ask_sz[:, 2:] == 0)


def test_mbp10_bars_do_not_depend_on_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "rand.dbn"
    fx.write_dbn(path, dbn.Schema.MBP_10, fx.random_mbp10(5000, seed=3, events_per_second=50))
    whole = load_dbn(path, DbnOptions(bar_seconds=7))
    monkeypatch.setattr(dbn_module, "READ_CHUNK_BYTES", 368 * 37 + 11)  # bars and records split across chunks
    pieces = load_dbn(path, DbnOptions(bar_seconds=7))
    for name in ("timestamps", "open", "high", "low", "close", "volume"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(pieces, name))
    np.testing.assert_allclose(whole.flow.ofi, pieces.flow.ofi)
    np.testing.assert_allclose(whole.flow.mean_depth, pieces.flow.mean_depth, rtol=1e-12)
    np.testing.assert_array_equal(whole.book.bid_sz, pieces.book.bid_sz)
    assert whole.flow.n_events.sum() == 5000


def test_mbp10_ofi_matches_a_per_event_reference(tmp_path: Path) -> None:
    raw = fx.random_mbp10(2000, seed=5, events_per_second=20)
    path = fx.write_dbn(tmp_path / "r.dbn", dbn.Schema.MBP_10, raw)
    bars = load_dbn(path, DbnOptions(bar_seconds=10))
    rec = np.frombuffer(raw, fx.MBP10_DTYPE)
    expected = np.zeros((len(bars), 10))
    bar_of = {int(t): i for i, t in enumerate(bars.timestamps)}
    for n in range(1, rec.size):  # the textbook loop, one event at a time
        i = bar_of[int(rec["ts_recv"][n]) // (10 * S) * (10 * S)]
        for k in range(10):
            pb, pb0 = rec[f"bid_px_{k:02d}"][n], rec[f"bid_px_{k:02d}"][n - 1]
            pa, pa0 = rec[f"ask_px_{k:02d}"][n], rec[f"ask_px_{k:02d}"][n - 1]
            qb, qb0 = float(rec[f"bid_sz_{k:02d}"][n]), float(rec[f"bid_sz_{k:02d}"][n - 1])
            qa, qa0 = float(rec[f"ask_sz_{k:02d}"][n]), float(rec[f"ask_sz_{k:02d}"][n - 1])
            expected[i, k] += (pb >= pb0) * qb - (pb <= pb0) * qb0 - (pa <= pa0) * qa + (pa >= pa0) * qa0
    np.testing.assert_allclose(bars.flow.ofi, expected)


@pytest.mark.parametrize(("rtype", "schema", "bar_ns"), [
    (dbn.RType.OHLCV_1H, dbn.Schema.OHLCV_1H, 3600 * S),
    (dbn.RType.OHLCV_1M, dbn.Schema.OHLCV_1M, 60 * S),
    (dbn.RType.OHLCV_1D, dbn.Schema.OHLCV_1D, 86400 * S),
])  # fmt: skip
@pytest.mark.parametrize("compress", [False, True])
def test_ohlcv_round_trip(tmp_path: Path, rtype: dbn.RType, schema: dbn.Schema, bar_ns: int, compress: bool) -> None:
    rows = [(fx.T0 + i * bar_ns, 100 + i, 101.5 + i, 99.25 + i, 100.75 + i, 1000 * (i + 1)) for i in range(5)]
    records = b"".join(fx.ohlcv_record(*row, rtype=rtype) for row in rows)
    path = fx.write_dbn(tmp_path / ("o.dbn.zst" if compress else "o.dbn"), schema, records, compress=compress)
    bars = load_bars(path)
    assert bars.timestamps.tolist() == [r[0] for r in rows]
    np.testing.assert_allclose(bars.open, [r[1] for r in rows])
    np.testing.assert_allclose(bars.high, [r[2] for r in rows])
    np.testing.assert_allclose(bars.low, [r[3] for r in rows])
    np.testing.assert_allclose(bars.close, [r[4] for r in rows])
    np.testing.assert_allclose(bars.volume, [r[5] for r in rows])
    assert bars.bar_ns == bar_ns and bars.book is None and bars.format == f"dbn-{schema}"


def test_records_of_other_types_are_skipped_and_counted(tmp_path: Path) -> None:
    mapping = dbn.SymbolMappingMsg(
        publisher_id=1, instrument_id=7, ts_event=fx.T0, stype_in=dbn.SType.RAW_SYMBOL, stype_in_symbol="ESZ3",
        stype_out=dbn.SType.INSTRUMENT_ID, stype_out_symbol="7", start_ts=fx.T0, end_ts=fx.T0 + 10**12,
    )
    body = bytes(mapping) + b"".join(fx.mbp10_record(e) for e in hand_events())
    bars = load_dbn(fx.write_dbn(tmp_path / "mixed.dbn", dbn.Schema.MBP_10, body))
    assert len(bars) == 4
    assert bars.info["skipped_records"] == {"symbol_mapping": 1}


def test_truncated_dbn_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write_events(tmp_path / "cut.dbn", hand_events())
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError) as err:
        load_dbn(path)
    assert str(path) in str(err.value) and "truncated" in str(err.value)
    assert "268 trailing bytes" in str(err.value) and "re-download" in str(err.value)


def test_truncated_zstd_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.dbn.zst"
    fx.write_dbn(path, dbn.Schema.MBP_10, fx.random_mbp10(3000, seed=2), compress=True)
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(DataError, match="truncated") as err:
        load_dbn(path)
    assert str(path) in str(err.value)


def test_corrupt_zstd_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.dbn.zst"
    fx.write_dbn(path, dbn.Schema.MBP_10, fx.random_mbp10(3000, seed=2), compress=True)
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match="corrupt or truncated zstd"):
        load_dbn(path)


def test_corrupt_metadata_is_an_error(tmp_path: Path) -> None:
    data = bytearray(fx.metadata(dbn.Schema.MBP_10) + fx.mbp10_record(hand_events()[0]))
    data[8:40] = b"\xff" * 32  # dataset and schema fields overwritten
    path = tmp_path / "meta.dbn"
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match="corrupt DBN metadata") as err:
        load_dbn(path)
    assert str(path) in str(err.value) and "hint:" in str(err.value)


def test_corrupt_record_header_is_an_error(tmp_path: Path) -> None:
    body = bytearray(b"".join(fx.mbp10_record(e) for e in hand_events()))
    body[368 * 2] = 0  # third record's length byte
    path = fx.write_dbn(tmp_path / "rec.dbn", dbn.Schema.MBP_10, bytes(body))
    with pytest.raises(DataError, match=r"corrupt DBN record 3 \(zero record length\)"):
        load_dbn(path)


def test_empty_and_non_dbn_files_are_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.dbn"
    empty.write_bytes(b"")
    with pytest.raises(DataError, match="file is empty"):
        load_dbn(empty)
    other = tmp_path / "csv.dbn"
    other.write_text("time,open\n")
    with pytest.raises(DataError, match="not a DBN file"):
        load_dbn(other)
    header_only = fx.write_dbn(tmp_path / "none.dbn", dbn.Schema.MBP_10, b"")
    with pytest.raises(DataError, match="no MBP-10 records"):
        load_dbn(header_only)


def test_unsupported_schema_is_an_error(tmp_path: Path) -> None:
    path = fx.write_dbn(tmp_path / "t.dbn", dbn.Schema.TRADES, b"")
    with pytest.raises(DataError, match="unsupported DBN schema") as err:
        load_dbn(path)
    assert "(trades vs mbp-10 or ohlcv" in str(err.value)


def test_several_instruments_need_a_choice(tmp_path: Path) -> None:
    events = hand_events()
    events[3].instrument_id = 9
    path = write_events(tmp_path / "two.dbn", events)
    with pytest.raises(DataError, match=r"several instruments \(instrument ids \[7, 9\]") as err:
        load_dbn(path)
    assert "--instrument" in str(err.value)
    only_nine = load_dbn(path, DbnOptions(instrument_id=9))
    assert len(only_nine) == 1 and only_nine.info["instrument_id"] == 9


def test_events_out_of_time_order_are_an_error(tmp_path: Path) -> None:
    events = hand_events()
    events[2].ts = fx.T0 + 5 * S  # before event 2 (t0 + 10 s)
    with pytest.raises(DataError, match=r"record 3 \(.*\): ts_recv goes backwards"):
        load_dbn(write_events(tmp_path / "order.dbn", events))


@pytest.mark.slow
def test_one_million_events_aggregate_correctly(tmp_path: Path) -> None:
    path = fx.write_dbn(tmp_path / "big.dbn", dbn.Schema.MBP_10, fx.random_mbp10(1_000_000, seed=7))
    start = time.perf_counter()
    bars = load_dbn(path, DbnOptions(bar_seconds=1))
    elapsed = time.perf_counter() - start
    print(f"1e6 MBP-10 events → {len(bars)} bars in {elapsed:.2f} s")
    assert int(bars.flow.n_events.sum()) == 1_000_000
    assert bars.info["records"] == 1_000_000


def test_bars_up_to_t_do_not_depend_on_later_events(tmp_path: Path) -> None:
    raw = fx.random_mbp10(3000, seed=8, events_per_second=30)
    full = load_dbn(fx.write_dbn(tmp_path / "full.dbn", dbn.Schema.MBP_10, raw), DbnOptions(bar_seconds=5))
    rec = np.frombuffer(raw, fx.MBP10_DTYPE)
    t = len(full) // 2
    cut = rec[rec["ts_recv"] < full.timestamps[t] + 5 * S]  # every event up to the end of bar t
    part = load_dbn(fx.write_dbn(tmp_path / "part.dbn", dbn.Schema.MBP_10, cut.tobytes()), DbnOptions(bar_seconds=5))
    assert len(part) == t + 1
    for name in ("timestamps", "open", "high", "low", "close", "volume"):
        np.testing.assert_array_equal(getattr(part, name), getattr(full, name)[: t + 1])
    np.testing.assert_array_equal(part.flow.ofi, full.flow.ofi[: t + 1])
    np.testing.assert_array_equal(part.book.ask_px, full.book.ask_px[: t + 1])


def test_ts_out_records_are_read(tmp_path: Path) -> None:
    meta = dbn.Metadata(
        dataset="GLBX.MDP3", start=fx.T0, stype_in=dbn.SType.RAW_SYMBOL, stype_out=dbn.SType.INSTRUMENT_ID,
        schema=dbn.Schema.MBP_10, symbols=["ESZ3"], ts_out=True,
    )
    records = []
    for event in hand_events():
        body = bytearray(fx.mbp10_record(event))
        body[0] = (len(body) + 8) // 4  # the header length counts the appended ts_out
        records.append(bytes(body) + (event.ts + 99).to_bytes(8, "little"))
    path = tmp_path / "tsout.dbn"
    path.write_bytes(bytes(meta) + b"".join(records))
    bars = load_dbn(path)
    np.testing.assert_allclose(bars.close, [100.125, 100.125, 100.0, 100.0])


HOUR = 3600 * S


def hourly_records(n: int, *, step: int = HOUR, skip: tuple[int, ...] = ()) -> bytes:
    return b"".join(
        fx.ohlcv_record(fx.T0 + i * step, 100 + i, 101.5 + i, 99.25 + i, 100.75 + i, 10) for i in range(n) if i not in skip
    )


@pytest.mark.parametrize("compress", [False, True])
def test_dbn_cut_at_a_record_boundary_is_an_error(tmp_path: Path, compress: bool) -> None:
    end = fx.T0 + 100 * HOUR  # the download covered 100 hourly bars
    whole = fx.write_dbn(tmp_path / "whole.dbn", dbn.Schema.OHLCV_1H, hourly_records(100), compress=compress, end=end)
    assert len(load_bars(whole)) == 100
    cut = tmp_path / ("cut.dbn.zst" if compress else "cut.dbn")
    fx.write_dbn(cut, dbn.Schema.OHLCV_1H, hourly_records(60), compress=compress, end=end)  # the last 40 records lost
    with pytest.raises(DataError) as err:
        load_bars(cut)
    assert str(err.value) == (
        f"{cut}: truncated DBN file: the records stop 1.67 d before the metadata's end (last record 60 at "
        "2023-11-17T09:13:00Z vs records up to 2023-11-19T02:13:00Z (no silence longer than 1 h, the longest inside the "
        "file)) — hint: the download or copy was cut short at a record boundary; re-download the file"
    )


def test_data_may_stop_before_the_end_by_no_more_than_its_longest_pause(tmp_path: Path) -> None:
    # a 10-hour pause inside the file; the data stops 8 hours before the metadata's end: a quiet close, not a cut
    path = fx.write_dbn(tmp_path / "quiet.dbn", dbn.Schema.OHLCV_1H, hourly_records(60, skip=tuple(range(20, 29))),
                        end=fx.T0 + 68 * HOUR)  # fmt: skip
    assert len(load_bars(path)) == 51


def test_mbp10_cut_at_a_record_boundary_is_an_error(tmp_path: Path) -> None:
    events = hand_events()
    end = events[-1].ts + 10**12  # the events should run on for another 1,000 s
    path = fx.write_dbn(tmp_path / "cut.dbn", dbn.Schema.MBP_10, b"".join(fx.mbp10_record(e) for e in events), end=end)
    with pytest.raises(DataError, match=r"truncated DBN file: the records stop 16.7 min before the metadata's end"):
        load_dbn(path)


def test_timestamps_that_contradict_the_schema_are_an_error(tmp_path: Path) -> None:
    path = fx.write_dbn(tmp_path / "ms.dbn", dbn.Schema.OHLCV_1H, hourly_records(50, step=3_600_000))  # 3.6 ms apart
    with pytest.raises(DataError) as err:
        load_bars(path)
    assert str(err.value) == (
        f"{path}: records 1 and 2 are closer than one ohlcv-1h bar (3.6 ms apart (2023-11-14T22:13:00Z → "
        "2023-11-14T22:13:00.003600000Z) vs >= 1 h) — hint: the timestamps contradict the file's schema; re-export the "
        "file or fix its timestamps"
    )
