// rng_uniform — fill out[count] with Philox4x32-10 uniforms in [0, 1) for one counter value; and
// rng_uniform_agents — the same for every agent of a population in one launch.
//
// Shapes: out f32 [count]; counter int64 [1] (device, read here, advanced by the launcher).
// Agents: out f32 [agents, count]; counters int64 [agents] (one per agent, advanced by the
// launcher); seeds int64 [agents] (each agent's Philox key, non-negative). Row p is exactly what
// rng_uniform gives for agent p's seed and counter: agents never mix.
// Launch: one thread per 4-word draw (ceil(count / 4) threads along x); the agents' kernel has
// one row of blocks per agent (grid (blocks, agents), blockIdx.y = agent). Element i is word
// i % 4 of draw i / 4 — the layout of trainer.ops.rng.uniform (bit-identical, parity-tested).
#include "rng.cuh"

__device__ __forceinline__ void fill_draw(float* __restrict__ out, long long counter, unsigned long long seed,
                                          int stream, long long count) {
    const long long draw = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = draw * 4;
    if (first >= count) return;
    const PhiloxWords w = philox_draw(seed, counter, stream, (unsigned int)draw);
    const unsigned int words[4] = {w.w0, w.w1, w.w2, w.w3};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (first + j < count) out[first + j] = philox_uniform(words[j]);
    }
}

extern "C" __global__ void rng_uniform(float* __restrict__ out, const long long* __restrict__ counter,
                                       unsigned long long seed, int stream, long long count) {
    fill_draw(out, counter[0], seed, stream, count);
}

extern "C" __global__ void rng_uniform_agents(float* __restrict__ out, const long long* __restrict__ counters,
                                              const long long* __restrict__ seeds, int stream, long long count) {
    const int agent = blockIdx.y;
    fill_draw(out + (long long)agent * count, counters[agent], (unsigned long long)seeds[agent], stream, count);
}
