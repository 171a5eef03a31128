"""The linear forecast column (trainer.data.forecast): fitted on the training bars only, off where
it does not predict, and the same forecast in training, testing and `trainer evaluate`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from trainer.config import TrainConfig
from trainer.data.forecast import (
    MIN_FIT_ROWS,
    RIDGE_GRID,
    SIGNAL_NAMES,
    LinearForecast,
    choose_ridge,
    fit_linear_forecast,
    signal_bank,
)
from trainer.data.synthetic import make_noise_market, make_signal_market, write_market_csv
from trainer.layout import FEATURE_LINEAR_FORECAST
from trainer.train.loop import prepare_market, run_splits


def market_and_split(tmp_path: Path, market, **data):
    config = TrainConfig().replace(data={"path": str(write_market_csv(market, tmp_path / f"{market.kind}.csv")), **data})
    prepared = prepare_market(config)
    return config, prepared, run_splits(config, prepared)[0]


def next_return_corr(column: np.ndarray, close: np.ndarray, bars: slice) -> float:
    nxt = np.diff(np.log(close.astype(np.float64)))
    return float(np.corrcoef(column[bars.start : bars.stop - 1], nxt[bars.start : bars.stop - 1])[0, 1])


def test_an_ar1_market_gets_a_forecast_that_predicts_the_test_bars(tmp_path):
    config, market, split = market_and_split(tmp_path, make_signal_market(3000, seed=1))
    assert not market.features[:, FEATURE_LINEAR_FORECAST].any()  # the split-free feature set holds no forecast
    filled, forecast = market.with_forecast(split, config.data)
    assert forecast is not None and forecast.active and forecast.holdout_corr > 0.2
    column = filled.features[:, FEATURE_LINEAR_FORECAST].numpy()
    # Out of sample — bars the fit never saw — the column predicts the next return as an AR(1) rule does.
    assert next_return_corr(column, filled.close.numpy(), split.test) > 0.25
    training = column[split.train.start : split.train.stop]
    assert abs(training.std() - 1.0) < 0.05  # unit scale over the training bars, like the other columns
    assert forecast.weights[FEATURE_LINEAR_FORECAST] == 0.0  # never regressed on itself
    other = np.delete(filled.features.numpy(), FEATURE_LINEAR_FORECAST, axis=1)
    assert np.array_equal(other, np.delete(market.features.numpy(), FEATURE_LINEAR_FORECAST, axis=1))


def test_pure_noise_gets_no_forecast(tmp_path):
    config, market, split = market_and_split(tmp_path, make_noise_market(3000, seed=2))
    filled, forecast = market.with_forecast(split, config.data)
    assert forecast is not None and not forecast.active
    assert forecast.holdout_corr * np.sqrt(forecast.holdout_rows) < config.data.forecast_min_z
    assert not filled.features[:, FEATURE_LINEAR_FORECAST].any()


@pytest.mark.parametrize("options", [{}, {"signals": True, "ridge_cv": True, "embargo": 24}], ids=["features", "signals+cv"])
def test_the_fit_reads_no_bar_after_the_training_window(tmp_path, options):
    config, market, split = market_and_split(tmp_path, make_signal_market(3000, seed=3))
    features, close = market.features.numpy(), market.close.double().numpy()
    kwargs = {"ridge": config.data.forecast_ridge, "min_z": config.data.forecast_min_z, "exclude": FEATURE_LINEAR_FORECAST,
              **options}  # fmt: skip
    fitted = fit_linear_forecast(features, close, split.train, **kwargs)
    rng = np.random.default_rng(0)
    changed_features, changed_close = features.copy(), close.copy()
    # Every bar from the first one outside training on (its close is the last training bar's next
    # return, which the fit must not use) is replaced: validation and test bars cannot move the fit.
    changed_features[split.train.stop :] = rng.standard_normal(changed_features[split.train.stop :].shape)
    changed_close[split.train.stop :] = close[split.train.stop :] * np.exp(rng.standard_normal(len(close) - split.train.stop))
    assert fit_linear_forecast(changed_features, changed_close, split.train, **kwargs) == fitted
    moved = close.copy()
    moved[split.train.stop - 1] *= 1.5  # a training bar's close does move it
    assert fit_linear_forecast(features, moved, split.train, **kwargs) != fitted


def test_too_few_training_rows_leave_it_off_and_the_record_round_trips():
    features = np.random.default_rng(1).standard_normal((MIN_FIT_ROWS, 4)).astype(np.float32)
    close = np.exp(np.cumsum(np.random.default_rng(2).standard_normal(MIN_FIT_ROWS) * 0.01))
    off = fit_linear_forecast(features, close, slice(0, MIN_FIT_ROWS), ridge=1e-3, min_z=2.0)  # 63 rows with a next close
    assert not off.active and not off.column(features, close, 5.0).any()
    record = LinearForecast((0.5, -0.25), 0.1, 2.0, 0.3, 100, 2.0)
    assert LinearForecast.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    column = record.column(np.array([[1.0, 0.0], [10.0, 0.0]], dtype=np.float32), np.array([1.0, 1.1]), 5.0)
    assert column.dtype == np.float32 and column.tolist() == pytest.approx([1.2, 5.0])  # (0.5 + 0.1) × 2, clipped


def test_off_in_the_config_leaves_the_column_zero(tmp_path):
    config, market, split = market_and_split(tmp_path, make_signal_market(3000, seed=1), linear_forecast=False)
    filled, forecast = market.with_forecast(split, config.data)
    assert forecast is None and filled is market


@pytest.mark.parametrize("bad", ["data.forecast_ridge=-1", "data.forecast_min_z=11"])
def test_out_of_range_settings_are_explained(bad):
    from trainer.config import ConfigError, load_config

    with pytest.raises(ConfigError, match=bad.split("=")[0].split(".")[1]):
        load_config(None, [bad])


def test_the_signal_bank_reads_each_bars_past_only():
    close = np.exp(np.cumsum(np.random.default_rng(4).standard_normal(1200) * 0.01))
    bank = signal_bank(close)
    assert bank.shape == (1200, len(SIGNAL_NAMES)) and np.isfinite(bank).all()
    changed = close.copy()
    changed[700:] *= np.exp(np.random.default_rng(5).standard_normal(500) * 0.05)
    assert np.array_equal(signal_bank(changed)[:700], bank[:700])  # bar t reads closes up to t
    assert not np.array_equal(signal_bank(changed)[700:], bank[700:])


def test_the_chosen_penalty_shrinks_noise_harder_than_a_signal():
    rng = np.random.default_rng(6)
    design = rng.standard_normal((3000, 40))  # one informative column among forty
    signal = 0.3 * design[:, 0] + rng.standard_normal(3000)
    noise = rng.standard_normal(3000)
    on_signal = choose_ridge(design, signal, embargo=24, min_rows=MIN_FIT_ROWS)
    on_noise = choose_ridge(design, noise, embargo=24, min_rows=MIN_FIT_ROWS)
    assert on_signal in RIDGE_GRID and on_noise in RIDGE_GRID
    assert on_noise > on_signal  # nothing to find: the columns' fitted noise is shrunk away
    # Too few rows for any fold to be fitted: nothing shows the columns carry more than noise.
    assert choose_ridge(design[:100], signal[:100], embargo=24, min_rows=MIN_FIT_ROWS) == RIDGE_GRID[-1]


def test_with_the_signal_bank_the_stored_fit_reproduces_the_run_column(tmp_path):
    config, market, split = market_and_split(tmp_path, make_signal_market(3000, seed=1), forecast_signals=True,
                                             forecast_ridge_cv=True)  # fmt: skip
    filled, forecast = market.with_forecast(split, config.data)
    assert forecast is not None and forecast.active and forecast.signals and forecast.ridge in RIDGE_GRID
    assert len(forecast.weights) == market.features.shape[1] + len(SIGNAL_NAMES) == market.features.shape[1] + len(forecast.signal_scale)
    stored = LinearForecast.from_dict(json.loads(json.dumps(forecast.to_dict())))
    assert stored == forecast
    assert torch.equal(market.with_forecast_applied(stored).features, filled.features)  # what `trainer eval` re-applies
    column = filled.features[:, FEATURE_LINEAR_FORECAST].numpy()
    assert next_return_corr(column, filled.close.numpy(), split.test) > 0.25


def test_a_record_that_does_not_fit_the_features_is_explained():
    record = LinearForecast((0.5, -0.25), 0.1, 2.0, 0.3, 100, 2.0)
    with pytest.raises(ValueError, match="2 weights but its design 3 columns .* re-run it"):
        record.column(np.zeros((4, 3), dtype=np.float32), np.ones(4), 5.0)
