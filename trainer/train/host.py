"""Process settings of a run on the CPU: torch's thread count and the C allocator's thresholds.

Why the allocator: a CPU training step allocates and frees the same few dozen tensors of
0.5–6 MB every update (the C51 projection's [D·B, N, N] weights, the scan's per-bar states,
their gradients). glibc's malloc serves blocks above its mmap threshold with a fresh ``mmap``
and gives freed memory at the top of the heap back to the kernel once more than the trim
threshold is free; either way the next update touches new pages, and the kernel zeroes every
one of them. Measured on the default config (1 thread): about 3,600 page faults and 25 % of the
learn step's CPU time per update went there. Raising both thresholds keeps those blocks in the
heap, so each update reuses the pages of the last one. It changes where tensors live, never
what is computed: results stay bitwise identical. A C library without ``mallopt`` (macOS,
musl) keeps its own behaviour.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import torch

M_TRIM_THRESHOLD = -1  # glibc malloc.h parameter numbers
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20  # blocks below this come from the heap (glibc's largest accepted value)
TRIM_THRESHOLD_BYTES = 512 << 20  # free heap kept for reuse before any is returned to the kernel


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; False where there is no mallopt."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


def prepare_cpu_process(threads: int) -> None:
    """Before a CPU run builds its state: ``threads`` torch threads (at least 1), the allocator kept warm."""
    torch.set_num_threads(max(1, threads))
    keep_freed_memory()
