"""The ISV bus: one f32 vector holding every adaptive signal, CPU-born input and static config value.

Why a pinned, device-mapped host buffer on CUDA: kernels (and torch ops inside a captured graph)
write the adaptive slots through the *device* pointer while the host monitors read the same bytes
through the *host* pointer — no copy, no transfer call in the hot path. On the CPU it is a plain
tensor and both views are the same tensor.

Writes from the host are only allowed through methods that check the slot's writer class
(invariant 1, "GPU drives, CPU reads"):

- ``write_input`` — CPU_INPUT slots (epoch index, total epochs);
- ``write_config`` — STATIC_CONFIG slots, at construction;
- ``bootstrap`` — GPU_COMPUTED slots, only their declared bootstrap value, at a reset;
- the fingerprint tail, written at construction and checked by ``verify_fingerprint``.

A GPU_COMPUTED slot refuses every other host write with a clear error.

Reading after the GPU wrote: a host read of mapped memory sees whatever the GPU has written *so
far*. To read a consistent value, synchronise the stream first — at a cold point only (epoch
boundary, checkpoint, monitor snapshot): ``snapshot(synchronize=True)`` does that. Never read the
ISV from inside the training step.
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch

from trainer.errors import LayoutMismatchError  # re-exported: `from trainer.isv import LayoutMismatchError`
from trainer.layout import (
    ISV,
    ISV_FINGERPRINT_HI,
    ISV_FINGERPRINT_LO,
    ISV_STRIDE,
    LAYOUT_FINGERPRINT,
    REGENERATE_COMMAND,
    Slot,
    Writer,
    fingerprint_from_halves,
    fingerprint_halves,
)


class IsvWriteError(PermissionError):
    """A host write that the slot's writer class does not allow."""


def _mapped_host_buffer(n_floats: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(host view, device view) of one cudaHostAllocMapped buffer of n_floats f32."""
    import cupy
    from cupy.cuda import runtime

    index = device.index if device.index is not None else torch.cuda.current_device()
    nbytes = n_floats * 4
    with cupy.cuda.Device(index):
        host_ptr = runtime.hostAlloc(nbytes, runtime.hostAllocMapped | runtime.hostAllocPortable)
        device_ptr = runtime.pointerGetAttributes(host_ptr).devicePointer
    host_array = np.ctypeslib.as_array((ctypes.c_float * n_floats).from_address(host_ptr))
    host_view = torch.from_numpy(host_array)  # [n] f32, CPU, aliases the pinned pages
    memory = cupy.cuda.UnownedMemory(device_ptr, nbytes, owner=host_array, device_id=index)
    device_array = cupy.ndarray((n_floats,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(memory, 0))
    device_view = torch.as_tensor(device_array, device=torch.device("cuda", index))  # [n] f32, same bytes
    # The pages are freed when the last view dies: torch views keep host_array alive (from_numpy),
    # the device view keeps the CuPy array alive, which keeps host_array alive (UnownedMemory owner).
    weakref.finalize(host_array, runtime.freeHost, host_ptr)
    return host_view, device_view


class Isv:
    """The ISV bus. ``tensor`` is what kernels and torch ops use; the host reads via ``read``/``snapshot``."""

    def __init__(self, device: torch.device | str = "cpu", config: Mapping[str, float | Iterable[float]] | None = None):
        self.device = torch.device(device)
        if self.device.type == "cuda":
            self.host, self.tensor = _mapped_host_buffer(ISV_STRIDE, self.device)
        else:
            self.host = torch.zeros(ISV_STRIDE, dtype=torch.float32)
            self.tensor = self.host
        self.host.zero_()
        for slot in ISV.slots:
            if slot.writer is not Writer.FINGERPRINT:
                self._store(slot, slot.values())
        if config:
            for name, value in config.items():
                self.write_config(name, value)
        self._write_fingerprint(LAYOUT_FINGERPRINT)

    @staticmethod
    def stacked(isvs: Sequence[Isv]) -> torch.Tensor:
        """One bus for a population: the agents' ISVs as the rows of one [P, ISV_STRIDE] buffer
        (on CUDA one pinned, device-mapped allocation), each agent's ``Isv`` re-pointed at its row
        (host and device views of the same bytes), so its monitors, checkpoints, resets and host
        writes keep working on it unchanged while the kernels read and write every row at once.
        Returns the device view [P, ISV_STRIDE]. Cold path: waits for the device before copying."""
        device = isvs[0].device
        agents = len(isvs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # every kernel that wrote an agent's old bus is done
            host, tensor = _mapped_host_buffer(agents * ISV_STRIDE, device)
            host, tensor = host.view(agents, ISV_STRIDE), tensor.view(agents, ISV_STRIDE)
        else:
            host = torch.zeros(agents, ISV_STRIDE, dtype=torch.float32)
            tensor = host
        for agent, isv in enumerate(isvs):
            if isv.device != device:
                raise ValueError(f"agent {agent}'s ISV is on {isv.device} (vs {device}) — hint: one device for a population")
            host[agent].copy_(isv.host)
            isv.host, isv.tensor = host[agent], tensor[agent]
        return tensor

    # -- reads ------------------------------------------------------------------------------
    def read(self, name: str) -> float | tuple[float, ...]:
        """Current value of a slot (a tuple for sub-arrays). Host read: see the module doc on syncing."""
        slot = ISV.slot(name)
        offset = ISV.offsets[name]
        values = tuple(float(v) for v in self.host[offset : offset + slot.width].tolist())
        return values[0] if slot.width == 1 else values

    def snapshot(self, synchronize: bool = False) -> dict[str, float]:
        """Every slot by name (sub-array elements as NAME[i]); synchronize=True first waits for the device."""
        if synchronize and self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        values = self.host.tolist()
        out: dict[str, float] = {}
        for slot in ISV.slots:
            if slot.writer is Writer.FINGERPRINT:
                continue
            offset = ISV.offsets[slot.name]
            if slot.width == 1:
                out[slot.name] = float(values[offset])
            else:
                for i in range(slot.width):
                    out[f"{slot.name}[{i}]"] = float(values[offset + i])
        out["FINGERPRINT"] = float(self.stored_fingerprint())
        return out

    # -- host writes, each checked against the slot's writer class ---------------------------
    def write_input(self, name: str, value: float | Iterable[float]) -> None:
        """Write a CPU-born input (epoch index, total epochs)."""
        self._store(self._writable(name, Writer.CPU_INPUT, "write_input"), value)

    def write_config(self, name: str, value: float | Iterable[float]) -> None:
        """Write a static configuration value (at construction)."""
        self._store(self._writable(name, Writer.STATIC_CONFIG, "write_config"), value)

    def bootstrap(self, names: Iterable[str] | None = None) -> None:
        """Reset GPU-computed slots to their declared bootstrap values (all of them by default).

        The value comes from the layout, never from a host computation: the kernels' EMAs decay from it.
        """
        chosen = [s.name for s in ISV.slots if s.writer is Writer.GPU_COMPUTED] if names is None else list(names)
        for name in chosen:
            slot = self._writable(name, Writer.GPU_COMPUTED, "bootstrap")
            self._store(slot, slot.values())

    def _writable(self, name: str, writer: Writer, method: str) -> Slot:
        slot = ISV.slot(name)
        if slot.writer is not writer:
            if slot.writer is Writer.GPU_COMPUTED:
                hint = "GPU-computed slots are written by kernels only; the host may only call bootstrap() at a reset"
            else:
                allowed = {Writer.CPU_INPUT: "write_input", Writer.STATIC_CONFIG: "write_config",
                           Writer.FINGERPRINT: "the constructor"}[slot.writer]  # fmt: skip
                hint = f"use {allowed} for this slot"
            raise IsvWriteError(
                f"host write to ISV slot {name} refused by {method} ({slot.writer.value} vs {writer.value}) — hint: {hint}"
            )
        return slot

    def _store(self, slot: Slot, value: float | Iterable[float]) -> None:
        values = [float(value)] * slot.width if isinstance(value, int | float) else [float(v) for v in value]
        if len(values) != slot.width:
            raise ValueError(
                f"ISV slot {slot.name} takes {slot.width} values ({len(values)} vs {slot.width}) — hint: one per element"
            )
        offset = ISV.offsets[slot.name]
        self.host[offset : offset + slot.width] = torch.tensor(values, dtype=torch.float32)

    # -- fingerprint -------------------------------------------------------------------------
    def _write_fingerprint(self, fingerprint: int) -> None:
        lo, hi = fingerprint_halves(fingerprint)
        bits = self.host.view(torch.int32)  # bit-exact: no float conversion (NaN patterns survive)
        bits[ISV_FINGERPRINT_LO] = lo
        bits[ISV_FINGERPRINT_HI] = hi

    def stored_fingerprint(self) -> int:
        bits = self.host.view(torch.int32)
        return fingerprint_from_halves(int(bits[ISV_FINGERPRINT_LO]), int(bits[ISV_FINGERPRINT_HI]))

    def verify_fingerprint(self) -> None:
        """Fail fast when the stored fingerprint is not this code's layout."""
        check_fingerprint(self.stored_fingerprint(), "ISV")

    # -- persistence (checkpoints) -----------------------------------------------------------
    def state(self) -> torch.Tensor:
        """A CPU copy of the whole vector, fingerprint included (read at a cold point)."""
        return self.host.clone()

    def load_state(self, saved: torch.Tensor) -> None:
        """Restore a saved vector after checking its fingerprint (no migration: a mismatch is fatal)."""
        if saved.shape != (ISV_STRIDE,) or saved.dtype != torch.float32:
            raise LayoutMismatchError(
                f"saved ISV has shape {tuple(saved.shape)} {saved.dtype} (vs [{ISV_STRIDE}] float32) — "
                "retrain required: the layout changed"
            )
        bits = saved.view(torch.int32)
        check_fingerprint(fingerprint_from_halves(int(bits[ISV_FINGERPRINT_LO]), int(bits[ISV_FINGERPRINT_HI])), "ISV")
        self.host.copy_(saved)


def check_fingerprint(found: int, what: str) -> None:
    """Raise LayoutMismatchError ("retrain required") unless ``found`` is this code's layout fingerprint."""
    if found != LAYOUT_FINGERPRINT:
        raise LayoutMismatchError(
            f"{what} layout fingerprint mismatch (found 0x{found:016x} vs expected 0x{LAYOUT_FINGERPRINT:016x}) — "
            f"retrain required: the saved state was made with a different trainer/layout.py; there is no "
            f"migration (if you changed the layout, also run `{REGENERATE_COMMAND}`)"
        )
