"""Parsed source files: one parse per file, shared by every rule."""

from foxaudit.sources.base import Language, SourceFile, node_span

__all__ = ["Language", "SourceFile", "node_span"]
