"""The single table of rules. A code is registered once, with a status, and never reused.

A rule's code is written once, as its class's ``code``; a row names the class and its status.

Statuses: ``stable`` (on by default), ``preview`` (only when selected), ``removed`` (kept so the
code is never handed out again). Per-file rules subclass ``Rule``; whole-project rules subclass
``ProjectRule``. Each helper adds its imports and rows below; keep rows sorted by code.
"""

from __future__ import annotations

from dataclasses import dataclass

from foxaudit.rules.audit_docs.stale_audit_doc import StaleAuditDoc
from foxaudit.rules.base import AnalysisRule, ProjectRule, Rule
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
    rule: type[Rule | ProjectRule]
    status: str  # stable | preview | removed

    @property
    def code(self) -> str:
        return self.rule.code


REGISTRY: tuple[Registered, ...] = (
    Registered(ParseError, "stable"),
    Registered(SuppressionWithoutReason, "stable"),
    Registered(UnusedSuppression, "stable"),
    Registered(GpuSlotHostWrite, "stable"),
    Registered(UnresolvedIsvWrite, "stable"),
    Registered(GpuSlotWithoutKernelWriter, "preview"),
    Registered(OrphanModule, "stable"),
    Registered(OrphanKernel, "stable"),
    Registered(GhostKernel, "stable"),
    Registered(PartialKernel, "stable"),
    Registered(UnresolvedKernelName, "stable"),
    Registered(UnregisteredDeviceBuffer, "stable"),
    Registered(ProgramConfigTargetMissing, "stable"),
    Registered(TransferOnHotPath, "stable"),
    Registered(UnresolvedHotPathCall, "preview"),
    Registered(UnmatchedHotPathRoot, "stable"),
    Registered(AtomicInKernel, "stable"),
    Registered(BannedDefinitionName, "stable"),
    Registered(CudaPythonConstantMismatch, "stable"),
    Registered(StaleGeneratedHeader, "stable"),
    Registered(GeneratedConstantRedefined, "stable"),
    Registered(UnreadableLayout, "stable"),
    Registered(StaleAuditDoc, "stable"),
    Registered(RawIndexIntoNamedBuffer, "stable"),
    Registered(DeferredWorkMarker, "stable"),
    Registered(StubBody, "stable"),
)


def by_code() -> dict[str, Registered]:
    return {entry.code: entry for entry in REGISTRY}


def file_rules() -> list[type[Rule]]:
    return [entry.rule for entry in REGISTRY if issubclass(entry.rule, Rule) and entry.status != "removed"]


def analysis_rules() -> list[type[AnalysisRule]]:
    """The whole-project rules whose findings are a function of the shared Analysis."""
    return [entry.rule for entry in REGISTRY if issubclass(entry.rule, AnalysisRule) and entry.status != "removed"]


def project_rules() -> list[type[ProjectRule]]:
    return [
        entry.rule for entry in REGISTRY if issubclass(entry.rule, ProjectRule) and entry.status != "removed"
    ]
