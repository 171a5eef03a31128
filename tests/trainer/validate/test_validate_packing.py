"""How `trainer validate` packs its cells into populations (no training here)."""

from __future__ import annotations

import pytest

from trainer.errors import UserError
from trainer.validate.cells import CELLS_DIRNAME, plan_cells
from trainer.validate.sweep import pack_cells


def ids(packs):
    return [[cell.id for cell in pack] for pack in packs]


def test_seeds_of_one_fold_and_grid_point_share_a_population(tmp_path):
    cells = plan_cells(n_seeds=3, n_folds=2, n_grid=2, base_seed=0, robustness=False)
    packs = pack_cells(cells, tmp_path, population=2)
    assert ids(packs) == [
        ["base-g0-s0-f0", "base-g0-s1-f0"], ["base-g0-s2-f0"], ["base-g0-s0-f1", "base-g0-s1-f1"], ["base-g0-s2-f1"],
        ["base-g1-s0-f0", "base-g1-s1-f0"], ["base-g1-s2-f0"], ["base-g1-s0-f1", "base-g1-s1-f1"], ["base-g1-s2-f1"],
    ]  # fmt: skip
    assert all(len(pack) == 1 for pack in pack_cells(cells, tmp_path, population=1))


def test_variants_never_share_a_population(tmp_path):
    cells = plan_cells(n_seeds=2, n_folds=1, n_grid=1, base_seed=0, robustness=True)
    for pack in pack_cells(cells, tmp_path, population=8):
        assert len({(cell.variant, cell.grid, cell.fold) for cell in pack}) == 1


def test_a_half_trained_cell_resumes_alone(tmp_path):
    cells = plan_cells(n_seeds=3, n_folds=1, n_grid=1, base_seed=0, robustness=False)
    checkpoints = tmp_path / CELLS_DIRNAME / "base-g0-s1-f0" / "fold-00" / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "step-00000010.json").write_text("{}")
    assert ids(pack_cells(cells, tmp_path, population=3)) == [["base-g0-s1-f0"], ["base-g0-s0-f0", "base-g0-s2-f0"]]


def test_population_below_one_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"bad --population \(-1 vs ≥ 1 agents per task \(0 = automatic\)\) — hint"):
        pack_cells(plan_cells(1, 1, 1, 0, False), tmp_path, population=-1)
