"""StateResetRegistry: every piece of training state, classified by when it is reset.

Why a registry: walk-forward validation is only honest if nothing learned from fold N's market
leaks into fold N+1 except what is meant to carry over (the network). Ad-hoc reset calls scattered
through a loop rot silently — a new buffer is added, nobody resets it, and fold N+1 starts from
fold N's statistics. Here every device buffer, ISV slot group, the optimizer, replay and the
environment state has exactly one entry, and a fold boundary iterates the registry. A buffer
without an entry fails a test that enumerates the trainer's allocations; an unknown name is an
error, never a silent no-op.

Lifecycles:

* ``FoldReset``      — back to its fresh (construction) value at every fold boundary.
* ``WindowReset``    — back to its fresh value at every window boundary (and so at every fold).
* ``SoftReset(decay_bars)`` — at a fold boundary a bootstrap value is written and the kernel's EMA
  decays from it with a horizon of ``decay_bars`` updates (α = 2 / (decay_bars + 1)), so the value
  re-adapts to the new fold without a cold start.
* ``TrainingPersist`` — carried across folds on purpose (network, target network, optimizer
  moments, RNG counters): this is what the agent *learns*.
* ``SchemaContract`` — fixed by the layout or static config (fingerprint, CQL α); a boundary
  *verifies* it instead of resetting it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from trainer.errors import UserError


class Lifecycle:
    """Base of the five reset lifecycles; instances are compared by value."""

    label = "lifecycle"

    def __repr__(self) -> str:
        return self.label


@dataclass(frozen=True, repr=False)
class FoldReset(Lifecycle):
    label = "FoldReset"


@dataclass(frozen=True, repr=False)
class WindowReset(Lifecycle):
    label = "WindowReset"


@dataclass(frozen=True, repr=False)
class SoftReset(Lifecycle):
    decay_bars: int = 100

    label = "SoftReset"

    def __post_init__(self) -> None:
        if self.decay_bars < 1:
            raise ValueError(
                f"SoftReset decay horizon too short ({self.decay_bars} vs ≥ 1 bar) — hint: give the "
                f"number of updates the EMA needs to forget the bootstrap"
            )

    @property
    def ema_rate(self) -> float:
        """α of the EMA that decays from the bootstrap: 2 / (decay_bars + 1)."""
        return 2.0 / (self.decay_bars + 1.0)

    def __repr__(self) -> str:
        return f"SoftReset({self.decay_bars})"


@dataclass(frozen=True, repr=False)
class TrainingPersist(Lifecycle):
    label = "TrainingPersist"


@dataclass(frozen=True, repr=False)
class SchemaContract(Lifecycle):
    label = "SchemaContract"


class StateKind(Enum):
    """What sort of state an entry covers (for audits and the allocation enumeration)."""

    DEVICE_BUFFER = "device_buffer"
    ISV_SLOTS = "isv_slots"
    NETWORK = "network"
    OPTIMIZER = "optimizer"
    REPLAY = "replay"
    ENV = "env"
    RNG = "rng"
    HOST = "host"


class Boundary(Enum):
    FOLD = "fold"
    WINDOW = "window"


@dataclass(frozen=True)
class StateEntry:
    """One piece of state and its dispatch arm.

    ``reset`` performs the reset in place (required for FoldReset, WindowReset, SoftReset);
    ``verify`` checks a SchemaContract and raises if it no longer holds. TrainingPersist entries
    are never reset; their optional ``carry`` arm copies the value from a previous fold's state
    into this one (when a fold builds fresh buffers for its own market). ``covers`` are the
    glob patterns of the named tensors the entry owns (default: its own name).
    """

    name: str
    lifecycle: Lifecycle
    kind: StateKind
    description: str
    reset: Callable[[], None] | None = None
    verify: Callable[[], None] | None = None
    carry: Callable[[Any], None] | None = None
    covers: tuple[str, ...] = ()

    def patterns(self) -> tuple[str, ...]:
        return self.covers or (self.name,)

    def owns(self, tensor_name: str) -> bool:
        return any(fnmatch.fnmatchcase(tensor_name, pattern) for pattern in self.patterns())

    def __post_init__(self) -> None:
        resets = isinstance(self.lifecycle, (FoldReset, WindowReset, SoftReset))
        if resets and self.reset is None:
            raise ValueError(
                f"state '{self.name}' is {self.lifecycle!r} without a reset arm (none vs a callable) "
                f"— hint: pass reset= that restores its fresh or bootstrap value"
            )
        if isinstance(self.lifecycle, SchemaContract) and self.verify is None:
            raise ValueError(
                f"state '{self.name}' is SchemaContract without a verify arm (none vs a callable) — "
                f"hint: pass verify= that raises when the contract is broken"
            )
        if not isinstance(self.lifecycle, TrainingPersist) and self.carry is not None:
            raise ValueError(
                f"state '{self.name}' is {self.lifecycle!r} but has a carry arm (callable vs none) — "
                f"hint: only TrainingPersist state is carried across folds"
            )
        if isinstance(self.lifecycle, TrainingPersist) and (self.reset or self.verify):
            raise ValueError(
                f"state '{self.name}' is TrainingPersist but has a reset/verify arm (callable vs "
                f"none) — hint: persisted state is never reset; pick FoldReset if it must be"
            )


class UnknownStateError(UserError, KeyError):
    """A reset was requested for a name the registry does not know."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.render()


class StateResetRegistry:
    """The table of every piece of training state; fold and window boundaries iterate it."""

    def __init__(self) -> None:
        self._entries: dict[str, StateEntry] = {}

    def register(self, entry: StateEntry) -> StateEntry:
        if entry.name in self._entries:
            raise ValueError(
                f"state '{entry.name}' registered twice (2 entries vs exactly 1) — hint: each piece "
                f"of state has one lifecycle"
            )
        self._entries[entry.name] = entry
        return entry

    def add(
        self,
        name: str,
        lifecycle: Lifecycle,
        kind: StateKind,
        description: str,
        *,
        reset: Callable[[], None] | None = None,
        verify: Callable[[], None] | None = None,
        carry: Callable[[Any], None] | None = None,
        covers: tuple[str, ...] = (),
    ) -> StateEntry:
        return self.register(StateEntry(name, lifecycle, kind, description, reset, verify, carry, covers))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[StateEntry]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def lookup(self, name: str) -> StateEntry:
        try:
            return self._entries[name]
        except KeyError:
            close = [known for known in self._entries if name.split(".")[0] in known][:5]
            raise UnknownStateError(
                f"unknown training state {name!r}",
                got=name,
                expected=f"one of {len(self._entries)} registered names"
                + (f", e.g. {', '.join(close)}" if close else ""),
                hint="add a StateResetRegistry entry with a lifecycle and a reset arm for it",
            ) from None

    def category(self, name: str) -> Lifecycle:
        return self.lookup(name).lifecycle

    def with_lifecycle(self, lifecycle_type: type[Lifecycle]) -> list[StateEntry]:
        return [entry for entry in self._entries.values() if isinstance(entry.lifecycle, lifecycle_type)]

    def reset_named_state(self, name: str) -> str:
        """Dispatch one entry by its lifecycle; returns what was done (reset/soft/kept/verified)."""
        entry = self.lookup(name)
        lifecycle = entry.lifecycle
        if isinstance(lifecycle, (FoldReset, WindowReset)):
            entry.reset()  # type: ignore[misc]  # __post_init__ guarantees the arm
            return "reset"
        if isinstance(lifecycle, SoftReset):
            entry.reset()  # type: ignore[misc]
            return "soft"
        if isinstance(lifecycle, SchemaContract):
            entry.verify()  # type: ignore[misc]
            return "verified"
        return "kept"

    def reset_boundary(self, boundary: Boundary) -> dict[str, str]:
        """Reset everything a fold (or window) boundary resets; returns name → action taken.

        A fold boundary resets FoldReset, WindowReset and SoftReset entries and verifies every
        SchemaContract; a window boundary resets WindowReset entries only.
        """
        actions: dict[str, str] = {}
        for entry in self._entries.values():
            lifecycle = entry.lifecycle
            if boundary is Boundary.WINDOW and not isinstance(lifecycle, WindowReset):
                continue
            if isinstance(lifecycle, TrainingPersist):
                actions[entry.name] = "kept"
                continue
            actions[entry.name] = self.reset_named_state(entry.name)
        return actions

    def reset_fold(self) -> dict[str, str]:
        return self.reset_boundary(Boundary.FOLD)

    def reset_window(self) -> dict[str, str]:
        return self.reset_boundary(Boundary.WINDOW)

    def carry_from(self, previous: Any) -> list[str]:
        """Copy every TrainingPersist entry that has a carry arm from ``previous`` (a fold's state)."""
        carried = []
        for entry in self._entries.values():
            if isinstance(entry.lifecycle, TrainingPersist) and entry.carry is not None:
                entry.carry(previous)
                carried.append(entry.name)
        return carried

    def start_fold(self, previous: Any | None = None) -> dict[str, str]:
        """A fold boundary: carry persisted state over from ``previous`` (when given), then reset,
        soft-reset and verify everything else — carrying first, so resets that draw random numbers
        (env start offsets) use the carried RNG counter and never repeat an earlier fold's draws."""
        carried = self.carry_from(previous) if previous is not None else []
        actions = self.reset_fold()
        for name in carried:
            actions[name] = "carried"
        return actions

    def owners(self, tensor_name: str) -> list[StateEntry]:
        """Entries whose ``covers`` patterns match one named tensor."""
        return [entry for entry in self._entries.values() if entry.owns(tensor_name)]

    def missing(self, allocated: Iterable[str]) -> list[str]:
        """Allocated state with no owning entry (what the wire-up test fails on)."""
        return sorted(name for name in allocated if not self.owners(name))

    def ambiguous(self, allocated: Iterable[str]) -> dict[str, list[str]]:
        """Allocated state owned by more than one entry (each piece has exactly one lifecycle)."""
        out = {}
        for name in allocated:
            owners = self.owners(name)
            if len(owners) > 1:
                out[name] = [entry.name for entry in owners]
        return out

    def require_complete(self, allocated: Iterable[str]) -> None:
        allocated = list(allocated)
        doubled = self.ambiguous(allocated)
        if doubled:
            raise UserError(
                "training state with more than one StateResetRegistry entry",
                got="; ".join(f"{name}: {', '.join(owners)}" for name, owners in doubled.items()),
                expected="exactly one entry each",
                hint="narrow the covers patterns so each tensor has one lifecycle",
            )
        absent = self.missing(allocated)
        if absent:
            raise UserError(
                "training state without a StateResetRegistry entry",
                got=", ".join(absent),
                expected="every allocation registered",
                hint="register each with a lifecycle (FoldReset, WindowReset, SoftReset, "
                "TrainingPersist, SchemaContract) and its reset arm",
            )

    def table(self) -> list[dict[str, str]]:
        """Rows for docs and audits: name, lifecycle, kind, description."""
        return [
            {
                "name": entry.name,
                "lifecycle": repr(entry.lifecycle),
                "kind": entry.kind.value,
                "description": entry.description,
            }
            for entry in self._entries.values()
        ]


# ---------------------------------------------------------------------------------------------
# The trainer's table. Every GPU-computed ISV slot must appear in ISV_LIFECYCLES: a slot added to
# the layout without a lifecycle makes build_trainer_registry fail with the slot's name.

def isv_lifecycles(params: Any) -> dict[str, Lifecycle]:
    """Lifecycle of every GPU-computed ISV slot; SoftReset horizons are the kernels' EMA horizons."""
    return {
        "TAU": FoldReset(),
        "GAMMA": FoldReset(),
        "EPSILON": FoldReset(),
        "KELLY_CAP": FoldReset(),
        "TRAINING_PROGRESS": FoldReset(),
        "ATOM_CENTRE": SoftReset(params.atoms.decay_bars),
        "ATOM_HALF_WIDTH": SoftReset(params.atoms.decay_bars),
        "Q_MEAN_DRIFT_EMA": SoftReset(params.atoms.drift_decay_bars),
        "LEARNING_HEALTH": SoftReset(params.health.health_decay_bars),
        "SHARPE_EMA": SoftReset(params.health.sharpe_decay_bars),
        "GRAD_NORM_EMA": SoftReset(params.health.grad_decay_bars),
    }


ISV_TENSOR_NAME = "isv"


def isv_slot_state_name(slot_name: str) -> str:
    return f"{ISV_TENSOR_NAME}:{slot_name}"


def allocation_names(named_tensors: Iterable[str], host_counters: Iterable[str] = ()) -> list[str]:
    """The names the registry must cover: every named tensor, the ISV expanded into its slots (each
    slot group has its own lifecycle), and the host-side counters."""
    from trainer.layout import ISV, Writer

    names: list[str] = []
    for name in named_tensors:
        if name == ISV_TENSOR_NAME:
            names.extend(isv_slot_state_name(slot.name) for slot in ISV.slots if slot.writer is not Writer.FINGERPRINT)
            names.append(isv_slot_state_name("FINGERPRINT"))
        else:
            names.append(name)
    names.extend(f"host.{counter}" for counter in host_counters)
    return names


PERSISTED_HOST_COUNTERS = {
    "steps_done": "training steps over the whole run (collect + update)",
    "epoch": "epochs finished over the whole run (HEALTH_DIAG's epoch index)",
}
FOLD_HOST_COUNTERS = {
    "collect_steps": "steps that acted in the envs: gates storing until the n-step window is full",
}


def host_counters(state: Any) -> list[str]:
    """The plain-int attributes of a trainer state: host-side training state the registry must cover."""
    return sorted(name for name, value in vars(state).items() if type(value) is int and not name.startswith("_"))


def _zero_matching(named_of: Callable[[], dict[str, Any]], patterns: tuple[str, ...]) -> Callable[[], None]:
    """A reset arm: zero the state's tensors whose names match, looked up when it runs (a stacked
    population re-points an agent's tensors at rows of its shared buffers after the registry is built)."""

    def zero() -> None:
        for name, tensor in named_of().items():
            if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                tensor.zero_()

    return zero


def _copy_matching(named_of: Callable[[], dict[str, Any]], patterns: tuple[str, ...]) -> Callable[[Any], None]:
    """A carry arm: copy the matching tensors of a previous fold's state into this state, by name (both
    looked up when it runs)."""

    def carry(previous: Any) -> None:
        source = previous.named_tensors()
        for name, tensor in named_of().items():
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                if name not in source or source[name].shape != tensor.shape:
                    raise UserError(
                        f"cannot carry {name} into the next fold",
                        got="missing" if name not in source else tuple(source[name].shape),
                        expected=tuple(tensor.shape),
                        hint="folds of one run must share the network and optimizer configuration",
                    )
                tensor.copy_(source[name])

    return carry


def build_trainer_registry(state: Any, machinery: Any) -> StateResetRegistry:
    """The StateResetRegistry of a ``trainer.train.step.TrainerState`` and its ``AdaptiveMachinery``.

    Duck-typed on the state (``named_tensors()``, ``isv``, ``env``, ``isv_local``, the host counters)
    so that this module stays below ``trainer.train`` in the import layers.
    """
    from trainer.layout import ISV, Writer

    registry = StateResetRegistry()

    def named_of() -> dict[str, Any]:
        current = dict(state.named_tensors())
        current.update(machinery.named_tensors())
        return current

    def persist(name: str, kind: StateKind, description: str, covers: tuple[str, ...]) -> None:
        registry.add(name, TrainingPersist(), kind, description, carry=_copy_matching(named_of, covers), covers=covers)

    persist("online", StateKind.NETWORK, "online network weights: what the agent learns", ("online.*",))
    persist("target", StateKind.NETWORK, "target network (Polyak average of online)", ("target.*",))
    persist("optimizer", StateKind.OPTIMIZER, "Adam moments, step counts and the device learning rate", ("optim.*",))
    persist("rng.counter", StateKind.RNG, "Philox counter: never rewound, so no fold repeats numbers", ("rng.counter",))

    for counter, description in PERSISTED_HOST_COUNTERS.items():
        registry.add(
            f"host.{counter}", TrainingPersist(), StateKind.HOST, description,
            carry=lambda previous, counter=counter: setattr(state, counter, getattr(previous, counter)),
        )  # fmt: skip
    for counter, description in FOLD_HOST_COUNTERS.items():
        registry.add(
            f"host.{counter}", FoldReset(), StateKind.HOST, description,
            reset=lambda counter=counter: setattr(state, counter, 0),
        )  # fmt: skip
    registry.add(
        "host.seed", SchemaContract(), StateKind.HOST, "seed of every random stream (config)",
        verify=_static_verifier_attr(state, "seed"),
    )  # fmt: skip
    registry.add(
        "host.feature_offset", SchemaContract(), StateKind.HOST,
        "global feature row of env bar 0 (set by the fold's market window)",
        verify=_static_verifier_attr(state, "feature_offset"),
    )  # fmt: skip
    registry.add(
        "noise_scale", SchemaContract(), StateKind.DEVICE_BUFFER,
        "σ of the replayed windows' feature noise per column (replay.feature_noise, forecast_noise_share)",
        verify=_static_verifier_attr(state, "noise_scale"),
    )  # fmt: skip
    registry.add(
        "replay", FoldReset(), StateKind.REPLAY, "replay ring: fold N's transitions must not train fold N+1",
        reset=_zero_matching(named_of, ("replay.*",)), covers=("replay.*",),
    )  # fmt: skip
    registry.add("nstep", FoldReset(), StateKind.REPLAY, "n-step window of the last n steps per env",
                 reset=_zero_matching(named_of, ("nstep.*",)), covers=("nstep.*",))  # fmt: skip
    registry.add(
        "env.ps", FoldReset(), StateKind.ENV,
        "portfolio state: positions, cash, DSR EMAs and Kelly statistics (back to the prior)",
        reset=lambda: state.env.reset(keep_kelly=False),
    )  # fmt: skip
    registry.add(
        "env.outputs", WindowReset(), StateKind.ENV,
        "per-step reward/done/terminal/observation outputs of the env and the state each episode reached",
        reset=_zero_matching(named_of, ("env.rewards*", "env.dones*", "env.obs_index*", "env.terminals*", "env.final_ps*")),
        covers=("env.rewards*", "env.dones*", "env.obs_index*", "env.terminals*", "env.final_ps*"),
    )  # fmt: skip
    registry.add(
        "scratch", WindowReset(), StateKind.DEVICE_BUFFER,
        "per-step random draws (exploration, replay sampling, IQN τ): overwritten every step",
        reset=_zero_matching(named_of, ("scratch.*",)), covers=("scratch.*",),
    )  # fmt: skip
    registry.add(
        "isv_local", WindowReset(), StateKind.DEVICE_BUFFER, "the step's device copy of the ISV",
        reset=lambda: state.isv_local.copy_(state.isv.tensor),
    )  # fmt: skip
    registry.add(
        "metrics", WindowReset(), StateKind.DEVICE_BUFFER, "epoch sums of losses, gradient norm and actions",
        reset=_zero_matching(named_of, ("metrics.*",)), covers=("metrics.*",),
    )  # fmt: skip
    registry.add(
        "adaptive.kelly_record", FoldReset(), StateKind.DEVICE_BUFFER,
        "the last validation rollout's closed trades the Kelly cap sizes from (a new fold: the prior alone)",
        reset=machinery.reset_kelly_record,
    )  # fmt: skip
    registry.add(
        "adaptive.kelly_workspace", WindowReset(), StateKind.DEVICE_BUFFER,
        "per-block partial sums of the Kelly reduction (rewritten by every launch)",
        reset=_zero_matching(named_of, ("adaptive.kelly_workspace",)),
    )  # fmt: skip

    isv = state.isv
    lifecycles = isv_lifecycles(machinery.params)
    for slot in ISV.slots:
        state_name = isv_slot_state_name(slot.name)
        if slot.writer is Writer.GPU_COMPUTED:
            if slot.name not in lifecycles:
                raise UserError(
                    f"GPU-computed ISV slot {slot.name} has no reset lifecycle",
                    got="absent from isv_lifecycles",
                    expected="one of FoldReset, SoftReset(decay_bars), ...",
                    hint="add it to trainer.registry.isv_lifecycles",
                )
            registry.add(
                state_name, lifecycles[slot.name], StateKind.ISV_SLOTS, slot.doc,
                reset=lambda name=slot.name: isv.bootstrap([name]),
            )  # fmt: skip
        elif slot.writer is Writer.CPU_INPUT:
            fresh_value = slot.values()
            registry.add(
                state_name, FoldReset(), StateKind.ISV_SLOTS, slot.doc,
                reset=lambda name=slot.name, value=fresh_value: isv.write_input(name, value),
            )  # fmt: skip
        elif slot.writer is Writer.STATIC_CONFIG:
            registry.add(
                state_name, SchemaContract(), StateKind.ISV_SLOTS, slot.doc,
                verify=_static_verifier(isv, slot.name, isv.read(slot.name)),
            )  # fmt: skip
    registry.add(
        isv_slot_state_name("FINGERPRINT"), SchemaContract(), StateKind.ISV_SLOTS,
        "layout fingerprint in the ISV tail", verify=isv.verify_fingerprint,
    )  # fmt: skip
    return registry


def _static_verifier(isv: Any, name: str, expected: Any) -> Callable[[], None]:
    def verify() -> None:
        found = isv.read(name)
        if found != expected:
            raise UserError(
                f"static ISV slot {name} changed during the run",
                got=found,
                expected=expected,
                hint="static config is written once at construction; only GPU kernels and CPU inputs change",
            )

    return verify


def _static_verifier_attr(state: Any, attribute: str) -> Callable[[], None]:
    expected = getattr(state, attribute)
    is_tensor = hasattr(expected, "clone") and hasattr(expected, "equal")  # duck-typed: no torch import here
    if is_tensor:
        expected = expected.clone()  # a device tensor: compared by value, not by identity

    def verify() -> None:
        found = getattr(state, attribute)
        same = expected.equal(found) if is_tensor else found == expected
        if not same:
            raise UserError(
                f"trainer state {attribute} changed during the run",
                got=found,
                expected=expected,
                hint=f"{attribute} is fixed when the state is built; build a new state for a new market",
            )

    return verify
