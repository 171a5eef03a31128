"""Counter-based RNG for everything random in the trainer: Philox4x32-10, bit-identical to cuda/rng.cuh.

Why counter-based: a CUDA graph replays the same kernels with the same arguments, so a stateful
generator captured in it would hand out the same numbers on every replay. Here a draw is a pure
function of (seed, counter, stream, index); the counter is an int64 *device tensor* that the
captured step advances in place (``counter.add_(1)``), so each replay sees new numbers and nothing
is read back to the host. ``stream`` separates consumers (``RNG_STREAM_*`` in trainer.layout), so
two consumers reading the same counter value still get independent numbers.

The torch twin works on int64 tensors holding unsigned 32-bit words. The 32×32→64-bit products of
Philox are split into 16-bit halves so no intermediate exceeds 2**49: no signed overflow anywhere,
so the result is exact on every backend. Everything is pure tensor arithmetic (no host reads),
hence capture-safe. On the CPU the same rounds run in numpy's uint64 instead
(``_philox_host``): there a 32×32-bit product is one exact multiply, a round a third of the
operations, and a CPU training run spent ≈ 9 % of its time in Philox (docs/benchmarks.md). Both
are integer arithmetic, so the words are the same bits; ``tests/ops/test_rng.py`` checks the two
against each other and against Random123's known answers.
"""

from __future__ import annotations

import math

import numpy as np
import torch

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
MASK32 = 0xFFFFFFFF
UNIFORM_SCALE = 2.0**-24  # (word >> 8) · 2^-24 is exact in f32 and lies in [0, 1)
WORDS_PER_DRAW = 4
# The same constants as numpy uint64 scalars and pairs, for ``_philox_host``.
_HOST_MULTIPLIERS = np.array([PHILOX_M0, PHILOX_M1], dtype=np.uint64)
_HOST_BUMPS = np.array([PHILOX_W0, PHILOX_W1], dtype=np.uint64)
_HOST_MASK32 = np.uint64(MASK32)
_HOST_32 = np.uint64(32)


def _mulhilo(multipliers: tuple[torch.Tensor, torch.Tensor], words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) 32-bit halves of multiplier × word without any int64 overflow.

    ``multipliers`` are the (high, low) 16-bit halves of the multipliers, shaped to broadcast
    against ``words`` (one multiplier per row of a stacked pair).
    """
    m_hi, m_lo = multipliers
    p_lo = words * m_lo  # < 2**48
    p_hi = words * m_hi  # < 2**48
    s = p_lo + ((p_hi & 0xFFFF) << 16)  # < 2**49
    return (p_hi >> 16) + (s >> 32), s & MASK32


def _constants(values: list[int], device: torch.device) -> torch.Tensor:
    """int64 [len(values)] on ``device``. On the CPU one tensor from the list; elsewhere one fill
    kernel per value, because a list copied from the host is not allowed inside a CUDA graph
    capture (the torch Philox must stay capturable: ``tests/ops/test_rng.py``)."""
    if device.type == "cpu":
        return torch.tensor(values, dtype=torch.int64)
    return torch.stack([torch.full((), value, dtype=torch.int64, device=device) for value in values])


def philox4x32_10(
    c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor, k0: int | torch.Tensor, k1: int | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Philox4x32-10 on int64 tensors of 32-bit words (broadcasting); key words are Python ints, or
    int64 tensors of 32-bit words broadcastable against the counter words (one key per agent of a
    population: [P, 1, …] keys against [P, n, …] counters).

    Why pairs (both implementations): a round multiplies c0 by M0 and c2 by M1 the same way, so
    the two words travel as one stacked [2, ...] array ("multiplied": c0, c2; "passed": c1, c3) and
    every round is half the operations of word-by-word arithmetic. CPU tensors take
    ``_philox_host``, every other device the torch twin; integer arithmetic, the same bits.
    """
    c0, c1, c2, c3 = torch.broadcast_tensors(c0, c1, c2, c3)
    if c0.device.type == "cpu":
        return _philox_host(c0, c1, c2, c3, k0, k1)
    return _philox_torch(c0, c1, c2, c3, k0, k1)


def _philox_host(
    c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor, k0: int | torch.Tensor, k1: int | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``philox4x32_10`` on CPU tensors (broadcast already) through numpy uint64: a product of two
    32-bit words is < 2**64, exact in one multiply, so a round is a multiply, a shift, a mask and
    two xors on the stacked pair (the torch twin needs the 16-bit split: torch has no uint64 product)."""
    trailing = (1,) * c0.dim()
    multiplied = np.stack((c0.numpy(), c2.numpy())).astype(np.uint64)  # [2, ...]: c0, c2
    passed = np.stack((c1.numpy(), c3.numpy())).astype(np.uint64)  # [2, ...]: c1, c3
    multipliers = _HOST_MULTIPLIERS.reshape(2, *trailing)
    if isinstance(k0, torch.Tensor):
        key_shape = torch.broadcast_shapes(k0.shape, k1.shape)
        key = np.stack((k0.expand(key_shape).numpy(), k1.expand(key_shape).numpy())).astype(np.uint64)  # [2, *key]
        bump = _HOST_BUMPS.reshape(2, *(1,) * len(key_shape))
    else:
        key = np.array([k0, k1], dtype=np.uint64).reshape(2, *trailing)
        bump = _HOST_BUMPS.reshape(2, *trailing)
    for _ in range(10):
        product = multiplied * multipliers
        # c0, c1, c2, c3 ← hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0 (the pair reversed by [::-1])
        multiplied = (product >> _HOST_32)[::-1] ^ passed ^ key
        passed = (product & _HOST_MASK32)[::-1]
        key = (key + bump) & _HOST_MASK32
    words = (multiplied[0], passed[0], multiplied[1], passed[1])
    return tuple(torch.from_numpy(word.astype(np.int64)) for word in words)  # type: ignore[return-value]


def _philox_torch(
    c0: torch.Tensor, c1: torch.Tensor, c2: torch.Tensor, c3: torch.Tensor, k0: int | torch.Tensor, k1: int | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``philox4x32_10`` in torch int64 arithmetic (any device; capturable): the GPU's torch twin of
    cuda/rng.cuh, and the CPU's cross-check of ``_philox_host``."""
    trailing = (1,) * c0.dim()
    device = c0.device
    multipliers = (
        _constants([PHILOX_M0 >> 16, PHILOX_M1 >> 16], device).view(2, *trailing),
        _constants([PHILOX_M0 & 0xFFFF, PHILOX_M1 & 0xFFFF], device).view(2, *trailing),
    )
    if isinstance(k0, torch.Tensor):
        # Round r's key is (k + r·W) mod 2**32 — the same words as the bumps below, as tensors [10, 2, …].
        bumps = _constants([word for r in range(10) for word in (r * PHILOX_W0, r * PHILOX_W1)], device)
        pair = torch.stack(torch.broadcast_tensors(k0, k1))  # [2, *key]
        keys = ((pair.unsqueeze(0) + bumps.view(10, 2, *(1,) * k0.dim())) & MASK32).unbind(0)
    else:
        round_keys = []
        for _ in range(10):  # (k0, k1) of each round; xored into (new c0, new c2)
            round_keys.append((k0, k1))
            k0, k1 = (k0 + PHILOX_W0) & MASK32, (k1 + PHILOX_W1) & MASK32
        keys = _constants([word for pair in round_keys for word in pair], device).view(10, 2, *trailing).unbind(0)
    multiplied = torch.stack((c0, c2))  # [2, ...]: c0, c2
    passed = torch.stack((c1, c3))  # [2, ...]: c1, c3
    for key in keys:
        hi, lo = _mulhilo(multipliers, multiplied)  # (hi0, hi1), (lo0, lo1)
        # c0, c1, c2, c3 ← hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        multiplied = hi.flip(0) ^ passed ^ key
        passed = lo.flip(0)
    return multiplied[0], passed[0], multiplied[1], passed[1]


def philox_words(seed: int | torch.Tensor, counter: torch.Tensor, stream: int, index: torch.Tensor) -> torch.Tensor:
    """The four words of draw (seed, counter, stream, index) → int64 [*index.shape, 4].

    counter: int64 tensor (any shape broadcastable with index, typically [1] on the device);
    index: int64 tensor of draw indices < 2**32. Same words as ``philox_draw`` in cuda/rng.cuh.
    ``seed``: an int, or (a population: every agent its own key) an int64 tensor of non-negative
    seeds broadcastable with index, e.g. [P, 1] seeds and [P, 1] counters against [n] indices.
    """
    counter = counter.to(torch.int64)
    index = index.to(torch.int64)
    c2 = counter & MASK32
    c3 = (counter >> 32) & MASK32
    if isinstance(seed, torch.Tensor):
        index = index + torch.zeros_like(c2 + seed)  # one row of indices per agent
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    c1 = torch.full_like(index, stream & MASK32)
    words = philox4x32_10(index, c1, c2 + torch.zeros_like(index), c3 + torch.zeros_like(index), k0, k1)
    return torch.stack(words, dim=-1)  # [*index.shape, 4]


def words_to_uniform(words: torch.Tensor) -> torch.Tensor:
    """uint32 words (in int64) → f32 uniforms in [0, 1), bit-identical to ``philox_uniform``."""
    return (words >> 8).to(torch.float32) * UNIFORM_SCALE


def uniform(seed: int | torch.Tensor, counter: torch.Tensor, stream: int, count: int) -> torch.Tensor:
    """``count`` uniforms f32 [count] in [0, 1) for one counter value: element i is word i % 4 of draw i // 4.

    A population: ``seed`` int64 [P] and ``counter`` int64 [P, 1] (each agent's) → [P, count], row p
    exactly what ``uniform(seed[p], counter[p], stream, count)`` gives.
    Lives on ``counter``'s device; does not advance the counter (see ``draw_uniform``).
    """
    n_draws = (count + WORDS_PER_DRAW - 1) // WORDS_PER_DRAW
    index = torch.arange(n_draws, device=counter.device, dtype=torch.int64)
    if isinstance(seed, torch.Tensor):
        words = philox_words(seed.view(-1, 1), counter.view(-1, 1), stream, index)  # [P, n_draws, 4]
        return words_to_uniform(words.flatten(1)[:, :count])
    words = philox_words(seed, counter.reshape(1), stream, index)  # [n_draws, 4]
    return words_to_uniform(words.reshape(-1)[:count])


def gaussian_from_uniform(draws: torch.Tensor) -> torch.Tensor:
    """Standard normals f32 [*, n] from n uniforms in [0, 1) (n even) per row, by Box–Muller on the halves.

    u₁ from the first half, u₂ from the second; 1 − u₁ ∈ (0, 1] keeps the logarithm finite. Rows
    (a population's agents, [P, n]) are independent: each is the 1-D result of its own draws.
    """
    half = draws.shape[-1] // 2
    radius = torch.sqrt(-2.0 * torch.log1p(-draws[..., :half]))  # [*, n/2]
    angle = (2.0 * math.pi) * draws[..., half : 2 * half]  # [*, n/2]
    return torch.cat((radius * torch.cos(angle), radius * torch.sin(angle)), dim=-1)


def draw_uniform(seed: int, counter: torch.Tensor, stream: int, count: int) -> torch.Tensor:
    """``uniform`` for the current counter, then advance the counter by one in place (capture-safe)."""
    values = uniform(seed, counter, stream, count)
    counter.add_(1)
    return values


def new_counter(device: torch.device | str, start: int = 0) -> torch.Tensor:
    """The device-side counter: int64 [1]. Keep it in the StateResetRegistry as TrainingPersist."""
    return torch.full((1,), start, dtype=torch.int64, device=device)
