"""The rules' import path for the CUDA node helpers, which live in ``foxaudit.sources.cuda``."""

from __future__ import annotations

from foxaudit.sources.cuda import (
    declared_name,
    enclosing_function,
    execution_spaces,
    function_declarator,
    function_name,
)

__all__ = ["declared_name", "enclosing_function", "execution_spaces", "function_declarator", "function_name"]
