"""One entry point from a user's PATH (or ``default``) to validated :class:`Bars`."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainer.data.bars import Bars, DataError
from trainer.data.embedded import DEFAULT_NAME, default_resource, load_default

if TYPE_CHECKING:  # the parsers (pandas, pyarrow, databento-dbn) load only when a file is parsed
    from trainer.data.dbn import DbnOptions, ProgressFn

#: File suffixes per format (a ``.zst`` alone is taken as zstd-compressed DBN).
SUFFIXES: dict[str, tuple[str, ...]] = {
    "csv": (".csv", ".txt", ".tsv"),
    "parquet": (".parquet", ".pq"),
    "dbn": (".dbn", ".dbn.zst", ".zst"),
}


@dataclass(frozen=True)
class DataSource:
    """A resolved input: what the user typed, the file behind it, and its format."""

    name: str
    path: Path
    kind: str

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_NAME


def _kind_of(path: Path) -> str | None:
    name = path.name.lower()
    for kind, suffixes in SUFFIXES.items():
        if any(name.endswith(s) for s in suffixes):
            return kind
    return None


def resolve_source(path: str | Path) -> DataSource:
    """Check the PATH exists and has a known format; ``default`` is the embedded dataset."""
    if str(path) == DEFAULT_NAME:
        return DataSource(DEFAULT_NAME, default_resource(), "csv")
    file = Path(path)
    if not file.exists():
        raise DataError(f"data file not found: {file}", got=str(file), expected="an existing file or 'default'", hint="check the path, or use 'default' for the embedded EURUSD dataset")
    if file.is_dir():
        raise DataError(f"data path is a directory: {file}", got="a directory", expected="a file", hint="pass one CSV, Parquet or DBN file")
    if not os.access(file, os.R_OK):
        raise DataError(f"data file is not readable: {file}", got="no read permission", expected="a readable file", hint="fix the file's permissions")
    kind = _kind_of(file)
    if kind is None:
        accepted = ", ".join(s for group in SUFFIXES.values() for s in group)
        raise DataError(f"unknown data file type: {file}", got=file.suffix or "no suffix", expected=accepted, hint="rename the file with the suffix of its format")
    return DataSource(str(file), file, kind)


def load_bars(path: str | Path, dbn_options: DbnOptions | None = None, *, progress: ProgressFn | None = None) -> Bars:
    """Load and validate bars from a CSV, Parquet or DBN file, or ``default``."""
    source = resolve_source(path)
    if source.is_default:
        return load_default()
    if source.kind in ("csv", "parquet"):
        from trainer.data.tabular import load_csv, load_parquet

        return load_csv(source.path) if source.kind == "csv" else load_parquet(source.path)
    from trainer.data.dbn import load_dbn

    return load_dbn(source.path, dbn_options, progress=progress)


def file_sha256(path: Path, chunk_bytes: int = 8 << 20) -> str:
    """Hex sha256 of the file's bytes: the source part of the feature-cache key."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_bytes):
            digest.update(chunk)
    return digest.hexdigest()
