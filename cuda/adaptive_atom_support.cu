// adaptive_atom_support.cu — the C51 support of every branch, centred and sized from EMAs of the
// branch's TD targets, and the Q-mean drift EMA that learning health reads.
//
// Shapes: td_target [agents, batch, N_BRANCHES] f32 — per agent and sample, the mean of each
// branch's TD target distribution r + γⁿ·E[Z′] (before the projection onto the support);
// isv [agents, ISV_STRIDE] f32 (device-mapped): one ISV row per agent of a population (1 for a
// single run). Agents never mix: block row y reads and writes agent y's rows only.
// Reads  (ISV): ATOM_CENTRE[b], ATOM_HALF_WIDTH[b], Q_MEAN_DRIFT_EMA, GAMMA[b].
// Writes (ISV): ATOM_CENTRE[b], ATOM_HALF_WIDTH[b], Q_MEAN_DRIFT_EMA.
//
// Formulas per branch b (α: EMA rate, n: n-step). The targets' spread is the one-step part of the
// return's spread; the stationary solution of Var(G) = Var(target) + γ²ⁿ·Var(G) scales it up:
//   μ_b  = mean_i td_target[i, b]
//   s²_b = mean_i (td_target[i, b] − μ_b)²                         spread of the targets
//   g_b  = 1 / max(1 − γ_b²ⁿ, 1e-6)                                 variance gain (γ²ⁿ: 2n products)
//   c'_b = c_b + α·(μ_b − c_b)                                     centre follows the mean target
//   w'_b = w_b + α·(k_σ·sqrt(s²_b·g_b) − w_b)                      half-width follows k_σ return std devs
//   w_b ← clamp(w'_b, w_floor, (v_max − v_min) / 2)                floor against collapse, config bound
//   c_b ← clamp(c'_b, v_min + w_b, v_max − w_b)                    support stays inside [v_min, v_max]
// and the drift of the mean target (how far it moved from the centre it is tracked by):
//   drift ← drift + α_d·(mean_b |μ_b − c_b(before)| − drift)
// A branch whose statistics are not finite (a diverged batch) keeps its support and adds no drift.
// The support the learner uses is [c_b − w_b, c_b + w_b] split into its atoms. Nothing here reads
// the network's own predicted distribution, so the support has no fixed point at its config bound.
//
// Launch geometry: one block of ADAPTIVE_BLOCK threads per agent (grid (1, agents)). For each branch in order, thread i sums
// rows i, i + ADAPTIVE_BLOCK, ... in index order and a shared-memory tree reduces the lanes: one
// pass for μ_b, a second for the squared deviations. No atomics: the result is bitwise
// reproducible.
#include "generated/layout.cuh"

#include "block_reduce.cuh"

extern "C" __global__ void atom_support_update(
    const float* __restrict__ td_target, int batch, float* __restrict__ isv,
    float ema_rate, float drift_rate, float k_sigma, float half_width_floor, float v_min, float v_max,
    int n_step)
{
    __shared__ float shared[ADAPTIVE_BLOCK];
    td_target += (size_t)blockIdx.y * batch * N_BRANCHES;  // this agent's batch
    isv += (size_t)blockIdx.y * ISV_STRIDE;                // this agent's ISV row
    const int lane = threadIdx.x;
    const float inv_batch = 1.0f / (float)max(batch, 1);
    const float half_width_cap = fmaxf(0.5f * (v_max - v_min), half_width_floor);
    float drift_total = 0.0f;
    float drift_branches = 0.0f;
    for (int branch = 0; branch < N_BRANCHES; ++branch) {
        float running = 0.0f;
        for (int row = lane; row < batch; row += ADAPTIVE_BLOCK) {
            running += td_target[(size_t)row * N_BRANCHES + branch];
        }
        const float mean = block_tree_sum(shared, running) * inv_batch;
        float squares = 0.0f;
        for (int row = lane; row < batch; row += ADAPTIVE_BLOCK) {
            const float deviation = td_target[(size_t)row * N_BRANCHES + branch] - mean;
            squares += deviation * deviation;
        }
        const float variance = block_tree_sum(shared, squares) * inv_batch;
        if (lane == 0 && batch > 0 && isfinite(mean) && isfinite(variance)) {
            const float gamma = isv[ISV_GAMMA + branch];
            float power = 1.0f;
            for (int i = 0; i < 2 * n_step; ++i) power = power * gamma;
            const float gain = 1.0f / fmaxf(1.0f - power, 1e-6f);
            const float centre = isv[ISV_ATOM_CENTRE + branch];
            const float half_width = isv[ISV_ATOM_HALF_WIDTH + branch];
            const float next_centre = centre + ema_rate * (mean - centre);
            const float spread = k_sigma * sqrtf(variance * gain);
            const float next_half = half_width + ema_rate * (spread - half_width);
            const float bounded_half = fminf(fmaxf(next_half, half_width_floor), half_width_cap);
            const float bounded_centre = fminf(fmaxf(next_centre, v_min + bounded_half), v_max - bounded_half);
            isv[ISV_ATOM_HALF_WIDTH + branch] = bounded_half;
            isv[ISV_ATOM_CENTRE + branch] = bounded_centre;
            drift_total += fabsf(mean - centre);
            drift_branches += 1.0f;
        }
    }
    if (lane == 0 && drift_branches > 0.0f) {
        const float drift = isv[ISV_Q_MEAN_DRIFT_EMA];
        isv[ISV_Q_MEAN_DRIFT_EMA] = drift + drift_rate * (drift_total / drift_branches - drift);
    }
}
