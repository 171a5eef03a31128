"""Checkpoints: every tensor of a run in safetensors, plus a JSON manifest; atomic, verified on load.

Why this format: safetensors cannot execute code on load (unlike pickle) and maps tensors by name,
which is what ``TrainerState.named_tensors`` provides. The manifest carries the layout
fingerprint, the resolved config, the host-side counters and a SHA-256 of the tensor file, so a
checkpoint from another layout fails with "retrain required" and a damaged file fails with a clear
message instead of loading garbage. Both files are written to a temporary name in the same
directory and moved into place with ``os.replace``; the manifest goes last, so a checkpoint
exists only once it is whole.

A resumed run restores network, target network, optimizer moments, replay buffer, n-step window,
RNG counter, ISV, environment state and the host counters, so it continues exactly where the
stopped run was (bitwise-identical on the same device).

"The same device" is more than the device type: the GPU model, the torch/CUDA build, the cuBLAS
workspace and the fp32 matmul precision all pick the arithmetic. The manifest records them
(``numerics``) and a resume under other numerics warns that it will not be bitwise-identical to
the uninterrupted run (it still resumes: the run is valid, only not a bit-exact continuation).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trainer.errors import LayoutMismatchError, UserError
from trainer.files import write_bytes_atomic
from trainer.isv import check_fingerprint
from trainer.layout import LAYOUT_FINGERPRINT
from trainer.train.step import TrainerState

FORMAT_VERSION = 1
TENSORS_SUFFIX = ".safetensors"
MANIFEST_SUFFIX = ".json"
CHECKPOINT_PREFIX = "step-"


class CheckpointError(UserError):
    """A checkpoint that cannot be used (missing, corrupt, or made for another configuration)."""


class ResumeNumericsWarning(UserWarning):
    """A resume whose arithmetic differs from the stopped run's: valid, but not bitwise-identical."""


def numerics(device: torch.device) -> dict[str, Any]:
    """What decides the bits a step produces besides the state: device, build, GEMM settings."""
    record: dict[str, Any] = {
        "device": device.type,
        "torch": torch.__version__,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        record.update({
            "gpu": properties.name,
            "multiprocessors": properties.multi_processor_count,
            "cuda": torch.version.cuda,
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        })  # fmt: skip
    return record


def warn_if_numerics_differ(saved: dict[str, Any] | None, device: torch.device) -> list[str]:
    """Warn (ResumeNumericsWarning) when the resuming process computes differently; returns the
    differing keys. A manifest without a record (written before it existed) is not compared."""
    if not saved:
        return []
    current = numerics(device)
    differing = sorted(key for key in set(saved) | set(current) if saved.get(key) != current.get(key))
    if differing:
        detail = ", ".join(f"{key} {current.get(key)!r} vs {saved.get(key)!r}" for key in differing)
        warnings.warn(
            f"resuming with other numerics than the stopped run ({detail}) — hint: the run continues, but "
            f"bitwise identity with an uninterrupted run needs the same GPU, torch/CUDA build and settings",
            ResumeNumericsWarning,
            stacklevel=3,
        )
    return differing


def checkpoint_paths(directory: Path, steps: int, name: str | None = None) -> tuple[Path, Path]:
    stem = name or f"{CHECKPOINT_PREFIX}{steps:010d}"
    return directory / f"{stem}{TENSORS_SUFFIX}", directory / f"{stem}{MANIFEST_SUFFIX}"


@dataclass
class Snapshot:
    """Host copies of a state's tensors and counters at one cold point: what a checkpoint writes.

    On CUDA the copies land in pinned buffers, enqueued on the current stream behind the work that
    produced the values (``ready`` is recorded after them): the host thread launches on while the
    copies run, and whoever writes the files waits for ``ready`` first.
    """

    tensors: dict[str, torch.Tensor]
    steps_done: int
    collect_steps: int
    epoch: int
    config: dict[str, Any]
    device: torch.device
    ready: torch.cuda.Event | None = None

    def wait_ready(self) -> None:
        if self.ready is not None:
            self.ready.synchronize()


def take_snapshot(
    state: TrainerState, only: tuple[str, ...] | None = None, pinned: dict[str, torch.Tensor] | None = None
) -> Snapshot:
    """Copy the state (``only``: the tensors whose names start with one of these prefixes).

    ``pinned`` (CUDA only) holds reusable page-locked buffers by tensor name; missing ones are
    allocated. Without it every tensor is copied synchronously into fresh host memory.
    """
    named = {key: tensor for key, tensor in state.named_tensors().items() if only is None or key.startswith(only)}
    ready = None
    if state.device.type == "cuda" and pinned is not None:
        # The ISV is mapped host memory that the host writes once the loop goes on (the next epoch's
        # index): it is copied now, through its host view, after the kernels that wrote it. At an epoch
        # boundary the stream has drained already (the boundary's reads), so this waits for little.
        torch.cuda.current_stream(state.device).synchronize()
        tensors = {}
        for key, tensor in named.items():
            if tensor is state.isv.tensor:
                tensors[key] = state.isv.host.clone()
                continue
            buffer = pinned.get(key)
            if buffer is None or buffer.shape != tensor.shape or buffer.dtype != tensor.dtype:
                buffer = pinned[key] = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
            buffer.copy_(tensor.detach(), non_blocking=True)
            tensors[key] = buffer
        ready = torch.cuda.Event()
        ready.record(torch.cuda.current_stream(state.device))
    else:
        if state.device.type == "cuda":
            torch.cuda.synchronize(state.device)
        tensors = {key: tensor.detach().to("cpu", copy=True).contiguous() for key, tensor in named.items()}
    return Snapshot(tensors, state.steps_done, state.collect_steps, state.epoch, state.config.to_dict(), state.device, ready)


def write_snapshot(
    snapshot: Snapshot,
    directory: str | Path,
    extra: dict[str, Any] | None = None,
    keep: int = 2,
    name: str | None = None,
    only: tuple[str, ...] | None = None,
) -> Path:
    """Write a snapshot as a checkpoint (tensor file, then manifest, both atomic); returns the manifest.

    ``only`` keeps just the snapshot's tensors whose names start with these prefixes (and is
    recorded in the manifest); ``name`` and ``keep`` as in ``save_checkpoint``.
    """
    from safetensors.torch import save

    directory = Path(directory)
    snapshot.wait_ready()
    tensors = {key: tensor for key, tensor in snapshot.tensors.items() if only is None or key.startswith(only)}
    payload = save(tensors)
    tensor_path, manifest_path = checkpoint_paths(directory, snapshot.steps_done, name)
    write_bytes_atomic(tensor_path, payload)
    manifest = {
        "format": FORMAT_VERSION,
        "layout_fingerprint": f"0x{LAYOUT_FINGERPRINT:016x}",
        "tensors": tensor_path.name,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "device": snapshot.device.type,
        "steps_done": snapshot.steps_done,
        "collect_steps": snapshot.collect_steps,
        "epoch": snapshot.epoch,
        "config": snapshot.config,
        "torch": torch.__version__,
        "numerics": numerics(snapshot.device),
        "extra": extra or {},
        "only": list(only) if only is not None else None,
    }
    write_bytes_atomic(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode())
    if name is None:
        _prune(directory, keep)
    return manifest_path


def save_checkpoint(
    state: TrainerState,
    directory: str | Path,
    extra: dict[str, Any] | None = None,
    keep: int = 2,
    name: str | None = None,
    only: tuple[str, ...] | None = None,
) -> Path:
    """Write the state now (a cold point: copies every tensor to the host); returns the manifest path.

    ``name`` writes a named checkpoint (``best``: the selected epoch) beside the periodic
    ``step-*`` ones; named checkpoints are never pruned and never picked by ``latest_checkpoint``.
    ``only`` keeps just the tensors whose names start with one of these prefixes (the selected
    network needs no replay ring: on the GPU config that is the difference between megabytes and
    hundreds of megabytes per save).
    """
    return write_snapshot(take_snapshot(state, only), directory, extra=extra, keep=keep, name=name, only=only)


class CheckpointWriter:
    """The training loop's checkpoints, written by one background thread off the critical path.

    Why: serialising, hashing and fsyncing every tensor of a GPU run (the replay ring alone is
    hundreds of megabytes) took the device's time at every epoch boundary. ``save`` takes the
    snapshot at the cold point — into reused pinned buffers on CUDA, so the copies overlap the next
    steps — and returns at once; the thread writes the files with ``write_snapshot`` (atomic, as
    ever). One write is in flight at most: ``save`` first waits for the previous one, because its
    snapshot buffers are about to be reused. ``wait`` (the loop calls it before reading a
    checkpoint back, before reporting a save to ``RunControl`` on a stop, and before the run
    returns) joins the thread and re-raises a failed write's error — the same ``OSError`` or
    ``CheckpointError`` a synchronous save raises, which the CLI prints as one line.
    """

    def __init__(self) -> None:
        self._pinned: dict[str, torch.Tensor] = {}
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def save(
        self, state: TrainerState, directory: str | Path, extra: dict[str, Any], keep: int, best: str | None = None,
        best_only: tuple[str, ...] | None = None,
    ) -> Path:  # fmt: skip
        """Snapshot ``state`` now and write it in the background as the next periodic checkpoint
        (and, with ``best``, as that named checkpoint holding ``best_only``); returns the periodic
        manifest's path (the file exists once ``wait`` returns)."""
        self.wait()
        snapshot = take_snapshot(state, pinned=self._pinned)
        extra = json.loads(json.dumps(extra))  # the caller's dicts change while the thread writes
        directory = Path(directory)

        def write() -> None:
            try:
                write_snapshot(snapshot, directory, extra=extra, keep=keep)
                if best is not None:
                    write_snapshot(snapshot, directory, extra=extra, name=best, only=best_only)
            except BaseException as error:  # handed to the training thread by wait()
                self._error = error

        self._thread = threading.Thread(target=write, name="checkpoint-writer", daemon=True)
        self._thread.start()
        return checkpoint_paths(directory, snapshot.steps_done)[1]

    def wait(self) -> None:
        """Block until the write in flight is on disk; raise its error if it failed."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise error

    def __enter__(self) -> CheckpointWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: object) -> None:
        """Wait for the last write; its error is raised unless another one is already on its way out."""
        if exc_type is None:
            self.wait()
            return
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _prune(directory: Path, keep: int) -> None:
    manifests = sorted(directory.glob(f"{CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX}"))
    for manifest in manifests[:-keep] if keep > 0 else []:
        manifest.unlink(missing_ok=True)
        manifest.with_suffix(TENSORS_SUFFIX).unlink(missing_ok=True)


def latest_checkpoint(directory: str | Path) -> Path:
    """The newest manifest in ``directory`` (or ``directory/checkpoints``), or a CheckpointError."""
    directory = Path(directory)
    candidates = sorted(directory.glob(f"{CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX}"))
    if not candidates and (directory / "checkpoints").is_dir():
        candidates = sorted((directory / "checkpoints").glob(f"{CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX}"))
    if not candidates:
        raise CheckpointError(
            "no checkpoint to resume from", got=f"no {CHECKPOINT_PREFIX}*{MANIFEST_SUFFIX} in {directory}",
            expected="a run directory written by `trainer train`", hint="pass the --out directory of an earlier run",
        )
    return candidates[-1]


def read_manifest(manifest_path: str | Path) -> dict[str, Any]:
    manifest_path = Path(manifest_path)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CheckpointError(
            "checkpoint manifest is unreadable", got=f"{manifest_path}: {error}", expected="a JSON manifest",
            hint="the file is corrupt; resume from an older checkpoint or retrain",
        ) from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint manifest {manifest_path} has an unknown format", got=manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__,
            expected=FORMAT_VERSION, hint="it was written by another trainer version; retrain",
        )
    found = manifest.get("layout_fingerprint", "")
    try:
        fingerprint = int(str(found), 16)
    except ValueError:
        fingerprint = -1
    check_fingerprint(fingerprint, f"checkpoint {manifest_path}")
    return manifest


def annotate_manifest(manifest_path: str | Path, key: str, value: Any) -> None:
    """Record ``value`` under ``extra[key]`` of a written checkpoint's manifest (atomically; its
    tensors untouched) — what a run decides about a checkpoint after writing it, such as the flat
    margin chosen for the selected epoch (``trainer.train.flat_margin``)."""
    manifest = read_manifest(manifest_path)
    manifest.setdefault("extra", {})[key] = value
    write_bytes_atomic(Path(manifest_path), (json.dumps(manifest, indent=2) + "\n").encode())


def load_checkpoint(state: TrainerState, manifest_path: str | Path, only: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Restore every tensor and host counter of ``state``; returns the manifest.

    ``only`` restores just the tensors whose names start with one of these prefixes and leaves the
    host counters alone (the selected network and its ISV for the test backtest, without rewinding
    the run).
    """
    from safetensors import SafetensorError
    from safetensors.torch import load

    manifest_path = Path(manifest_path)
    manifest = read_manifest(manifest_path)
    tensor_path = manifest_path.parent / str(manifest.get("tensors", ""))
    try:
        payload = tensor_path.read_bytes()
    except OSError as error:
        raise CheckpointError(
            "checkpoint tensors are missing", got=str(tensor_path), expected="the file named in the manifest",
            hint="copy both files of a checkpoint together",
        ) from error
    digest = hashlib.sha256(payload).hexdigest()
    if digest != manifest.get("sha256"):
        raise CheckpointError(
            f"checkpoint tensors {tensor_path} are corrupt (SHA-256 mismatch)", got=digest[:16], expected=str(manifest.get("sha256"))[:16],
            hint="the file was truncated or altered; resume from an older checkpoint or retrain",
        )
    try:
        saved = load(payload)
    except (SafetensorError, ValueError) as error:
        raise CheckpointError(
            f"checkpoint tensors {tensor_path} are unreadable", got=str(error), expected="a safetensors file",
            hint="resume from an older checkpoint or retrain",
        ) from error
    named = {key: tensor for key, tensor in state.named_tensors().items() if only is None or key.startswith(only)}
    missing = sorted(set(named) - set(saved))
    unexpected = sorted(key for key in saved if (only is None or key.startswith(only)) and key not in named)
    mismatched = sorted(n for n in set(named) & set(saved) if tuple(named[n].shape) != tuple(saved[n].shape))
    if missing or unexpected or mismatched:
        detail = "; ".join(
            part for part in (
                f"missing {missing[:4]}" if missing else "",
                f"unexpected {unexpected[:4]}" if unexpected else "",
                f"shape differs for {mismatched[:4]}" if mismatched else "",
            ) if part
        )  # fmt: skip
        raise CheckpointError(
            f"checkpoint {manifest_path} does not fit this configuration", got=detail, expected="the tensors of the current config",
            hint="resume with the config stored in the run directory (config.toml) or retrain",
        )
    with torch.no_grad():
        for name, tensor in named.items():
            if name == "isv":
                try:
                    state.isv.load_state(saved[name])  # checks the fingerprint stored in the ISV tail
                except LayoutMismatchError as error:
                    raise LayoutMismatchError(f"{tensor_path}: {error}") from error
            else:
                tensor.copy_(saved[name].to(device=tensor.device, dtype=tensor.dtype))
    warn_if_numerics_differ(manifest.get("numerics"), state.device)
    if only is not None:
        return manifest
    state.steps_done = int(manifest["steps_done"])
    state.collect_steps = int(manifest["collect_steps"])
    state.epoch = int(manifest["epoch"])
    return manifest
