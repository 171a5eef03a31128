// adaptive_kelly_cap.cu — the Kelly cap: half-Kelly from the environments' win/loss statistics,
// scaled by a health-coupled safety factor, reduced over environments deterministically.
//
// Shapes: ps [n_envs, PS_STRIDE] f32 (portfolio state); partials [n_blocks] f32 scratch with
// n_blocks = ceil(n_envs / ADAPTIVE_BLOCK); isv [ISV_STRIDE] f32 (device-mapped).
// Reads  (ps):  KELLY_WINS, KELLY_LOSSES, KELLY_WIN_SUM, KELLY_LOSS_SUM per env. They carry the
//               Bayesian prior: VectorEnv.reset seeds every env with ISV KELLY_PRIOR_WINS (2) wins
//               and KELLY_PRIOR_LOSSES (2) losses of size KELLY_PRIOR_MEAN_RETURN, and the env kernel
//               adds each closed trade to them.
// Reads  (ISV): LEARNING_HEALTH.
// Writes (ISV): KELLY_CAP.
//
// Formulas, per env e (the prior puts a cold start at p = ½, b = 1, so half-Kelly 0):
//   W = wins, L = losses (prior included), WS = win_sum, LS = loss_sum (|returns|, prior included)
//   p = W / (W + L)                    b = (WS / W) / (LS / L)         (each ratio guarded by 1e-12;
//                                                                       all-zero statistics give 0)
//   f*_e = p − (1 − p) / b             (Kelly fraction of a binary bet with odds b)
//   half_e = ½·max(f*_e, 0)            (half-Kelly keeps ¾ of the growth at far less variance)
// and over envs:
//   cap = clamp(mean_e(half_e) · (0.5 + 0.5·h), cap_floor, cap_max),   h = health ∈ [0, 1]
// The floor keeps a cold-started agent trading so that statistics can accumulate at all.
//
// Launch geometry: kelly_cap_partials — grid n_blocks, block ADAPTIVE_BLOCK: thread i handles env
// blockIdx·ADAPTIVE_BLOCK + i, a shared-memory tree sums the block's half_e into partials[block].
// kelly_cap_finalize — one block: each thread sums partials[t], partials[t + ADAPTIVE_BLOCK], ...
// in index order, then a shared-memory tree. No atomics: the result is bitwise reproducible.
#include "generated/layout.cuh"
#include "block_reduce.cuh"

__device__ __forceinline__ float env_half_kelly(const float* __restrict__ row) {
    const float wins = fmaxf(row[PS_KELLY_WINS], 0.0f);
    const float losses = fmaxf(row[PS_KELLY_LOSSES], 0.0f);
    const float win_sum = fmaxf(row[PS_KELLY_WIN_SUM], 0.0f);
    const float loss_sum = fmaxf(row[PS_KELLY_LOSS_SUM], 0.0f);
    const float p = wins / fmaxf(wins + losses, 1e-12f);
    const float mean_win = win_sum / fmaxf(wins, 1e-12f);
    const float mean_loss = loss_sum / fmaxf(losses, 1e-12f);
    const float odds = mean_win / fmaxf(mean_loss, 1e-12f);
    const float kelly = p - (1.0f - p) / fmaxf(odds, 1e-12f);
    const float half = 0.5f * fmaxf(kelly, 0.0f);
    return isfinite(half) ? half : 0.0f;
}

extern "C" __global__ void kelly_cap_partials(
    const float* __restrict__ ps, int n_envs, float* __restrict__ partials)
{
    __shared__ float shared[ADAPTIVE_BLOCK];
    const int env = blockIdx.x * ADAPTIVE_BLOCK + threadIdx.x;
    const float half = env < n_envs ? env_half_kelly(ps + (size_t)env * PS_STRIDE) : 0.0f;
    const float total = block_tree_sum(shared, half);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = total;
    }
}

extern "C" __global__ void kelly_cap_finalize(
    const float* __restrict__ partials, int n_blocks, int n_envs, float* __restrict__ isv,
    float cap_floor, float cap_max)
{
    __shared__ float shared[ADAPTIVE_BLOCK];
    float running = 0.0f;
    for (int index = threadIdx.x; index < n_blocks; index += ADAPTIVE_BLOCK) {
        running += partials[index];
    }
    const float total = block_tree_sum(shared, running);
    if (threadIdx.x == 0) {
        const float raw_health = isv[ISV_LEARNING_HEALTH];
        const float health = isfinite(raw_health) ? fminf(fmaxf(raw_health, 0.0f), 1.0f) : 0.0f;
        const float mean_half = total / (float)max(n_envs, 1);
        const float cap = mean_half * (0.5f + 0.5f * health);
        isv[ISV_KELLY_CAP] = fminf(fmaxf(cap, cap_floor), cap_max);
    }
}
