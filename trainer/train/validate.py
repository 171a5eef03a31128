"""Greedy out-of-sample backtest on the validation window, through the training environment.

Why through the env: the agent's validation equity must come from exactly the fills, fees,
slippage and limit-fill rules it trained under (the ``env_step`` kernel or its reference), and
the baselines from the same accounting (``trainer.env.accounting.backtest_targets``), or the
comparison would measure the accounting instead of the agent.

The rollout is one environment per window walking its bars in lock-step with ε = 0, on a copy of
the ISV (episode length 0 = to the data end) and its own RNG counter, so validating never perturbs
the training state. Per-bar results are written into preallocated device tensors and read in one
transfer at the end (a cold point).

Why captured: a bar is one greedy forward pass and one env step — some ninety small kernels for a
handful of environments — and a validation window is about 1,500 bars, so launched one by one from
Python the epoch boundary's rollout cost the GPU config more than an epoch of training (issue 11).
On CUDA a ``WindowRollout`` records one bar's work as a CUDA graph, once per run and window shape,
and replays it once per bar: the bar index comes from the env's own state on the device and the
per-bar results land at a device-side cursor, so nothing the host knows varies between replays. The
graph reads the online network's parameters in place (Adam and checkpoint loads update them in
place), so it stays valid from epoch to epoch; what changes between rollouts — the ISV copy, the RNG
counter, the starting portfolios, the cursor — is rewritten into the same buffers before the
replays. A replay launches the very kernels the eager bar launches, on the same buffers, so a
captured rollout equals an eager one bit for bit (``tests/trainer/train/test_validate_gpu.py``).
The CPU runs the same bar eagerly.

Which weights act is ``run.policy_weights``: the online network's, or its Polyak average's (the
target network). The target's are copied into the online network's storage for the walk and the
online weights copied back after it, so the one captured graph serves both and training resumes
from its own weights bit for bit. How they act: by ``TrainStep.backtest_values`` — the plain
expected values, or with ``run.policy_mirror`` the mirror-averaged ones (``trainer.train.mirror``) —
with each window's flat margin added to FLAT's value before the argmax (0 but for the candidates
and the test of ``trainer.train.flat_margin``); every bar also records its direction gap, from
which the flat margin's candidates are made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trainer.env.accounting import backtest_targets
from trainer.env.vector_env import VectorEnv
from trainer.eval.backtest import EquityCurve, exposure_from_units
from trainer.isv import Isv
from trainer.layout import (
    BRANCH_CHOICES,
    BRANCH_SIZES,
    BRANCHES,
    JOINT_STRIDES,
    N_BRANCHES,
    PS_BAR_INDEX,
    PS_EPISODE_START,
    PS_PORTFOLIO_VALUE,
    PS_POSITION,
)
from trainer.markers import hot_path
from trainer.ops.rng import new_counter
from trainer.train.flat_margin import direction_gap, greedy_with_margin
from trainer.train.graph import capture_graph, run_on_side_stream
from trainer.train.step import TrainerState, TrainStep

WARMUP_BARS = 2  # eager bars (on a side stream) before a rollout's bar is captured


def action_fractions(actions: np.ndarray) -> dict[str, dict[str, float]]:
    """Per branch, the share of each sub-action in an int [T, N_BRANCHES] action history."""
    out: dict[str, dict[str, float]] = {}
    total = max(actions.shape[0], 1)
    for branch, (branch_slot, choices) in enumerate(zip(BRANCHES.slots, BRANCH_CHOICES, strict=True)):
        counts = np.bincount(actions[:, branch], minlength=BRANCH_SIZES[branch]) if actions.size else np.zeros(BRANCH_SIZES[branch])
        out[branch_slot.name.lower()] = {
            choice.name.lower(): float(counts[index]) / total for index, choice in enumerate(choices.slots)
        }
    return out


@dataclass(frozen=True)
class RolloutTrace:
    """A rollout's per-bar record, on the host: bar t (0 … n − 3) of window w."""

    equity: np.ndarray  # [n − 2, W] f64: portfolio value at close_{t+1}
    units: np.ndarray  # [n − 2, W] f64: position held over period t
    actions: np.ndarray  # [n − 2, W, N_BRANCHES] int64: the greedy sub-actions taken at bar t
    gaps: np.ndarray  # [n − 2, W] f64: the direction gap at bar t (trainer.train.flat_margin.direction_gap)


class WindowRollout:
    """``n_windows`` environments walking ``n_bars`` bars of one series greedily, in lock-step.

    Env bar b of ``close`` is global feature row ``feature_offset + b``. Every buffer is made here,
    once: the env (portfolio rows, RNG counter, ISV copy), the per-bar result buffers and their
    cursor. ``run`` (``begin`` → ``advance`` → ``read``) rewinds them to fresh portfolios at the
    windows' starts and walks every bar but the last. With ``capture`` on CUDA the first run takes
    ``WARMUP_BARS`` eager bars on a side stream, records the bar as a CUDA graph and replays it for
    the rest, as every later run does for all its bars. ``close`` and ``spread`` are copied to the
    device once: they must not change while this object is in use.
    """

    def __init__(
        self,
        state: TrainerState,
        step: TrainStep,
        close: torch.Tensor,
        spread: torch.Tensor,
        feature_offset: int,
        n_windows: int,
        n_bars: int,
        capture: bool,
    ) -> None:
        device = state.device
        self.state = state
        self.step = step
        self.series = (close, spread)  # the caller's tensors: GreedyRollouts keys by their identity
        self.feature_offset = feature_offset
        self.n_windows = n_windows
        # The window's last bar is never traded to (a single-window env ends its episode there and
        # restarts the portfolio in the same step): each curve covers bars 0 … n − 2.
        self.n_steps = n_bars - 2
        self.capture = capture and device.type == "cuda"
        self.isv = Isv(device)  # mapped once; every run refills it from the training ISV
        self._refill_isv()  # the env's construction-time reset reads the episode length
        self.env = VectorEnv(close, n_envs=n_windows, isv=self.isv, seed=state.seed, spread=spread, counter=new_counter(device))
        self.env.outputs(1)  # the one-bar step's buffers exist before any bar (and any capture) runs
        self.env.bootstrap_outputs(1)
        self.strides = torch.tensor(JOINT_STRIDES, dtype=torch.int64, device=device)  # [D]
        self.cursor = torch.zeros(1, dtype=torch.int64, device=device)  # row of the bar being walked
        self.equity = torch.zeros(self.n_steps, n_windows, device=device)  # [n − 2, W] value at close_{t+1}
        self.units = torch.zeros(self.n_steps, n_windows, device=device)  # [n − 2, W] position over period t
        self.actions = torch.zeros(self.n_steps, n_windows, N_BRANCHES, dtype=torch.int64, device=device)  # [n − 2, W, D]
        self.gaps = torch.zeros(self.n_steps, n_windows, device=device)  # [n − 2, W] best position less FLAT
        self.margins = torch.zeros(n_windows, device=device)  # [W] each window's flat margin (begin() writes it)
        self.last_trace: RolloutTrace | None = None  # what the last read() returned
        self.graph: torch.cuda.CUDAGraph | None = None
        self.warmup_done = 0  # eager bars taken so far on the side stream (capture once WARMUP_BARS)
        self.bars_done = 0  # bars walked by the current run (host count: the cursor's twin)
        self._walked: torch.cuda.Event | None = None  # recorded after a run's last bar (CUDA)
        # run.policy_weights = "target": the online weights are kept here while the target's act.
        self.kept = (
            [torch.empty_like(param) for param in state.online.parameters()]
            if state.config.run.policy_weights == "target"
            else None
        )

    def run(self, starts: list[int], margins: list[float] | None = None) -> RolloutTrace:
        """Walk the windows starting at env bars ``starts`` (one per env; each with its flat margin,
        0 by default) and read the record back."""
        self.begin(starts, margins)
        self.advance(self.n_steps)
        return self.read()

    def begin(self, starts: list[int], margins: list[float] | None = None) -> None:
        """Rewind: the training state's current ISV (episode length 0), the RNG counter at 0, fresh
        portfolios at ``starts`` — what a newly built env holds — each window's flat margin
        (``trainer.train.flat_margin``; 0 by default) and the cursor at bar 0."""
        margins = [0.0] * len(starts) if margins is None else margins
        if len(starts) != self.n_windows or len(margins) != self.n_windows:
            raise ValueError(
                f"rollout starts or margins do not match its environments ({len(starts)} starts, {len(margins)} "
                f"margins vs {self.n_windows}) — hint: pass one start and one margin per window"
            )
        if self._walked is not None:
            self._walked.synchronize()  # the last run's bars read the ISV copy refilled below
        state, env = self.state, self.env
        self._refill_isv()
        env.counter.zero_()
        env.reset()  # the priors, the initial cash and the start draw of a fresh env (counter 0 → 1)
        start_bars = torch.tensor(starts, dtype=torch.float32, device=state.device)
        env.ps[:, PS_BAR_INDEX] = start_bars
        env.ps[:, PS_EPISODE_START] = start_bars
        self.margins.copy_(torch.tensor(margins, dtype=torch.float32))  # the captured bar reads this buffer
        self.cursor.zero_()
        self.bars_done = 0
        state.isv_local.copy_(state.isv.tensor)  # the atom support of the greedy choice

    def advance(self, bars: int) -> None:
        """Walk ``bars`` more bars: eagerly, or as graph replays once captured (no host read)."""
        if bars < 0 or self.bars_done + bars > self.n_steps:
            raise ValueError(
                f"rollout walks past its window ({self.bars_done} + {bars} bars vs {self.n_steps}) — hint: "
                f"call begin() to start the windows again"
            )
        network = self.state.online
        was_training = network.training
        network.eval()
        self._act_with_policy_weights()
        try:
            # Inference mode spares the eager walk autograd's bookkeeping per op; a capture runs under
            # no_grad instead — captured under inference mode, a first graph can leave the CUDA
            # generator's graph state as inference tensors that a later capture outside it may not
            # update (pytorch/pytorch#166792). Either way the same kernels run.
            with torch.no_grad() if self.capture else torch.inference_mode():
                remaining = bars
                if self.capture and self.graph is None:
                    warmup = min(WARMUP_BARS - self.warmup_done, remaining)
                    run_on_side_stream(self.bar, warmup, self.state.device)
                    self.warmup_done += warmup
                    remaining -= warmup
                    if self.warmup_done >= WARMUP_BARS:
                        self.graph = capture_graph(self.bar)  # records one bar; walks none
                for _ in range(remaining):
                    if self.graph is not None:
                        self.graph.replay()
                    else:
                        self.bar()
        finally:
            self._restore_online_weights()
            network.train(was_training)
        self.bars_done += bars
        if self.state.device.type == "cuda":
            self._walked = torch.cuda.Event()
            self._walked.record(torch.cuda.current_stream(self.state.device))

    def _act_with_policy_weights(self) -> None:
        """Put the weights ``run.policy_weights`` names into the online network's own storage, the
        online ones kept aside. In place, because the captured bar reads that storage: the graph
        stays valid, and the copies are ordered with its replays on the current stream."""
        if self.kept is None:
            return
        with torch.no_grad():
            for kept, online, target in zip(self.kept, self.state.online.parameters(), self.state.target.parameters(), strict=True):
                kept.copy_(online)
                online.copy_(target)

    def _restore_online_weights(self) -> None:
        """Undo ``_act_with_policy_weights``: training continues from its own weights, bit for bit."""
        if self.kept is None:
            return
        with torch.no_grad():
            for kept, online in zip(self.kept, self.state.online.parameters(), strict=True):
                online.copy_(kept)

    @hot_path
    def bar(self) -> None:
        """One bar of every window: the greedy choice at the env's own bar (FLAT raised by the window's
        margin), the env step, the record written at the cursor's row, the cursor advanced.
        Capture-safe: no host read, no allocation that outlives it, no Python value that changes
        from bar to bar."""
        env = self.env
        bar = env.bar_index()  # [W]
        windows = self.state.gather_windows(bar, self.feature_offset)  # [W, K, F]
        values = self.step.backtest_values(windows, env.portfolio_inputs())  # [W, D, A]
        chosen = greedy_with_margin(values, self.margins, self.state.online.action_mask)  # [W, D]
        env.step((chosen * self.strides).sum(-1).to(torch.int32))
        row = self.cursor  # [1] int64
        self.equity.index_copy_(0, row, env.ps[:, PS_PORTFOLIO_VALUE].unsqueeze(0))
        self.units.index_copy_(0, row, env.ps[:, PS_POSITION].unsqueeze(0))
        self.actions.index_copy_(0, row, chosen.unsqueeze(0))
        self.gaps.index_copy_(0, row, direction_gap(values).unsqueeze(0))
        self.cursor.add_(1)

    def read(self) -> RolloutTrace:
        """The record of the bars walked, in one host read (the rollout waits for the device once)."""
        n, windows = self.bars_done, self.n_windows
        # f32 values and small action indices are exact in f64: one transfer carries all four.
        packed = torch.cat((self.equity[:n].reshape(-1).double(), self.units[:n].reshape(-1).double(),
                            self.gaps[:n].reshape(-1).double(), self.actions[:n].reshape(-1).double()))  # fmt: skip
        host = packed.cpu().numpy()
        cells = n * windows
        self.last_trace = RolloutTrace(
            equity=host[:cells].reshape(n, windows),
            units=host[cells : 2 * cells].reshape(n, windows),
            actions=host[3 * cells :].reshape(n, windows, N_BRANCHES).astype(np.int64),
            gaps=host[2 * cells : 3 * cells].reshape(n, windows),
        )
        return self.last_trace

    def _refill_isv(self) -> None:
        self.isv.load_state(self.state.isv.state())
        self.isv.write_config("EPISODE_LENGTH", 0.0)


class GreedyRollouts:
    """The greedy rollouts of one run's network: a ``WindowRollout`` per series, feature offset,
    window count and window length, built on first use and reused by every later rollout of that
    shape (the training loop keeps one per split, so each epoch's validation replays one graph).

    ``capture`` (default: on CUDA unless ``run.cuda_graph`` is off) records each shape's bar as a
    CUDA graph; the CPU always walks eagerly. A series is recognised by identity: pass the same
    tensors on every call (the loop passes its market's) and never change them in place.
    """

    def __init__(self, state: TrainerState, step: TrainStep, capture: bool | None = None) -> None:
        self.state = state
        self.step = step
        self.capture = (state.config.run.cuda_graph if capture is None else capture) and state.device.type == "cuda"
        # (id(close), id(spread), feature offset, windows, bars) → its rollout (and graph, once captured)
        self.by_shape: dict[tuple[int, int, int, int, int], WindowRollout] = {}
        # Window i of the last ``validation_curves`` → (the rollout that walked it, its env row).
        self.walked_by: dict[int, tuple[WindowRollout, int]] = {}

    def rollout(self, close: torch.Tensor, spread: torch.Tensor, feature_offset: int, n_windows: int, n_bars: int) -> WindowRollout:
        """The rollout of that shape (it holds its series, so the identities in the key stay unique)."""
        key = (id(close), id(spread), feature_offset, n_windows, n_bars)
        found = self.by_shape.get(key)
        if found is None:
            found = WindowRollout(self.state, self.step, close, spread, feature_offset, n_windows, n_bars, self.capture)
            self.by_shape[key] = found
        return found

    def curves(
        self, close: torch.Tensor, spread: torch.Tensor, feature_offset: int, starts: list[int], n_bars: int,
        margins: list[float] | None = None,
    ) -> list[EquityCurve]:
        """Trade several windows of ``n_bars`` bars of one series at once, one environment each
        (window i with flat margin ``margins[i]``, 0 by default: ``trainer.train.flat_margin``).

        Env bar b of ``close`` is global feature row ``feature_offset + b``; window i covers env bars
        ``starts[i] … starts[i] + n_bars − 1``. The windows advance in lock-step as one batch (one
        forward pass per bar for all of them: the epoch boundary's validation and training-window
        backtests cost one rollout, not two); each env's trading is independent of the others'.
        Every curve covers its window's bars 0 … n − 2 (compare baselines on ``close[window][:-1]``).
        """
        n_windows = len(starts)
        if n_windows < 1 or n_bars < 3 or min(starts) < 0 or max(starts) + n_bars > int(close.shape[0]):
            raise ValueError(
                f"rollout windows do not fit the series (starts {starts}, {n_bars} bars each vs a series of "
                f"{int(close.shape[0])} bars, ≥ 3 bars per window) — hint: pass windows inside the bars"
            )
        trace = self.rollout(close, spread, feature_offset, n_windows, n_bars).run(starts, margins)
        init_cash = float(self.state.config.env.init_cash)
        close_all = close.double().cpu().numpy()  # the series the caller passed (host memory in the loop)
        curves = []
        for index, start in enumerate(starts):
            equity = np.concatenate(([init_cash], trace.equity[:, index]))  # [n − 1]
            close_np = close_all[start : start + n_bars - 1]
            exposure = exposure_from_units(trace.units[:, index], close_np[:-1], equity[:-1])
            curves.append(EquityCurve(equity=equity, exposure=exposure, units=trace.units[:, index],
                                      actions=action_fractions(trace.actions[:, index])))  # fmt: skip
        return curves

    def final_portfolio(self, window: int) -> torch.Tensor:
        """The portfolio row [1, PS_STRIDE] (a device view) in which window ``window`` of the last
        ``validation_curves`` call ended: its closed trades are the Kelly cap's trade record. Valid
        until the next rollout of that shape."""
        if window not in self.walked_by:
            raise ValueError(
                f"no window {window} in the last validation rollout ({sorted(self.walked_by)} vs {window}) — "
                f"hint: call validation_curves first and pass the index of one of its windows"
            )
        rollout, row = self.walked_by[window]
        return rollout.env.ps.narrow(0, row, 1)  # [1, PS_STRIDE]

    def direction_gaps(self, window: int) -> np.ndarray:
        """The direction gap per bar [n − 2] of window ``window`` of the last ``validation_curves``
        call (``trainer.train.flat_margin.direction_gap``), as its rollout recorded it."""
        if window not in self.walked_by:
            raise ValueError(
                f"no window {window} in the last validation rollout ({sorted(self.walked_by)} vs {window}) — "
                f"hint: call validation_curves first and pass the index of one of its windows"
            )
        rollout, row = self.walked_by[window]
        trace = rollout.last_trace
        if trace is None:  # walked_by names only rollouts that validation_curves ran and read
            raise ValueError(f"window {window}'s rollout has no record — hint: call validation_curves first")
        return trace.gaps[:, row]

    def validation_curves(
        self, close: torch.Tensor, spread: torch.Tensor, windows: list[slice], margins: list[float] | None = None
    ) -> list[dict[str, EquityCurve]]:
        """Per window of ``close`` (global bar indices; equal lengths are rolled out together; window i
        acts with flat margin ``margins[i]``, 0 by default), the agent's greedy rollout and both
        baselines over the same bars (``close[window][:-1]``), keyed as metrics.json stores them."""
        env = self.state.config.env
        margins = [0.0] * len(windows) if margins is None else margins
        if len(margins) != len(windows):
            raise ValueError(
                f"validation windows and margins differ ({len(windows)} windows vs {len(margins)} margins) — "
                f"hint: pass one margin per window"
            )
        agents: dict[int, EquityCurve] = {}
        by_length: dict[int, list[int]] = {}
        for index, window in enumerate(windows):
            by_length.setdefault(window.stop - window.start, []).append(index)
        self.walked_by = {}
        for length, members in by_length.items():
            rolled = self.curves(close, spread, 0, [windows[i].start for i in members], length, [margins[i] for i in members])
            agents.update(zip(members, rolled, strict=True))
            walked = self.rollout(close, spread, 0, len(members), length)  # the one ``curves`` just ran
            self.walked_by.update((member, (walked, row)) for row, member in enumerate(members))
        out = []
        for index, window in enumerate(windows):
            hold, flat = baseline_curves(close[window][:-1], fee_rate=env.fee_rate, slippage=env.slippage,
                                         init_cash=env.init_cash)  # fmt: skip
            out.append({"agent": agents[index], "buy_and_hold": hold, "flat": flat})
        return out


def greedy_rollout(
    state: TrainerState, step: TrainStep, close: torch.Tensor, spread: torch.Tensor, feature_offset: int
) -> EquityCurve:
    """Trade ``close`` (the validation bars; global feature row of bar 0 = ``feature_offset``) greedily.

    Returns the curve over bars 0 … n − 2 (compare baselines on ``close[:-1]``).
    """
    return greedy_rollouts(state, step, close, spread, feature_offset, [0], int(close.shape[0]))[0]


def greedy_rollouts(
    state: TrainerState,
    step: TrainStep,
    close: torch.Tensor,
    spread: torch.Tensor,
    feature_offset: int,
    starts: list[int],
    n_bars: int,
) -> list[EquityCurve]:
    """``GreedyRollouts.curves`` once (a rollout of its own, built for this call)."""
    return GreedyRollouts(state, step).curves(close, spread, feature_offset, starts, n_bars)


def baseline_curves(close: torch.Tensor, *, fee_rate: float, slippage: float, init_cash: float) -> tuple[EquityCurve, EquityCurve]:
    """(buy-and-hold, flat) over the same bars and accounting as the agent's rollout."""
    close_np = close.double().cpu().numpy()
    n_bars = close_np.shape[0]
    hold_units = init_cash / (close_np[0] * (1.0 + slippage) * (1.0 + fee_rate))  # all-in at bar 0, cash ≥ 0
    per_bar = backtest_targets(close_np, np.full(n_bars, hold_units), fee_rate=fee_rate, slippage=slippage,
                               init_cash=init_cash).numpy()  # fmt: skip
    hold_equity = np.concatenate(([init_cash], per_bar[1:]))  # [n]
    held = np.full(n_bars - 1, hold_units)
    hold = EquityCurve(equity=hold_equity, exposure=exposure_from_units(held, close_np[:-1], hold_equity[:-1]), units=held)
    flat = EquityCurve(equity=np.full(n_bars, init_cash), exposure=np.zeros(n_bars - 1), units=np.zeros(n_bars - 1))
    return hold, flat


def validation_curves(
    state: TrainerState, step: TrainStep, close: torch.Tensor, spread: torch.Tensor, windows: list[slice],
    margins: list[float] | None = None,
) -> list[dict[str, EquityCurve]]:
    """``GreedyRollouts.validation_curves`` once (``trainer eval``; the training loop keeps its own)."""
    return GreedyRollouts(state, step).validation_curves(close, spread, windows, margins)
