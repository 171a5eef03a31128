"""The ``trainer`` command: ``trainer train``, ``trainer data info PATH``, ``trainer data build PATH``.

One sub-command = one ``_add_<name>_command(commands)`` that registers its parser and one
``_cmd_<name>(args) -> int`` handler. A user mistake raises :class:`trainer.errors.UserError`
somewhere below; :func:`main` prints its one-line message and returns 2 — no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from trainer.data.bars import format_ts
from trainer.errors import UserError, os_error_text
from trainer.train.stop import RunInterrupted
from trainer.eval import metrics

if TYPE_CHECKING:  # rich, pandas, pyarrow and databento-dbn load inside the commands that use them
    from pathlib import Path

    from trainer.config import TrainConfig
    from trainer.data import Bars, DbnOptions, FeatureConfig

EXIT_USER_ERROR = 2
EXIT_VALIDATION_FAILED = 1
EXIT_BAND_STOP = 3
"""`trainer train` whose metric bands stopped the run (the reason is in metrics.json)."""


def _add_data_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="CSV, Parquet, .dbn or .dbn.zst file, or 'default' (embedded EURUSD hourly bars)")
    parser.add_argument("--bar-seconds", type=float, default=60.0, help="MBP-10 aggregation bar length in seconds (default 60)")
    parser.add_argument("--instrument", type=int, default=None, metavar="ID", help="instrument_id to keep from a DBN file holding several")
    parser.add_argument("--norm-window", type=int, default=256, metavar="BARS", help="rolling normalisation window of the features (default 256)")


def _add_data_command(commands: argparse._SubParsersAction) -> None:
    data = commands.add_parser("data", help="inspect market data and build the feature cache")
    data_commands = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    info = data_commands.add_parser("info", help="what a data file holds: format, bars, span, book data, features, cache status")
    _add_data_source_options(info)
    info.add_argument("--cache-dir", default=None, metavar="DIR", help="feature cache directory (default $FXCACHE_DIR or .fxcache)")
    info.set_defaults(handler=_cmd_data_info)
    build = data_commands.add_parser("build", help="load the data, compute the features and write them to the cache")
    _add_data_source_options(build)
    build.add_argument("--out", default=None, metavar="DIR", help="feature cache directory (default $FXCACHE_DIR or .fxcache)")
    build.add_argument("--force", action="store_true", help="rebuild even when a valid cache entry exists")
    build.set_defaults(handler=_cmd_data_build)


def _add_train_command(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser(
        "train", help="train an agent (default: embedded EURUSD data, config/train/default.toml)",
        description="Train the branching distributional DQN, backtest it out of sample and write the run "
        "directory: config.toml, health_diag.jsonl, checkpoints/, metrics.json, plots/.",
    )  # fmt: skip
    train.add_argument("--config", default=None, metavar="TOML", help="training config (default config/train/default.toml)")
    train.add_argument("--data", default=None, metavar="PATH", help="OHLCV CSV/Parquet or DBN file (default: the embedded EURUSD bars)")
    train.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available, else cpu")
    train.add_argument("--seed", type=int, default=None, help="seed of every random stream (overrides run.seed)")
    train.add_argument("--steps", type=int, default=None, help="training steps (overrides run.steps)")
    train.add_argument("--out", default=None, metavar="DIR", help="run directory, new or empty (default: a new runs/<UTC timestamp>)")
    train.add_argument("--resume", action="store_true",
                       help="continue the run in --out from its newest checkpoint, with the config stored there")
    train.add_argument("--resume-from", default=None, metavar="CHECKPOINT",
                       help="continue from this checkpoint manifest (RUN_DIR/checkpoints/step-N.json); implies --resume")
    train.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier run in --out")
    train.add_argument("--no-progress", action="store_true", help="no progress bar (logs and CI)")
    train.add_argument("--tensorboard", action="store_true",
                       help="also write TensorBoard scalars to RUN_DIR/tensorboard (needs the tensorboard extra)")
    train.add_argument("--folds", type=int, default=None, metavar="K",
                       help="walk-forward: train fold by fold over K folds (overrides data.folds), each in RUN_DIR/fold-KK/")
    train.add_argument("--agents", type=int, default=None, metavar="P",
                       help="population: train P agents in one step (seeds run.seed … run.seed + P − 1), each in RUN_DIR/agent-KK/ "
                       "(overrides run.agents)")
    train.add_argument("--agent-grid", action="append", default=[], metavar="SECTION.KEY=V1,V2",
                       help="a population's hyper-parameter axis (repeatable; agent i takes point i mod the grid's size; "
                       "overrides run.agent_grid)")
    _add_config_surface(train)
    train.set_defaults(handler=_cmd_train)


def _add_config_surface(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="overrides",
                        help="override one config key (repeatable), e.g. --set optim.lr=1e-4 --set adaptive.kelly.cap_floor=0.2")
    parser.add_argument("--no-bands", action="store_true", help="no metric-band hard-stop (run.bands = \"\")")


def _add_validate_command(commands: argparse._SubParsersAction) -> None:
    validate = commands.add_parser(
        "validate", help="seeds × walk-forward folds (× grid) as independent runs on Ray; tiered report with intervals",
        description="Every (seed, fold, grid point) cell is one training run in DIR/cells/<id>/. Re-running the same "
        "command finishes the missing cells only. Writes DIR/report.json, DIR/report.md and DIR/plots/; exit status 0 "
        "when every tier passes, 1 when one fails.",
    )  # fmt: skip
    validate.add_argument("--config", default=None, metavar="TOML", help="base config (default config/train/default.toml)")
    validate.add_argument("--data", default=None, metavar="PATH", help="market data of every cell (default: the embedded EURUSD bars)")
    validate.add_argument("--seeds", type=int, default=5, metavar="N", help="seeds per fold (default 5; < 5 is not a validation claim)")
    validate.add_argument("--folds", type=int, default=6, metavar="K", help="walk-forward folds (default 6; < 6 is not a validation claim)")
    validate.add_argument("--grid", action="append", default=[], metavar="SECTION.KEY=V1,V2",
                          help="a grid axis (repeatable; the cells run the cartesian product)")
    validate.add_argument("--tiers", default="1,2,3", metavar="LIST", help="tiers to evaluate (default 1,2,3; tier 3 triples the cells)")
    validate.add_argument("--out", default=None, metavar="DIR", help="sweep directory (default runs/validate-<UTC timestamp>)")
    validate.add_argument("--executor", choices=("ray", "local"), default="ray", help="ray (default; local instance or --address) or local (a process pool)")
    validate.add_argument("--address", default=None, metavar="ADDR", help="join an existing Ray cluster (DIR must be on a shared filesystem)")
    validate.add_argument("--jobs", type=int, default=None, metavar="N", help="cells at once on this machine (default: its CPU count)")
    validate.add_argument("--gpu-fraction", type=float, default=0.25, metavar="F", help="share of a GPU per CUDA cell on Ray (default 0.25)")
    validate.add_argument("--device", choices=("cpu", "cuda"), default=None, help="device of every cell (default: run.device)")
    validate.add_argument("--population", type=int, default=0, metavar="N",
                          help="train up to N cells that differ only in their seed as one population, in one step "
                          "(default 0: every seed of a fold together on a GPU, one cell per task on the CPU)")
    validate.add_argument("--steps", type=int, default=None, help="training steps per cell (overrides run.steps)")
    validate.add_argument("--write-bands", nargs="?", const="default", default=None, metavar="TOML",
                          help="after a passing report, write the metric bands from its epochs (default config/metric-bands.toml)")
    validate.add_argument("--no-progress", action="store_true", help="one line per finished cell instead of live bars")
    _add_config_surface(validate)
    validate.set_defaults(handler=_cmd_validate)


def _add_profile_command(commands: argparse._SubParsersAction) -> None:
    profile = commands.add_parser(
        "profile", help="seconds per epoch by phase (collect, learn, validation, checkpoint) against a baseline",
        description="Profile a few epochs with the torch profiler and compare every phase with a stored baseline: "
        "more than 20 %% slower in any phase fails (exit status 1) with the phase named.",
    )  # fmt: skip
    profile.add_argument("--config", default=None, metavar="TOML", help="training config (default config/train/default.toml)")
    profile.add_argument("--epochs", type=int, default=2, metavar="E", help="epochs to profile (default 2)")
    profile.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: run.device")
    profile.add_argument("--baseline", default=None, metavar="FILE", help="baseline JSON to compare with")
    profile.add_argument("--write-baseline", default=None, metavar="FILE", help="record this measurement as a baseline")
    profile.add_argument("--trace", default=None, metavar="FILE", help="also record every op with the torch profiler (Chrome trace; slow)")
    profile.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", dest="overrides", help="override one config key (repeatable)")
    profile.set_defaults(handler=_cmd_profile)


def _cmd_profile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trainer.config import DEFAULT_CONFIG_PATH, load_config
    from trainer.train.profile import (
        PHASES,
        baseline_payload,
        compare,
        load_baseline,
        profile_epochs,
        write_baseline,
    )

    if args.epochs < 1:
        raise UserError("bad --epochs", got=str(args.epochs), expected="≥ 1", hint="e.g. --epochs 2")
    overrides = list(args.overrides) + ([f"run.device={json.dumps(args.device)}"] if args.device else [])
    config = load_config(args.config, overrides=overrides)
    baseline = load_baseline(Path(args.baseline)) if args.baseline else None
    phases = profile_epochs(config, args.epochs, Path(args.trace) if args.trace else None)
    for phase in PHASES:
        before = baseline["seconds_per_epoch"].get(phase) if baseline else None
        shown = f"  (baseline {before:.3f} s)" if isinstance(before, (int, float)) else ""
        print(f"{phase:<11} {phases[phase]:8.3f} s/epoch{shown}")
    if args.write_baseline:
        payload = baseline_payload(config, str(args.config or DEFAULT_CONFIG_PATH), args.epochs, phases)
        print(f"baseline: {write_baseline(Path(args.write_baseline), payload)}")
    if baseline is not None:
        slower = compare(phases, baseline, config)
        for line in slower:
            print(f"trainer: profile regression: {line}", file=sys.stderr)
        return EXIT_VALIDATION_FAILED if slower else 0
    return 0


def _add_diag_command(commands: argparse._SubParsersAction) -> None:
    diag = commands.add_parser(
        "diag", help="show a run's HEALTH_DIAG: a table per epoch, the adaptive monitors, PNG plots",
        description="Read RUN_DIR/health_diag.jsonl, print the per-epoch table and the monitors' fire rates, "
        "and write PNG plots of every ISV slot, loss and validation metric over the epochs.",
    )  # fmt: skip
    diag.add_argument("run_dir", metavar="RUN_DIR", help="the --out directory of a `trainer train` run")
    diag.add_argument("--out", default=None, metavar="DIR", help="where the plots go (default RUN_DIR/diag)")
    diag.add_argument("--no-plots", action="store_true", help="print the tables only")
    diag.set_defaults(handler=_cmd_diag)


def _add_eval_command(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "eval", help="backtest a saved policy (a checkpoint) on its run's validation window or on any data",
        description="Load CHECKPOINT (its run's config and every tensor), trade greedily through the training "
        "environment and write metrics.json (agent vs buy-and-hold vs flat), eval.json and plots/ into --out.",
    )  # fmt: skip
    evaluate.add_argument("checkpoint", metavar="CHECKPOINT", help="a checkpoint manifest, RUN_DIR/checkpoints/step-N.json")
    evaluate.add_argument("--data", default=None, metavar="PATH",
                          help="CSV/Parquet/DBN file or 'default' to backtest on, all usable bars (default: the run's validation window)")
    evaluate.add_argument("--out", default=None, metavar="DIR", help="where the results go, new or empty (default: a new runs/eval/<UTC timestamp>)")
    evaluate.add_argument("--overwrite", action="store_true", help="replace the outputs of an earlier evaluation in --out")
    evaluate.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available, else cpu")
    evaluate.add_argument("--no-plots", action="store_true", help="metrics only")
    evaluate.set_defaults(handler=_cmd_eval)


def _cmd_eval(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trainer.train.evaluate import evaluate_checkpoint
    from trainer.train.loop import PLOTS_DIRNAME
    from trainer.train.rundir import DEFAULT_RUNS_ROOT, open_run_directory

    out = args.out
    if out is None:
        from trainer.train.rundir import new_run_directory

        out = new_run_directory(DEFAULT_RUNS_ROOT / "eval")
    # the same gate as a run (never mix two results in one directory), for what an evaluation writes
    run = open_run_directory(out, overwrite=args.overwrite, subdirectories=(PLOTS_DIRNAME,))
    metrics = evaluate_checkpoint(args.checkpoint, run.path, data=args.data, device=args.device or "auto", make_plots=not args.no_plots)
    Console().print(_metrics_table(metrics, f"backtest of {args.checkpoint} — {args.data or 'its validation window'}"))
    print(f"results: {run.path}")  # one line, unwrapped: scripts read it
    return 0


def _metrics_table(metrics: dict, title: str):
    from rich.table import Table

    table = Table(title=title)
    for column in ("strategy", "sharpe", "sortino", "max drawdown", "annual return", "trades"):
        table.add_column(column)
    for name in ("agent", "buy_and_hold", "flat"):
        values = metrics.get(name, {})
        table.add_row(
            name, _fmt(values.get("sharpe_ratio")), _fmt(values.get("sortino_ratio")), _percent(values.get("max_drawdown")),
            _percent(values.get("annual_return")), _fmt(values.get("trade_count")),
        )  # fmt: skip
    return table


def _percent(value: object) -> str:
    """Returns and drawdowns on screen in percent, as `trainer data info` and the plots show them
    (metrics.json keeps fractions)."""
    return f"{value:+.2%}" if isinstance(value, float) and value == value else "n/a"


def _version_text() -> str:
    from importlib import metadata

    import trainer

    try:
        version = metadata.version("foxhunt")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        version = trainer.__version__
    return f"trainer {version} (foxhunt, Python {sys.version.split()[0]})"


def _cmd_diag(args: argparse.Namespace) -> int:
    from trainer.eval.diag import run_diag

    run_diag(args.run_dir, out_dir=args.out, plots=not args.no_plots)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainer", description="GPU-resident distributional DQN trainer for trading.")
    parser.add_argument("--version", action="version", version=_version_text())
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_data_command(commands)
    _add_train_command(commands)
    _add_eval_command(commands)
    _add_validate_command(commands)
    _add_profile_command(commands)
    _add_diag_command(commands)
    return parser


def _data_options(args: argparse.Namespace) -> tuple[DbnOptions, FeatureConfig]:
    from trainer.data import DbnOptions, FeatureConfig

    return DbnOptions(bar_seconds=args.bar_seconds, instrument_id=args.instrument), FeatureConfig(
        norm_window=args.norm_window, norm_min_periods=min(64, args.norm_window)
    )


def _span_text(bars: Bars) -> str:
    ts = bars.timestamps
    return f"{format_ts(int(ts[0]))} → {format_ts(int(ts[-1]))}"


def _buy_and_hold_text(bars: Bars) -> str:
    """The passive baseline a strategy on this data has to beat, annualised at the data's own rate."""
    periods = metrics.periods_per_year_from_timestamps(bars.timestamps)
    if len(bars) < 3 or not periods > 0:
        return "n/a (fewer than 3 bars)"
    returns = bars.close[1:] / bars.close[:-1] - 1.0
    return (
        f"Sharpe {metrics.sharpe_ratio(returns, periods):.2f}, annual return {metrics.annual_return(returns, periods):+.2%}, "
        f"volatility {metrics.annual_volatility(returns, periods):.2%}, max drawdown {metrics.max_drawdown(returns):.2%} "
        f"({periods:,.0f} bars/year)"
    )


def _cmd_data_info(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from trainer.data import (
        FEATURE_GROUP_WIDTHS,
        FEATURE_WIDTH,
        compute_features,
        load_bars,
        prepare,
        probe_cache,
    )

    dbn_options, feature_config = _data_options(args)
    status = probe_cache(args.path, feature_config=feature_config, dbn_options=dbn_options, directory=args.cache_dir)
    if status.state == "hit":
        prepared = prepare(args.path, feature_config=feature_config, dbn_options=dbn_options, directory=args.cache_dir)
        bars, features = prepared.bars, prepared.features
    else:
        bars = load_bars(args.path, dbn_options)
        features = compute_features(bars, feature_config)
    table = Table(title=f"trainer data info — {args.path}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    table.add_row("source", bars.source)
    table.add_row("format", bars.format)
    table.add_row("bars", f"{len(bars):,}")
    table.add_row("span (UTC, bar starts)", _span_text(bars))
    table.add_row("bar length", f"{bars.bar_ns / 1e9:g} s")
    table.add_row("columns", ", ".join(bars.columns))
    table.add_row("volume", "yes" if bars.has_volume else "no (volume features are zero)")
    if bars.book is not None and bars.flow is not None:
        table.add_row("book data", f"MBP-10, {bars.book.bid_px.shape[1]} levels at bar close; {int(bars.flow.n_events.sum()):,} events")
    else:
        table.add_row("book data", "none (order-flow features are zero)")
    for key, value in bars.info.items():
        if key != "column_map":
            table.add_row(key, str(value))
    table.add_row("buy & hold", _buy_and_hold_text(bars))
    groups = ", ".join(f"{name} {width}" for name, width in FEATURE_GROUP_WIDTHS.items())
    table.add_row("features", f"{FEATURE_WIDTH} columns ({groups}); valid from bar {features.valid_from}")
    cache_text = status.state if not status.reason else f"{status.state}: {status.reason}"
    if status.state != "hit":
        cache_text += f" — run: trainer data build {args.path}"
    table.add_row("cache", f"{cache_text}\n{status.manifest}")
    Console().print(table)
    return 0


def _cmd_data_build(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from trainer.data import prepare

    dbn_options, feature_config = _data_options(args)
    labels = {"hash": "hashing source", "load": "loading bars", "features": "computing features", "write": "writing cache"}
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description:<20}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(), console=console) as progress:
        tasks: dict[str, int] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(labels[stage], total=max(total, 1))
            progress.update(tasks[stage], completed=done, total=max(total, 1))

        prepared = prepare(
            args.path, feature_config=feature_config, dbn_options=dbn_options, directory=args.out, force=args.force, progress=report
        )
        for task in tasks.values():
            progress.update(task, completed=progress.tasks[task].total)
    status = prepared.cache
    reason = f" ({status.reason})" if status.reason and status.state == "rebuilt" else ""
    Console().print(
        f"{status.state}{reason}: {len(prepared.bars):,} bars × {prepared.features.values.shape[1]} features "
        f"(valid from bar {prepared.features.valid_from}) → {status.manifest}"
    )
    return 0


def _train_config(args: argparse.Namespace, resume_dir: Path | None) -> TrainConfig:
    """The run's config: ``--config`` (default: a resumed run's own ``config.toml``, else the
    default config), the command-line overrides, and the device resolved (``auto`` → what runs)."""
    from trainer.config import load_config
    from trainer.train.loop import CONFIG_FILENAME, resolve_device

    stored = resume_dir / CONFIG_FILENAME if resume_dir is not None else None
    own = args.config is None and stored is not None and stored.exists()  # the resumed run's config.toml, as written
    config = load_config(stored if own else args.config, overrides=_overrides(args), stored=own)
    if args.folds is not None:
        config = config.replace(data={"folds": args.folds})
    return config.replace(run={"device": resolve_device(config.run.device).type})


def _cmd_train(args: argparse.Namespace) -> int:
    import shlex
    import time
    from functools import partial

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from trainer.train.loop import train
    from trainer.train.rundir import open_run_directory
    from trainer.train.stop import RunControl

    if args.tensorboard:
        from trainer.eval.tensorboard import require_tensorboard

        require_tensorboard()  # before the run directory is made or any data loaded
    run = open_run_directory(
        args.out, partial(_train_config, args), resume=args.resume, resume_from=args.resume_from, overwrite=args.overwrite
    )
    config, out = run.config, run.path
    console = Console(stderr=True)
    for note in run.notes:
        print(f"trainer: {note}", file=sys.stderr)
    control = RunControl(config.run.checkpoint_minutes, resume_command=f"trainer train --resume --out {shlex.quote(str(out))}")
    train = partial(train, resume_from=run.resume_from, control=control, tensorboard=args.tensorboard)
    latest: dict[str, str] = {"text": "", "rate": ""}
    window: dict[str, float] = {"time": 0.0, "steps": -1.0}  # steps/s over training chunks only
    started = time.perf_counter()
    first: dict[str, float] = {}  # the first (time, step) this process trained: the ETA's base

    def eta_text(done: int, total: int) -> str:
        now = time.perf_counter()
        first.setdefault("time", now)
        first.setdefault("steps", float(done))
        rate = (done - first["steps"]) / max(now - first["time"], 1e-9)
        if done >= total:
            return "done"
        if rate <= 0:
            return "ETA n/a"
        return f"ETA {_duration((total - done) / rate)}"

    with control.handling_signals():
        if args.no_progress:
            def report(done: int, total: int, info: dict | None) -> None:
                eta = eta_text(done, total)  # the first call (warm-up or first chunk) is the ETA's base
                if info is not None and "warmup" not in info:
                    elapsed = _duration(time.perf_counter() - started)
                    print(f"step {done}/{total} ({eta}, {elapsed} elapsed): {_epoch_text(info)}", file=sys.stderr, flush=True)
                elif info is not None and info["warmup"][0] == info["warmup"][1]:
                    print(f"replay warm-up done: {info['warmup'][1]} collect steps before learning", file=sys.stderr, flush=True)

            metrics = train(config, out, resume=args.resume, progress=report)
        else:
            with Progress(
                TextColumn("[bold]train"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[latest]}"),
                console=console,
            ) as progress:  # fmt: skip
                folds_trained = (config.data.folds if config.data.fold < 0 else 1) or 1
                task = progress.add_task("train", total=config.run.steps * folds_trained, rate="", latest=latest["text"])

                def report(done: int, total: int, info: dict | None) -> None:
                    now = time.perf_counter()
                    if info is not None and "warmup" in info:
                        collected, needed = info["warmup"]
                        latest["text"] = f"replay warm-up {collected}/{needed} collect steps (no learning yet)"
                        window.update(time=now, steps=-1.0)
                    elif info is not None or window["steps"] < 0:  # first chunk or epoch end (after validation)
                        latest["text"] = _epoch_text(info) if info is not None else "first epoch running (no validation yet)"
                        window.update(time=now, steps=done)
                    elif done > window["steps"]:
                        rate = (done - window["steps"]) / max(now - window["time"], 1e-9)
                        latest["rate"] = f"{rate:,.1f} steps/s"
                    progress.update(task, completed=done, rate=latest["rate"], latest=latest["text"])

                metrics = train(config, out, resume=args.resume, progress=report)
    if not metrics:  # stopped by stop_after_epochs-style interruption: nothing to report yet
        return 0
    selection = metrics.get("selection") or {}
    if "n_agents" in metrics:
        where = f"mean of {metrics['n_agents']} agents, each in {out}/agent-KK"
    elif selection.get("epoch") is not None:
        where = f"selected epoch {selection['epoch']}"
    else:
        where = f"mean of {metrics.get('n_folds')} folds"
    Console().print(_metrics_table(metrics, f"test-window backtest ({where}) — {out}"))
    Console().print(f"run directory: {out}")
    termination = metrics.get("termination")
    if termination:
        print(f"trainer: stopped by its metric bands: {termination['message']}", file=sys.stderr)
        return EXIT_BAND_STOP
    return 0


def _duration(seconds: float) -> str:
    seconds = max(int(round(seconds)), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _overrides(args: argparse.Namespace) -> list[str]:
    """The --set list plus the dedicated flags, as section.key=value (one validation for all)."""
    overrides = list(args.overrides)
    for flag, key in (("data", "data.path"), ("device", "run.device"), ("seed", "run.seed"), ("steps", "run.steps"),
                      ("agents", "run.agents")):  # fmt: skip
        value = getattr(args, flag, None)
        if value is not None:
            overrides.append(f"{key}={value}" if not isinstance(value, str) else f"{key}={json.dumps(value)}")
    if getattr(args, "agent_grid", None):
        overrides.append(f"run.agent_grid={json.dumps('; '.join(args.agent_grid))}")
    if args.no_bands:
        overrides.append('run.bands=""')
    return overrides


def _cmd_validate(args: argparse.Namespace) -> int:
    import os
    from datetime import UTC, datetime
    from pathlib import Path

    from trainer.validate.sweep import (
        SweepPlan,
        load_plan_config,
        parse_grid,
        run_sweep,
        write_bands_from_report,
    )

    tiers = tuple(sorted({int(item) for item in args.tiers.split(",") if item.strip().isdigit()}))
    if not tiers or not set(tiers) <= {1, 2, 3}:
        raise UserError("bad --tiers", got=repr(args.tiers), expected="a comma list of 1, 2, 3", hint="e.g. --tiers 1,2")
    for name, value in (("--seeds", args.seeds), ("--folds", args.folds)):
        if value < 1:
            raise UserError(f"bad {name}", got=str(value), expected="≥ 1", hint=f"pass {name} 1 or more")
    if args.address and args.executor != "ray":
        raise UserError("--address needs Ray", got=f"--executor {args.executor} --address", expected="--executor ray",
                        hint="drop --address, or use --executor ray")  # fmt: skip
    if not 0.0 < args.gpu_fraction <= 1.0:
        raise UserError("bad --gpu-fraction", got=str(args.gpu_fraction), expected="0 < F ≤ 1", hint="e.g. --gpu-fraction 0.25")
    config, source = load_plan_config(args.config, _overrides(args))
    out = Path(args.out) if args.out else Path("runs") / f"validate-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    plan = SweepPlan(config, source, args.seeds, args.folds, parse_grid(args.grid), tiers, args.executor)
    jobs = args.jobs or os.cpu_count() or 1
    report = run_sweep(plan, out, jobs=jobs, address=args.address, gpu_fraction=args.gpu_fraction,
                       live=not args.no_progress and sys.stderr.isatty(), population=args.population)  # fmt: skip
    for point in report["grid_points"]:
        for tier in point["tiers"]:
            print(f"grid {point['index']} tier {tier['tier']} {tier['name']}: {'PASS' if tier['passed'] else 'FAIL'} — {tier['reason']}")
    if report["claim_note"]:
        print(f"note: {report['claim_note']}")
    print(f"report: {out / 'report.md'}")
    if args.write_bands is not None:
        from trainer.eval.bands import DEFAULT_BANDS_PATH

        destination = DEFAULT_BANDS_PATH if args.write_bands == "default" else Path(args.write_bands)
        print(f"metric bands: {write_bands_from_report(out, destination)}")
    return 0 if report["passed"] else EXIT_VALIDATION_FAILED


def _fmt(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _epoch_text(info: dict) -> str:
    losses = info["losses"]
    c51 = sum(losses["c51"].values())
    sharpe = info["validation"]["agent"].get("sharpe_ratio")
    return f"c51 {c51:.3f} · iqn {losses['iqn']:.3f} · val sharpe {_fmt(sharpe)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed usage and the problem
        return int(exc.code or 0)
    try:
        return int(args.handler(args))
    except RunInterrupted as exc:
        print(f"trainer: {exc}", file=sys.stderr)
        return exc.exit_code
    except UserError as exc:
        print(f"trainer: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as exc:  # a user path the system refused (permissions, read-only, full disk, missing)
        print(f"trainer: error: {os_error_text(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("trainer: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
