"""trainer.data — market data in, feature tensors out.

Loaders (CSV, Parquet, Databento DBN OHLCV and MBP-10) produce validated :class:`Bars`;
:func:`compute_features` turns them into the [T, FEATURE_WIDTH] tensor the layout names;
:func:`prepare` does both through the versioned feature cache; :func:`walk_forward_folds` splits
the series. ``load_default()`` is the embedded EURUSD hourly dataset.
"""

import importlib
from typing import Any

# Public name → the submodule that defines it. Resolved on first access (PEP 562), so importing
# ``trainer.data.folds`` or ``trainer.data.synthetic`` does not pull in pandas, pyarrow or
# databento-dbn: those load only with the parser that needs them (the GPU machine lacks them).
_EXPORTS: dict[str, str] = {
    "BOOK_LEVELS": "trainer.data.bars",
    "Bars": "trainer.data.bars",
    "BookState": "trainer.data.bars",
    "DataError": "trainer.data.bars",
    "OrderFlow": "trainer.data.bars",
    "validate_bars": "trainer.data.bars",
    "FXCACHE_VERSION": "trainer.data.cache",
    "CacheStatus": "trainer.data.cache",
    "PreparedData": "trainer.data.cache",
    "cache_dir": "trainer.data.cache",
    "prepare": "trainer.data.cache",
    "probe_cache": "trainer.data.cache",
    "DbnOptions": "trainer.data.dbn",
    "load_dbn": "trainer.data.dbn",
    "load_default": "trainer.data.embedded",
    "FEATURE_GROUP_NAMES": "trainer.data.features",
    "FEATURE_GROUP_WIDTHS": "trainer.data.features",
    "FEATURE_NAMES": "trainer.data.features",
    "FEATURE_WIDTH": "trainer.data.features",
    "MARKET_WIDTH": "trainer.data.features",
    "ORDER_FLOW_WIDTH": "trainer.data.features",
    "FeatureConfig": "trainer.data.features",
    "FeatureSet": "trainer.data.features",
    "compute_features": "trainer.data.features",
    "Fold": "trainer.data.folds",
    "walk_forward_folds": "trainer.data.folds",
    "load_bars": "trainer.data.loader",
    "resolve_source": "trainer.data.loader",
    "load_csv": "trainer.data.tabular",
    "load_parquet": "trainer.data.tabular",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trainer.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "BOOK_LEVELS",
    "FEATURE_GROUP_NAMES",
    "FEATURE_GROUP_WIDTHS",
    "FEATURE_NAMES",
    "FEATURE_WIDTH",
    "FXCACHE_VERSION",
    "MARKET_WIDTH",
    "ORDER_FLOW_WIDTH",
    "Bars",
    "BookState",
    "CacheStatus",
    "DataError",
    "DbnOptions",
    "FeatureConfig",
    "FeatureSet",
    "Fold",
    "OrderFlow",
    "PreparedData",
    "cache_dir",
    "compute_features",
    "load_bars",
    "load_csv",
    "load_dbn",
    "load_default",
    "load_parquet",
    "prepare",
    "probe_cache",
    "resolve_source",
    "validate_bars",
    "walk_forward_folds",
]  # fmt: skip
