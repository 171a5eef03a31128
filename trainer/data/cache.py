"""The versioned on-disk feature cache (``.fxcache/`` by default, or ``$FXCACHE_DIR``).

An entry is two files: ``<slot>.npz`` (the bars, the book/flow arrays and the feature tensor)
and ``<slot>.json`` (the manifest). The slot name comes from *what was asked* (source name,
loader options, feature config); the manifest records *what was built* (FXCACHE_VERSION, the
sha256 of the source file's bytes, the feature column names of the layout, the sha256 of the
npz). An entry is used only when all of them match; otherwise it is rebuilt and the reason is
logged — a stale cache (source edited, version bumped, layout changed) or a corrupt one (bad
JSON, missing or damaged npz) is never used silently. Both files are written atomically (temp
file in the same directory, then ``os.replace``), the npz first, so a crash leaves either the old
entry or a manifest whose checksum no longer matches, which is rebuilt.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainer.data.bars import Bars, BookState, OrderFlow
from trainer.data.dbn import DbnOptions
from trainer.data.features import (
    FEATURE_NAMES,
    FeatureConfig,
    FeatureSet,
    compute_features,
)
from trainer.data.loader import DataSource, file_sha256, load_bars, resolve_source
from trainer.errors import UserError
from trainer.files import write_bytes_atomic

#: Bump when the cached bytes would differ for the same inputs (a feature formula, a loader rule).
FXCACHE_VERSION = 3
CACHE_DIR_ENV = "FXCACHE_DIR"
DEFAULT_CACHE_DIR = ".fxcache"

log = logging.getLogger(__name__)

#: ``progress(stage, done, total)``; stages: "hash", "load", "features", "write".
StageProgress = Callable[[str, int, int], None]

_BOOK_FIELDS = ("bid_px", "ask_px", "bid_sz", "ask_sz")
_FLOW_FIELDS = ("ofi", "mean_depth", "buy_volume", "sell_volume", "n_events")
_BAR_FIELDS = ("timestamps", "open", "high", "low", "close", "volume")


def cache_dir(explicit: str | Path | None = None) -> Path:
    """The cache directory: the argument, else ``$FXCACHE_DIR``, else ``./.fxcache``."""
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get(CACHE_DIR_ENV, DEFAULT_CACHE_DIR))


@dataclass(frozen=True)
class CacheStatus:
    """What the cache did: ``hit``, ``built`` (no entry), ``rebuilt`` (stale/corrupt, ``reason``)
    or ``disabled``; for a status-only probe also ``missing``/``stale``/``corrupt``."""

    state: str
    reason: str
    manifest: Path | None


@dataclass(frozen=True, eq=False)
class PreparedData:
    """Bars and features of one source, and how the cache served them."""

    bars: Bars
    features: FeatureSet
    source_sha256: str
    cache: CacheStatus


def _slot_name(source: DataSource, dbn_options: DbnOptions, config: FeatureConfig) -> str:
    identity = {
        "source": source.name if source.is_default else str(source.path.resolve()),
        "dbn_options": {"bar_seconds": dbn_options.bar_seconds, "instrument_id": dbn_options.instrument_id},
        "features": config.to_dict(),
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", source.path.name if not source.is_default else "default")[:48]
    return f"{stem}-{digest}"


def _entry_file(slot: Path, suffix: str) -> Path:
    """``<slot>.json`` / ``<slot>.npz``; not ``Path.with_suffix``, which would cut the slot's
    ``.csv-<digest>`` tail off and give every file of one name a single shared entry."""
    return slot.parent / f"{slot.name}{suffix}"


def _expected_key(source_sha256: str, config: FeatureConfig, dbn_options: DbnOptions) -> dict[str, object]:
    return {
        "fxcache_version": FXCACHE_VERSION,
        "source_sha256": source_sha256,
        "feature_names": list(FEATURE_NAMES),
        "feature_config": config.to_dict(),
        "dbn_options": {"bar_seconds": dbn_options.bar_seconds, "instrument_id": dbn_options.instrument_id},
    }


_KEY_LABELS = {
    "fxcache_version": "FXCACHE_VERSION changed",
    "source_sha256": "source file content changed",
    "feature_names": "feature layout changed",
    "feature_config": "feature config changed",
    "dbn_options": "DBN loader options changed",
}


def _stale_reason(found: dict[str, object], expected: dict[str, object]) -> str | None:
    for name, label in _KEY_LABELS.items():
        if found.get(name) != expected[name]:
            got, want = found.get(name), expected[name]
            if name == "source_sha256" and isinstance(got, str):
                got, want = got[:12], str(want)[:12]
            if name == "feature_names":
                return label
            return f"{label} ({got} vs {want})"
    return None


def _read_entry(slot: Path, expected: dict[str, object]) -> tuple[str, str, dict | None, dict | None]:
    """(state, reason, manifest, arrays) with state one of hit / missing / stale / corrupt."""
    manifest_path = _entry_file(slot, ".json")
    npz_path = _entry_file(slot, ".npz")
    if not manifest_path.exists():
        return "missing", "no cache entry", None, None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return "corrupt", f"unreadable manifest ({exc})", None, None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("key"), dict):
        return "corrupt", "unreadable manifest (not an object with a key)", None, None
    stale = _stale_reason(manifest["key"], expected)
    if stale is not None:
        return "stale", stale, manifest, None
    try:
        blob = npz_path.read_bytes()
    except OSError:
        return "corrupt", "feature file missing", manifest, None
    if hashlib.sha256(blob).hexdigest() != manifest.get("npz_sha256"):
        return "corrupt", "feature file checksum mismatch", manifest, None
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, KeyError) as exc:
        return "corrupt", f"feature file unreadable ({exc})", manifest, None
    n = int(manifest.get("n_bars", -1))
    shapes_ok = (
        arrays.get("features") is not None
        and arrays["features"].shape == (n, len(FEATURE_NAMES))
        and all(name in arrays and arrays[name].shape[:1] == (n,) for name in (*_BAR_FIELDS, "valid"))
    )
    if not shapes_ok:
        return "corrupt", "feature file has unexpected arrays or shapes", manifest, None
    return "hit", "", manifest, arrays


def _bars_from_entry(manifest: dict, arrays: dict[str, np.ndarray]) -> Bars:
    meta = manifest["bars"]
    book = BookState(*(arrays[f"book_{f}"] for f in _BOOK_FIELDS)) if meta["has_book"] else None
    flow = OrderFlow(*(arrays[f"flow_{f}"] for f in _FLOW_FIELDS)) if meta["has_flow"] else None
    return Bars(
        **{f: arrays[f] for f in _BAR_FIELDS},
        bar_ns=int(meta["bar_ns"]),
        source=meta["source"],
        format=meta["format"],
        has_volume=bool(meta["has_volume"]),
        book=book,
        flow=flow,
        columns=tuple(meta["columns"]),
        info=meta["info"],
    )


def _write_entry(slot: Path, key: dict[str, object], bars: Bars, features: FeatureSet) -> None:
    arrays: dict[str, np.ndarray] = {f: getattr(bars, f) for f in _BAR_FIELDS}
    arrays["features"] = features.values
    arrays["valid"] = features.valid
    if bars.book is not None:
        arrays.update({f"book_{f}": getattr(bars.book, f) for f in _BOOK_FIELDS})
    if bars.flow is not None:
        arrays.update({f"flow_{f}": getattr(bars.flow, f) for f in _FLOW_FIELDS})
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    blob = buffer.getvalue()
    manifest = {
        "key": key,
        "npz_sha256": hashlib.sha256(blob).hexdigest(),
        "n_bars": len(bars),
        "valid_from": features.valid_from,
        "has_order_flow": features.has_order_flow,
        "bars": {
            "source": bars.source,
            "format": bars.format,
            "bar_ns": bars.bar_ns,
            "has_volume": bars.has_volume,
            "has_book": bars.book is not None,
            "has_flow": bars.flow is not None,
            "columns": list(bars.columns),
            "info": json.loads(json.dumps(bars.info, default=str)),
        },
    }
    write_bytes_atomic(_entry_file(slot, ".npz"), blob)
    write_bytes_atomic(_entry_file(slot, ".json"), json.dumps(manifest, indent=1, sort_keys=True).encode())


def _hash_source(source: DataSource, progress: StageProgress | None) -> str:
    total = source.path.stat().st_size
    if progress is not None:
        progress("hash", 0, total)
    digest = file_sha256(source.path)
    if progress is not None:
        progress("hash", total, total)
    return digest


def probe_cache(path: str | Path, *, feature_config: FeatureConfig | None = None, dbn_options: DbnOptions | None = None, directory: str | Path | None = None) -> CacheStatus:
    """The cache state for PATH without building anything (``trainer data info``)."""
    config = feature_config or FeatureConfig()
    options = dbn_options or DbnOptions()
    source = resolve_source(path)
    slot = cache_dir(directory) / _slot_name(source, options, config)
    state, reason, _, _ = _read_entry(slot, _expected_key(file_sha256(source.path), config, options))
    return CacheStatus(state, reason, _entry_file(slot, ".json"))


def prepare(
    path: str | Path,
    *,
    feature_config: FeatureConfig | None = None,
    dbn_options: DbnOptions | None = None,
    directory: str | Path | None = None,
    use_cache: bool = True,
    force: bool = False,
    progress: StageProgress | None = None,
) -> PreparedData:
    """Bars and features of PATH (or ``default``), from the cache when a valid entry exists.

    ``force`` rebuilds even a valid entry; ``use_cache=False`` neither reads nor writes it.
    """
    config = feature_config or FeatureConfig()
    options = dbn_options or DbnOptions()
    source = resolve_source(path)
    sha = _hash_source(source, progress)
    key = _expected_key(sha, config, options)
    slot = cache_dir(directory) / _slot_name(source, options, config)
    state, reason = "disabled", "cache not used"
    if use_cache:
        state, reason, manifest, arrays = _read_entry(slot, key)
        if state == "hit" and not force:
            bars = _bars_from_entry(manifest, arrays)
            features = FeatureSet(
                values=arrays["features"], valid=arrays["valid"], valid_from=int(manifest["valid_from"]),
                has_order_flow=bool(manifest["has_order_flow"]), config=config,
            )
            return PreparedData(bars, features, sha, CacheStatus("hit", "", _entry_file(slot, ".json")))
        if state in ("stale", "corrupt"):
            log.warning("feature cache %s is %s (%s); rebuilding", slot.name, state, reason)
        if state == "hit":
            state, reason = "stale", "rebuild forced"
    load_progress = None if progress is None else (lambda done, total: progress("load", done, total))
    if load_progress is not None:
        load_progress(0, source.path.stat().st_size)
    bars = load_bars(path, options, progress=load_progress)
    if load_progress is not None:
        load_progress(source.path.stat().st_size, source.path.stat().st_size)
    if progress is not None:
        progress("features", 0, len(bars))
    features = compute_features(bars, config)
    if progress is not None:
        progress("features", len(bars), len(bars))
    if not use_cache:
        return PreparedData(bars, features, sha, CacheStatus("disabled", reason, None))
    if progress is not None:
        progress("write", 0, 1)
    try:
        _write_entry(slot, key, bars, features)
    except OSError as exc:
        raise UserError(
            f"cannot write the feature cache in {slot.parent}", got=exc.strerror or str(exc), expected="a writable directory",
            hint=f"pass another directory (--out DIR) or set {CACHE_DIR_ENV}",
        ) from exc
    if progress is not None:
        progress("write", 1, 1)
    status = CacheStatus("built" if state == "missing" else "rebuilt", reason, _entry_file(slot, ".json"))
    return PreparedData(bars, features, sha, status)
