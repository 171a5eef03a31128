"""Mamba2-style selective-scan temporal encoder over the last K bars.

Why selective: a plain linear recurrence forgets at a fixed rate; making the step size Δ and the
input/output projections B, C functions of the bar lets the encoder hold a regime for long and
drop a noisy bar at once (Gu & Dao's selection mechanism). The recurrence runs in the
``trainer.ops.selective_scan`` kernel on CUDA and in its PyTorch reference on the CPU.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from trainer.ops.selective_scan import selective_scan


class SelectiveScanEncoder(nn.Module):
    """[B, K, F] bar features → [B, D] summary of the window (the state read at the last bar)."""

    def __init__(self, n_features: int, channels: int, state_size: int) -> None:
        super().__init__()
        self.channels = channels
        self.state_size = state_size
        # One projection yields x (D), the output gate z (D), Δ before softplus (D), B (N), C (N).
        self.in_proj = nn.Linear(n_features, 3 * channels + 2 * state_size)
        # Mamba's initialisation: A = −(1..N)-like spread of decay rates, Δ in [1e-3, 1e-1].
        self.A_log = nn.Parameter(torch.log(torch.linspace(1.0, float(state_size), channels)))
        dt = torch.exp(torch.empty(channels).uniform_(math.log(1e-3), math.log(1e-1)))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹(dt)
        self.D = nn.Parameter(torch.ones(channels))
        self.norm = nn.LayerNorm(channels)

    def forward(self, window: torch.Tensor) -> torch.Tensor:
        projected = self.in_proj(window)  # [B, K, 3D + 2N]
        d, n = self.channels, self.state_size
        x, z, dt_raw, Bm, Cm = projected.split((d, d, d, n, n), dim=-1)
        delta = nn.functional.softplus(dt_raw + self.dt_bias)  # [B, K, D] > 0
        A = -torch.exp(self.A_log)  # [D] < 0: stable decay
        y = selective_scan(
            x.contiguous(), delta.contiguous(), A, Bm.contiguous(), Cm.contiguous(), self.D
        )  # [B, K, D]
        last = y[:, -1, :] * nn.functional.silu(z[:, -1, :])  # [B, D]
        return self.norm(last)
