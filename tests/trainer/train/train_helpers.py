"""Small configs and synthetic markets shared by the training-core tests (no data files needed)."""

from __future__ import annotations

import torch

from trainer.config import TrainConfig
from trainer.layout import FEATURE_STRIDE
from trainer.train.loop import PreparedMarket
from trainer.train.step import MarketWindow

TINY = {
    "env": {"n_envs": 8, "episode_length": 48},
    "model": {"window": 4, "scan_channels": 8, "scan_state": 4, "hidden": 32, "head_hidden": 16, "n_atoms": 11,
              "iqn_embedding": 16},
    "loss": {"n_step": 3, "iqn_tau_samples": 4, "iqn_target_samples": 4},
    "replay": {"capacity": 256, "batch_size": 16, "learning_starts": 32},
    "run": {"steps": 20, "epoch_steps": 10, "device": "cpu"},
}  # fmt: skip


def tiny_config(**sections: dict) -> TrainConfig:
    merged = {name: dict(values) for name, values in TINY.items()}
    for name, values in sections.items():
        merged.setdefault(name, {}).update(values)
    return TrainConfig().replace(**merged)


def synthetic_market(n_bars: int = 400, window: int = 4, seed: int = 0) -> MarketWindow:
    generator = torch.Generator().manual_seed(seed)
    log_returns = torch.randn(n_bars, generator=generator, dtype=torch.float64) * 2e-3
    close = (100.0 * torch.exp(torch.cumsum(log_returns, 0))).to(torch.float32)
    features = torch.randn(n_bars, FEATURE_STRIDE, generator=generator).clamp(-5, 5)
    return MarketWindow(close=close[window:], spread=torch.zeros(n_bars - window), features=features, offset=window)


def synthetic_prepared_market(n_bars: int = 400, window: int = 4, seed: int = 0) -> PreparedMarket:
    """A synthetic market as ``trainer.train.loop.prepare_market`` returns it (the run's splits come
    from its config), without files, pandas or the feature cache (the GPU machine lacks the loaders' deps)."""
    market = synthetic_market(n_bars, window, seed)
    close = torch.cat([torch.full((window,), float(market.close[0])), market.close])  # [n_bars] global bars
    return PreparedMarket(
        close=close, spread=torch.zeros(n_bars), features=market.features, first=window,
        periods_per_year=252.0 * 24, source="synthetic",
    )  # fmt: skip


FILE_TINY = {
    "data": {"embargo_bars": 3, "periods_per_year": 6048},
    "env": {"n_envs": 4, "episode_length": 32},
    "model": {"window": 2, "temporal_encoder": False, "hidden": 16, "head_hidden": 8, "n_atoms": 11, "iqn_embedding": 8},
    "loss": {"n_step": 2, "iqn_tau_samples": 2, "iqn_target_samples": 2},
    "replay": {"capacity": 64, "batch_size": 8, "learning_starts": 8},
    "run": {"steps": 6, "epoch_steps": 3, "device": "cpu", "cuda_graph": False},
}  # fmt: skip


def file_config(path, **overrides: dict) -> TrainConfig:
    """A tiny config that trains on the bars of a market file (the run driver's whole path: loader,
    feature cache, splits)."""
    sections = {name: dict(values) for name, values in FILE_TINY.items()}
    sections["data"]["path"] = str(path)
    for name, values in overrides.items():
        sections.setdefault(name, {}).update(values)
    return TrainConfig().replace(**sections)

