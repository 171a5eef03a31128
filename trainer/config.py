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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from trainer.errors import UserError

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

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(choice) for choice in self.choices)
        left = "(" if self.open_low else "["
        right = ")" if self.open_high else "]"
        low = "-inf" if self.low is None else _number(self.low)
        high = "inf" if self.high is None else _number(self.high)
        return f"{left}{low}, {high}{right}"

    def accepts(self, value: Any) -> bool:
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
    folds: int = _bounded(0, Bound(0, 100))
    """Walk-forward folds; 0 = one train | validation | test split. Fold k trains on every bar before its
    out-of-sample window (minus the embargo) and halves that window into validation | test."""
    fold: int = _bounded(-1, Bound(-1, 99))
    """With folds > 0: -1 trains every fold in turn, carrying the agent from fold to fold; k trains and
    tests fold k only, from scratch (one cell of a seeds × folds validation)."""
    fold_train_fraction: float = _bounded(0.5, Bound(0.1, 0.9))
    """With folds > 0: share of the usable bars fold 0 trains on; the rest is cut into the folds'
    out-of-sample windows."""
    periods_per_year: float = _bounded(0.0, Bound(0.0, 1e7))
    """Bars per year used to annualise metrics; 0 = estimate from the timestamps."""


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
    dsr_eta: float = _bounded(0.01, Bound(0.0, 1.0, open_low=True))
    """EMA rate of the differential Sharpe ratio reward (Moody & Saffell's η)."""
    time_limit_terminal: bool = _bounded(False, Bound(choices=(True, False)))
    """Treat the time limit and the data end as terminals (ablations); false = only ruin is, a truncated episode bootstraps from the state it reached."""


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
    v_min: float = _bounded(-10.0, Bound(-1e6, 1e6))
    """Lower bound of the C51 atom support that the adaptive support kernel may use."""
    v_max: float = _bounded(10.0, Bound(-1e6, 1e6))
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


@dataclass(frozen=True)
class ReplayConfig:
    """The device-resident replay ring buffer."""

    capacity: int = _bounded(65_536, Bound(2, 1 << 24))
    """Transitions the ring holds; must be at least env.n_envs."""
    batch_size: int = _bounded(128, Bound(1, 1 << 20))
    """Transitions sampled uniformly per gradient update."""
    learning_starts: int = _bounded(1_024, Bound(1, 1 << 24))
    """Transitions stored before the first gradient update."""


@dataclass(frozen=True)
class OptimConfig:
    """Adam (capturable; the learning rate is a device tensor)."""

    lr: float = _bounded(3e-4, Bound(0.0, 1.0, open_low=True))
    """Learning rate."""
    adam_eps: float = _bounded(1e-5, Bound(0.0, 1.0, open_low=True))
    """Adam ε (Dopamine's C51 uses 0.01/32 ≈ 3e-4; Rainbow 1.5e-4)."""
    grad_clip: float = _bounded(10.0, Bound(0.0, 1e6))
    """Global gradient-norm clip; 0 disables clipping."""


@dataclass(frozen=True)
class ScheduleConfig:
    """Start values of the GPU-computed schedules (the kernels own the ISV slots; the host never
    writes them beyond the layout's bootstrap)."""

    epsilon: float = _bounded(1.0, Bound(0.0, 1.0))
    """ε at the start of training (the schedule decays it on the device)."""
    tau: float = _bounded(0.005, Bound(0.0, 1.0, open_low=True))
    """Polyak rate τ at the start of training (target ← target + τ·(online − target))."""


@dataclass(frozen=True)
class RunConfig:
    """Length, cadence and reproducibility of a run."""

    steps: int = _bounded(1_200, Bound(1, 1 << 40))
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
    select: str = _bounded("sharpe_ratio", Bound(choices=("sharpe_ratio", "sortino_ratio", "annual_return", "last")))
    """Validation metric that selects the reported checkpoint (best epoch, earliest on ties); "last" =
    the last epoch, no selection."""
    patience: int = _bounded(0, Bound(0, 1_000_000))
    """Early stopping: stop after this many epochs without a better validation score; 0 = never."""
    cpu_threads: int = _bounded(1, Bound(1, 1_024))
    """torch intra-op threads on the CPU (the default network is small: one thread is fastest)."""


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

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {section.name: dataclasses.asdict(getattr(self, section.name)) for section in fields(self)}

    def to_toml(self) -> str:
        """The resolved configuration as TOML (what a run directory keeps)."""
        out: list[str] = []
        for section, values in self.to_dict().items():
            out.append(f"[{section}]")
            for key, value in values.items():
                out.append(f"{key} = {_toml_value(value)}")
            out.append("")
        return "\n".join(out)

    def replace(self, **sections: Mapping[str, Any]) -> TrainConfig:
        """Copy with some fields overridden, validated like a file: ``replace(run={"steps": 10})``."""
        merged = self.to_dict()
        for section, values in sections.items():
            merged.setdefault(section, {}).update(values)
        return config_from_mapping(merged, source="overrides")


_SECTION_TYPES = {
    "data": DataConfig,
    "env": EnvConfig,
    "model": ModelConfig,
    "loss": LossConfig,
    "replay": ReplayConfig,
    "optim": OptimConfig,
    "schedule": ScheduleConfig,
    "run": RunConfig,
}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _type_ok(expected: type, value: Any) -> bool:
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is str:
        return isinstance(value, str)
    return False


_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str"}


def config_from_mapping(raw: Mapping[str, Any], source: str = "config") -> TrainConfig:
    """Build a validated ``TrainConfig``; every problem is collected before one ``ConfigError``."""
    problems: list[str] = []
    built: dict[str, Any] = {}
    for section_name in raw:
        if section_name not in _SECTION_TYPES:
            problems.append(
                f"unknown section [{section_name}] (vs one of {', '.join(_SECTION_TYPES)})"
            )
    for section_name, section_type in _SECTION_TYPES.items():
        values = raw.get(section_name, {})
        if not isinstance(values, Mapping):
            problems.append(f"[{section_name}] is a {type(values).__name__} (vs a table)")
            values = {}
        known = {f.name: f for f in fields(section_type)}
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                problems.append(
                    f"unknown key {section_name}.{key} (vs one of {', '.join(known)})"
                )
                continue
            expected = {"bool": bool, "int": int, "float": float, "str": str}[str(known[key].type)]
            if not _type_ok(expected, value):
                problems.append(
                    f"{section_name}.{key} = {value!r} has type {type(value).__name__} "
                    f"(vs {_TYPE_NAMES[expected]})"
                )
                continue
            bound: Bound | None = known[key].metadata.get("bound")
            if bound is not None and not bound.accepts(value):
                problems.append(f"{section_name}.{key} = {value!r} out of range (vs {bound.describe()})")
                continue
            kwargs[key] = float(value) if expected is float else value
        built[section_name] = section_type(**kwargs)
    config = TrainConfig(**built)
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
    if config.replay.capacity < config.env.n_envs:
        problems.append(
            f"replay.capacity = {config.replay.capacity} is smaller than env.n_envs = "
            f"{config.env.n_envs} (vs capacity ≥ n_envs: one step stores n_envs transitions)"
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
    if config.loss.n_step >= config.env.episode_length:
        problems.append(
            f"loss.n_step = {config.loss.n_step} must be below env.episode_length = "
            f"{config.env.episode_length} (vs n_step < episode_length)"
        )
    return problems


def load_config(path: str | Path | None = None) -> TrainConfig:
    """Load a TOML file (default: ``config/train/default.toml``, or built-in defaults if absent)."""
    if path is None:
        if not DEFAULT_CONFIG_PATH.exists():
            return TrainConfig()
        path = DEFAULT_CONFIG_PATH
    path = Path(path)
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
    return config_from_mapping(raw, source=str(path))


def field_help(section_type: type) -> dict[str, str]:
    """Field name → its docstring (the string literal following the field in this module)."""
    tree = ast.parse(inspect.getsource(section_type))
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
            docs[node.target.id] = following.value.value
    return docs


def reference_table() -> str:
    """A markdown table of every key, default, allowed range and meaning (for docs/trainer.md)."""
    rows = ["| key | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for section_name, section_type in _SECTION_TYPES.items():
        docs = field_help(section_type)
        for item in fields(section_type):
            bound: Bound | None = item.metadata.get("bound")
            default = item.default
            rows.append(
                f"| `{section_name}.{item.name}` | `{_toml_value(default)}` | "
                f"{bound.describe() if bound else 'any string'} | {' '.join(docs.get(item.name, '').split())} |"
            )
    return "\n".join(rows)
