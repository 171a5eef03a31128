"""Philox4x32-10: known answers, bit-identical GPU/torch parity, counters that never repeat."""

from __future__ import annotations

import pytest
import torch

from trainer.layout import RNG_STREAM_ENV, RNG_STREAM_EXPLORE
from trainer.ops.rng import (
    _philox_host,
    _philox_torch,
    draw_uniform,
    new_counter,
    philox4x32_10,
    philox_words,
    uniform,
)
from trainer.ops.rng_uniform import rng_uniform

# Random123's known-answer vectors for philox4x32_10 (kat_vectors).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]  # fmt: skip


@pytest.mark.parametrize(("ctr", "key", "expected"), KAT)
def test_philox_known_answers(ctr, key, expected):
    words = philox4x32_10(*(torch.tensor([c], dtype=torch.int64) for c in ctr), *key)
    assert tuple(int(w) for w in words) == expected


def test_torch_int64_multiplication_wraps_but_philox_never_relies_on_it():
    # Documented behaviour we avoid needing: int64 products wrap modulo 2**64 on the CPU.
    big = torch.tensor([0xFFFFFFFF], dtype=torch.int64)
    wrapped = big * big * big
    assert int(wrapped) == ((0xFFFFFFFF**3 + 2**63) % 2**64) - 2**63
    # Philox splits products into 16-bit halves: words stay in [0, 2**32).
    words = philox_words(2**64 - 1, torch.tensor([2**62]), 2**32 - 1, torch.arange(1000))
    assert int(words.min()) >= 0 and int(words.max()) < 2**32


def test_uniform_range_and_moments():
    values = uniform(123, torch.tensor([5]), RNG_STREAM_ENV, 200_000)
    assert values.dtype == torch.float32
    assert float(values.min()) >= 0.0 and float(values.max()) < 1.0
    assert abs(float(values.mean()) - 0.5) < 0.005
    assert abs(float(values.var()) - 1 / 12) < 0.002
    counts = torch.histc(values, bins=20, min=0.0, max=1.0)
    chi2 = float(((counts - 10_000) ** 2 / 10_000).sum())
    assert chi2 < 50.0  # 19 dof: p ≈ 1e-4


def test_counter_and_stream_separate_draws():
    counter = new_counter("cpu")
    first = draw_uniform(7, counter, RNG_STREAM_ENV, 64)
    second = draw_uniform(7, counter, RNG_STREAM_ENV, 64)
    assert int(counter) == 2
    assert not torch.equal(first, second)
    same_counter_other_stream = uniform(7, torch.tensor([0]), RNG_STREAM_EXPLORE, 64)
    assert not torch.equal(first, same_counter_other_stream)
    assert torch.equal(first, uniform(7, torch.tensor([0]), RNG_STREAM_ENV, 64))  # pure function
    assert not torch.equal(first, uniform(8, torch.tensor([0]), RNG_STREAM_ENV, 64))


def test_reference_launcher_on_cpu_matches_uniform_and_advances():
    counter = new_counter("cpu", start=2**40 + 3)
    out = torch.empty(13)
    rng_uniform(99, counter, RNG_STREAM_ENV, out)
    assert int(counter) == 2**40 + 4
    assert torch.equal(out, uniform(99, torch.tensor([2**40 + 3]), RNG_STREAM_ENV, 13))


@pytest.mark.gpu
@pytest.mark.parametrize("count", [1, 3, 4, 1023, 1 << 20])
@pytest.mark.parametrize("start", [0, 2**32 - 1, 2**45 + 17])
def test_kernel_bit_identical_to_torch(count: int, start: int):
    seed = 0xDEADBEEF12345678
    gpu_counter = new_counter("cuda", start)
    out = torch.empty(count, device="cuda")
    rng_uniform(seed, gpu_counter, RNG_STREAM_EXPLORE, out)
    cpu = uniform(seed, torch.tensor([start]), RNG_STREAM_EXPLORE, count)
    torch_gpu = uniform(seed, torch.tensor([start], device="cuda"), RNG_STREAM_EXPLORE, count)
    got = out.cpu()
    mismatch = (got.view(torch.int32) != cpu.view(torch.int32)).nonzero().flatten()
    assert mismatch.numel() == 0, f"first mismatches at {mismatch[:8].tolist()}: {got[mismatch[:8]]} vs {cpu[mismatch[:8]]}"
    assert torch.equal(torch_gpu.cpu(), cpu)
    assert int(gpu_counter) == start + 1


@pytest.mark.gpu
def test_graph_replays_draw_new_numbers():
    counter = new_counter("cuda")
    out = torch.empty(4096, device="cuda")
    torch_out = torch.empty(4096, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up (compile, allocator) outside the capture
        rng_uniform(1, counter, RNG_STREAM_ENV, out)
        torch_out.copy_(draw_uniform(1, counter, RNG_STREAM_EXPLORE, 4096))
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        rng_uniform(1, counter, RNG_STREAM_ENV, out)
        torch_out.copy_(draw_uniform(1, counter, RNG_STREAM_EXPLORE, 4096))
    seen = []
    for _ in range(3):
        graph.replay()
        seen.append((out.clone(), torch_out.clone()))
    torch.cuda.synchronize()
    assert not torch.equal(seen[0][0], seen[1][0]) and not torch.equal(seen[1][0], seen[2][0])
    assert not torch.equal(seen[0][1], seen[1][1])
    # Each replay advanced the counter by 2 (kernel + torch draw); numbers match a fresh CPU draw.
    counter_at_third = int(counter) - 2
    expected = uniform(1, torch.tensor([counter_at_third]), RNG_STREAM_ENV, 4096)
    assert torch.equal(seen[2][0].cpu(), expected)
    expected_torch = uniform(1, torch.tensor([counter_at_third + 1]), RNG_STREAM_EXPLORE, 4096)
    assert torch.equal(seen[2][1].cpu(), expected_torch)


def test_rng_uniform_rejects_bad_buffers():
    with pytest.raises(ValueError, match="rng_uniform wants out f32"):
        rng_uniform(1, torch.zeros(1, dtype=torch.int32), RNG_STREAM_ENV, torch.empty(4))


# -- a population: every agent's draws in one call ---------------------------------------------
AGENT_SEEDS = [0, 1, 0xDEADBEEF12345678 >> 1, 2**40 + 5]
AGENT_COUNTERS = [0, 7, 2**32 - 1, 2**45 + 17]


@pytest.mark.parametrize("count", [1, 3, 4, 13])
def test_population_rows_are_each_agents_own_draws(count: int):
    seeds = torch.tensor(AGENT_SEEDS, dtype=torch.int64)
    counters = torch.tensor(AGENT_COUNTERS, dtype=torch.int64).view(-1, 1)
    rows = uniform(seeds, counters, RNG_STREAM_EXPLORE, count)
    assert rows.shape == (len(AGENT_SEEDS), count)
    for agent, (seed, start) in enumerate(zip(AGENT_SEEDS, AGENT_COUNTERS, strict=True)):
        assert torch.equal(rows[agent], uniform(seed, torch.tensor([start]), RNG_STREAM_EXPLORE, count)), agent


def test_population_launcher_on_cpu_draws_and_advances_each_counter():
    seeds = torch.tensor(AGENT_SEEDS, dtype=torch.int64)
    counters = torch.tensor(AGENT_COUNTERS, dtype=torch.int64).view(-1, 1)
    out = torch.empty(len(AGENT_SEEDS), 9)
    advance = torch.tensor([1, 0, 1, 1], dtype=torch.int64).view(-1, 1)  # agent 1 does not draw this stream
    rng_uniform(seeds, counters, RNG_STREAM_ENV, out, advance)
    assert counters.view(-1).tolist() == [start + int(step) for start, step in zip(AGENT_COUNTERS, advance.view(-1), strict=True)]
    for agent, (seed, start) in enumerate(zip(AGENT_SEEDS, AGENT_COUNTERS, strict=True)):
        assert torch.equal(out[agent], uniform(seed, torch.tensor([start]), RNG_STREAM_ENV, 9))
    rng_uniform(seeds, counters, RNG_STREAM_ENV, out)  # default: every counter moves by one
    assert counters.view(-1).tolist() == [start + 1 + int(step) for start, step in zip(AGENT_COUNTERS, advance.view(-1), strict=True)]


def test_population_buffers_that_disagree_are_explained():
    seeds = torch.tensor([1, 2], dtype=torch.int64)
    with pytest.raises(ValueError, match=r"\(counter \(2,\) torch.int64 vs \[2, 1\] int64\) — hint"):
        rng_uniform(seeds, torch.zeros(2, dtype=torch.int64), RNG_STREAM_ENV, torch.empty(2, 4))
    with pytest.raises(ValueError, match=r"\(seed \(3,\) torch.int64 vs \[2\] int64 \(one per agent\)\) — hint"):
        rng_uniform(torch.tensor([1, 2, 3]), torch.zeros(2, 1, dtype=torch.int64), RNG_STREAM_ENV, torch.empty(2, 4))


@pytest.mark.gpu
@pytest.mark.parametrize("count", [1, 3, 4, 1023, 1 << 18])
@pytest.mark.parametrize("agents", [1, 4])
def test_population_kernel_bit_identical_to_torch(count: int, agents: int):
    seeds = torch.tensor(AGENT_SEEDS[:agents], dtype=torch.int64)
    starts = torch.tensor(AGENT_COUNTERS[:agents], dtype=torch.int64).view(-1, 1)
    counters = starts.cuda()
    out = torch.empty(agents, count, device="cuda")
    rng_uniform(seeds.cuda(), counters, RNG_STREAM_EXPLORE, out)
    expected = uniform(seeds, starts, RNG_STREAM_EXPLORE, count)
    got = out.cpu()
    mismatch = (got.view(torch.int32) != expected.view(torch.int32)).nonzero()
    assert mismatch.shape[0] == 0, f"first mismatches at {mismatch[:8].tolist()}"
    assert torch.equal(counters.cpu(), starts + 1)
    assert torch.equal(uniform(seeds.cuda(), starts.cuda(), RNG_STREAM_EXPLORE, count).cpu(), expected)  # torch on the GPU too


def _random_words(generator: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randint(0, 2**32, shape, generator=generator, dtype=torch.int64)


@pytest.mark.parametrize("n", [1, 5, 4096])
def test_the_host_rounds_give_the_torch_twins_words(n: int):
    # The CPU draws through numpy uint64 (_philox_host); the GPU through the torch twin. Both must be
    # the same bits, for scalar keys and for a population's per-agent keys ([P, 1] against [P, n]).
    generator = torch.Generator().manual_seed(n)
    counters = [_random_words(generator, n) for _ in range(4)]
    for k0, k1 in ((0, 0), (0xFFFFFFFF, 0xFFFFFFFF), (0x9E3779B9, 12345)):
        assert all(torch.equal(a, b) for a, b in zip(_philox_host(*counters, k0, k1), _philox_torch(*counters, k0, k1), strict=True))
    agents = [_random_words(generator, 3, n) for _ in range(4)]
    keys = (_random_words(generator, 3, 1), _random_words(generator, 3, 1))
    host = _philox_host(*agents, *keys)
    assert all(torch.equal(a, b) for a, b in zip(host, _philox_torch(*agents, *keys), strict=True))
    assert all(word.dtype == torch.int64 and int(word.min()) >= 0 and int(word.max()) < 2**32 for word in host)
