"""Checkpoints: round trip, layout mismatch → "retrain required", corrupt or foreign files → clear errors."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch
from train_helpers import synthetic_market, tiny_config

from trainer.isv import LayoutMismatchError
from trainer.errors import os_error_text
from trainer.train.checkpoint import (
    CheckpointError,
    CheckpointWriter,
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


def test_background_writer_writes_the_same_files_as_a_synchronous_save(tmp_path):
    state = trained_state()
    extra = {"selection": {"best": 1}}
    synchronous = save_checkpoint(state, tmp_path / "sync", extra=extra)
    save_checkpoint(state, tmp_path / "sync", extra=extra, name="best", only=("online.",))
    writer = CheckpointWriter()
    background = writer.save(state, tmp_path / "thread", extra, keep=2, best="best", best_only=("online.",))
    extra["selection"]["best"] = 2  # the caller moves on while the thread writes: the checkpoint keeps 1
    writer.wait()
    assert background.name == synchronous.name
    for name in (synchronous.name, synchronous.with_suffix(".safetensors").name, "best.json", "best.safetensors"):
        assert (tmp_path / "thread" / name).read_bytes() == (tmp_path / "sync" / name).read_bytes(), name


def test_background_writer_snapshot_is_taken_at_the_save_call(tmp_path):
    state = trained_state()
    writer = CheckpointWriter()
    manifest = writer.save(state, tmp_path, {}, keep=2)
    saved_counter = state.counter.clone()
    state.counter.add_(1000)  # training goes on in place while the thread writes
    writer.wait()
    fresh = TrainerState(tiny_config(), synthetic_market(), torch.device("cpu"))
    load_checkpoint(fresh, manifest)
    assert torch.equal(fresh.counter, saved_counter)


def test_background_write_error_surfaces_at_the_next_wait_naming_the_file(tmp_path):
    state = trained_state()
    blocked = tmp_path / "checkpoints"
    blocked.write_text("a file where the checkpoint directory should be\n")
    writer = CheckpointWriter()
    writer.save(state, blocked, {}, keep=2)  # returns at once; the thread fails
    with pytest.raises(OSError) as info:
        writer.wait()
    assert str(blocked) in os_error_text(info.value)
    assert os_error_text(info.value).startswith(f"file system error on {blocked}")
    writer.wait()  # the error is raised once; the writer is usable again
    writer.save(state, tmp_path / "elsewhere", {}, keep=2)
    writer.wait()
    assert latest_checkpoint(tmp_path / "elsewhere")


def test_background_write_error_is_raised_by_the_next_save_and_on_leaving_the_block(tmp_path):
    state = trained_state()
    blocked = tmp_path / "checkpoints"
    blocked.write_text("not a directory\n")
    with pytest.raises(OSError, match="checkpoints"), CheckpointWriter() as writer:
        writer.save(state, blocked, {}, keep=2)
    writer = CheckpointWriter()
    writer.save(state, blocked, {}, keep=2)
    with pytest.raises(OSError, match="checkpoints"):
        writer.save(state, tmp_path / "fine", {}, keep=2)  # waits for the failed write first


def test_leaving_the_block_on_another_error_keeps_that_error(tmp_path):
    state = trained_state()
    blocked = tmp_path / "checkpoints"
    blocked.write_text("not a directory\n")
    with pytest.raises(KeyError, match="the loop's own error"), CheckpointWriter() as writer:
        writer.save(state, blocked, {}, keep=2)
        raise KeyError("the loop's own error")


@pytest.mark.gpu
def test_background_writer_on_cuda_copies_through_pinned_buffers_and_matches_a_synchronous_save(tmp_path):
    config = tiny_config(run={"device": "cuda"})
    state = TrainerState(config, synthetic_market(), torch.device("cuda"))
    step = TrainStep(state)
    for _ in range(6):
        step.collect()
    StepRunner(step, use_graph=True).run(5)
    synchronous = save_checkpoint(state, tmp_path / "sync", extra={})
    writer = CheckpointWriter()
    for _ in range(2):  # the second save reuses the pinned buffers of the first
        writer.save(state, tmp_path / "thread", {}, keep=2)
    state.isv.write_input("EPOCH_INDEX", 99.0)  # a host write to the mapped ISV right after the save
    StepRunner(step, use_graph=False).run(2)  # kernels after the save must not reach its snapshot
    writer.wait()
    for name in (synchronous.name, synchronous.with_suffix(".safetensors").name):
        assert (tmp_path / "thread" / name).read_bytes() == (tmp_path / "sync" / name).read_bytes(), name
