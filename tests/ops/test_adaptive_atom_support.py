"""adaptive_atom_support: per-branch support from EMAs of return statistics, floor, bounds, drift EMA."""

from __future__ import annotations

import math

import pytest
import torch
from adaptive_support import assert_close, fresh_isv

from trainer.layout import (
    ISV_ATOM_CENTRE,
    ISV_ATOM_HALF_WIDTH,
    ISV_Q_MEAN_DRIFT_EMA,
    N_BRANCHES,
)
from trainer.ops.adaptive_atom_support import (
    AtomSupportParams,
    adaptive_atom_support,
    adaptive_atom_support_reference,
    greedy_return_moments,
    support_bounds,
)

PARAMS = AtomSupportParams(v_min=-10.0, v_max=10.0, decay_bars=9, drift_decay_bars=9, k_sigma=4.0, half_width_floor=1.0)
ALPHA = 0.2  # 2 / (9 + 1)


def centres(isv: torch.Tensor) -> torch.Tensor:
    return isv[ISV_ATOM_CENTRE : ISV_ATOM_CENTRE + N_BRANCHES]


def half_widths(isv: torch.Tensor) -> torch.Tensor:
    return isv[ISV_ATOM_HALF_WIDTH : ISV_ATOM_HALF_WIDTH + N_BRANCHES]


def update(isv: torch.Tensor, q_mean: torch.Tensor, q_var: torch.Tensor | None = None, params=PARAMS) -> None:
    adaptive_atom_support(q_mean, torch.zeros_like(q_mean) if q_var is None else q_var, isv, params)


def test_one_update_is_an_ema_step_towards_the_batch_statistics():
    isv = fresh_isv().host  # centre 0, half-width 10 (the layout bootstrap)
    q = torch.tensor([[1.0, 2.0, -1.0, 0.0], [3.0, 2.0, -3.0, 0.0]])  # means 2, 2, −2, 0; stds 1, 0, 1, 0
    update(isv, q)
    assert_close("centre", centres(isv), torch.tensor([2.0, 2.0, -2.0, 0.0]) * ALPHA)
    want_half = 10.0 + ALPHA * (4.0 * torch.tensor([1.0, 0.0, 1.0, 0.0]) - 10.0)
    assert_close("half-width", half_widths(isv), want_half)
    assert isv[ISV_Q_MEAN_DRIFT_EMA].item() == pytest.approx(ALPHA * (2 + 2 + 2 + 0) / 4, rel=1e-6)


def test_the_support_covers_the_returns_not_only_their_means():
    isv = fresh_isv().host
    q_mean = torch.zeros(8, N_BRANCHES)
    q_var = torch.full((8, N_BRANCHES), 0.25)  # every greedy return distribution has σ = ½
    for _ in range(80):
        update(isv, q_mean, q_var, AtomSupportParams(decay_bars=9, k_sigma=4.0, half_width_floor=0.1))
    assert_close("half-width → k·σ_returns", half_widths(isv), torch.full((N_BRANCHES,), 2.0), atol=1e-3)


def test_support_converges_to_the_q_distribution_and_keeps_its_floor():
    isv = fresh_isv().host
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(4096, N_BRANCHES, generator=generator) * torch.tensor([0.5, 1.0, 0.01, 2.0]) + 1.0
    for _ in range(60):
        update(isv, q)
    assert_close("centre → mean", centres(isv), q.mean(0), atol=1e-3, rtol=1e-3)
    want = torch.clamp(4.0 * q.std(0, unbiased=False), min=1.0)  # branch 2: 4·0.01 < floor
    assert_close("half-width → k·σ (floored)", half_widths(isv), want, atol=1e-2, rtol=1e-2)
    assert half_widths(isv)[2].item() == pytest.approx(1.0)


def test_support_stays_inside_the_config_bounds_for_extreme_values():
    isv = fresh_isv().host
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
    isv = fresh_isv().host
    for step in range(30):
        update(isv, torch.full((4, N_BRANCHES), 0.25 * step))
    moving = isv[ISV_Q_MEAN_DRIFT_EMA].item()
    for _ in range(60):
        update(isv, torch.full((4, N_BRANCHES), 0.25 * 29))
    assert moving > 0.5
    assert isv[ISV_Q_MEAN_DRIFT_EMA].item() < 0.1 * moving


def test_greedy_return_moments_take_the_argmax_action_and_ignore_padding():
    supports = torch.tensor([[-1.0, 0.0, 1.0]] * N_BRANCHES)  # [D, N]
    probs = torch.zeros(1, N_BRANCHES, 3, 3)  # [B, D, A_max, N]
    probs[..., 1] = 1.0  # every action: return 0 for sure
    probs[0, 0, 1] = torch.tensor([0.0, 0.5, 0.5])  # direction action 1: mean ½, variance ¼
    probs[0, 2, 2] = torch.tensor([0.0, 0.0, 1.0])  # order-type action 2 is padding: must not win
    mask = torch.ones(N_BRANCHES, 3, dtype=torch.bool)
    mask[2, 2] = False
    mean, variance = greedy_return_moments(probs, supports, mask)
    assert mean.tolist() == [[0.5, 0.0, 0.0, 0.0]]
    assert variance.tolist() == [[0.25, 0.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match=r"C51 distributions and supports do not fit"):
        greedy_return_moments(probs, supports[:, :2])


def test_malformed_inputs_and_parameters_are_explained():
    with pytest.raises(ValueError, match=r"atom support inputs are malformed \(q_mean \(5, 3\).*\) — hint"):
        adaptive_atom_support(torch.zeros(5, 3), torch.zeros(5, 3), fresh_isv().host)
    with pytest.raises(ValueError, match=r"invalid atom support parameters \(v_max"):
        AtomSupportParams(v_min=1.0, v_max=-1.0)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 3, 256, 257, 4099])
@pytest.mark.parametrize("scale", [0.0, 1.0, 1e4])
def test_kernel_matches_reference(batch: int, scale: float):
    generator = torch.Generator().manual_seed(batch)
    q_mean = torch.randn(batch, N_BRANCHES, generator=generator) * scale + 0.5
    q_var = torch.rand(batch, N_BRANCHES, generator=generator) * scale
    bus = fresh_isv("cuda")
    expected = bus.host.clone()
    q_mean_gpu, q_var_gpu = q_mean.cuda(), q_var.cuda()
    for _ in range(3):
        adaptive_atom_support_reference(q_mean, q_var, expected, PARAMS)
        adaptive_atom_support(q_mean_gpu, q_var_gpu, bus.tensor, PARAMS)
    torch.cuda.synchronize()
    assert_close(f"atom support batch={batch} scale={scale}", bus.host, expected, atol=1e-5, rtol=1e-5)
