// adaptive_learning_health.cu — learning health and the EMAs it is built from: the Sharpe EMA of
// the environments, the gradient-norm EMA, and (read here, written by adaptive_atom_support.cu)
// the Q-mean drift EMA.
//
// Shapes: ps [agents, n_envs, PS_STRIDE] f32; grad_norm [agents] f32 (each agent's global gradient
// norm of this update, on the device); isv [agents, ISV_STRIDE] f32 (device-mapped). One row per
// agent of a population (agents = 1 for a single run); block row y is agent y.
// Reads  (ps):  DSR_A, DSR_B per env (the EMAs of the per-bar net return and of its square).
// Reads  (ISV): SHARPE_EMA, GRAD_NORM_EMA, Q_MEAN_DRIFT_EMA, ATOM_HALF_WIDTH[b], LEARNING_HEALTH,
//               DSR_VARIANCE_FLOOR.
// Writes (ISV): SHARPE_EMA, GRAD_NORM_EMA, LEARNING_HEALTH.
//
// Formulas:
//   s_e   = clamp(A_e / sqrt(max(B_e − A_e², var_floor)), −s_clip, s_clip)  per-bar Sharpe of env e
//   S     ← S + α_s·(mean_e s_e − S)                                           Sharpe EMA
//   g     = grad_norm; G = gradient-norm EMA before this update
//   f_g   = 0 if g is not finite (G kept); 1 if G ≤ 0 (cold start, G ← g);
//           else 1 / (1 + max(0, g / G − spike_tol)) and G ← G + α_g·(g − G)   gradient spikes
//   f_q   = 1 / (1 + D / max(drift_frac · mean_b w_b, 1e-6))                    Q drift relative to the support
//   f_s   = 0.75 + 0.25·tanh(S / sharpe_scale)                                 profitability (a minor term)
//   H     ← clamp(H + α_h·(f_g·f_q·f_s − H), 0, 1)                             learning health
// Health is about the *stability* of learning first (gradient spikes, a drifting value scale) and
// only then about profit, so a flat but stable learner stays above ½.
//
// Launch geometry: one block of ADAPTIVE_BLOCK threads per agent (grid (1, agents)); thread i sums s_e for e = i, i +
// ADAPTIVE_BLOCK, ... in index order, then a shared-memory tree. No atomics: bitwise reproducible.
#include "generated/layout.cuh"
#include "block_reduce.cuh"

extern "C" __global__ void learning_health_update(
    const float* __restrict__ ps, int n_envs, const float* __restrict__ grad_norm, float* __restrict__ isv,
    float sharpe_rate, float grad_rate, float health_rate, float spike_tolerance, float drift_fraction,
    float sharpe_scale, float sharpe_clip)
{
    __shared__ float shared[ADAPTIVE_BLOCK];
    const int lane = threadIdx.x;
    ps += (size_t)blockIdx.y * n_envs * PS_STRIDE;  // this agent's environments
    grad_norm += blockIdx.y;                        // this agent's gradient norm
    isv += (size_t)blockIdx.y * ISV_STRIDE;         // this agent's ISV row
    const float variance_floor = isv[ISV_DSR_VARIANCE_FLOOR];
    float running = 0.0f;
    for (int env = lane; env < n_envs; env += ADAPTIVE_BLOCK) {
        const float a = ps[(size_t)env * PS_STRIDE + PS_DSR_A];
        const float b = ps[(size_t)env * PS_STRIDE + PS_DSR_B];
        const float sharpe = a / sqrtf(fmaxf(b - a * a, variance_floor));
        running += isfinite(sharpe) ? fminf(fmaxf(sharpe, -sharpe_clip), sharpe_clip) : 0.0f;
    }
    const float sharpe_sum = block_tree_sum(shared, running);
    if (lane != 0) {
        return;
    }
    const float mean_sharpe = sharpe_sum / (float)max(n_envs, 1);
    const float sharpe_ema = isv[ISV_SHARPE_EMA] + sharpe_rate * (mean_sharpe - isv[ISV_SHARPE_EMA]);
    isv[ISV_SHARPE_EMA] = sharpe_ema;

    const float g = grad_norm[0];
    const float grad_ema = isv[ISV_GRAD_NORM_EMA];
    float grad_factor = 1.0f;
    if (!isfinite(g)) {
        grad_factor = 0.0f;
    } else if (grad_ema <= 0.0f) {
        isv[ISV_GRAD_NORM_EMA] = g;
    } else {
        grad_factor = 1.0f / (1.0f + fmaxf(g / grad_ema - spike_tolerance, 0.0f));
        isv[ISV_GRAD_NORM_EMA] = grad_ema + grad_rate * (g - grad_ema);
    }

    float mean_half_width = 0.0f;
    for (int branch = 0; branch < N_BRANCHES; ++branch) {
        mean_half_width += isv[ISV_ATOM_HALF_WIDTH + branch];
    }
    mean_half_width /= (float)N_BRANCHES;
    const float drift_scale = fmaxf(drift_fraction * mean_half_width, 1e-6f);
    const float drift_factor = 1.0f / (1.0f + fmaxf(isv[ISV_Q_MEAN_DRIFT_EMA], 0.0f) / drift_scale);
    const float sharpe_factor = 0.75f + 0.25f * tanhf(sharpe_ema / sharpe_scale);

    const float raw = grad_factor * drift_factor * sharpe_factor;
    const float previous = isv[ISV_LEARNING_HEALTH];
    const float health = (isfinite(previous) ? previous : 0.0f) + health_rate * (raw - (isfinite(previous) ? previous : 0.0f));
    isv[ISV_LEARNING_HEALTH] = fminf(fmaxf(health, 0.0f), 1.0f);
}
