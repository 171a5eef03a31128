"""Walk-forward folds: tiling, embargo, expanding vs rolling windows, impossible settings."""

from __future__ import annotations

import pytest

from trainer.data import walk_forward_folds
from trainer.errors import UserError


@pytest.mark.parametrize("window", ["expanding", "rolling"])
def test_folds_tile_the_end_with_an_embargo(window: str) -> None:
    folds = walk_forward_folds(1000, 6, train_frac=0.4, embargo=10, window=window)
    val = 600 // 6
    assert [f.val for f in folds] == [slice(400 + k * val, 400 + (k + 1) * val) for k in range(6)]
    for fold in folds:
        assert fold.val.start - fold.train.stop == 10  # the embargo gap
        assert fold.train_bars == (390 + fold.index * val if window == "expanding" else 390)
        assert fold.train.start == (0 if window == "expanding" else fold.index * val)
    assert folds[-1].val.stop == 1000


def test_explicit_validation_length_puts_the_remainder_in_training() -> None:
    folds = walk_forward_folds(1003, 3, val_bars=100, embargo=0)
    assert folds[0].train == slice(0, 703) and folds[0].val == slice(703, 803)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_bars": 100, "n_folds": 0}, r"invalid number of folds \(0 vs >= 1\)"),
    ({"n_bars": 100, "n_folds": 2, "embargo": -1}, r"invalid embargo \(-1 vs >= 0 bars\)"),
    ({"n_bars": 100, "n_folds": 2, "window": "sliding"}, r"unknown fold window \(sliding vs expanding or rolling\)"),
    ({"n_bars": 100, "n_folds": 2, "train_frac": 1.0}, r"invalid train fraction"),
    ({"n_bars": 5, "n_folds": 6}, r"too few bars for the folds \(5 bars leave no validation bar per fold vs >= 12 bars \(1 training \+ embargo 0 \+ 6 folds × 1 validation\)\)"),
    ({"n_bars": 100, "n_folds": 5, "val_bars": 19, "embargo": 10}, r"too few bars for the folds \(100 bars leave 0 training bars in fold 0 vs >= 106 bars"),
    ({"n_bars": 50, "n_folds": 1, "val_bars": 10, "embargo": 24, "min_train_bars": 53},
     r"^too few bars to train and validate \(50 usable bars vs >= 87 \(53 training \+ embargo 24 \+ 10 validation\)\) — hint: use more data"),
    ({"n_bars": 100, "n_folds": 2, "min_train_bars": 60}, r"too few bars for the folds \(100 bars leave 50 training bars in fold 0 vs >= 120 bars \(60 training \+ embargo 0 \+ 2 folds × 30 validation\)\)"),
])  # fmt: skip
def test_impossible_settings_are_user_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message) as err:
        walk_forward_folds(**kwargs)
    assert " — hint: " in str(err.value)
