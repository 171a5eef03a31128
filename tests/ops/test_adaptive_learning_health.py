"""adaptive_learning_health: Sharpe EMA, gradient-norm EMA and learning health ∈ [0, 1]."""

from __future__ import annotations

import math

import pytest
import torch
from adaptive_support import assert_close, fresh_isv

from trainer.layout import (
    ISV_GRAD_NORM_EMA,
    ISV_LEARNING_HEALTH,
    ISV_Q_MEAN_DRIFT_EMA,
    ISV_SHARPE_EMA,
    PS_DSR_A,
    PS_DSR_B,
    PS_STRIDE,
)
from trainer.ops.adaptive_learning_health import (
    HealthParams,
    adaptive_learning_health,
    adaptive_learning_health_reference,
    env_sharpe,
)

FAST = HealthParams(sharpe_decay_bars=1, grad_decay_bars=1, health_decay_bars=1)  # α = 1: one update shows the target


def ps_with_sharpe(n_envs: int, mean: float, std: float) -> torch.Tensor:
    ps = torch.zeros(n_envs, PS_STRIDE)
    ps[:, PS_DSR_A] = mean
    ps[:, PS_DSR_B] = std * std + mean * mean
    return ps


def update(isv: torch.Tensor, ps: torch.Tensor, grad: float, params: HealthParams = FAST) -> torch.Tensor:
    adaptive_learning_health(ps, torch.tensor([grad]), isv, params)
    return isv


def test_sharpe_ema_reads_the_envs_dsr_emas():
    ps = ps_with_sharpe(5, 0.001, 0.01)
    assert env_sharpe(ps, fresh_isv().host)[0].item() == pytest.approx(0.1, rel=1e-4)
    isv = update(fresh_isv().host, ps, 1.0)
    assert isv[ISV_SHARPE_EMA].item() == pytest.approx(0.1, rel=1e-4)
    slow = update(fresh_isv().host, ps, 1.0, HealthParams(sharpe_decay_bars=19))
    assert slow[ISV_SHARPE_EMA].item() == pytest.approx(0.1 * 0.1, rel=1e-4)  # α = 2 / 20


def test_a_flat_stable_learner_is_healthy_and_profit_raises_health():
    flat = update(fresh_isv().host, ps_with_sharpe(4, 0.0, 0.01), 1.0)[ISV_LEARNING_HEALTH].item()
    winning = update(fresh_isv().host, ps_with_sharpe(4, 0.002, 0.01), 1.0)[ISV_LEARNING_HEALTH].item()
    losing = update(fresh_isv().host, ps_with_sharpe(4, -0.002, 0.01), 1.0)[ISV_LEARNING_HEALTH].item()
    assert flat == pytest.approx(0.75, rel=1e-5)
    assert losing < flat < winning <= 1.0
    assert losing >= 0.5  # profit is the minor term: stability dominates


def test_gradient_spikes_lower_health_and_the_first_norm_seeds_the_ema():
    isv = update(fresh_isv().host, ps_with_sharpe(4, 0.0, 0.01), 2.0)
    assert isv[ISV_GRAD_NORM_EMA].item() == 2.0  # cold EMA adopts the first norm
    calm = isv[ISV_LEARNING_HEALTH].item()
    spiked = update(isv.clone(), ps_with_sharpe(4, 0.0, 0.01), 2.0 * 5.0)  # 5× the EMA, tolerance 2×
    assert spiked[ISV_LEARNING_HEALTH].item() == pytest.approx(calm / (1.0 + 3.0), rel=1e-5)


def test_non_finite_gradients_drive_health_to_zero_and_keep_the_ema():
    isv = update(fresh_isv().host, ps_with_sharpe(4, 0.0, 0.01), 2.0)
    broken = update(isv, ps_with_sharpe(4, 0.0, 0.01), math.nan)
    assert broken[ISV_LEARNING_HEALTH].item() == 0.0
    assert broken[ISV_GRAD_NORM_EMA].item() == 2.0


def test_q_drift_relative_to_the_support_lowers_health():
    isv = fresh_isv().host
    isv[ISV_Q_MEAN_DRIFT_EMA] = 0.25 * 10.0  # one drift scale: the factor halves
    assert update(isv, ps_with_sharpe(4, 0.0, 0.01), 1.0)[ISV_LEARNING_HEALTH].item() == pytest.approx(0.375, rel=1e-5)


def test_health_is_an_ema_bounded_to_the_unit_interval():
    isv = fresh_isv().host
    slow = HealthParams(health_decay_bars=3)  # α = ½
    update(isv, ps_with_sharpe(4, 0.0, 0.01), 1.0, slow)
    assert isv[ISV_LEARNING_HEALTH].item() == pytest.approx(1.0 + 0.5 * (0.75 - 1.0), rel=1e-5)
    for _ in range(20):
        update(isv, ps_with_sharpe(4, 1.0, 1e-9), 1.0, slow)
        assert 0.0 <= isv[ISV_LEARNING_HEALTH].item() <= 1.0


def test_malformed_inputs_and_parameters_are_explained():
    with pytest.raises(ValueError, match=r"learning-health inputs are malformed \(grad_norm.*\) — hint"):
        adaptive_learning_health(torch.zeros(2, PS_STRIDE), torch.zeros(2), fresh_isv().host)
    with pytest.raises(ValueError, match=r"invalid learning-health parameters"):
        HealthParams(health_decay_bars=0)


@pytest.mark.gpu
@pytest.mark.parametrize("n_envs", [1, 255, 257, 4096 + 3])
@pytest.mark.parametrize("grads", [(1.0, 1.1, 9.0), (0.0, 0.0, 0.0), (2.0, math.nan, 2.0)])
@pytest.mark.parametrize("start_health", [0.0, 1.0])
def test_kernel_matches_reference(n_envs: int, grads: tuple[float, ...], start_health: float):
    generator = torch.Generator().manual_seed(n_envs)
    ps = torch.zeros(n_envs, PS_STRIDE)
    ps[:, PS_DSR_A] = torch.randn(n_envs, generator=generator) * 1e-3
    ps[:, PS_DSR_B] = ps[:, PS_DSR_A] ** 2 + torch.rand(n_envs, generator=generator) * 1e-4
    bus = fresh_isv("cuda")
    bus.host[ISV_LEARNING_HEALTH] = start_health
    bus.host[ISV_Q_MEAN_DRIFT_EMA] = 0.3
    expected = bus.host.clone()
    params = HealthParams()
    ps_gpu = ps.cuda()
    grad_gpu = torch.zeros(1, device="cuda")
    for grad in grads:
        adaptive_learning_health_reference(ps, torch.tensor([grad]), expected, params)
        grad_gpu.fill_(grad)
        adaptive_learning_health(ps_gpu, grad_gpu, bus.tensor, params)
    torch.cuda.synchronize()
    assert_close(f"health n={n_envs} grads={grads}", bus.host, expected, atol=1e-6, rtol=1e-5)
