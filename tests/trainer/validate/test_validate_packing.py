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


def _checkpoint(tmp_path, cell_id, step):
    checkpoints = tmp_path / CELLS_DIRNAME / cell_id / "fold-00" / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    (checkpoints / f"step-{step:08d}.json").write_text("{}")


def test_half_trained_cells_resume_together_only_from_the_same_step(tmp_path):
    # A killed driver leaves a population's agents checkpointed at one step: re-run, they train as
    # one population again (before, each resumed alone: 5 × the device time of a packed fold).
    cells = plan_cells(n_seeds=5, n_folds=1, n_grid=1, base_seed=0, robustness=False)
    for seed in (0, 1):
        _checkpoint(tmp_path, f"base-g0-s{seed}-f0", 10)
        _checkpoint(tmp_path, f"base-g0-s{seed}-f0", 20)  # the newest checkpoint is where it resumes
    _checkpoint(tmp_path, "base-g0-s2-f0", 10)  # cut at another step: its own population
    assert ids(pack_cells(cells, tmp_path, population=5)) == [
        ["base-g0-s0-f0", "base-g0-s1-f0"], ["base-g0-s2-f0"], ["base-g0-s3-f0", "base-g0-s4-f0"],
    ]  # fmt: skip


def test_population_below_one_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"bad --population \(-1 vs ≥ 1 agents per task \(0 = automatic\)\) — hint"):
        pack_cells(plan_cells(1, 1, 1, 0, False), tmp_path, population=-1)
