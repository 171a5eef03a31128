"""AdaptiveMonitor: read-only observers of the GPU-computed ISV values."""

from __future__ import annotations

import pytest
import torch

from trainer.isv import Isv
from trainer.layout import ISV, ISV_TAU, Writer
from trainer.monitors import (
    ADAPTIVE_MONITORS,
    AdaptiveMonitor,
    MonitorSet,
    MonitorSpec,
    adaptive_monitors,
    read_slot,
)
from trainer.ops.adaptive_schedule import adaptive_schedule


def test_every_gpu_computed_slot_has_exactly_one_monitor():
    watched = [slot for spec in ADAPTIVE_MONITORS for slot in spec.slots]
    assert len(watched) == len(set(watched))
    expected = set()
    for slot in ISV.slots:
        if slot.writer is Writer.GPU_COMPUTED:
            expected |= {slot.name} if slot.width == 1 else {f"{slot.name}[{i}]" for i in range(slot.width)}
    assert set(watched) == expected


def test_fire_rate_counts_changes_between_observations():
    isv = Isv("cpu")
    monitor = AdaptiveMonitor("tau", isv, ("TAU",))
    assert monitor.fire_rate() == 0.0  # nothing observed yet
    isv.host[ISV_TAU] = 0.004  # what the kernel would do
    assert monitor.observe() is True  # changed from the bootstrap seen at construction
    assert monitor.observe() is False  # unchanged
    isv.host[ISV_TAU] = 0.003
    assert monitor.observe() is True
    assert monitor.fire_rate() == pytest.approx(2 / 3)
    assert monitor.history == pytest.approx([0.004, 0.004, 0.003])


def test_monitors_never_write_the_isv():
    isv = Isv("cpu")
    monitors = adaptive_monitors(isv)
    isv.write_input("TOTAL_EPOCHS", 5.0)
    before = isv.host.clone()
    for _ in range(3):
        monitors.observe_all()
        monitors.diagnose_all()
        monitors.fire_rates()
        for monitor in monitors:
            monitor.read()
    assert torch.equal(isv.host, before)


def test_schedule_monitors_fire_every_epoch_of_a_cosine():
    isv = Isv("cpu")
    monitors = adaptive_monitors(isv)
    isv.write_input("TOTAL_EPOCHS", 6.0)
    for epoch in range(6):
        isv.write_input("EPOCH_INDEX", float(epoch))
        adaptive_schedule(isv.tensor)
        monitors.observe_all()
    rates = monitors.fire_rates()
    # epoch 0 reproduces the bootstrap (τ_start, progress 0); every later epoch moves both
    assert rates["tau"] == pytest.approx(5 / 6) and rates["training_progress"] == pytest.approx(5 / 6)
    assert rates["gamma_direction"] == 0.0  # healthy all along: γ sits at its upper bound


def test_diagnose_is_a_json_ready_snapshot():
    isv = Isv("cpu")
    snapshot = adaptive_monitors(isv)["atom_support_urgency"].diagnose()
    assert snapshot["slots"] == {"ATOM_CENTRE[3]": 0.0, "ATOM_HALF_WIDTH[3]": 10.0}
    assert snapshot["value"] == 0.0 and snapshot["fire_rate"] == 0.0 and snapshot["observations"] == 0
    assert adaptive_monitors(isv)["tau"].diagnose()["context"] == {"TRAINING_PROGRESS": 0.0, "LEARNING_HEALTH": 1.0}


def test_user_mistakes_are_explained():
    isv = Isv("cpu")
    with pytest.raises(KeyError, match=r"sub-array \(4 elements vs 1\) — hint: name one element, e.g. GAMMA\[0\]"):
        read_slot(isv, "GAMMA")
    with pytest.raises(KeyError, match=r"GAMMA\[9\]"):
        read_slot(isv, "GAMMA[9]")
    with pytest.raises(ValueError, match=r"duplicate monitor names \(tau vs unique\)"):
        MonitorSet(isv, [MonitorSpec("tau", ("TAU",)), MonitorSpec("tau", ("EPSILON",))])
    with pytest.raises(KeyError, match=r"unknown monitor \('nope'"):
        adaptive_monitors(isv)["nope"]
    with pytest.raises(ValueError, match=r"watches no slot"):
        AdaptiveMonitor("empty", isv, ())


def test_restore_rebuilds_fire_statistics_of_a_resumed_run():
    isv = Isv("cpu")
    live = adaptive_monitors(isv)
    isv.write_input("TOTAL_EPOCHS", 4.0)
    history = []
    for epoch in range(4):
        isv.write_input("EPOCH_INDEX", float(epoch))
        adaptive_schedule(isv.tensor)
        live.observe_all()
        history.append(live.diagnose_all())
    resumed = adaptive_monitors(isv)  # built after the restart: its baseline would be the current ISV
    resumed.restore(history[:3])
    isv.write_input("EPOCH_INDEX", 3.0)
    resumed.observe_all()
    assert resumed.fire_rates() == live.fire_rates()
    with pytest.raises(ValueError, match=r"cannot be restored from a snapshot without its slots"):
        resumed["tau"].restore([0.005], [{"value": 1.0}])
