"""Features: layout agreement, no look-ahead (property test), hand-checked values, invariances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainer import layout
from trainer.data import (
    FEATURE_GROUP_WIDTHS,
    FEATURE_NAMES,
    FEATURE_WIDTH,
    Bars,
    BookState,
    FeatureConfig,
    OrderFlow,
    compute_features,
    load_default,
)
from trainer.data.features import NORMALISATION, raw_features
from trainer.errors import UserError

HOUR = 3600 * 10**9


def random_bars(n: int, seed: int, *, with_book: bool, gaps: bool = True) -> Bars:
    rng = np.random.default_rng(seed)
    steps = np.where(rng.random(n) < 0.05, 49, 1) if gaps else np.ones(n, dtype=np.int64)  # weekend-like gaps
    ts = 1_483_308_000 * 10**9 + np.cumsum(steps).astype(np.int64) * HOUR
    close = 1.1 * np.exp(np.cumsum(rng.normal(0, 0.002, n)))
    open_ = np.concatenate(([1.1], close[:-1]))
    high = np.maximum(open_, close) * (1 + rng.uniform(0, 0.002, n))
    low = np.minimum(open_, close) * (1 - rng.uniform(0, 0.002, n))
    volume = rng.lognormal(10, 1, n)
    book = flow = None
    if with_book:
        mid = close
        bid_px = mid[:, None] - 0.0001 * (np.arange(10) + rng.uniform(0.5, 1.5, (n, 1)))  # [n, 10]
        ask_px = mid[:, None] + 0.0001 * (np.arange(10) + rng.uniform(0.5, 1.5, (n, 1)))
        bid_sz = rng.integers(1, 100, (n, 10)).astype(float)
        ask_sz = rng.integers(1, 100, (n, 10)).astype(float)
        book = BookState(bid_px, ask_px, bid_sz, ask_sz)
        flow = OrderFlow(
            ofi=rng.normal(0, 50, (n, 10)), mean_depth=rng.uniform(10, 60, n), buy_volume=rng.uniform(0, 9, n),
            sell_volume=rng.uniform(0, 9, n), n_events=rng.integers(1, 500, n),
        )
    return Bars(ts, open_, high, low, close, volume, bar_ns=HOUR, source="random", format="test", book=book, flow=flow)


def altered_after(bars: Bars, t: int, seed: int) -> Bars:
    """Same bars up to t; everything after t (prices, volume, book, flow, timestamps) redrawn."""
    other = random_bars(len(bars), seed, with_book=bars.book is not None, gaps=True)
    keep = slice(0, t + 1)
    shift = bars.timestamps[t] - other.timestamps[t]  # later timestamps stay increasing
    ratio = bars.close[t] / other.close[t]

    def splice(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = b.copy()
        out[keep] = a[keep]
        return out

    book = flow = None
    if bars.book is not None:
        book = BookState(*(splice(getattr(bars.book, f), getattr(other.book, f) * (ratio if "px" in f else 1.0)) for f in ("bid_px", "ask_px", "bid_sz", "ask_sz")))
        flow = OrderFlow(*(splice(getattr(bars.flow, f), getattr(other.flow, f)) for f in ("ofi", "mean_depth", "buy_volume", "sell_volume", "n_events")))
    return Bars(
        splice(bars.timestamps, other.timestamps + shift),
        *(splice(getattr(bars, f), getattr(other, f) * ratio) for f in ("open", "high", "low", "close")),
        splice(bars.volume, other.volume),
        bar_ns=bars.bar_ns, source="altered", format="test", book=book, flow=flow,
    )


def test_columns_follow_the_layout() -> None:
    assert FEATURE_WIDTH == layout.FEATURE_STRIDE == len(FEATURE_NAMES)
    assert set(NORMALISATION) == {s.name for s in layout.FEATURE.slots}
    assert FEATURE_GROUP_WIDTHS == {"market": layout.FEATURE_GROUP_MARKET_WIDTH, "order_flow": layout.FEATURE_GROUP_ORDER_FLOW_WIDTH}
    assert FEATURE_NAMES[layout.FEATURE_RET_1] == "ret_1"
    assert FEATURE_NAMES[layout.FEATURE_OFI : layout.FEATURE_OFI + 10] == tuple(f"ofi_{k}" for k in range(1, 11))
    bars = random_bars(300, 0, with_book=True)
    raw = raw_features(bars)
    assert set(raw) == set(NORMALISATION)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), n=st.integers(2, 700), cut=st.floats(0.0, 1.0), with_book=st.booleans())
def test_no_feature_looks_ahead(seed: int, n: int, cut: float, with_book: bool) -> None:
    bars = random_bars(n, seed, with_book=with_book)
    t = min(int(cut * n), n - 1)
    before = compute_features(bars, FeatureConfig(norm_window=128, norm_min_periods=16))
    after = compute_features(altered_after(bars, t, seed + 1), FeatureConfig(norm_window=128, norm_min_periods=16))
    changed = np.flatnonzero((before.values[: t + 1] != after.values[: t + 1]).any(axis=0))
    assert changed.size == 0, f"columns {[FEATURE_NAMES[c] for c in changed]} changed at or before bar {t}"
    np.testing.assert_array_equal(before.valid[: t + 1], after.valid[: t + 1])


def test_features_of_a_prefix_equal_the_prefix_of_the_features() -> None:
    bars = random_bars(900, 11, with_book=True)
    whole = compute_features(bars).values
    for stop in (1, 65, 400, 899):
        np.testing.assert_array_equal(compute_features(bars.take(slice(0, stop))).values, whole[:stop])


def test_output_is_finite_float32_clipped_with_warm_up() -> None:
    bars = random_bars(2000, 4, with_book=True)
    feats = compute_features(bars, FeatureConfig(clip=3.0))
    assert feats.values.dtype == np.float32 and feats.values.shape == (2000, FEATURE_WIDTH)
    assert np.isfinite(feats.values).all() and np.abs(feats.values).max() <= 3.0
    assert 64 <= feats.valid_from < 400 and feats.valid[feats.valid_from :].all()
    assert np.all(feats.group("market")[0] == 0) and not feats.valid[0]  # undefined warm-up values are zero
    assert feats.has_order_flow
    body = np.delete(feats.values[feats.valid_from :], layout.FEATURE_LINEAR_FORECAST, axis=1)
    assert np.all(body.std(axis=0) > 0.1)  # every column carries signal once warmed up
    assert not feats.values[:, layout.FEATURE_LINEAR_FORECAST].any()  # but the forecast: a run fits it per split


def test_order_flow_columns_by_hand() -> None:
    bars = random_bars(3, 0, with_book=True)
    bars.book.bid_px[:, :2] = [[99.0, 98.0]] * 3
    bars.book.ask_px[:, :2] = [[101.0, 102.0]] * 3
    bars.book.bid_px[:, 2:] = np.nan
    bars.book.ask_px[:, 2:] = np.nan
    bars.book.bid_sz[:] = 0
    bars.book.ask_sz[:] = 0
    bars.book.bid_sz[:, :2] = [[30, 10]] * 3
    bars.book.ask_sz[:, :2] = [[10, 0]] * 3
    bars.flow.ofi[:] = 8.0
    bars.flow.mean_depth[:] = 4.0
    raw = raw_features(bars)
    np.testing.assert_allclose(raw["QUEUE_IMBALANCE"], 0.5)  # (30 − 10) / 40
    np.testing.assert_allclose(raw["SPREAD_REL"], 0.02)  # 2 / 100
    centre = (99 * 30 + 98 * 10 + 101 * 10) / 50 / 100 - 1  # depth-weighted price vs mid
    np.testing.assert_allclose(raw["BOOK_COM"], centre)
    np.testing.assert_allclose(raw["OFI"], 2.0)  # 8 / 4: depth-normalised


def test_market_features_are_price_scale_invariant() -> None:
    bars = random_bars(800, 9, with_book=False)
    scaled = Bars(bars.timestamps, bars.open * 1000, bars.high * 1000, bars.low * 1000, bars.close * 1000, bars.volume,
                  bar_ns=bars.bar_ns, source="x", format="test")  # fmt: skip
    a, b = compute_features(bars).values, compute_features(scaled).values
    np.testing.assert_allclose(a, b, atol=2e-5)


def test_no_volume_and_no_book_give_zero_columns() -> None:
    bars = random_bars(500, 1, with_book=False)
    no_volume = Bars(bars.timestamps, bars.open, bars.high, bars.low, bars.close, np.zeros(500), bar_ns=HOUR,
                     source="x", format="test", has_volume=False)  # fmt: skip
    feats = compute_features(no_volume)
    assert np.all(feats.column("volume_z_16") == 0) and np.all(feats.group("order_flow") == 0)
    assert not feats.has_order_flow and feats.valid_from < 500


def test_default_dataset_features_are_fast_and_sane() -> None:
    import time

    start = time.perf_counter()
    bars = load_default()
    feats = compute_features(bars)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"load + features took {elapsed:.2f} s"
    assert feats.values.shape == (6225, FEATURE_WIDTH)
    market = feats.group("market")[feats.valid_from :]
    from trainer.data.features import NORMALISATION
    from trainer.layout import MARKET_FEATURES

    # Scaled and z-scored columns have about unit spread; the un-normalised ones are bounded (|x| ≤ 1
    # autocorrelations, volume z-scores) and only need to vary.
    scaled = [i for i, slot in enumerate(MARKET_FEATURES) if NORMALISATION[slot.name] != "none"]
    bounded = [i for i, slot in enumerate(MARKET_FEATURES) if slot.name.startswith("AUTOCORR")]
    forecasts = [i for i, slot in enumerate(MARKET_FEATURES) if slot.name.startswith("AR1_FORECAST")]
    assert np.all(np.abs(market.mean(axis=0)) < 0.5)
    assert np.all((market[:, scaled].std(axis=0) > 0.5) & (market[:, scaled].std(axis=0) < 1.6))
    assert np.all((np.abs(market[:, bounded]) <= 1.0) & (market[:, bounded].std(axis=0) > 0.05))
    assert np.all((np.abs(market[:, forecasts]) <= 4.0) & (market[:, forecasts].std(axis=0) > 0.05))


def test_invalid_config_reports_every_problem() -> None:
    with pytest.raises(UserError, match=r"invalid feature config \(norm_window=1 \(>= 2\); clip=0.0 \(> 0\)"):
        FeatureConfig(norm_window=1, norm_min_periods=1, clip=0.0)


def test_the_ar1_forecast_predicts_a_market_whose_autocorrelation_changes_sign() -> None:
    # On the hidden-regime market the last return alone predicts nothing (the two regimes cancel),
    # while the rolling AR(1) forecast carries the sign of the current regime's autocorrelation.
    from trainer.data.synthetic import make_regime_market

    market = make_regime_market(20_000, phi=0.3, stay=0.99, seed=5)
    c = market.columns
    bars = Bars(
        timestamps=np.asarray(c["timestamp"]).astype("datetime64[ns]").astype(np.int64),
        open=np.asarray(c["open"], float), high=np.asarray(c["high"], float), low=np.asarray(c["low"], float),
        close=np.asarray(c["close"], float), volume=np.asarray(c["volume"], float),
        bar_ns=HOUR, source="regime", format="synthetic",
    )  # fmt: skip
    raw = raw_features(bars)
    next_return = np.concatenate([market.log_returns[1:], [np.nan]])

    def correlation(column: str) -> float:
        x = raw[column]
        keep = np.isfinite(x) & np.isfinite(next_return)
        return float(np.corrcoef(x[keep], next_return[keep])[0, 1])

    assert abs(correlation("RET_1")) < 0.05
    assert correlation("AR1_FORECAST_64") > 0.15
    assert correlation("AR1_FORECAST_16") > 0.08
    assert np.nanmax(np.abs(raw["AR1_FORECAST_16"])) <= 4.0
    expected = raw["AUTOCORR_64"] * raw["RET_1"] / raw["REALIZED_VOL_64"]
    finite = np.isfinite(expected) & (np.abs(expected) < 4.0)
    np.testing.assert_allclose(raw["AR1_FORECAST_64"][finite], expected[finite], rtol=1e-12)


def mirrored_bars(bars: Bars) -> Bars:
    """The same market reflected: every log return negated (price p → c₀² / p, so high and low
    swap), bids and asks swapped with their sizes, order flow and aggressor volumes reversed."""
    scale = bars.close[0] ** 2
    book = BookState(scale / bars.book.ask_px, scale / bars.book.bid_px, bars.book.ask_sz, bars.book.bid_sz)
    flow = OrderFlow(ofi=-bars.flow.ofi, mean_depth=bars.flow.mean_depth, buy_volume=bars.flow.sell_volume,
                     sell_volume=bars.flow.buy_volume, n_events=bars.flow.n_events)  # fmt: skip
    return Bars(bars.timestamps, scale / bars.open, scale / bars.low, scale / bars.high, scale / bars.close, bars.volume,
                bar_ns=bars.bar_ns, source="mirrored", format="test", book=book, flow=flow)  # fmt: skip


def test_the_mirror_augmentations_odd_columns_are_exactly_those_the_reflected_market_negates():
    from trainer.data.features import MIRROR_ODD

    bars = random_bars(2_000, 5, with_book=True)
    original, mirrored = compute_features(bars), compute_features(mirrored_bars(bars))
    rows = original.valid & mirrored.valid
    for slot in layout.FEATURE.slots:
        columns = slice(layout.FEATURE.offsets[slot.name], layout.FEATURE.offsets[slot.name] + slot.width)
        a, b = original.values[rows, columns], mirrored.values[rows, columns]
        size = float(np.abs(a).max())
        if slot.name == "LINEAR_FORECAST":  # 0 until a run fits it: a linear map of the others, odd
            assert size == 0.0 and float(np.abs(b).max()) == 0.0
            continue
        odd, even = float(np.abs(a + b).max()) / size, float(np.abs(a - b).max()) / size
        # Momentum and the book's centre of mass are odd to first order in the returns (≈ 1 % here).
        assert (odd < 0.05) == (slot.name in MIRROR_ODD), (slot.name, odd, even)
        assert min(odd, even) < 0.05, (slot.name, odd, even)  # every column is one or the other
