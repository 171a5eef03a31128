"""Selective scan: finite-difference gradcheck of the reference, GPU kernel parity forward+backward."""

from __future__ import annotations

import pytest
import torch

from trainer.ops.selective_scan import (
    SelectiveScanFunction,
    check_scan_shapes,
    selective_scan,
    selective_scan_reference,
)


def scan_inputs(batch, window, channels, state, dtype, device="cpu", seed=0):
    generator = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=generator, dtype=torch.float64) * scale).to(device=device, dtype=dtype)

    x = rand(batch, window, channels)
    delta = torch.nn.functional.softplus(rand(batch, window, channels) - 1.0)
    A = -torch.exp(rand(channels, scale=0.5))
    Bm = rand(batch, window, state)
    Cm = rand(batch, window, state)
    Dskip = rand(channels)
    return [t.requires_grad_(True) for t in (x, delta, A, Bm, Cm, Dskip)]


def loop_reference(x, delta, A, Bm, Cm, Dskip):
    """Scalar loops straight from the recurrence (independent of the vectorised reference)."""
    batch, window, channels = x.shape
    state = Bm.shape[-1]
    y = torch.zeros_like(x)
    for b in range(batch):
        for d in range(channels):
            h = [0.0] * state
            for k in range(window):
                total = 0.0
                for n in range(state):
                    h[n] = float(torch.exp(delta[b, k, d] * A[d])) * h[n] + float(delta[b, k, d] * Bm[b, k, n] * x[b, k, d])
                    total += float(Cm[b, k, n]) * h[n]
                y[b, k, d] = total + float(Dskip[d] * x[b, k, d])
    return y


def test_reference_matches_scalar_loops():
    inputs = [t.detach() for t in scan_inputs(2, 3, 4, 2, torch.float64)]
    torch.testing.assert_close(selective_scan_reference(*inputs), loop_reference(*inputs))


def test_reference_gradcheck_float64():
    inputs = scan_inputs(2, 4, 3, 2, torch.float64)
    assert torch.autograd.gradcheck(selective_scan_reference, inputs, eps=1e-6, atol=1e-6)


def test_cpu_dispatch_runs_the_reference():
    inputs = [t.detach().float() for t in scan_inputs(2, 5, 8, 4, torch.float64)]
    torch.testing.assert_close(selective_scan(*inputs), selective_scan_reference(*inputs))


@pytest.mark.parametrize("state,channels", [(3, 32), (32, 64), (16, 3)])
def test_shape_guard_names_the_allowed_range(state, channels):
    x = torch.zeros(1, 2, channels)
    with pytest.raises(ValueError, match="hint"):
        check_scan_shapes(x, torch.zeros(1, 2, state))


def _report_mismatch(name, got, expected, atol, rtol):
    error = (got - expected).abs()
    bad = error > atol + rtol * expected.abs()
    if bad.any():
        first = bad.nonzero()[:5].tolist()
        pytest.fail(f"{name}: {int(bad.sum())} mismatches, first at {first}, max error {float(error.max()):.3e}")


@pytest.mark.gpu
@pytest.mark.parametrize("batch,window,channels,state", [(1, 1, 32, 1), (3, 16, 32, 16), (5, 7, 2, 16), (2, 64, 64, 16), (4, 9, 32, 32)])
def test_gpu_kernel_parity_forward_backward(batch, window, channels, state):
    reference_inputs = scan_inputs(batch, window, channels, state, torch.float64, seed=batch + window)
    cuda_inputs = [t.detach().to("cuda", torch.float32).requires_grad_(True) for t in reference_inputs]
    y_ref = selective_scan_reference(*reference_inputs)
    y_gpu = selective_scan(*cuda_inputs)
    _report_mismatch("y", y_gpu.double().cpu(), y_ref.detach(), 1e-4, 1e-4)
    upstream = torch.randn(y_ref.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    y_ref.backward(upstream)
    y_gpu.backward(upstream.to("cuda", torch.float32))
    for name, ref_t, gpu_t in zip(("x", "delta", "A", "Bm", "Cm", "Dskip"), reference_inputs, cuda_inputs, strict=True):
        _report_mismatch(f"d{name}", gpu_t.grad.double().cpu(), ref_t.grad, 1e-3, 1e-3)


@pytest.mark.gpu
def test_gpu_kernel_is_bitwise_deterministic():
    inputs = [t.detach().to("cuda", torch.float32).requires_grad_(True) for t in scan_inputs(64, 16, 32, 16, torch.float64)]
    grads = []
    for _ in range(2):
        for t in inputs:
            t.grad = None
        y = selective_scan(*inputs)
        y.square().sum().backward()
        grads.append([y.detach().clone()] + [t.grad.clone() for t in inputs])
    for first, second in zip(*grads, strict=True):
        assert torch.equal(first, second)


# -- agents: the batching rule a stacked population's vmap goes through ---------------------------
def agent_scan_inputs(agents, batch, window, channels, state, device, dtype=torch.float32):
    """Each agent's own inputs ([P, …]: its samples and its A, Dskip), leaves with gradients."""
    per_agent = [scan_inputs(batch, window, channels, state, torch.float64, seed=11 + agent) for agent in range(agents)]
    return [torch.stack([inputs[i].detach() for inputs in per_agent]).to(device=device, dtype=dtype).requires_grad_(True)
            for i in range(6)]  # fmt: skip


def vmapped_scan(inputs):
    return torch.func.vmap(lambda *agent: SelectiveScanFunction.apply(*agent))(*inputs)  # [P, B, K, D]


def each_agent_alone(inputs, scan):
    """Every agent's scan on its own inputs: the outputs and the gradients of (y · upstream).sum()."""
    outputs, grads = [], []
    upstream = torch.randn(inputs[0].shape, generator=torch.Generator().manual_seed(5)).to(inputs[0])
    for agent in range(inputs[0].shape[0]):
        alone = [t[agent].detach().clone().requires_grad_(True) for t in inputs]
        y = scan(*alone)
        (y * upstream[agent]).sum().backward()
        outputs.append(y.detach())
        grads.append([t.grad for t in alone])
    return torch.stack(outputs), [torch.stack([g[i] for g in grads]) for i in range(6)], upstream


@pytest.mark.parametrize("agents,batch", [(1, 3), (3, 4), (4, 1)])
def test_batching_rule_is_every_agent_alone(agents, batch):
    """vmap over agents (A and Dskip per agent) equals each agent's own scan, forward and backward, on
    the Function's CPU path; the GPU test below checks the folded kernel launch the same way."""
    inputs = agent_scan_inputs(agents, batch, 5, 4, 2, "cpu", torch.float64)
    expected_y, expected_grads, upstream = each_agent_alone(inputs, selective_scan_reference)
    y = vmapped_scan(inputs)
    (y * upstream).sum().backward()
    torch.testing.assert_close(y.detach(), expected_y, rtol=1e-12, atol=1e-12)
    for name, tensor, expected in zip(("x", "delta", "A", "Bm", "Cm", "Dskip"), inputs, expected_grads, strict=True):
        torch.testing.assert_close(tensor.grad, expected, rtol=1e-10, atol=1e-10, msg=lambda m, name=name: f"d{name}: {m}")


def test_agents_must_split_the_batch_evenly():
    from trainer.ops.selective_scan import rows_per_agent

    assert rows_per_agent(12, torch.zeros(4)) == 12 and rows_per_agent(12, torch.zeros(3, 4)) == 4
    with pytest.raises(ValueError, match=r"does not split over the agents \(10 samples vs a multiple of 3\) — hint"):
        rows_per_agent(10, torch.zeros(3, 4))


@pytest.mark.gpu
@pytest.mark.parametrize("agents,batch,window,channels,state", [(2, 3, 16, 32, 16), (5, 1, 7, 2, 16), (3, 8, 64, 64, 16)])
def test_gpu_batching_rule_is_every_agent_alone(agents, batch, window, channels, state):
    """The folded launch (agent p's samples read row p of A and Dskip; dA, dDskip summed per agent)
    against each agent's own launch: bitwise forward, and the gradients within float32 rounding of a
    reordered sum (dA, dDskip: per-agent sums of the same per-sample partials)."""
    inputs = agent_scan_inputs(agents, batch, window, channels, state, "cuda")
    expected_y, expected_grads, upstream = each_agent_alone(inputs, selective_scan)
    y = vmapped_scan(inputs)
    (y * upstream).sum().backward()
    assert torch.equal(y.detach(), expected_y)
    for name, tensor, expected in zip(("x", "delta", "A", "Bm", "Cm", "Dskip"), inputs, expected_grads, strict=True):
        _report_mismatch(f"d{name}", tensor.grad.double().cpu(), expected.double().cpu(), 1e-5, 1e-5)
