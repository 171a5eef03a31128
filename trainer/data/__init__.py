"""trainer.data — market data in, feature tensors out.

Loaders (CSV, Parquet, Databento DBN OHLCV and MBP-10) produce validated :class:`Bars`;
:func:`compute_features` turns them into the [T, FEATURE_WIDTH] tensor the layout names;
:func:`prepare` does both through the versioned feature cache; :func:`walk_forward_folds` splits
the series. ``load_default()`` is the embedded EURUSD hourly dataset.
"""

from trainer.data.bars import (
    BOOK_LEVELS,
    Bars,
    BookState,
    DataError,
    OrderFlow,
    validate_bars,
)
from trainer.data.cache import (
    FXCACHE_VERSION,
    CacheStatus,
    PreparedData,
    cache_dir,
    prepare,
    probe_cache,
)
from trainer.data.dbn import DbnOptions, load_dbn
from trainer.data.embedded import load_default
from trainer.data.features import (
    FEATURE_GROUP_NAMES,
    FEATURE_GROUP_WIDTHS,
    FEATURE_NAMES,
    FEATURE_WIDTH,
    MARKET_WIDTH,
    ORDER_FLOW_WIDTH,
    FeatureConfig,
    FeatureSet,
    compute_features,
)
from trainer.data.folds import Fold, walk_forward_folds
from trainer.data.loader import load_bars, resolve_source
from trainer.data.tabular import load_csv, load_parquet

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
