"""The embedded default dataset: real EURUSD hourly bars shipped inside the gym-anytrading wheel.

Provenance: ``gym_anytrading/datasets/data/FOREX_EURUSD_1H_ASK.csv`` (gym-anytrading 2.0, MIT
licence; Dukascopy-style export). 6,225 hourly *ask* bars from 2017-01-01 22:00 to 2017-12-29
21:00 UTC, 422,668 bytes, columns ``Time,Open,High,Low,Close,Volume`` with times such as
``02.01.2017 13:00:00.000`` (``%d.%m.%Y %H:%M:%S.%f``). Weekends are gaps (no rows) rather than
flat zero-volume bars: the file has no bar with identical OHLC and none with zero volume, so
nothing needs dropping; the 49-hour steps over weekends are kept as they are.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from trainer.data.bars import Bars, DataError

DEFAULT_PACKAGE = "gym_anytrading.datasets"
DEFAULT_RESOURCE = "data/FOREX_EURUSD_1H_ASK.csv"
DEFAULT_NAME = "default"


def default_resource() -> Path:
    """The file path of the embedded CSV (gym-anytrading installs it as a plain file)."""
    try:
        resource = importlib.resources.files(DEFAULT_PACKAGE).joinpath(DEFAULT_RESOURCE)
    except ModuleNotFoundError as exc:
        raise DataError(
            "embedded dataset unavailable: gym-anytrading is not installed", got="no module gym_anytrading",
            expected="gym-anytrading>=2.0", hint="pip install gym-anytrading (a dependency of this package)",
        ) from exc
    path = Path(str(resource))
    if not path.is_file():
        raise DataError("embedded dataset missing from gym-anytrading", got=str(path), expected="an existing file", hint="reinstall gym-anytrading")
    return path


def load_default() -> Bars:
    """The 6,225 EURUSD hourly bars of 2017, validated like any user file."""
    from trainer.data.tabular import (
        load_csv,  # pandas loads only when the CSV is parsed
    )

    return load_csv(default_resource(), source=f"{DEFAULT_NAME} ({DEFAULT_PACKAGE}/{DEFAULT_RESOURCE})")
