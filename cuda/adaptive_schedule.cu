// adaptive_schedule.cu — the progress- and health-driven schedules of the ISV: training progress,
// the Polyak rate τ, the discount γ per branch and the exploration rate ε.
//
// Reads  (ISV): EPOCH_INDEX, TOTAL_EPOCHS (CPU-born inputs), LEARNING_HEALTH (GPU-computed).
// Writes (ISV): TRAINING_PROGRESS, TAU, GAMMA[N_BRANCHES], EPSILON.
//
// Formulas (p = progress, h = health clamped to [0, 1], a non-finite health counts as 0):
//   p      = clamp(EPOCH_INDEX / max(TOTAL_EPOCHS − 1, 1), 0, 1)
//   τ_cos  = τ_end + ½·(τ_start − τ_end)·(1 + cos(π·p))          cosine from τ_start to τ_end
//   τ_flr  = τ_floor_lo + (τ_floor_hi − τ_floor_lo)·(1 − h)        the floor rises as health falls
//   τ      = max(τ_cos, τ_flr)
//   γ_b    = γ_low_b + (γ_high_b − γ_low_b)·h                     shorter horizon while learning is sick
//   ε_sch  = ε_end + (ε_start − ε_end)·max(0, 1 − p / f_explore)  linear decay over f_explore of training
//   ε      = clamp(ε_sch + ε_boost·(1 − h), ε_end, ε_start)        re-explore while learning is sick
//
// Shapes: isv [agents, ISV_STRIDE] f32 (device-mapped), one row per agent of a population (1 for
// a single run); the schedule constants are the launch's, shared by its agents.
//
// Launch geometry: one block of ADAPTIVE_BLOCK threads per agent (grid (1, agents),
// trainer.ops.loader.BLOCK_SIZE); block row y is agent y; thread b < N_BRANCHES writes γ_b, thread 0
// writes the scalars. No reduction, so trivially deterministic.
// Cold path (epoch boundary) or inside the captured step: it reads no host memory other than the
// device-mapped ISV and allocates nothing.
#include "generated/layout.cuh"

__device__ __forceinline__ float clamp01(float value) {
    return isfinite(value) ? fminf(fmaxf(value, 0.0f), 1.0f) : 0.0f;
}

extern "C" __global__ void adaptive_schedule_update(
    float* __restrict__ isv,
    const float* __restrict__ gamma_low,   // [N_BRANCHES]
    const float* __restrict__ gamma_high,  // [N_BRANCHES]
    float tau_start, float tau_end, float tau_floor_lo, float tau_floor_hi,
    float epsilon_start, float epsilon_end, float explore_fraction, float epsilon_boost)
{
    const int lane = threadIdx.x;
    isv += (size_t)blockIdx.y * ISV_STRIDE;  // this agent's ISV row
    const float health = clamp01(isv[ISV_LEARNING_HEALTH]);
    if (lane < N_BRANCHES) {
        isv[ISV_GAMMA + lane] = gamma_low[lane] + (gamma_high[lane] - gamma_low[lane]) * health;
    }
    if (lane != 0) {
        return;
    }
    const float epoch = isv[ISV_EPOCH_INDEX];
    const float span = fmaxf(isv[ISV_TOTAL_EPOCHS] - 1.0f, 1.0f);
    const float progress = clamp01(epoch / span);
    isv[ISV_TRAINING_PROGRESS] = progress;

    const float tau_cosine = tau_end + 0.5f * (tau_start - tau_end) * (1.0f + cosf(3.14159265358979f * progress));
    const float tau_floor = tau_floor_lo + (tau_floor_hi - tau_floor_lo) * (1.0f - health);
    isv[ISV_TAU] = fmaxf(tau_cosine, tau_floor);

    const float decay = fmaxf(1.0f - progress / explore_fraction, 0.0f);
    const float scheduled = epsilon_end + (epsilon_start - epsilon_end) * decay;
    const float boosted = scheduled + epsilon_boost * (1.0f - health);
    isv[ISV_EPSILON] = fminf(fmaxf(boosted, epsilon_end), epsilon_start);
}
