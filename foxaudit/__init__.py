"""foxaudit — invariant enforcement for Python and CUDA repositories.

Layers (import downward only, checked by import-linter):
cli → engine / audits / report → rules → program → sources / config → diagnostics.
"""

__version__ = "0.1.0"
