"""The single table of rule codes. A code is registered once, with a status, and never reused.

Statuses: ``stable`` (on by default), ``preview`` (only when selected), ``removed`` (kept so the
code is never handed out again). Per-file rules subclass ``Rule``; whole-project rules subclass
``ProjectRule``. Each helper adds its imports and rows below; keep rows sorted by code.
"""

from __future__ import annotations

from dataclasses import dataclass

from foxaudit.rules.audit_docs.stale_audit_doc import StaleAuditDoc
from foxaudit.rules.base import ProjectRule, Rule
from foxaudit.rules.deferred.deferred_work_marker import DeferredWorkMarker
from foxaudit.rules.deferred.stub_body import StubBody
from foxaudit.rules.determinism.atomic_in_kernel import AtomicInKernel
from foxaudit.rules.gpu_drives.gpu_slot_host_write import GpuSlotHostWrite
from foxaudit.rules.gpu_drives.gpu_slot_without_kernel_writer import GpuSlotWithoutKernelWriter
from foxaudit.rules.gpu_drives.unresolved_isv_write import UnresolvedIsvWrite
from foxaudit.rules.hot_path.transfer_on_hot_path import TransferOnHotPath
from foxaudit.rules.hot_path.unmatched_hot_path_root import UnmatchedHotPathRoot
from foxaudit.rules.hot_path.unresolved_hot_path_call import UnresolvedHotPathCall
from foxaudit.rules.layout.banned_definition_name import BannedDefinitionName
from foxaudit.rules.layout_sync.cuda_python_constant_mismatch import (
    CudaPythonConstantMismatch,
)
from foxaudit.rules.layout_sync.generated_constant_redefined import (
    GeneratedConstantRedefined,
)
from foxaudit.rules.layout_sync.stale_generated_header import StaleGeneratedHeader
from foxaudit.rules.layout_sync.unreadable_layout import UnreadableLayout
from foxaudit.rules.named_dims.raw_index_into_named_buffer import (
    RawIndexIntoNamedBuffer,
)
from foxaudit.rules.tool.parse_error import ParseError
from foxaudit.rules.tool.suppression_without_reason import SuppressionWithoutReason
from foxaudit.rules.tool.unused_suppression import UnusedSuppression
from foxaudit.rules.wiring.ghost_kernel import GhostKernel
from foxaudit.rules.wiring.orphan_kernel import OrphanKernel
from foxaudit.rules.wiring.orphan_module import OrphanModule
from foxaudit.rules.wiring.partial_kernel import PartialKernel
from foxaudit.rules.wiring.program_config_target_missing import (
    ProgramConfigTargetMissing,
)
from foxaudit.rules.wiring.unregistered_device_buffer import UnregisteredDeviceBuffer
from foxaudit.rules.wiring.unresolved_kernel_name import UnresolvedKernelName


@dataclass(frozen=True)
class Registered:
    code: str
    rule: type[Rule | ProjectRule]
    status: str  # stable | preview | removed


REGISTRY: tuple[Registered, ...] = (
    Registered("FX001", ParseError, "stable"),
    Registered("FX002", SuppressionWithoutReason, "stable"),
    Registered("FX003", UnusedSuppression, "stable"),
    Registered("FX101", GpuSlotHostWrite, "stable"),
    Registered("FX102", UnresolvedIsvWrite, "stable"),
    Registered("FX103", GpuSlotWithoutKernelWriter, "preview"),
    Registered("FX201", OrphanModule, "stable"),
    Registered("FX202", OrphanKernel, "stable"),
    Registered("FX203", GhostKernel, "stable"),
    Registered("FX204", PartialKernel, "stable"),
    Registered("FX205", UnresolvedKernelName, "stable"),
    Registered("FX206", UnregisteredDeviceBuffer, "stable"),
    Registered("FX207", ProgramConfigTargetMissing, "stable"),
    Registered("FX301", TransferOnHotPath, "stable"),
    Registered("FX302", UnresolvedHotPathCall, "preview"),
    Registered("FX303", UnmatchedHotPathRoot, "stable"),
    Registered("FX401", AtomicInKernel, "stable"),
    Registered("FX501", BannedDefinitionName, "stable"),
    Registered("FX502", CudaPythonConstantMismatch, "stable"),
    Registered("FX503", StaleGeneratedHeader, "stable"),
    Registered("FX504", GeneratedConstantRedefined, "stable"),
    Registered("FX505", UnreadableLayout, "stable"),
    Registered("FX701", StaleAuditDoc, "stable"),
    Registered("FX801", RawIndexIntoNamedBuffer, "stable"),
    Registered("FX901", DeferredWorkMarker, "stable"),
    Registered("FX902", StubBody, "stable"),
)


def by_code() -> dict[str, Registered]:
    return {entry.code: entry for entry in REGISTRY}


def file_rules() -> list[type[Rule]]:
    return [entry.rule for entry in REGISTRY if issubclass(entry.rule, Rule) and entry.status != "removed"]


def project_rules() -> list[type[ProjectRule]]:
    return [
        entry.rule for entry in REGISTRY if issubclass(entry.rule, ProjectRule) and entry.status != "removed"
    ]
