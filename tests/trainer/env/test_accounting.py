"""backtest_targets: vectorbt from_orders accounting, checked by hand, by a vectorised twin and by vectorbt."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainer.env.accounting import backtest_targets


def test_hand_computed_example():
    # bar 0: buy 1 @ 100·1.005 = 100.5, fee 1.005 → cash 898.495, equity 898.495 + 100
    # bar 1: hold → equity 898.495 + 102
    # bar 2: sell 2 @ 101·0.995 = 100.495, fee 2.0099 → cash 1097.4751, equity 1097.4751 − 101
    equity = backtest_targets([100.0, 102.0, 101.0], [1.0, 1.0, -1.0], fee_rate=0.01, slippage=0.005, init_cash=1000.0)
    assert equity.tolist() == pytest.approx([998.495, 1000.495, 996.4751], abs=1e-9)


def _vectorised(close, targets, fee_rate, slippage, init_cash):
    """Independent statement: cash = init − Σ (Δu·fill + fee·|Δu|·fill); equity = cash + u·close."""
    delta = np.diff(targets, prepend=0.0)
    fill = close * (1.0 + np.sign(delta) * slippage)
    cash = init_cash - np.cumsum(delta * fill + fee_rate * np.abs(delta) * fill)
    return cash + targets * close


def _random_case(seed: int, n_bars: int = 400):
    rng = np.random.default_rng(seed)
    close = 100.0 * np.exp(np.cumsum(rng.normal(0, 0.01, n_bars)))
    targets = np.round(rng.normal(0, 3, n_bars), 2)
    targets[rng.random(n_bars) < 0.4] = np.nan
    targets = np.nan_to_num(np.array([*_forward_fill(targets)]))
    return close, targets


def _forward_fill(values):
    last = 0.0
    for v in values:
        last = last if np.isnan(v) else v
        yield last


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_a_vectorised_twin(seed: int):
    close, targets = _random_case(seed)
    slippage = np.random.default_rng(seed + 10).uniform(-0.001, 0.003, close.size)  # per-bar, may improve
    got = backtest_targets(torch.tensor(close), torch.tensor(targets), fee_rate=5e-4, slippage=torch.tensor(slippage),
                           init_cash=10_000.0).numpy()  # fmt: skip
    want = _vectorised(close, targets, 5e-4, slippage, 10_000.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


def test_bad_inputs_are_explained():
    with pytest.raises(ValueError, match="differ in length"):
        backtest_targets([1.0, 2.0], [1.0], fee_rate=0.0, slippage=0.0, init_cash=1.0)
    with pytest.raises(ValueError, match="slippage has 1 values"):
        backtest_targets([1.0, 2.0], [1.0, 1.0], fee_rate=0.0, slippage=[0.1], init_cash=1.0)
    with pytest.raises(ValueError, match=r"bar 1: -2.0 vs > 0"):
        backtest_targets([1.0, -2.0], [1.0, 1.0], fee_rate=0.0, slippage=0.0, init_cash=1.0)


@pytest.mark.slow
def test_matches_vectorbt_from_orders():
    vbt = pytest.importorskip("vectorbt")
    import pandas as pd

    close, targets = _random_case(5, n_bars=1000)
    pf = vbt.Portfolio.from_orders(pd.Series(close), pd.Series(targets), size_type="targetamount", fees=7e-4,
                                   slippage=2e-3, init_cash=50_000.0, freq="1D")  # fmt: skip
    got = backtest_targets(close, targets, fee_rate=7e-4, slippage=2e-3, init_cash=50_000.0).numpy()
    np.testing.assert_allclose(got, pf.value().to_numpy(), rtol=1e-12, atol=1e-7)
