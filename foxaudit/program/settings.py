"""The ``[tool.foxaudit.program]`` table: every key, its type, its default, and why it exists.

The keys are registered with :mod:`foxaudit.config` (its schema hook), so a typo or a wrong type
is a configuration error reported with all the others before any analysis runs. The engine hands
the resolved table to ``Project.settings``; :meth:`ProgramSettings.from_table` turns it into the
typed object the analyses read (defaults filled in, so a Project built by hand works too).

Every analysis is driven by these keys; the defaults describe a typical PyTorch + CuPy repository
and the Foxhunt trainer overrides only what is specific to it (see docs/foxaudit-program.md).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from foxaudit.config import ConfigError, ProgramKey, check_value, register_program_keys

NO_ENTRIES: Mapping[str, Any] = MappingProxyType({})

DEFAULT_FACTORIES = (
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.zeros_like",
    "torch.ones_like",
    "torch.empty_like",
    "torch.full_like",
    "torch.arange",
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.tensor",
    "torch.empty_strided",
)


def _key(default: Any, help: str) -> Any:
    if isinstance(default, Mapping):
        return dataclasses.field(default_factory=lambda: dict(default), metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class ProgramSettings:
    """Typed ``[tool.foxaudit.program]``; field ``a_b`` is key ``a-b``."""

    # -- import graph (FX2xx) ------------------------------------------------------------
    source_roots: tuple[str, ...] = _key(
        (".",), "directories that hold top-level packages (module names are relative to them)"
    )
    entry_points: tuple[str, ...] = _key(
        (), "extra entry modules: dotted names or fnmatch globs (e.g. 'benchmarks.*')"
    )
    console_scripts: bool = _key(True, "treat [project.scripts] targets as entry points")
    public_packages: tuple[str, ...] = _key(
        (), "library packages whose public modules (no `_`-prefixed part) are all entry points (their API)"
    )
    test_roots: tuple[str, ...] = _key(("tests",), "directories whose modules are all entry points (test roots)")
    out_of_scope: Mapping[str, str] = _key(
        NO_ENTRIES, "path glob → reason: modules and kernels classified Out-of-scope instead of Orphan"
    )
    # -- kernel linkage (FX2xx) ----------------------------------------------------------
    kernel_loaders: Mapping[str, str] = _key(
        NO_ENTRIES, "'module:function' → name of its parameter that names the kernel (a configured loader)"
    )
    # -- hot path (FX3xx) ----------------------------------------------------------------
    hot_path_decorators: tuple[str, ...] = _key(("hot_path",), "decorators that mark hot-path roots")
    hot_path_roots: tuple[str, ...] = _key((), "hot-path roots by qualified name 'module:Class.method' (globs)")
    hot_path_exclude: Mapping[str, str] = _key(
        NO_ENTRIES,
        "qualified-name glob → reason: functions the GPU step never runs (CPU reference twins); not walked into",
    )
    capture_contexts: tuple[str, ...] = _key(
        ("torch.cuda.graph", "torch.cuda.graphs.graph"),
        "callables whose `with` block is captured into a CUDA graph (code inside is a root)",
    )
    capture_begin_methods: tuple[str, ...] = _key(
        ("begin_capture", "capture_begin"),
        "methods that open a capture: CuPy `stream.begin_capture()`, torch `CUDAGraph.capture_begin()`",
    )
    capture_end_methods: tuple[str, ...] = _key(("end_capture", "capture_end"), "methods that close a capture")
    graphed_callables: tuple[str, ...] = _key(
        ("torch.cuda.make_graphed_callables",), "functions whose callable arguments are captured (roots)"
    )
    pinned_functions: Mapping[str, str] = _key(
        NO_ENTRIES, "qualified-name glob → reason: transfers inside are OK-PINNED reads (pinned, mapped memory)"
    )
    pinned_receivers: Mapping[str, str] = _key(
        NO_ENTRIES, "receiver-text glob → reason: transfers on these receivers are OK-PINNED (e.g. '*.isv_host')"
    )
    # -- state coverage (FX2xx) ----------------------------------------------------------
    state_classes: tuple[str, ...] = _key(
        (), "qualified class globs 'module:Class' whose `self.x = <factory>(...)` allocations are state"
    )
    state_factories: tuple[str, ...] = _key(DEFAULT_FACTORIES, "calls that allocate a device buffer")
    state_require_device: bool = _key(True, "count an allocation only when it passes `device=`")
    registry_files: tuple[str, ...] = _key((), "path globs of the files that hold the state-reset registry")
    registry_entry_calls: tuple[str, ...] = _key(
        (), "calls (last name or dotted) that declare one registry entry, e.g. 'StateEntry'"
    )
    registry_name_param: str = _key("name", "parameter of the entry call that names the state")
    registry_category_param: str = _key("category", "parameter of the entry call that holds its category")
    registry_covers_param: str = _key(
        "covers", "parameter of the entry call with name globs the entry also covers ('' : none)"
    )
    state_name_methods: tuple[str, ...] = _key(
        ("named_tensors",),
        "methods that expose a class's tensors by name (`{\"env.ps\": self.env.ps}`): a buffer's state name",
    )
    # -- ISV slots, GPU drives (FX1xx) ---------------------------------------------------
    layout_module: str = _key("", "path of the layout module that declares the layouts ('' disables FX1xx/FX5xx layout reading)")
    layout_calls: tuple[str, ...] = _key(
        ("Layout",), "calls in the layout module that build one layout: (PREFIX, (slot, ...)) positional"
    )
    slot_calls: tuple[str, ...] = _key(("Slot",), "calls that declare one slot (a plain string is a slot too)")
    slot_name_param: str = _key("name", "parameter of the slot call that holds the slot's name (else 1st arg)")
    slot_width_param: str = _key("width", "parameter of the slot call that holds its width (default 1)")
    slot_writer_param: str = _key("writer", "parameter of the slot call that holds its writer class")
    isv_layout: str = _key("ISV", "prefix of the layout that is the ISV (its constants are PREFIX_NAME)")
    isv_gpu_writers: tuple[str, ...] = _key(("GPU_COMPUTED",), "writer classes that only kernels may write")
    isv_host_writers: tuple[str, ...] = _key(
        ("CPU_INPUT", "STATIC_CONFIG", "FINGERPRINT"), "writer classes that host code may write"
    )
    isv_buffers: tuple[str, ...] = _key(
        ("isv",), "ISV receivers: a last name (`isv`) or a dotted tail (`isv.tensor` matches `state.isv.tensor`)"
    )
    isv_write_methods: tuple[str, ...] = _key(("write",), "methods `<isv>.<m>(SLOT, value)` that write a slot")
    isv_bootstrap_functions: tuple[str, ...] = _key(
        (), "qualified-name globs of reset dispatch that may write bootstrap values to GPU slots"
    )
    isv_reference_functions: tuple[str, ...] = _key(
        (), "qualified-name globs of kernel references (CPU twins of kernels) that may write GPU slots"
    )
    isv_bus_functions: tuple[str, ...] = _key(
        (), "qualified-name globs of the bus implementation itself (its generic writes are not findings)"
    )
    # -- one layout (FX5xx) --------------------------------------------------------------
    constant_modules: tuple[str, ...] = _key(
        (), "path globs of Python modules whose constants must equal same-named CUDA constants"
    )
    generated_headers: Mapping[str, str] = _key(
        NO_ENTRIES,
        "generated header path → command that exits 0 when the header is current (run with a timeout, only with"
        " `--run-generators` / `FOXAUDIT_RUN_GENERATORS=1`; otherwise checked statically)",
    )
    generator_timeout: float = _key(30.0, "seconds a generator command may run")
    # -- audit docs (FX7xx) --------------------------------------------------------------
    named_dims: Mapping[str, tuple[str, ...]] = _key(
        NO_ENTRIES, "buffer name → prefixes of its named constants (docs/audits/named-dims.md)"
    )
    audit_dir: str = _key("docs/audits", "where the generated audit docs live")
    audit_command: str = _key("foxaudit audit --write", "the command named when a doc is stale")

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None) -> ProgramSettings:
        """Typed settings from the (already validated) table; raise ConfigError listing all problems."""
        errors: list[str] = []
        values: dict[str, Any] = {}
        hints = typing.get_type_hints(cls)
        names = {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)}
        for key, value in (table or {}).items():
            spec = names.get(key)
            if spec is None:
                errors.append(
                    f"[tool.foxaudit.program] unknown key {key!r} (got {key!r} vs one of: "
                    f"{', '.join(sorted(names))}) — hint: see docs/foxaudit-program.md"
                )
                continue
            if value is None:
                continue
            problem, converted = check_value(value, _toml_hint(hints[spec.name]))
            if problem:
                errors.append(
                    f"[tool.foxaudit.program] key {key!r}: {problem} — hint: {spec.metadata['help']}"
                )
                continue
            values[spec.name] = _freeze(converted)
        for key in ("kernel-loaders",):
            for target in (values.get("kernel_loaders") or {}):
                if ":" not in target:
                    errors.append(
                        f"[tool.foxaudit.program] key {key!r}: loader must be 'module:function'"
                        f" (got {target!r} vs e.g. 'pkg.ops.loader:load_kernel') — hint: add the module"
                    )
        if errors:
            raise ConfigError(errors)
        return cls(**values)


def _toml_hint(hint: Any) -> Any:
    """The TOML-facing type: tuples are written as lists, mappings as tables."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is tuple:
        return list[args[0]]  # type: ignore[valid-type]
    if origin in (Mapping, dict) or (origin is not None and getattr(origin, "__name__", "") == "Mapping"):
        return dict[args[0], _toml_hint(args[1])]  # type: ignore[valid-type]
    return hint


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, dict):
        return {key: _freeze(item) for key, item in value.items()}
    return value


def _register() -> None:
    hints = typing.get_type_hints(ProgramSettings)
    keys = {}
    for spec in dataclasses.fields(ProgramSettings):
        default = spec.default_factory() if spec.default is dataclasses.MISSING else spec.default
        keys[spec.name.replace("_", "-")] = ProgramKey(
            hint=_toml_hint(hints[spec.name]), help=spec.metadata["help"], default=_plain(default)
        )
    register_program_keys(keys)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


_register()


def reference_table() -> str:
    """The configuration reference (a markdown table) that docs/foxaudit-program.md embeds."""
    import json

    hints = typing.get_type_hints(ProgramSettings)
    lines = ["| key | type | default | what it configures |", "|---|---|---|---|"]
    for spec in dataclasses.fields(ProgramSettings):
        default = _plain(spec.default_factory() if spec.default is dataclasses.MISSING else spec.default)
        text = ("true" if default else "false") if isinstance(default, bool) else json.dumps(default, ensure_ascii=False)
        hint = _toml_hint(hints[spec.name])
        type_name = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
        help_text = spec.metadata["help"].replace("|", "\\|")
        lines.append(f"| `{spec.name.replace('_', '-')}` | `{type_name}` | `{text}` | {help_text} |")
    return "\n".join(lines)
