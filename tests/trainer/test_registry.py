"""StateResetRegistry: one lifecycle and one dispatch arm per piece of training state."""

from __future__ import annotations

import pytest
import torch

from trainer.config import TrainConfig
from trainer.errors import UserError
from trainer.layout import (
    FEATURE_STRIDE,
    ISV,
    ISV_ATOM_CENTRE,
    ISV_KELLY_CAP,
    N_BRANCHES,
    PS_KELLY_WINS,
    Writer,
)
from trainer.ops.adaptive_atom_support import adaptive_atom_support
from trainer.ops.adaptive_machinery import AdaptiveMachinery, AdaptiveParams
from trainer.registry import (
    Boundary,
    FoldReset,
    SchemaContract,
    SoftReset,
    StateEntry,
    StateKind,
    StateResetRegistry,
    TrainingPersist,
    UnknownStateError,
    WindowReset,
    allocation_names,
    build_trainer_registry,
    host_counters,
    isv_lifecycles,
)
from trainer.train.step import MarketWindow, TrainerState

TINY = {
    "env": {"n_envs": 4, "episode_length": 32},
    "model": {"window": 2, "temporal_encoder": False, "hidden": 16, "head_hidden": 8, "n_atoms": 11, "iqn_embedding": 8},
    "loss": {"n_step": 2, "iqn_tau_samples": 2, "iqn_target_samples": 2},
    "replay": {"capacity": 64, "batch_size": 8, "learning_starts": 8},
    "run": {"steps": 4, "epoch_steps": 2, "device": "cpu", "cuda_graph": False},
}  # fmt: skip


def tiny_state(seed: int = 0) -> tuple[TrainerState, AdaptiveMachinery]:
    config = TrainConfig().replace(**TINY)
    generator = torch.Generator().manual_seed(seed)
    close = (100.0 * torch.exp(torch.cumsum(torch.randn(200, generator=generator, dtype=torch.float64) * 1e-3, 0))).float()
    features = torch.randn(200, FEATURE_STRIDE, generator=generator)
    state = TrainerState(config, MarketWindow(close[2:], torch.zeros(198), features, offset=2), torch.device("cpu"))
    return state, AdaptiveMachinery(state.isv, params=AdaptiveParams.from_config(config))


def _allocations(state: TrainerState, machinery: AdaptiveMachinery) -> list[str]:
    return allocation_names([*state.named_tensors(), *machinery.named_tensors()], host_counters(state))


def test_every_trainer_allocation_has_exactly_one_entry():
    state, machinery = tiny_state()
    registry = build_trainer_registry(state, machinery)
    allocations = _allocations(state, machinery)
    assert len(allocations) > 40  # network, optimizer, replay, env, ISV slot groups, host counters
    registry.require_complete(allocations)
    with pytest.raises(UserError, match=r"training state without a StateResetRegistry entry \(new\.buffer vs"):
        registry.require_complete([*allocations, "new.buffer"])


def test_every_isv_slot_group_has_a_lifecycle_matching_its_writer_class():
    state, machinery = tiny_state()
    registry = build_trainer_registry(state, machinery)
    for slot in ISV.slots:
        if slot.writer is Writer.FINGERPRINT:
            continue
        lifecycle = registry.category(f"isv:{slot.name}")
        if slot.writer is Writer.STATIC_CONFIG:
            assert isinstance(lifecycle, SchemaContract), slot.name
        elif slot.writer is Writer.CPU_INPUT:
            assert isinstance(lifecycle, FoldReset), slot.name
        else:
            assert isinstance(lifecycle, (FoldReset, SoftReset)), slot.name
    assert isinstance(registry.category("isv:FINGERPRINT"), SchemaContract)
    gpu_slots = {slot.name for slot in ISV.slots if slot.writer is Writer.GPU_COMPUTED}
    assert set(isv_lifecycles(machinery.params)) == gpu_slots


def test_fold_reset_restores_fresh_values_and_keeps_what_is_learned():
    state, machinery = tiny_state()
    fresh, _ = tiny_state()
    registry = build_trainer_registry(state, machinery)
    with torch.no_grad():
        for name, tensor in state.named_tensors().items():
            if tensor.dtype.is_floating_point and name != "isv":
                tensor.add_(1.5)  # pretend a fold trained everything
        state.isv.tensor[ISV_KELLY_CAP] = 0.9  # and the kernels moved the adaptive slots
        state.isv.tensor[ISV_ATOM_CENTRE] = 4.0
    state.collect_steps, state.steps_done = 17, 17
    actions = registry.reset_fold()
    after, before = state.named_tensors(), fresh.named_tensors()
    for name in ("replay.rewards", "nstep.rewards", "metrics.sums", "metrics.action_counts"):
        assert torch.equal(after[name], before[name]), name
    kelly = slice(PS_KELLY_WINS, PS_KELLY_WINS + 4)
    assert torch.equal(after["env.ps"][:, kelly], before["env.ps"][:, kelly])  # back to the prior
    for slot in ISV.slots:
        if slot.writer in (Writer.GPU_COMPUTED, Writer.CPU_INPUT):
            assert state.isv.read(slot.name) == fresh.isv.read(slot.name), slot.name
    assert state.collect_steps == 0 and state.steps_done == 17
    online = next(name for name in after if name.startswith("online."))
    assert not torch.equal(after[online], before[online])  # the network is what carries over
    assert actions["online"] == "kept" and actions["isv:ATOM_CENTRE"] == "soft" and actions["isv:FEE_RATE"] == "verified"


def test_soft_reset_writes_the_bootstrap_and_the_kernel_ema_decays_from_it():
    state, machinery = tiny_state()
    registry = build_trainer_registry(state, machinery)
    soft = registry.category("isv:ATOM_CENTRE")
    assert isinstance(soft, SoftReset) and soft.decay_bars == machinery.params.atoms.decay_bars
    isv = state.isv.tensor
    isv[ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES] = 3.0  # a trained value from the last fold
    registry.reset_named_state("isv:ATOM_CENTRE")
    assert state.isv.read("ATOM_CENTRE") == (0.0,) * N_BRANCHES  # the layout bootstrap
    adaptive_atom_support(torch.full((4, N_BRANCHES), 2.0), isv, machinery.params.atoms)
    assert isv[ISV_ATOM_CENTRE].item() == pytest.approx(soft.ema_rate * 2.0, rel=1e-5)


def test_window_boundary_resets_only_window_state():
    state, machinery = tiny_state()
    registry = build_trainer_registry(state, machinery)
    state.metrics.fill_(2.0)
    state.isv.tensor[ISV_KELLY_CAP] = 0.33
    actions = registry.reset_boundary(Boundary.WINDOW)
    assert float(state.metrics.abs().sum()) == 0.0
    assert state.isv.read("KELLY_CAP") == pytest.approx(0.33)
    assert set(actions) == {entry.name for entry in registry.with_lifecycle(WindowReset)}


def test_schema_contracts_catch_a_changed_static_slot():
    state, machinery = tiny_state()
    registry = build_trainer_registry(state, machinery)
    state.isv.write_config("FEE_RATE", 0.5)
    with pytest.raises(UserError, match=r"static ISV slot FEE_RATE changed during the run \(0\.5 vs"):
        registry.reset_fold()


def test_unknown_names_and_malformed_entries_are_explained():
    registry = StateResetRegistry()
    registry.add("replay", FoldReset(), StateKind.REPLAY, "ring", reset=lambda: None)
    with pytest.raises(UnknownStateError, match=r"unknown training state 'replay\.x' \(replay\.x vs one of 1 registered names, e\.g\. replay\) — hint: add"):
        registry.reset_named_state("replay.x")
    with pytest.raises(ValueError, match=r"registered twice"):
        registry.add("replay", FoldReset(), StateKind.REPLAY, "ring", reset=lambda: None)
    with pytest.raises(ValueError, match=r"FoldReset without a reset arm"):
        StateEntry("x", FoldReset(), StateKind.HOST, "x")
    with pytest.raises(ValueError, match=r"SchemaContract without a verify arm"):
        StateEntry("x", SchemaContract(), StateKind.HOST, "x")
    with pytest.raises(ValueError, match=r"TrainingPersist but has a reset/verify arm"):
        StateEntry("x", TrainingPersist(), StateKind.HOST, "x", reset=lambda: None)
    with pytest.raises(ValueError, match=r"only TrainingPersist state is carried"):
        StateEntry("x", FoldReset(), StateKind.HOST, "x", reset=lambda: None, carry=lambda previous: None)
    with pytest.raises(ValueError, match=r"SoftReset decay horizon too short \(0 vs ≥ 1 bar\)"):
        SoftReset(0)
    with pytest.raises(UserError, match=r"more than one StateResetRegistry entry \(replay: replay, all"):
        registry.add("all", WindowReset(), StateKind.HOST, "all", reset=lambda: None, covers=("*",))
        registry.require_complete(["replay"])
