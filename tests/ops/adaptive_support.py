"""Shared helpers of the adaptive-kernel tests: fresh ISVs and the llm.c-style comparison."""

from __future__ import annotations

import torch

from trainer.isv import Isv


def fresh_isv(device: str = "cpu") -> Isv:
    return Isv(device)


def assert_close(name: str, got: torch.Tensor, want: torch.Tensor, atol: float = 1e-6, rtol: float = 1e-5) -> None:
    """Fail with the first mismatching indices and the max error (atol + rtol·|ref|)."""
    got, want = got.detach().to("cpu", torch.float64).reshape(-1), want.detach().to("cpu", torch.float64).reshape(-1)
    error = (got - want).abs()
    bad = error > atol + rtol * want.abs()
    if bool(bad.any()):
        first = torch.nonzero(bad).reshape(-1)[:5].tolist()
        details = ", ".join(f"[{i}] {got[i].item():.9g} vs {want[i].item():.9g}" for i in first)
        raise AssertionError(f"{name}: {int(bad.sum())} mismatches, max error {error.max().item():.3g}; first: {details}")
