"""rng_uniform: fill a buffer with Philox uniforms — CuPy kernel (cuda/rng_uniform.cu) + PyTorch reference.

The kernel is the GPU twin of ``trainer.ops.rng.uniform``; its parity test is what proves that
cuda/rng.cuh and the torch Philox are bit-identical, so every kernel that draws through
``philox_draw`` agrees with every torch consumer of ``trainer.ops.rng``. Writes into a
preallocated buffer and advances the counter in place: capture-safe.

A population draws every agent's numbers in one launch: ``seed`` an int64 tensor [P] of the
agents' seeds, ``counter`` [P, 1] their counters, ``out`` [P, count]; row p is exactly agent p's
own draw (its seed is its Philox key, its counter its counter words), so an agent of a population
draws what its single run draws.
"""

from __future__ import annotations

import numpy as np
import torch

from trainer.ops import loader
from trainer.ops.rng import uniform

OP = "rng_uniform"
AGENTS_KERNEL = "rng_uniform_agents"


def _check(seed: int | torch.Tensor, counter: torch.Tensor, out: torch.Tensor, advance: torch.Tensor | None) -> None:
    """One agent: out f32 [count], counter int64 [1]; a population: seed int64 [P], counter int64
    [P, 1], out f32 [P, count] (``advance`` int64 [P, 1] or None). Host metadata only: capture-safe."""
    agents = isinstance(seed, torch.Tensor)
    wanted_out, wanted_counter = (2, (out.shape[0], 1)) if agents else (1, (1,))
    problems = []
    if out.dim() != wanted_out or out.dtype != torch.float32:
        problems.append(f"out {tuple(out.shape)} {out.dtype} vs {'[P, count]' if agents else '[count]'} float32")
    elif counter.shape != wanted_counter or counter.dtype != torch.int64:
        problems.append(f"counter {tuple(counter.shape)} {counter.dtype} vs {list(wanted_counter)} int64")
    if agents and (seed.shape != (out.shape[0],) or seed.dtype != torch.int64):
        problems.append(f"seed {tuple(seed.shape)} {seed.dtype} vs [{out.shape[0]}] int64 (one per agent)")
    if advance is not None and (not agents or advance.shape != counter.shape or advance.dtype != torch.int64):
        problems.append(f"advance {tuple(advance.shape)} {advance.dtype} vs {list(counter.shape)} int64, population only")
    if problems:
        raise ValueError(
            "rng_uniform wants out f32 [count] and counter int64 [1] — or a population's out [P, count], counter [P, 1] "
            "and seeds [P] (" + "; ".join(problems) + ") — hint: allocate with trainer.ops.rng.new_counter, or stack "
            "the agents' buffers"
        )


def rng_uniform(seed: int | torch.Tensor, counter: torch.Tensor, stream: int, out: torch.Tensor,
                advance: torch.Tensor | None = None) -> None:  # fmt: skip
    """out f32 [count] ← uniforms for (seed, counter, stream); then counter += 1.

    A population: ``seed`` int64 [P], ``counter`` [P, 1], ``out`` [P, count] (one launch for every
    agent); ``advance`` [P, 1] (default: 1 each) is how far each agent's counter moves — 0 for an
    agent that does not draw this stream (its row is then not its numbers: its owner ignores it)."""
    _check(seed, counter, out, advance)
    if not out.is_cuda:
        rng_uniform_reference(seed, counter, stream, out, advance)
        return
    agents = isinstance(seed, torch.Tensor)
    count = out.shape[-1]
    if agents:
        kernel = loader.load_kernel(OP, AGENTS_KERNEL, out.device)
        args = (loader.pointer(out), loader.pointer(counter), loader.pointer(seed), np.int32(stream), np.int64(count))
        loader.launch(kernel, (count + 3) // 4, args, out.device, agents=out.shape[0])
    else:
        kernel = loader.load_kernel(OP, OP, out.device)
        args = (loader.pointer(out), loader.pointer(counter), np.uint64(seed & 0xFFFFFFFFFFFFFFFF),
                np.int32(stream), np.int64(count))  # fmt: skip
        loader.launch(kernel, (count + 3) // 4, args, out.device)
    _advance(counter, advance)


def rng_uniform_reference(seed: int | torch.Tensor, counter: torch.Tensor, stream: int, out: torch.Tensor,
                          advance: torch.Tensor | None = None) -> None:  # fmt: skip
    """PyTorch twin: the same numbers, written into ``out``; then the counter advances."""
    out.copy_(uniform(seed, counter, stream, out.shape[-1]))
    _advance(counter, advance)


def _advance(counter: torch.Tensor, advance: torch.Tensor | None) -> None:
    if advance is None:
        counter.add_(1)
    else:
        counter.add_(advance)
