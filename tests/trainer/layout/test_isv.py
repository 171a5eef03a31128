"""ISV bus: writer classes enforced, fingerprint checked, bootstrap from the layout."""

from __future__ import annotations

import pytest
import torch

from trainer.isv import Isv, IsvWriteError, LayoutMismatchError
from trainer.layout import (
    ISV,
    ISV_FINGERPRINT_HI,
    ISV_FINGERPRINT_LO,
    ISV_GAMMA,
    ISV_TAU,
    LAYOUT_FINGERPRINT,
    Writer,
)


def test_defaults_and_fingerprint_on_construction():
    isv = Isv("cpu")
    assert isv.stored_fingerprint() == LAYOUT_FINGERPRINT
    isv.verify_fingerprint()
    assert isv.read("GAMMA") == pytest.approx((0.99,) * 4)
    assert isv.read("LIMIT_FILL_PROB") == pytest.approx((0.3, 0.6, 0.9))


def test_host_write_to_gpu_computed_slot_is_refused():
    isv = Isv("cpu")
    for method in (isv.write_input, isv.write_config):
        with pytest.raises(IsvWriteError, match="ISV slot TAU refused.*gpu_computed.*written by kernels only"):
            method("TAU", 0.5)
    assert isv.read("TAU") == pytest.approx(0.005)


def test_each_writer_class_has_one_write_path():
    isv = Isv("cpu", config={"FEE_RATE": 2e-4, "MARKET_IMPACT": (1.0, 2.0, 3.0)})
    isv.write_input("EPOCH_INDEX", 3)
    assert isv.read("EPOCH_INDEX") == 3.0
    assert isv.read("FEE_RATE") == pytest.approx(2e-4)
    assert isv.read("MARKET_IMPACT") == (1.0, 2.0, 3.0)
    with pytest.raises(IsvWriteError, match="use write_config"):
        isv.write_input("FEE_RATE", 1.0)
    with pytest.raises(IsvWriteError, match="use write_input"):
        isv.write_config("EPOCH_INDEX", 1.0)
    with pytest.raises(IsvWriteError, match="constructor"):
        isv.write_config("FINGERPRINT_LO", 1.0)
    with pytest.raises(IsvWriteError, match="refused by bootstrap"):
        isv.bootstrap(["FEE_RATE"])
    with pytest.raises(ValueError, match="takes 3 values"):
        isv.write_config("MARKET_IMPACT", (1.0, 2.0))


def test_bootstrap_restores_declared_values_of_gpu_slots():
    isv = Isv("cpu")
    isv.tensor[ISV_TAU] = 0.2  # a kernel's write through the device view
    isv.tensor[ISV_GAMMA + 1] = 0.5
    isv.bootstrap(["TAU"])
    assert isv.read("TAU") == pytest.approx(0.005)
    assert isv.read("GAMMA")[1] == pytest.approx(0.5)
    isv.bootstrap()
    assert isv.read("GAMMA")[1] == pytest.approx(0.99)


def test_mismatch_fails_fast_with_retrain_required():
    isv = Isv("cpu")
    isv.host.view(torch.int32)[ISV_FINGERPRINT_LO] ^= 1
    with pytest.raises(LayoutMismatchError, match=r"retrain required") as info:
        isv.verify_fingerprint()
    assert f"0x{LAYOUT_FINGERPRINT:016x}" in str(info.value)
    assert f"0x{LAYOUT_FINGERPRINT ^ 1:016x}" in str(info.value)


def test_state_round_trip_and_mismatched_state_refused():
    isv = Isv("cpu", config={"DSR_ETA": 0.05})
    saved = isv.state()
    other = Isv("cpu")
    other.load_state(saved)
    assert other.read("DSR_ETA") == pytest.approx(0.05)
    corrupt = saved.clone()
    corrupt.view(torch.int32)[ISV_FINGERPRINT_HI] = 0
    with pytest.raises(LayoutMismatchError, match="retrain required"):
        other.load_state(corrupt)
    with pytest.raises(LayoutMismatchError, match="retrain required"):
        other.load_state(torch.zeros(3))


def test_snapshot_names_every_slot():
    snap = Isv("cpu").snapshot()
    for slot in ISV.slots:
        if slot.writer is Writer.FINGERPRINT:
            continue
        assert (slot.name in snap) if slot.width == 1 else (f"{slot.name}[{slot.width - 1}]" in snap)
    assert snap["FINGERPRINT"] == float(LAYOUT_FINGERPRINT)


@pytest.mark.gpu
def test_mapped_buffer_device_writes_are_host_visible_without_copy():
    isv = Isv("cuda")
    assert isv.tensor.is_cuda and not isv.host.is_cuda
    assert isv.tensor.data_ptr() != 0
    isv.tensor[ISV_TAU] = 0.125  # torch op through the device pointer
    isv.tensor[ISV_GAMMA : ISV_GAMMA + 4] *= 0.5
    snap = isv.snapshot(synchronize=True)
    assert snap["TAU"] == 0.125
    assert isv.read("GAMMA") == pytest.approx((0.495,) * 4)
    isv.write_config("FEE_RATE", 0.25)  # host write, device sees it
    assert float(isv.tensor[ISV.offsets["FEE_RATE"]].cpu()) == 0.25
    isv.verify_fingerprint()
