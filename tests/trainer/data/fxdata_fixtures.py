"""Real DBN fixtures written with databento-dbn's own encoder (Metadata, MBP10Msg, OHLCVMsg).

Hand-built events use the record classes (``bytes(MBP10Msg(...))``); large random streams use a
numpy structured array with the record dtype databento-dbn publishes, which is byte-identical
(checked in test_data_dbn.py). ``.dbn.zst`` files are compressed by databento-dbn's Transcoder.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import databento_dbn as dbn
import numpy as np

PX = 1_000_000_000  # DBN fixed-point price scale
T0 = 1_699_999_980 * PX  # a minute boundary (ns)
SECOND = PX


def metadata(schema: dbn.Schema, *, symbols: tuple[str, ...] = ("ESZ3",), end: int | None = None) -> bytes:
    """DBN metadata; ``end`` (exclusive, ns) as a Databento download records it (absent by default)."""
    extra = {} if end is None else {"end": end}
    meta = dbn.Metadata(
        dataset="GLBX.MDP3", start=T0, stype_in=dbn.SType.RAW_SYMBOL, stype_out=dbn.SType.INSTRUMENT_ID,
        schema=schema, symbols=list(symbols), **extra,
    )
    return bytes(meta)


@dataclass
class Event:
    """One MBP-10 event and the book after it (levels from the top; missing = empty level)."""

    ts: int
    bids: list[tuple[float, int]] = field(default_factory=list)
    asks: list[tuple[float, int]] = field(default_factory=list)
    action: dbn.Action = dbn.Action.MODIFY
    side: dbn.Side = dbn.Side.NONE
    price: float = 0.0
    size: int = 0
    instrument_id: int = 7


def mbp10_record(event: Event) -> bytes:
    levels = []
    for k in range(10):
        bid = event.bids[k] if k < len(event.bids) else None
        ask = event.asks[k] if k < len(event.asks) else None
        levels.append(
            dbn.BidAskPair(
                bid_px=round(bid[0] * PX) if bid else dbn.UNDEF_PRICE,
                ask_px=round(ask[0] * PX) if ask else dbn.UNDEF_PRICE,
                bid_sz=bid[1] if bid else 0,
                ask_sz=ask[1] if ask else 0,
                bid_ct=1 if bid else 0,
                ask_ct=1 if ask else 0,
            )
        )
    msg = dbn.MBP10Msg(
        publisher_id=1, instrument_id=event.instrument_id, ts_event=event.ts - 1000, price=round(event.price * PX),
        size=event.size, action=event.action, side=event.side, depth=0, ts_recv=event.ts, flags=dbn.F_LAST, levels=levels,
    )
    return bytes(msg)


def ohlcv_record(ts: int, o: float, h: float, low: float, c: float, v: int, *, rtype: dbn.RType = dbn.RType.OHLCV_1H, instrument_id: int = 7) -> bytes:
    msg = dbn.OHLCVMsg(
        rtype=rtype, publisher_id=1, instrument_id=instrument_id, ts_event=ts,
        open=round(o * PX), high=round(h * PX), low=round(low * PX), close=round(c * PX), volume=v,
    )
    return bytes(msg)


def zstd(data: bytes) -> bytes:
    """Compress a DBN stream with databento-dbn's own zstd writer."""
    out = io.BytesIO()
    transcoder = dbn.Transcoder(file=out, encoding=dbn.Encoding.DBN, compression=dbn.Compression.ZSTD)
    transcoder.write(data)
    transcoder.finish()
    return out.getvalue()


def write_dbn(path: Path, schema: dbn.Schema, records: bytes, *, compress: bool = False, end: int | None = None) -> Path:
    data = metadata(schema, end=end) + records
    path.write_bytes(zstd(data) if compress else data)
    return path


MBP10_DTYPE = np.dtype(dbn.MBP10Msg._dtypes)


def random_mbp10(n_events: int, *, seed: int = 0, events_per_second: float = 1000.0) -> bytes:
    """A random-walk MBP-10 stream as raw records (numpy, ~100x faster than per-record objects)."""
    rng = np.random.default_rng(seed)
    rec = np.zeros(n_events, MBP10_DTYPE)
    rec["length"] = MBP10_DTYPE.itemsize // 4
    rec["rtype"] = int(dbn.RType.MBP_10.value)
    rec["publisher_id"] = 1
    rec["instrument_id"] = 7
    ts = T0 + np.cumsum(rng.exponential(1e9 / events_per_second, n_events)).astype(np.int64)
    rec["ts_recv"] = ts
    rec["ts_event"] = ts - 500
    tick = PX // 4
    mid_ticks = 400 * 4 + np.cumsum(rng.integers(-1, 2, n_events))  # price in quarter ticks
    is_trade = rng.random(n_events) < 0.1
    rec["action"] = np.where(is_trade, b"T", b"M")
    rec["side"] = np.where(rng.random(n_events) < 0.5, b"B", b"A")
    rec["size"] = np.where(is_trade, rng.integers(1, 10, n_events), 0)
    rec["flags"] = dbn.F_LAST
    levels = rec.view(_LEVELS_VIEW)["levels"]  # [n, 10] view of the 10 level blocks
    depth = np.arange(10)
    levels["bid_px"] = (mid_ticks[:, None] - 1 - depth) * tick
    levels["ask_px"] = (mid_ticks[:, None] + 1 + depth) * tick
    levels["bid_sz"] = rng.integers(1, 50, (n_events, 10))
    levels["ask_sz"] = rng.integers(1, 50, (n_events, 10))
    levels["bid_ct"] = 1
    levels["ask_ct"] = 1
    return rec.tobytes()


def _levels_view() -> np.dtype:
    """MBP10_DTYPE with its 60 level fields seen as 10 blocks (offsets taken from databento-dbn's dtype)."""
    first = MBP10_DTYPE.fields["bid_px_00"][1]
    block = MBP10_DTYPE.fields["bid_px_01"][1] - first
    names = ("bid_px", "ask_px", "bid_sz", "ask_sz", "bid_ct", "ask_ct")
    level = np.dtype({
        "names": list(names),
        "formats": [MBP10_DTYPE.fields[f"{n}_00"][0] for n in names],
        "offsets": [MBP10_DTYPE.fields[f"{n}_00"][1] - first for n in names],
        "itemsize": block,
    })  # fmt: skip
    return np.dtype({"names": ["levels"], "formats": [(level, (10,))], "offsets": [first], "itemsize": MBP10_DTYPE.itemsize})


_LEVELS_VIEW = _levels_view()
