"""Run the training step: captured once in a CUDA graph and replayed, or eagerly.

Why capture: a step is a few hundred small kernels (network forward/backward for acting and
learning, the env kernel, replay, Adam, the Polyak update); launched one by one from Python, the
launch overhead dominates. Replaying a captured graph launches them all with one call. Capture
works because the step has no host reads, no Python branch on device values, a capturable Adam
with a device-tensor learning rate, and draws its random numbers from a counter that it advances
on the device (so replays never repeat numbers).

Modes: ``graph`` (CUDA only), ``eager`` (same code, uncaptured; CUDA or CPU). The CPU always runs
eagerly with the PyTorch reference ops.
"""

from __future__ import annotations

import torch

from trainer.train.step import TrainStep

WARMUP_STEPS = 3  # eager steps on a side stream before capture (kernel compilation, allocator)


class StepRunner:
    """Calls the training step ``steps`` times, replaying a captured graph when ``use_graph``."""

    def __init__(self, step: TrainStep, use_graph: bool) -> None:
        self.step = step
        self.device = step.state.device
        self.use_graph = use_graph and self.device.type == "cuda"
        self.graph: torch.cuda.CUDAGraph | None = None

    @property
    def mode(self) -> str:
        return "graph" if self.use_graph else "eager"

    def run(self, steps: int) -> None:
        """Run ``steps`` training steps (the first call in graph mode warms up and captures)."""
        remaining = steps
        if self.use_graph and self.graph is None:
            remaining -= self._warm_up_and_capture(remaining)
        for _ in range(remaining):
            if self.graph is not None:
                self.graph.replay()
            else:
                self.step()
        self.step.state.steps_done += steps
        self.step.state.collect_steps += steps

    def _warm_up_and_capture(self, budget: int) -> int:
        """Eager warm-up steps (real steps, counted), then capture; returns the steps taken."""
        warmup = min(WARMUP_STEPS, budget)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(warmup):
                self.step()
        torch.cuda.current_stream(self.device).wait_stream(side)
        if warmup < WARMUP_STEPS:
            return warmup  # too few steps left to make capturing worth it; stay eager for now
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.step()
        self.graph = graph
        return warmup
