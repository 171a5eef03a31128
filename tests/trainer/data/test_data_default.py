"""The embedded EURUSD dataset: what the docs promise about it holds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from trainer.data import load_bars, load_default


def test_default_dataset_provenance_and_shape() -> None:
    bars = load_default()
    assert len(bars) == 6225 and bars.format == "csv" and bars.has_volume
    assert bars.timestamps[0] == pd.Timestamp("2017-01-01 22:00", tz="UTC").value
    assert bars.timestamps[-1] == pd.Timestamp("2017-12-29 21:00", tz="UTC").value
    assert bars.bar_ns == 3600 * 10**9
    assert bars.columns == ("Time", "Open", "High", "Low", "Close", "Volume")
    assert load_bars("default").close.tolist() == bars.close.tolist()


def test_weekends_are_gaps_not_flat_bars() -> None:
    bars = load_default()
    flat = (bars.open == bars.high) & (bars.high == bars.low) & (bars.low == bars.close)
    assert not flat.any() and not (bars.volume == 0).any()
    steps_h = np.diff(bars.timestamps) // (3600 * 10**9)
    assert (steps_h == 1).sum() == 6172 and (steps_h >= 48).sum() == 51
