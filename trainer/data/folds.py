"""Walk-forward train/validation folds over a bar series, with an embargo gap.

Layout for ``n_folds`` folds over ``n_bars`` bars: the validation windows are consecutive,
equally sized (``val_bars`` each) and end at the last bar; fold k validates on
``[v0 + k·val_bars, v0 + (k+1)·val_bars)`` with ``v0 = n_bars − n_folds·val_bars``. Its training
window ends ``embargo`` bars before its validation window starts, so samples whose look-forward
(n-step returns, episode tails) would reach into validation are not trained on. ``expanding``
training windows start at bar 0; ``rolling`` ones keep the first fold's length and slide.
Without ``val_bars``, it is chosen so that the first fold trains on ``train_frac`` of the bars.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainer.errors import UserError

WINDOWS = ("expanding", "rolling")


@dataclass(frozen=True)
class Fold:
    """One walk-forward split: bar index slices into the series (and its feature tensor)."""

    index: int
    train: slice
    val: slice
    embargo: int

    @property
    def train_bars(self) -> int:
        return self.train.stop - self.train.start

    @property
    def val_bars(self) -> int:
        return self.val.stop - self.val.start


def walk_forward_folds(
    n_bars: int,
    n_folds: int,
    *,
    train_frac: float = 0.5,
    val_bars: int | None = None,
    embargo: int = 0,
    window: str = "expanding",
    min_train_bars: int = 1,
) -> list[Fold]:
    """The folds, oldest first; a :class:`UserError` for settings the series cannot satisfy."""
    if n_folds < 1:
        raise UserError("invalid number of folds", got=n_folds, expected=">= 1", hint="use --folds 6 (the validation protocol asks for 6)")
    if embargo < 0:
        raise UserError("invalid embargo", got=embargo, expected=">= 0 bars", hint="use an embargo of at least the reward horizon")
    if window not in WINDOWS:
        raise UserError("unknown fold window", got=window, expected=" or ".join(WINDOWS), hint="pick expanding or rolling")
    if val_bars is None:
        if not 0.0 < train_frac < 1.0:
            raise UserError("invalid train fraction", got=train_frac, expected="0 < train_frac < 1", hint="use e.g. 0.5")
        fixed_val = None
        val_bars = int(n_bars * (1.0 - train_frac)) // n_folds
    else:
        fixed_val = val_bars
    min_train = max(min_train_bars, 1)
    first_train = n_bars - n_folds * val_bars - embargo
    if val_bars < 1 or first_train < min_train:
        needed = bars_needed(n_folds, train_frac=train_frac, val_bars=fixed_val, embargo=embargo, min_train_bars=min_train)
        # the validation length at the bar count needed (derived from train_frac unless given)
        validation = str(fixed_val if fixed_val is not None else int(needed * (1.0 - train_frac)) // n_folds)
        if n_folds == 1:  # a plain train | validation split: no folds were asked for, none are mentioned
            raise UserError(
                "too few bars to train and validate", got=f"{n_bars} usable bars",
                expected=f">= {needed} ({min_train} training + embargo {embargo} + {validation} validation)",
                hint="use more data, or shorten what a run needs (env.episode_length, data.embargo_bars, the validation share)",
            )  # fmt: skip
        got = f"{n_bars} bars leave " + ("no validation bar per fold" if val_bars < 1 else f"{max(first_train, 0)} training bars in fold 0")
        raise UserError(
            "too few bars for the folds", got=got,
            expected=f">= {needed} bars ({min_train} training + embargo {embargo} + {n_folds} folds × {validation} validation)",
            hint="use fewer folds, shorter validation windows, a smaller embargo or more data",
        )  # fmt: skip
    first_val = n_bars - n_folds * val_bars
    folds = []
    for k in range(n_folds):
        val_start = first_val + k * val_bars
        train_stop = val_start - embargo
        train_start = 0 if window == "expanding" else train_stop - first_train
        folds.append(Fold(k, slice(train_start, train_stop), slice(val_start, val_start + val_bars), embargo))
    return folds


def bars_needed(
    n_folds: int, *, train_frac: float = 0.5, val_bars: int | None = None, embargo: int = 0, min_train_bars: int = 1
) -> int:
    """The fewest bars ``walk_forward_folds`` accepts with these settings (for error messages)."""
    min_train = max(min_train_bars, 1)
    if val_bars is not None:
        return min_train + embargo + n_folds * max(val_bars, 1)
    # val_bars = ⌊n·(1 − train_frac)⌋ // n_folds grows with n: start from the continuous bound, step up.
    n = max(int((min_train + embargo) / train_frac), n_folds)
    while True:
        derived = int(n * (1.0 - train_frac)) // n_folds
        if derived >= 1 and n - n_folds * derived - embargo >= min_train:
            return n
        n += 1
