// adaptive_kelly_cap.cu — the Kelly cap: a half-Kelly position size from the environments' pooled
// win/loss record, the mean trade return at its lower confidence bound, scaled by a health-coupled
// safety factor, reduced over environments deterministically.
//
// Shapes: ps [agents, n_envs, PS_STRIDE] f32 (portfolio state); partials [agents, KELLY_STATS = 4,
// n_blocks] f32 scratch with n_blocks = ceil(n_envs / ADAPTIVE_BLOCK); isv [agents, ISV_STRIDE] f32
// (device-mapped). One row per agent of a population (agents = 1 for a single run); block row y
// reads and writes agent y's rows only.
// Reads  (ps):  KELLY_WINS, KELLY_LOSSES, KELLY_WIN_SUM, KELLY_LOSS_SUM per env (clamped ≥ 0). They
//               carry the Bayesian prior: VectorEnv.reset seeds every env with ISV KELLY_PRIOR_WINS
//               (2) wins and KELLY_PRIOR_LOSSES (2) losses of size KELLY_PRIOR_MEAN_RETURN, and the
//               env kernel adds each closed round trip (its P&L per unit of notional opened) to them.
// Reads  (ISV): LEARNING_HEALTH.
// Writes (ISV): KELLY_CAP.
//
// Formulas, on the sums over envs W, L, WS, LS (each divisor guarded by 1e-12; all-zero statistics
// give position 0):
//   n = W + L,  μ = (WS − LS) / n                                      mean return per unit of position
//   m₂ = (WS² / W + LS² / L) / n                                       second moment (each trade at its
//                                                                      side's mean return)
//   μ_lcb = max(μ − z·sqrt(m₂ / n), 0)                                 z standard errors low: noise is
//                                                                      no edge
//   position = κ·μ_lcb / m₂                                            continuous Kelly, κ = ½ (half-Kelly);
//                                                                      for wins and losses of one size m
//                                                                      it is (p − q)/m: the binary stake
//                                                                      f* = p − q/b per unit of loss
//   cap = clamp(position · (0.5 + 0.5·h), cap_floor, cap_max),         h = health ∈ [0, 1]
// A non-finite position counts as 0. The floor keeps a cold-started agent trading so that
// statistics can accumulate at all.
//
// Launch geometry (one grid row per agent): kelly_cap_partials — grid (n_blocks, agents), block
// ADAPTIVE_BLOCK: thread i handles env blockIdx.x·ADAPTIVE_BLOCK + i, four shared-memory trees sum the block's statistics into
// partials[k, block]. kelly_cap_finalize — one block per agent: for each statistic, thread t sums
// partials[k, t], partials[k, t + ADAPTIVE_BLOCK], ... in index order, then a shared-memory tree.
// No atomics: the result is bitwise reproducible.
#include "generated/layout.cuh"
#include "block_reduce.cuh"

#define KELLY_STATS 4

extern "C" __global__ void kelly_cap_partials(
    const float* __restrict__ ps, int n_envs, float* __restrict__ partials)
{
    __shared__ float shared[ADAPTIVE_BLOCK];
    const int env = blockIdx.x * ADAPTIVE_BLOCK + threadIdx.x;
    ps += (size_t)blockIdx.y * n_envs * PS_STRIDE;                // this agent's environments
    partials += (size_t)blockIdx.y * KELLY_STATS * gridDim.x;     // this agent's partials
    const int columns[KELLY_STATS] = {PS_KELLY_WINS, PS_KELLY_LOSSES, PS_KELLY_WIN_SUM, PS_KELLY_LOSS_SUM};
    for (int stat = 0; stat < KELLY_STATS; ++stat) {
        const float value = env < n_envs ? fmaxf(ps[(size_t)env * PS_STRIDE + columns[stat]], 0.0f) : 0.0f;
        const float total = block_tree_sum(shared, value);
        if (threadIdx.x == 0) {
            partials[(size_t)stat * gridDim.x + blockIdx.x] = total;
        }
    }
}

__device__ __forceinline__ float kelly_position(float wins, float losses, float win_sum, float loss_sum,
                                                float kelly_fraction, float confidence_z) {
    const float tiny = 1e-12f;
    const float trades = fmaxf(wins + losses, tiny);
    const float mean = (win_sum - loss_sum) / trades;
    const float second = (win_sum * win_sum / fmaxf(wins, tiny) + loss_sum * loss_sum / fmaxf(losses, tiny)) / trades;
    const float standard_error = sqrtf(second / trades);
    const float edge = fmaxf(mean - confidence_z * standard_error, 0.0f);
    const float position = kelly_fraction * edge / fmaxf(second, tiny);
    return isfinite(position) ? position : 0.0f;
}

extern "C" __global__ void kelly_cap_finalize(
    const float* __restrict__ partials, int n_blocks, float* __restrict__ isv,
    float cap_floor, float cap_max, float kelly_fraction, float confidence_z)
{
    __shared__ float shared[ADAPTIVE_BLOCK];
    partials += (size_t)blockIdx.y * KELLY_STATS * n_blocks;  // this agent's partials
    isv += (size_t)blockIdx.y * ISV_STRIDE;                   // this agent's ISV row
    float totals[KELLY_STATS];
    for (int stat = 0; stat < KELLY_STATS; ++stat) {
        float running = 0.0f;
        for (int index = threadIdx.x; index < n_blocks; index += ADAPTIVE_BLOCK) {
            running += partials[(size_t)stat * n_blocks + index];
        }
        totals[stat] = block_tree_sum(shared, running);
    }
    if (threadIdx.x == 0) {
        const float raw_health = isv[ISV_LEARNING_HEALTH];
        const float health = isfinite(raw_health) ? fminf(fmaxf(raw_health, 0.0f), 1.0f) : 0.0f;
        const float position = kelly_position(totals[0], totals[1], totals[2], totals[3], kelly_fraction, confidence_z);
        const float cap = position * (0.5f + 0.5f * health);
        isv[ISV_KELLY_CAP] = fminf(fmaxf(cap, cap_floor), cap_max);
    }
}
