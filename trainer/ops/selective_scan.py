"""Selective scan (Mamba2-style diagonal SSM): CUDA launcher, PyTorch reference, autograd wrapper.

Why a custom kernel: the scan is a length-K recurrence per (sample, channel, state); in plain
PyTorch it is K small kernel launches forward and more backward, which dominates a training step
captured in a CUDA graph. ``cuda/selective_scan.cu`` runs the whole recurrence in one launch each
way, without atomics (bitwise-reproducible). On CPU tensors ``selective_scan`` runs
``selective_scan_reference`` and autograd differentiates it.

Shapes: x, delta [B, K, D]; A [D] (negative); Bm, Cm [B, K, N]; Dskip [D] → y [B, K, D].
Agents: the kernels also take A, Dskip [P, D] with B = P·rows (agent p owns samples p·rows …
(p+1)·rows − 1); ``SelectiveScanFunction``'s batching rule folds a ``torch.func.vmap`` over a
stacked population's agents into that form, so the scan of every agent is one launch each way.
"""

from __future__ import annotations

import torch

KERNEL_OP = "selective_scan"  # cuda/selective_scan.cu
FORWARD_KERNEL = "selective_scan_fwd"
BACKWARD_KERNEL = "selective_scan_bwd"
SCAN_MAX_K = 64  # mirrors SCAN_MAX_K in cuda/selective_scan.cu (per-thread state storage)
WARP_LANES = 32
MAX_BLOCK_LANES = 1024


def selective_scan_reference(
    x: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor,
) -> torch.Tensor:
    """Plain PyTorch recurrence with the kernel's semantics (any dtype, any device, autograd)."""
    batch, window, channels = x.shape
    n_state = Bm.shape[-1]
    h = x.new_zeros(batch, channels, n_state)  # [B, D, N]
    outputs = []
    for k in range(window):
        decay = torch.exp(delta[:, k, :] * A)  # [B, D]
        drive = (delta[:, k, :] * x[:, k, :]).unsqueeze(-1) * Bm[:, k, :].unsqueeze(1)  # [B, D, N]
        h = decay.unsqueeze(-1) * h + drive
        y_k = (h * Cm[:, k, :].unsqueeze(1)).sum(-1) + Dskip * x[:, k, :]  # [B, D]
        outputs.append(y_k)
    return torch.stack(outputs, dim=1)  # [B, K, D]


def check_scan_shapes(x: torch.Tensor, Bm: torch.Tensor) -> None:
    """Reject shapes the kernel's launch geometry cannot hold, with the allowed ranges."""
    _, window, channels = x.shape
    n_state = Bm.shape[-1]
    lanes = channels * n_state
    if n_state > WARP_LANES or n_state & (n_state - 1):
        raise ValueError(
            f"selective scan state size is not a power of two ≤ {WARP_LANES} ({n_state} vs 1, 2, 4, "
            f"8, 16 or 32) — hint: set model.scan_state to a power of two"
        )
    if lanes % WARP_LANES or lanes > MAX_BLOCK_LANES:
        raise ValueError(
            f"selective scan channels × state = {lanes} (vs a multiple of {WARP_LANES} in "
            f"[{WARP_LANES}, {MAX_BLOCK_LANES}]) — hint: adjust model.scan_channels"
        )
    if window > SCAN_MAX_K:
        raise ValueError(
            f"selective scan window too long ({window} vs at most {SCAN_MAX_K}) — hint: lower "
            f"model.window"
        )


def _launch(name: str, grid: int, block: int, args: tuple, shared_bytes: int = 0) -> None:
    """Launch one block per sample on torch's current stream (so CUDA-graph capture records it)."""
    import cupy
    import numpy as np

    from trainer.ops.loader import load_kernel, pointer

    device = args[0].device
    kernel = load_kernel(KERNEL_OP, name, device)
    kernel_args = tuple(pointer(a) if isinstance(a, torch.Tensor) else np.int32(a) for a in args)
    torch_stream = torch.cuda.current_stream(device)
    cached = _stream_cache.get(torch_stream.cuda_stream)
    if cached is None:
        external = (
            cupy.cuda.Stream.from_external(torch_stream)
            if hasattr(torch_stream, "__cuda_stream__") and hasattr(cupy.cuda.Stream, "from_external")
            else cupy.cuda.ExternalStream(torch_stream.cuda_stream)
        )
        cached = (torch_stream, external)  # keep the torch stream alive beside its CuPy view
        _stream_cache[torch_stream.cuda_stream] = cached
    with cupy.cuda.Device(device.index if device.index is not None else torch.cuda.current_device()), cached[1]:
        kernel((grid,), (block,), kernel_args, shared_mem=shared_bytes)


_stream_cache: dict[int, tuple] = {}


def selective_scan_forward_cuda(
    x: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, Dskip: torch.Tensor
) -> torch.Tensor:
    """One kernel launch on torch's current stream (captured when a CUDA graph is recording).
    A, Dskip: [D], or [P, D] with the batch made of P agents' equal blocks of samples."""
    batch, window, channels = x.shape
    n_state = Bm.shape[-1]
    y = torch.empty_like(x)  # [B, K, D]
    if batch == 0:
        return y
    _launch(
        FORWARD_KERNEL,
        batch,
        channels * n_state,
        (x, delta, A, Bm, Cm, Dskip, y, window, channels, n_state, rows_per_agent(batch, A)),
    )
    return y


def rows_per_agent(batch: int, A: torch.Tensor) -> int:
    """Samples per agent of a batch whose A is [D] (one agent) or [P, D] (P agents, B = P·rows)."""
    agents = A.shape[0] if A.dim() == 2 else 1
    if batch % agents:
        raise ValueError(
            f"selective scan batch does not split over the agents ({batch} samples vs a multiple of {agents}) — "
            f"hint: fold equal per-agent batches, agent-major"
        )
    return max(batch // agents, 1)


def selective_scan_backward_cuda(
    x: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor,
    dy: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
    """Gradients (dx, ddelta, dA, dBm, dCm, dDskip); dA/dDskip summed deterministically over the
    samples of each agent (shaped like A and Dskip)."""
    batch, window, channels = x.shape
    n_state = Bm.shape[-1]
    dx = torch.empty_like(x)
    ddelta = torch.empty_like(delta)
    dBm = torch.empty_like(Bm)
    dCm = torch.empty_like(Cm)
    dA_partial = x.new_empty(batch, channels)  # [B, D] per-sample partials
    dD_partial = x.new_empty(batch, channels)  # [B, D]
    if batch == 0:
        return dx, ddelta, torch.zeros_like(A), dBm, dCm, torch.zeros_like(Dskip)
    _launch(
        BACKWARD_KERNEL,
        batch,
        channels * n_state,
        (x, delta, A, Bm, Cm, Dskip, dy, dx, ddelta, dBm, dCm, dA_partial, dD_partial, window, channels, n_state,
         rows_per_agent(batch, A)),
        shared_bytes=2 * channels * n_state * 4,
    )  # fmt: skip
    if A.dim() == 1:
        return dx, ddelta, dA_partial.sum(0), dBm, dCm, dD_partial.sum(0)
    agents = A.shape[0]
    dA = dA_partial.view(agents, batch // agents, channels).sum(1)  # [P, D]
    dD = dD_partial.view(agents, batch // agents, channels).sum(1)  # [P, D]
    return dx, ddelta, dA, dBm, dCm, dD


def _per_sample(parameter: torch.Tensor, batch: int) -> torch.Tensor:
    """A or Dskip [D] / [P, D] as one row per sample [B, D] (the reference's broadcast of the kernel's indexing)."""
    if parameter.dim() == 1:
        return parameter
    return parameter.repeat_interleave(batch // parameter.shape[0], dim=0)  # [B, D]


class SelectiveScanFunction(torch.autograd.Function):
    """Autograd wrapper around the CUDA forward/backward kernels (float32, contiguous inputs).

    On CPU tensors it runs the reference (its backward differentiates the reference), which is how
    its batching rule is tested without a GPU. ``vmap``: the batching rule of ``torch.func.vmap``
    — every agent's samples folded into one batch, agent-major, A and Dskip [P, D] — so a stacked
    population's scan is one launch each way whatever the number of agents.
    """

    @staticmethod
    def forward(x, delta, A, Bm, Cm, Dskip):  # type: ignore[override]
        tensors = tuple(t.contiguous() for t in (x, delta, A, Bm, Cm, Dskip))
        if not x.is_cuda:
            batch = x.shape[0]
            x, delta, A, Bm, Cm, Dskip = tensors
            return selective_scan_reference(x, delta, _per_sample(A, batch), Bm, Cm, _per_sample(Dskip, batch))
        return selective_scan_forward_cuda(*tensors)

    @staticmethod
    def setup_context(ctx, inputs, output):  # type: ignore[override]
        ctx.save_for_backward(*(t.contiguous() for t in inputs))

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        if not dy.is_cuda:
            inputs = tuple(t.detach().requires_grad_() for t in ctx.saved_tensors)
            with torch.enable_grad():
                x, delta, A, Bm, Cm, Dskip = inputs
                y = selective_scan_reference(x, delta, _per_sample(A, x.shape[0]), Bm, Cm, _per_sample(Dskip, x.shape[0]))
                return torch.autograd.grad(y, inputs, dy)
        return selective_scan_backward_cuda(*ctx.saved_tensors, dy.contiguous())

    @staticmethod
    def vmap(info, in_dims, x, delta, A, Bm, Cm, Dskip):  # type: ignore[override]
        agents = info.batch_size

        def leading(tensor: torch.Tensor, dim: int | None) -> torch.Tensor:
            # The agent dimension first ([P, …]); an input shared by every agent is repeated.
            if dim is None:
                return tensor.unsqueeze(0).expand(agents, *tensor.shape)
            return tensor.movedim(dim, 0)

        x, delta, A, Bm, Cm, Dskip = (leading(t, d) for t, d in zip((x, delta, A, Bm, Cm, Dskip), in_dims, strict=True))
        rows, window, channels = x.shape[1:]
        folded = SelectiveScanFunction.apply(
            x.reshape(agents * rows, window, channels), delta.reshape(agents * rows, window, channels),
            A.contiguous(), Bm.reshape(agents * rows, window, -1), Cm.reshape(agents * rows, window, -1),
            Dskip.contiguous(),
        )  # fmt: skip  # [P·B, K, D]
        return folded.view(agents, rows, window, channels), 0


def selective_scan(
    x: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor,
) -> torch.Tensor:
    """The scan on the tensors' device: the CUDA kernel for float32 CUDA tensors, else the reference.

    Inside ``torch.func.vmap`` on CUDA (the stacked population maps the network over its agents)
    the kernel runs through ``SelectiveScanFunction``'s batching rule: one launch for every agent.
    """
    if x.is_cuda and x.dtype == torch.float32:
        check_scan_shapes(x, Bm)
        return SelectiveScanFunction.apply(x, delta, A, Bm, Cm, Dskip)
    return selective_scan_reference(x, delta, A, Bm, Cm, Dskip)
