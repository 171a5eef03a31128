"""Where cells run: Ray tasks (the default; local or a cluster) or a local process pool.

Both executors take the same task specs (one cell, or a population of cells) and call the same
``run_task``; they differ only in who schedules the processes. ``submit`` returns at once; ``wait`` yields finished results as
they come (with a timeout, so the driver can refresh its progress display in between).

Ray: ``ray.init()`` starts a local instance on this machine's cores with no set-up (no dashboard,
worker logs stay in Ray's log directory so they do not interleave with the progress display);
``address`` joins an existing cluster (the sweep directory must then be on a filesystem every node
sees). A CUDA cell asks for ``gpu_fraction`` of a GPU so several cells share one device.

Local: a ``ProcessPoolExecutor`` (spawned processes, so no CUDA or torch thread state is
inherited); on Linux each worker asks the kernel to kill it when the driver dies, so a SIGKILL'd
driver leaves no orphan writing into a cell directory.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterator, Mapping
from concurrent import futures
from typing import Any

from trainer.errors import UserError
from trainer.validate.cells import run_task

PR_SET_PDEATHSIG = 1
SIGKILL = 9


class LocalExecutor:
    """Cells in a pool of ``jobs`` local processes."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.pool = futures.ProcessPoolExecutor(
            max_workers=max(1, jobs), mp_context=multiprocessing.get_context("spawn"), initializer=_die_with_parent
        )
        self.pending: dict[futures.Future, str] = {}

    def submit(self, task_id: str, spec: Mapping[str, Any], uses_gpu: bool, gpus: float = 0.0) -> None:
        self.pending[self.pool.submit(run_task, dict(spec))] = task_id

    def wait(self, timeout: float) -> Iterator[tuple[str, list[dict[str, Any]] | BaseException]]:
        done, _ = futures.wait(list(self.pending), timeout=timeout, return_when=futures.FIRST_COMPLETED)
        for future in done:
            task_id = self.pending.pop(future)
            error = future.exception()
            yield task_id, error if error is not None else future.result()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def _die_with_parent() -> None:
    """Worker initializer: SIGKILL this worker when the driver process dies (Linux prctl)."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the driver died before the call
            os._exit(1)


class RayExecutor:
    """Cells as Ray tasks on a local instance or on the cluster at ``address``."""

    name = "ray"

    def __init__(self, address: str | None, num_cpus: int | None, gpu_fraction: float) -> None:
        try:
            import ray
        except ImportError as error:
            raise UserError(
                "Ray is not installed", got="no module named ray", expected="ray (a dependency of foxhunt)",
                hint="python3 -m pip install 'ray==2.60.*', or run with --executor local",
            ) from error  # fmt: skip
        self.ray = ray
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        self.started_here = not address
        self.gpu_fraction = gpu_fraction
        self.task = ray.remote(max_retries=0)(run_task)
        self.pending: dict[Any, str] = {}

    def submit(self, task_id: str, spec: Mapping[str, Any], uses_gpu: bool, gpus: float = 0.0) -> None:
        """``gpus``: the task's share of a GPU (0 = ``gpu_fraction``; a population asks for more)."""
        options: dict[str, Any] = {"num_cpus": 1}
        if uses_gpu:
            options["num_gpus"] = gpus or self.gpu_fraction
        self.pending[self.task.options(**options).remote(dict(spec))] = task_id

    def wait(self, timeout: float) -> Iterator[tuple[str, list[dict[str, Any]] | BaseException]]:
        if not self.pending:
            return
        ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=timeout)
        for ref in ready:
            task_id = self.pending.pop(ref)
            try:
                yield task_id, self.ray.get(ref)
            except Exception as error:  # the task's process died (out of memory, killed)
                yield task_id, error

    def close(self) -> None:
        for ref in self.pending:
            self.ray.cancel(ref, force=True)
        if self.started_here:
            self.ray.shutdown()


def make_executor(kind: str, *, jobs: int, address: str | None, gpu_fraction: float):
    if kind == "ray":
        return RayExecutor(address, jobs if not address else None, gpu_fraction)
    if kind == "local":
        return LocalExecutor(jobs)
    raise UserError("unknown executor", got=kind, expected="ray or local", hint="pass --executor ray or --executor local")
