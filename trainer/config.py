"""Training configuration: one frozen dataclass per concern, loaded from TOML and validated up front.

Why this shape: every knob of a run lives in one resolved object that is written next to the run's
outputs, so a run can be reproduced from its directory alone. A user's TOML is checked completely
before anything is built: every unknown key and every out-of-range value is reported in one
``ConfigError`` (key, value, allowed range), so a typo never costs a half-finished run.

The field docstrings (the string literal right after each field) are the reference text that
``docs/trainer.md`` and ``field_help`` expose.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import json
import math
import textwrap
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from trainer.errors import UserError
from trainer.layout import ISV, REWARD_MODES
from trainer.ops.adaptive_atom_support import AtomSupportParams
from trainer.ops.adaptive_kelly_cap import KellyParams
from trainer.ops.adaptive_learning_health import HealthParams
from trainer.ops.adaptive_machinery import AdaptiveParams
from trainer.ops.adaptive_schedule import ScheduleParams

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "config" / "train" / "default.toml"


class ConfigError(UserError):
    """One or more invalid configuration entries, all listed in the message."""

    def __init__(self, problems: list[str], source: str = "config") -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {problem}" for problem in self.problems)
        count = len(self.problems)
        super().__init__(
            f"invalid training configuration in {source}",
            got=f"{count} problem{'s' if count != 1 else ''}",
            expected="none",
            hint=f"fix every entry below\n{lines}",
        )


@dataclass(frozen=True)
class Bound:
    """Allowed range of a numeric field (inclusive unless ``open_low``/``open_high``)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[Any, ...] | None = None
    width: int | None = None
    """For a tuple field: the number of elements (each element is checked against the range)."""

    def describe(self) -> str:
        if self.width is not None:
            return f"{self.width} values, each in {dataclasses.replace(self, width=None).describe()}"
        if self.choices is not None:
            return "one of " + ", ".join(repr(choice) for choice in self.choices)
        left = "(" if self.open_low else "["
        right = ")" if self.open_high else "]"
        low = "-inf" if self.low is None else _number(self.low)
        high = "inf" if self.high is None else _number(self.high)
        return f"{left}{low}, {high}{right}"

    def accepts(self, value: Any) -> bool:
        if self.width is not None:
            element = dataclasses.replace(self, width=None)
            return len(value) == self.width and all(element.accepts(item) for item in value)
        if self.choices is not None:
            return value in self.choices
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            return False
        return not (
            self.high is not None and (value > self.high or (self.open_high and value == self.high))
        )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _bounded(default: Any, bound: Bound) -> Any:
    return field(default=default, metadata={"bound": bound})


def _slot_default(name: str) -> Any:
    """The layout bootstrap of a static-config ISV slot: the config default and the ISV agree."""
    value = ISV.slot(name).bootstrap
    return tuple(float(item) for item in value) if isinstance(value, (tuple, list)) else float(value)


@dataclass(frozen=True)
class DataConfig:
    """Which bars to train on and how the series is split."""

    path: str = ""
    """Market data file (OHLCV CSV/Parquet or Databento DBN); empty = the embedded EURUSD dataset."""
    validation_fraction: float = _bounded(0.2, Bound(0.05, 0.5))
    """Share of the usable bars in the validation window (after training, before test): it chooses the
    reported checkpoint and when to stop early. Single split only (folds halve their own window)."""
    test_fraction: float = _bounded(0.2, Bound(0.05, 0.5))
    """Share of the usable bars in the test window at the end of the series, touched once, at the end,
    by the selected checkpoint (metrics.json). Single split only."""
    embargo_bars: int = _bounded(24, Bound(0, 10_000))
    """Bars skipped between consecutive windows (train | validation | test) so no sample straddles two."""
    folds: int = _bounded(0, Bound(0, 1_000))
    """Walk-forward folds; 0 = one train | validation | test split. Fold k trains on every bar before its
    out-of-sample window (minus the embargo) and halves that window into validation | test."""
    fold: int = _bounded(-1, Bound(-1, 999))
    """With folds > 0: -1 trains every fold in turn, carrying the agent from fold to fold; k trains and
    tests fold k only, from scratch (one cell of a seeds × folds validation)."""
    fold_train_fraction: float = _bounded(0.5, Bound(0.1, 0.9))
    """With folds > 0: share of the usable bars fold 0 trains on; the rest is cut into the folds'
    out-of-sample windows."""
    periods_per_year: float = _bounded(0.0, Bound(0.0, 1e7))
    """Bars per year used to annualise metrics; 0 = estimate from the timestamps."""
    linear_forecast: bool = True
    """Fill the LINEAR_FORECAST feature column: a ridge regression of the next bar's return on the bar's
    other columns, fitted per split on its training bars only, and used only where a fit on the earlier
    training bars predicts the latest quarter of them (trainer.data.forecast); false = the column is 0."""
    forecast_ridge: float = _bounded(1e-3, Bound(0.0, 1e3))
    """Ridge penalty of the linear forecast per training row (the columns are unit-scale features);
    used where ``forecast_ridge_cv`` is false."""
    forecast_signals: bool = False
    """Regress the linear forecast on the feature row and a bank of classic signals at the fitted
    baselines' windows (rolling autocorrelation × last return, z-score of the log price;
    trainer.data.forecast.signal_bank); false = the feature row only. Off: a better linear read-out,
    not a better agent (docs/results.md §0, session 36)."""
    forecast_ridge_cv: bool = False
    """Choose the forecast's ridge penalty from trainer.data.forecast.RIDGE_GRID by how well fits on
    earlier training rows predict later ones (an embargo of ``embargo_bars`` between them); false =
    ``forecast_ridge``. Off, with ``forecast_signals`` (docs/results.md §0, session 36)."""
    forecast_min_z: float = _bounded(2.0, Bound(0.0, 10.0))
    """Standard errors above 0 the forecast's held-out correlation must reach before it is used."""


@dataclass(frozen=True)
class EnvConfig:
    """The vectorized trading environments that generate experience."""

    n_envs: int = _bounded(64, Bound(1, 1 << 20))
    """Environments stepped in parallel; one training step advances every one by one bar."""
    episode_length: int = _bounded(512, Bound(2, 1 << 24))
    """Bars per episode before an environment restarts at a random offset."""
    init_cash: float = _bounded(100_000.0, Bound(0.0, None, open_low=True))
    """Starting equity of every episode, in quote currency."""
    fee_rate: float = _bounded(2e-5, Bound(0.0, 0.1))
    """Commission as a fraction of traded notional (fee = rate × |units| × fill price)."""
    slippage: float = _bounded(1e-5, Bound(0.0, 0.1))
    """Base price slippage against the trader for a market order (fraction of price)."""
    reward: str = _bounded("dsr", Bound(choices=REWARD_MODES))
    """Per-bar reward: "dsr" = the differential Sharpe ratio of the net return (Moody & Saffell; its scale comes from each env's own EMAs, so it swells when an env has been flat), "return" = the net return ÷ the std of one-bar log returns over the training bars (one fixed scale per run, no warm-up)."""
    hold_hurdle: float = _bounded(_slot_default("HOLD_HURDLE"), Bound(0.0, 1.0))
    """Per-bar Sharpe ratio a held position must beat to earn reward: each bar, the return the reward is computed from (either mode) is charged hold_hurdle × the training bars' return std × the exposure (the position's notional ÷ equity). Holding a series with no edge then costs reward instead of nothing (the DSR's expectation of a zero-mean position is proportional to the env's running mean, ≈ 0); equity, metrics and the validation and test splits are not charged. 0 = off."""
    dsr_eta: float = _bounded(0.01, Bound(0.0, 1.0, open_low=True))
    """EMA rate of the differential Sharpe ratio reward (Moody & Saffell's η)."""
    time_limit_terminal: bool = _bounded(False, Bound(choices=(True, False)))
    """Treat the time limit and the data end as terminals (ablations); false = only ruin is, a truncated episode bootstraps from the state it reached."""
    detrend: bool = _bounded(False, Bound(choices=(True, False)))
    """Train on the training window's prices with its mean one-bar log return taken out (close and spread × exp(−μ·t)), so a position earns only the timing of the returns, never the window's drift; validation and test trade the real prices (trainer.train.step.MarketWindow.without_drift). Off by default: at 5 seeds of the suite no market moved beyond its seeds' spread (docs/results.md §0, session 26)."""
    market_impact: tuple[float, ...] = _bounded(_slot_default("MARKET_IMPACT"), Bound(0.0, 100.0, width=3))
    """Cost model: slippage multiplier of a market order per urgency (passive, normal, aggressive)."""
    limit_fill_prob: tuple[float, ...] = _bounded(_slot_default("LIMIT_FILL_PROB"), Bound(0.0, 1.0, width=3))
    """Cost model: probability that a limit order fills within the bar, per urgency."""
    limit_spread_capture: tuple[float, ...] = _bounded(_slot_default("LIMIT_SPREAD_CAPTURE"), Bound(0.0, 1.0, width=3))
    """Cost model: share of the half spread a filled limit order earns, per urgency."""
    dsr_warmup_bars: float = _bounded(_slot_default("DSR_WARMUP_BARS"), Bound(0.0, 1e6))
    """Bars of zero reward at an episode start while the DSR EMAs warm up."""
    dsr_variance_floor: float = _bounded(_slot_default("DSR_VARIANCE_FLOOR"), Bound(0.0, 1.0, open_low=True))
    """Floor under B − A² in the DSR denominator (never divide by 0)."""
    dsr_clip: float = _bounded(_slot_default("DSR_CLIP"), Bound(0.0, 1e6, open_low=True))
    """Bound on |reward| of one bar."""


@dataclass(frozen=True)
class ModelConfig:
    """The branching distributional network."""

    window: int = _bounded(16, Bound(1, 64))
    """K: bars of history the temporal encoder reads (the current bar is the last)."""
    temporal_encoder: bool = _bounded(True, Bound(choices=(True, False)))
    """Use the Mamba2-style selective-scan encoder over the last K bars (false = current bar only)."""
    scan_channels: int = _bounded(32, Bound(2, 512))
    """D: channels of the selective scan; D × scan_state must be a multiple of 32 and ≤ 1024."""
    scan_state: int = _bounded(16, Bound(choices=(1, 2, 4, 8, 16, 32)))
    """N: state size per scan channel (a power of two ≤ 32)."""
    hidden: int = _bounded(128, Bound(8, 8192))
    """Width of the trunk MLP and of the shared embedding the heads read."""
    trunk_layers: int = _bounded(2, Bound(1, 8))
    """Hidden layers of the trunk MLP."""
    head_hidden: int = _bounded(64, Bound(8, 8192))
    """Width of the hidden layer of each value/advantage stream."""
    n_atoms: int = _bounded(51, Bound(2, 1001))
    """Atoms of every branch's C51 distribution."""
    iqn_embedding: int = _bounded(64, Bound(1, 1024))
    """Cosine features of the IQN τ embedding (Dabney et al. use 64)."""


@dataclass(frozen=True)
class LossConfig:
    """Targets and losses."""

    n_step: int = _bounded(3, Bound(1, 64))
    """n of the n-step return stored in every replay transition."""
    gamma: float = _bounded(0.99, Bound(0.0, 1.0))
    """Upper bound of the per-branch discount schedule (the GPU kernel writes γ into the ISV)."""
    v_min: float = _bounded(-50.0, Bound(-1e6, 1e6))
    """Lower bound of the C51 atom support that the adaptive support kernel may use. Wide on
    purpose: a bound the support reaches clamps it and its monitor never fires (±10 did in 27 of 30
    EURUSD cells; docs/results.md §0)."""
    v_max: float = _bounded(50.0, Bound(-1e6, 1e6))
    """Upper bound of the C51 atom support; must exceed v_min."""
    double_q: bool = _bounded(True, Bound(choices=(True, False)))
    """Select next actions with the online network and evaluate them with the target (double DQN)."""
    iqn_weight: float = _bounded(1.0, Bound(0.0, 100.0))
    """Weight of the IQN quantile Huber loss in the total loss (0 disables the IQN term)."""
    iqn_tau_samples: int = _bounded(16, Bound(1, 256))
    """N: current-state quantile fractions τ sampled per transition."""
    iqn_target_samples: int = _bounded(16, Bound(1, 256))
    """N′: target quantile fractions τ′ sampled per transition."""
    huber_kappa: float = _bounded(1.0, Bound(0.0, 100.0, open_low=True))
    """κ of the quantile Huber loss."""
    iqn_normalise: bool = _bounded(True, Bound(choices=(True, False)))
    """IQN TD errors per unit of the branch's atom half-width: its trunk gradient stays on C51's scale."""
    cql_alpha: float = _bounded(0.0, Bound(0.0, 100.0))
    """Weight of the conservative (CQL) regulariser; 0 disables it."""
    reward_scale: float = _bounded(1.0, Bound(0.0, 1e6, open_low=True))
    """Multiplier applied to environment rewards before they enter the targets."""
    return_weight: float = _bounded(1.0, Bound(0.0, 100.0))
    """Weight of the auxiliary next-return loss (0 disables it): a linear head on the trunk
    predicts each replayed bar's next log return (in units of the training bars' volatility,
    squared error). Why: the edge of a position is E[next return | state], a weak signal buried
    in the TD targets' noise; a direct regression on the realised return teaches the trunk that
    forecast in a few hundred updates, and the Q-heads read it from there."""


@dataclass(frozen=True)
class ReplayConfig:
    """The device-resident replay ring buffer."""

    capacity: int = _bounded(65_536, Bound(2, 1 << 24))
    """Transitions the ring holds; must be at least env.n_envs."""
    batch_size: int = _bounded(128, Bound(1, 1 << 20))
    """Transitions sampled uniformly per gradient update."""
    learning_starts: int = _bounded(1_024, Bound(1, 1 << 24))
    """Transitions stored before the first gradient update."""
    feature_noise: float = _bounded(1.0, Bound(0.0, 10.0))
    """Std of Gaussian noise added to each replayed feature window the online network learns
    from (units of the normalised features; 0 = off). Every env revisits the same training bars
    thousands of times, each with the same realised next return: without noise the network can
    memorise bar → return; with it no two visits look alike. Targets and acting stay clean.
    1.0 by default: at 0.3 the validation Sharpe still fell with 4× the steps (docs/results.md §0)."""
    feature_noise_units: str = _bounded("normalised", Bound(choices=("normalised", "column_std")))
    """What replay.feature_noise is measured in. "normalised": the same σ on every column, in the
    units of the normalised features. "column_std": σ times each column's std over the run's
    training bars, so every column is noised at the same signal-to-noise ratio — the normalised
    columns have a std near 1, but the autocorrelation and AR(1)-forecast columns 0.1–0.4, which a
    σ of 1 buries (a column constant over the training bars gets no noise). "normalised" by
    default: over 30 fresh seeds "column_std" moved regime +9 points and garch_trend −10
    (docs/results.md §0, session 28)."""
    mirror: float = _bounded(0.5, Bound(0.0, 1.0))
    """Probability that a replayed transition is learned in the mirrored market: every log return
    negated (the odd feature columns and the position's sign flipped), SHORT and LONG swapped, the
    same reward (trainer.train.mirror). 0.5 makes the training data symmetric in direction, so the
    agent cannot learn the training window's drift; 0 = off (draws nothing). 0.5 by default: over
    30 fresh seeds it lifted regime from 63 to 76 % of the oracle (25 of 30 seeds ≥ 60 %; paired
    +13 points, 95 % CI +2 … +25), ou and ar1 a few points, and moved garch_trend −13 (sd 82: not
    beyond its spread); with 10 fresh CPU seeds, regime +10 and garch_trend −10 over 40 (docs/results.md
    §0, session 29; at session 24's default no market moved)."""
    forecast_noise_share: float = _bounded(1.0, Bound(0.0, 1.0))
    """Share of replay.feature_noise's std put on the LINEAR_FORECAST column (data.linear_forecast;
    1 = the same as every column). That column is one ridge fit that passed a held-out check, not a
    raw feature the network could memorise bars through; 0 and 0.5 were measured and not adopted
    (docs/results.md §0, session 22)."""


@dataclass(frozen=True)
class OptimConfig:
    """Adam (capturable; the learning rate is a device tensor)."""

    lr: float = _bounded(3e-4, Bound(0.0, 1.0, open_low=True))
    """Learning rate."""
    adam_eps: float = _bounded(1e-5, Bound(0.0, 1.0, open_low=True))
    """Adam ε (Dopamine's C51 uses 0.01/32 ≈ 3e-4; Rainbow 1.5e-4)."""
    grad_clip: float = _bounded(10.0, Bound(0.0, 1e6))
    """Global gradient-norm clip; 0 disables clipping."""
    weight_decay: float = _bounded(1.0, Bound(0.0, 100.0))
    """Decoupled weight decay (AdamW, Loshchilov & Hutter 2019) on every parameter: each update first
    multiplies the weights by 1 − lr · weight_decay. 0 = plain Adam. A regulariser against fitting
    the training bars: 1.0 lifted garch_trend and ou on fresh seeds (docs/results.md §0, session 20)
    and, at gpu.toml's 20,000 steps, keeps the validation curves from decaying (session 33)."""


@dataclass(frozen=True)
class ScheduleConfig:
    """Start values of the GPU-computed schedules (the kernels own the ISV slots; the host never
    writes them beyond the layout's bootstrap)."""

    epsilon: float = _bounded(1.0, Bound(0.0, 1.0))
    """ε at the start of training (the schedule decays it on the device)."""
    tau: float = _bounded(0.005, Bound(0.0, 1.0, open_low=True))
    """Polyak rate τ at the start of training (target ← target + τ·(online − target))."""
    horizon_steps: int = _bounded(2_400, Bound(0, 1 << 40))
    """Steps the schedules span (ε's decay, τ's cosine; counted in whole epochs), after which they
    hold their end values; a shorter run spans its own length, as does 0. A fixed horizon makes a longer run the
    continuation of a shorter one: ``--steps`` 4× repeats the shorter run's epochs bit for bit and
    trains on at ε and τ's end values, early stopping and the validation selection deciding
    whether the extra epochs are kept (docs/results.md §0, session 25)."""


@dataclass(frozen=True)
class RunConfig:
    """Length, cadence and reproducibility of a run."""

    steps: int = _bounded(2_400, Bound(1, 1 << 40))
    """Training steps; each steps every environment once and takes one gradient update."""
    epoch_steps: int = _bounded(400, Bound(1, 1 << 40))
    """Steps per epoch: HEALTH_DIAG, validation and a checkpoint at every epoch end."""
    seed: int = _bounded(0, Bound(0, (1 << 63) - 1))
    """Seed of every random stream (network init, RNG counters, start offsets)."""
    device: str = _bounded("auto", Bound(choices=("auto", "cpu", "cuda")))
    """auto = cuda when available, else cpu."""
    cuda_graph: bool = _bounded(True, Bound(choices=(True, False)))
    """On CUDA, capture the training step once and replay it (false = eager, same code)."""
    keep_checkpoints: int = _bounded(2, Bound(1, 1_000))
    """Most recent periodic checkpoints kept in the run directory (``best`` is kept besides them)."""
    checkpoint_minutes: float = _bounded(0.0, Bound(0.0, 10_080.0))
    """Also save a checkpoint (mid-epoch) after this many minutes since the last one; 0 = only at epoch ends."""
    select: str = _bounded("sharpe_ratio", Bound(choices=("sharpe_ratio", "timing_sharpe_ratio", "sharpe_lower_bound", "sortino_ratio", "annual_return", "last")))
    """Validation metric that selects the reported checkpoint (best epoch, earliest on ties);
    "timing_sharpe_ratio" = the Sharpe ratio less what a constant position at the policy's mean
    exposure earned (the window's drift taken out); "sharpe_lower_bound" = the Sharpe ratio less
    1.645 standard errors of its estimate (an epoch that never trades scores 0 and wins unless a
    trading one's gain is unlikely to be luck); "last" = the last epoch, no selection."""
    policy_weights: str = _bounded("online", Bound(choices=("online", "target")))
    """The weights every greedy backtest acts with — validation, the training-window backtest, the
    test split and ``trainer eval``: "online" = the trained network; "target" = its Polyak average,
    the target network (target ← target + τ·(online − target) every update), which smooths the last
    ≈ 1/τ updates' swings. Training acts and learns with the online network either way."""
    policy_mirror: bool = _bounded(True, Bound(choices=(True, False)))
    """Every greedy backtest (validation, the training-window backtest, the test split, ``trainer
    eval``) chooses by the mean of a state's Q-values and its mirror image's (every log return
    negated; SHORT and LONG swapped back): a preference for one direction that the signal does not
    explain — the training window's drift — cancels, and the policy is mirror-equivariant
    (trainer.train.mirror). Training acts and learns as without it. On by default: over 37 fresh
    H200 seeds garch_trend rose from 70 to 102 % of the oracle (32 of 37 seeds ≥ 60 %; paired +32
    points, 95 % CI +16 … +51) and regime from 76 to 81 %, ar1 and ou within a few points, noise
    unchanged (docs/results.md §0, session 30)."""
    flat_margin: bool = _bounded(True, Bound(choices=(True, False)))
    """After training, choose on the validation window how much better than FLAT a position must
    look before the selected policy takes it (trainer.train.flat_margin): margin 0 or a quantile of
    the validation bars' gaps between the best position's value and FLAT's, whichever scores best by
    run.select (the smallest on ties). The test backtest and ``trainer eval`` of ``best.json`` act
    with it; training, the epoch selection and every epoch's validation are untouched. On by
    default: paired with the same trained networks at margin 0 on 12 fresh seeds, regime rose from
    70 to 84 % of the feasible oracle (+14 points, 95 % CI +5 … +23; 12 of 12 seeds ≥ 60 %) and ar1
    +5, ou, garch_trend and noise within their spread; the GPU configuration gained on 5 of 6 signal
    cells (docs/results.md §0, session 35)."""
    patience: int = _bounded(3, Bound(0, 1_000_000))
    """Early stopping: stop after this many epochs without a better validation score; 0 = never."""
    cpu_threads: int = _bounded(1, Bound(1, 1_024))
    """torch intra-op threads on the CPU (the default network is small: one thread is fastest)."""
    bands: str = "default"
    """Metric bands of the regression hard-stop: "default" = the shipped bands of the run's scope
    (config/metric-bands.toml for default.toml on the embedded EURUSD bars; config/metric-bands-gpu.toml
    for gpu.toml; none for other runs),
    "" = none, else a TOML path (always applied)."""
    band_epochs: int = _bounded(2, Bound(1, 10_000))
    """N of the hard-stop: a metric outside its band for 2N consecutive epochs stops the run."""
    agents: int = _bounded(1, Bound(1, 4_096))
    """Population training: agents trained together in one step, each in RUN_DIR/agent-KK/ (agent i
    has seed run.seed + i); 1 = a single run in RUN_DIR."""
    agent_grid: str = ""
    """Hyper-parameters of a population's agents: "section.key=v1,v2; section.key=v1,v2" (the
    cartesian product; agent i takes point i mod its size); "" = every agent the same but its seed."""


@dataclass(frozen=True)
class TrainConfig:
    """The whole run: one section per concern, mirroring the TOML tables."""

    data: DataConfig = field(default_factory=DataConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    run: RunConfig = field(default_factory=RunConfig)
    adaptive: AdaptiveParams = field(default_factory=AdaptiveParams)
    """Parameters of the adaptive kernels ([adaptive.schedule], [adaptive.kelly], [adaptive.atoms],
    [adaptive.health]); their bootstrap values come from [schedule] and [loss] (see DERIVED_KEYS)."""

    def to_dict(self) -> dict[str, Any]:
        """Section → key → value; the adaptive sections nest under "adaptive" as in the TOML."""
        out: dict[str, Any] = {}
        for path in SECTION_TYPES:
            values = {
                key: list(value) if isinstance(value, tuple) else value
                for key, value in dataclasses.asdict(_section(self, path)).items()
                if key not in DERIVED_KEYS.get(path, {})
            }
            _nest(out, path.split("."), values)
        return out

    def to_toml(self) -> str:
        """The resolved configuration as TOML (what a run directory keeps)."""
        out: list[str] = []
        for path in SECTION_TYPES:
            out.append(f"[{path}]")
            values = _lookup(self.to_dict(), path.split("."))
            for key, value in values.items():
                out.append(f"{key} = {_toml_value(value)}")
            out.append("")
        return "\n".join(out)

    def replace(self, **sections: Mapping[str, Any]) -> TrainConfig:
        """Copy with some fields overridden, validated like a file: ``replace(run={"steps": 10})``,
        ``replace(adaptive={"kelly": {"cap_floor": 0.2}})``."""
        return config_from_mapping(deep_merge(self.to_dict(), sections), source="overrides")


SECTION_TYPES: dict[str, type] = {
    "data": DataConfig,
    "env": EnvConfig,
    "model": ModelConfig,
    "loss": LossConfig,
    "replay": ReplayConfig,
    "optim": OptimConfig,
    "schedule": ScheduleConfig,
    "run": RunConfig,
    "adaptive.schedule": ScheduleParams,
    "adaptive.kelly": KellyParams,
    "adaptive.atoms": AtomSupportParams,
    "adaptive.health": HealthParams,
}
"""Every TOML table of a training config by its dotted path; the adaptive ones are the kernels'
own parameter dataclasses (their field docstrings in trainer/ops are the reference text)."""

DERIVED_KEYS: dict[str, dict[str, str]] = {
    "adaptive.schedule": {"tau_start": "schedule.tau", "gamma_high": "loss.gamma", "epsilon_start": "schedule.epsilon"},
    "adaptive.atoms": {"v_min": "loss.v_min", "v_max": "loss.v_max", "n_step": "loss.n_step"},
}
"""Kernel parameters that are not keys of their own: ``AdaptiveParams.from_config`` takes them from
the named key (one value, one place)."""


def _section(config: TrainConfig, path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _lookup(raw: Mapping[str, Any], parts: list[str]) -> Any:
    value: Any = raw
    for part in parts:
        if not isinstance(value, Mapping):
            return value
        value = value.get(part, {})
    return value


def _nest(out: dict[str, Any], parts: list[str], values: Any) -> None:
    for part in parts[:-1]:
        out = out.setdefault(part, {})
    out[parts[-1]] = values


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``, table by table (a value that is not a table replaces)."""
    merged = {key: dict(value) if isinstance(value, Mapping) else value for key, value in base.items()}
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return str(value)


def _type_ok(expected: str, value: Any) -> bool:
    if expected == "bool":
        return isinstance(value, bool)
    if expected == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == "str":
        return isinstance(value, str)
    if expected == "tuple[float, ...]":
        return isinstance(value, (list, tuple)) and all(_type_ok("float", item) for item in value)
    return False


_TYPE_NAMES = {"bool": "bool", "int": "int", "float": "float", "str": "str", "tuple[float, ...]": "array of floats"}


def _coerce(expected: str, value: Any) -> Any:
    if expected == "float":
        return float(value)
    if expected == "tuple[float, ...]":
        return tuple(float(item) for item in value)
    return value


def _known_tables() -> dict[str, set[str]]:
    """Table path → the sub-tables it may hold ("" = the top level)."""
    tables: dict[str, set[str]] = {}
    for path in SECTION_TYPES:
        parts = path.split(".")
        for depth in range(len(parts)):
            tables.setdefault(".".join(parts[:depth]), set()).add(parts[depth])
    return tables


def _unknown_tables(raw: Mapping[str, Any], problems: list[str]) -> None:
    for parent, children in _known_tables().items():
        table = _lookup(raw, parent.split(".")) if parent else raw
        if not isinstance(table, Mapping) or parent in SECTION_TYPES:
            continue
        for name in table:
            if name not in children:
                where = f"{parent}.{name}" if parent else name
                problems.append(f"unknown section [{where}] (vs one of {', '.join(sorted(children))})")


def _build_section(path: str, values: Any, problems: list[str]) -> Any:
    section_type = SECTION_TYPES[path]
    if not isinstance(values, Mapping):
        problems.append(f"[{path}] is a {type(values).__name__} (vs a table)")
        values = {}
    derived = DERIVED_KEYS.get(path, {})
    known = {f.name: f for f in fields(section_type) if f.name not in derived}
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key in derived:
            problems.append(f"{path}.{key} is not a key of its own (vs {derived[key]}, which sets it)")
            continue
        if key not in known:
            problems.append(f"unknown key {path}.{key} (vs one of {', '.join(known)})")
            continue
        expected = str(known[key].type)
        if not _type_ok(expected, value):
            problems.append(f"{path}.{key} = {value!r} has type {type(value).__name__} (vs {_TYPE_NAMES[expected]})")
            continue
        bound: Bound | None = known[key].metadata.get("bound")
        if bound is not None and not bound.accepts(value):
            problems.append(f"{path}.{key} = {value!r} out of range (vs {bound.describe()})")
            continue
        kwargs[key] = _coerce(expected, value)
    try:
        return section_type(**kwargs)
    except ValueError as error:  # a kernel parameter dataclass checks its own ranges
        problems.append(f"[{path}] {error}")
        return section_type()


#: Keys added after runs were first saved whose default is not what the runs before them did, with
#: the value those runs had. A config a run wrote (its ``config.toml``, a checkpoint manifest's copy,
#: a validation sweep's plan and cells) holds every key its trainer knew, so one that lacks such a
#: key was written before the key existed: it is read with this value, never today's default — or
#: ``trainer eval`` of an older checkpoint, or resuming an older run, would act differently from the
#: run that wrote it. (run.policy_mirror: on by default since session 30, run.flat_margin since session 35;
#: runs before them acted plainly.)
KEYS_ADDED_SINCE: dict[str, Any] = {"run.policy_mirror": False, "run.flat_margin": False}


def with_keys_added_since(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A stored config's mapping with every key of ``KEYS_ADDED_SINCE`` it lacks set to the value
    runs had before the key existed (a key it holds keeps its value)."""
    absent: dict[str, Any] = {}
    for dotted, value in KEYS_ADDED_SINCE.items():
        *sections, key = dotted.split(".")
        table = _lookup(raw, sections)
        if not isinstance(table, Mapping) or key not in table:
            _nest(absent, dotted.split("."), value)
    return deep_merge(absent, raw)


def config_from_mapping(raw: Mapping[str, Any], source: str = "config", *, stored: bool = False) -> TrainConfig:
    """Build a validated ``TrainConfig``; every problem is collected before one ``ConfigError``.
    ``stored``: ``raw`` is a config a run wrote, read as :func:`with_keys_added_since` says."""
    if stored:
        raw = with_keys_added_since(raw)
    problems: list[str] = []
    _unknown_tables(raw, problems)
    built: dict[str, Any] = {}
    for path in SECTION_TYPES:
        built[path] = _build_section(path, _lookup(raw, path.split(".")), problems)
    adaptive = AdaptiveParams(
        schedule=built.pop("adaptive.schedule"), kelly=built.pop("adaptive.kelly"),
        atoms=built.pop("adaptive.atoms"), health=built.pop("adaptive.health"),
    )  # fmt: skip
    config = TrainConfig(**built, adaptive=adaptive)
    problems.extend(_cross_checks(config))
    if problems:
        raise ConfigError(problems, source)
    return config


def _cross_checks(config: TrainConfig) -> list[str]:
    """Constraints that involve more than one field."""
    problems = []
    if config.loss.v_max <= config.loss.v_min:
        problems.append(
            f"loss.v_max = {config.loss.v_max!r} must exceed loss.v_min = {config.loss.v_min!r} "
            f"(vs v_max > v_min)"
        )
    else:
        try:
            AdaptiveParams.from_config(config)
        except ValueError as error:  # the bootstrap values from [schedule]/[loss] against [adaptive.*]
            problems.append(f"[adaptive] with the bootstrap values of [schedule] and [loss]: {error}")
    if config.replay.capacity < config.env.n_envs:
        problems.append(
            f"replay.capacity = {config.replay.capacity} is smaller than env.n_envs = "
            f"{config.env.n_envs} (vs capacity ≥ n_envs: one step stores n_envs transitions)"
        )
    if config.optim.lr * config.optim.weight_decay >= 1.0:
        problems.append(
            f"optim.lr × optim.weight_decay = {config.optim.lr!r} × {config.optim.weight_decay!r} reaches 1 "
            f"(vs < 1: each update multiplies the weights by 1 − lr · weight_decay)"
        )
    if config.replay.learning_starts > config.replay.capacity:
        problems.append(
            f"replay.learning_starts = {config.replay.learning_starts} exceeds replay.capacity = "
            f"{config.replay.capacity} (vs learning_starts ≤ capacity)"
        )
    lanes = config.model.scan_channels * config.model.scan_state
    if config.model.temporal_encoder and (lanes % 32 != 0 or lanes > 1024):
        problems.append(
            f"model.scan_channels × model.scan_state = {lanes} (vs a multiple of 32 in [32, 1024]: "
            f"one CUDA block holds every channel×state lane)"
        )
    if config.data.validation_fraction + config.data.test_fraction > 0.8:
        problems.append(
            f"data.validation_fraction + data.test_fraction = "
            f"{config.data.validation_fraction + config.data.test_fraction:g} (vs ≤ 0.8: leave bars to train on)"
        )
    if config.data.fold >= max(config.data.folds, 0) and config.data.fold != -1:
        problems.append(
            f"data.fold = {config.data.fold} with data.folds = {config.data.folds} (vs -1, or 0 ≤ fold < folds)"
        )
    problems.extend(population_problems(config))
    if config.loss.n_step >= config.env.episode_length:
        problems.append(
            f"loss.n_step = {config.loss.n_step} must be below env.episode_length = "
            f"{config.env.episode_length} (vs n_step < episode_length)"
        )
    if config.data.folds and config.data.fold >= config.data.folds:
        problems.append(
            f"data.fold = {config.data.fold} is not a fold of data.folds = {config.data.folds} "
            f"(vs -1 or 0 ≤ fold < folds)"
        )
    return problems


POPULATION_GRID_KEYS = (
    "optim.lr", "optim.adam_eps", "optim.grad_clip", "optim.weight_decay", "loss.gamma", "loss.iqn_weight",
    "loss.huber_kappa", "loss.cql_alpha", "loss.reward_scale", "replay.feature_noise", "replay.mirror", "schedule.epsilon",
    "schedule.tau",
)  # fmt: skip
"""Keys a population's agents may differ in (``run.agent_grid``): values the step reads, never a
tensor shape, the market, the windows or the epoch cadence that the agents share in lockstep."""


def population_grid(config: TrainConfig) -> tuple[dict[str, Any], ...]:
    """``run.agent_grid`` as its cartesian product of override tables (``({},)`` when empty).

    Axes are separated by ``;``, values by ``,``: ``"optim.lr=1e-4,3e-4; loss.gamma=0.97,0.99"``
    is four points, the last axis varying fastest. Raises ConfigError on a malformed grid."""
    problems: list[str] = []
    axes: list[list[dict[str, Any]]] = []
    for spec in (part.strip() for part in config.run.agent_grid.split(";")):
        if not spec:
            continue
        key, sep, values = spec.partition("=")
        key = key.strip()
        choices = [value.strip() for value in values.split(",") if value.strip()]
        if not sep or not choices:
            problems.append(f"run.agent_grid axis {spec!r} (vs section.key=v1,v2,...)")
        elif key not in POPULATION_GRID_KEYS:
            problems.append(
                f"run.agent_grid key {key!r} (vs one of {', '.join(POPULATION_GRID_KEYS)}: agents share "
                f"shapes, market and cadence)"
            )
        else:
            axes.append([parse_overrides([f"{key}={value}"]) for value in choices])
    if problems:
        raise ConfigError(problems, "run.agent_grid")
    points: list[dict[str, Any]] = []
    for combination in itertools.product(*axes):
        point: dict[str, Any] = {}
        for table in combination:
            point = deep_merge(point, table)
        points.append(point)
    return tuple(points)


def agent_config(config: TrainConfig, agent: int) -> TrainConfig:
    """Agent ``agent`` of a population as the single-run config it is: seed ``run.seed + agent``,
    grid point ``agent mod |grid|``, ``run.agents = 1`` (its run directory resumes as a single run)."""
    if not 0 <= agent < config.run.agents:
        raise ValueError(
            f"agent index out of range ({agent} vs 0 ≤ agent < run.agents = {config.run.agents}) — hint: count agents from 0"
        )
    single = {"run": {"seed": config.run.seed + agent, "agents": 1, "agent_grid": ""}}
    return config.replace(**deep_merge(agent_grid_point(config, agent), single))


def agent_grid_point(config: TrainConfig, agent: int) -> dict[str, Any]:
    """The overrides of agent ``agent``'s grid point: point ``agent mod |grid|`` ({} without a grid)."""
    grid = population_grid(config)
    return grid[agent % len(grid)]


def population_problems(config: TrainConfig) -> list[str]:
    """A population's own constraints: a parseable grid of allowed keys, seeds that fit."""
    try:
        grid = population_grid(config)
    except ConfigError as error:
        return list(error.problems)
    problems: list[str] = []
    if config.run.agent_grid.strip():
        for point in grid:  # each point's values against their keys' types and ranges
            try:
                config.replace(**deep_merge(point, {"run": {"agents": 1, "agent_grid": ""}}))
            except ConfigError as error:
                problems.extend(f"run.agent_grid: {problem}" for problem in error.problems)
    if problems:
        return problems
    if config.run.seed + config.run.agents - 1 > (1 << 63) - 1:
        return [f"run.seed + run.agents − 1 = {config.run.seed + config.run.agents - 1} (vs ≤ 2**63 − 1: agent seeds)"]
    return []


def _read_toml(path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The TOML table of ``path`` with its ``extends`` chain merged underneath (paths relative to
    the file that names them)."""
    if path.resolve() in chain:
        cycle = " → ".join(str(item) for item in (*chain, path.resolve()))
        raise ConfigError([f"extends cycle ({cycle} vs a chain that ends)"], str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(
            [f"cannot read {path} ({error.strerror} vs a readable TOML file)"], str(path)
        ) from error
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError([f"TOML syntax error: {error}"], str(path)) from error
    base = raw.pop("extends", None)
    if base is None:
        return raw
    if not isinstance(base, str) or not base:
        raise ConfigError([f"extends = {base!r} (vs the path of another config TOML)"], str(path))
    return deep_merge(_read_toml(path.parent / base, (*chain, path.resolve())), raw)


def parse_overrides(assignments: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``["run.steps=10", "adaptive.kelly.cap_floor=0.2"]`` → a nested table to merge over a config.

    The value is read as a TOML value (``10``, ``0.2``, ``true``, ``[0.5, 1.0, 2.0]``, ``"x"``);
    anything that is not one is taken as a bare string (``data.path=bars.csv``)."""
    table: dict[str, Any] = {}
    problems = []
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        parts = key.strip().split(".")
        if not sep or len(parts) < 2 or not all(parts):
            problems.append(f"--set {assignment!r} (vs section.key=value, e.g. run.steps=100)")
            continue
        try:
            value = tomllib.loads(f"value = {text.strip()}")["value"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        table = deep_merge(table, _nested(parts, value))
    if problems:
        raise ConfigError(problems, "--set")
    return table


def _nested(parts: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _nest(out, parts, value)
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = (), *, stored: bool = False) -> TrainConfig:
    """Load a TOML file (default: ``config/train/default.toml``, or built-in defaults if absent),
    follow its ``extends`` chain, then apply ``--set`` style ``overrides``; validated once.
    ``stored``: the file is a config a run wrote (a run directory's ``config.toml``), read as
    :func:`with_keys_added_since` says."""
    if path is None and not DEFAULT_CONFIG_PATH.exists():
        raw: dict[str, Any] = {}
        source = "built-in defaults"
    else:
        path = Path(path) if path is not None else DEFAULT_CONFIG_PATH
        raw, source = _read_toml(path), str(path)
    if overrides:
        raw = deep_merge(raw, parse_overrides(overrides))
        source += " with --set " + " ".join(overrides)
    return config_from_mapping(raw, source=source, stored=stored)  # an override of a key added since is held, so it wins


def field_help(section_type: type) -> dict[str, str]:
    """Field name → its docstring (the string literal following the field in its class)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(section_type)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def reference_table() -> str:
    """A markdown table of every key, default, allowed range and meaning (for docs/trainer.md)."""
    rows = ["| key | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for path, section_type in SECTION_TYPES.items():
        docs = field_help(section_type)
        derived = DERIVED_KEYS.get(path, {})
        for item in fields(section_type):
            if item.name in derived:
                continue
            bound: Bound | None = item.metadata.get("bound")
            allowed = bound.describe() if bound else _unbounded_text(str(item.type))
            rows.append(
                f"| `{path}.{item.name}` | `{_toml_value(item.default)}` | "
                f"{allowed} | {' '.join(docs.get(item.name, '').split())} |"
            )
    return "\n".join(rows)


def _unbounded_text(type_name: str) -> str:
    if type_name == "str":
        return "any string"
    if type_name == "bool":
        return "true or false"
    return f"{_TYPE_NAMES.get(type_name, type_name)} (checked by the kernel's parameters)"
