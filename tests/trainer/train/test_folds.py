"""Walk-forward folds: fold windows, FoldReset at every boundary (no leak), and the one epoch driver over folds."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
import torch

from trainer.cli import main
from trainer.config import TrainConfig
from trainer.data.synthetic import make_signal_market, write_market_csv
from trainer.errors import UserError
from trainer.eval.health_diag import read_health_diag
from trainer.layout import PS_DSR_A, PS_ENTRY_PRICE, PS_KELLY_LOSS_SUM, PS_POSITION
from trainer.registry import FoldReset, SoftReset, TrainingPersist, WindowReset
from trainer.train.loop import prepare_market, run_splits, start_split, train, train_population_split
from train_helpers import file_config

@pytest.fixture(scope="module")
def market_file(tmp_path_factory):
    return write_market_csv(make_signal_market(700, seed=11), tmp_path_factory.mktemp("folds") / "signal.csv")


tiny_config = file_config


def folds_of(config: TrainConfig, n_folds: int):
    config = config.replace(data={"folds": n_folds})
    return config, prepare_market(config), run_splits(config, prepare_market(config))


def test_fold_windows_walk_forward_with_an_embargo(market_file):
    config, market, folds = folds_of(tiny_config(market_file), 3)
    embargo = config.data.embargo_bars
    assert [fold.index for fold in folds] == [0, 1, 2]
    for fold, later in pairwise(folds):
        assert fold.test.stop == later.validation.start  # consecutive out-of-sample windows
        assert later.train.stop == later.validation.start - embargo  # expanding: trains on everything before
    for fold in folds:
        assert fold.train.start >= market.first  # features defined everywhere it trains
        assert fold.validation.start - fold.train.stop == embargo
        assert fold.test.start - fold.validation.stop == embargo
    assert folds[-1].test.stop == market.close.shape[0]
    with pytest.raises(UserError, match=r"too few bars for 100 walk-forward folds \(2 out-of-sample bars per fold "
                       r"\(700 bars.* vs 19 per fold .*: at least \d+ bars in all\)"):
        folds_of(tiny_config(market_file), 100)


def test_one_fold_of_many_is_the_same_windows(market_file):
    config, _, folds = folds_of(tiny_config(market_file), 3)
    only = config.replace(data={"fold": 1})
    assert run_splits(only, prepare_market(only)) == [folds[1]]


def test_fold_boundary_leaves_no_trace_of_the_previous_fold(market_file, tmp_path):
    config, market, (first, second) = folds_of(tiny_config(market_file), 2)
    device = torch.device("cpu")
    (result,) = train_population_split([config], market, first, [tmp_path / "fold-00"], device, make_plots=False)
    run = result.run
    trained = {name: tensor.clone() for name, tensor in run.state.named_tensors().items()}
    assert float(trained["replay.size"].sum()) > 0  # fold 0 did fill its replay

    carried = start_split(config, market, second, device, run.state)
    fresh = start_split(config, market, second, device, None)
    after, baseline = carried.state.named_tensors(), fresh.state.named_tensors()
    checked = 0
    for name in after:
        if name == "isv":
            continue
        owner = carried.registry.owners(name)[0]
        if isinstance(owner.lifecycle, (FoldReset, WindowReset, SoftReset)):
            if name == "env.ps":  # random start bars follow the carried RNG counter; the rest is fresh
                money = slice(PS_POSITION, PS_ENTRY_PRICE + 1)
                learned = slice(PS_DSR_A, PS_KELLY_LOSS_SUM + 1)  # DSR EMAs and the Kelly record
                assert torch.equal(after[name][:, money], baseline[name][:, money]), name
                assert torch.equal(after[name][:, learned], baseline[name][:, learned]), name
                continue
            assert torch.equal(after[name], baseline[name]), f"{name} leaked from fold 0"
            checked += 1
        elif name == "rng.counter":  # carried, then advanced by the env reset: never rewound
            assert int(after[name].sum()) >= int(trained[name].sum()) > 0
        elif isinstance(owner.lifecycle, TrainingPersist):
            assert torch.equal(after[name], trained[name]), f"{name} was not carried over"
    assert checked >= 10
    for slot, value in fresh.state.isv.snapshot().items():
        assert carried.state.isv.snapshot()[slot] == value, f"ISV {slot} leaked from fold 0"
    assert carried.state.steps_done == run.state.steps_done and carried.state.collect_steps == 0
    assert carried.boundary["online"] == "carried" and carried.boundary["replay"] == "reset"


def test_walk_forward_selects_and_tests_every_fold_and_writes_the_summary(market_file, tmp_path):
    config = tiny_config(market_file, data={"folds": 2})
    summary = train(config, tmp_path, make_plots=False)
    payload = json.loads((tmp_path / "metrics.json").read_text())
    assert payload == summary and payload["n_folds"] == 2 and [fold["fold"] for fold in payload["folds"]] == [0, 1]
    for fold in payload["folds"]:
        assert {"agent", "buy_and_hold", "flat", "validation", "selection", "splits"} <= set(fold)
        assert fold["selection"]["epoch"] is not None
        assert (tmp_path / f"fold-{fold['fold']:02d}" / "checkpoints" / "best.json").is_file()
    assert "sharpe_ratio" in summary["agent"] and "sharpe_ratio_std" in summary["agent"]
    assert "sharpe_ratio" in summary["validation"]["agent"]
    first = read_health_diag(tmp_path / "fold-00")
    second = read_health_diag(tmp_path / "fold-01")
    assert [record.fold for record in first + second] == [0, 0, 1, 1]
    assert [record.epoch for record in first + second] == [0, 1, 2, 3]  # the carried agent counts on
    assert set(second[-1].monitors) >= {"tau", "kelly_cap", "learning_health", "atom_support_direction"}


def test_walk_forward_resumes_bitwise(market_file, tmp_path):
    config = tiny_config(market_file, data={"folds": 2})
    whole = train(config, tmp_path / "whole", make_plots=False)
    assert train(config, tmp_path / "cut", stop_after_epochs=3, make_plots=False) == {}  # stopped inside fold 1
    assert train(config, tmp_path / "cut", resume=True, make_plots=False) == whole


@pytest.mark.slow
def test_cli_train_with_folds(market_file, tmp_path, capsys):
    toml = tmp_path / "tiny.toml"
    toml.write_text(tiny_config(market_file).to_toml())
    assert main(["train", "--config", str(toml), "--folds", "2", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    assert (tmp_path / "run" / "metrics.json").is_file() and (tmp_path / "run" / "fold-01" / "metrics.json").is_file()
    assert main(["diag", str(tmp_path / "run" / "fold-01"), "--no-plots"]) == 0
    assert "HEALTH_DIAG by epoch" in capsys.readouterr().out


@pytest.mark.slow
def test_walk_forward_population_carries_each_agent_and_matches_its_single_run(market_file, tmp_path):
    """Two agents walk forward through two folds as one stacked population: each fold re-stacks the
    agents' carried networks and Adam state, so every agent's fold directories are its single
    walk-forward run's within the population tolerance (numbers close, everything else exact), and a
    stopped population resumes bitwise."""
    from train_helpers import close_json_differences

    from trainer.config import agent_config
    from trainer.train.loop import agent_dirname

    config = tiny_config(market_file, data={"folds": 2}, run={"agents": 2, "agent_grid": "optim.lr=1e-3,3e-4"})
    summary = train(config, tmp_path / "population", make_plots=False)
    assert train(config, tmp_path / "cut", stop_after_epochs=3, make_plots=False) == {}  # stopped inside fold 1
    assert train(config, tmp_path / "cut", resume=True, make_plots=False) == summary
    for agent in range(2):
        single = train(agent_config(config, agent), tmp_path / f"single-{agent}", make_plots=False)
        directory = tmp_path / "population" / agent_dirname(agent)
        assert close_json_differences(single, json.loads((directory / "metrics.json").read_text())) == []
        for fold in ("fold-00", "fold-01"):
            expected = [record.to_dict() for record in read_health_diag(tmp_path / f"single-{agent}" / fold)]
            got = [record.to_dict() for record in read_health_diag(directory / fold)]
            for record in expected + got:
                record.pop("wall_time_s")
            assert close_json_differences(expected, got) == [], (agent, fold)
