"""Stopping a run without losing it: Ctrl-C / SIGTERM and periodic checkpoints between step chunks.

Why between chunks: the training step is a captured CUDA graph replayed back to back, and a
checkpoint needs a cold point. A signal therefore only sets a flag; the loop asks
``checkpoint_due()`` after every chunk of steps (a few hundred milliseconds at most), saves a
checkpoint at the current step — mid-epoch included — and ``saved()`` then raises
:class:`RunInterrupted` carrying the command that resumes the run. A second Ctrl-C while the
first is being honoured stops at once (Python's default ``KeyboardInterrupt``).

``run.checkpoint_minutes`` uses the same call site: after that many minutes since the last
checkpoint a chunk boundary saves one, so a killed long run loses at most that much work.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

# Conventional exit statuses of a process stopped by a signal: 128 + the signal number.
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class RunInterrupted(Exception):
    """The run stopped on a signal after saving a checkpoint; the message says how to resume."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class RunControl:
    """What the training loop asks between step chunks: save now? stop after saving?"""

    def __init__(self, checkpoint_minutes: float = 0.0, resume_command: str = "", clock=time.monotonic) -> None:
        self.interval_s = 60.0 * checkpoint_minutes  # 0 = no periodic checkpoints
        self.resume_command = resume_command
        self.clock = clock
        self.last_save = clock()
        self.signal: signal.Signals | None = None

    def request_stop(self, signum: int = signal.SIGINT) -> None:
        """Ask the run to checkpoint and stop at the next chunk boundary (what a signal does)."""
        self.signal = signal.Signals(signum)

    @property
    def stop_requested(self) -> bool:
        return self.signal is not None

    def checkpoint_due(self) -> bool:
        """True when the loop must save a checkpoint now (a stop was asked, or the interval passed)."""
        return self.stop_requested or (self.interval_s > 0 and self.clock() - self.last_save >= self.interval_s)

    def saved(self, manifest: Path, steps_done: int, total_steps: int) -> None:
        """The loop saved ``manifest``; raises RunInterrupted when the save was for a stop."""
        self.last_save = self.clock()
        if self.signal is None or steps_done >= total_steps:  # nothing left to resume: let the run finish
            return
        resume = f" — resume with: {self.resume_command}" if self.resume_command else ""
        raise RunInterrupted(
            f"stopped by {self.signal.name} at step {steps_done:,} of {total_steps:,}; checkpoint saved to {manifest}{resume}",
            EXIT_CODES.get(self.signal, 128 + int(self.signal)),
        )

    @contextmanager
    def handling_signals(self) -> Iterator[RunControl]:
        """Route SIGINT and SIGTERM to ``request_stop`` inside the block (previous handlers restored)."""
        previous = {signum: signal.getsignal(signum) for signum in EXIT_CODES}

        def handler(signum: int, frame: FrameType | None) -> None:
            if self.stop_requested:  # a second signal: the user does not want to wait for the checkpoint
                raise KeyboardInterrupt
            self.request_stop(signum)
            print(
                f"trainer: {signal.Signals(signum).name} — saving a checkpoint after the current steps, then "
                "stopping (press Ctrl-C again to stop at once, without it)",
                file=sys.stderr, flush=True,
            )  # fmt: skip

        for signum in EXIT_CODES:
            signal.signal(signum, handler)
        try:
            yield self
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)
