// Counter-based RNG shared by every kernel of the trainer: Philox4x32-10 (Salmon et al., SC'11,
// "Parallel random numbers: as easy as 1, 2, 3"; the Random123 / cuRAND / JAX generator).
//
// Why Philox: stateless (a draw is a pure function of key and counter, so a CUDA-graph replay
// that advances a device-side counter never repeats numbers and nothing per-thread must be
// stored), crush-resistant, and its 32-bit multiplies can be reproduced exactly with int64 torch
// ops — trainer/ops/rng.py is the bit-identical PyTorch twin (a parity test proves it).
//
// Draw layout: key = (seed lo, seed hi); counter words = (index, stream, counter lo, counter hi).
// One draw gives four 32-bit words; uniform = (word >> 8) · 2^-24 ∈ [0, 1), exact in f32.
#pragma once

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

struct PhiloxWords {
    unsigned int w0, w1, w2, w3;
};

__device__ __forceinline__ PhiloxWords philox_round(PhiloxWords c, unsigned int k0, unsigned int k1) {
    const unsigned int hi0 = __umulhi(PHILOX_M0, c.w0);
    const unsigned int lo0 = PHILOX_M0 * c.w0;
    const unsigned int hi1 = __umulhi(PHILOX_M1, c.w2);
    const unsigned int lo1 = PHILOX_M1 * c.w2;
    PhiloxWords out;
    out.w0 = hi1 ^ c.w1 ^ k0;
    out.w1 = lo1;
    out.w2 = hi0 ^ c.w3 ^ k1;
    out.w3 = lo0;
    return out;
}

__device__ __forceinline__ PhiloxWords philox4x32_10(PhiloxWords c, unsigned int k0, unsigned int k1) {
#pragma unroll
    for (int round = 0; round < 9; ++round) {
        c = philox_round(c, k0, k1);
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return philox_round(c, k0, k1);
}

// Four words for (seed, counter, stream, index): the same numbers as trainer.ops.rng.philox_words.
__device__ __forceinline__ PhiloxWords philox_draw(unsigned long long seed, long long counter, int stream,
                                                   unsigned int index) {
    PhiloxWords c;
    c.w0 = index;
    c.w1 = (unsigned int)stream;
    c.w2 = (unsigned int)((unsigned long long)counter & 0xFFFFFFFFull);
    c.w3 = (unsigned int)((unsigned long long)counter >> 32);
    return philox4x32_10(c, (unsigned int)(seed & 0xFFFFFFFFull), (unsigned int)(seed >> 32));
}

__device__ __forceinline__ float philox_uniform(unsigned int word) {
    return (float)(word >> 8) * 5.9604644775390625e-08f;  // 2^-24
}
