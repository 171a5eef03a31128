// block_reduce.cuh — the deterministic block reduction shared by the adaptive kernels.
//
// Purpose: sum one float per thread of a block of ADAPTIVE_BLOCK threads, always in the same order
// (a fixed-shape halving tree in shared memory), so the same inputs give bitwise-identical sums on
// every run (invariant 4: no atomics). The PyTorch references reproduce this order with
// trainer.ops.adaptive_atom_support.strided_tree_sum.
// Launch geometry: every thread of the block calls block_tree_sum (it holds __syncthreads);
// `shared` has ADAPTIVE_BLOCK floats. The leading barrier lets one kernel call it several times
// with the same `shared` buffer.
#pragma once

#define ADAPTIVE_BLOCK 256

__device__ __forceinline__ float block_tree_sum(float* shared, float value) {
    const int lane = threadIdx.x;
    __syncthreads();  // the previous use of `shared` is finished before it is overwritten
    shared[lane] = value;
    __syncthreads();
    for (int stride = ADAPTIVE_BLOCK / 2; stride > 0; stride >>= 1) {
        if (lane < stride) {
            shared[lane] += shared[lane + stride];
        }
        __syncthreads();
    }
    return shared[0];
}
