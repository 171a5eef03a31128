"""Kernel loading in one place: cuda/<op>.cu → CuPy RawModule, once per process and device.

Why here and nowhere else: compiling is slow (tens of ms to seconds) and must never happen inside
the hot loop or a CUDA-graph capture, so every kernel comes from ``load_kernel``, which memoises
the compiled module per (op, device). Sources get a ``#line`` directive so compiler errors name
the real file, and ``-I cuda/`` so ``#include "generated/layout.cuh"`` and ``"rng.cuh"`` resolve.

Launches go on torch's *current* stream (``launch``), so a kernel launched inside
``torch.cuda.graph(...)`` is captured with the torch ops around it. CuPy is imported lazily: the
CPU path of the trainer needs only torch.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import torch

CUDA_DIR = Path(__file__).resolve().parent.parent.parent / "cuda"
# --fmad=false: no fused multiply-add contraction, so kernels round like the torch references.
COMPILE_OPTIONS = ("-std=c++17", "--fmad=false")
BLOCK_SIZE = 256

_modules: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def kernel_source(op: str) -> str:
    """Source of cuda/<op>.cu with a #line directive naming the real file.

    The first line fingerprints every header under cuda/: CuPy's on-disk kernel cache is keyed by
    the source text and options only, not by the files it #includes, so without it a regenerated
    ``generated/layout.cuh`` would silently reuse kernels compiled against the old layout.
    """
    path = CUDA_DIR / f"{op}.cu"
    if not path.is_file():
        known = sorted(p.stem for p in CUDA_DIR.glob("*.cu"))
        raise FileNotFoundError(f"no kernel source for op {op!r} ({path} vs {known}) — hint: add cuda/{op}.cu")
    return f"// cuda headers sha256 {headers_digest()}\n" + f'#line 1 "{path.as_posix()}"\n' + path.read_text(
        encoding="utf-8"
    )


def headers_digest() -> str:
    """sha256 over the path and content of every .cuh under cuda/ (in sorted order)."""
    digest = hashlib.sha256()
    for header in sorted(CUDA_DIR.rglob("*.cuh")):
        digest.update(header.relative_to(CUDA_DIR).as_posix().encode() + b"\0" + header.read_bytes() + b"\0")
    return digest.hexdigest()


def compile_options() -> tuple[str, ...]:
    return (*COMPILE_OPTIONS, f"-I{CUDA_DIR.as_posix()}")


def load_module(op: str, device_index: int) -> Any:
    """The compiled RawModule for ``op`` on ``device_index`` (compiled on first use, then memoised)."""
    key = (op, device_index)
    module = _modules.get(key)
    if module is not None:
        return module
    with _lock:
        module = _modules.get(key)
        if module is None:
            import cupy

            with cupy.cuda.Device(device_index):
                module = cupy.RawModule(code=kernel_source(op), options=compile_options())
                module.compile()
            _modules[key] = module
    return module


def load_kernel(op: str, function: str, device: torch.device) -> Any:
    """The ``extern "C" __global__`` function ``function`` of cuda/<op>.cu on ``device``."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    return load_module(op, index).get_function(function)


def launch(kernel: Any, n_threads: int, args: tuple[Any, ...], device: torch.device, agents: int = 1) -> None:
    """Launch a grid covering ``n_threads`` on torch's current stream (captured in torch graphs).

    ``agents`` > 1 adds a second grid dimension, one row of blocks per agent of a population
    (``blockIdx.y`` is the agent): the adaptive kernels take a leading agent dimension that way."""
    if n_threads <= 0 or agents <= 0:
        return
    import cupy

    stream = _cupy_stream(torch.cuda.current_stream(device))
    blocks = (n_threads + BLOCK_SIZE - 1) // BLOCK_SIZE
    grid = (blocks,) if agents == 1 else (blocks, agents)
    with cupy.cuda.Device(device.index if device.index is not None else torch.cuda.current_device()), stream:
        kernel(grid, (BLOCK_SIZE,), args)


_streams: dict[int, Any] = {}


def _cupy_stream(torch_stream: torch.cuda.Stream) -> Any:
    """CuPy view of a torch stream, memoised by handle (the torch stream object is kept alive)."""
    import cupy

    handle = torch_stream.cuda_stream
    stream = _streams.get(handle)
    if stream is None:
        if hasattr(torch_stream, "__cuda_stream__"):
            stream = cupy.cuda.Stream.from_external(torch_stream)
        else:  # torch without the CUDA stream protocol
            stream = cupy.cuda.ExternalStream(handle)
        _streams[handle] = stream
    return stream


def agent_rows(tensor: torch.Tensor, row_dims: int) -> torch.Tensor:
    """``tensor`` with a leading agent dimension: one agent's ``[*row]`` → ``[1, *row]`` (a view),
    a population's ``[agents, *row]`` as it is (``row_dims``: the dimensions of one agent's row).

    The adaptive kernels' convention: every state argument has one row per agent of a population,
    and a single run is a population of one."""
    return tensor.unsqueeze(0) if tensor.dim() == row_dims else tensor


def pointer(tensor: torch.Tensor) -> Any:
    """A kernel argument for ``tensor``'s data (contiguous CUDA tensors only)."""
    import numpy as np

    if not tensor.is_cuda or not tensor.is_contiguous():
        raise ValueError(
            f"kernel argument is not a contiguous CUDA tensor (device={tensor.device}, "
            f"contiguous={tensor.is_contiguous()} vs cuda, True) — hint: call .contiguous() on the device"
        )
    return np.uint64(tensor.data_ptr())


def compile_to_ptx(op: str, arch: str = "compute_90") -> str:
    """Compile cuda/<op>.cu to PTX with NVRTC (needs no GPU): the CI compile check."""
    from cupy.cuda import nvrtc

    source = kernel_source(op)
    prog = nvrtc.createProgram(source, f"{op}.cu", [], [])
    try:
        options = [*compile_options(), f"--gpu-architecture={arch}"]
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError as error:
            log = nvrtc.getProgramLog(prog)
            raise RuntimeError(f"kernel {op} does not compile ({error} vs success):\n{log}") from error
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)
