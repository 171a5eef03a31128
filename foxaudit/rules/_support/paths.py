"""Repository-relative path globs as rule options use them: ``foxaudit.globs`` (gitignore semantics).

Kept as the rules' import path; the dialect and its implementation live in ``foxaudit.globs``.
"""

from __future__ import annotations

from foxaudit.globs import matches_any

__all__ = ["matches_any"]
