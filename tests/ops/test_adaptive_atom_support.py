"""adaptive_atom_support: per-branch support from EMAs of the TD targets, variance gain, floor, bounds, drift EMA."""

from __future__ import annotations

import math

import pytest
import torch
from adaptive_support import assert_close, fresh_isv

from trainer.layout import (
    ISV_ATOM_CENTRE,
    ISV_ATOM_HALF_WIDTH,
    ISV_GAMMA,
    ISV_Q_MEAN_DRIFT_EMA,
    N_BRANCHES,
)
from trainer.ops.adaptive_atom_support import (
    AtomSupportParams,
    adaptive_atom_support,
    adaptive_atom_support_reference,
    support_bounds,
    variance_gain,
)

PARAMS = AtomSupportParams(v_min=-10.0, v_max=10.0, decay_bars=9, drift_decay_bars=9, k_sigma=4.0, half_width_floor=1.0)
ALPHA = 0.2  # 2 / (9 + 1)


def centres(isv: torch.Tensor) -> torch.Tensor:
    return isv[ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES]


def half_widths(isv: torch.Tensor) -> torch.Tensor:
    return isv[ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES]


def myopic_isv(device: str = "cpu"):
    """A fresh ISV with γ = 0 on every branch: variance gain 1, the support follows the targets' spread."""
    bus = fresh_isv(device)
    bus.tensor[ISV_GAMMA : ISV_GAMMA + N_BRANCHES] = 0.0
    return bus


def update(isv: torch.Tensor, td_targets: torch.Tensor, params=PARAMS) -> None:
    adaptive_atom_support(td_targets, isv, params)


def test_one_update_is_an_ema_step_towards_the_batch_statistics():
    isv = myopic_isv().host  # centre 0, half-width 10 (the layout bootstrap), γ = 0
    q = torch.tensor([[1.0, 2.0, -1.0, 0.0], [3.0, 2.0, -3.0, 0.0]])  # means 2, 2, −2, 0; stds 1, 0, 1, 0
    update(isv, q)
    assert_close("centre", centres(isv), torch.tensor([2.0, 2.0, -2.0, 0.0]) * ALPHA)
    want_half = 10.0 + ALPHA * (4.0 * torch.tensor([1.0, 0.0, 1.0, 0.0]) - 10.0)
    assert_close("half-width", half_widths(isv), want_half)
    assert isv[ISV_Q_MEAN_DRIFT_EMA].item() == pytest.approx(ALPHA * (2 + 2 + 2 + 0) / 4, rel=1e-6)


def test_the_support_covers_the_return_not_only_one_target():
    # Targets with σ = ½ at γ = 0.5, n = 1: Var(G) = ¼ / (1 − ¼), half-width → 4·sqrt(⅓).
    isv = fresh_isv().host
    isv[ISV_GAMMA : ISV_GAMMA + N_BRANCHES] = 0.5
    targets = torch.tensor([[-0.5] * N_BRANCHES, [0.5] * N_BRANCHES])  # mean 0, σ = ½
    for _ in range(80):
        update(isv, targets, AtomSupportParams(decay_bars=9, k_sigma=4.0, half_width_floor=0.1))
    want = 4.0 * math.sqrt(0.25 / 0.75)
    assert_close("half-width → k·σ_return", half_widths(isv), torch.full((N_BRANCHES,), want), atol=1e-3)


def test_variance_gain_is_the_stationary_bellman_variance_ratio():
    assert variance_gain(torch.tensor(0.0), 3).item() == 1.0
    assert variance_gain(torch.tensor(0.5), 1).item() == pytest.approx(4.0 / 3.0, rel=1e-6)
    assert variance_gain(torch.tensor(0.9), 2).item() == pytest.approx(1.0 / (1.0 - 0.9**4), rel=1e-5)
    assert variance_gain(torch.tensor(1.0), 1).item() == pytest.approx(1e6, rel=1e-3)  # bounded, never inf


def test_the_support_leaves_its_config_bound_when_the_targets_are_narrow():
    # The regression of issue 9: the support sat at its bound (centre 0, half-width 10) in every run.
    # Targets of a default-like run (γ = 0.99, n = 3): spread 0.2 → return σ ≈ 0.2·4.1 ≈ 0.82.
    isv = fresh_isv().host
    params = AtomSupportParams(n_step=3)
    isv[ISV_GAMMA : ISV_GAMMA + N_BRANCHES] = 0.99
    generator = torch.Generator().manual_seed(1)
    for _ in range(600):
        update(isv, torch.randn(128, N_BRANCHES, generator=generator) * 0.2 + 0.3, params)
    assert half_widths(isv).max().item() < 4.0
    assert centres(isv).min().item() > 0.2


def test_support_converges_to_the_q_distribution_and_keeps_its_floor():
    isv = myopic_isv().host
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(4096, N_BRANCHES, generator=generator) * torch.tensor([0.5, 1.0, 0.01, 2.0]) + 1.0
    for _ in range(60):
        update(isv, q)
    assert_close("centre → mean", centres(isv), q.mean(0), atol=1e-3, rtol=1e-3)
    want = torch.clamp(4.0 * q.std(0, unbiased=False), min=1.0)  # branch 2: 4·0.01 < floor
    assert_close("half-width → k·σ (floored)", half_widths(isv), want, atol=1e-2, rtol=1e-2)
    assert half_widths(isv)[2].item() == pytest.approx(1.0)


def test_support_stays_inside_the_config_bounds_for_extreme_values():
    isv = myopic_isv().host
    q = torch.full((8, N_BRANCHES), 1e6)
    q[::2] = -1e6  # σ = 1e6, mean 0
    for _ in range(50):
        update(isv, q + 5e5)
    lows, highs = support_bounds(isv)
    assert bool((lows >= PARAMS.v_min - 1e-4).all()) and bool((highs <= PARAMS.v_max + 1e-4).all())
    assert half_widths(isv).max().item() == pytest.approx(10.0)  # (v_max − v_min) / 2


def test_a_diverged_batch_leaves_the_support_alone():
    isv = fresh_isv().host
    before = isv.clone()
    q = torch.zeros(16, N_BRANCHES)
    q[3] = math.nan
    update(isv, q)
    assert torch.equal(isv, before)


def test_drift_grows_while_the_mean_keeps_moving_and_decays_when_it_settles():
    isv = myopic_isv().host
    for step in range(30):
        update(isv, torch.full((4, N_BRANCHES), 0.25 * step))
    moving = isv[ISV_Q_MEAN_DRIFT_EMA].item()
    for _ in range(60):
        update(isv, torch.full((4, N_BRANCHES), 0.25 * 29))
    assert moving > 0.5
    assert isv[ISV_Q_MEAN_DRIFT_EMA].item() < 0.1 * moving


def test_malformed_inputs_and_parameters_are_explained():
    with pytest.raises(ValueError, match=r"atom support inputs are malformed \(td_targets \(5, 3\).*\) — hint"):
        adaptive_atom_support(torch.zeros(5, 3), fresh_isv().host)
    with pytest.raises(ValueError, match=r"invalid atom support parameters \(v_max"):
        AtomSupportParams(v_min=1.0, v_max=-1.0)
    with pytest.raises(ValueError, match=r"invalid atom support parameters \(n_step 0 vs ≥ 1"):
        AtomSupportParams(n_step=0)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 3, 256, 257, 4099])
@pytest.mark.parametrize("scale", [0.0, 1.0, 1e4])
@pytest.mark.parametrize(("gamma", "n_step"), [(0.0, 1), (0.5, 1), (0.99, 3), (1.0, 2)])
def test_kernel_matches_reference(batch: int, scale: float, gamma: float, n_step: int):
    generator = torch.Generator().manual_seed(batch)
    targets = torch.randn(batch, N_BRANCHES, generator=generator) * scale + 0.5
    params = AtomSupportParams(v_min=-10.0, v_max=10.0, decay_bars=9, drift_decay_bars=9, k_sigma=4.0,
                               half_width_floor=1.0, n_step=n_step)  # fmt: skip
    bus = fresh_isv("cuda")
    bus.tensor[ISV_GAMMA : ISV_GAMMA + N_BRANCHES] = torch.tensor([gamma, gamma * 0.9, gamma * 0.5, 0.0])
    torch.cuda.synchronize()
    expected = bus.host.clone()
    targets_gpu = targets.cuda()
    for _ in range(3):
        adaptive_atom_support_reference(targets, expected, params)
        adaptive_atom_support(targets_gpu, bus.tensor, params)
    torch.cuda.synchronize()
    assert_close(f"atom support batch={batch} scale={scale} γ={gamma} n={n_step}", bus.host, expected, atol=1e-5,
                 rtol=1e-5)  # fmt: skip
