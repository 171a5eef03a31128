"""Run the training step: captured once in a CUDA graph and replayed, or eagerly.

Why capture: a step is a few hundred small kernels (network forward/backward for acting and
learning, the env kernel, replay, Adam, the Polyak update); launched one by one from Python, the
launch overhead dominates. Replaying a captured graph launches them all with one call. Capture
works because the step has no host reads, no Python branch on device values, a capturable Adam
with a device-tensor learning rate, and draws its random numbers from a counter that it advances
on the device (so replays never repeat numbers).

Modes: ``graph`` (CUDA only), ``eager`` (same code, uncaptured; CUDA or CPU). The CPU always runs
eagerly with the PyTorch reference ops. ``run_on_side_stream`` and ``capture_graph`` are the two
halves of a capture (eager warm-up, then the recording); the epoch boundary's greedy rollout
(``trainer.train.validate``) captures its bar with them too.

Populations: the runner steps every agent of a population (``run.agents``) with one
``trainer.train.population.PopulationStep``: every agent's state stacked over a leading agent
dimension, one set of kernels for all of them, so the one capture is one graph whose length does
not grow with the agents (docs/trainer-population.md).

Why graph mode resumes bitwise: the first ``WARMUP_STEPS`` steps of a runner are real training
steps run eagerly (on a side stream), then the step is captured once. A resumed run therefore
runs its first few steps eagerly where the uninterrupted run replays its graph; that is exact
because a replay launches the very kernels the eager step launches, with the same arguments and
on buffers of the same alignment, and capturing itself runs nothing on the device. What could
still differ between the two processes is cuBLAS's choice of GEMM algorithm, which depends on
the workspace it is given: ``pin_cublas_workspace`` fixes that size for the process (see
docs/trainer.md, "Determinism and resume").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import torch

from trainer.train.population import PopulationStep
from trainer.train.step import TrainStep

WARMUP_STEPS = 3  # eager steps on a side stream before capture (kernel compilation, allocator)
# cuBLAS workspace per stream: 8 buffers of 4096 KiB (32 MiB). One of the two settings NVIDIA
# documents as reproducible across streams, the one PyTorch's deterministic mode accepts, and the
# size PyTorch already picks by default on Hopper; pinning it makes the GEMM algorithm choice the
# same in the stopped and the resumed process whatever the GPU generation.
CUBLAS_WORKSPACE_CONFIG = ":4096:8"


def pin_cublas_workspace() -> str:
    """Fix the cuBLAS workspace size of this process (unless the user already set one); returns it.

    PyTorch reads ``CUBLAS_WORKSPACE_CONFIG`` once, when the process first uses cuBLAS, so this
    must run before the first matrix product on the GPU: ``trainer.train.loop.train`` and every
    ``StepRunner`` call it before the step runs. A value set in the environment wins (the same
    value must then be set for the stopped and the resumed run).
    """
    return os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE_CONFIG)


class StepRunner:
    """Calls the training step of every agent ``steps`` times, replaying one captured graph when ``use_graph``.

    ``step`` is one ``TrainStep`` (a single run: that step itself, unchanged) or the steps of a
    population's agents, which one ``PopulationStep`` steps together: all their state stacked along
    a leading agent dimension (networks, optimizer, ISV, environments, window, replay, random
    streams), the whole step one set of batched kernels for every agent.
    """

    def __init__(self, step: TrainStep | Sequence[TrainStep], use_graph: bool) -> None:
        self.steps = [step] if isinstance(step, TrainStep) else list(step)
        if not self.steps:
            raise ValueError("StepRunner needs a step (0 agents vs ≥ 1) — hint: pass a TrainStep or a list of them")
        self.step = self.steps[0]
        self.device = self.step.state.device
        self.use_graph = use_graph and self.device.type == "cuda"
        self.graph: torch.cuda.CUDAGraph | None = None
        self.warmup_done = 0  # eager warm-up steps taken so far (capture once they reach WARMUP_STEPS)
        # A population takes over its agents' network and optimizer storage here, before any capture.
        self.step_all: Callable[[], None] = self.step if len(self.steps) == 1 else PopulationStep(self.steps)
        if self.device.type == "cuda":
            pin_cublas_workspace()

    @property
    def mode(self) -> str:
        return "graph" if self.use_graph else "eager"

    def run(self, steps: int) -> None:
        """Run ``steps`` training steps of every agent (the first call in graph mode warms up and captures)."""
        remaining = steps
        if self.use_graph and self.graph is None:
            remaining -= self._warm_up_and_capture(remaining)
        for _ in range(remaining):
            if self.graph is not None:
                self.graph.replay()
            else:
                self.step_all()
        for step in self.steps:
            step.state.steps_done += steps
            step.state.collect_steps += steps

    def _warm_up_and_capture(self, budget: int) -> int:
        """Eager warm-up steps (real steps, counted), then capture; returns the steps taken.

        Warm-up steps add up across calls, so a loop that runs fewer than ``WARMUP_STEPS`` steps
        per call (``run.epoch_steps`` of 1 or 2) still captures on a later call instead of staying
        eager for the whole run.
        """
        warmup = min(WARMUP_STEPS - self.warmup_done, budget)
        run_on_side_stream(self.step_all, warmup, self.device)
        self.warmup_done += warmup
        if self.warmup_done < WARMUP_STEPS:
            return warmup  # too few steps so far to make capturing worth it; stay eager for now
        self.graph = capture_graph(self.step_all)  # records the kernels; runs nothing
        return warmup


def run_on_side_stream(body: Callable[[], None], calls: int, device: torch.device) -> None:
    """Call ``body`` eagerly ``calls`` times on a fresh side stream, ordered after and before the
    current stream's work: the warm-up torch prescribes before a capture (kernels compile, cuBLAS
    handles and the allocator's first blocks are made here, never inside the capture)."""
    current = torch.cuda.current_stream(device)
    side = torch.cuda.Stream(device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(calls):
            body()
    current.wait_stream(side)


def capture_graph(body: Callable[[], None]) -> torch.cuda.CUDAGraph:
    """One call of a capture-safe ``body`` (no host reads, no Python branch on device values)
    recorded as a CUDA graph; the capture runs nothing on the device. Every tensor ``body`` reads or
    writes must outlive the graph at the same address: a replay works on those very buffers."""
    graph = torch.cuda.CUDAGraph()
    # "thread_local": only this thread's unsafe calls end the capture — the checkpoint writer's
    # thread may be waiting on a copy's event meanwhile (a rollout is captured at an epoch boundary).
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        body()
    return graph
