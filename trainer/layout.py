"""Every multi-field layout of the trainer, in one place (invariants 5 and 8).

Why one file: the ISV slots, the portfolio state ``ps``, the action branches, the feature columns
and the RNG streams are shared by Python and CUDA. Declaring them here once and *generating*
``cuda/generated/layout.cuh`` means the two languages cannot drift apart, and a structural
fingerprint (FNV-1a 64-bit over the canonical slot lists) lets checkpoints and the ISV detect a
layout change and fail fast with "retrain required" — there are no migration functions.

Raw numeric indices into these buffers appear only in this file; everything else uses the
module-level constants exported below (``ps[:, PS_CASH]``, ``isv[ISV_GAMMA + BRANCH_MAGNITUDE]``).

Command line::

    python -m trainer.layout --write   # regenerate cuda/generated/layout.cuh
    python -m trainer.layout --check   # exit 1 when the header is stale
"""

from __future__ import annotations

import argparse
import enum
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from trainer.files import write_text_atomic

REGENERATE_COMMAND = "python -m trainer.layout --write"
HEADER_PATH = Path(__file__).resolve().parent.parent / "cuda" / "generated" / "layout.cuh"


class Writer(enum.Enum):
    """Who may write an ISV slot (invariant 1: GPU drives, CPU reads)."""

    GPU_COMPUTED = "gpu_computed"  # written by kernels only; the host may write its bootstrap at a reset
    CPU_INPUT = "cpu_input"  # born on the host (epoch index, total epochs)
    STATIC_CONFIG = "static_config"  # written once at construction from the config
    FINGERPRINT = "fingerprint"  # the layout fingerprint, two bit-cast f32 halves


@dataclass(frozen=True)
class Slot:
    """One named field of a layout; ``width`` > 1 is a named sub-array (e.g. one value per branch)."""

    name: str
    width: int = 1
    writer: Writer | None = None
    bootstrap: float | tuple[float, ...] = 0.0  # GPU_COMPUTED: value at a reset; STATIC_CONFIG: default
    doc: str = ""

    def values(self) -> tuple[float, ...]:
        """The bootstrap/default value of each element (a scalar is repeated over the width)."""
        if isinstance(self.bootstrap, tuple):
            return self.bootstrap
        return (float(self.bootstrap),) * self.width


class Layout:
    """An ordered list of slots with computed offsets; ``prefix`` names its constants."""

    def __init__(self, prefix: str, slots: tuple[Slot | str, ...], *, doc: str, needs_writer: bool = False):
        slots = tuple(Slot(s) if isinstance(s, str) else s for s in slots)
        names = [s.name for s in slots]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"layout {prefix} has duplicate slot names ({duplicates} vs unique) — hint: rename one")
        for s in slots:
            if s.width < 1:
                raise ValueError(f"slot {prefix}_{s.name} has width {s.width} (vs ≥ 1) — hint: widths are positive")
            if isinstance(s.bootstrap, tuple) and len(s.bootstrap) != s.width:
                raise ValueError(
                    f"slot {prefix}_{s.name} has {len(s.bootstrap)} defaults (vs width {s.width}) — hint: one per element"
                )
            if needs_writer and s.writer is None:
                raise ValueError(f"slot {prefix}_{s.name} has no writer class — hint: pick one of {list(Writer)}")
        self.prefix = prefix
        self.slots = slots
        self.doc = doc
        self.offsets: dict[str, int] = {}
        offset = 0
        for s in slots:
            self.offsets[s.name] = offset
            offset += s.width
        self.stride = offset

    def slot(self, name: str) -> Slot:
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(f"unknown {self.prefix} slot ({name!r} vs {[s.name for s in self.slots]}) — hint: check the spelling")

    def index_of(self, name: str) -> int:
        self.slot(name)
        return self.offsets[name]

    def constants(self) -> dict[str, int]:
        """CONSTANT_NAME → offset, plus CONSTANT_NAME_WIDTH for sub-arrays and PREFIX_STRIDE."""
        out: dict[str, int] = {}
        for s in self.slots:
            out[f"{self.prefix}_{s.name}"] = self.offsets[s.name]
            if s.width > 1:
                out[f"{self.prefix}_{s.name}_WIDTH"] = s.width
        out[f"{self.prefix}_STRIDE"] = self.stride
        return out

    def canonical(self) -> str:
        """The fingerprinted encoding: layout name, then each slot's name, width and writer, in order."""
        parts = [f"layout:{self.prefix}"]
        for s in self.slots:
            writer = s.writer.value if s.writer else "-"
            parts.append(f"{s.name}:{s.width}:{writer}")
        return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Action branches and sub-actions. The learner picks one argmax per branch; the joint index packs
# the four choices as ((direction·N_MAGNITUDE + magnitude)·N_ORDER_TYPE + order_type)·N_URGENCY + urgency.
BRANCHES = Layout("BRANCH", ("DIRECTION", "MAGNITUDE", "ORDER_TYPE", "URGENCY"), doc="action branches")
DIRECTIONS = Layout("DIRECTION", ("SHORT", "HOLD", "LONG", "FLAT"), doc="direction sub-actions")
MAGNITUDES = Layout("MAGNITUDE", ("QUARTER", "HALF", "FULL"), doc="magnitude sub-actions")
ORDER_TYPES = Layout("ORDER_TYPE", ("MARKET", "LIMIT"), doc="order-type sub-actions")
URGENCIES = Layout("URGENCY", ("PASSIVE", "NORMAL", "AGGRESSIVE"), doc="urgency sub-actions")
BRANCH_CHOICES = (DIRECTIONS, MAGNITUDES, ORDER_TYPES, URGENCIES)  # in BRANCH order

# Fraction of equity (before the Kelly cap) that each magnitude sub-action targets.
MAGNITUDE_FRACTIONS = (0.25, 0.5, 1.0)

# ---------------------------------------------------------------------------------------------
# The ISV: every adaptive signal, CPU-born input and static config value, plus the fingerprint.
_G, _C, _S, _F = Writer.GPU_COMPUTED, Writer.CPU_INPUT, Writer.STATIC_CONFIG, Writer.FINGERPRINT
ISV = Layout(
    "ISV",
    (
        # GPU-computed adaptive values (issue 6 kernels); bootstrap = value after a reset.
        Slot("TAU", writer=_G, bootstrap=0.005, doc="Polyak rate of the target-network update"),
        Slot("GAMMA", width=4, writer=_G, bootstrap=0.99, doc="discount per branch (BRANCH order)"),
        Slot("EPSILON", writer=_G, bootstrap=1.0, doc="ε-greedy exploration rate"),
        Slot("KELLY_CAP", writer=_G, bootstrap=0.5, doc="max |position| as a fraction of equity"),
        Slot("ATOM_CENTRE", width=4, writer=_G, bootstrap=0.0, doc="C51 support centre per branch"),
        Slot("ATOM_HALF_WIDTH", width=4, writer=_G, bootstrap=10.0, doc="C51 support half-width per branch"),
        Slot("LEARNING_HEALTH", writer=_G, bootstrap=1.0, doc="0 (sick) … 1 (healthy)"),
        Slot("SHARPE_EMA", writer=_G, doc="EMA of the episode Sharpe"),
        Slot("Q_MEAN_DRIFT_EMA", writer=_G, doc="EMA of the change of mean Q"),
        Slot("GRAD_NORM_EMA", writer=_G, doc="EMA of the global gradient norm"),
        Slot("TRAINING_PROGRESS", writer=_G, doc="0 … 1, from epoch index / total epochs"),
        # CPU-born inputs.
        Slot("EPOCH_INDEX", writer=_C, doc="current epoch (0-based)"),
        Slot("TOTAL_EPOCHS", writer=_C, bootstrap=1.0, doc="epochs the schedules span (the run's, or schedule.horizon_steps)"),
        # Static configuration written at construction.
        Slot("CQL_ALPHA", writer=_S, bootstrap=0.0, doc="CQL regulariser weight (0 = off)"),
        Slot("FEE_RATE", writer=_S, bootstrap=1e-4, doc="commission, fraction of traded notional"),
        Slot("SLIPPAGE", writer=_S, bootstrap=1e-4, doc="market-order impact, fraction of price"),
        Slot("MARKET_IMPACT", width=3, writer=_S, bootstrap=(0.5, 1.0, 2.0), doc="slippage multiplier per urgency"),
        Slot("LIMIT_FILL_PROB", width=3, writer=_S, bootstrap=(0.3, 0.6, 0.9), doc="limit fill probability per urgency"),
        Slot("LIMIT_SPREAD_CAPTURE", width=3, writer=_S, bootstrap=(1.0, 0.5, 0.0), doc="half-spread earned by a limit fill"),
        Slot("INIT_CASH", writer=_S, bootstrap=1.0, doc="equity at an episode start"),
        Slot("EPISODE_LENGTH", writer=_S, bootstrap=0.0, doc="bars per episode (0 = to the data end)"),
        Slot("DSR_ETA", writer=_S, bootstrap=0.01, doc="EMA rate of the differential Sharpe ratio"),
        Slot("DSR_WARMUP_BARS", writer=_S, bootstrap=16.0, doc="bars of zero reward while the EMAs warm up"),
        Slot("DSR_VARIANCE_FLOOR", writer=_S, bootstrap=1e-10, doc="floor under B − A² (never divide by 0)"),
        Slot("DSR_CLIP", writer=_S, bootstrap=5.0, doc="|reward| bound"),
        Slot("REWARD_MODE", writer=_S, bootstrap=0.0, doc="0 = differential Sharpe ratio, 1 = net return ÷ RETURN_SCALE"),
        Slot("RETURN_SCALE", writer=_S, bootstrap=1.0, doc="std of one-bar log returns over the training bars (unit of the return reward)"),
        Slot("HOLD_HURDLE", writer=_S, bootstrap=0.0, doc="per-bar Sharpe a held position must beat: the reward's return is charged HOLD_HURDLE × RETURN_SCALE × exposure"),
        Slot("KELLY_PRIOR_WINS", writer=_S, bootstrap=2.0, doc="Bayesian prior wins per env"),
        Slot("KELLY_PRIOR_LOSSES", writer=_S, bootstrap=2.0, doc="Bayesian prior losses per env"),
        Slot("KELLY_PRIOR_MEAN_RETURN", writer=_S, bootstrap=0.01, doc="prior mean |return| per trade"),
        # Fingerprint halves, bit-cast u32 → f32 (always the last two slots).
        Slot("FINGERPRINT_LO", writer=_F, doc="low 32 bits of the layout fingerprint"),
        Slot("FINGERPRINT_HI", writer=_F, doc="high 32 bits of the layout fingerprint"),
    ),
    doc="internal state vector (pinned, device-mapped f32)",
    needs_writer=True,
)

# ---------------------------------------------------------------------------------------------
# Portfolio state ps[n_envs, PS_STRIDE] (f32). Bar indices are stored as f32: exact below 2**24.
PS = Layout(
    "PS",
    (
        Slot("POSITION", doc="units held (signed)"),
        Slot("CASH"),
        Slot("PORTFOLIO_VALUE", doc="cash + position × close at the cursor"),
        Slot("ENTRY_PRICE", doc="average fill price of the open position (0 when flat)"),
        Slot("TRIP_PNL", doc="realised P&L of the open round trip's closes so far (units × price)"),
        Slot("TRIP_BASIS", doc="notional the open round trip has opened (units × fill price)"),
        Slot("DSR_A", doc="EMA of the per-bar net return"),
        Slot("DSR_B", doc="EMA of its square"),
        Slot("KELLY_WINS", doc="closed round trips with a gain (+ prior)"),
        Slot("KELLY_LOSSES", doc="closed round trips with a loss (+ prior)"),
        Slot("KELLY_WIN_SUM", doc="sum of winning round-trip returns (+ prior)"),
        Slot("KELLY_LOSS_SUM", doc="sum of |losing round-trip returns| (+ prior)"),
        Slot("BAR_INDEX", doc="time cursor: the bar the next action trades at"),
        Slot("EPISODE_START", doc="bar index of the episode start"),
        Slot("EPISODE_STEPS", doc="steps taken in the episode"),
        Slot("LAST_REWARD"),
        Slot("LAST_RETURN", doc="last per-bar net return"),
        Slot("LAST_COST", doc="fee + slippage paid by the last trade (cash units)"),
        Slot("TRADE_COUNT", doc="fills in the episode"),
    ),
    doc="per-env portfolio state",
)
MAX_BARS_F32_EXACT = 1 << 24

# Portfolio inputs to the network, one row per env (beside the bar's features).
PORTFOLIO_INPUT = Layout(
    "PORTFOLIO_INPUT",
    (
        Slot("POSITION_FRACTION", doc="position × close / equity"),
        Slot("UNREALIZED_RETURN", doc="signed (close / entry − 1) of the open position"),
        Slot("DSR_A", doc="EMA of the net return"),
        Slot("DSR_SIGMA", doc="sqrt(max(B − A², 0))"),
        Slot("EPISODE_PROGRESS", doc="steps / episode length (0 without a length)"),
        Slot("KELLY_CAP", doc="the cap the env applies"),
    ),
    doc="portfolio inputs to the network",
)

# ---------------------------------------------------------------------------------------------
# Feature columns of the per-bar feature tensor [T, FEATURE_STRIDE], in two groups.
MARKET_FEATURES = (
    Slot("RET_1"), Slot("RET_4"), Slot("RET_16"), Slot("RET_64"),
    Slot("REALIZED_VOL_16"), Slot("REALIZED_VOL_64"), Slot("LOG_RANGE"),
    Slot("VOLUME_Z_16"), Slot("VOLUME_Z_64"), Slot("MOMENTUM_16"), Slot("MOMENTUM_64"),
    Slot("MTF_RET_4X"), Slot("MTF_VOL_4X"), Slot("MTF_RET_16X"), Slot("MTF_VOL_16X"),
    Slot("AUTOCORR_16", doc="lag-1 autocorrelation of 1-bar returns over 16 bars: momentum (> 0) or reversal (< 0)"),
    Slot("AUTOCORR_64", doc="lag-1 autocorrelation of 1-bar returns over 64 bars"),
    Slot("AR1_FORECAST_16", doc="rolling AR(1) one-step forecast AUTOCORR_16 × RET_1 / REALIZED_VOL_16"),
    Slot("AR1_FORECAST_64", doc="rolling AR(1) one-step forecast over 64 bars"),
    Slot("LINEAR_FORECAST", doc="ridge forecast of the next return from the other columns, fitted per split on its training bars (trainer.data.forecast); 0 until a run fits it"),
)  # fmt: skip
ORDER_FLOW_FEATURES = (
    Slot("OFI", width=10, doc="multi-level OFI, depth-normalised, levels 1..10"),
    Slot("QUEUE_IMBALANCE", doc="level-1 queue imbalance (bid - ask) / (bid + ask)"),
    Slot("QUEUE_IMBALANCE_ALL", doc="queue imbalance over all 10 levels' depth"),
    Slot("SPREAD_REL"), Slot("BOOK_COM"),
)  # fmt: skip
FEATURE = Layout("FEATURE", MARKET_FEATURES + ORDER_FLOW_FEATURES, doc="per-bar feature columns")
FEATURE_GROUPS = Layout(
    "FEATURE_GROUP",
    (
        Slot("MARKET", width=20),
        Slot("ORDER_FLOW", width=14),
    ),
    doc="feature groups (offset + width into FEATURE)",
)
if [s.width for s in FEATURE_GROUPS.slots] != [sum(s.width for s in MARKET_FEATURES), sum(s.width for s in ORDER_FLOW_FEATURES)]:
    raise AssertionError("FEATURE_GROUP widths must equal the widths of MARKET_FEATURES and ORDER_FLOW_FEATURES")

# ---------------------------------------------------------------------------------------------
# Counter-based RNG streams: each consumer draws from its own stream id, so a shared counter
# value never yields the same numbers to two consumers.
RNG_STREAMS = Layout("RNG_STREAM", ("ENV", "ENV_RESET", "EXPLORE", "REPLAY", "IQN_TAU", "INIT", "AUGMENT"), doc="RNG stream ids")

# ---------------------------------------------------------------------------------------------
# Epoch metric sums: one device vector the training step adds every update's losses, gradient norm
# and a count into, read once at the epoch boundary (the step builds its update in this order).
METRICS = Layout(
    "METRIC",
    (
        Slot("C51", width=4, doc="C51 cross-entropy per branch"),
        Slot("IQN", doc="IQN quantile-Huber loss (unweighted)"),
        Slot("CQL", doc="CQL regulariser (unweighted)"),
        Slot("RETURN", doc="auxiliary next-return prediction loss (squared error, unweighted)"),
        Slot("TOTAL", doc="the minimised total loss"),
        Slot("GRAD_NORM", doc="global gradient norm before clipping"),
        Slot("UPDATES", doc="gradient updates summed (the divisor of the means)"),
    ),
    doc="epoch metric sums",
)
if METRICS.slot("C51").width != BRANCHES.stride:
    raise AssertionError("METRIC_C51 must hold one value per action branch")

LAYOUTS: tuple[Layout, ...] = (
    BRANCHES, *BRANCH_CHOICES, ISV, PS, PORTFOLIO_INPUT, FEATURE, FEATURE_GROUPS, RNG_STREAMS, METRICS,
)  # fmt: skip

# ---------------------------------------------------------------------------------------------
# Fingerprint.
FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
_U64 = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = FNV64_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV64_PRIME) & _U64
    return h


def canonical_encoding(layouts: tuple[Layout, ...] = LAYOUTS) -> bytes:
    extra = "magnitude_fractions:" + ",".join(repr(f) for f in MAGNITUDE_FRACTIONS)
    return ("\n\n".join(lay.canonical() for lay in layouts) + "\n\n" + extra).encode()


def compute_fingerprint(layouts: tuple[Layout, ...] = LAYOUTS) -> int:
    return fnv1a64(canonical_encoding(layouts))


def fingerprint_halves(fingerprint: int) -> tuple[int, int]:
    """(lo, hi) as *signed* int32 values, ready to store through an int32 view of f32 slots."""
    lo, hi = fingerprint & 0xFFFFFFFF, (fingerprint >> 32) & 0xFFFFFFFF
    return struct.unpack("<ii", struct.pack("<II", lo, hi))


def fingerprint_from_halves(lo: int, hi: int) -> int:
    """Inverse of fingerprint_halves (accepts signed or unsigned 32-bit values)."""
    return ((hi & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF)


LAYOUT_FINGERPRINT = compute_fingerprint()

# ---------------------------------------------------------------------------------------------
# Module-level constants (PS_CASH, ISV_TAU, DIRECTION_LONG, ...).
CONSTANTS: dict[str, int] = {}
for _layout in LAYOUTS:
    CONSTANTS.update(_layout.constants())
N_BRANCHES = BRANCHES.stride
BRANCH_SIZES = tuple(choice.stride for choice in BRANCH_CHOICES)
N_DIRECTION, N_MAGNITUDE, N_ORDER_TYPE, N_URGENCY = BRANCH_SIZES
N_JOINT_ACTIONS = N_DIRECTION * N_MAGNITUDE * N_ORDER_TYPE * N_URGENCY
JOINT_STRIDES = (N_MAGNITUDE * N_ORDER_TYPE * N_URGENCY, N_ORDER_TYPE * N_URGENCY, N_URGENCY, 1)
CONSTANTS.update(
    N_BRANCHES=N_BRANCHES, N_DIRECTION=N_DIRECTION, N_MAGNITUDE=N_MAGNITUDE,
    N_ORDER_TYPE=N_ORDER_TYPE, N_URGENCY=N_URGENCY, N_JOINT_ACTIONS=N_JOINT_ACTIONS,
    JOINT_STRIDE_DIRECTION=JOINT_STRIDES[0], JOINT_STRIDE_MAGNITUDE=JOINT_STRIDES[1],
    JOINT_STRIDE_ORDER_TYPE=JOINT_STRIDES[2], JOINT_STRIDE_URGENCY=JOINT_STRIDES[3],
    N_RNG_STREAMS=RNG_STREAMS.stride,
)  # fmt: skip
globals().update(CONSTANTS)

# Names the static analysers can see (the globals().update above is invisible to them).
ISV_STRIDE: int = ISV.stride
PS_STRIDE: int = PS.stride
FEATURE_STRIDE: int = FEATURE.stride
PORTFOLIO_INPUT_STRIDE: int = PORTFOLIO_INPUT.stride
ISV_TAU: int = ISV.offsets["TAU"]
ISV_GAMMA: int = ISV.offsets["GAMMA"]
ISV_EPSILON: int = ISV.offsets["EPSILON"]
ISV_KELLY_CAP: int = ISV.offsets["KELLY_CAP"]
ISV_ATOM_CENTRE: int = ISV.offsets["ATOM_CENTRE"]
ISV_ATOM_HALF_WIDTH: int = ISV.offsets["ATOM_HALF_WIDTH"]
ISV_LEARNING_HEALTH: int = ISV.offsets["LEARNING_HEALTH"]
ISV_SHARPE_EMA: int = ISV.offsets["SHARPE_EMA"]
ISV_Q_MEAN_DRIFT_EMA: int = ISV.offsets["Q_MEAN_DRIFT_EMA"]
ISV_GRAD_NORM_EMA: int = ISV.offsets["GRAD_NORM_EMA"]
ISV_TRAINING_PROGRESS: int = ISV.offsets["TRAINING_PROGRESS"]
ISV_EPOCH_INDEX: int = ISV.offsets["EPOCH_INDEX"]
ISV_TOTAL_EPOCHS: int = ISV.offsets["TOTAL_EPOCHS"]
ISV_CQL_ALPHA: int = ISV.offsets["CQL_ALPHA"]
ISV_FEE_RATE: int = ISV.offsets["FEE_RATE"]
ISV_SLIPPAGE: int = ISV.offsets["SLIPPAGE"]
ISV_MARKET_IMPACT: int = ISV.offsets["MARKET_IMPACT"]
ISV_LIMIT_FILL_PROB: int = ISV.offsets["LIMIT_FILL_PROB"]
ISV_LIMIT_SPREAD_CAPTURE: int = ISV.offsets["LIMIT_SPREAD_CAPTURE"]
ISV_INIT_CASH: int = ISV.offsets["INIT_CASH"]
ISV_EPISODE_LENGTH: int = ISV.offsets["EPISODE_LENGTH"]
ISV_DSR_ETA: int = ISV.offsets["DSR_ETA"]
ISV_DSR_WARMUP_BARS: int = ISV.offsets["DSR_WARMUP_BARS"]
ISV_DSR_VARIANCE_FLOOR: int = ISV.offsets["DSR_VARIANCE_FLOOR"]
ISV_DSR_CLIP: int = ISV.offsets["DSR_CLIP"]
ISV_REWARD_MODE: int = ISV.offsets["REWARD_MODE"]
ISV_HOLD_HURDLE: int = ISV.offsets["HOLD_HURDLE"]
REWARD_MODES = ("dsr", "return")  # env.reward's values; the ISV REWARD_MODE slot holds the index
ISV_RETURN_SCALE: int = ISV.offsets["RETURN_SCALE"]
ISV_KELLY_PRIOR_WINS: int = ISV.offsets["KELLY_PRIOR_WINS"]
ISV_KELLY_PRIOR_LOSSES: int = ISV.offsets["KELLY_PRIOR_LOSSES"]
ISV_KELLY_PRIOR_MEAN_RETURN: int = ISV.offsets["KELLY_PRIOR_MEAN_RETURN"]
ISV_FINGERPRINT_LO: int = ISV.offsets["FINGERPRINT_LO"]
ISV_FINGERPRINT_HI: int = ISV.offsets["FINGERPRINT_HI"]
PS_POSITION: int = PS.offsets["POSITION"]
PS_CASH: int = PS.offsets["CASH"]
PS_PORTFOLIO_VALUE: int = PS.offsets["PORTFOLIO_VALUE"]
PS_ENTRY_PRICE: int = PS.offsets["ENTRY_PRICE"]
PS_TRIP_PNL: int = PS.offsets["TRIP_PNL"]
PS_TRIP_BASIS: int = PS.offsets["TRIP_BASIS"]
PS_DSR_A: int = PS.offsets["DSR_A"]
PS_DSR_B: int = PS.offsets["DSR_B"]
PS_KELLY_WINS: int = PS.offsets["KELLY_WINS"]
PS_KELLY_LOSSES: int = PS.offsets["KELLY_LOSSES"]
PS_KELLY_WIN_SUM: int = PS.offsets["KELLY_WIN_SUM"]
PS_KELLY_LOSS_SUM: int = PS.offsets["KELLY_LOSS_SUM"]
PS_BAR_INDEX: int = PS.offsets["BAR_INDEX"]
PS_EPISODE_START: int = PS.offsets["EPISODE_START"]
PS_EPISODE_STEPS: int = PS.offsets["EPISODE_STEPS"]
PS_LAST_REWARD: int = PS.offsets["LAST_REWARD"]
PS_LAST_RETURN: int = PS.offsets["LAST_RETURN"]
PS_LAST_COST: int = PS.offsets["LAST_COST"]
PS_TRADE_COUNT: int = PS.offsets["TRADE_COUNT"]
PORTFOLIO_INPUT_POSITION_FRACTION: int = PORTFOLIO_INPUT.offsets["POSITION_FRACTION"]
PORTFOLIO_INPUT_UNREALIZED_RETURN: int = PORTFOLIO_INPUT.offsets["UNREALIZED_RETURN"]
PORTFOLIO_INPUT_DSR_A: int = PORTFOLIO_INPUT.offsets["DSR_A"]
PORTFOLIO_INPUT_DSR_SIGMA: int = PORTFOLIO_INPUT.offsets["DSR_SIGMA"]
PORTFOLIO_INPUT_EPISODE_PROGRESS: int = PORTFOLIO_INPUT.offsets["EPISODE_PROGRESS"]
PORTFOLIO_INPUT_KELLY_CAP: int = PORTFOLIO_INPUT.offsets["KELLY_CAP"]
BRANCH_DIRECTION: int = BRANCHES.offsets["DIRECTION"]
BRANCH_MAGNITUDE: int = BRANCHES.offsets["MAGNITUDE"]
BRANCH_ORDER_TYPE: int = BRANCHES.offsets["ORDER_TYPE"]
BRANCH_URGENCY: int = BRANCHES.offsets["URGENCY"]
DIRECTION_SHORT: int = DIRECTIONS.offsets["SHORT"]
DIRECTION_HOLD: int = DIRECTIONS.offsets["HOLD"]
DIRECTION_LONG: int = DIRECTIONS.offsets["LONG"]
DIRECTION_FLAT: int = DIRECTIONS.offsets["FLAT"]
MAGNITUDE_QUARTER: int = MAGNITUDES.offsets["QUARTER"]
MAGNITUDE_HALF: int = MAGNITUDES.offsets["HALF"]
MAGNITUDE_FULL: int = MAGNITUDES.offsets["FULL"]
ORDER_TYPE_MARKET: int = ORDER_TYPES.offsets["MARKET"]
ORDER_TYPE_LIMIT: int = ORDER_TYPES.offsets["LIMIT"]
URGENCY_PASSIVE: int = URGENCIES.offsets["PASSIVE"]
URGENCY_NORMAL: int = URGENCIES.offsets["NORMAL"]
URGENCY_AGGRESSIVE: int = URGENCIES.offsets["AGGRESSIVE"]
RNG_STREAM_ENV: int = RNG_STREAMS.offsets["ENV"]
RNG_STREAM_ENV_RESET: int = RNG_STREAMS.offsets["ENV_RESET"]
RNG_STREAM_EXPLORE: int = RNG_STREAMS.offsets["EXPLORE"]
RNG_STREAM_REPLAY: int = RNG_STREAMS.offsets["REPLAY"]
RNG_STREAM_IQN_TAU: int = RNG_STREAMS.offsets["IQN_TAU"]
RNG_STREAM_INIT: int = RNG_STREAMS.offsets["INIT"]
RNG_STREAM_AUGMENT: int = RNG_STREAMS.offsets["AUGMENT"]
METRIC_C51: int = METRICS.offsets["C51"]
METRIC_C51_WIDTH: int = METRICS.slot("C51").width
METRIC_IQN: int = METRICS.offsets["IQN"]
METRIC_CQL: int = METRICS.offsets["CQL"]
METRIC_RETURN: int = METRICS.offsets["RETURN"]
METRIC_TOTAL: int = METRICS.offsets["TOTAL"]
METRIC_GRAD_NORM: int = METRICS.offsets["GRAD_NORM"]
METRIC_UPDATES: int = METRICS.offsets["UPDATES"]
METRIC_STRIDE: int = METRICS.stride
FEATURE_GROUP_MARKET: int = FEATURE_GROUPS.offsets["MARKET"]
FEATURE_GROUP_MARKET_WIDTH: int = FEATURE_GROUPS.slot("MARKET").width
FEATURE_GROUP_ORDER_FLOW: int = FEATURE_GROUPS.offsets["ORDER_FLOW"]
FEATURE_GROUP_ORDER_FLOW_WIDTH: int = FEATURE_GROUPS.slot("ORDER_FLOW").width

BRANCH_STRIDE: int = BRANCHES.stride
DIRECTION_STRIDE: int = DIRECTIONS.stride
MAGNITUDE_STRIDE: int = MAGNITUDES.stride
ORDER_TYPE_STRIDE: int = ORDER_TYPES.stride
URGENCY_STRIDE: int = URGENCIES.stride
ISV_GAMMA_WIDTH: int = ISV.slot("GAMMA").width
ISV_ATOM_CENTRE_WIDTH: int = ISV.slot("ATOM_CENTRE").width
ISV_ATOM_HALF_WIDTH_WIDTH: int = ISV.slot("ATOM_HALF_WIDTH").width
ISV_MARKET_IMPACT_WIDTH: int = ISV.slot("MARKET_IMPACT").width
ISV_LIMIT_FILL_PROB_WIDTH: int = ISV.slot("LIMIT_FILL_PROB").width
ISV_LIMIT_SPREAD_CAPTURE_WIDTH: int = ISV.slot("LIMIT_SPREAD_CAPTURE").width
FEATURE_RET_1: int = FEATURE.offsets["RET_1"]
FEATURE_RET_4: int = FEATURE.offsets["RET_4"]
FEATURE_RET_16: int = FEATURE.offsets["RET_16"]
FEATURE_RET_64: int = FEATURE.offsets["RET_64"]
FEATURE_REALIZED_VOL_16: int = FEATURE.offsets["REALIZED_VOL_16"]
FEATURE_REALIZED_VOL_64: int = FEATURE.offsets["REALIZED_VOL_64"]
FEATURE_LOG_RANGE: int = FEATURE.offsets["LOG_RANGE"]
FEATURE_VOLUME_Z_16: int = FEATURE.offsets["VOLUME_Z_16"]
FEATURE_VOLUME_Z_64: int = FEATURE.offsets["VOLUME_Z_64"]
FEATURE_MOMENTUM_16: int = FEATURE.offsets["MOMENTUM_16"]
FEATURE_MOMENTUM_64: int = FEATURE.offsets["MOMENTUM_64"]
FEATURE_MTF_RET_4X: int = FEATURE.offsets["MTF_RET_4X"]
FEATURE_MTF_VOL_4X: int = FEATURE.offsets["MTF_VOL_4X"]
FEATURE_MTF_RET_16X: int = FEATURE.offsets["MTF_RET_16X"]
FEATURE_MTF_VOL_16X: int = FEATURE.offsets["MTF_VOL_16X"]
FEATURE_AUTOCORR_16: int = FEATURE.offsets["AUTOCORR_16"]
FEATURE_AUTOCORR_64: int = FEATURE.offsets["AUTOCORR_64"]
FEATURE_AR1_FORECAST_16: int = FEATURE.offsets["AR1_FORECAST_16"]
FEATURE_AR1_FORECAST_64: int = FEATURE.offsets["AR1_FORECAST_64"]
FEATURE_LINEAR_FORECAST: int = FEATURE.offsets["LINEAR_FORECAST"]
FEATURE_OFI: int = FEATURE.offsets["OFI"]
FEATURE_OFI_WIDTH: int = FEATURE.slot("OFI").width
FEATURE_QUEUE_IMBALANCE: int = FEATURE.offsets["QUEUE_IMBALANCE"]
FEATURE_QUEUE_IMBALANCE_ALL: int = FEATURE.offsets["QUEUE_IMBALANCE_ALL"]
FEATURE_SPREAD_REL: int = FEATURE.offsets["SPREAD_REL"]
FEATURE_BOOK_COM: int = FEATURE.offsets["BOOK_COM"]
FEATURE_GROUP_STRIDE: int = FEATURE_GROUPS.stride
RNG_STREAM_STRIDE: int = RNG_STREAMS.stride
JOINT_STRIDE_DIRECTION: int = JOINT_STRIDES[BRANCH_DIRECTION]
JOINT_STRIDE_MAGNITUDE: int = JOINT_STRIDES[BRANCH_MAGNITUDE]
JOINT_STRIDE_ORDER_TYPE: int = JOINT_STRIDES[BRANCH_ORDER_TYPE]
JOINT_STRIDE_URGENCY: int = JOINT_STRIDES[BRANCH_URGENCY]
N_RNG_STREAMS: int = RNG_STREAMS.stride


def _check_explicit_constants() -> None:
    """The hand-listed names above must agree with the generated table (a typo fails at import)."""
    module = globals()
    for name, value in CONSTANTS.items():
        if module[name] != value:
            raise AssertionError(f"layout constant {name} disagrees ({module[name]} vs {value})")


_check_explicit_constants()
if ISV.slots[-2].writer is not Writer.FINGERPRINT or ISV.slots[-1].writer is not Writer.FINGERPRINT:
    raise AssertionError("the ISV fingerprint must occupy the last two slots")


def encode_joint_action(direction, magnitude, order_type, urgency):
    """Pack four branch indices (ints or integer tensors) into the joint action index."""
    return (
        direction * JOINT_STRIDES[0] + magnitude * JOINT_STRIDES[1] + order_type * JOINT_STRIDES[2] + urgency
    )


def decode_joint_action(joint):
    """Unpack a joint action index (int or integer tensor) into (direction, magnitude, order_type, urgency)."""
    return (
        joint // JOINT_STRIDES[0],
        (joint // JOINT_STRIDES[1]) % N_MAGNITUDE,
        (joint // JOINT_STRIDES[2]) % N_ORDER_TYPE,
        joint % N_URGENCY,
    )


# ---------------------------------------------------------------------------------------------
# Header generation.
def render_header() -> str:
    lines = [
        "// generated by python -m trainer.layout --write — do not edit",
        "// Source of truth: trainer/layout.py. Regenerate after any layout change.",
        "#pragma once",
        "",
        f"#define FOXHUNT_LAYOUT_FINGERPRINT 0x{LAYOUT_FINGERPRINT:016X}ULL",
        f"#define FOXHUNT_LAYOUT_FINGERPRINT_LO 0x{LAYOUT_FINGERPRINT & 0xFFFFFFFF:08X}u",
        f"#define FOXHUNT_LAYOUT_FINGERPRINT_HI 0x{LAYOUT_FINGERPRINT >> 32:08X}u",
        "",
    ]
    for lay in LAYOUTS:
        lines.append(f"// {lay.doc}")
        for name, value in lay.constants().items():
            lines.append(f"constexpr int {name} = {value};")
        lines.append("")
    derived = ("N_BRANCHES", "N_DIRECTION", "N_MAGNITUDE", "N_ORDER_TYPE", "N_URGENCY", "N_JOINT_ACTIONS",
               "JOINT_STRIDE_DIRECTION", "JOINT_STRIDE_MAGNITUDE", "JOINT_STRIDE_ORDER_TYPE",
               "JOINT_STRIDE_URGENCY", "N_RNG_STREAMS")  # fmt: skip
    lines.append("// action-space sizes and the joint-action encoding")
    lines += [f"constexpr int {name} = {CONSTANTS[name]};" for name in derived]
    lines.append("")
    lines.append("// fraction of equity targeted per magnitude sub-action (before the Kelly cap)")
    for name, frac in zip((s.name for s in MAGNITUDES.slots), MAGNITUDE_FRACTIONS, strict=True):
        lines.append(f"constexpr float MAGNITUDE_FRACTION_{name} = {frac!r}f;")
    lines.append("__host__ __device__ __forceinline__ float magnitude_fraction(int magnitude) {")
    lines.append("    return magnitude == MAGNITUDE_QUARTER ? MAGNITUDE_FRACTION_QUARTER")
    lines.append("         : magnitude == MAGNITUDE_HALF ? MAGNITUDE_FRACTION_HALF : MAGNITUDE_FRACTION_FULL;")
    lines.append("}")
    lines.append("")
    lines.append("// consistency checks")
    for lay in LAYOUTS:
        last = lay.slots[-1]
        lines.append(
            f"static_assert({lay.prefix}_{last.name} + {last.width} == {lay.prefix}_STRIDE, "
            f"\"{lay.prefix} stride disagrees with its last slot\");"
        )
    lines.append("static_assert(ISV_FINGERPRINT_HI == ISV_STRIDE - 1 && ISV_FINGERPRINT_LO == ISV_STRIDE - 2, "
                 "\"fingerprint must be the ISV tail\");")
    lines.append("static_assert(ISV_GAMMA_WIDTH == N_BRANCHES && ISV_ATOM_CENTRE_WIDTH == N_BRANCHES && "
                 "ISV_ATOM_HALF_WIDTH_WIDTH == N_BRANCHES, \"per-branch ISV slots must have N_BRANCHES entries\");")
    lines.append("static_assert(ISV_MARKET_IMPACT_WIDTH == N_URGENCY && ISV_LIMIT_FILL_PROB_WIDTH == N_URGENCY && "
                 "ISV_LIMIT_SPREAD_CAPTURE_WIDTH == N_URGENCY, \"per-urgency ISV slots must have N_URGENCY entries\");")
    lines.append("static_assert(N_JOINT_ACTIONS == JOINT_STRIDE_DIRECTION * N_DIRECTION, \"joint encoding\");")
    lines.append("static_assert(FEATURE_GROUP_STRIDE == FEATURE_STRIDE, \"feature groups cover every feature\");")
    lines.append("static_assert(METRIC_C51_WIDTH == N_BRANCHES, \"one C51 metric per branch\");")
    lines.append("")
    return "\n".join(lines)


def header_is_fresh(path: Path = HEADER_PATH) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == render_header()


def stale_message(path: Path = HEADER_PATH) -> str:
    state = "missing" if not path.is_file() else "stale"
    return (
        f"layout header {path} is {state} (differs from trainer/layout.py vs generated) — hint: run "
        f"`{REGENERATE_COMMAND}` and commit the result"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer.layout", description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="regenerate cuda/generated/layout.cuh")
    group.add_argument("--check", action="store_true", help="exit 1 when the header is stale")
    parser.add_argument("--header", type=Path, default=HEADER_PATH, help="header path (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.write:
        write_text_atomic(args.header, render_header())
        print(f"wrote {args.header} (fingerprint 0x{LAYOUT_FINGERPRINT:016x})")
        return 0
    if header_is_fresh(args.header):
        print(f"{args.header} is up to date (fingerprint 0x{LAYOUT_FINGERPRINT:016x})")
        return 0
    print(stale_message(args.header), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
