"""Do the agent's inputs carry the signal? A linear read-out of the features, scored like the suite.

For each market × seed of the learning suite (``benchmarks/learning_suite.py``: the same bars, the
same train | validation | test split of the default config, the same costs) this fits, on the
training bars only, an ordinary least-squares regression of each bar's next log return on the
trainer's own feature row of that bar (``trainer.train.loop.prepare_market``: every column the
network sees at the current bar, nothing from the window before it), then trades the sign of the
forecast through the oracle's cost hysteresis (with its flat band fitted on the training bars, as the
oracle's is) and scores it on the agent's test bars with the trainer's backtester. Nothing is trained by RL: the number says what a *linear* policy on the
agent's inputs can reach, so an agent far below it fails to learn, not to see.

    python benchmarks/feature_probe.py                      # 5 markets × 5 seeds, ≈ 1 min of CPU
    python benchmarks/feature_probe.py --markets regime --seeds 3
    python benchmarks/feature_probe.py --markets regime:phi=0.2:stay=0.98 --seeds 6 --first-seed 130   # a variant, as the suite takes it
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_suite import (  # noqa: E402 — the suite's markets, config and scoring, by design the same
    COST_RATE,
    MARKETS,
    N_BARS,
    SuiteOptions,
    make_market,
    market_spec,
    score_positions,
    score_strategies,
    scored_bars,
    suite_config,
)

from trainer.data.synthetic import fit_flat_band, hysteresis_positions, write_market_csv  # noqa: E402
from trainer.errors import UserError  # noqa: E402
from trainer.train.loop import prepare_market, run_splits  # noqa: E402


def linear_forecast(features: np.ndarray, close: np.ndarray, train: slice) -> np.ndarray:
    """OLS of log(close[t+1]/close[t]) on [features[t], 1] over the training bars → forecast per bar."""
    next_return = np.zeros(len(close))
    next_return[:-1] = np.diff(np.log(close))
    design = np.column_stack([features.astype(np.float64), np.ones(len(close))])  # [T, F + 1]
    rows = np.arange(train.start, train.stop - 1)  # the last training bar's next close is not training data
    weights, *_ = np.linalg.lstsq(design[rows], next_return[rows], rcond=None)
    return design @ weights


def probe_cell(market_name: str, seed: int, workdir: Path) -> dict[str, float]:
    market = make_market(market_name, N_BARS, seed)
    path = write_market_csv(market, workdir / f"{market_name.replace(':', '+')}-seed{seed}.csv")
    options = SuiteOptions(config_path=None, overrides={}, steps_multiplier=1.0, device="cpu", n_bars=N_BARS,
                           out=str(workdir), plots=False)  # fmt: skip
    config = suite_config(options, path, seed=seed)
    prepared = prepare_market(config)
    split = run_splits(config, prepared)[0]
    close = prepared.close.double().numpy()
    forecast = linear_forecast(prepared.features.numpy(), close, split.train)
    cost = config.env.fee_rate + config.env.slippage
    window = scored_bars((split.test.start, split.test.stop))
    costs = {"fee_rate": config.env.fee_rate, "slippage": config.env.slippage, "init_cash": config.env.init_cash,
               "periods_per_year": config.data.periods_per_year}  # fmt: skip
    band = fit_flat_band(close[split.train], forecast[split.train], cost)  # as the oracle and the baselines fit theirs
    linear = score_positions(close[window], hysteresis_positions(forecast, cost, band)[window], **costs)
    references = score_strategies(market, {"train": (split.train.start, split.train.stop),
                                           "test": (split.test.start, split.test.stop)}, config)  # fmt: skip
    return {"linear": linear["sharpe_ratio"], "oracle": references["oracle"]["sharpe_ratio"]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markets", default=",".join(MARKETS),
                        help="comma-separated markets of the suite (" + ", ".join(MARKETS) + ") or variants as the suite "
                             "takes them, e.g. regime:phi=0.2:stay=0.98")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args(argv)
    markets = [name for name in args.markets.split(",") if name]
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: at least 1 — hint: e.g. --markets ar1,regime --seeds 3")
    try:
        for name in markets:
            market_spec(name)  # a mistake names the market and the keys it takes, before any work
    except UserError as error:
        parser.error(str(error))
    print(f"linear read-out of the features vs the feasible oracle (test Sharpe; fee {COST_RATE:g})")
    with tempfile.TemporaryDirectory() as tmp:
        for name in markets:
            cells = [probe_cell(name, seed, Path(tmp)) for seed in range(args.first_seed, args.first_seed + args.seeds)]
            shares = [c["linear"] / c["oracle"] for c in cells if c["oracle"] > 0]
            row = "  ".join(f"{c['linear']:6.2f}/{c['oracle']:5.2f}" for c in cells)
            floor = sum(share >= 0.6 for share in shares)
            summary = f"mean {100 * float(np.mean(shares)):.0f} % of the oracle, ≥ 60 % on {floor}/{len(shares)}" if shares else "no oracle edge"
            print(f"{name:12s} {row}   {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
