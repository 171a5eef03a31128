"""Generators of docs/audits/*.md (``foxaudit audit``)."""

from foxaudit.audits.generate import AuditResult, check_audit_docs, write_audit_docs

__all__ = ["AuditResult", "check_audit_docs", "write_audit_docs"]
