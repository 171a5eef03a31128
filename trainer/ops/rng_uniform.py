"""rng_uniform: fill a buffer with Philox uniforms — CuPy kernel (cuda/rng_uniform.cu) + PyTorch reference.

The kernel is the GPU twin of ``trainer.ops.rng.uniform``; its parity test is what proves that
cuda/rng.cuh and the torch Philox are bit-identical, so every kernel that draws through
``philox_draw`` agrees with every torch consumer of ``trainer.ops.rng``. Writes into a
preallocated buffer and advances the counter in place: capture-safe.
"""

from __future__ import annotations

import numpy as np
import torch

from trainer.ops import loader
from trainer.ops.rng import uniform

OP = "rng_uniform"


def rng_uniform(seed: int, counter: torch.Tensor, stream: int, out: torch.Tensor) -> None:
    """out f32 [count] ← uniforms for (seed, counter, stream); then counter += 1."""
    if out.dim() != 1 or out.dtype != torch.float32 or counter.shape != (1,) or counter.dtype != torch.int64:
        raise ValueError(
            f"rng_uniform wants out f32 [count] and counter int64 [1] ({tuple(out.shape)} {out.dtype}, "
            f"{tuple(counter.shape)} {counter.dtype} vs those) — hint: allocate with trainer.ops.rng.new_counter"
        )
    if not out.is_cuda:
        rng_uniform_reference(seed, counter, stream, out)
        return
    count = out.shape[0]
    kernel = loader.load_kernel(OP, OP, out.device)
    args = (loader.pointer(out), loader.pointer(counter), np.uint64(seed & 0xFFFFFFFFFFFFFFFF),
            np.int32(stream), np.int64(count))  # fmt: skip
    loader.launch(kernel, (count + 3) // 4, args, out.device)
    counter.add_(1)


def rng_uniform_reference(seed: int, counter: torch.Tensor, stream: int, out: torch.Tensor) -> None:
    """PyTorch twin: the same numbers, written into ``out``; then counter += 1."""
    out.copy_(uniform(seed, counter, stream, out.shape[0]))
    counter.add_(1)
