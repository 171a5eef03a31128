"""Checkpoints: round trip, layout mismatch → "retrain required", corrupt or foreign files → clear errors."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch
from train_helpers import synthetic_market, tiny_config

from trainer.isv import LayoutMismatchError
from trainer.train.checkpoint import (
    CheckpointError,
    ResumeNumericsWarning,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from trainer.train.graph import (
    CUBLAS_WORKSPACE_CONFIG,
    StepRunner,
    pin_cublas_workspace,
)
from trainer.train.step import TrainerState, TrainStep


def trained_state(config=None) -> TrainerState:
    torch.set_num_threads(1)
    state = TrainerState(config or tiny_config(), synthetic_market(), torch.device("cpu"))
    step = TrainStep(state)
    for _ in range(6):
        step.collect()
    StepRunner(step, use_graph=False).run(3)
    return state


def test_round_trip_restores_every_tensor_and_counter(tmp_path):
    state = trained_state()
    manifest = save_checkpoint(state, tmp_path)
    fresh = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    load_checkpoint(fresh, latest_checkpoint(tmp_path))
    assert latest_checkpoint(tmp_path) == manifest
    for name, tensor in state.named_tensors().items():
        assert torch.equal(tensor, fresh.named_tensors()[name]), name
    assert (fresh.steps_done, fresh.collect_steps) == (state.steps_done, state.collect_steps)


def test_only_the_newest_checkpoints_are_kept(tmp_path):
    state = trained_state()
    for _ in range(3):
        state.steps_done += 1
        save_checkpoint(state, tmp_path, keep=2)
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert len(list(tmp_path.glob("*.safetensors"))) == 2


def test_mismatched_layout_fingerprint_means_retrain(tmp_path):
    manifest_path = save_checkpoint(trained_state(), tmp_path)
    manifest = json.loads(manifest_path.read_text())
    manifest["layout_fingerprint"] = "0x0123456789abcdef"
    manifest_path.write_text(json.dumps(manifest))
    fresh = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    with pytest.raises(LayoutMismatchError, match="retrain required"):
        load_checkpoint(fresh, manifest_path)


def test_corrupt_tensor_file_is_a_clear_error(tmp_path):
    manifest_path = save_checkpoint(trained_state(), tmp_path)
    tensors = manifest_path.with_suffix(".safetensors")
    data = bytearray(tensors.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tensors.write_bytes(bytes(data))
    fresh = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    with pytest.raises(CheckpointError, match="corrupt.*hint"):
        load_checkpoint(fresh, manifest_path)


def test_truncated_manifest_is_a_clear_error(tmp_path):
    manifest_path = save_checkpoint(trained_state(), tmp_path)
    manifest_path.write_text(manifest_path.read_text()[:20])
    with pytest.raises(CheckpointError, match="unreadable.*hint"):
        load_checkpoint(TrainerState(tiny_config(), synthetic_market(), torch.device("cpu")), manifest_path)


def test_checkpoint_of_another_network_shape_is_refused(tmp_path):
    manifest_path = save_checkpoint(trained_state(), tmp_path)
    other = TrainerState(tiny_config(model={"hidden": 48}), synthetic_market(), torch.device("cpu"))
    with pytest.raises(CheckpointError, match="does not fit this configuration"):
        load_checkpoint(other, manifest_path)


def test_missing_checkpoint_names_the_directory(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint to resume from"):
        latest_checkpoint(tmp_path)


def test_manifest_records_the_numerics_and_a_resume_under_other_numerics_warns(tmp_path):
    manifest_path = save_checkpoint(trained_state(), tmp_path)
    manifest = json.loads(manifest_path.read_text())
    assert manifest["numerics"]["device"] == "cpu"
    assert manifest["numerics"]["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same process, same numerics: silent
        load_checkpoint(TrainerState(tiny_config(), synthetic_market(), torch.device("cpu")), manifest_path)

    manifest["numerics"]["torch"] = "0.0.0-elsewhere"
    manifest_path.write_text(json.dumps(manifest))
    fresh = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    with pytest.warns(ResumeNumericsWarning, match=r"torch .* vs '0\.0\.0-elsewhere'.*hint"):
        load_checkpoint(fresh, manifest_path)
    assert fresh.steps_done == 3  # it warns and still resumes


def test_pin_cublas_workspace_sets_the_reproducible_size_unless_the_user_chose_one(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert pin_cublas_workspace() == CUBLAS_WORKSPACE_CONFIG == ":4096:8"
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    assert pin_cublas_workspace() == ":16:8"
