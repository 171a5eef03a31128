"""Train | validation | test windows in time order, with an embargo between each — one split, or one per fold.

Why three windows: the validation window *chooses* (which epoch's checkpoint is kept, when to stop
early), and a window that chose cannot also score without flattering the result. The test window
lies after both in time and is touched once, at the end of a run, by the selected checkpoint. An
embargo of ``data.embargo_bars`` bars separates consecutive windows, so samples whose look-forward
(n-step returns, episode tails) or feature history would straddle two windows belong to neither.

Walk-forward (``data.folds = K``): ``trainer.data.folds.walk_forward_folds`` cuts the usable bars
into K consecutive out-of-sample windows with expanding training windows before them; each fold's
out-of-sample window is halved into validation | embargo | test, so every fold selects on its own
validation bars and reports on later, untouched test bars.

All indices are global bar indices (rows of the loaded bars and of the feature tensor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainer.data.folds import walk_forward_folds
from trainer.errors import UserError

MIN_EVAL_BARS = 8  # the greedy rollout trades bars 0 … n − 2: fewer would leave no returns to score


@dataclass(frozen=True)
class Split:
    """One run's windows (global bar indices) and the embargo between them."""

    index: int  # walk-forward fold index; 0 for a single split
    train: slice
    validation: slice
    test: slice
    embargo: int

    def to_dict(self) -> dict[str, Any]:
        """The windows as ``[start, stop)`` pairs plus their sizes (metrics.json, config.toml)."""
        return {
            "fold": self.index,
            "train": [self.train.start, self.train.stop],
            "validation": [self.validation.start, self.validation.stop],
            "test": [self.test.start, self.test.stop],
            "embargo": self.embargo,
            "bars": {
                "train": self.train.stop - self.train.start,
                "validation": self.validation.stop - self.validation.start,
                "test": self.test.stop - self.test.start,
            },
        }


def _too_few(what: str, got: str, expected: str, needed: int, hint: str) -> UserError:
    return UserError(f"too few bars for {what}", got=got, expected=f"{expected}: at least {needed} bars in all", hint=hint)


def single_split(
    n_bars: int,
    first: int,
    *,
    validation_fraction: float,
    test_fraction: float,
    embargo: int,
    min_train_bars: int,
) -> Split:
    """train | embargo | validation | embargo | test over bars ``first … n_bars − 1``.

    ``first`` is the first bar with every feature defined and a full history window.
    """
    usable = n_bars - first
    val_bars = max(int(usable * validation_fraction), MIN_EVAL_BARS)
    test_bars = max(int(usable * test_fraction), MIN_EVAL_BARS)
    train_bars = usable - val_bars - test_bars - 2 * embargo
    if train_bars < min_train_bars:
        # Solve for the total a user needs at these fractions: usable·(1 − v − t) − 2e ≥ min_train.
        needed = first + int((min_train_bars + 2 * embargo) / max(1.0 - validation_fraction - test_fraction, 1e-9)) + 1
        raise _too_few(
            "a train | validation | test split",
            got=f"{n_bars} bars leave {max(train_bars, 0)} training bars (validation {val_bars}, test {test_bars}, "
            f"2 × embargo {embargo}, {first} bars of feature warm-up)",
            expected=f"{min_train_bars} training bars (env.episode_length + loss.n_step + 2)",
            needed=needed,
            hint="use more data, or lower data.validation_fraction / data.test_fraction, data.embargo_bars or "
            "env.episode_length",
        )
    test = slice(n_bars - test_bars, n_bars)
    validation = slice(test.start - embargo - val_bars, test.start - embargo)
    train = slice(first, validation.start - embargo)
    return Split(0, train, validation, test, embargo)


def fold_splits(
    n_bars: int,
    first: int,
    n_folds: int,
    *,
    train_fraction: float,
    embargo: int,
    min_train_bars: int,
) -> list[Split]:
    """Walk-forward splits: fold k trains on every bar before its out-of-sample window (minus the
    embargo) and halves that window into validation | embargo | test."""
    folds = walk_forward_folds(
        n_bars - first, n_folds, train_frac=train_fraction, embargo=embargo, min_train_bars=min_train_bars
    )
    splits = []
    for fold in folds:
        out_of_sample = fold.val_bars
        val_bars = (out_of_sample - embargo) // 2
        test_bars = out_of_sample - embargo - val_bars
        if min(val_bars, test_bars) < MIN_EVAL_BARS:
            per_fold = 2 * MIN_EVAL_BARS + embargo
            raise _too_few(
                f"{n_folds} walk-forward folds",
                got=f"{out_of_sample} out-of-sample bars per fold ({n_bars} bars, fold 0 trains on {train_fraction:.0%})",
                expected=f"{per_fold} per fold (2 × {MIN_EVAL_BARS} + embargo {embargo}) for a validation and a test window",
                needed=first + int(n_folds * per_fold / max(1.0 - train_fraction, 1e-9)) + 1,
                hint="use fewer folds (data.folds), a smaller data.embargo_bars, a lower data.fold_train_fraction "
                "or more data",
            )
        start = first + fold.val.start
        validation = slice(start, start + val_bars)
        test = slice(validation.stop + embargo, first + fold.val.stop)
        train = slice(first + fold.train.start, first + fold.train.stop)
        splits.append(Split(fold.index, train, validation, test, embargo))
    return splits
