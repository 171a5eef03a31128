// env_step — advance n_envs trading environments by K bars (one thread per env, K bars in a loop).
//
// Purpose: the GPU trading environment of the trainer. Each env trades one bar series: the joint
// action at its cursor t sets a target position (Hold keeps, Flat closes, Short/Long × magnitude
// fraction of equity × the ISV Kelly cap, so every magnitude stays distinct), the order fills at close[t] moved against the
// trader (market: half spread + slippage × impact[urgency]; limit: earns capture[urgency] × half
// spread, fills with probability fill_prob[urgency] drawn from Philox), fees are
// fee_rate × |units| × fill, equity = cash + position × close (vectorbt from_orders accounting,
// trainer/env/accounting.py). The reward (ISV REWARD_MODE) is the differential Sharpe ratio of the
// per-bar net return, zero during the warm-up, with a variance floor, or that net return in units of
// RETURN_SCALE (the training bars' return std, no warm-up); either is clipped. Either is computed
// from the return less HOLD_HURDLE × RETURN_SCALE × the exposure held over the bar (a per-bar
// Sharpe a position must beat to earn reward; 0 = off), while the DSR EMAs keep the true return.
// Episodes end at the data end, at the configured length or at ruin, and restart at a random bar
// drawn from Philox. Only
// ruin is a terminal (nothing follows it); the data end and the time limit truncate an episode
// whose value goes on (Pardo et al. 2018), so the learner bootstraps from the state the episode
// reached: final_ps holds it, written only for the (rare) bars that end an episode.
//
// Shapes: ps f32 [n_envs, PS_STRIDE] (in/out); isv f32 [ISV_STRIDE] (device-mapped host memory,
// staged once per block into shared memory); actions i32 [K, n_envs] joint indices; close, spread
// f32 [n_bars]; counter i64 [1] (draw k uses counter + k; the launcher adds K afterwards);
// rewards, dones f32 [K, n_envs] (done: the episode ended and restarted); terminals f32 [K, n_envs]
// (1 at ruin only); obs_index i32 [K, n_envs] (the cursor after each step, a new start after a
// done); final_ps f32 [K, n_envs, PS_STRIDE] (where dones = 1: the state the episode reached,
// before the restart; other rows are left as they were — an env still running reached its ps row).
// Agents (env_step_agents, a population in one launch): ps [agents, n_envs, PS_STRIDE], isv
// [agents, ISV_STRIDE], actions and outputs [agents, K, n_envs], final_ps [agents, K, n_envs,
// PS_STRIDE], counters int64 [agents], seeds int64 [agents]; close and spread shared. Agent y's
// envs draw with its seed and counter and env index e within the agent: its single run's numbers.
// Launch: ceil(n_envs / blockDim.x) blocks along x (one row of blocks per agent along y for
// env_step_agents); any block size.
// Invariants: matches trainer.ops.env_step.env_step_reference operation for operation (compile
// with --fmad=false); no atomics; each env touches only its own ps row and output columns (and
// an agent only its own rows).
#include "generated/layout.cuh"
#include "rng.cuh"

// One env's portfolio state, held in registers across the K bars (the PS slots, by name).
struct EnvState {
    float pos, cash, pv, entry, trip_pnl, trip_basis, dsr_a, dsr_b, wins, losses, win_sum, loss_sum;
    float bar, episode_start, steps, last_reward, last_return, last_cost, trades;
};

__device__ __forceinline__ EnvState load_state(const float* __restrict__ row) {
    EnvState s;
    s.pos = row[PS_POSITION]; s.cash = row[PS_CASH]; s.pv = row[PS_PORTFOLIO_VALUE];
    s.entry = row[PS_ENTRY_PRICE]; s.trip_pnl = row[PS_TRIP_PNL]; s.trip_basis = row[PS_TRIP_BASIS];
    s.dsr_a = row[PS_DSR_A]; s.dsr_b = row[PS_DSR_B];
    s.wins = row[PS_KELLY_WINS]; s.losses = row[PS_KELLY_LOSSES];
    s.win_sum = row[PS_KELLY_WIN_SUM]; s.loss_sum = row[PS_KELLY_LOSS_SUM];
    s.bar = row[PS_BAR_INDEX]; s.episode_start = row[PS_EPISODE_START]; s.steps = row[PS_EPISODE_STEPS];
    s.last_reward = row[PS_LAST_REWARD]; s.last_return = row[PS_LAST_RETURN]; s.last_cost = row[PS_LAST_COST];
    s.trades = row[PS_TRADE_COUNT];
    return s;
}

__device__ __forceinline__ void store_state(float* __restrict__ row, const EnvState& s) {
    row[PS_POSITION] = s.pos; row[PS_CASH] = s.cash; row[PS_PORTFOLIO_VALUE] = s.pv;
    row[PS_ENTRY_PRICE] = s.entry; row[PS_TRIP_PNL] = s.trip_pnl; row[PS_TRIP_BASIS] = s.trip_basis;
    row[PS_DSR_A] = s.dsr_a; row[PS_DSR_B] = s.dsr_b;
    row[PS_KELLY_WINS] = s.wins; row[PS_KELLY_LOSSES] = s.losses;
    row[PS_KELLY_WIN_SUM] = s.win_sum; row[PS_KELLY_LOSS_SUM] = s.loss_sum;
    row[PS_BAR_INDEX] = s.bar; row[PS_EPISODE_START] = s.episode_start; row[PS_EPISODE_STEPS] = s.steps;
    row[PS_LAST_REWARD] = s.last_reward; row[PS_LAST_RETURN] = s.last_return; row[PS_LAST_COST] = s.last_cost;
    row[PS_TRADE_COUNT] = s.trades;
}

// One env's K bars: the body of both kernels (cfg: this env's ISV row, staged in shared memory;
// the pointers already at this agent's rows; e: the env's index within its agent).
__device__ __forceinline__ void step_env(float* __restrict__ ps, const float* __restrict__ cfg,
                                         const int* __restrict__ actions, const float* __restrict__ close,
                                         const float* __restrict__ spread, long long counter0,
                                         unsigned long long seed, int e, int n_envs, int n_bars, int k_steps,
                                         float* __restrict__ rewards, float* __restrict__ dones,
                                         int* __restrict__ obs_index, float* __restrict__ terminals,
                                         float* __restrict__ final_ps) {
    const float kelly_cap = fmaxf(cfg[ISV_KELLY_CAP], 0.0f);
    const float fee_rate = cfg[ISV_FEE_RATE];
    const float slippage = cfg[ISV_SLIPPAGE];
    const float eta = cfg[ISV_DSR_ETA];
    const float warmup = cfg[ISV_DSR_WARMUP_BARS];
    const float var_floor = cfg[ISV_DSR_VARIANCE_FLOOR];
    const float clip = cfg[ISV_DSR_CLIP];
    const bool return_reward = cfg[ISV_REWARD_MODE] != 0.0f;
    const float return_scale = cfg[ISV_RETURN_SCALE];
    const float hold_hurdle = cfg[ISV_HOLD_HURDLE];
    const float init_cash = cfg[ISV_INIT_CASH];
    const float episode_length = cfg[ISV_EPISODE_LENGTH];
    const int max_start = episode_length > 0.0f ? max(n_bars - 1 - (int)episode_length, 0) : n_bars - 2;

    float* row = ps + (long long)e * PS_STRIDE;
    EnvState s = load_state(row);

    for (int k = 0; k < k_steps; ++k) {
        const long long out = (long long)k * n_envs + e;
        const int t = (int)s.bar;
        const int a = actions[out];
        const int direction = a / JOINT_STRIDE_DIRECTION;
        const int magnitude = (a / JOINT_STRIDE_MAGNITUDE) % N_MAGNITUDE;
        const int order_type = (a / JOINT_STRIDE_ORDER_TYPE) % N_ORDER_TYPE;
        const int urgency = a % N_URGENCY;

        const float price = close[t];
        const float half_spread = 0.5f * spread[t] / price;  // fraction of price
        float target = 0.0f;
        if (direction == DIRECTION_HOLD) {
            target = s.pos;
        } else if (direction == DIRECTION_SHORT || direction == DIRECTION_LONG) {
            const float units = magnitude_fraction(magnitude) * kelly_cap * s.pv / price;
            target = direction == DIRECTION_LONG ? units : -units;
        }
        float delta = target - s.pos;

        const PhiloxWords draw = philox_draw(seed, counter0 + k, RNG_STREAM_ENV, (unsigned int)e);
        const float u_fill = philox_uniform(draw.w0);
        const float u_start = philox_uniform(draw.w1);
        float slip;  // effective price move against the trader, fraction of price
        if (order_type == ORDER_TYPE_LIMIT) {
            if (!(u_fill < cfg[ISV_LIMIT_FILL_PROB + urgency])) delta = 0.0f;
            slip = -half_spread * cfg[ISV_LIMIT_SPREAD_CAPTURE + urgency];
        } else {
            slip = half_spread + slippage * cfg[ISV_MARKET_IMPACT + urgency];
        }
        const float side = delta > 0.0f ? 1.0f : -1.0f;
        const float fill = price * (1.0f + side * slip);
        const float traded = fabsf(delta);
        const float fee = fee_rate * traded * fill;
        s.cash = s.cash - delta * fill - fee;
        s.last_cost = delta * (fill - price) + fee;

        // Kelly statistics count round trips (flat or a flip to the next flat or flip), each once:
        // a reduce adds its realised P&L to the trip, the fill that closes the position records
        // the trip's return, its P&L over the notional it opened. (Counting each reduce as a trade
        // at the full return since entry made one position scaled out in steps many trades.)
        if (delta != 0.0f && s.pos != 0.0f && (delta > 0.0f) != (s.pos > 0.0f) && s.entry > 0.0f) {
            const float closed = fminf(traded, fabsf(s.pos));
            s.trip_pnl = s.trip_pnl + closed * (s.pos > 0.0f ? fill - s.entry : s.entry - fill);
            if (closed == fabsf(s.pos) && s.trip_basis > 0.0f) {
                const float trade_return = s.trip_pnl / s.trip_basis;
                if (trade_return > 0.0f) {
                    s.wins = s.wins + 1.0f;
                    s.win_sum = s.win_sum + trade_return;
                } else {
                    s.losses = s.losses + 1.0f;
                    s.loss_sum = s.loss_sum - trade_return;
                }
            }
        }
        const float new_pos = s.pos + delta;
        if (new_pos == 0.0f) {
            s.entry = 0.0f;
            s.trip_pnl = 0.0f;
            s.trip_basis = 0.0f;
        } else if (s.pos == 0.0f || (new_pos > 0.0f) != (s.pos > 0.0f)) {
            s.entry = fill;
            s.trip_pnl = 0.0f;
            s.trip_basis = fabsf(new_pos) * fill;
        } else if (fabsf(new_pos) > fabsf(s.pos)) {
            s.entry = (s.entry * fabsf(s.pos) + fill * traded) / fabsf(new_pos);
            s.trip_basis = s.trip_basis + traded * fill;
        }
        if (delta != 0.0f) s.trades = s.trades + 1.0f;

        // Mark to the next bar; the reward is the differential Sharpe ratio of the net return or the
        // net return in units of the training bars' return std (REWARD_MODE), either computed from
        // the return charged HOLD_HURDLE training volatilities per unit of exposure held over the
        // bar (so a position earns reward only above that per-bar Sharpe; 0 charges nothing). The
        // DSR EMAs run on the true return in both modes: the network reads them as portfolio inputs.
        const int t_next = t + 1;
        const float pv_next = s.cash + new_pos * close[t_next];
        const float ret = pv_next / s.pv - 1.0f;
        const float charged = ret - hold_hurdle * return_scale * (fabsf(new_pos) * price / s.pv);
        const float delta_a = ret - s.dsr_a;
        const float delta_b = ret * ret - s.dsr_b;
        const float variance = fmaxf(s.dsr_b - s.dsr_a * s.dsr_a, var_floor);
        const float dsr = (s.dsr_b * (charged - s.dsr_a) - 0.5f * s.dsr_a * (charged * charged - s.dsr_b)) /
                          (variance * sqrtf(variance));
        s.steps = s.steps + 1.0f;
        const float raw = return_reward ? charged / return_scale : dsr;
        const bool warming = !return_reward && s.steps <= warmup;  // only the DSR's EMAs need a warm-up
        const float reward = warming ? 0.0f : fminf(fmaxf(raw, -clip), clip);
        s.dsr_a = s.dsr_a + eta * delta_a;
        s.dsr_b = s.dsr_b + eta * delta_b;
        s.last_reward = reward;
        s.last_return = ret;
        s.pos = new_pos;
        s.pv = pv_next;
        s.bar = (float)t_next;

        const bool terminal = !(pv_next > 0.0f);  // ruin: nothing follows
        const bool done = terminal || t_next >= n_bars - 1 || (episode_length > 0.0f && s.steps >= episode_length);
        rewards[out] = reward;
        dones[out] = done ? 1.0f : 0.0f;
        terminals[out] = terminal ? 1.0f : 0.0f;
        if (done) {
            store_state(final_ps + out * PS_STRIDE, s);  // the state the episode reached (bootstrap source)
            const int start = min((int)(u_start * (float)(max_start + 1)), max_start);
            s.pos = 0.0f;
            s.cash = init_cash;
            s.pv = init_cash;
            s.entry = 0.0f;
            s.trip_pnl = 0.0f;
            s.trip_basis = 0.0f;
            s.dsr_a = 0.0f;
            s.dsr_b = 0.0f;
            s.steps = 0.0f;
            s.trades = 0.0f;
            s.bar = (float)start;
            s.episode_start = (float)start;
        }
        obs_index[out] = (int)s.bar;
    }
    store_state(row, s);
}

extern "C" __global__ void env_step(float* __restrict__ ps, const float* __restrict__ isv,
                                    const int* __restrict__ actions, const float* __restrict__ close,
                                    const float* __restrict__ spread, const long long* __restrict__ counter,
                                    unsigned long long seed, int n_envs, int n_bars, int k_steps,
                                    float* __restrict__ rewards, float* __restrict__ dones,
                                    int* __restrict__ obs_index, float* __restrict__ terminals,
                                    float* __restrict__ final_ps) {
    __shared__ float cfg[ISV_STRIDE];
    for (int i = threadIdx.x; i < ISV_STRIDE; i += blockDim.x) cfg[i] = isv[i];
    __syncthreads();
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_envs) return;
    step_env(ps, cfg, actions, close, spread, counter[0], seed, e, n_envs, n_bars, k_steps, rewards, dones,
             obs_index, terminals, final_ps);
}

// A population's environments in one launch: agent y = blockIdx.y steps its n_envs envs on its own
// rows (ps, actions, outputs), ISV row, counter and seed — exactly its single run's kernel.
extern "C" __global__ void env_step_agents(float* __restrict__ ps, const float* __restrict__ isv,
                                           const int* __restrict__ actions, const float* __restrict__ close,
                                           const float* __restrict__ spread, const long long* __restrict__ counters,
                                           const long long* __restrict__ seeds, int n_envs, int n_bars, int k_steps,
                                           float* __restrict__ rewards, float* __restrict__ dones,
                                           int* __restrict__ obs_index, float* __restrict__ terminals,
                                           float* __restrict__ final_ps) {
    const long long agent = blockIdx.y;
    __shared__ float cfg[ISV_STRIDE];
    for (int i = threadIdx.x; i < ISV_STRIDE; i += blockDim.x) cfg[i] = isv[agent * ISV_STRIDE + i];
    __syncthreads();
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_envs) return;
    const long long outputs = agent * k_steps * n_envs;  // this agent's [K, n_envs] output block
    step_env(ps + agent * n_envs * PS_STRIDE, cfg, actions + outputs, close, spread, counters[agent],
             (unsigned long long)seeds[agent], e, n_envs, n_bars, k_steps, rewards + outputs, dones + outputs,
             obs_index + outputs, terminals + outputs, final_ps + outputs * PS_STRIDE);
}
