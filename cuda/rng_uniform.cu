// rng_uniform — fill out[count] with Philox4x32-10 uniforms in [0, 1) for one counter value.
//
// Shapes: out f32 [count]; counter int64 [1] (device, read here, advanced by the launcher).
// Launch: 1-D grid, one thread per 4-word draw (ceil(count / 4) threads); element i is word
// i % 4 of draw i / 4 — the layout of trainer.ops.rng.uniform (bit-identical, parity-tested).
#include "rng.cuh"

extern "C" __global__ void rng_uniform(float* __restrict__ out, const long long* __restrict__ counter,
                                       unsigned long long seed, int stream, long long count) {
    const long long draw = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = draw * 4;
    if (first >= count) return;
    const PhiloxWords w = philox_draw(seed, counter[0], stream, (unsigned int)draw);
    const unsigned int words[4] = {w.w0, w.w1, w.w2, w.w3};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (first + j < count) out[first + j] = philox_uniform(words[j]);
    }
}
